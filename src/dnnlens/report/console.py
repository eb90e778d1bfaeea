"""Terminal plumbing shared by commands: colour policy, ``--quiet``, progress bars.

* Colour only when the stream is a terminal and ``NO_COLOR`` is not set (any value,
  https://no-color.org).
* Progress bars only when standard error is a terminal and the user did not pass
  ``--quiet`` (:func:`progress_enabled`); the bar over the inputs being read is
  :class:`dnnlens.app.reading_progress.InputProgress` (reading is not the report's job).
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

from dnnlens.errors import say

if TYPE_CHECKING:  # rich is imported when a console or a bar is made (start-up stays light)
    from rich.console import Console


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
#: The narrowest report: ``--width`` refuses less, and a smaller ``COLUMNS`` or terminal is
#: laid out at this width (a narrower one would cut words into pieces).
MIN_WIDTH = 40


def report_width(stream: IO[Any] | None, explicit: int | None = None) -> int | None:
    """The width a report is laid out for: ``--width``, else ``COLUMNS``, else the
    terminal's own (``None``: let rich ask it), else :data:`PIPE_WIDTH`; never less than
    :data:`MIN_WIDTH` (``COLUMNS=1`` is 40, as ``--width`` allows no less)."""
    if explicit:
        return max(explicit, MIN_WIDTH)
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    if stream is not None and _isatty(stream):
        try:
            if os.get_terminal_size(stream.fileno()).columns < MIN_WIDTH:
                return MIN_WIDTH
        except (AttributeError, ValueError, OSError):
            pass
        return None
    return PIPE_WIDTH


def make_console(
    stderr: bool = False, file: IO[str] | None = None, width: int | None = None
) -> Console:
    """A rich console that follows the colour and width policy.

    ``file`` (a report written to disk) never gets colour; standard output/error get it only
    when they are terminals and ``NO_COLOR`` is unset. The width is :func:`report_width`.
    """
    from rich.console import Console

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


def note(message: str, quiet: bool = False) -> None:
    """An informational line on standard error, unless ``--quiet``."""
    if not quiet:
        say("note", message)


def error(message: str) -> None:
    """``dnnlens: error: ...`` on standard error (always shown)."""
    say("error", message)


# -- standard output as an output (``-o -``) ------------------------------------------------


#: The name of standard output as an output (``-o -``), as ``-`` is standard input.
STDOUT_NAME = "-"


def is_stdout(output: os.PathLike[str] | str | None) -> bool:
    """Whether ``output`` is ``-``: standard output."""
    return output is not None and str(output) == STDOUT_NAME


class _KeptOpen:
    """Standard output for a ``with``: closing it flushes, and standard output stays open."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()

    @property
    def closed(self) -> bool:
        return False

    def __enter__(self) -> _KeptOpen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def stdout_stream() -> IO[str]:
    """Standard output as a text file a writer may close (``-o -``)."""
    return _KeptOpen(sys.stdout)  # type: ignore[return-value]
