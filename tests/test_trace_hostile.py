"""Hostile PyTorch profiler traces end as an input error or a note, never as an internal
error: each is one line, and the other inputs are still analysed (docs/input-policy.md,
"Profiler traces").

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338
lines and 165 exec lines.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import EXIT_OK, EXIT_USAGE, app
from dnnlens.parsers.torch_trace import parse_trace_json, read_trace

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165


def _op(name: str = "aten::conv2d", **fields: object) -> dict:
    return {"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": 1, "dur": 5, **fields}


def _trace(*events: dict) -> str:
    return json.dumps({"traceEvents": list(events)})


def run(*args: str) -> tuple[int, str, list[str]]:
    """Exit code, standard output and the lines of standard error of ``dnnlens analyze``."""
    result = CliRunner().invoke(app, ["analyze", *args])
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr, result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr.splitlines()


def _neg_dur() -> str:
    op = _op()
    op["dur"] = -5
    return _trace(op)


def _no_dur() -> str:
    op = _op()
    del op["dur"]
    return _trace(op)


def _huge_ts() -> str:
    return _trace(
        _op("ProfilerStep#1", ts=1.7e308),
        _op("ProfilerStep#2", ts=1.7e308),
        _op(ts=1.7e308, dur=1),
    )


BROKEN = {
    "negative dur": (_neg_dur(), "negative dur"),
    "no dur": (_no_dur(), "without a dur"),
    "truncated": ('{"traceEvents": [{"ph": "X", "name": "aten::conv', "ends early"),
    "huge ts": (_huge_ts(), "past 2**53"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_trace_with_no_usable_op_is_an_input_error(tmp_path: Path, case: str) -> None:
    text, reason = BROKEN[case]
    trace = tmp_path / "t.json"
    trace.write_text(text)
    code, _, err = run(str(trace))
    assert code == EXIT_USAGE, err
    errors = [line for line in err if line.startswith("dnnlens: error:")]
    assert len(errors) == 1 and reason in errors[0], err


@pytest.mark.parametrize("case", list(BROKEN))
def test_the_log_beside_a_broken_trace_is_still_analysed(tmp_path: Path, case: str) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(BROKEN[case][0])
    code, out, err = run("-f", "json", str(NCHW), str(trace))
    assert code == EXIT_USAGE, err
    doc = json.loads(out)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert any(BROKEN[case][1] in e for e in doc["input_errors"]), doc["input_errors"]


def test_skipped_ops_are_named_with_their_line() -> None:
    good = _op()
    bad = _op(ts=3)
    bad["dur"] = -1
    trace = parse_trace_json(_trace(good, bad))
    assert len(trace.ops) == 1
    assert trace.skipped["an X event with a negative dur"] == 1
    assert trace.problems == ["<trace>:1: 1 x an X event with a negative dur (skipped)"]


def test_a_lone_surrogate_in_a_name_is_replaced_and_said(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "\\ud800x", "ts": 1, "dur": 5}]}')
    parsed = read_trace(str(trace))
    assert list(parsed.ops["name"]) == ["\ufffdx"]
    assert any("lone surrogate" in p for p in parsed.problems), parsed.problems
    code, out, err = run(str(trace))
    assert code == EXIT_OK, err
    assert "lone surrogate" in " ".join((out + " ".join(err)).split())
    code, out, _ = run("-f", "json", str(trace))
    assert code == EXIT_OK and json.loads(out)
    html = tmp_path / "r.html"
    code, _, err = run("-f", "html", "-o", str(html), str(trace))
    assert code == EXIT_OK, err
    assert "\ufffdx" in html.read_text(encoding="utf-8")


def test_a_lone_surrogate_in_metadata_and_a_thread_name_is_replaced() -> None:
    meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "\ud800"}}
    text = json.dumps({"traceEvents": [meta, _op()], "deviceProperties": ["\udfff"]})
    parsed = parse_trace_json(text)
    assert parsed.thread_names == {("1", "1"): "\ufffd"}
    assert parsed.metadata["deviceProperties"] == ["\ufffd"]


@pytest.mark.parametrize("jobs", [[], ["-j", "2"]], ids=["auto", "two processes"])
def test_a_sparse_trace_is_read_as_a_trace_and_quickly(tmp_path: Path, jobs: list[str]) -> None:
    """``truncate -s 2G`` after a valid start: NUL bytes up to 2 GiB. The reader stops at
    the first of them (no refill of the buffer can make a value of a NUL), and the file is
    a trace, not a large log to be read in several processes, even when two are asked for."""
    trace = tmp_path / "sparse.json"
    trace.write_text('{"traceEvents": [')
    os.truncate(trace, 2 << 30)
    code, _, err = run(*jobs, str(trace))
    assert code == EXIT_USAGE, err
    assert not any("processes" in line for line in err), err
    errors = [line for line in err if line.startswith("dnnlens: error:")]
    assert len(errors) == 1 and "invalid JSON at character 17" in errors[0], err


def test_a_whole_trace_padded_to_2_gib_says_the_padding_was_not_read(tmp_path: Path) -> None:
    trace = tmp_path / "padded.json"
    trace.write_text(_trace(_op()))
    os.truncate(trace, 2 << 30)
    code, out, err = run(str(trace))
    assert code == EXIT_OK, err
    assert "the trace goes on after its end" in " ".join((out + " ".join(err)).split())


def test_a_value_cut_at_a_chunk_end_is_still_read_whole() -> None:
    """What makes the reader stop at a NUL must not stop it at a value cut by its buffer:
    a string and a literal across the chunk boundary still decode."""
    from dnnlens.parsers import torch_trace

    filler = {"ph": "i", "name": "x" * (torch_trace.CHUNK_CHARS - 40)}
    text = _trace(filler, _op(args={"flag": True, "s": "y" * 100}), _op(ts=9))
    parsed = parse_trace_json(text)
    assert parsed.error is None and len(parsed.ops) == 2


def test_a_trace_whose_ops_all_take_no_time_is_analysed(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(_trace(_op(dur=0)))
    code, _, err = run(str(trace))
    assert code == EXIT_OK, err


def test_a_trace_of_metadata_only_is_an_input_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    meta = {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}
    trace.write_text(_trace(meta))
    code, _, err = run(str(trace))
    assert code == EXIT_USAGE, err
    assert any("no complete (X) event among its 1 events" in line for line in err), err


UTF16 = {
    "utf-16 with its byte order mark": "utf-16",
    "utf-16-le without one": "utf-16-le",
    "utf-16-be without one": "utf-16-be",
}


@pytest.mark.parametrize("case", list(UTF16))
def test_a_utf16_trace_is_decoded_before_it_is_recognised(tmp_path: Path, case: str) -> None:
    """PowerShell's ``>`` writes UTF-16: the trace is still a trace (RFC 8259 text starts
    with an ASCII character, so the pattern of zero bytes tells the encoding), read like
    its UTF-8 text, with a note."""
    trace = tmp_path / "t.json"
    trace.write_bytes(_trace(_op(), _op(ts=9, dur=3)).encode(UTF16[case]))
    parsed = read_trace(str(trace))
    assert parsed.error is None and len(parsed.ops) == 2
    assert list(parsed.ops["name"]) == ["aten::conv2d", "aten::conv2d"]
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(trace.read_bytes(), mtime=0))
    assert len(read_trace(str(packed)).ops) == 2
    code, out, err = run("-f", "json", str(trace))
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["framework"] is not None and not doc["input_errors"], doc["input_errors"]
    assert any("read as UTF-16" in note for note in doc["framework"]["notes"]), doc["framework"]


@pytest.mark.parametrize("case", list(UTF16))
def test_a_utf16_trace_on_standard_input_is_a_trace(case: str) -> None:
    text = _trace(_op(), _op(ts=9, dur=3)).encode(UTF16[case])
    result = CliRunner().invoke(app, ["analyze", "-f", "json", "-"], input=text)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exit_code == EXIT_OK, result.stderr
    assert json.loads(result.stdout)["framework"] is not None


def test_a_trace_of_another_run_beside_a_log_is_analysed_with_a_note(tmp_path: Path) -> None:
    """A trace of another stem and no timestamps is a run of its own beside the log (the log
    is judged on its own basis, the trace's run says why it stands alone); joined with
    ``--combine``, its step (two ops, 0.005 ms) cannot hold the log's typical iteration
    (2.09 ms): the inputs' disagreement, not a bug of a rule whose impact is a part of its own
    iteration: exit 0, the findings kept, one note."""
    trace = tmp_path / "t.json"
    trace.write_text(_trace(_op(), _op(ts=9, dur=3)))
    code, out, err = run("-f", "json", str(NCHW), str(trace))
    assert code == EXIT_OK, err
    log_run, trace_run = json.loads(out)["runs"]
    assert log_run["basis"]["unit"] == "iteration" and "run_note" not in log_run
    assert trace_run["run_note"].startswith("t.json is a profiler trace paired with no log")
    code, out, err = run("-f", "json", str(NCHW), str(trace), "--combine")
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    # the NCHW net's reorders: the round trips hold 96% of them, one finding for both
    trips = next(f for f in doc["findings"] if f["rule"] == "layout-round-trip")
    assert trips["data"]["includes"]["rule"] == "reorder-overhead"
    # a part of its own iteration; of the (foreign) step it is more, and the note says why
    assert all(
        f.get("share_of_onednn_iteration") is None or f["share_of_onednn_iteration"] <= 1
        for f in doc["findings"]
    )
    assert all(f["share_of_iteration"] == f.get("share_of_basis") for f in doc["findings"])
    notes = [n for n in doc["notes"] if "not of one run" in n]
    assert len(notes) == 1 and "longer than" in notes[0], doc["notes"]
