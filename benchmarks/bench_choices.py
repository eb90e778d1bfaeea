"""Benchmark: does each speed choice of reading pay, at the sizes users run?

    python benchmarks/bench_choices.py                 # 10 lines, 100k, 1M; 5 paired rounds
    python benchmarks/bench_choices.py --repeat 7 --sizes 100000,1000000
    python benchmarks/bench_choices.py --variants j1,j2,default --busy 1   # one CPU kept busy

Variants of ``dnnlens analyze LOG --format json -o /dev/null`` (the training log of
``sample_logs/`` repeated), all started the same way (``python -c``) so only the choice
differs:

* ``j1`` / ``j2`` / ``default``: ``-j 1``, ``-j 2``, no ``-j`` (dnnlens' own choice);
* ``j1-no-pages`` / ``j2-no-pages``: ``-j 1`` / ``-j 2`` with the allocator left as glibc
  sets it (``io/pages.py`` does nothing when a ``MALLOC_*`` variable is set;
  ``MALLOC_TOP_PAD_`` is given glibc's own default so nothing else changes);
* ``j2-no-meanwhile``: ``-j 2`` without the report's imports made while workers scan;
* ``j2-spawn`` / ``j2-forkserver``: ``-j 2`` with the workers started that way instead of
  by fork (``reading/parallel.py``, ``START_METHOD``).

Each round runs every variant once, one right after the other (a pair is measured under the
same load); the table gives the median wall time and the median of the per-round ratios to
``j1``, with the load average beside it and, for ``default``, the ``-j`` dnnlens chose in
each round (its note on stderr), and is written to ``benchmarks/results/choices.md``.
``--busy N`` keeps N CPUs busy with spinning processes through the rounds: the default
must then choose fewer workers, and never be slower than ``-j 1``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from made_logs import build_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "sample_logs" / "convnet_nchw_train.log"
RESULTS = ROOT / "benchmarks" / "results" / "choices.md"
#: glibc's default of M_TOP_PAD: setting it turns io/pages.py off and changes nothing else
GLIBC_TOP_PAD = "131072"

LAUNCH = "import sys\n{prelude}\nfrom dnnlens.cli import main\nsys.argv[0] = 'dnnlens'\nmain()\n"
NO_MEANWHILE = "import dnnlens.cli.pipeline as p\np._import_report = lambda: None"
#: the reading imported before main() sets Arrow's allocator: set it here as main() does
START = (
    "import os\nos.environ.setdefault('ARROW_DEFAULT_MEMORY_POOL', 'system')\n"
    "import dnnlens.reading.parallel as q\nq.START_METHOD = {!r}"
)

VARIANTS: dict[str, tuple[list[str], str, dict[str, str]]] = {
    "j1": (["-j", "1"], "", {}),
    "j2": (["-j", "2"], "", {}),
    "default": ([], "", {}),
    "j1-no-pages": (["-j", "1"], "", {"MALLOC_TOP_PAD_": GLIBC_TOP_PAD}),
    "j2-no-pages": (["-j", "2"], "", {"MALLOC_TOP_PAD_": GLIBC_TOP_PAD}),
    "j2-no-meanwhile": (["-j", "2"], NO_MEANWHILE, {}),
    "j2-spawn": (["-j", "2"], START.format("spawn"), {}),
    "j2-forkserver": (["-j", "2"], START.format("forkserver"), {}),
}


_CHOSEN = re.compile(rb"reading with (\d+) processes")
SPIN = "while True:\n    pass\n"


def run(log: Path, name: str) -> tuple[float, int]:
    """Wall time of one whole command, and the processes it read with."""
    args, prelude, extra = VARIANTS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}
    cmd = [sys.executable, "-c", LAUNCH.format(prelude=prelude), "analyze", str(log)]
    cmd += ["--format", "json", "-o", os.devnull, *args]
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=600)
    spent = time.perf_counter() - t
    if done.returncode not in (0, 1):
        sys.exit(f"{name} on {log.name}: exit {done.returncode}: {done.stderr[-400:]!r}")
    chosen = _CHOSEN.search(done.stderr)
    jobs = int(args[1]) if args else int(chosen.group(1)) if chosen else 1
    return spent, jobs


@contextlib.contextmanager
def busy(cpus: int) -> Iterator[None]:
    """``cpus`` spinning processes while the block runs (other work on a shared machine)."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(cpus)]
    try:
        time.sleep(0.5 if cpus else 0)  # running before the first command starts
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="10,100000,1000000", help="lines of each log")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="j1 always runs first")
    ap.add_argument("--busy", type=int, default=0, help="CPUs kept busy by spinning processes")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/dnnlens-choices"))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    names = ["j1", *(n for n in args.variants.split(",") if n != "j1")]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}: one of {', '.join(VARIANTS)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for lines in (int(s) for s in args.sizes.split(",")):
        log = args.workdir / f"train_{lines}.log"
        if not log.exists():
            build_log(TRAIN, lines, log)
        mib = log.stat().st_size / (1 << 20)
        times: dict[str, list[float]] = {name: [] for name in names}
        chosen: dict[str, list[int]] = {name: [] for name in names}
        loads = []
        with busy(args.busy):
            for _ in range(args.repeat):
                loads.append(os.getloadavg()[0])
                for name in names:
                    spent, jobs = run(log, name)
                    times[name].append(spent)
                    chosen[name].append(jobs)
        base = times["j1"]
        for name, spent in times.items():
            ratio = statistics.median(s / b for s, b in zip(spent, base, strict=True))
            js = "/".join(map(str, chosen[name]))
            rows.append(
                (lines, mib, name, js, statistics.median(spent), ratio, statistics.median(loads))
            )
            line = f"{lines:>9} {name:<16} -j {js:<10} {rows[-1][4]:6.2f} s  x{ratio:.2f}"
            print(line, flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {_cpu()}, "
        f"{os.cpu_count()} CPUs, medians of {args.repeat} paired rounds, "
        f"{args.busy} CPU(s) kept busy by spinning processes.",
        "",
        "| lines | MiB | variant | -j per round | median s | ratio to j1 | load (1 min) |",
        "|---:|---:|---|---|---:|---:|---:|",
    ]
    table += [
        f"| {n:,} | {m:.0f} | {v} | {js} | {s:.2f} | {r:.2f} | {ld:.1f} |"
        for n, m, v, js, s, r, ld in rows
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# Speed choices\n\n" + "\n".join(table) + "\n", encoding="utf-8")
    print("\n".join(table))


def _cpu() -> str:
    """The CPU's model name (lscpu's), or the platform's word for it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
