"""Linking framework ops to oneDNN primitives, on the real profiler runs of sample_logs/."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.linking import (
    framework_extras,
    link_framework,
    reorder_direction,
    shape_fits,
)
from dnnlens.cli import app
from dnnlens.parsers.memdesc import parse_mds
from dnnlens.parsers.problem import parse_problem
from dnnlens.parsers.torch_table import read_table_file
from dnnlens.reading import load

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
_STAMP = re.compile(r"^(onednn_verbose,v1,)\d+\.\d+,")


def _files(run: str) -> list[str]:
    return [str(SAMPLES / f"profile_{run}.log"), str(SAMPLES / f"profile_{run}.trace.json")]


def _window_execs(path: Path) -> list[tuple[int, str, float]]:
    """(line, kind, time) of the exec lines between profiler_start and profiler_stop,
    read straight from the text, independently of dnnlens' parser."""
    out, inside = [], False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if "profiler_start" in line:
            inside = True
        elif "profiler_stop" in line:
            inside = False
        elif inside and ",exec," in line:
            fields = line.split(",")
            out.append((n, fields[fields.index("exec") + 2], float(fields[-1])))
    return out


def _without(path: Path, tmp_path: Path, stamps: bool, markers: bool) -> str:
    lines = path.read_text().splitlines(keepends=True)
    if not stamps:
        lines = [_STAMP.sub(r"\1", x) for x in lines]
    if not markers:
        lines = [x for x in lines if "profiler_st" not in x]
    out = tmp_path / path.name
    out.write_text("".join(lines))
    return str(out)


@pytest.fixture(scope="module")
def nchw():
    log = load(_files("nchw_infer"))
    (result,) = link_framework(log)
    return log, result


def test_every_profiled_conv_lists_its_primitives_and_reorders(nchw):
    log, result = nchw
    trace = log.framework.traces[0]
    convs = trace.ops[trace.ops["name"] == "aten::mkldnn_convolution"]
    inst = result.instances.set_index("op")
    assert set(inst.index) == set(convs.index)  # every profiled conv, nothing else
    assert (inst["primitives"] == 1).all()  # one convolution each
    # the stem conv (plain input) reorders weights and output, the others input too
    stem = convs["input_dims"].astype(str).str.startswith("[[4, 3, 64, 64]")
    assert (inst.loc[convs.index[stem], "reorders"] == 2).all()
    assert (inst.loc[convs.index[~stem], "reorders"] == 3).all()
    assert (inst["method"] == "timestamp").all()
    assert (inst["onednn_ms"] <= inst["dur_ms"]).all()  # primitives fit inside their op


def test_counts_and_times_agree_with_both_sources(nchw):
    log, result = nchw
    window = _window_execs(SAMPLES / "profile_nchw_infer.log")
    kinds = Counter(k for _, k, _ in window)
    assert kinds == {"convolution": 20, "reorder": 55}
    trace_convs = (log.framework.traces[0].ops["name"] == "aten::mkldnn_convolution").sum()
    table = read_table_file(str(SAMPLES / "profile_nchw_infer.table.txt")).rows
    table_conv = table[table["name"] == "aten::mkldnn_convolution"].iloc[0]
    assert trace_convs == kinds["convolution"] == table_conv["calls"] == 20
    links = result.links
    assert sorted(links["line"]) == [n for n, _, _ in window]  # the profiled window exactly
    assert links["time_ms"].sum() == pytest.approx(sum(t for _, _, t in window))
    (row,) = result.ops
    assert row["name"] == "aten::mkldnn_convolution"
    assert (row["calls"], row["calls_with_onednn"], row["link"]) == (20, 20, "timestamp")
    assert row["time_ms"] == pytest.approx(table_conv["cpu_total_ms"], abs=0.001)
    by_kind = {k["kind"]: k for k in row["onednn"]}
    assert by_kind["convolution"]["count"] == 20 and by_kind["reorder"]["count"] == 55
    conv_time = sum(t for _, k, t in window if k == "convolution")
    assert by_kind["convolution"]["time_ms"] == pytest.approx(conv_time)
    assert row["onednn_share"] == pytest.approx(row["onednn_time_ms"] / row["time_ms"])
    assert 0 < row["onednn_share"] < 1
    assert result.info["outside_window"] == 15  # the warmup pass before profiler_start


def test_shape_and_order_give_the_same_links(nchw, tmp_path):
    _, by_time = nchw
    log_path = SAMPLES / "profile_nchw_infer.log"
    for markers in (True, False):
        log = load(
            [_without(log_path, tmp_path, stamps=False, markers=markers), _files("nchw_infer")[1]]
        )
        (result,) = link_framework(log)
        assert result.info["method"] == "shape"
        got = result.links[["op", "kind", "time_ms"]].reset_index(drop=True)
        assert got.equals(by_time.links[["op", "kind", "time_ms"]].reset_index(drop=True))
        assert set(result.links.loc[result.links["kind"] == "convolution", "method"]) == {"shape"}
        assert result.ops[0]["link"] == "shape"
        ambiguous = any("more than one place" in n for n in result.notes)
        assert ambiguous == (not markers)  # 6 passes logged, 5 profiled: the last 5 taken


def test_lstm(tmp_path):
    log = load(_files("lstm_infer"))
    (result,) = link_framework(log)
    window = _window_execs(SAMPLES / "profile_lstm_infer.log")
    assert Counter(k for _, k, _ in window) == {"rnn": 10, "reorder": 20}
    inst = result.instances
    assert list(inst["name"].unique()) == ["aten::mkldnn_rnn_layer"]
    assert len(inst) == 10 and (inst["primitives"] == 1).all() and (inst["reorders"] == 2).all()
    (row,) = result.ops
    assert (row["calls"], row["link"], row["primitive_count"], row["reorder_count"]) == (
        10,
        "timestamp",
        10,
        20,
    )
    assert row["onednn_time_ms"] == pytest.approx(sum(t for _, _, t in window))
    # linear does not reach oneDNN in this torch build: aten::addmm ran without it
    assert not ({"matmul", "inner_product"} & set(log.events["kind"].astype(str)))
    assert [r["name"] for r in result.without_onednn] == ["aten::addmm"]
    # without timestamps: the same pairs by shape
    nots = load(
        [
            _without(SAMPLES / "profile_lstm_infer.log", tmp_path, False, True),
            _files("lstm_infer")[1],
        ]
    )
    (again,) = link_framework(nots)
    assert (
        again.links[["op", "kind"]]
        .reset_index(drop=True)
        .equals(result.links[["op", "kind"]].reset_index(drop=True))
    )


def test_bf16_reaches_no_onednn():
    log = load([*_files("bf16_train"), str(SAMPLES / "profile_bf16_train.table.txt")])
    extras = framework_extras(log)
    assert extras["framework_ops"] == []
    without = {r["name"]: r for r in extras["framework_ops_without_onednn"]}
    assert without["aten::_slow_conv2d_forward"]["calls"] == 12
    assert without["aten::_slow_conv2d_forward"]["reason"] == "native fallback"
    assert without["aten::_slow_conv2d_backward"]["calls"] == 12
    notes = " ".join(extras["framework_link"]["notes"])
    assert "native kernels instead of oneDNN" in notes


def test_table_only_log_links_by_order():
    log = load([str(SAMPLES / "profile_combined_infer.log")])
    (result,) = link_framework(log)
    window = _window_execs(SAMPLES / "profile_combined_infer.log")
    (row,) = result.ops
    assert row["name"] == "aten::mkldnn_convolution" and row["link"] == "order"
    by_kind = {k["kind"]: k["count"] for k in row["onednn"]}
    assert by_kind == dict(Counter(k for _, k, _ in window)) == {"convolution": 12, "reorder": 33}
    assert row["calls"] == 12  # from the table
    assert row["onednn_time_ms"] == pytest.approx(sum(t for _, _, t in window))
    assert result.info["outside_window"] == 15


def test_trace_and_table_cross_check():
    log = load([*_files("nchw_infer"), str(SAMPLES / "profile_nchw_infer.table.txt")])
    (row,) = framework_extras(log)["framework_ops"]
    assert row["table_calls"] == row["calls"] == 20
    assert row["table_time_ms"] == pytest.approx(row["time_ms"], abs=0.001)


def test_json_report_and_terminal():
    runner = CliRunner()
    res = runner.invoke(app, ["analyze", *_files("nchw_infer"), "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (row,) = doc["framework_ops"]
    assert set(row) >= {"name", "calls", "time_ms", "onednn", "link"}
    assert row["link"] in ("timestamp", "shape", "order")
    assert all(set(k) == {"kind", "count", "time_ms"} for k in row["onednn"])
    res = runner.invoke(app, ["analyze", *_files("nchw_infer")])
    assert "Framework view: steps, phases, ops" in res.stdout  # first screen
    assert "aten::mkldnn_convolution" in res.stdout
    res = runner.invoke(app, ["analyze", *_files("nchw_infer"), "--details"])
    assert "Framework ops and their oneDNN primitives" in res.stdout


def test_truncated_trace_is_an_input_error_not_a_crash(tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_text((SAMPLES / "profile_nchw_infer.trace.json").read_text()[:100000])
    res = CliRunner().invoke(app, ["analyze", _files("nchw_infer")[0], str(cut), "-f", "json"])
    assert res.exit_code == 2
    assert res.exception is None or isinstance(res.exception, SystemExit)
    doc = json.loads(res.stdout)
    assert any("ends early" in e for e in doc["input_errors"])
    assert doc["framework_ops"][0]["calls"] > 0  # the complete events were still linked


def test_trace_alone():
    res = CliRunner().invoke(app, ["analyze", _files("nchw_infer")[1], "-f", "json"])
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["framework_ops"] == []
    assert "no verbose log" in " ".join(doc["framework_link"]["notes"])


def test_analysis_extras_without_framework_data():
    assert Analysis(load([str(SAMPLES / "lstm_infer.log")])).framework_links == {}


def test_shape_fits():
    conv = parse_problem("convolution", "mb4_ic16oc32_ih32oh16kh3sh2dh0ph1_iw32ow16kw3sw2dw0pw1")
    assert shape_fits("convolution", conv, "[[4, 16, 32, 32], [32, 16, 3, 3], [], []]")
    assert not shape_fits("convolution", conv, "[[4, 16, 32, 32], [16, 16, 3, 3], []]")
    assert shape_fits("convolution", conv, "") is None
    backward = "[[4, 32, 16, 16], [4, 16, 32, 32], [32, 16, 3, 3], [], []]"
    assert shape_fits("convolution", conv, backward)  # grad_output, input, weight
    rnn = parse_problem("rnn", "l1t20mb4sic64slc32dhc64dic64")
    assert shape_fits("rnn", rnn, "[[20, 4, 32], [256, 32], [256, 64], [256], [256]]")
    assert not shape_fits("rnn", rnn, "[[20, 4, 64], [256, 64], [256, 64], [256], [256]]")
    reorder = parse_problem("reorder", "4x16x32x32")
    assert shape_fits("reorder", reorder, "[[4, 16, 32, 32]]") is None


def test_reorder_direction():
    assert (
        reorder_direction(parse_mds("src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0"))
        == "in"
    )
    assert (
        reorder_direction(parse_mds("src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0"))
        == "out"
    )
    assert (
        reorder_direction(parse_mds("src:f32::blocked:abcd::f0 dst:f32::blocked:acdb::f0"))
        == "other"
    )


def test_each_table_of_a_log_links_to_the_stretch_since_the_table_before_it(tmp_path, monkeypatch):
    """profile_combined_infer.log without its profiler_start/stop lines, written three times
    one after the other: three tables, each linked to the 60 exec lines (``grep -c ,exec,
    sample_logs/profile_combined_infer.log``) printed since the table before it, and the
    event table is read into the linking's arrays once for all of them."""
    from dnnlens.analysis import linking

    text = (SAMPLES / "profile_combined_infer.log").read_text()
    one = "".join(x for x in text.splitlines(keepends=True) if "profiler_st" not in x)
    path = tmp_path / "three_runs.log"
    path.write_text(one * 3)
    log = load([str(path)])
    assert len(log.framework.tables) == 3
    reads = []
    real = linking._Execs.of_events.__func__

    def counted(cls, events, records=None):
        reads.append(len(events))
        return real(cls, events, records)

    monkeypatch.setattr(linking._Execs, "of_events", classmethod(counted))
    results = link_framework(log)
    assert len(reads) == 1
    assert [r.info["primitives_in_window"] for r in results] == [60, 60, 60]
    assert [r.info["outside_window"] for r in results] == [120, 120, 120]
    notes = framework_extras(log)["framework_link"]["notes"]
    assert sum("since the table before it" in n for n in notes) == 1  # said once
