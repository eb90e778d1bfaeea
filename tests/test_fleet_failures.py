"""Runs that fail are kept in the dataset's ``failures`` table: a copy of a failed log in
the same build fails as it did (never "skipped" as if it were in the dataset), and a
build again with nothing new skips the known failures and exits 0.

The failing log is ``notes.log``, two lines of program output and no oneDNN line; the
good one is ``dispatch_only_infer.log`` (6,131 bytes).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from dnnlens.fleet.build import BuildOptions, RunReport, build_dataset, plan
from dnnlens.fleet.dataset import Dataset, Settings
from dnnlens.fleet.engine import SerialEngine
from dnnlens.fleet.progress import BuildProgress
from test_fleet_logs import SAMPLE_LOGS, build, invoke

pytest.importorskip("duckdb")

GOOD = SAMPLE_LOGS / "dispatch_only_infer.log"


def logs(where: Path) -> list[str]:
    where.mkdir()
    (where / "notes.log").write_text("epoch 1\nloss 0.5\n")
    shutil.copy(where / "notes.log", where / "notes-copy.log")
    shutil.copy(GOOD, where / "good.log")
    shutil.copy(GOOD, where / "good-copy.log")
    return [str(where / n) for n in ("notes.log", "notes-copy.log", "good.log", "good-copy.log")]


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": error: " in line]


def test_a_copy_of_a_failed_log_fails_too_and_a_copy_of_a_good_one_is_skipped(tmp_path) -> None:
    paths = logs(tmp_path / "logs")
    out = tmp_path / "ds"
    result = build(*paths, "-o", str(out))
    assert result.exit_code == 2, result.stderr
    failed = errors(result.stderr)
    assert len(failed) == 2
    assert failed[0].startswith(f"dnnlens: error: run notes: {paths[0]}: no oneDNN verbose line")
    assert paths[1] in failed[1] and "no oneDNN verbose line" in failed[1]
    assert "1 run(s) written, 1 skipped (already in the dataset), 2 failed" in result.stderr
    assert Dataset.open(out).run_names() == ["good"]


def test_known_failures_are_skipped_by_a_build_with_nothing_new(tmp_path) -> None:
    paths = logs(tmp_path / "logs")
    out = tmp_path / "ds"
    assert build(*paths, "-o", str(out)).exit_code == 2
    again = build(*paths, "-o", str(out))
    assert again.exit_code == 0, again.stderr
    assert errors(again.stderr) == []
    notes = [line for line in again.stderr.splitlines() if "known failure" in line]
    assert notes == [
        "dnnlens: note: 2 known failure(s) skipped: their content failed in an earlier build "
        "(SELECT * FROM failures)"
    ]
    assert "0 run(s) written, 2 skipped (already in the dataset), 0 failed" in again.stderr
    sql = "SELECT path, exit_class, content_hash IS NOT NULL AS hashed FROM failures ORDER BY 1"
    got = invoke("fleet", "query", str(out), sql, "-f", "json")
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout) == [
        {"path": paths[1], "exit_class": "input", "hashed": True},
        {"path": paths[0], "exit_class": "input", "hashed": True},
    ]
    assert len(Dataset.open(out).failure_files()) == 1  # the second build recorded none


def test_a_failure_that_is_not_the_content_is_tried_again(tmp_path) -> None:
    """A file that cannot be read has no content hash: it is reported at every build."""
    paths = logs(tmp_path / "logs")
    out = tmp_path / "ds"
    unreadable = tmp_path / "logs" / "gone.log"
    unreadable.symlink_to(tmp_path / "nowhere.log")
    assert build(*paths, str(unreadable), "-o", str(out)).exit_code == 2
    again = build(*paths, str(unreadable), "-o", str(out))
    assert again.exit_code == 2
    assert [e.split(": ")[2] for e in errors(again.stderr)] == [f"run {unreadable}"]
    assert "cannot read" in errors(again.stderr)[0]
    rows = Dataset.open(out).failures().to_pylist()
    assert [r["content_hash"] for r in rows if r["path"] == str(unreadable)] == [None, None]


class HashesFirst(SerialEngine):
    """Every run hashed before any is analysed (as on a cluster with many workers)."""

    def submit(self, key, fn, *args, parts=None) -> None:  # noqa: ANN001
        self._queue.append((key, (fn, args), parts))


def test_copies_hashed_while_the_first_is_analysed_take_its_outcome(tmp_path) -> None:
    paths = logs(tmp_path / "logs")
    options = BuildOptions(Settings(window_events=None))
    specs, _ = plan(paths, options)
    result = build_dataset(specs, tmp_path / "ds", options, HashesFirst())
    got = {Path(r.files[0]).name: r for r in result.runs}
    assert {name: (r.status, r.failure) for name, r in got.items()} == {
        "notes.log": ("failed", "input"),
        "notes-copy.log": ("failed", "input"),
        "good.log": ("written", ""),
        "good-copy.log": ("skipped", ""),
    }
    first, copy = sorted(("notes.log", "notes-copy.log"), key=lambda n: got[n].message)
    assert got[copy].message.startswith(f"same content as {got[first].files[0]}: ")
    assert got["good-copy.log"].message == "same content as run good"
    assert len(Dataset.open(tmp_path / "ds").failures()) == 2


def test_a_truncated_gzip_keeps_its_readable_part_as_analyze_does(tmp_path) -> None:
    """``convnet_nchw_infer.log`` gzipped and cut at two thirds: ``analyze`` reports the
    lines before the cut and exits 2 with the reason; the fleet stores that run, says the
    same reason, records a ``partial`` failure, exits 2; building again skips it, exit 0."""
    data = gzip.compress((SAMPLE_LOGS / "convnet_nchw_infer.log").read_bytes())
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    analyzed = invoke("analyze", str(cut), "--format", "json")
    assert analyzed.exit_code == 2
    reason = f"{cut}: truncated gzip stream (the file ends early); the lines before it were read"
    assert reason in analyzed.stderr
    report = json.loads(analyzed.stdout)
    out = tmp_path / "ds"
    result = build(str(cut), "-o", str(out))
    assert result.exit_code == 2, result.stderr
    assert errors(result.stderr) == [f"dnnlens: error: run cut: {reason}"]
    assert "1 run(s) written" in result.stderr
    (run,) = Dataset.open(out).read("runs").to_pylist()
    assert run["exec_count"] == report["summary"]["exec_count"] > 0
    (failure,) = Dataset.open(out).failures().to_pylist()
    assert failure["exit_class"] == "partial" and failure["path"] == str(cut)
    again = build(str(cut), "-o", str(out))
    assert again.exit_code == 0 and "1 skipped (already in the dataset)" in again.stderr


def test_a_glob_or_directory_says_what_it_left_out(tmp_path) -> None:
    """``logs/**/*.log`` misses ``b.log.gz`` (a log) but not ``notes.txt`` (no log in
    it); a directory says which of its files hold no log, as ``analyze DIR`` does."""
    (tmp_path / "logs" / "x").mkdir(parents=True)
    (tmp_path / "logs" / "y").mkdir()
    shutil.copy(GOOD, tmp_path / "logs" / "x" / "a.log")
    (tmp_path / "logs" / "x" / "notes.txt").write_text("epoch 1\n")
    packed = gzip.compress((SAMPLE_LOGS / "profile_lstm_infer.log").read_bytes())
    (tmp_path / "logs" / "y" / "b.log.gz").write_bytes(packed)
    pattern = str(tmp_path / "logs" / "**" / "*.log")
    result = build(pattern, "-o", str(tmp_path / "ds"))
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if f"note: {pattern}:" in line]
    assert notes == [
        f"dnnlens: note: {pattern}: left out 1 file it does not match that hold a oneDNN "
        "verbose line, profiler trace or table: b.log.gz (widen the pattern, e.g. '*.log*', "
        "or name them)"
    ]
    folder = build(str(tmp_path / "logs" / "x"), "-o", str(tmp_path / "ds2"))
    assert folder.exit_code == 0, folder.stderr
    assert "skipped 1 file with no oneDNN verbose line" in folder.stderr
    assert "notes.txt" in folder.stderr


def test_progress_counts_failures_and_tells_the_first_at_once(monkeypatch, capsys) -> None:
    monkeypatch.setattr("dnnlens.fleet.progress.LINE_EVERY_S", 0.0)
    progress = BuildProgress(terminal=False)
    progress.start(3, 3_000)
    progress.advance(RunReport(("a.log",), "failed", "a", "a.log: empty file", size_bytes=1))
    progress.advance(RunReport(("b.log",), "failed", "b", "b.log: empty file", size_bytes=1))
    progress.advance(RunReport(("c.log",), "written", "c", size_bytes=1))
    progress.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "dnnlens: progress: first failure: run a: a.log: empty file"
    assert err[1].startswith("dnnlens: progress: 1/3 runs, 1 failed, ")
    assert err[2].startswith("dnnlens: progress: 2/3 runs, 2 failed, ")
    assert err[3].startswith("dnnlens: progress: 3/3 runs, 2 failed, ")
    assert len(err) == 4
