"""Streaming: bounded windows of events, exact totals; figures equal the bulk hand counts.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338 lines
(``wc -l``), 165 exec lines (``grep -c ',exec,'``) and their times add up to 356.084723 ms
(``awk -F, '/,exec,/ {s += $NF} END {printf "%.6f", s}'``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens.reading.stream as stream
from dnnlens.analysis.summary import summarize_stats
from dnnlens.cli import app
from dnnlens.reading import load, read

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = SAMPLES / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS, NCHW_MS = 338, 165, 356.084723


def _analyze_json(path: Path, *args: str) -> dict:
    result = CliRunner().invoke(app, ["analyze", str(path), "-f", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture()
def streaming(monkeypatch) -> None:
    """Any input streams (the threshold is lowered from 64 MiB to one byte)."""
    monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", 1)


def test_stdin_stream_equals_hand_count() -> None:
    result = CliRunner().invoke(
        app, ["analyze", "-", "--format", "json", "--no-live"], input=NCHW.read_text()
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert doc["summary"]["total_time_ms"] == pytest.approx(NCHW_MS, abs=1e-6)


def test_window_bounds_raw_events_not_totals(streaming, monkeypatch) -> None:
    from dnnlens.io import inputs

    monkeypatch.setattr(inputs, "_TEXT_CHUNK", 997)  # many small parts, cut anywhere
    monkeypatch.setattr(inputs, "BLOCK_BYTES", 997)
    log = read([str(NCHW)], window_events=50)
    assert len(log.events) == log.window.events_kept == 50
    summary = summarize_stats(log.record_stats, log.records, log.diagnostic_counts)
    assert summary.exec_count == NCHW_EXECS
    assert summary.total_time_ms == pytest.approx(NCHW_MS, abs=1e-6)
    # the window holds the last events, with their real line numbers
    assert log.events["line"].max() == NCHW_LINES - 1  # last line is `done: ...`
    assert log.window.dropped_last_line[str(NCHW)] == log.events["line"].min() - 1
    t = log.scans[0]
    assert t.parsed + t.foreign + t.malformed == t.lines == NCHW_LINES


def test_streamed_read_counts_like_the_bulk_read(streaming) -> None:
    """Every count of the scan is the same whether events are kept or folded."""
    bulk, streamed = load([str(NCHW)]), read([str(NCHW)], window_events=10)
    a, b = bulk.scans[0], streamed.scans[0]
    for name in ("lines", "parsed", "foreign", "malformed", "prefixed", "families"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.header == b.header
    assert streamed.record_stats["count"].sum() == len(bulk.events)
    assert streamed.diagnostic_counts == {}
    assert bulk.record_stats is None and bulk.window is None


def test_tee_passes_lines_through_unchanged_and_the_report_goes_apart() -> None:
    """With --tee standard output is the program's stream, byte for byte; the report goes to
    standard error (it was appended to standard output, so `> out` saved it in the log)."""
    text = NCHW.read_text()
    result = CliRunner().invoke(
        app, ["analyze", "-", "--tee", "--no-live", "--format", "json"], input=text
    )
    assert result.exit_code == 0
    assert result.stdout == text
    doc = json.loads(result.stderr[: result.stderr.rindex("}") + 1])
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def test_tee_with_output_writes_the_report_there(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    text = NCHW.read_text()
    result = CliRunner().invoke(
        app, ["analyze", "-", "--tee", "--no-live", "-f", "json", "-o", str(report)], input=text
    )
    assert result.exit_code == 0
    assert result.stdout == text
    assert json.loads(report.read_text())["summary"]["exec_count"] == NCHW_EXECS


def test_a_large_file_is_analysed_by_streaming(streaming, tmp_path: Path) -> None:
    packed = tmp_path / "run.log.gz"
    packed.write_bytes(gzip.compress(NCHW.read_bytes()))
    for path in (NCHW, packed):
        result = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert "stream" in doc  # the streaming path ran
        assert doc["inputs"][0]["lines"] == NCHW_LINES
        assert doc["inputs"][0]["gzip"] is (path == packed)
        assert doc["summary"]["exec_count"] == NCHW_EXECS
        assert doc["summary"]["total_time_ms"] == pytest.approx(NCHW_MS, abs=1e-6)
        assert {f["rule"] for f in doc["findings"]} >= {"layout-round-trip"}


def test_streaming_is_decided_by_the_decompressed_text(monkeypatch, tmp_path: Path) -> None:
    """A gzip far smaller than the threshold whose text is larger streams (a 39 MB gzip of
    5.4 GB of lines was read whole, by its size on disk, and ran out of memory)."""
    copies = 400
    packed = tmp_path / "many.log.gz"
    packed.write_bytes(gzip.compress(NCHW.read_bytes() * copies))
    text = NCHW.stat().st_size * copies
    monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", text // 4)
    assert packed.stat().st_size < text // 4  # on disk it is below the threshold
    doc = _analyze_json(packed, "--window", "1000")
    assert doc["stream"]["events_in_window"] == 1000
    assert doc["inputs"][0]["lines"] == NCHW_LINES * copies
    assert doc["summary"]["exec_count"] == NCHW_EXECS * copies
    assert doc["summary"]["total_time_ms"] == pytest.approx(NCHW_MS * copies, rel=1e-9)


def test_many_inputs_stream_together(monkeypatch, tmp_path: Path) -> None:
    """``analyze '**/*.log'`` over many files: the threshold counts the text of all of them
    (each file below it was kept whole, and all of them together ran out of memory)."""
    for i in range(20):
        (tmp_path / f"{i:02}.log").write_bytes(NCHW.read_bytes())
    monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", 4 * NCHW.stat().st_size)
    doc = _analyze_json(tmp_path / "*.log", "--window", "300")
    assert len(doc["inputs"]) == 20
    assert doc["stream"]["events_in_window"] == 300
    assert doc["summary"]["exec_count"] == 20 * NCHW_EXECS
    assert doc["summary"]["total_time_ms"] == pytest.approx(20 * NCHW_MS, abs=1e-5)
    log = read([str(tmp_path / "*.log")], window_events=300)
    assert log.window is not None and len(log.events) == 300
    assert log.window.events_total == 20 * len(load([str(NCHW)]).events)
    # the window is the last events read: the last file's, then the one before it
    inputs = set(log.events["input"].astype(str))
    assert inputs <= {str(tmp_path / "18.log"), str(tmp_path / "19.log")}


def _log_ending_in_a_profile(tmp_path: Path) -> Path:
    """Many plain iterations, then a profiled run with its table (real logs, joined)."""
    path = tmp_path / "long_then_profiled.log"
    path.write_bytes(
        (SAMPLES / "convnet_nchw_infer.log").read_bytes() * 20
        + (SAMPLES / "profile_combined_infer.log").read_bytes()
    )
    return path


def test_streamed_file_links_its_profiler_table_like_a_loaded_one(
    streaming, tmp_path: Path
) -> None:
    path = _log_ending_in_a_profile(tmp_path)
    streamed = _analyze_json(path, "--window", "1000")
    assert streamed["stream"]["events_total"] > 1000  # events were dropped
    stream.STREAM_FILE_MIN_BYTES = 64 << 20  # (restored by the fixture) read whole
    loaded = _analyze_json(path, "--window", "0")
    # hand count (tests/test_linking.py): the profiled region holds 45 primitives
    assert loaded["framework_link"]["runs"][0]["primitives_linked"] == 45
    for key in ("framework_ops", "framework_ops_without_onednn"):
        assert streamed[key] == loaded[key], key
    assert streamed["framework_link"]["runs"] == loaded["framework_link"]["runs"]


def test_streamed_file_says_when_its_table_lost_its_primitives(streaming, tmp_path: Path) -> None:
    path = _log_ending_in_a_profile(tmp_path)
    log = read([str(path)], window_events=10)
    assert log.framework is None  # its one table is not linkable any more
    (note,) = log.window.notes
    assert "profiler table not linked" in note and "--window" in note
    streamed = _analyze_json(path, "--window", "10")
    assert "framework_ops" not in streamed
    assert streamed["framework_link"]["notes"] == [note]


def test_inputs_read_as_one_stream_are_one_run_and_say_so(streaming) -> None:
    """Two sample logs read as one stream: one run, a note that says so, and the window's
    first event named by input and line. The window of the last 50 events starts in the
    second log: its 88 exec lines (``grep -c ",exec,"``) are more than 50, so the first
    event of the window is one of its lines."""
    other = NCHW.with_name("convnet_cl_infer.log")
    result = CliRunner().invoke(
        app, ["analyze", str(NCHW), str(other), "-f", "json", "--window", "50"]
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert "runs" not in doc
    (note,) = doc["notes"]
    assert note.startswith("2 inputs were read together as one stream")
    assert doc["window"]["first_input"] == str(other)
    text = (
        CliRunner()
        .invoke(app, ["analyze", str(NCHW), str(other), "--window", "50", "--width", "200"])
        .stdout
    )
    assert f"from convnet_cl_infer.log:{doc['window']['first_line']} on" in text
    assert "2 inputs were read together as one stream" in text
