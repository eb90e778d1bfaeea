"""Where a report goes: a file named with ``-o``, or standard output.

One place for the policy every command follows (docs/input-policy.md, "Output"):

* text reports are written as they are; a terminal report written to a file gets no colour
  and a fixed width; on standard output it gets colour only on a terminal without
  ``NO_COLOR`` (``dnnlens.report.console``);
* an output that is one of the run's inputs is refused before anything is written
  (:func:`refuse_input`): the report would replace the log it came from;
* a failure to *open* the output names the file (``OSError.filename``: a usage error, exit
  2); a failure to *write* it once open (disk full, I/O error) is :class:`OutputError`
  (exit 4, :data:`dnnlens.errors.EXIT_OUTPUT`);
* a pipe's reader that closes before it has read everything (``| head``) is found by
  :func:`reader_took_everything`, so the run ends with 141 rather than 0;
* ``-o -`` is standard output, for every command whose ``-o`` names a file
  (:func:`is_stdout`): a terminal report is then exactly the report without ``-o``, and a
  page, a trace or a batch is written to standard output; an output that is a directory of
  files (a dataset) cannot be standard output (:func:`refuse_stdout`).

The renderers (:mod:`dnnlens.report.renderers`) call this module to write what they make;
it imports none of them.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dnnlens.errors import OutputError, UsageError
from dnnlens.report.console import is_stdout, stdout_stream

if TYPE_CHECKING:
    from rich.console import Console

FILE_WIDTH = 160
#: How long a pipe's reader is given to read the rest of the output once it is written.
READER_GRACE_SECONDS = 2.0


def refuse_stdout(output: Path | str | None, what: str) -> None:
    """:class:`~dnnlens.errors.UsageError` when an output that is ``what`` (a directory
    of files) is given as ``-o -``."""
    if is_stdout(output):
        raise UsageError(f"-o -: {what}, so it cannot be standard output; name a directory")


def output_name(output: Path | str | None) -> str:
    """How notes name an output: its path, or ``standard output``."""
    return "standard output" if output is None or is_stdout(output) else str(output)


def input_paths(log: Any) -> list[str]:
    """The files a parsed log was read from: its inputs and its profiler traces."""
    paths = [s.path for s in getattr(log, "scans", [])]
    framework = getattr(log, "framework", None)
    paths += [str(getattr(t, "path", "")) for t in getattr(framework, "traces", None) or []]
    return [p for p in paths if p and p != "-"]


def refuse_input(output: Path | str | None, inputs: Iterable[str]) -> None:
    """:class:`~dnnlens.errors.UsageError` when ``output`` is one of ``inputs`` (the same
    file, or a link to it)."""
    if output is None or is_stdout(output):
        return
    target = Path(output)
    if not target.exists():
        return
    for path in inputs:
        try:
            same = os.path.samefile(target, path)
        except OSError:
            continue
        if same:
            raise UsageError(f"{output}: is an input of this run; the output would replace it")


@contextmanager
def open_output(path: Path) -> Iterator[IO[str]]:
    """``path`` opened for text; a write or close that fails is :class:`OutputError`.
    ``-`` is standard output."""
    # a failure to open names the file: a usage error
    fh = stdout_stream() if is_stdout(path) else path.open("w", encoding="utf-8")
    try:
        yield fh
        fh.close()  # the last write happens here: a full disk is found here
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OutputError(f"{output_name(path)}: cannot write ({exc.strerror or exc})") from None
    finally:
        if not fh.closed:
            try:
                fh.close()
            except OSError:
                pass


def emit_text(text: str, output: Path | None) -> None:
    """Write ``text`` to ``output``, or to standard output when there is none (or ``-``)."""
    if output is not None and not is_stdout(output):
        with open_output(output) as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def report_console(output: Path | None, width: int | None = None) -> Console:
    """A console for a terminal report: the file ``output``, or standard output.

    The file is left open; :func:`~dnnlens.report.renderers.base.render_analysis` uses
    :func:`open_output` instead, which closes it and reports a failed write.
    """
    from dnnlens.report.console import make_console

    if output is not None and not is_stdout(output):
        return make_console(file=output.open("w", encoding="utf-8"), width=width or FILE_WIDTH)
    return make_console(width=width)


# -- standard output ------------------------------------------------------------------------


class _ClosedRaw(io.RawIOBase):
    """What standard output is when the shell closed it (``>&-``): every write fails."""

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        raise OSError(9, "standard output is closed")


class ClosedStdout(io.TextIOWrapper):
    """A stand-in for a closed standard output (``sys.stdout is None``): writing to it is
    an :class:`OSError` (EBADF), which the command line reports as an output error."""

    def __init__(self) -> None:
        super().__init__(io.BufferedWriter(_ClosedRaw()), encoding="utf-8", write_through=True)


def reader_took_everything(stream: Any = None) -> bool:
    """After the last write: ``False`` when standard output is a pipe whose reader closed it
    with output still unread (``| head``), ``True`` otherwise.

    Waits up to :data:`READER_GRACE_SECONDS` for the reader (a reader that is still reading
    then is given the benefit of the doubt). Anything but a pipe, or a platform without
    ``FIONREAD``, is ``True``.
    """
    try:
        import array
        import fcntl
        import select
        import termios

        fd = (stream if stream is not None else sys.stdout).fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return True

        def unread() -> int:
            count = array.array("i", [0])
            fcntl.ioctl(fd, termios.FIONREAD, count)
            return count[0]

        poller = select.poll()
        poller.register(fd, 0)  # POLLERR/POLLHUP are reported whatever is asked for
        deadline = time.monotonic() + READER_GRACE_SECONDS
        while unread() > 0:
            if poller.poll(20):  # the reader is gone
                return unread() == 0
            if time.monotonic() > deadline:
                return True
        return True
    except (AttributeError, ImportError, OSError, ValueError, io.UnsupportedOperation):
        return True
