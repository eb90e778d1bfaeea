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

__all__ = ["HEAD_BYTES", "holds_run"]

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


def _text(head: bytes) -> bytes:
    """UTF-16 (with its byte-order mark) as UTF-8; anything else as it is."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return head.decode("utf-16", errors="replace").encode("utf-8", errors="replace")
    return head


def holds_run(path: str) -> bool:
    """True when the head of ``path`` holds a verbose line, a trace or a profiler table.

    A file that cannot be read counts as one: opening it again says what is wrong."""
    try:
        with _opened(path) as raw:
            head = raw.read(HEAD_BYTES)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        return True
    text = _text(head)
    if _VERBOSE.search(text) or _TABLE.search(text):
        return True
    start = text.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return start in (b"{", b"[") and _TRACE.search(text) is not None
