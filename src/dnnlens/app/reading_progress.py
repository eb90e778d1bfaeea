"""The inputs of a command, read with a progress bar on long inputs.

Progress bars (rich.progress over the bytes read) only on long inputs, when standard error
is a terminal and the user did not pass ``--quiet``. They are transient: nothing is left on
the screen once the input is read, and nothing is ever written to standard output.
:class:`InputProgress` is the :class:`dnnlens.io.progress.Progress` the reading layer calls;
:func:`load_inputs` is :func:`dnnlens.reading.read` with it. It lives in ``app`` because it
reads inputs, which renderers never do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dnnlens.io.inputs import InputSource, display_path, expand
from dnnlens.report.console import color_allowed, progress_enabled

if TYPE_CHECKING:  # rich is imported when a bar is made (start-up stays light)
    from rich.progress import Progress

    from dnnlens.model import ParsedLog

_Chunk = TypeVar("_Chunk", bytes, list[str])

#: Inputs smaller than this never get a bar (it would flash for a fraction of a second).
PROGRESS_MIN_BYTES = 32 << 20


def _size(source: InputSource) -> int | None:
    """The bytes of a regular file source; None for stdin, pipes and unreadable files."""
    if source.is_stdin:
        return None
    try:
        return os.path.getsize(source.path) if os.path.isfile(source.path) else None
    except OSError:
        return None


class InputProgress:
    """A transient progress bar over the raw bytes of the inputs being read.

    It is the :class:`dnnlens.io.progress.Progress` the reading layer calls (``start``,
    ``advance``, ``finish``); :meth:`track` wraps a chunk iterator instead. Use as a context
    manager. When the bar is disabled every method is a no-op, so callers never branch on it.
    """

    def __init__(
        self, sources: list[InputSource], enabled: bool, min_bytes: int = PROGRESS_MIN_BYTES
    ) -> None:
        self.sizes = {s.path: _size(s) for s in sources}
        total = sum(size or 0 for size in self.sizes.values())
        unknown = any(size is None for size in self.sizes.values())
        self.enabled = enabled and (unknown or total >= min_bytes)
        self._total = None if unknown else total
        self._progress: Progress | None = None
        self._task: Any = None
        self._current = ""

    def __enter__(self) -> InputProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]reading[/bold] {task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True, no_color=not color_allowed(sys.stderr)),
                transient=True,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
            self._progress = None

    # -- dnnlens.io.progress.Progress ----------------------------------------------------------
    def start(self, sources: Sequence[InputSource]) -> None:
        """One bar for all ``sources``, named after the input being read."""
        if self._progress is not None and self._task is None:
            self._task = self._progress.add_task("", total=self._total)

    def advance(self, source: InputSource, nbytes: int) -> None:
        """``nbytes`` more bytes of ``source`` were read."""
        if self._progress is None or self._task is None:
            return
        from rich.markup import escape

        name = "stdin" if source.is_stdin else escape(display_path(Path(source.path).name))
        if name != self._current:
            self._current = name
            self._progress.update(self._task, description=name)
        self._progress.advance(self._task, nbytes)

    def finish(self) -> None:
        """Reading is over: the bar goes away."""
        if self._progress is not None and self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None

    def track(self, source: InputSource, chunks: Iterable[_Chunk]) -> Iterator[_Chunk]:
        """Yield ``chunks`` unchanged, advancing the bar by the bytes (characters) of each.

        A chunk is a block of bytes or a list of text lines.
        """
        if self._progress is None:
            yield from chunks
            return
        self.start([source])
        for chunk in chunks:
            self.advance(source, len(chunk) if isinstance(chunk, bytes) else sum(map(len, chunk)))
            yield chunk
        self.finish()


def load_inputs(
    specs: list[str],
    quiet: bool = False,
    jobs: int = 1,
    *,
    window_events: int | None = None,
    marker: str | None = None,
) -> ParsedLog:
    """:func:`dnnlens.reading.read` with a progress bar on long inputs (unless ``quiet``);
    by default every event is kept (``window_events`` None), as export, diff and graph
    need."""
    from dnnlens.reading import read

    if progress_enabled(quiet):
        expansion = expand(specs)  # once: a directory's files are looked into
        with InputProgress(expansion.sources, True) as progress:
            return read(
                expansion, progress=progress, jobs=jobs, window_events=window_events, marker=marker
            )
    return read(specs, jobs=jobs, window_events=window_events, marker=marker)
