"""Benchmark: does each speed choice of reading pay, at the sizes users run?

    python benchmarks/bench_choices.py                 # 10 lines, 100k, 1M; 5 paired rounds
    python benchmarks/bench_choices.py --repeat 7 --sizes 100000,1000000

Variants of ``dnnlens analyze LOG --format json -o /dev/null`` (the training log of
``sample_logs/`` repeated), all started the same way (``python -c``) so only the choice
differs:

* ``j1`` / ``j2`` / ``default``: ``-j 1``, ``-j 2``, no ``-j`` (dnnlens' own choice);
* ``j2-no-pages``: ``-j 2`` with the allocator left as glibc sets it (``io/pages.py`` does
  nothing when a ``MALLOC_*`` variable is set; ``MALLOC_TOP_PAD_`` is given glibc's own
  default so nothing else changes);
* ``j2-no-meanwhile``: ``-j 2`` without the report's imports made while workers scan.

Each round runs every variant once, one right after the other (a pair is measured under the
same load); the table gives the median wall time and the median of the per-round ratios to
``j1``, with the load average beside it, and is written to ``benchmarks/results/choices.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
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

VARIANTS: dict[str, tuple[list[str], str, dict[str, str]]] = {
    "j1": (["-j", "1"], "", {}),
    "j2": (["-j", "2"], "", {}),
    "default": ([], "", {}),
    "j2-no-pages": (["-j", "2"], "", {"MALLOC_TOP_PAD_": GLIBC_TOP_PAD}),
    "j2-no-meanwhile": (["-j", "2"], NO_MEANWHILE, {}),
}


def run(log: Path, name: str) -> float:
    """Wall time of one whole command."""
    args, prelude, extra = VARIANTS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}
    cmd = [sys.executable, "-c", LAUNCH.format(prelude=prelude), "analyze", str(log)]
    cmd += ["--format", "json", "-o", os.devnull, *args]
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=600)
    spent = time.perf_counter() - t
    if done.returncode not in (0, 1):
        sys.exit(f"{name} on {log.name}: exit {done.returncode}: {done.stderr[-400:]!r}")
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="10,100000,1000000", help="lines of each log")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/dnnlens-choices"))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for lines in (int(s) for s in args.sizes.split(",")):
        log = args.workdir / f"train_{lines}.log"
        if not log.exists():
            build_log(TRAIN, lines, log)
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        loads = []
        for _ in range(args.repeat):
            loads.append(os.getloadavg()[0])
            for name in VARIANTS:
                times[name].append(run(log, name))
        base = times["j1"]
        for name, spent in times.items():
            ratio = statistics.median(s / b for s, b in zip(spent, base, strict=True))
            rows.append((lines, name, statistics.median(spent), ratio, statistics.median(loads)))
            print(f"{lines:>9} {name:<16} {rows[-1][2]:6.2f} s  x{ratio:.2f}", flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {_cpu()}, "
        f"{os.cpu_count()} CPUs, medians of {args.repeat} paired rounds.",
        "",
        "| lines | variant | median s | ratio to j1 | load (1 min) |",
        "|---:|---|---:|---:|---:|",
    ]
    table += [f"| {n:,} | {v} | {s:.2f} | {r:.2f} | {ld:.1f} |" for n, v, s, r, ld in rows]
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
