"""Benchmark: dnnlens against plain line reading, on a large log built from a sample log.

    python benchmarks/bench_scan.py                  # 1,000,000 lines
    python benchmarks/bench_scan.py --lines 10000000 # 10M lines (about 2 GB on disk)

Builds the big log by repeating a real sample log (``sample_logs/convnet_nchw_infer.log``
by default) and then, each in a fresh subprocess so peak memory is its own:

* ``floor``: plain Python reading of the same file (``for line in f: n += 1``);
* ``parse``: ``dnnlens.reading.load`` (every line accounted for, event table built);
* ``parse-j2``: the same with ``jobs=2`` (the file split into two byte ranges, two processes);
* ``analyze``: parse + summary + rules, i.e. what ``dnnlens analyze --format json`` does;
* ``stream``: reading that folds events (exact totals, a window of 100,000 raw events), as
  for a long pipe or a large input: its peak memory must not grow with the log;
* ``cli``: the ``dnnlens analyze --format json`` command end to end, start-up included.

It reports lines/s, the time ratio to the floor and peak RSS (ratio to the floor too).
Times exclude interpreter start-up and imports except for ``cli``. Each stage runs right
after a floor run of its own, in ``--repeat`` rounds: the ratio of each pair is measured
under the same load (a shared machine's speed drifts from minute to minute), and each stage
reports the median of its ratios, their range and its median time. No assertion: numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from made_logs import build_log

ROOT = Path(__file__).resolve().parent.parent

FLOOR = """
import resource, sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        n += 1
dt = time.perf_counter() - t
print({"seconds": dt, "lines": n,
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

PARSE = """
import resource, sys, time
from dnnlens.reading import load
t = time.perf_counter()
log = load([sys.argv[1]], jobs=int(sys.argv[2]) if len(sys.argv) > 2 else 1)
dt = time.perf_counter() - t
print({"seconds": dt, "lines": log.scans[0].lines, "events": len(log.events),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

ANALYZE = """
import resource, sys, time
from dnnlens.reading import load
from dnnlens.analysis.analysis import Analysis
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules
from dnnlens.report.json_report import render_json
import dnnlens.analysis.costmodel, dnnlens.analysis.graph, dnnlens.analysis.iterations  # noqa
import dnnlens.analysis.roofline, dnnlens.rules.context  # noqa: imported lazily
t = time.perf_counter()
log = load([sys.argv[1]])
analysis = Analysis(log)
apply_rules(analysis.prepare(), RuleOptions())
render_json(analysis)
dt = time.perf_counter() - t
print({"seconds": dt, "lines": log.scans[0].lines, "findings": len(analysis.findings),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


STREAM = """
import resource, sys, time
import dnnlens.reading.stream as stream
from dnnlens.analysis.summary import summarize_stats
from dnnlens.reading import read
stream.STREAM_FILE_MIN_BYTES = 0  # fold every event from the start, as a long pipe does
t = time.perf_counter()
log = read([sys.argv[1]], window_events=100_000)
summary = summarize_stats(log.record_stats, log.records, log.diagnostic_counts)
dt = time.perf_counter() - t
print({"seconds": dt, "lines": log.scans[0].lines, "events": summary.exec_count,
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def run_child(code: str, path: Path, *extra: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one dict."""
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), *extra],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return eval(out.strip().splitlines()[-1], {})  # our own child's repr of a dict


# The command ends its process itself once its exit handlers ran (no interpreter teardown):
# the peak is printed by one of them.
CLI = """
import atexit, os, resource, runpy, sys
atexit.register(
    lambda: print({"rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
)
sys.argv = ["dnnlens", "analyze", sys.argv[1], "--format", "json", "-o", os.devnull]
try:
    runpy.run_module("dnnlens.cli", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
"""


def run_cli(path: Path) -> dict:
    """Time the whole command, interpreter start-up included; peak RSS as the child saw it."""
    # as installed: bytecode cached (this sandbox sets PYTHONDONTWRITEBYTECODE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CLI, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    dt = time.perf_counter() - t
    return {"seconds": dt, **eval(out.strip().splitlines()[-1], {})}  # our child's dict


def main() -> None:
    """Build the log, run every stage, print a table (and JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--source", type=Path, default=ROOT / "sample_logs/convnet_nchw_infer.log")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds; each stage reports the median of its paired ratios",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dnnlens-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"bench-{args.lines}.log"
    build_log(args.source, args.lines, path)
    size_mib = path.stat().st_size / 2**20
    floor = lambda: run_child(FLOOR, path)  # noqa: E731
    stages = {
        "parse": lambda: run_child(PARSE, path),
        "parse-j2": lambda: run_child(PARSE, path, "2"),
        "analyze": lambda: run_child(ANALYZE, path),
        "stream": lambda: run_child(STREAM, path),
        "cli": lambda: run_cli(path),
    }
    # Paired runs: each stage right after its own floor run, so the ratio of the pair is
    # measured under the same load; the machine's speed drifts between pairs, not within.
    pairs: dict[str, list[tuple[dict, dict]]] = {name: [] for name in stages}
    try:
        for _ in range(args.repeat):
            for name, stage in stages.items():
                pairs[name].append((floor(), stage()))
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    floors = [f for ps in pairs.values() for f, _ in ps]
    print(
        f"{args.lines:,} lines, {size_mib:,.0f} MiB, built from {args.source.name}; "
        f"{os.cpu_count()} CPUs; {args.repeat} paired rounds, medians"
    )
    print(
        f"{'stage':<9} {'seconds':>8} {'lines/s':>12} {'x floor':>8} {'(range)':>11}"
        f" {'peak MiB':>9}"
    )
    floor_s = statistics.median(f["seconds"] for f in floors)
    print(
        f"{'floor':<9} {floor_s:>8.2f} {args.lines / floor_s:>12,.0f} {1:>8.1f} {'':>11}"
        f" {max(f['rss_mib'] for f in floors):>9.0f}"
    )
    summary = {"floor": {"seconds": floor_s}}
    for name, ps in pairs.items():
        ratios = [r["seconds"] / f["seconds"] for f, r in ps]
        secs = statistics.median(r["seconds"] for _, r in ps)
        rss = max(r["rss_mib"] for _, r in ps)
        ratio = statistics.median(ratios)
        summary[name] = {"seconds": secs, "x_floor": ratio, "rss_mib": rss}
        span = f"{min(ratios):.1f}-{max(ratios):.1f}"
        print(
            f"{name:<9} {secs:>8.2f} {args.lines / secs:>12,.0f} {ratio:>8.1f} {span:>11}"
            f" {rss:>9.0f}"
        )
    if args.json:
        print(json.dumps({"lines": args.lines, "summary": summary, "pairs": pairs}, indent=2))


if __name__ == "__main__":
    main()
