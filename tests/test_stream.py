"""Streaming: stdin, bounded windows, `dnnlens run`; figures equal the bulk hand counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.reading.stream import StreamAnalyzer

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = SAMPLES / "convnet_nchw_infer.log"
# hand counts (tests/test_sample_logs.py): 338 lines, 165 exec lines, 356.084723 ms
NCHW_LINES, NCHW_EXECS, NCHW_MS = 338, 165, 356.084723


def test_stdin_stream_equals_hand_count() -> None:
    result = CliRunner().invoke(
        app, ["analyze", "-", "--format", "json", "--no-live"], input=NCHW.read_text()
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert doc["summary"]["total_time_ms"] == pytest.approx(NCHW_MS, abs=1e-6)


def test_window_bounds_raw_events_not_totals() -> None:
    text = NCHW.read_text().splitlines(keepends=True)
    analyzer = StreamAnalyzer("x", window_events=50)
    for i in range(0, len(text), 7):  # odd chunk size on purpose
        analyzer.feed(text[i : i + 7])
    analysis = analyzer.analysis()
    assert len(analysis.log.events) <= 50
    assert analysis.summary.exec_count == NCHW_EXECS
    assert analysis.summary.total_time_ms == pytest.approx(NCHW_MS, abs=1e-6)
    # the window holds the last events, with their real line numbers
    assert analysis.log.events["line"].max() == NCHW_LINES - 1  # last line is `done: ...`
    t = analysis.log.scans[0]
    assert t.parsed + t.foreign + t.malformed == t.lines == NCHW_LINES


def test_tee_passes_lines_through_unchanged() -> None:
    text = NCHW.read_text()
    result = CliRunner().invoke(
        app, ["analyze", "-", "--tee", "--no-live", "--format", "json"], input=text
    )
    assert result.exit_code == 0
    assert result.stdout.startswith(text)
    doc = json.loads(result.stdout[len(text) :])
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_keeps_log_shows_output_and_passes_exit_code(tmp_path: Path) -> None:
    log = tmp_path / "kept.log"
    program = f"import sys; sys.stdout.write(open({str(NCHW)!r}).read()); sys.exit(3)"
    proc = _run(
        "--log", str(log), "--no-live", "--format", "json", "--", sys.executable, "-c", program
    )
    assert proc.returncode == 3
    assert log.read_text() == NCHW.read_text()
    assert proc.stdout.startswith(NCHW.read_text())
    doc = json.loads(proc.stdout[len(NCHW.read_text()) :])
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert doc["run"]["exit_code"] == 3


def test_run_sets_verbose_variables(tmp_path: Path) -> None:
    program = "import os; print(os.environ['ONEDNN_VERBOSE'], os.environ['DNNL_VERBOSE_TIMESTAMP'])"
    proc = _run(
        "--log",
        str(tmp_path / "k.log"),
        "--no-live",
        "--level",
        "2",
        "--",
        sys.executable,
        "-c",
        program,
    )
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == "2 1"


def test_run_of_a_missing_program_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run("--log", str(tmp_path / "k.log"), "--", "no-such-program-dnnlens")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "cannot run 'no-such-program-dnnlens'" in proc.stderr


def test_a_large_file_is_analysed_by_streaming(monkeypatch, tmp_path: Path) -> None:
    import gzip

    import dnnlens.reading.stream as stream

    monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", 1)
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


def test_run_error_with_markup_in_the_command_is_printed_as_is(tmp_path: Path) -> None:
    # before errors went through one module, this line went through rich markup and crashed
    proc = _run("--log", str(tmp_path / "k.log"), "--", "[/x]no-such")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "dnnlens: error: cannot run '[/x]no-such': No such file or directory"
    )


def _log_ending_in_a_profile(tmp_path: Path) -> Path:
    """Many plain iterations, then a profiled run with its table (real logs, joined)."""
    root = Path(__file__).resolve().parent.parent / "sample_logs"
    path = tmp_path / "long_then_profiled.log"
    path.write_bytes(
        (root / "convnet_nchw_infer.log").read_bytes() * 20
        + (root / "profile_combined_infer.log").read_bytes()
    )
    return path


def test_streamed_file_links_its_profiler_table_like_a_loaded_one(tmp_path: Path) -> None:
    from dnnlens.analysis.analysis import Analysis, AnalysisOptions
    from dnnlens.reading import load
    from dnnlens.reading.stream import analyze_file_streaming

    path = _log_ending_in_a_profile(tmp_path)
    loaded = Analysis(load([str(path)]), AnalysisOptions(window_events=None)).framework_links
    streamed_analysis = analyze_file_streaming(str(path), window_events=1000)
    assert streamed_analysis.log.window.events_total > 1000  # events were dropped
    streamed = streamed_analysis.framework_links
    # hand count (tests/test_linking.py): the profiled region holds 45 primitives
    assert loaded["framework_link"]["runs"][0]["primitives_linked"] == 45
    for key in ("framework_ops", "framework_ops_without_onednn"):
        assert streamed[key] == loaded[key], key
    assert streamed["framework_link"]["runs"] == loaded["framework_link"]["runs"]


def test_streamed_file_says_when_its_table_lost_its_primitives(tmp_path: Path) -> None:
    from dnnlens.reading.stream import analyze_file_streaming

    path = _log_ending_in_a_profile(tmp_path)
    streamed = analyze_file_streaming(str(path), window_events=10).framework_links
    assert "framework_ops" not in streamed
    (note,) = streamed["framework_link"]["notes"]
    assert "profiler table not linked" in note and "--window" in note
