"""Whether a file found in a directory holds something dnnlens reads, by its first bytes.

A directory named on the command line stands for the runs in it, not for every file: a
README, a script or a spreadsheet beside the logs is not a run. A file is one when its head
(up to :data:`HEAD_BYTES` of text, after gzip, bzip2 or xz and a UTF-16 byte-order mark)
holds a oneDNN verbose line (marker, optional version and timestamp and component, then an
operation: the grammar's first fields, so that prose quoting ``onednn_verbose,...`` is
not one), a PyTorch profiler trace (JSON with ``traceEvents`` or ``"ph"``), or a printed
``key_averages()`` table (its ``Self CPU`` header). A file named on its own is always read.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
from typing import BinaryIO

__all__ = ["HEAD_BYTES", "head_kind", "holds_run"]

#: How much of a file's text is looked at: a program may print a while before oneDNN's first
#: line, and 8 MiB is read in milliseconds.
HEAD_BYTES = 8 << 20

_VERBOSE = re.compile(
    rb"(?:mkldnn|dnnl|onednn)_verbose,(?:v\d+,)?(?:\d+(?:\.\d+)?,)?"
    rb"(?:(?:primitive|graph|common|ukernel),)?"
    rb"(?:info|exec|create|compile|error|warn|warning|debuginfo)[,:]"
)
_TRACE = re.compile(rb'"traceEvents"|"ph"\s*:')
_TABLE = re.compile(rb"^[ \t]*Name[ \t]+Self CPU", re.M)


def _opened(path: str) -> BinaryIO:
    with open(path, "rb") as probe:
        magic = probe.read(6)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if magic[:3] == b"BZh":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if magic[:6] == b"\xfd7zXZ\x00":
        return lzma.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


#: How much is read at a time, and how much of the last piece is searched again with the
#: next (a verbose line's first fields and a table's header are shorter).
_PIECE_BYTES = 64 << 10
_OVERLAP = 512
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def _text(head: bytes) -> bytes:
    """UTF-16 (with its byte-order mark) as UTF-8; anything else as it is."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return head.decode("utf-16", errors="replace").encode("utf-8", errors="replace")
    return head


def holds_run(path: str) -> bool:
    """True when the head of ``path`` holds a verbose line, a trace or a profiler table.

    Read a piece at a time and stopped at the first sign, so that a directory of large
    logs costs a few kilobytes each. A file that cannot be read counts as one: opening it
    again says what is wrong."""
    return head_kind(path) is not None


def head_kind(path: str) -> str | None:
    """What the head of ``path`` holds: ``"log"`` (a verbose line; a file that cannot be
    read too: opening it again says what is wrong), ``"table"`` (a printed profiler table
    and no verbose line before it), ``"trace"`` (a profiler trace), or None (nothing
    dnnlens reads). What groups files into runs before they are read (``fleet build``)."""
    try:
        with _opened(path) as raw:
            return _head_kind(raw)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        return "log"


def _head_kind(raw: BinaryIO) -> str | None:
    first = raw.read(_PIECE_BYTES)
    if first[:2] in _UTF16_MARKS:  # rare: decoded whole
        return _kind(_text(first + raw.read(HEAD_BYTES - len(first))), json=None)
    json: bool | None = None  # does the text start like JSON (None: only blanks so far)
    tail, read, piece = b"", 0, first
    while piece:
        if json is None:
            start = piece.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
            json = None if not start else start in (b"{", b"[")
        # the piece with the end of the last one: a mark may straddle them
        kind = _kind(tail + piece, json=bool(json))
        if kind is not None:
            return kind
        read += len(piece)
        if read >= HEAD_BYTES:
            break
        tail = piece[-_OVERLAP:]
        piece = raw.read(min(_PIECE_BYTES, HEAD_BYTES - read))
    return None


def _kind(text: bytes, json: bool | None) -> str | None:
    """A verbose line or a table in ``text``; or a trace's keys, in a text that starts like
    JSON (``json`` None: decide from ``text`` itself)."""
    if _VERBOSE.search(text):
        return "log"
    if _TABLE.search(text):
        return "table"
    if json is None:
        json = text.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")
    return "trace" if json and _TRACE.search(text) is not None else None
