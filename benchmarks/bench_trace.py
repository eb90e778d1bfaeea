"""Benchmark: reading a large PyTorch profiler chrome trace, time and peak memory.

    python benchmarks/bench_trace.py              # a trace of about 1 GB
    python benchmarks/bench_trace.py --mb 200     # a smaller one
    python benchmarks/bench_trace.py --keep DIR   # keep (and reuse) the generated trace

Builds the trace by repeating the events of the real traces in ``sample_logs/`` (their
names, categories, argument sets and nesting; each copy shifted in time by one step and
given new external ids), written the way kineto writes them (one key per line), then runs,
each in a fresh subprocess so that peak memory is its own:

* ``floor``: reading the file's bytes in 1 MiB blocks (what any reader must pay);
* ``json``: ``json.load`` of the whole file (what a naive reader pays; skipped above
  ``--json-max-mb``, since it needs several times the file in memory);
* ``read``: :func:`dnnlens.parsers.torch_trace.read_trace` (the op table);
* ``analyze``: ``read_trace`` then :func:`dnnlens.analysis.framework.analyze_framework`.

It reports seconds, events per second and peak RSS. No assertion: numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "sample_logs").glob("profile_*.trace.json"))

FLOOR = """
import resource, sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], "rb") as f:
    while block := f.read(1 << 20):
        n += len(block)
print({"seconds": time.perf_counter() - t, "bytes": n,
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

JSON = """
import json, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    doc = json.load(f)
print({"seconds": time.perf_counter() - t, "events": len(doc["traceEvents"]),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

READ = """
import resource, sys, time
from dnnlens.parsers.torch_trace import read_trace
t = time.perf_counter()
trace = read_trace(sys.argv[1])
print({"seconds": time.perf_counter() - t, "events": trace.events, "ops": len(trace.ops),
       "error": trace.error,
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""

ANALYZE = """
import resource, sys, time
from dnnlens.parsers.torch_trace import FrameworkData, read_trace
from dnnlens.analysis.framework import analyze_framework
t = time.perf_counter()
trace = read_trace(sys.argv[1])
read = time.perf_counter() - t
fw = analyze_framework(FrameworkData(traces=[trace]))
doc = fw.to_json()
print({"seconds": time.perf_counter() - t, "read_seconds": read, "events": trace.events,
       "steps": len(doc["steps"]["steps"]),
       "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def _source_events() -> tuple[list[dict], float]:
    """The events of the sample traces, one after the other, and the span they cover."""
    out: list[dict] = []
    offset = 0.0
    for path in SOURCES:
        events = json.loads(path.read_text())["traceEvents"]
        timed = [e for e in events if e.get("ph") in ("X", "s", "f", "i")]
        start = min(float(e["ts"]) for e in timed)
        end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed)
        for e in timed:
            e = dict(e)
            e["ts"] = round(float(e["ts"]) - start + offset, 3)
            out.append(e)
        offset += end - start + 100.0
    return out, offset


def _event_text(event: dict) -> str:
    """One event as kineto writes it: an object with one key per line."""
    lines = [f'    "{k}": {json.dumps(v)}' for k, v in event.items()]
    return "  {\n" + ",\n".join(lines) + "\n  }"


def build_trace(path: Path, megabytes: int) -> int:
    """Write a trace of about ``megabytes`` MB; return its event count."""
    events, span = _source_events()
    target = megabytes * 1_000_000
    written = count = 0
    with open(path, "w", encoding="utf-8") as out:
        head = '{\n  "schemaVersion": 1,\n  "baseTimeNanoseconds": 1790857026000000000,\n'
        out.write(head + '  "traceEvents": [\n')
        written += len(head)
        copy = 0
        sep = ""
        while written < target:
            shift = copy * span
            for e in events:
                e = dict(e)
                e["ts"] = round(e["ts"] + shift, 3)
                args = e.get("args")
                if isinstance(args, dict) and "External id" in args:
                    e["args"] = {**args, "External id": args["External id"] + copy * 100_000}
                if "id" in e and isinstance(e["id"], int):
                    e["id"] += copy * 100_000
                text = sep + _event_text(e)
                out.write(text)
                written += len(text)
                count += 1
                sep = ",\n"
            copy += 1
        out.write("\n  ],\n" + '  "traceName": "synthetic"\n}\n')
    return count


def _run(code: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own child's dict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="trace size in MB")
    parser.add_argument("--keep", type=Path, help="directory to keep the generated trace in")
    parser.add_argument("--json-max-mb", type=int, default=300)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="dnnlens-trace-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"synthetic_{args.mb}mb.trace.json"
    if not path.exists():
        print(f"building {path} ...", flush=True)
        build_trace(path, args.mb)
    size = path.stat().st_size
    print(f"trace: {path} ({size / 1e6:,.0f} MB)")
    stages = [("floor", FLOOR), ("read", READ), ("analyze", ANALYZE)]
    if args.mb <= args.json_max_mb:
        stages.insert(1, ("json", JSON))
    for name, code in stages:
        r = _run(code, path)
        if "error" in r and "seconds" not in r:
            print(f"{name:8} failed: {r['error']}")
            continue
        events = r.get("events")
        rate = f"{events / r['seconds'] / 1e6:6.2f} M events/s" if events else " " * 17
        print(f"{name:8} {r['seconds']:7.2f} s  {rate}  peak RSS {r['rss_mib']:7.0f} MiB  {r}")
    if not args.keep:
        path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
