"""Benchmark: dnnlens against plain line reading, on a large log built from a sample log.

    python benchmarks/bench_scan.py                  # 1,000,000 lines
    python benchmarks/bench_scan.py --lines 10000000 # 10M lines (about 2 GB on disk)

Builds the big log by repeating a real sample log (``sample_logs/convnet_nchw_infer.log``
by default) and then, each in a fresh subprocess so peak memory is its own:

* ``floor``: plain Python reading of the same file (``for line in f: n += 1``);
* ``parse``: ``dnnlens.load.load`` (every line accounted for, event table built);
* ``parse-j2``: the same with ``jobs=2`` (the file split into two byte ranges, two processes);
* ``analyze``: parse + summary + rules, i.e. what ``dnnlens analyze --format json`` does;
* ``stream``: the streaming path of ``dnnlens analyze -`` (exact totals, a window of 100,000
  raw events): its peak memory must not grow with the log;
* ``cli``: the ``dnnlens analyze --format json`` command end to end, start-up included.

It reports lines/s, the time ratio to the floor and peak RSS (ratio to the floor too).
Times exclude interpreter start-up and imports except for ``cli``. The stages run in
``--repeat`` rounds (floor included, so a busy machine slows every stage alike) and each
reports its fastest run. No assertion: numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
from dnnlens.load import load
t = time.perf_counter()
log = load([sys.argv[1]], jobs=int(sys.argv[2]) if len(sys.argv) > 2 else 1)
dt = time.perf_counter() - t
print({"seconds": dt, "lines": log.scans[0].lines, "events": len(log.events),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

ANALYZE = """
import resource, sys, time
from dnnlens.load import load
from dnnlens.analysis.result import analyze_log
from dnnlens.analysis.rules.engine import RuleOptions, run_rules
from dnnlens.report.json_report import render_json
import dnnlens.analysis.costmodel, dnnlens.analysis.graph, dnnlens.analysis.iterations  # noqa
import dnnlens.analysis.roofline, dnnlens.analysis.rules.context  # noqa: imported lazily
t = time.perf_counter()
log = load([sys.argv[1]])
analysis = analyze_log(log)
analysis.findings = run_rules(analysis, RuleOptions())
render_json(analysis)
dt = time.perf_counter() - t
print({"seconds": dt, "lines": log.scans[0].lines, "findings": len(analysis.findings),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


STREAM = """
import resource, sys, time
from dnnlens.io.inputs import InputSource, ReadStats, open_blocks
from dnnlens.stream import StreamAnalyzer
t = time.perf_counter()
analyzer = StreamAnalyzer(sys.argv[1], window_events=100_000)
stats = ReadStats()
for block in open_blocks(InputSource(sys.argv[1]), stats):
    analyzer.feed_block(block, stats)
summary = analyzer.summary()
dt = time.perf_counter() - t
print({"seconds": dt, "lines": analyzer.lines, "events": summary.exec_count,
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def build_log(source: Path, lines: int, path: Path) -> None:
    """Write ``lines`` lines by repeating ``source`` (its header included each time)."""
    block = source.read_text(encoding="utf-8").splitlines(keepends=True)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < lines:
            take = block[: lines - written]
            out.writelines(take)
            written += len(take)


def run_child(code: str, path: Path, *extra: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one dict."""
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), *extra], check=True, capture_output=True,
        text=True,
    ).stdout
    return eval(out.strip().splitlines()[-1], {})  # our own child's repr of a dict


def run_cli(path: Path) -> dict:
    """Time the whole command, start-up included; peak RSS from the child's rusage."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # as installed: bytecode cached (this sandbox sets PYTHONDONTWRITEBYTECODE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "analyze", str(path), "--format", "json"],
        check=True, stdout=subprocess.DEVNULL, env=env,
    )
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"seconds": dt, "rss_mib": max(after, before) / 1024}


def main() -> None:
    """Build the log, run every stage, print a table (and JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--source", type=Path, default=ROOT / "sample_logs/convnet_nchw_infer.log")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds of all stages; each stage reports its fastest run")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dnnlens-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"bench-{args.lines}.log"
    build_log(args.source, args.lines, path)
    size_mib = path.stat().st_size / 2**20
    stages = {
        "floor": lambda: run_child(FLOOR, path),
        "parse": lambda: run_child(PARSE, path),
        "parse-j2": lambda: run_child(PARSE, path, "2"),
        "analyze": lambda: run_child(ANALYZE, path),
        "stream": lambda: run_child(STREAM, path),
        "cli": lambda: run_cli(path),
    }
    runs: dict[str, list[dict]] = {name: [] for name in stages}
    try:
        for _ in range(args.repeat):  # rounds of every stage, so drift hits all alike
            for name, stage in stages.items():
                runs[name].append(stage())
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    # the fastest run of each stage: the least disturbed by other work on the machine
    results = {name: min(rs, key=lambda r: r["seconds"]) for name, rs in runs.items()}
    floor = results["floor"]
    print(f"{args.lines:,} lines, {size_mib:,.0f} MiB, built from {args.source.name}; "
          f"{os.cpu_count()} CPUs; best of {args.repeat} rounds")
    print(f"{'stage':<9} {'seconds':>8} {'lines/s':>12} {'x floor':>8} {'peak MiB':>9} "
          f"{'x floor':>8}")
    for name, r in results.items():
        rate = args.lines / r["seconds"]
        t_ratio = r["seconds"] / floor["seconds"]
        m_ratio = r["rss_mib"] / floor["rss_mib"]
        print(f"{name:<9} {r['seconds']:>8.2f} {rate:>12,.0f} {t_ratio:>8.1f}"
              f" {r['rss_mib']:>9.0f} {m_ratio:>8.1f}")
    if args.json:
        print(json.dumps({"lines": args.lines, "best": results, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
