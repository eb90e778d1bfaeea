"""Reading a stream as it arrives, and the live view shown while it runs.

A reader thread takes lines from a binary stream (a pipe, standard input, a child process),
optionally copies them unchanged to a ``tee`` stream (the user still sees their program's
output) and to a log file, and hands them over in batches: a batch closes after
``BATCH_SECONDS`` or ``BATCH_LINES``, whichever comes first, so figures stay live on a slow
stream and cheap on a fast one.
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

from dnnlens.analysis.result import Analysis
from dnnlens.analysis.summary import Summary
from dnnlens.stream import DEFAULT_WINDOW_EVENTS, StreamAnalyzer

BATCH_SECONDS = 0.25
BATCH_LINES = 50_000
REFRESH_SECONDS = 0.5
_END = object()


def read_batches(
    stream: BinaryIO, tee: BinaryIO | None = None, copy_to: BinaryIO | None = None
) -> Iterator[list[str]]:
    """Yield lists of decoded lines from ``stream`` as they arrive, until EOF."""
    q: queue.Queue = queue.Queue(maxsize=64)

    def reader() -> None:
        try:
            for raw in iter(stream.readline, b""):
                if tee is not None:
                    tee.write(raw)
                    tee.flush()
                if copy_to is not None:
                    copy_to.write(raw)
                q.put(raw)
        except (OSError, ValueError):
            pass
        finally:
            q.put(_END)

    thread = threading.Thread(target=reader, name="dnnlens-reader", daemon=True)
    thread.start()
    done = False
    while not done:
        batch: list[str] = []
        deadline = time.monotonic() + BATCH_SECONDS
        while len(batch) < BATCH_LINES:
            timeout = deadline - time.monotonic()
            try:
                item = q.get(timeout=max(timeout, 0.0)) if batch else q.get()
            except queue.Empty:
                break
            if item is _END:
                done = True
                break
            batch.append(item.decode("utf-8", errors="replace"))
        if batch:
            yield batch


def live_panel(analyzer: StreamAnalyzer, summary: Summary) -> Group:
    """What the live view shows: lines read, totals, time by kind, top primitives."""
    t = analyzer.total
    head = (f"[bold]dnnlens[/bold] live: {t.lines:,} lines ({t.parsed:,} parsed, "
            f"{t.foreign:,} foreign, {t.malformed:,} malformed); "
            f"{summary.exec_count:,} executions, {summary.total_time_ms:,.3f} ms")
    kinds = Table(title="time by kind", title_justify="left", expand=False)
    for col in ("kind", "count", "time ms", "share"):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for r in summary.by_kind[:6]:
        kinds.add_row(r["kind"], f"{r['count']:,}", f"{r['time_ms']:,.3f}",
                      f"{100 * r['share']:.1f}%")
    top = Table(title="top primitives", title_justify="left", expand=False)
    for col in ("kind", "impl", "problem", "count", "time ms"):
        top.add_column(col, overflow="fold")
    for r in summary.top_primitives[:5]:
        top.add_row(r["kind"], r["impl"], r["problem"][:60], f"{r['count']:,}",
                    f"{r['time_ms']:,.3f}")
    return Group(head, kinds, top)


def consume(
    analyzer: StreamAnalyzer, batches: Iterator[list[str]], console: Console | None
) -> bool:
    """Feed every batch to ``analyzer``; show a live view on ``console`` when given.

    Returns False when interrupted with Ctrl-C (the caller still prints the final report).
    """
    if console is None:
        try:
            for batch in batches:
                analyzer.feed(batch)
        except KeyboardInterrupt:
            return False
        return True
    last = 0.0
    with Live(console=console, refresh_per_second=4, transient=True) as live:
        try:
            for batch in batches:
                analyzer.feed(batch)
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
    analyzer = StreamAnalyzer(name, DEFAULT_WINDOW_EVENTS if window_events is None
                              else window_events)
    finished = consume(analyzer, read_batches(stream, tee, copy_to), live_console)
    return analyzer.analysis(), finished
