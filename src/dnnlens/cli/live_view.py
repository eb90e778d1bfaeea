"""The live view: a small region at the bottom of the terminal that the program's lines
scroll above, never over.

While a stream is read, two things reach the same terminal: the program's own output (with
``--tee``, and always under ``dnnlens run``) on standard output, and the live figures on
standard error. If each drew on its own, the figures would be drawn over the program's
lines (and stale copies of them would pile up in the scrollback). So every byte for the
terminal goes through :class:`LiveView`: before the program's bytes are written, the region
is erased; after them, once the cursor is back at the start of a line, it is drawn again
below them. While the program is in the middle of a line (a prompt, a progress bar redrawn
with ``\\r``) the region stays hidden, so nothing is drawn over that line either.

The region is drawn only when standard output and standard error are both terminals
(:func:`live_view_possible`); its content is redrawn at most a few times a second (the
reading layer offers snapshots that often); it is erased when reading ends, before the
report is printed, so nothing of it is left on the screen.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import time
from typing import IO, Any, BinaryIO

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dnnlens.io.inputs import display_path
from dnnlens.report.console import color_allowed

#: Rows of the terminal the region may use at most (it is cut to fit smaller terminals).
MAX_ROWS = 16
#: The start of a line (the bytes after the program's last line end) waits this long for the
#: rest of its line, so that block-buffered output (a pipe's 4 or 8 KiB blocks) does not hide
#: the region; a prompt or a progress bar shows after this delay at most.
HOLD_SECONDS = 0.1
HOLD_BYTES = 1 << 16


def live_view_possible() -> bool:
    """Whether a live region can be drawn: standard output and standard error are the
    terminal (with standard output redirected, nothing is drawn)."""
    try:
        return sys.stdout.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _safe(value: object) -> str:
    """A string from a log, safe to print: control characters shown as escapes, no markup."""
    return escape(display_path(str(value)))


def live_panel(log: Any, summary: Any) -> RenderableType:
    """What the region shows: lines read, totals, time by kind, top primitives.

    ``log`` is a snapshot of what was read (a ParsedLog), ``summary`` its summary.
    """
    lines = sum(s.lines for s in log.scans)
    parsed = sum(s.parsed for s in log.scans)
    foreign = sum(s.foreign for s in log.scans)
    malformed = sum(s.malformed for s in log.scans)
    head = Text.from_markup(
        f"[bold]dnnlens[/bold] live: {lines:,} lines ({parsed:,} parsed, "
        f"{foreign:,} foreign, {malformed:,} malformed); "
        f"{summary.exec_count:,} executions, {summary.total_time_ms:,.3f} ms"
    )
    kinds = Table(title="time by kind", title_justify="left", expand=False, box=None)
    for col in ("kind", "count", "time ms", "share"):
        kinds.add_column(col, justify="left" if col == "kind" else "right", no_wrap=True)
    for r in summary.by_kind[:4]:
        kinds.add_row(
            _safe(r["kind"]),
            f"{r['count']:,}",
            f"{r['time_ms']:,.3f}",
            f"{100 * r['share']:.1f}%",
        )
    top = Table(title="top primitives", title_justify="left", expand=False, box=None)
    for col in ("kind", "impl", "problem", "count", "time ms"):
        top.add_column(col, no_wrap=True, overflow="ellipsis")
    for r in summary.top_primitives[:4]:
        top.add_row(
            _safe(r["kind"]),
            _safe(r["impl"]),
            _safe(str(r["problem"])[:40]),
            f"{r['count']:,}",
            f"{r['time_ms']:,.3f}",
        )
    return Group(head, kinds, top)


class _ProgramOutput(io.RawIOBase):
    """The file-like object the reading layer tees the program's bytes into."""

    def __init__(self, view: LiveView) -> None:
        super().__init__()
        self._view = view

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:  # type: ignore[override]
        self._view.write_program(bytes(data))
        return len(data)

    def flush(self) -> None:
        """Write a line start held back for :data:`HOLD_SECONDS` (the reading layer calls
        this after each write and whenever the stream pauses)."""
        self._view.flush_program()


class LiveView:
    """The region and the program's output on one terminal (see the module doc).

    ``out`` gets the program's bytes (standard output); ``term`` the region (standard error).
    """

    def __init__(self, out: BinaryIO, term: IO[str]) -> None:
        self._out = out
        self._term = term
        self._lines: list[str] = []
        self._drawn = 0  # rows of the region on the screen now (0: none)
        self._mid_line = False  # the program's last byte on the screen was not a line end
        #: write the program's bytes here (what ``--tee`` copies)
        self.program: BinaryIO = _ProgramOutput(self)  # type: ignore[assignment]
        self._color = color_allowed(term)
        #: the program's output could not be written (its reader went away)
        self.out_closed = False
        self._held = b""  # the start of the program's unfinished last line
        self._held_since: float | None = None

    def _size(self) -> os.terminal_size:
        try:
            return os.get_terminal_size(self._term.fileno())
        except (AttributeError, OSError, ValueError):
            return shutil.get_terminal_size()

    def show(self, panel: RenderableType) -> None:
        """Draw ``panel`` as the region's new content."""
        size = self._size()
        width = max(20, size.columns - 1)  # never the last column: no wrap, exact rows
        rows = max(1, min(MAX_ROWS, size.lines - 2))
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=width,
            force_terminal=self._color,
            color_system="standard" if self._color else None,
            no_color=not self._color,
            highlight=False,
            emoji=False,
        )
        console.print(panel, crop=True, overflow="ellipsis", no_wrap=True)
        self._lines = buffer.getvalue().splitlines()[:rows]
        self._erase()
        self._draw()

    def write_program(self, data: bytes) -> None:
        """Write the program's whole lines above the region at once, then draw the region
        below them; the start of an unfinished line is held back a little (see
        :data:`HOLD_SECONDS`)."""
        if not data:
            return
        held = self._held + data
        end = held.rfind(b"\n") + 1
        self._held = held[end:]
        if not self._held:
            self._held_since = None
        elif self._held_since is None or end:
            self._held_since = time.monotonic()
        if end:
            self._emit(held[:end])
        self.flush_program()

    def flush_program(self) -> None:
        """Write the held start of a line once it waited long enough (or grew large)."""
        if not self._held or self._held_since is None:
            return
        if len(self._held) < HOLD_BYTES and time.monotonic() - self._held_since < HOLD_SECONDS:
            return
        data, self._held, self._held_since = self._held, b"", None
        self._emit(data)

    def _emit(self, data: bytes) -> None:
        self._erase()
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError):
            self.out_closed = True
            raise
        self._mid_line = not data.endswith(b"\n")
        self._draw()

    def close(self) -> None:
        """Write what is held, erase the region for good (the report comes next)."""
        if self._held:
            data, self._held, self._held_since = self._held, b"", None
            try:
                self._emit(data)
            except (OSError, ValueError):
                pass  # out_closed says so
        self._erase()
        self._lines = []

    def _draw(self) -> None:
        if self._mid_line or not self._lines or self._drawn:
            return
        up = len(self._lines) - 1
        text = "\n".join(self._lines) + (f"\x1b[{up}A" if up else "") + "\r"
        self._term.write(text)
        self._term.flush()
        self._drawn = len(self._lines)

    def _erase(self) -> None:
        """Blank the region's rows one by one, the cursor back at its top left (erasing
        "to the end of the screen" from the top left corner is a clear screen, which some
        terminals, tmux among them, copy into the scrollback)."""
        if self._drawn:
            rows = self._drawn
            down = "\x1b[2K\x1b[1B" * (rows - 1)
            self._term.write("\r" + down + "\x1b[2K" + (f"\x1b[{rows - 1}A" if rows > 1 else ""))
            self._term.flush()
            self._drawn = 0
