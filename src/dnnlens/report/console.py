"""Terminal plumbing shared by commands: colour policy, ``--quiet``, progress bars.

* Colour only when the stream is a terminal and ``NO_COLOR`` is not set (any value,
  https://no-color.org).
* Progress bars (rich.progress over the bytes read) only on long inputs, when standard error
  is a terminal and the user did not pass ``--quiet``. They are transient: nothing is left
  on the screen once the input is read, and nothing is ever written to standard output.
* :func:`load_inputs` is :func:`dnnlens.reading.load` with a progress bar (see its docstring
  for the hook ``load`` needs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from dnnlens.errors import say
from dnnlens.io.inputs import GZIP_MAGIC, InputSource, expand_inputs
from dnnlens.model import ParsedLog

_Chunk = TypeVar("_Chunk", bytes, list[str])

#: Inputs smaller than this never get a bar (it would flash for a fraction of a second).
PROGRESS_MIN_BYTES = 32 << 20


def color_allowed(stream: IO[Any] | None = None) -> bool:
    """Whether colour may be written to ``stream`` (default standard output)."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


#: Width of a report on a pipe or in a file when neither ``--width`` nor ``COLUMNS`` says.
PIPE_WIDTH = 100


def report_width(stream: IO[Any] | None, explicit: int | None = None) -> int | None:
    """The width a report is laid out for: ``--width``, else ``COLUMNS``, else the
    terminal's own (``None``: let rich ask it), else :data:`PIPE_WIDTH`."""
    if explicit:
        return explicit
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if stream is not None and _isatty(stream):
        return None
    return PIPE_WIDTH


def make_console(
    stderr: bool = False, file: IO[str] | None = None, width: int | None = None
) -> Console:
    """A rich console that follows the colour and width policy.

    ``file`` (a report written to disk) never gets colour; standard output/error get it only
    when they are terminals and ``NO_COLOR`` is unset. The width is :func:`report_width`.
    """
    if file is not None:
        return Console(
            file=file, no_color=True, color_system=None, width=width or PIPE_WIDTH,
            highlight=False, soft_wrap=False,
        )  # fmt: skip
    stream = sys.stderr if stderr else sys.stdout
    chosen = report_width(stream, width)
    if color_allowed(stream):
        return Console(stderr=stderr, width=chosen, highlight=False)
    return Console(stderr=stderr, no_color=True, color_system=None, highlight=False, width=chosen)


def _isatty(stream: IO[Any]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_enabled(quiet: bool) -> bool:
    """Progress bars are shown when not ``--quiet`` and standard error is a terminal."""
    return not quiet and _isatty(sys.stderr)


def _size(source: InputSource) -> tuple[int | None, bool]:
    """``(bytes, gzip)`` of a file source; ``None`` bytes for stdin or unreadable files."""
    if source.is_stdin:
        return None, False
    try:
        size = os.path.getsize(source.path)
        with open(source.path, "rb") as fh:
            magic = fh.read(2)
    except OSError:
        return None, False
    return size, magic == GZIP_MAGIC


class InputProgress:
    """A transient progress bar over the bytes of the inputs being read.

    Use as a context manager; :meth:`track` wraps a chunk iterator of one source. When the
    bar is disabled every method is a no-op, so callers never branch on it.
    """

    def __init__(
        self, sources: list[InputSource], enabled: bool, min_bytes: int = PROGRESS_MIN_BYTES
    ) -> None:
        self.sizes = {s.path: _size(s) for s in sources}
        total = sum(size or 0 for size, _ in self.sizes.values())
        unknown = any(size is None for size, _ in self.sizes.values())
        self.enabled = enabled and (unknown or total >= min_bytes)
        self._progress: Progress | None = None

    def __enter__(self) -> InputProgress:
        if self.enabled:
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

    def track(self, source: InputSource, chunks: Iterable[_Chunk]) -> Iterator[_Chunk]:
        """Yield ``chunks`` unchanged, advancing the bar by the bytes (characters) of each.

        A chunk is a block of bytes or a list of text lines.
        """
        if self._progress is None:
            yield from chunks
            return
        size, gz = self.sizes.get(source.path, (None, False))
        # gzip: the file size is compressed, the text is not, so the total is unknown.
        total = None if gz else size
        name = "stdin" if source.is_stdin else Path(source.path).name
        task = self._progress.add_task(name, total=total)
        advance: Callable[..., None] = self._progress.advance
        for chunk in chunks:
            advance(task, len(chunk) if isinstance(chunk, bytes) else sum(map(len, chunk)))
            yield chunk
        self._progress.remove_task(task)


def load_inputs(specs: list[str], quiet: bool = False, jobs: int = 1) -> ParsedLog:
    """:func:`dnnlens.reading.load` with a progress bar on long inputs (unless ``quiet``)."""
    from dnnlens.reading import load

    if jobs == 1 and progress_enabled(quiet):
        sources, _ = expand_inputs(specs)
        with InputProgress(sources, True) as progress:
            return load(specs, progress=progress)
    return load(specs, jobs=jobs)


def note(message: str, quiet: bool = False) -> None:
    """An informational line on standard error, unless ``--quiet``."""
    if not quiet:
        say("note", message)


def error(message: str) -> None:
    """``dnnlens: error: ...`` on standard error (always shown)."""
    say("error", message)
