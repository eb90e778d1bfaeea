"""Signals and closed pipes while reading: the report of what was read, then the documented
exit code (130 SIGINT, 143 SIGTERM, 141 standard output closed), never an interpreter abort.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338 lines
(``wc -l``) and 165 exec lines (``grep -c ',exec,'``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dnnlens.io.signals import StopRequest

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165
WAIT = 60


def _analyze(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dnnlens.cli", "analyze", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _json_in(text: bytes) -> dict:
    start, end = text.index(b"{"), text.rindex(b"}") + 1
    return json.loads(text[start:end])


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda n: signal.Signals(n).name
)
def test_a_signal_while_reading_a_pipe_gives_the_report_of_what_was_read(signum: int) -> None:
    """The producer is still running (the pipe is open) when the signal comes. SIGHUP (a
    closed terminal or ssh session) is a request to end like SIGTERM: exit 129."""
    proc = _analyze("-", "--tee", "--no-live", "-f", "json")
    assert proc.stdin is not None and proc.stdout is not None
    data = NCHW.read_bytes()
    proc.stdin.write(data)
    proc.stdin.flush()
    seen = b""
    while len(seen) < len(data):  # --tee hands back what was read: it has all been read
        chunk = proc.stdout.read1(1 << 16)
        assert chunk, "dnnlens ended early"
        seen += chunk
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 128 + signum, err
    assert seen + out == data  # standard output is the input, unchanged, and nothing else
    doc = _json_in(err)  # --tee: the report goes to standard error
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert f"interrupted by {signal.Signals(signum).name}".encode() in err
    assert b"Fatal Python error" not in err and b"Traceback" not in err


def test_a_producer_that_dies_mid_line_is_reported() -> None:
    """The pipe ends in the middle of a line: every line is reported, the cut one too."""
    data = NCHW.read_bytes()
    proc = _analyze("-", "-f", "json")
    out, err = proc.communicate(data + b"onednn_verbose,v1,primitive,exe", timeout=WAIT)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["inputs"][0]["lines"] == NCHW_LINES + 1
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert doc["inputs"][0]["malformed_lines"] == 1


def test_standard_output_closed_under_tee() -> None:
    """``... | dnnlens analyze - --tee | head -3``: the input is still read and reported (on
    standard error), the exit code says standard output was closed."""
    proc = subprocess.run(
        f"cat {NCHW} {NCHW} | {sys.executable} -m dnnlens.cli analyze - --tee -f json "
        "| head -c 10 >/dev/null; echo ${PIPESTATUS[1]} >&2",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        timeout=WAIT,
    )
    assert proc.stderr.rstrip().endswith(b"141"), proc.stderr
    doc = _json_in(proc.stderr)
    assert doc["inputs"][0]["lines"] == 2 * NCHW_LINES
    assert b"standard output was closed" in proc.stderr


def test_a_stop_request_is_a_flag_then_a_second_signal_ends_the_command() -> None:
    before = signal.getsignal(signal.SIGINT)  # pytest's or xdist's, not always Python's
    with StopRequest() as stop:
        assert not stop
        signal.raise_signal(signal.SIGINT)
        assert stop and stop.exit_code == 130 and stop.name == "SIGINT"
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before  # the handler it found, put back
