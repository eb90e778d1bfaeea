"""Reading a live stream: snapshots come as lines arrive, the program's bytes pass through at
once and unchanged, and a pipe is read exactly like a file.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338 lines
(``wc -l``) and 165 exec lines (``grep -c ',exec,'``).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.reading import front, read, stream

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165
WAIT = 60  # seconds a test waits for the other side at most (a loaded CI machine)


class _Pipe:
    """A real pipe fed by a thread: ``parts`` written one by one; before each part after the
    first, the writer waits for ``go`` (set by the test when it has seen what it wants)."""

    def __init__(self, parts: list[bytes]) -> None:
        r, w = os.pipe()
        self.reader = os.fdopen(r, "rb", buffering=0)
        self.go = threading.Event()
        self._w = w
        self._thread = threading.Thread(target=self._feed, args=(parts,), daemon=True)
        self._thread.start()

    def _feed(self, parts: list[bytes]) -> None:
        with os.fdopen(self._w, "wb", buffering=0) as out:
            for i, part in enumerate(parts):
                if i:
                    self.go.wait(WAIT)
                    self.go.clear()
                out.write(part)


def _execs(log) -> int:  # noqa: ANN001 - a ParsedLog
    if log.record_stats is not None:
        ops = [log.records[r].operation for r in log.record_stats.index]
        return int(
            sum(c for op, c in zip(ops, log.record_stats["count"], strict=True) if op == "exec")
        )
    return int((log.events["operation"] == "exec").sum())


def test_snapshots_arrive_while_the_stream_is_open(monkeypatch) -> None:
    """The first half of the log, then half a line: a snapshot shows the whole lines of the
    first half (the cut line waits for its end) before the writer sends the rest."""
    monkeypatch.setattr(front, "BATCH_SECONDS", 0.01)
    monkeypatch.setattr(front, "SNAPSHOT_SECONDS", 0.0)
    data = NCHW.read_bytes()
    lines = data.splitlines(keepends=True)
    half = len(lines) // 2
    cut = len(lines[half]) // 2
    first = b"".join(lines[:half]) + lines[half][:cut]
    pipe = _Pipe([first, data[len(first) :]])
    seen: list[int] = []

    def on_snapshot(snapshot) -> None:  # noqa: ANN001 - a ParsedLog
        seen.append(sum(s.lines for s in snapshot.scans))
        if seen[-1] == half:
            pipe.go.set()

    tee = io.BytesIO()
    log = read(["-"], stdin=pipe.reader, tee=tee, on_snapshot=on_snapshot)
    assert half in seen  # seen while the writer waited for it
    assert all(n <= half for n in seen[: seen.index(half)])
    assert log.scans[0].lines == NCHW_LINES
    assert _execs(log) == NCHW_EXECS
    assert tee.getvalue() == data  # every byte passed through unchanged


def test_a_snapshot_carries_exact_statistics(monkeypatch) -> None:
    monkeypatch.setattr(front, "SNAPSHOT_SECONDS", 0.0)
    snapshots = []
    read(["-"], stdin=io.BytesIO(NCHW.read_bytes()), on_snapshot=snapshots.append)
    last = snapshots[-1]
    assert last.record_stats is not None
    assert _execs(last) == NCHW_EXECS
    assert len(last.events) <= stream.SNAPSHOT_EVENTS


def _cli(*args: str, data: bytes, timeout: float = WAIT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", *args],
        input=data,
        capture_output=True,
        timeout=timeout,
    )


def test_a_piped_line_over_the_cap_ends() -> None:
    """``python3 -c "print('x'*1100000)" | dnnlens analyze -`` ends, as a file does (a
    line over one block made the pipe reader loop for ever)."""
    proc = _cli("analyze", "-", "-q", "-f", "json", data=b"x" * 1_100_000 + b"\n")
    assert proc.returncode == 2  # no verbose line: an input error, not a hang
    assert b"no oneDNN verbose line among its 1 line" in proc.stderr
    proc = _cli("analyze", "-", "-f", "json", data=b"x" * 5_000_000 + b"\n" + NCHW.read_bytes())
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES + 1
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert b"1 line longer than" in proc.stderr


@pytest.mark.parametrize(
    "pack",
    [gzip.compress, lambda b: b.decode().encode("utf-16")],
    ids=["gzip", "utf-16"],
)
def test_standard_input_is_decoded_like_a_file(pack) -> None:  # noqa: ANN001
    """``cat log.gz | dnnlens analyze -`` is decompressed, UTF-16 is decoded (both were read
    as binary data)."""
    result = CliRunner().invoke(
        app, ["analyze", "-", "-f", "json", "--no-live"], input=pack(NCHW.read_bytes())
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def test_process_substitution_reads_every_line() -> None:
    """``dnnlens analyze <(cat LOG)``: no byte of the pipe goes to sniffing for a trace
    (the first 8 KiB were lost: 314 of 338 lines, version and ISA gone)."""
    script = f"{sys.executable} -m dnnlens.cli analyze <(cat {NCHW}) -f json"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=WAIT, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["inputs"][0]["onednn_version"] == "3.12.0"
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def test_a_named_fifo_with_a_writer(tmp_path: Path) -> None:
    """A named FIFO is opened once: the trace sniffer used to open and close it, and the
    second open waited for a writer that was gone."""
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as out:
            out.write(NCHW.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    proc = subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "analyze", str(fifo), "-f", "json"],
        capture_output=True,
        timeout=WAIT,
    )
    writer.join(WAIT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS


def test_piped_profiler_table_is_linked_as_in_a_file() -> None:
    """A program that prints its profiler table at the end: piped, it is linked as a file is."""
    path = ROOT / "sample_logs" / "profile_combined_infer.log"
    runner = CliRunner()
    piped = runner.invoke(app, ["analyze", "-", "-f", "json", "--no-live"], input=path.read_bytes())
    loaded = runner.invoke(app, ["analyze", str(path), "-f", "json"])
    assert piped.exit_code == loaded.exit_code == 0, piped.stderr
    a, b = json.loads(piped.stdout), json.loads(loaded.stdout)
    # hand count (tests/test_linking.py): 45 primitives in the profiled region, all linked
    assert a["framework_link"]["runs"][0]["primitives_linked"] == 45
    for ops in (a["framework_ops"], b["framework_ops"]):
        for op in ops:
            assert op.pop("source").endswith(":70")  # the table's line, in "-" or in the file
    assert a["framework_ops"] == b["framework_ops"]


def test_a_trace_on_standard_input() -> None:
    """A chrome trace piped in is read as a trace, from its first byte."""
    trace = ROOT / "sample_logs" / "profile_nchw_infer.trace.json"
    log = read(["-"], stdin=io.BytesIO(trace.read_bytes()))
    assert log.scans == []
    assert log.framework is not None and len(log.framework.traces) == 1
    assert log.framework.traces[0].events > 0


def test_a_slow_stream_of_short_lines_is_read_before_it_ends(monkeypatch) -> None:
    """Fewer bytes than the decoder looks at to know what the input is: a pause decides on
    what there is, so "step 0" counts before the stream ends."""
    monkeypatch.setattr(front, "SNAPSHOT_SECONDS", 0.0)
    pipe = _Pipe([b"step 0\n", b"step 1\n"])
    seen: list[int] = []

    def on_snapshot(snapshot) -> None:  # noqa: ANN001 - a ParsedLog
        seen.append(sum(s.lines for s in snapshot.scans))
        pipe.go.set()

    log = read(["-"], stdin=pipe.reader, on_snapshot=on_snapshot)
    assert seen[0] == 1  # "step 0" alone, read while the writer waited for it
    assert log.scans[0].lines == 2


def test_a_slow_trace_on_a_pipe_is_read_as_a_trace() -> None:
    """A trace that comes slowly (its first bytes decided on a pause) is still a trace."""
    trace = (ROOT / "sample_logs" / "profile_nchw_infer.trace.json").read_bytes()
    pipe = _Pipe([trace[:40], trace[40:]])
    threading.Timer(0.5, pipe.go.set).start()  # a pause after the first 40 bytes
    log = read(["-"], stdin=pipe.reader)
    assert log.scans == []
    assert log.framework is not None and log.framework.traces[0].events > 0
    assert log.framework.traces[0].error is None
