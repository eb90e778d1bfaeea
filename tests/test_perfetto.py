"""Perfetto / Chrome trace-event export: structure, times, windows, annotations.

The format is the Trace Event Format (complete events ``"ph": "X"`` with ``ts``/``dur`` in
microseconds, metadata ``"M"``, instant events ``"i"``), which ui.perfetto.dev opens.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.analysis.summary import primitive_execs
from dnnlens.cli import app
from dnnlens.reading import load, load_text
from dnnlens.report.perfetto import TraceOptions, build_trace, parse_window, write_trace

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
STAMPED = str(LOGS / "all_timestamps_infer.log")


def check_structure(trace: dict) -> list[dict]:
    """Assert the trace-event format; return the X events."""
    json.loads(json.dumps(trace, allow_nan=False))  # valid JSON, no NaN
    assert isinstance(trace["traceEvents"], list)
    xs = []
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M", "i"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["name"], str)
        if e["ph"] == "M":
            assert e["name"] in (
                "process_name",
                "process_sort_index",
                "thread_name",
                "thread_sort_index",
            )
            continue
        assert isinstance(e["ts"], int | float) and math.isfinite(e["ts"]) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], int | float) and e["dur"] >= 0
            assert isinstance(e["cat"], str)
            xs.append(e)
        else:
            assert e["s"] in ("t", "g", "p")
    # per thread, ts never goes back, and events on one primitive track never overlap
    tracks: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in xs:
        tracks[(e["pid"], e["tid"])].append(e)
    for (_, tid), events in tracks.items():
        ts = [e["ts"] for e in events]
        assert ts == sorted(ts)
        if tid != 0:  # 0 is the iterations track (spans)
            for a, b in zip(events, events[1:], strict=False):
                assert a["ts"] + a["dur"] <= b["ts"] + 2e-3
    return xs


@pytest.fixture(scope="module")
def nchw():
    return Analysis(load([NCHW]))


def test_one_event_per_execution_with_the_logs_time(nchw):
    xs = check_structure(build_trace(nchw))
    execs = [e for e in xs if e["cat"] == "exec"]
    assert len(execs) == 165  # grep -c ',exec,' convnet_nchw_infer.log
    want = primitive_execs(nchw.log.events)
    by_line = {int(r.line): float(r.time_ms) for r in want.itertuples()}
    for e in execs:
        assert e["dur"] == pytest.approx(by_line[e["args"]["line"]] * 1000, abs=1e-3)
        assert e["args"]["time_ms"] == by_line[e["args"]["line"]]
    assert sum(e["dur"] for e in execs) / 1000 == pytest.approx(356.084723, abs=1e-3)


def test_end_to_end_placement(nchw):
    xs = check_structure(build_trace(nchw))
    prims = sorted((e for e in xs if e["tid"] == 1), key=lambda e: e["args"]["line"])
    # laid end to end in log order: each starts where the previous one ended
    for a, b in zip(prims, prims[1:], strict=False):
        assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=2e-3)
    assert prims[0]["ts"] == 0
    assert {e["cat"] for e in prims} == {"exec", "create:cache_miss", "create:cache_hit"}
    assert build_trace(nchw)["otherData"]["timing"][NCHW] == "end-to-end"


def test_timestamps_are_used():
    analysis = Analysis(load([STAMPED]))
    trace = build_trace(analysis)
    xs = check_structure(trace)
    assert trace["otherData"]["timing"][STAMPED] == "timestamps"
    ev = analysis.log.events
    stamps = dict(zip(ev["line"].tolist(), ev["timestamp_ms"].tolist(), strict=True))
    t0 = np.nanmin(ev["timestamp_ms"].to_numpy())
    for e in xs:
        if e["tid"] == 0:
            continue
        assert e["ts"] == pytest.approx((stamps[e["args"]["line"]] - t0) * 1000, abs=2e-3)


def test_iteration_window(nchw):
    full = check_structure(build_trace(nchw))
    trace = build_trace(nchw, TraceOptions(window=(2, 4)))
    xs = check_structure(trace)
    execs = [e for e in xs if e["cat"] == "exec"]
    assert len(execs) == 30  # 15 primitives per pass, passes 2 and 3
    assert {e["args"]["iteration"] for e in execs} == {2, 3}
    spans = [e for e in xs if e["cat"] == "iteration"]
    # passes 1 to 3 of this log take 102, 102 and 30 ms against a steady median of 2.2 ms
    # (grep the exec lines per pass): slow warm-up (dnnlens.analysis.steady)
    assert [s["name"] for s in spans] == ["iteration 2 (warm-up)", "iteration 3 (warm-up)"]
    later = check_structure(build_trace(nchw, TraceOptions(window=(4, 5))))
    assert [s["name"] for s in later if s["cat"] == "iteration"] == ["iteration 4"]
    # a window keeps the events where they are in the whole trace
    where = {e["args"]["line"]: e["ts"] for e in full if e["tid"] == 1}
    for e in execs:
        assert e["ts"] == pytest.approx(where[e["args"]["line"]])
    assert trace["otherData"]["window"] == [2, 4]


def test_max_events_cuts_at_an_iteration(nchw):
    trace = build_trace(nchw, TraceOptions(max_events=100))
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] != 0]
    assert trace["otherData"]["truncated"] is True
    assert len(xs) <= 100
    assert len({e["args"]["iteration"] for e in xs}) == trace["otherData"]["window"][1]


def test_findings_become_instant_events(nchw):
    nchw.findings = [
        Finding(
            "layout-round-trip",
            "DL002",
            "warning",
            "round <trips>",
            [Evidence(NCHW, 16), Evidence(NCHW, 21)],
        ),
        Finding("no-evidence", "X1", "info", "whole log"),
    ]
    try:
        trace = build_trace(nchw)
    finally:
        nchw.findings = []
    check_structure(trace)
    inst = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    placed = [e for e in inst if e["args"]["rule"] == "layout-round-trip"]
    assert len(placed) == 2 and all(e["s"] == "t" for e in placed)
    lines = {
        e["args"]["line"]: e["ts"]
        for e in trace["traceEvents"]
        if e["ph"] == "X" and "line" in e.get("args", {})
    }
    assert sorted(e["ts"] for e in placed) == sorted([lines[16], lines[21]])
    glob = [e for e in inst if e["args"]["rule"] == "no-evidence"]
    assert len(glob) == 1 and glob[0]["s"] == "g"


def test_overlapping_timestamps_go_to_extra_tracks():
    text = "\n".join(
        [
            "onednn_verbose,v1,1000.000,primitive,exec,gpu,matmul,ocl:gemm:any,undef,"
            "src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,2x2:2x2,5",
            "onednn_verbose,v1,1001.000,primitive,exec,gpu,matmul,ocl:gemm:any,undef,"
            "src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,2x2:2x2,5",
            "onednn_verbose,v1,1010.000,primitive,exec,gpu,matmul,ocl:gemm:any,undef,"
            "src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,2x2:2x2,1",
        ]
    )
    xs = check_structure(build_trace(Analysis(load_text(text))))
    prims = [e for e in xs if e["tid"] != 0]
    assert [e["tid"] for e in prims] == [1, 2, 1]
    assert [e["ts"] for e in prims] == [0, 1000, 10000]


def test_graph_partitions_on_their_own_track():
    text = "\n".join(
        [
            "onednn_verbose,v1,primitive,exec,cpu,matmul,brg:avx2,undef,src:f32::blocked:ab::f0 "
            "wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,2x2:2x2,1",
            "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
            "src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,"
            "alg:eltwise_relu alpha:0 beta:0,2x2,1",
            "onednn_verbose,v1,graph,exec,cpu,100002,matmul_post_ops,MatMul;ReLU,,"
            "in0_f32:0:strided:undef:2x2:2s1 out0_f32:2:strided:undef:2x2:2s1,fpm:strict,"
            "larger_partition_kernel_t,dnnl_backend,2.5",
        ]
    )
    analysis = Analysis(load_text(text))
    xs = check_structure(build_trace(analysis))
    graph = [e for e in xs if e["tid"] >= 1001]
    assert len(graph) == 1, "the graph partition line is a slice of its own track"
    assert graph[0]["dur"] == 2500 and graph[0]["ts"] == pytest.approx(0.0, abs=1e-6)


def test_write_trace_gz_and_plain(tmp_path, nchw):
    for name in ("t.json", "t.json.gz"):
        path = tmp_path / name
        stats = write_trace(nchw, path)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            trace = json.load(fh)
        xs = check_structure(trace)
        assert stats.executions == 165 == sum(e["cat"] == "exec" for e in xs)
        assert trace["displayTimeUnit"] == "ms"


def test_parse_window():
    assert parse_window("2:5") == (2, 5)
    assert parse_window("3") == (3, 4)
    assert parse_window(":4") == (None, 4) and parse_window("7:") == (7, None)
    for bad in ("a:b", "5:2", "-1:3"):
        with pytest.raises(ValueError):
            parse_window(bad)


def test_cli(tmp_path):
    out = tmp_path / "sub" / "trace.json.gz"
    runner = CliRunner()
    result = runner.invoke(app, ["export", "perfetto", NCHW, "-o", str(out), "--iterations", "1:3"])
    assert result.exit_code == 0, result.output
    with gzip.open(out, "rt") as fh:
        xs = check_structure(json.load(fh))
    assert {e["args"]["iteration"] for e in xs if e["cat"] == "exec"} == {1, 2}
    assert "30 executions" in result.stderr
    quiet = runner.invoke(app, ["export", "perfetto", NCHW, "-o", str(out), "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert (
        runner.invoke(
            app, ["export", "perfetto", NCHW, "-o", str(out), "--iterations", "x"]
        ).exit_code
        == 2
    )
    assert runner.invoke(app, ["export", "perfetto", "missing.log", "-o", str(out)]).exit_code == 2
