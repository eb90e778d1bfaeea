"""Benchmark: ``fleet build`` of 100 logs in this process and on a LocalCluster of 1, 2 and N
workers; with ``--scale``, publishing into and opening datasets of many runs.

    python benchmarks/bench_fleet.py                         # 100 logs; 1, 2, N workers
    python benchmarks/bench_fleet.py --logs 400 --workers 1 2 4 8 --repeat 3
    python benchmarks/bench_fleet.py --scale 1000 10000      # datasets of 1k and 10k runs
    python benchmarks/bench_fleet.py --scale 2000 --src /other/checkout/src   # another dnnlens

``--scale N ...``: one real run (``sample_logs/convnet_nchw_infer.log``, built once) is
copied N times under new names (hard links of its five Parquet files, ``run-s00000`` ...:
the files the dataset's readers list and check) beside its ``dataset.json``. Each stage
runs in a fresh subprocess (page cache warm), and reports its time and peak RSS:

* ``first open``: a build opens the dataset (``Dataset.for_build``) that has no runs index
  yet (a dataset of an older dnnlens): every footer checked once;
* ``build open``: the same again, the index written;
* ``publish``: ``Dataset.publish`` of 20 new runs (their own names and content hashes)
  into it, the median time of one (``first publish``: the first of them); then
  ``Dataset.publish_many`` of 25 more at once (``in 25s``: per run), as a build on a
  cluster publishes the runs that end within a second;
* ``query``: ``Dataset.open`` and ``fleet query``'s connection (``query.connect``: every
  table checked and registered), then ``SELECT count(*), sum(typical_iteration_ms) FROM
  runs`` and a ``primitives`` aggregate;
* ``duckdb``: the floor: plain DuckDB ``read_parquet('DS/<table>/*.parquet')`` of the same
  two queries, nothing checked.

The query's ratio to the floor is printed. No assertion: numbers.

``--scale N --compact``: the copies are files of their own (each run's rows named after it,
its own content hash), as a build writes them, and after the stages above:

* ``compact``: ``Dataset.compact`` (``fleet compact``), its time;
* ``query`` and ``duckdb`` again, on the compacted dataset;

with the files and bytes of the five tables before and after.

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
TABLES = ("inputs", "primitives", "findings", "iterations", "runs")

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


SCALE = """
import json, resource, sys, time
from pathlib import Path

import pyarrow as pa

stage, root = sys.argv[1], Path(sys.argv[2])
SQL = ["SELECT count(*), sum(typical_iteration_ms) FROM runs",
       "SELECT kind, sum(ms_per_iteration) FROM primitives GROUP BY kind ORDER BY 2 DESC"]
started = time.perf_counter()
out = {}
if stage == "duckdb":
    import duckdb
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    for table in ("runs", "primitives"):
        files = f"{root}/{table}/*.parquet"
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{files}')")
    out["connect_s"] = time.perf_counter() - started
    for sql in SQL:
        con.execute(sql).fetchall()
elif stage == "query":
    from dnnlens.fleet.dataset import Dataset
    from dnnlens.fleet.query import connect
    con = connect(Dataset.open(root))
    out["connect_s"] = time.perf_counter() - started
    for sql in SQL:
        con.execute(sql).fetchall()
elif stage == "compact":
    from dnnlens.fleet.dataset import Dataset
    done = Dataset.open(root).compact()
    out.update(runs=done.runs, files_before=done.files_before, bytes_before=done.bytes_before,
               files_after=done.files_after, bytes_after=done.bytes_after)
else:
    from dnnlens.fleet.dataset import Dataset, Settings, file_name
    from dnnlens.fleet.schema import TABLES
    settings = Settings(**json.loads((root / "dataset.json").read_text())["settings"])
    data = Dataset.for_build(root, settings)
    out["open_s"] = time.perf_counter() - started
    if stage == "publish":
        import pyarrow.parquet as pq
        source = root / ".bench-source"
        tables = {t: pq.read_table(source / t / "run.parquet") for t in TABLES}
        from dnnlens.fleet.dataset import Pending

        def new_run(n):
            name, digest = f"new-{time.time_ns()}-{n}", f"{time.time_ns():x}{n:04d}"
            rows = {}
            for t, rows_t in tables.items():
                i = rows_t.schema.get_field_index("run")
                rows_t = rows_t.set_column(i, "run", pa.array([name] * len(rows_t), pa.string()))
                if t == "runs":
                    j = rows_t.schema.get_field_index("content_hash")
                    rows_t = rows_t.set_column(j, "content_hash", pa.array([digest]))
                rows[t] = rows_t
            return Pending(name, digest, rows, lambda taken: name + "-x")

        times = []
        for n in range(20):
            run = new_run(n)
            t0 = time.perf_counter()
            data.publish(run.run, run.content_hash, run.tables, run.other_name)
            times.append(time.perf_counter() - t0)
        out["first_publish_ms"] = times[0] * 1e3
        times.sort()
        out["publish_ms"] = times[len(times) // 2] * 1e3
        batch = [new_run(100 + n) for n in range(25)]  # what a cluster build holds a second
        t0 = time.perf_counter()
        data.publish_many(batch)
        out["batch_publish_ms"] = (time.perf_counter() - t0) * 1e3 / len(batch)
out["seconds"] = time.perf_counter() - started
out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _new_dataset(work: Path, base: Path, runs: int) -> tuple[Path, str]:
    """An empty dataset beside ``base`` (its ``dataset.json``, a folder per table) and the
    file name of ``base``'s one run, copied to ``.bench-source/<table>/run.parquet``: what
    the copies are made of and what the publish stage publishes."""
    root = work / f"ds-{runs}"
    root.mkdir()
    shutil.copy(base / "dataset.json", root)
    (run,) = [p.name for p in (base / "runs").iterdir() if p.name.startswith("run-")]
    for table in TABLES:
        (root / table).mkdir()
        sources = root / ".bench-source" / table
        sources.mkdir(parents=True)
        shutil.copy2(base / table / run, sources / "run.parquet")
    return root, run


def scale_dataset(work: Path, base: Path, runs: int) -> Path:
    """A dataset of ``runs`` copies (hard links) of the one run of ``base``: a new copy of
    the file every 50,000 links (ext4 allows 65,000 links to a file)."""
    root, run = _new_dataset(work, base, runs)
    for table in TABLES:
        sources = root / ".bench-source" / table
        for k in range(runs):
            source = sources / f"copy-{k // 50_000}.parquet"
            if k % 50_000 == 0:
                shutil.copy2(base / table / run, source)
            os.link(source, root / table / f"run-s{k:06d}.parquet")
    return root


def own_dataset(work: Path, base: Path, runs: int) -> Path:
    """A dataset of ``runs`` copies of the one run of ``base``, each in files of its own
    (its rows named ``s000000`` ..., its own content hash), as a build writes them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root, run = _new_dataset(work, base, runs)
    for table in TABLES:
        rows = pq.read_table(base / table / run)
        i = rows.schema.get_field_index("run")
        for k in range(runs):
            name = f"s{k:06d}"
            copy = rows.set_column(i, "run", pa.array([name] * len(rows), pa.string()))
            if table == "runs":
                j = copy.schema.get_field_index("content_hash")
                copy = copy.set_column(j, "content_hash", pa.array([f"{k:064x}"]))
            pq.write_table(copy, root / table / f"run-{name}.parquet")
    return root


def table_files(root: Path) -> tuple[int, int]:
    """Files and bytes of the five tables."""
    files = [p for t in TABLES for p in (root / t).iterdir() if not p.name.startswith(".")]
    return len(files), sum(p.stat().st_size for p in files)


def run_scale(sizes: list[int], src: Path, query: bool = True, compact: bool = False) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}

    def stage(name: str, root: Path) -> dict[str, float]:
        done = subprocess.run(
            [sys.executable, "-c", SCALE, name, str(root)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        if done.returncode:
            sys.exit(f"{name}: {done.stderr.strip()}")
        found = [x for x in done.stdout.splitlines() if x.startswith("{")]
        if not found:
            sys.exit(f"{name}: no result ({done.stdout[-500:]!r}, {done.stderr[-500:]!r})")
        return json.loads(found[-1])

    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        work = Path(tmp)
        base = work / "base"
        build = subprocess.run(
            [sys.executable, "-m", "dnnlens", "fleet", "build", "-w", "1", "-q",
             str(ROOT / "sample_logs" / "convnet_nchw_infer.log"), "-o", str(base)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        if build.returncode:
            sys.exit(build.stderr)
        print(f"dnnlens from {src}; one run of convnet_nchw_infer copied N times")
        print(f"{'runs':>8}{'stage':>12}{'seconds':>10}{'per run ms':>12}{'vs duckdb':>11}"
              f"{'peak MiB':>10}")  # fmt: skip
        for size in sizes:
            root = (own_dataset if compact else scale_dataset)(work, base, size)
            results = {}
            stages = {"first open": "build", "build open": "build", "publish": "publish",
                      "query": "query", "duckdb": "duckdb"}  # fmt: skip
            if compact:
                stages.update(
                    {"compact": "compact", "query after": "query", "duckdb after": "duckdb"}
                )
            for name, script in stages.items():
                if query or script not in ("query", "duckdb"):
                    if script == "compact":
                        files, size_bytes = table_files(root)
                        print(f"{size:>8} before: {files:,} files, {size_bytes / 1e6:.1f} MB")
                    results[name] = stage(script, root)
                    if script == "compact":
                        files, size_bytes = table_files(root)
                        print(f"{size:>8} after: {files:,} files, {size_bytes / 1e6:.1f} MB")
            floor = results["duckdb"]["seconds"] if query else 0.0
            for name, got in results.items():
                per = got.get("publish_ms", got["seconds"] * 1e3 / size)
                seconds = got.get("publish_ms", 0) / 1e3 if name == "publish" else got["seconds"]
                floors = ("query", "duckdb", "query after", "duckdb after")
                ratio = f"{got['seconds'] / floor:>10.1f}x" if name in floors else ""
                print(f"{size:>8}{name:>12}{seconds:>10.3f}{per:>12.3f}{ratio:>11}"
                      f"{got['rss_mib']:>10.0f}")  # fmt: skip
                if name == "publish":
                    first = got["first_publish_ms"]
                    print(f"{size:>8}{'first pub.':>12}{first / 1e3:>10.3f}{first:>12.3f}")
                    batch = got["batch_publish_ms"]
                    print(f"{size:>8}{'in 25s':>12}{batch / 1e3:>10.3f}{batch:>12.3f}")
            shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=100)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, 2, cores or 1}))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, nargs="+", help="datasets of this many runs")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the dnnlens to time")
    parser.add_argument(
        "--no-query", action="store_true", help="--scale: time the build's stages only"
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="--scale: runs in files of their own, then compacted and queried again",
    )
    args = parser.parse_args()
    if args.scale:
        run_scale(args.scale, args.src, query=not args.no_query, compact=args.compact)
        return

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
