"""Progress of a build on standard error: runs done of the total, and bytes per second.

On a terminal a transient bar (nothing is left once the build ends); elsewhere (CI logs) a
line every :data:`LINE_EVERY_S` seconds at most, so a long build shows it is alive
without flooding the log. Both count the runs that failed so far, and the first failure is
told when it happens (``progress: first failure: run ...``), so a long build that fails
shows why at once; every failure is listed at the end. Never anything on standard output.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dnnlens.errors import say
from dnnlens.fleet.build import RunReport
from dnnlens.report.console import color_allowed

LINE_EVERY_S = 10.0


def rate(done_bytes: int, seconds: float) -> str:
    """``12.3 MB/s``."""
    if seconds <= 0:
        return "- MB/s"
    return f"{done_bytes / seconds / 1e6:.1f} MB/s"


class BuildProgress:
    """Runs done / total and bytes/s, as a bar on a terminal or as occasional lines."""

    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal
        self.total = 0
        self.done = 0
        self.done_bytes = 0
        self.failed = 0
        self.started = time.perf_counter()
        self._last_line = self.started
        self._bar: Progress | None = None
        self._task = None

    def start(self, runs: int, total_bytes: int) -> None:
        self.total, self.started = runs, time.perf_counter()
        self._last_line = self.started
        if self.terminal:
            self._bar = Progress(
                TextColumn("[bold]runs[/bold]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                console=Console(stderr=True, no_color=not color_allowed(sys.stderr)),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("runs", total=runs, rate="")

    def advance(self, report: RunReport) -> None:
        self.done += 1
        self.done_bytes += report.size_bytes
        if report.status in ("failed", "unfinished") or report.failure == "partial":
            self.failed += 1
            if self.failed == 1:
                name = report.name or ", ".join(report.files)
                say("progress", f"first failure: run {name}: {report.message}")
        now = time.perf_counter()
        speed = rate(self.done_bytes, now - self.started)
        if self.failed:
            speed = f"{self.failed:,} failed, {speed}"
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, rate=speed)
        elif not self.terminal and now - self._last_line >= LINE_EVERY_S:
            self._last_line = now
            say("progress", f"{self.done:,}/{self.total:,} runs, {speed}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
