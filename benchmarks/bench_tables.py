"""Benchmark: a verbose log with a printed ``key_averages()`` table every ~1,000 lines.

    python benchmarks/bench_tables.py                 # 1,000,000 lines
    python benchmarks/bench_tables.py --lines 200000

Builds two logs of the same length from ``sample_logs/convnet_nchw_infer.log``: the plain
one, and the same with ``sample_logs/profile_nchw_infer.table.txt`` printed after every
``--every`` lines (a training script that prints its profile each few steps). Each is read
with :func:`dnnlens.reading.load` and linked with
:func:`dnnlens.analysis.linking.framework_extras` in a fresh subprocess; the tables must
cost what their own lines cost (the ratio of the two times near 1), never a pass over the
event table per table. No assertion: numbers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from made_logs import build_tables

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "sample_logs" / "convnet_nchw_infer.log"
TABLE = ROOT / "sample_logs" / "profile_nchw_infer.table.txt"

RUN = """
import resource, sys, time
from dnnlens.reading import load
from dnnlens.analysis.linking import framework_extras
t = time.perf_counter()
log = load([sys.argv[1]])
read = time.perf_counter() - t
extras = framework_extras(log) if log.framework is not None else {}
print({"seconds": time.perf_counter() - t, "read_seconds": read,
       "lines": log.scans[0].lines, "events": len(log.events),
       "tables": len(log.framework.tables) if log.framework else 0,
       "linked_rows": len(extras.get("framework_ops", [])),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=1000)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryDirectory(prefix="dnnlens-tables-") as tmp:
        results = {}
        for name, every in (("plain", None), ("tables", args.every)):
            path = Path(tmp) / f"{name}.log"
            build_tables(LOG, TABLE, path, args.lines, every)
            done = subprocess.run(
                [sys.executable, "-c", RUN, str(path)], capture_output=True, text=True, env=env
            )
            if done.returncode:
                print(f"{name:7} failed: {done.stderr.strip().splitlines()[-1]}")
                continue
            r = eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our child's dict
            results[name] = r
            print(f"{name:7} {r['seconds']:7.2f} s  peak RSS {r['rss_mib']:6.0f} MiB  {r}")
        if len(results) == 2:
            ratio = results["tables"]["seconds"] / results["plain"]["seconds"]
            print(f"table-mixed / plain: {ratio:.2f}x")


if __name__ == "__main__":
    main()
