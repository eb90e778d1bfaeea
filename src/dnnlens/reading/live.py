"""Reading a stream as it arrives, and the live view shown while it runs.

A reader thread takes bytes from a binary stream (a pipe, standard input, a child process),
copies them unchanged to a ``tee`` stream (the user still sees their program's output) and
to a log file, and hands them over in blocks of whole lines for the bulk scanner: a block
closes after ``BATCH_SECONDS`` or at about ``BLOCK_BYTES``, whichever comes first, so figures
stay live on a slow stream and cheap on a fast one.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.summary import Summary
from dnnlens.io import inputs
from dnnlens.io.inputs import ReadStats
from dnnlens.parsers.torch_table import TableFinder
from dnnlens.reading.stream import DEFAULT_WINDOW_EVENTS, StreamAnalyzer

BATCH_SECONDS = 0.25
REFRESH_SECONDS = 0.5
_END = object()


def read_blocks(
    stream: BinaryIO,
    tee: BinaryIO | None = None,
    copy_to: BinaryIO | None = None,
    stats: ReadStats | None = None,
    name: str = "-",
) -> Iterator[bytes]:
    """Yield blocks of whole lines from ``stream`` as they arrive, until EOF.

    A reader thread copies every byte unchanged to ``tee`` and ``copy_to`` as soon as it is
    read (the program's own output is not held back waiting for a line end). Blocks close
    after ``BATCH_SECONDS`` or at about ``BLOCK_BYTES``; lines longer than ``MAX_LINE_BYTES``
    are cut as in files (counted into ``stats``).
    """
    q: queue.Queue = queue.Queue(maxsize=64)
    read = getattr(stream, "read1", None) or stream.read

    def reader() -> None:
        try:
            while True:
                data = read(inputs.BLOCK_BYTES)
                if not data:
                    break
                if tee is not None:
                    tee.write(data)
                    tee.flush()
                if copy_to is not None:
                    copy_to.write(data)
                q.put(data)
        except (OSError, ValueError):
            pass
        finally:
            q.put(_END)

    cap = inputs.line_capper(stats if stats is not None else ReadStats(), name)
    thread = threading.Thread(target=reader, name="dnnlens-reader", daemon=True)
    thread.start()
    carry = b""
    done = False
    while not done:
        parts = [carry]
        size = len(carry)
        deadline = time.monotonic() + BATCH_SECONDS
        while size < inputs.BLOCK_BYTES:
            timeout = deadline - time.monotonic()
            try:
                item = q.get(timeout=max(timeout, 0.0)) if size else q.get()
            except queue.Empty:
                break
            if item is _END:
                done = True
                break
            item = cap(item)
            parts.append(item)
            size += len(item)
        data = b"".join(parts)
        cut = len(data) if done else data.rfind(b"\n") + 1
        block, carry = data[:cut], data[cut:]
        if block:
            yield block


def live_panel(analyzer: StreamAnalyzer, summary: Summary) -> Group:
    """What the live view shows: lines read, totals, time by kind, top primitives."""
    t = analyzer.total
    head = (
        f"[bold]dnnlens[/bold] live: {t.lines:,} lines ({t.parsed:,} parsed, "
        f"{t.foreign:,} foreign, {t.malformed:,} malformed); "
        f"{summary.exec_count:,} executions, {summary.total_time_ms:,.3f} ms"
    )
    kinds = Table(title="time by kind", title_justify="left", expand=False)
    for col in ("kind", "count", "time ms", "share"):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for r in summary.by_kind[:6]:
        kinds.add_row(
            r["kind"], f"{r['count']:,}", f"{r['time_ms']:,.3f}", f"{100 * r['share']:.1f}%"
        )
    top = Table(title="top primitives", title_justify="left", expand=False)
    for col in ("kind", "impl", "problem", "count", "time ms"):
        top.add_column(col, overflow="fold")
    for r in summary.top_primitives[:5]:
        top.add_row(
            r["kind"], r["impl"], r["problem"][:60], f"{r['count']:,}", f"{r['time_ms']:,.3f}"
        )
    return Group(head, kinds, top)


def consume(
    analyzer: StreamAnalyzer,
    blocks: Iterator[bytes],
    console: Console | None,
    stats: ReadStats | None = None,
) -> bool:
    """Feed every block to ``analyzer``; show a live view on ``console`` when given.

    Returns False when interrupted with Ctrl-C (the caller still prints the final report).
    """
    if console is None:
        try:
            for block in blocks:
                analyzer.feed_block(block, stats)
        except KeyboardInterrupt:
            return False
        return True
    last = 0.0
    with Live(console=console, refresh_per_second=4, transient=True) as live:
        try:
            for block in blocks:
                analyzer.feed_block(block, stats)
                now = time.monotonic()
                if now - last >= REFRESH_SECONDS:
                    live.update(live_panel(analyzer, analyzer.summary()))
                    last = now
        except KeyboardInterrupt:
            return False
    return True


def analyze_stream(
    stream: BinaryIO,
    name: str = "-",
    tee: BinaryIO | None = None,
    copy_to: BinaryIO | None = None,
    window_events: int | None = None,
    live_console: Console | None = None,
) -> tuple[Analysis, bool]:
    """Read ``stream`` to its end (or Ctrl-C) and return the analysis and whether it ended."""
    analyzer = StreamAnalyzer(
        name, DEFAULT_WINDOW_EVENTS if window_events is None else window_events
    )
    analyzer.finder = TableFinder(name)  # issue 3: a table the program prints is linked too
    stats = ReadStats()
    blocks = read_blocks(stream, tee, copy_to, stats, name)
    finished = consume(analyzer, blocks, live_console, stats)
    analyzer.total.add_reading(stats)
    return analyzer.analysis(), finished
