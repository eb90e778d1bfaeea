"""Reading a live stream: blocks come as lines arrive, the program's bytes pass through at once,
and the live view shows figures before the stream ends."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

from rich.console import Console

from dnnlens.reading import live
from dnnlens.reading.stream import StreamAnalyzer

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
# hand count (tests/test_sample_logs.py): 338 lines, 165 exec lines
NCHW_LINES, NCHW_EXECS = 338, 165


class _SlowPipe:
    """A pipe fed by a thread: ``parts`` written one by one, ``pause`` seconds apart."""

    def __init__(self, parts: list[bytes], pause: float) -> None:
        r, w = os.pipe()
        self.reader = os.fdopen(r, "rb")
        self._w = w
        self.written: list[float] = []
        self._thread = threading.Thread(target=self._feed, args=(parts, pause), daemon=True)
        self._thread.start()

    def _feed(self, parts: list[bytes], pause: float) -> None:
        with os.fdopen(self._w, "wb", buffering=0) as out:
            for part in parts:
                out.write(part)
                self.written.append(time.monotonic())
                time.sleep(pause)


def test_blocks_arrive_before_the_stream_ends(monkeypatch) -> None:
    monkeypatch.setattr(live, "BATCH_SECONDS", 0.05)
    lines = NCHW.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    # the first half, then half a line, a pause, the rest of that line and the rest
    cut = len(lines[half]) // 2
    parts = [
        b"".join(lines[:half]) + lines[half][:cut],
        lines[half][cut:] + b"".join(lines[half + 1 :]),
    ]
    pipe = _SlowPipe(parts, pause=0.5)
    tee = io.BytesIO()
    got: list[tuple[float, bytes]] = []
    for block in live.read_blocks(pipe.reader, tee=tee):
        got.append((time.monotonic(), block))
    first_time, first_block = got[0]
    assert first_block == b"".join(lines[:half])  # whole lines only: the cut line waits
    assert first_time < pipe.written[-1]  # seen while the writer was still pausing
    assert b"".join(b for _, b in got) == NCHW.read_bytes()
    assert tee.getvalue() == NCHW.read_bytes()  # every byte passed through unchanged


def test_live_view_shows_figures_while_reading(monkeypatch) -> None:
    monkeypatch.setattr(live, "BATCH_SECONDS", 0.05)
    monkeypatch.setattr(live, "REFRESH_SECONDS", 0.0)
    shown: list[str] = []
    real_panel = live.live_panel

    def spy(analyzer: StreamAnalyzer, summary):  # noqa: ANN001, ANN202 - the panel's args
        panel = real_panel(analyzer, summary)
        record = Console(record=True, width=200, file=io.StringIO())
        record.print(panel)
        shown.append(record.export_text())
        return panel

    monkeypatch.setattr(live, "live_panel", spy)
    data = NCHW.read_bytes()
    pipe = _SlowPipe([data[: len(data) // 2], data[len(data) // 2 :]], pause=0.4)
    analysis, finished = live.analyze_stream(
        pipe.reader, live_console=Console(file=io.StringIO(), force_terminal=True)
    )
    assert finished
    assert shown, "the live view was never drawn"
    assert "lines (" in shown[0] and "executions" in shown[0]
    assert analysis.summary.exec_count == NCHW_EXECS
    assert analysis.log.scans[0].lines == NCHW_LINES


def test_an_endless_line_is_cut_not_kept(monkeypatch) -> None:
    """A stream that never sends a line end does not grow memory without bound."""
    from dnnlens.io import inputs

    monkeypatch.setattr(inputs, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(live, "BATCH_SECONDS", 0.01)
    stream = io.BytesIO(b"x" * 50_000 + b"\nonednn_verbose,v1,info,oneDNN v3.12.0\n")
    stats = inputs.ReadStats()
    blocks = list(live.read_blocks(stream, stats=stats))
    assert max(len(b) for b in blocks) <= 1001 + 64
    assert stats.cut_lines == 1
    assert b"".join(blocks).endswith(b"onednn_verbose,v1,info,oneDNN v3.12.0\n")


def test_piped_profiler_table_is_linked_as_in_a_file() -> None:
    """A program that prints its profiler table at the end: piped, it is linked as a file is."""
    from dnnlens.analysis.analysis import Analysis
    from dnnlens.reading import load

    path = ROOT / "sample_logs" / "profile_combined_infer.log"
    loaded = Analysis(load([str(path)]))
    piped, finished = live.analyze_stream(io.BytesIO(path.read_bytes()), name=str(path))
    assert finished
    # hand count (tests/test_linking.py): 45 primitives in the profiled region, all linked
    links = piped.framework_links
    assert links["framework_link"]["runs"][0]["primitives_linked"] == 45
    assert links["framework_ops"] == loaded.framework_links["framework_ops"]
