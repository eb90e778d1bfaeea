"""Opening inputs: paths, globs, directories, ``-`` for stdin, gzip by content.

This module knows nothing of oneDNN. It turns what the user typed into a list of
:class:`InputSource` and each source into physical lines (``\\n``-terminated; a ``\\r``
before the newline is dropped, a lone ``\\r`` as written by progress bars stays inside the
line). Bytes that are not UTF-8 are replaced by U+FFFD and counted.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
STDIN_NAME = "-"


class InputError(Exception):
    """A user-facing problem with one input: the message is one readable line."""


@dataclass
class InputSource:
    """One input the user named: a file path, or ``-`` for standard input."""

    path: str

    @property
    def is_stdin(self) -> bool:
        """True for standard input."""
        return self.path == STDIN_NAME


@dataclass
class ReadStats:
    """What happened while reading one source, beyond its lines."""

    gzip: bool = False
    invalid_utf8_bytes: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def expand_inputs(specs: list[str]) -> tuple[list[InputSource], list[str]]:
    """Expand paths, globs and directories into sources.

    Returns the sources and one error line per spec that names nothing readable; the
    caller decides whether those errors are fatal (they are when no source is left).
    """
    sources: list[InputSource] = []
    errors: list[str] = []
    for spec in specs:
        if spec == STDIN_NAME:
            sources.append(InputSource(STDIN_NAME))
            continue
        if os.path.isdir(spec):
            names = sorted(
                os.path.join(spec, n)
                for n in os.listdir(spec)
                if not n.startswith(".") and os.path.isfile(os.path.join(spec, n))
            )
            if not names:
                errors.append(f"{spec}: directory holds no files")
            sources.extend(InputSource(n) for n in names)
            continue
        if os.path.exists(spec):
            sources.append(InputSource(spec))
            continue
        if glob.has_magic(spec):
            matches = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            if matches:
                sources.extend(InputSource(p) for p in matches)
            else:
                errors.append(f"{spec}: no file matches this pattern")
            continue
        errors.append(f"{spec}: no such file or directory")
    return sources, errors


def _open_binary(source: InputSource) -> BinaryIO:
    if source.is_stdin:
        return sys.stdin.buffer
    try:
        return open(source.path, "rb")  # noqa: SIM115 - closed by iter_lines
    except PermissionError:
        raise InputError(f"{source.path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{source.path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{source.path}: cannot open ({exc.strerror or exc})") from None


def _peek(raw: BinaryIO, n: int) -> bytes:
    peek = getattr(raw, "peek", None)
    if peek is not None:
        return peek(n)[:n]
    return b""


CHUNK_BYTES = 1 << 20


def iter_chunks(source: InputSource, stats: ReadStats) -> Iterator[list[str]]:
    """Yield the physical lines of ``source`` in lists of about ``CHUNK_BYTES``.

    Lines keep their line end (``\n``, or ``\r\n``); consumers strip it where they look at
    the text. Gzip is recognised by its magic bytes, whatever the file is called. A truncated
    or corrupt gzip stream ends the iteration and sets ``stats.error``; the lines read
    before it are kept. Raises :class:`InputError` only if the source cannot be opened.
    """
    raw = _open_binary(source)
    if not hasattr(raw, "peek"):
        raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    binary: BinaryIO = raw
    if _peek(raw, 2) == GZIP_MAGIC:
        stats.gzip = True
        binary = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]

    def count_invalid(exc: UnicodeError) -> tuple[str, int]:
        assert isinstance(exc, UnicodeDecodeError)
        stats.invalid_utf8_bytes += exc.end - exc.start
        return ("\ufffd", exc.end)

    handler = f"dnnlens-replace-{id(stats)}"
    codecs.register_error(handler, count_invalid)
    text = io.TextIOWrapper(binary, encoding="utf-8", errors=handler, newline="\n")
    try:
        while True:
            chunk = text.readlines(CHUNK_BYTES)
            if not chunk:
                break
            yield chunk
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        what = "truncated" if isinstance(exc, EOFError) else "corrupt"
        stats.error = f"{source.path}: {what} gzip stream ({exc}); lines before it were read"
    except OSError as exc:
        stats.error = f"{source.path}: read error ({exc.strerror or exc})"
    finally:
        if not source.is_stdin:
            text.close()


def iter_lines(source: InputSource, stats: ReadStats) -> Iterator[str]:
    """Yield the physical lines of ``source`` without their line ends (see iter_chunks)."""
    for chunk in iter_chunks(source, stats):
        for line in chunk:
            yield line.rstrip("\r\n") if line.endswith("\n") else line
