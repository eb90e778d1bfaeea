"""Chrome-trace parser: real torch 2.13 traces, gzip, streaming, truncation."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from dnnlens.parsers import torch_trace
from dnnlens.parsers.torch_trace import (
    FrameworkReader,
    parse_trace_json,
    parse_trace_stream,
    read_trace,
)
from dnnlens.reading import load

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = SAMPLES / "profile_nchw_infer.trace.json"


@pytest.fixture(scope="module")
def nchw():
    return read_trace(str(NCHW))


def test_real_trace(nchw):
    assert nchw.error is None
    ops = nchw.ops
    assert len(ops) == 525  # every cpu_op; the profiler's own span is the window
    assert set(ops["cat"].astype(str)) == {"cpu_op"}
    assert nchw.skipped == {"M": 8, "i": 2}
    assert nchw.base_time_ms == 1790857026000.0  # baseTimeNanoseconds / 1e6
    assert nchw.window_us == pytest.approx((5153095192223.512, 5153095217330.992))
    assert nchw.metadata["record_shapes"] == 1
    first = ops.iloc[0]
    assert (first["name"], first["external_id"], first["parent"], first["depth"]) == (
        "aten::conv2d",
        1,
        -1,
        0,
    )
    assert first["input_dims"] == "[[4, 3, 64, 64], [16, 3, 3, 3], [], [], [], [], []]"
    assert first["ts_us"] == pytest.approx(5153095192747.930)
    assert first["dur_us"] == pytest.approx(1585.974)


def test_nesting_and_self_time_agree_with_the_table(nchw):
    ops = nchw.ops
    conv = ops[ops["name"] == "aten::mkldnn_convolution"]
    assert len(conv) == 20
    # the key_averages table of the same run says: CPU total 11.376ms, self CPU 11.029ms
    assert conv["dur_us"].sum() / 1e3 == pytest.approx(11.376, abs=0.001)
    assert conv["self_us"].sum() / 1e3 == pytest.approx(11.029, abs=0.001)
    parents = ops.loc[conv["parent"], "name"].astype(str)
    assert set(parents) == {"aten::_convolution"}
    assert (conv["depth"] == 3).all()
    assert (ops["self_us"] <= ops["dur_us"] + 1e-9).all()


def test_epoch_axis_matches_onednn_timestamps(nchw):
    """The first profiled exec line (epoch ms) lies inside the first profiled conv op."""
    conv = nchw.ops[nchw.ops["name"] == "aten::mkldnn_convolution"].iloc[0]
    start, end = nchw.epoch_ms(conv["ts_us"]), nchw.epoch_ms(conv["end_us"])
    log = (SAMPLES / "profile_nchw_infer.log").read_text().splitlines()
    after = log[log.index(next(x for x in log if "profiler_start" in x)) + 1 :]
    first_exec = next(x for x in after if ",exec," in x)
    stamp = float(first_exec.split(",")[2])
    assert start < stamp < end


def test_training_trace_has_annotations_and_flows():
    t = read_trace(str(SAMPLES / "profile_bf16_train.trace.json"))
    assert t.error is None
    cats = t.ops["cat"].astype(str).value_counts()
    assert cats["cpu_op"] == 1620 and cats["user_annotation"] == 6
    assert t.skipped["s"] == 81 and t.skipped["f"] == 81
    assert (t.ops["sequence"] >= 0).sum() == 363


def test_gzip_by_content(tmp_path, nchw):
    path = tmp_path / "trace.bin"  # no telling suffix: recognised by the gzip magic
    path.write_bytes(gzip.compress(NCHW.read_bytes()))
    t = read_trace(str(path))
    assert t.error is None
    assert t.ops.equals(nchw.ops)


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_small_chunks_give_the_same_table(monkeypatch, nchw, chunk):
    """Values split across the sliding buffer's edges (numbers too) decode the same."""
    monkeypatch.setattr(torch_trace, "CHUNK_CHARS", chunk)
    t = read_trace(str(NCHW))
    assert t.error is None and t.base_time_ms == nchw.base_time_ms
    assert t.ops.equals(nchw.ops)


def test_streaming_keeps_a_bounded_buffer(monkeypatch, tmp_path):
    event = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::add",
        "pid": 1,
        "tid": 1,
        "dur": 1.0,
        "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]]},
    }
    events = ",".join(json.dumps({**event, "ts": 10.0 * i}) for i in range(20000))
    path = tmp_path / "big.json"
    path.write_text('{"baseTimeNanoseconds": 1000000, "traceEvents": [' + events + "]}")
    monkeypatch.setattr(torch_trace, "CHUNK_CHARS", 4096)
    longest = 0
    fill = torch_trace._Reader._fill

    def spy(self, size=0):
        nonlocal longest
        done = fill(self, size)
        longest = max(longest, len(self.buf))
        return done

    monkeypatch.setattr(torch_trace._Reader, "_fill", spy)
    t = read_trace(str(path))
    assert len(t.ops) == 20000 and t.error is None
    assert path.stat().st_size > 100 * 4096
    assert longest < 3 * 4096  # the file never sits in memory whole


def test_truncated_trace_keeps_what_is_complete():
    text = NCHW.read_text()
    previous = -1
    for cut in (
        0,
        10,
        200,
        5000,
        len(text) // 3,
        len(text) // 2,
        len(text) - 300,
        len(text) - 5,
        len(text) - 1,
    ):
        t = parse_trace_json(text[:cut], "cut.json")
        assert t.error is not None and t.error.startswith("cut.json: ")
        assert "ends early" in t.error or "not a chrome trace" in t.error
        assert len(t.ops) >= previous
        previous = len(t.ops)
    assert previous == 525


def test_truncated_gzip_trace():
    data = gzip.compress(NCHW.read_bytes())
    t = parse_trace_stream(io.BytesIO(data[: len(data) // 2]), "half.json.gz")
    assert 0 < len(t.ops) < 525
    assert "truncated gzip stream" in t.error


def test_other_shapes_of_json():
    array = parse_trace_json('[{"ph": "X", "name": "a", "ts": 1, "dur": 2}]')
    assert list(array.ops["name"]) == ["a"] and array.error is None
    assert array.base_time_ms is None  # small timestamps and no base: no epoch axis
    comma = parse_trace_json('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2},]}')
    assert len(comma.ops) == 1 and comma.error is None
    epoch = parse_trace_json('[{"ph": "X", "name": "a", "ts": 1.7e15, "dur": 2}]')
    assert epoch.base_time_ms == 0.0  # old traces: ts are epoch microseconds
    bad = parse_trace_json('{"traceEvents": [{"ph": "X"} {"ph": "X"}]}')
    assert "invalid JSON" in bad.error
    assert "not a chrome trace" in parse_trace_json("hello").error


def test_load_routes_traces(tmp_path):
    renamed = tmp_path / "trace.log"  # a trace whatever its name: its content starts with {
    renamed.write_bytes(NCHW.read_bytes())
    log = load(
        [
            str(SAMPLES / "profile_nchw_infer.log"),
            str(renamed),
            str(SAMPLES / "profile_nchw_infer.table.txt"),
        ]
    )
    assert [s.path for s in log.scans] == [
        str(SAMPLES / "profile_nchw_infer.log"),
        str(SAMPLES / "profile_nchw_infer.table.txt"),
    ]
    assert log.framework is not None
    assert [t.path for t in log.framework.traces] == [str(renamed)]
    assert len(log.framework.tables) == 1
    assert log.framework.markers == {
        str(SAMPLES / "profile_nchw_infer.log"): [(23, "start"), (99, "stop")]
    }
    assert log.input_errors == []


def test_plain_logs_have_no_framework_data():
    assert load([str(SAMPLES / "convnet_nchw_infer.log")]).framework is None
    reader = FrameworkReader()
    assert not reader.take_trace(str(SAMPLES / "convnet_nchw_infer.log"))
    assert reader.result() is None


def test_json_that_is_no_trace_is_read_as_lines(tmp_path):
    """A JSON file without trace events (sample_logs/MANIFEST.json is one) is not a trace:
    its lines are accounted for like any other input's, and the note says it looks like JSON."""
    from dnnlens.io.problems import input_problems
    from dnnlens.reading import load

    path = tmp_path / "manifest.json"
    path.write_text('{\n  "files": [\n    {"file": "a.log"}\n  ]\n}\n')
    log = load([str(path)])
    assert log.framework is None or not log.framework.traces
    (scan,) = log.scans
    assert (scan.lines, scan.foreign) == (5, 5)
    assert "looks like JSON" in input_problems(log).errors[0]


# --------------------------------------------------------------------------------------------
# hostile and unusual content: never an exception, the bad part skipped and named

GOOD = (
    '{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}'
)
DEEP_ARRAYS = "[" * 100_000 + "]" * 100_000
DEEP_OBJECTS = '{"a":' * 100_000 + "1" + "}" * 100_000
LONG_TS = '{"ph": "X", "name": "a", "ts": ' + "7" * 5000 + ', "dur": 1}'


@pytest.mark.parametrize(
    "bad, reason",
    [
        (DEEP_ARRAYS, "nested deeper"),
        (DEEP_OBJECTS, "nested deeper"),
        (LONG_TS, "number too long"),
        ('{"ph": "X", "name": "a", "ts": 1e999, "dur": 1}', "without a finite ts"),
        ('{"ph": "X", "name": ["a"], "ts": 1, "dur": 1}', "fields of the wrong type"),
        ('{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"Input Dims": {}}}', None),
        ('{"ph": "X", "name": "a", "ts": "soon", "dur": 1}', "without a finite ts"),
        ("17", "not a JSON object"),
    ],
)
def test_a_hostile_event_is_skipped_and_named(bad, reason):
    text = '{"traceEvents": [\n' + GOOD + ",\n" + bad + ",\n" + GOOD + "\n]}"
    t = parse_trace_json(text, "h.json")
    assert t.error is None
    if reason is None:  # odd but usable: the dims become text
        assert list(t.ops["input_dims"]) == ["", "{}", ""]
        return
    assert list(t.ops["name"]) == ["aten::add", "aten::add"]
    assert list(t.ops["line"]) == [2, 4]
    (problem,) = t.problems
    assert problem.startswith("h.json:3: 1 x ") and reason in problem


def test_a_trace_that_is_all_hostile_is_an_error_not_an_exception(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(DEEP_ARRAYS)
    t = read_trace(str(path))
    assert len(t.ops) == 0
    assert t.error.startswith(f"{path}: no usable event: 1 x a value nested deeper")
    meta = parse_trace_json(
        '{"deviceProperties": ' + DEEP_ARRAYS + ', "traceEvents": [' + GOOD + "]}"
    )
    assert len(meta.ops) == 1 and meta.error is None
    assert "metadata key 'deviceProperties'" in meta.problems[0]
    cut = parse_trace_json('{"traceEvents": [' + GOOD + ", " + DEEP_ARRAYS[:50_000])
    assert len(cut.ops) == 1 and "ends early" in cut.error


def test_a_hostile_trace_beside_a_good_log_leaves_the_log_reported(tmp_path):
    """The good log is read and analysed; the trace's problem is said, with its line."""
    bad = tmp_path / "hostile.json"
    bad.write_text('{"traceEvents": [\n' + DEEP_OBJECTS + ",\n" + LONG_TS + "\n]}")
    log = load([str(SAMPLES / "convnet_nchw_infer.log"), str(bad)])
    assert [s.path for s in log.scans] == [str(SAMPLES / "convnet_nchw_infer.log")]
    assert len(log.events) > 0
    assert log.framework is None  # a trace without a usable op is only its error
    (error,) = [e for e in log.input_errors if e.startswith(f"{bad}: no usable event")]
    assert "1 x a value nested deeper than the JSON decoder allows (line 2)" in error
    assert "1 x a number too long to convert (line 3)" in error


def test_a_trace_with_a_byte_order_mark(tmp_path, nchw):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + NCHW.read_bytes())
    t = read_trace(str(path))
    assert t.error is None and t.ops.equals(nchw.ops)
    gz = tmp_path / "bom.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert load([str(gz)]).framework.traces[0].ops.equals(nchw.ops)


def test_a_verbose_log_named_json_is_read_as_lines(tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes((SAMPLES / "convnet_nchw_infer.log").read_bytes())
    log = load([str(path)])
    assert log.framework is None
    (scan,) = log.scans
    assert scan.parsed > 0 and len(log.events) > 0
    ranked = tmp_path / "ranked.json"  # '[rank0]: ...' opens with a bracket, not JSON
    ranked.write_text("[rank0]: " + GOOD + "\n")
    assert load([str(ranked)]).framework is None


def test_lines_of_the_events_are_the_lines_of_the_file(nchw):
    """Each op's ``line`` is where its ``{`` stands in the file (kineto writes one key per
    line), so evidence points into the trace."""
    lines = NCHW.read_text().splitlines()
    for row in nchw.ops.iloc[[0, 100, 524]].itertuples():
        assert lines[row.line - 1].strip() == "{"
        assert f'"name": "{row.name}"' in lines[row.line + 2]


@pytest.mark.parametrize("chunk", [7, 1000])
def test_lines_survive_small_chunks(monkeypatch, nchw, chunk):
    monkeypatch.setattr(torch_trace, "CHUNK_CHARS", chunk)
    assert read_trace(str(NCHW)).ops["line"].equals(nchw.ops["line"])
