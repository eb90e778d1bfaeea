"""Benchmark: ``fleet build`` of 100 logs in this process and on a LocalCluster of 1, 2 and N
workers.

    python benchmarks/bench_fleet.py                         # 100 logs; 1, 2, N workers
    python benchmarks/bench_fleet.py --logs 400 --workers 1 2 4 8 --repeat 3

The logs are the sample logs with a oneDNN line each (``sample_logs/*.log``, from 3 KB to
930 KB), taken in turn until there are ``--logs`` of them; each copy ends with a line of
program output of its own (``bench copy N``), so every copy is a run of its own content
hash and is analysed like the original. Each stage builds a new dataset in a fresh
subprocess:

* ``single process``: the in-process engine (``fleet build --workers 1``);
* ``dask 1``, ``dask 2``, ``dask N``: a LocalCluster of that many single-threaded worker
  processes (``fleet build --workers N``); N defaults to the cores of this machine;
* ``rebuild``: the single process again on the finished dataset: every run skipped, the
  cost of hashing the files.

It reports the cluster's start-up, the build's time (start-up excluded), runs/s, MB/s and
the speed-up over the single process, medians over ``--repeat`` rounds (stages
interleaved, so a shared machine's drift hits them alike). No assertion: numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BUILD = """
import json, sys, time
from pathlib import Path

from dnnlens.fleet.build import BuildOptions, build_dataset, plan
from dnnlens.fleet.dataset import Settings
from dnnlens.fleet.engine import SerialEngine, local_engine


def main() -> None:
    logs, out, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    started = time.perf_counter()
    engine = SerialEngine() if workers == 0 else local_engine(workers)
    ready = time.perf_counter()
    options = BuildOptions(Settings(window_events=200_000))
    specs, _ = plan([logs + "/*.log"], options)
    result = build_dataset(specs, out, options, engine)
    done = time.perf_counter()
    engine.close()
    print(json.dumps({
        "start_s": ready - started, "build_s": done - ready, "bytes": result.input_bytes,
        "written": result.count("written"), "skipped": result.count("skipped"),
        "failed": result.count("failed"),
    }))


if __name__ == "__main__":
    main()
"""


def make_logs(folder: Path, count: int) -> int:
    """``count`` copies of the sample logs in ``folder``; returns their bytes."""
    bases = sorted(
        p for p in (ROOT / "sample_logs").glob("*.log") if "onednn_verbose" in p.read_text()
    )
    total = 0
    for k in range(count):
        base = bases[k % len(bases)]
        text = base.read_text() + f"bench copy {k}\n"
        path = folder / f"{base.stem}-{k:04d}.log"
        path.write_text(text)
        total += len(text.encode())
    return total


def run_stage(script: Path, logs: Path, out: Path, workers: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(script), str(logs), str(out), str(workers)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=100)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, 2, cores or 1}))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        work = Path(tmp)
        logs = work / "logs"
        logs.mkdir()
        size = make_logs(logs, args.logs)
        script = work / "build.py"
        script.write_text(BUILD)
        stages = [("single process", 0)] + [(f"dask {w}", w) for w in args.workers]
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in stages}
        results["rebuild"] = []
        for round_ in range(args.repeat):
            for name, workers in stages:
                out = work / f"ds-{round_}-{workers}"
                results[name].append(run_stage(script, logs, out, workers))
                if workers == 0:
                    results["rebuild"].append(run_stage(script, logs, out, 0))
                    shutil.rmtree(out)
                else:
                    shutil.rmtree(out)

    print(f"fleet build of {args.logs} logs ({size / 1e6:.1f} MB), {cores} core(s), "
          f"median of {args.repeat} round(s)")  # fmt: skip
    print(f"{'stage':<16}{'start s':>9}{'build s':>9}{'runs/s':>9}{'MB/s':>8}{'speed-up':>10}")
    single = statistics.median(r["build_s"] for r in results["single process"])
    for name, runs in results.items():
        start = statistics.median(r["start_s"] for r in runs)
        build = statistics.median(r["build_s"] for r in runs)
        counted = runs[0]["written"] + runs[0]["skipped"]
        print(
            f"{name:<16}{start:>9.2f}{build:>9.2f}{counted / build:>9.1f}"
            f"{size / build / 1e6:>8.2f}{single / build:>9.2f}x"
        )


if __name__ == "__main__":
    main()
