"""``dnnlens analyze`` on broken inputs: exit codes and one clear line on stderr, never a
traceback (docs/input-policy.md).

Exit codes: 0 analysed, 1 findings at or above ``--fail-on``, 2 usage or input error (after
the report, when other inputs could be analysed), 3 internal error.
"""

from __future__ import annotations

import builtins
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens.io.inputs as inputs
from dnnlens.cli import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
TRACE = ROOT / "sample_logs" / "profile_lstm_infer.trace.json"
CORPUS = ROOT / "tests" / "data" / "corpus"
# hand counts (tests/test_sample_logs.py): 338 lines, 165 exec lines
NCHW_LINES, NCHW_EXECS = 338, 165
GOOD_LINE = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0"
    " dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,16x3x3x3,0.25"
)


def run(*args: str) -> tuple[int, str, list[str]]:
    """Exit code, standard output and the lines of standard error of ``dnnlens analyze``."""
    result = CliRunner().invoke(app, ["analyze", *args])
    assert "Traceback" not in result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr.splitlines()


def run_json(*args: str) -> tuple[int, dict, list[str]]:
    code, out, err = run("--format", "json", *args)
    return code, json.loads(out), err


def only_error(err: list[str]) -> str:
    """The one ``dnnlens: error:`` line of ``err``."""
    errors = [line for line in err if line.startswith("dnnlens: error:")]
    assert len(errors) == 1, err
    return errors[0]


# -- broken inputs, one by one ------------------------------------------------------------------


def test_good_file_exits_0() -> None:
    code, doc, err = run_json(str(NCHW))
    assert code == EXIT_OK, err
    assert err == []
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def test_missing_file(tmp_path: Path) -> None:
    code, out, err = run(str(tmp_path / "missing.log"))
    assert code == EXIT_USAGE
    assert err == [f"dnnlens: error: {tmp_path / 'missing.log'}: no such file or directory"]
    assert out == ""


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    code, doc, err = run_json(str(tmp_path / "empty.log"))
    assert code == EXIT_USAGE
    assert only_error(err).endswith("empty.log: empty file, nothing to analyse")
    assert doc["inputs"][0]["lines"] == 0  # the report is still written


def test_directory_without_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden.log").write_text(GOOD_LINE + "\n")
    code, out, err = run(str(tmp_path))
    assert code == EXIT_USAGE
    assert "directory holds no files, only 1 subdirectories" in only_error(err)


def test_empty_directory(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path))
    assert code == EXIT_USAGE
    assert only_error(err) == f"dnnlens: error: {tmp_path}: directory holds no files"


def test_directory_with_files_reads_each(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(NCHW.read_text())
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(NCHW.read_bytes()))
    code, doc, err = run_json(str(tmp_path))
    assert code == EXIT_OK, err
    assert [Path(i["path"]).name for i in doc["inputs"]] == ["a.log", "b.log.gz"]
    assert [i["lines"] for i in doc["inputs"]] == [NCHW_LINES, NCHW_LINES]
    assert doc["inputs"][1]["gzip"] is True
    # two logs are two runs, each analysed alone; --combine makes them one
    assert [r["summary"]["exec_count"] for r in doc["runs"]] == [NCHW_EXECS, NCHW_EXECS]
    code, doc, err = run_json(str(tmp_path), "--combine")
    assert doc["summary"]["exec_count"] == 2 * NCHW_EXECS


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests may run as root, for whom chmod 000 changes nothing: the reader's ``open``
    # is made to fail the way it fails for an ordinary user (see the next test for the real
    # thing when not root).
    log = tmp_path / "locked.log"
    log.write_text(NCHW.read_text())

    def fake_open(path: object, *args: object, **kwargs: object) -> object:
        if str(path) == str(log):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(inputs, "open", fake_open, raising=False)
    code, doc, err = run_json(str(log), str(NCHW))
    assert code == EXIT_USAGE
    assert only_error(err) == f"dnnlens: error: {log}: permission denied"
    assert doc["summary"]["exec_count"] == NCHW_EXECS  # the readable input is analysed


@pytest.mark.skipif(
    not hasattr(sys, "getuid") or sys.platform == "win32", reason="POSIX permissions"
)
def test_permission_denied_for_real(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode (the monkeypatched test covers it)")
    log = tmp_path / "locked.log"
    log.write_text(GOOD_LINE + "\n")
    log.chmod(0)
    code, _, err = run(str(log))
    assert code == EXIT_USAGE
    assert only_error(err) == f"dnnlens: error: {log}: permission denied"


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    packed = gzip.compress(NCHW.read_bytes() * 30)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    code, doc, err = run_json(str(cut))
    assert code == EXIT_USAGE
    assert "cut.log.gz: truncated gzip stream (the file ends early)" in only_error(err)
    entry = doc["inputs"][0]
    assert entry["read_error"] is not None
    assert entry["lines"] > 10 * NCHW_LINES  # roughly half of 30 copies, nothing dropped
    assert (
        entry["parsed_lines"] + entry["foreign_lines"] + entry["malformed_lines"]
        == (entry["lines"])
    )


def test_twenty_megabyte_single_line(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("w") as fh:
        fh.write("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,")
        fh.write("src:f32::blocked:abcd::f0 " * 800_000)
        fh.write(",,,16x3x3x3,0.25\n")
    assert big.stat().st_size > 20_000_000
    code, doc, err = run_json(str(big), str(NCHW))
    assert code == EXIT_OK, err
    entry = doc["inputs"][0]
    assert (entry["lines"], entry["malformed_lines"]) == (1, 1)
    assert entry["malformed"][0]["reason"].startswith("line too long")
    code, _, err = run("--strict", str(big))
    assert code == EXIT_USAGE
    assert "big.log:1: line too long" in only_error(err)


def test_only_program_output(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/3\nloss: 0.25\naccuracy: 0.9\n")
    code, _, err = run(str(log))
    assert code == EXIT_USAGE
    assert only_error(err) == (
        f"dnnlens: error: {log}: no oneDNN verbose line among its 3 lines; was "
        "ONEDNN_VERBOSE=1 (DNNL_VERBOSE=1 before v2.5) set when it was written?"
    )


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    log = tmp_path / "latin1.log"
    log.write_bytes(
        b"caf\xe9 \xff\xfe\n"
        + GOOD_LINE.encode()
        + b"\n"
        + GOOD_LINE.encode().replace(b"jit:uni", b"jit:un\xe9")
        + b"\n"
    )
    code, doc, err = run_json(str(log))
    assert code == EXIT_OK, err
    entry = doc["inputs"][0]
    assert entry["invalid_utf8_bytes"] == 4
    assert (entry["lines"], entry["parsed_lines"], entry["foreign_lines"]) == (3, 2, 1)


def test_nul_bytes_are_removed_and_noted(tmp_path: Path) -> None:
    log = tmp_path / "nul.log"
    log.write_bytes(
        b"\x00" * 4096
        + GOOD_LINE.encode()
        + b"\n"  # after logrotate copytruncate
        + GOOD_LINE.encode()
        + b"\x00\x00\n"  # preallocated tail
        + b"\x00" * 100
        + b"\n"
    )
    code, doc, err = run_json(str(log))
    assert code == EXIT_OK, err
    assert err == [
        f"dnnlens: note: {log}: 3 lines held NUL bytes; they were removed before the line was read"
    ]
    assert doc["summary"]["exec_count"] == 2
    assert doc["summary"]["total_time_ms"] == pytest.approx(0.5)


def test_crlf_line_ends_read_like_lf(tmp_path: Path) -> None:
    lf, crlf = tmp_path / "a.log", tmp_path / "b.log"  # same name length: same report
    lf.write_bytes(NCHW.read_bytes())
    crlf.write_bytes(NCHW.read_bytes().replace(b"\n", b"\r\n"))
    _, lf_doc, _ = run_json(str(lf))
    code, doc, err = run_json(str(crlf))
    assert code == EXIT_OK, err
    assert json.dumps(doc["summary"]).replace("b.log", "a.log") == json.dumps(lf_doc["summary"])
    assert doc["inputs"][0]["lines"] == NCHW_LINES


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (b"\x7fELF\x02\x01\x01\x00", "an ELF executable or library"),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"PK\x03\x04", "a zip archive"),
    ],
)
def test_binary_formats_are_refused(tmp_path: Path, head: bytes, what: str) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(head + random.Random(0).randbytes(100_000))
    code, _, err = run(str(junk))
    assert code == EXIT_USAGE
    assert what in only_error(err)
    assert only_error(err).endswith("not a text log")


def test_large_binary_file_is_refused_on_the_streaming_path(tmp_path: Path, monkeypatch) -> None:
    """A file over the streaming size (here lowered) that is not a log: one line, exit 2."""
    import dnnlens.reading.stream

    monkeypatch.setattr(dnnlens.reading.stream, "STREAM_FILE_MIN_BYTES", 1)
    junk = tmp_path / "big.bin"
    junk.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(100_000))
    code, _, err = run(str(junk))
    assert code == EXIT_USAGE
    assert only_error(err).endswith("an ELF executable or library, not a text log")


def test_binary_garbage_without_magic(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xc0" + random.Random(1).randbytes(200_000))
    code, _, err = run(str(junk))
    assert code == EXIT_USAGE
    assert "it looks like binary data" in only_error(err)


def test_truncated_chrome_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(TRACE.read_text()[:5000])
    code, _, err = run(str(trace))
    assert code == EXIT_USAGE
    line = only_error(err)
    assert "trace.json" in line
    assert "ends early" in line or "truncated" in line


def test_one_bad_input_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    code, doc, err = run_json(str(NCHW), str(tmp_path / "missing.log"), str(tmp_path / "empty.log"))
    assert code == EXIT_USAGE
    assert [Path(i["path"]).name for i in doc["inputs"]] == [NCHW.name, "empty.log"]
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    # the missing file is an error; the empty one, beside a real log, is a note
    assert len([line for line in err if line.startswith("dnnlens: error:")]) == 1
    assert [line for line in err if line.startswith("dnnlens: note:")] == [
        f"dnnlens: note: {tmp_path / 'empty.log'}: empty file, nothing to analyse"
    ]


def test_a_non_log_beside_real_logs_is_a_note_not_an_error(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("training started\nloss 0.5\n")
    code, doc, err = run_json(str(NCHW), str(other))
    assert code == EXIT_OK
    assert any(line.startswith("dnnlens: note:") and "notes.txt" in line for line in err)


def test_strict_turns_malformed_lines_into_exit_2() -> None:
    log = CORPUS / "03_mkldnn0x_tf_sum_reorder_loop_truncated.log"
    code, _, err = run(str(log))
    assert code == EXIT_OK, err
    code, _, err = run("--strict", str(log))
    assert code == EXIT_USAGE
    assert only_error(err) == (
        f"dnnlens: error: 1 malformed verbose line (--strict); the first: "
        f"{log}:15: verbose marker cut off (truncated line)"
    )


def test_internal_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    import dnnlens.analysis.analysis as analysis

    def boom(self: object) -> None:
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(analysis.Analysis, "prepare", boom)
    monkeypatch.delenv("DNNLENS_TRACEBACK", raising=False)
    code, _, err = run(str(NCHW))
    assert code == EXIT_INTERNAL
    assert len(err) == 1
    assert err[0].startswith("dnnlens: internal error: RuntimeError: something (please report")
    monkeypatch.setenv("DNNLENS_TRACEBACK", "1")
    result_ = CliRunner().invoke(app, ["analyze", str(NCHW)])
    assert isinstance(result_.exception, RuntimeError)


def test_unwritable_output_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "report.json"
    code, _, err = run("--format", "json", "--output", str(target), str(NCHW))
    assert code == EXIT_USAGE
    assert only_error(err).startswith(f"dnnlens: error: {target}: ")


def test_messages_are_one_line_and_not_markup(tmp_path: Path) -> None:
    odd = tmp_path / "[red]x[/red]\nnext\x1b[2J.log"
    code, _, err = run(str(odd))
    assert code == EXIT_USAGE
    line = only_error(err)
    assert line.endswith(
        "[red]x[/red]\\nnext\\x1b[2J.log: no such file, and no file matches it as a pattern"
    )


def test_no_traceback_from_the_real_entry_point(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dnnlens.cli",
            "analyze",
            str(tmp_path / "nope.log"),
            str(tmp_path / "empty.log"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_USAGE
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"dnnlens: error: {tmp_path / 'nope.log'}: no such file or directory",
        f"dnnlens: error: {tmp_path / 'empty.log'}: empty file, nothing to analyse",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("fmt", ["terminal", "json"])
def test_reader_going_away_is_quiet_and_not_exit_1(fmt: str) -> None:
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # `dnnlens analyze x.log | head` after head has exited
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "dnnlens.cli", "analyze", "--format", fmt, str(NCHW)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == ""
