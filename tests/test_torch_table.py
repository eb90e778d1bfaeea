"""key_averages() table parser: golden values from the real tables, grammar properties."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.parsers.torch_table import (
    TableFinder,
    TableParseError,
    find_tables,
    parse_table,
    read_table_file,
    time_ms,
)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def _row(table, name, **match):
    rows = table.rows[table.rows["name"] == name]
    for key, value in match.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, (name, match, len(rows))
    return rows.iloc[0]


def test_nchw_table_golden():
    t = read_table_file(str(SAMPLES / "profile_nchw_infer.table.txt"))
    assert t.headers == [
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
        "# of Calls",
    ]
    assert len(t.rows) == 34
    assert not t.by_input_shape
    assert t.totals_ms == {"self_cpu_time_total_ms": pytest.approx(20.667)}
    conv = t.rows.iloc[0]  # sorted by self CPU: the conv comes first
    assert conv["name"] == "aten::mkldnn_convolution"
    assert conv["self_cpu_pct"] == pytest.approx(53.37)
    assert conv["self_cpu_ms"] == pytest.approx(11.029)
    assert conv["cpu_total_pct"] == pytest.approx(55.04)
    assert conv["cpu_total_ms"] == pytest.approx(11.376)
    assert conv["cpu_time_avg_ms"] == pytest.approx(0.568794)
    assert conv["calls"] == 20
    empty = _row(t, "aten::empty")
    assert (empty["self_cpu_ms"], empty["calls"]) == (pytest.approx(0.427117), 160)
    last = t.rows.iloc[-1]
    assert last["name"] == "aten::resolve_conj"
    assert last["cpu_time_avg_ms"] == pytest.approx(0.000787)
    assert not t.rows["truncated"].any()
    # the column sums to the footer (to the table's rounding)
    assert t.rows["self_cpu_ms"].sum() == pytest.approx(20.667, abs=0.005)


def test_group_by_input_shape_table():
    t = read_table_file(str(SAMPLES / "profile_nchw_infer.shapes.txt"))
    assert t.by_input_shape
    assert len(t.rows) == 30  # row_limit=30
    first = t.rows.iloc[0]  # sorted by CPU total
    assert first["name"] == "aten::conv2d"
    assert first["input_shapes"] == "[[4, 16, 32, 32], [16, 16, 3, 3], [], [], [], [], []]"
    assert first["cpu_total_ms"] == pytest.approx(5.287)
    assert first["calls"] == 10
    convs = t.rows[t.rows["name"] == "aten::mkldnn_convolution"]
    assert sorted(convs["calls"]) == [5, 5, 10]
    assert convs["calls"].sum() == 20
    stem = _row(
        t,
        "aten::mkldnn_convolution",
        input_shapes="[[4, 3, 64, 64], [16, 3, 3, 3], [], [], [], [], []]",
    )
    assert stem["self_cpu_ms"] == pytest.approx(4.283)
    linear = _row(t, "aten::linear")
    assert linear["input_shapes"] == "[[4, 32], [10, 32], [10]]"


def test_lstm_and_bf16_tables():
    lstm = read_table_file(str(SAMPLES / "profile_lstm_infer.table.txt"))
    assert len(lstm.rows) == 19
    rnn = _row(lstm, "aten::mkldnn_rnn_layer")
    assert (rnn["self_cpu_pct"], rnn["cpu_total_ms"], rnn["calls"]) == (
        pytest.approx(80.66),
        pytest.approx(5.620),
        10,
    )
    assert lstm.totals_ms["self_cpu_time_total_ms"] == pytest.approx(6.797)

    bf16 = read_table_file(str(SAMPLES / "profile_bf16_train.table.txt"))
    assert len(bf16.rows) == 86
    top = bf16.rows.iloc[0]
    assert (top["name"], top["calls"], top["self_cpu_ms"]) == (
        "aten::_slow_conv2d_forward",
        12,
        pytest.approx(172.423),
    )
    # names with spaces stay whole; names cut at the column width are flagged
    truncated = bf16.rows[bf16.rows["truncated"]]
    assert len(truncated) == 7
    assert "autograd::engine::evaluate_function: ConvolutionBack..." in set(truncated["name"])
    assert "autograd::engine::evaluate_function: ReluBackward0" in set(bf16.rows["name"])
    assert bf16.rows["calls"].sum() == 1620
    assert bf16.totals_ms["self_cpu_time_total_ms"] == pytest.approx(224.495)


def test_table_inside_a_log():
    path = SAMPLES / "profile_combined_infer.log"
    finder = TableFinder(str(path))
    with path.open() as fh:
        for _ in finder.watch([fh.readlines()]):
            pass
    assert finder.markers == [(23, "start"), (69, "stop")]
    assert finder.errors == []
    (table,) = finder.tables
    assert table.line == 70
    assert len(table.rows) == 34
    conv = _row(table, "aten::mkldnn_convolution")
    assert (conv["calls"], conv["cpu_total_ms"]) == (12, pytest.approx(242.875))
    assert table.totals_ms["self_cpu_time_total_ms"] == pytest.approx(452.431)


def test_finder_reports_a_table_cut_off():
    lines = (SAMPLES / "profile_nchw_infer.table.txt").read_text().splitlines()[:10]
    finder = TableFinder("cut.txt")
    finder.feed(lines)
    finder.close()
    assert len(finder.tables) == 1 and len(finder.tables[0].rows) == 7
    assert "cut off" in finder.errors[0]


def test_time_units():
    assert time_ms("568.794us") == pytest.approx(0.568794)
    assert time_ms("11.029ms") == pytest.approx(11.029)
    assert time_ms("1.5s") == pytest.approx(1500.0)
    assert time_ms("250ns") == pytest.approx(0.00025)
    assert math.isnan(time_ms("--"))


def test_not_a_table():
    with pytest.raises(TableParseError):
        parse_table("hello\nworld\n")
    assert find_tables(["onednn_verbose,v1,info,x", "----", "done"]) == []


def test_extra_columns_and_empty_cells():
    text = "\n".join(
        [
            "----------  ------------  ------------  ------------  ------------  ---------------",
            "      Name      Self CPU     CPU total       CPU Mem    # of Calls  Source Location",
            "----------  ------------  ------------  ------------  ------------  ---------------",
            "   aten::a       1.000ms       2.000ms       1.00 Mb             3  a.py(1): f     ",
            "                                                                    b.py(2): g     ",
            "   aten::b       2.000us       2.000us                           1                 ",
            "----------  ------------  ------------  ------------  ------------  ---------------",
            "Self CPU time total: 1.002ms",
            "Self CUDA time total: 0.000us",
        ]
    )
    t = parse_table(text)
    assert list(t.rows["name"]) == ["aten::a", "aten::b"]
    assert t.rows["cpu_mem_bytes"].iloc[0] == 1024**2
    assert math.isnan(t.rows["cpu_mem_bytes"].iloc[1])
    assert t.rows["source_location"].iloc[0] == "a.py(1): f\nb.py(2): g"
    assert t.totals_ms == {
        "self_cpu_time_total_ms": pytest.approx(1.002),
        "self_cuda_time_total_ms": 0.0,
    }


# --------------------------------------------------------------------------------------------
# properties: tables laid out the way torch lays them out


_WORD = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz_:.#0123456789ABC", min_size=1, max_size=20
).filter(lambda w: not w.startswith("-"))
_NAME = st.lists(_WORD, min_size=1, max_size=3).map(" ".join)
_UNIT = st.sampled_from(["us", "ms", "s"])
_TIME = st.tuples(st.floats(0, 99999, allow_nan=False), _UNIT).map(lambda t: f"{t[0]:.3f}{t[1]}")
_PCT = st.floats(0, 100, allow_nan=False).map(lambda v: f"{v:.2f}%")
_SHAPES = st.lists(st.lists(st.integers(1, 512), max_size=4), max_size=5).map(lambda s: str(s))


@st.composite
def _tables(draw):
    n = draw(st.integers(0, 25))
    shapes = draw(st.booleans())
    rows = []
    for _ in range(n):
        name = draw(_NAME)
        if len(name) >= 52:
            name = name[:52] + "..."
        row = [
            name,
            draw(_PCT),
            draw(_TIME),
            draw(_PCT),
            draw(_TIME),
            draw(_TIME),
            str(draw(st.integers(1, 10**6))),
        ]
        if shapes:
            row.append(draw(_SHAPES)[:80].rstrip())
        rows.append(row)
    headers = [
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
        "# of Calls",
    ] + (["Input Shapes"] if shapes else [])
    widths = [min(max([len(r[0]) for r in rows] + [4]) + 4, 55)] + [12] * 6
    if shapes:
        widths.append(min(max([len(r[-1]) for r in rows] + [12]) + 4, 80))
    fmt = "".join("{:>" + str(w) + "}  " for w in widths)
    rule = "".join("-" * w + "  " for w in widths)
    lines = [
        rule,
        fmt.format(*headers),
        rule,
        *(fmt.format(*r) for r in rows),
        rule,
        f"Self CPU time total: {draw(_TIME)}",
        "",
    ]
    return "\n".join(lines), rows


@settings(max_examples=150, deadline=None)
@given(_tables())
def test_generated_tables_parse(generated):
    text, rows = generated
    table = parse_table(text)  # never raises on a well-formed table
    assert len(table.rows) == len(rows)
    if rows:
        assert list(table.rows["name"]) == [r[0] for r in rows]
        assert list(table.rows["calls"]) == [int(r[6]) for r in rows]
        assert list(table.rows["self_cpu_ms"]) == pytest.approx([time_ms(r[2]) for r in rows])
    if rows and len(rows[0]) == 8:
        assert list(table.rows["input_shapes"]) == [r[7] for r in rows]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("-ab %:\n0123456789.m")), max_size=300))
def test_arbitrary_text_never_crashes(text):
    try:
        parse_table(text)
    except TableParseError:
        pass
    find_tables(text.splitlines())


def test_a_table_printed_again_and_again_is_split_once_per_distinct_line():
    """The same profile printed five times in a log: the grammar parses its head once, each
    distinct row line is split once (34 rows: ``grep -c '^ *aten::'
    sample_logs/profile_nchw_infer.table.txt``), and every table has every row."""
    from dnnlens.parsers import torch_table

    table = (SAMPLES / "profile_nchw_infer.table.txt").read_text()
    rows = len(parse_table(table).rows)
    torch_table._cells.cache_clear()
    torch_table._head.cache_clear()
    lines = ("onednn_verbose,v1,info,x\n" + table) * 5
    tables = find_tables(lines.splitlines(keepends=True), source="five.log")
    assert rows == 34 and [len(t.rows) for t in tables] == [rows] * 5
    assert [t.line for t in tables] == [2 + k * (len(table.splitlines()) + 1) for k in range(5)]
    assert torch_table._head.cache_info().misses == 1
    cells = torch_table._cells.cache_info()
    assert cells.misses == rows and cells.hits == 4 * rows


def test_a_table_given_twice_counts_once(tmp_path) -> None:
    """profile_combined_infer.log prints its key_averages table at its end; the same table
    saved to a file and given beside the log is the same table, linked once."""
    import json

    from typer.testing import CliRunner

    from dnnlens.cli import app

    log = Path(__file__).resolve().parent.parent / "sample_logs" / "profile_combined_infer.log"
    lines = log.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("-----"))
    table = tmp_path / "combined.table.txt"
    table.write_text("\n".join(lines[start:]) + "\n")
    runner = CliRunner()
    alone = json.loads(runner.invoke(app, ["analyze", str(log), "-f", "json", "-q"]).stdout)
    both = json.loads(
        runner.invoke(app, ["analyze", str(log), str(table), "-f", "json", "-q"]).stdout
    )
    assert both["framework_ops"] == alone["framework_ops"]
    assert len(both["framework_link"]["runs"]) == 1
    (note,) = both["framework_link"]["notes"]
    assert note.startswith(f"{table}:1: the same profiler table as {log}:") and "once" in note


def test_memory_columns_as_torch_2_prints_them():
    """sample_logs/framework_tables/sgd_bad.memory.table.txt (``scripts/make_traces.py
    --memory-tables``: ``profile_memory=True``, torch 2.13) prints memory as ``736.00 KB``,
    ``-288.02 KB`` and ``0 B``: line 4 ``aten::mm ... 736.00 KB 736.00 KB 60``, line 7
    ``ProfilerStep* ... 130.00 KB -288.02 KB 4``."""
    t = read_table_file(str(SAMPLES / "framework_tables" / "sgd_bad.memory.table.txt"))
    assert t.headers[6:8] == ["CPU Mem", "Self CPU Mem"]
    mm = _row(t, "aten::mm")
    assert (mm["cpu_mem_bytes"], mm["self_cpu_mem_bytes"], mm["calls"]) == (
        736 * 1024,
        736 * 1024,
        60,
    )
    step = _row(t, "ProfilerStep*")
    assert step["self_cpu_mem_bytes"] == pytest.approx(-288.02 * 1024)
    assert _row(t, "Optimizer.step#SGD.step")["cpu_mem_bytes"] == 0


def test_a_table_with_a_header_and_top_level_events_only():
    """sgd_bad.toplevel.table.txt (``header=...``, ``top_level_events_only=True``): three
    ``=`` / header lines and a sentence before the rule, one row (``ProfilerStep*``), the
    footer ``Self CPU time total: 22.330ms``; the other ops' self time is not in the rows."""
    t = read_table_file(str(SAMPLES / "framework_tables" / "sgd_bad.toplevel.table.txt"))
    assert t.line == 5 and list(t.rows["name"]) == ["ProfilerStep*"]
    assert t.totals_ms == {"self_cpu_time_total_ms": pytest.approx(22.330)}
