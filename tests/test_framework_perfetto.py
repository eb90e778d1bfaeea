"""Framework ops in the Perfetto export: their own process, one track per trace thread,
on the primitives' time axis when both sides carry times."""

from __future__ import annotations

import json
from pathlib import Path

from dnnlens.analysis.analysis import Analysis
from dnnlens.reading import load
from dnnlens.report.perfetto import TraceOptions, build_trace

RUNS = Path(__file__).resolve().parent.parent / "sample_logs" / "framework"


def export(*names: str, options: TraceOptions | None = None) -> dict:
    return build_trace(Analysis(load([str(RUNS / n) for n in names])), options)


def test_framework_ops_sit_around_their_primitives():
    """autocast_bad with its timestamped log: every matmul primitive the trace's steps hold
    (56 of the log's 84) lies inside an aten::addmm or aten::mm of the framework track."""
    doc = export("autocast_bad.trace.json.gz", "autocast_bad.log")
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names[2] == f"PyTorch profiler: {RUNS / 'autocast_bad.trace.json.gz'}"
    ops = [e for e in events if e["pid"] == 2 and e["ph"] == "X"]
    matmuls = [e for e in ops if e["name"] in ("aten::addmm", "aten::mm")]
    prims = [
        e for e in events if e["pid"] == 1 and e["ph"] == "X" and e["name"].startswith("matmul")
    ]
    inside = [
        p
        for p in prims
        if any(
            m["ts"] - 1 <= p["ts"] and p["ts"] + p["dur"] <= m["ts"] + m["dur"] + 1 for m in matmuls
        )
    ]
    assert len(prims) == 84 and len(inside) == 56
    (thread,) = [e for e in events if e["pid"] == 2 and e["name"] == "thread_name"]
    assert thread["args"]["name"].startswith("thread ")  # the trace's own thread name
    assert all(e["tid"] == thread["tid"] for e in ops)
    json.dumps(doc, allow_nan=False)


def test_a_trace_alone_keeps_its_own_axis_and_respects_max_events():
    doc = export("sgd_bad.trace.json.gz", options=TraceOptions(max_events=100))
    events = doc["traceEvents"]
    (process,) = [e for e in events if e["name"] == "process_name"]
    assert process["args"]["name"].endswith("(own time axis)")
    ops = [e for e in events if e["ph"] == "X"]
    assert len(ops) == 100 and min(e["ts"] for e in ops) == 0
    assert all("line" in e["args"] for e in ops)
