"""The C allocator's settings for a dnnlens command's process: freed memory kept for reuse
while inputs are read, given back once they are.

Scanning a log makes and frees the same few arrays of a block's size for every block of
about 1 MiB. By default glibc gives freed memory at the top of its heap back to the system
as soon as a little is free there, so every block touches new pages, and a first touch is a
page fault, and on virtual machines a fault is dear (the counts are in ``docs/speed.md``).
While :func:`reading_pages` is open, the process keeps up to :data:`READING_TRIM_BYTES` of
freed memory, grows the heap :data:`READING_PAD_BYTES` at a time and serves requests up to
:data:`MMAP_BYTES` from the heap (larger ones, the event columns, get mappings of their own
that are given back when freed). When it closes, what is free is given back and at most
:data:`TRIM_BYTES` kept from then on, so that what reading left free does not raise the
peak of the analysis. This only changes where the allocator puts
memory, never what the process computes.

Nothing changes until :func:`allow` is called, which the command line's entry point does
(never a library caller's process); worker processes started for reading make the same
settings (:func:`reading_tuned` says whether to). The settings are made with ``mallopt``,
never through the environment, so a program ``dnnlens run`` starts is not affected. A
user who set any of glibc's ``MALLOC_*`` variables has chosen: then nothing is changed.
Elsewhere than glibc on Linux nothing is done.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

#: Requests up to this size come from the heap, larger ones from a mapping of their own.
MMAP_BYTES = 4 << 20
#: Freed memory at the top of the heap kept for reuse while inputs are read.
READING_TRIM_BYTES = 32 << 20
#: How much more than asked the heap grows by while inputs are read.
READING_PAD_BYTES = 8 << 20
#: Freed memory kept at the top of the heap otherwise.
TRIM_BYTES = 4 << 20

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

_libc: list[Any] = []  # the C library, once allow() made the settings
_reading: list[bool] = []  # one entry per reading_pages() open with its settings made


def allow() -> bool:
    """Let this process tune its allocator (see the module doc); whether it can."""
    if _libc:
        return True
    if not sys.platform.startswith("linux"):
        return False
    if any(name.startswith("MALLOC_") for name in os.environ):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):  # not a C library with mallopt and malloc_trim
        return False
    if not _set(libc, TRIM_BYTES, 0):
        return False
    _libc.append(libc)
    return True


@contextlib.contextmanager
def reading_pages() -> Iterator[bool]:
    """Freed memory kept for reuse inside, given back on leaving (nothing unless
    :func:`allow` was called); gives whether the settings are made."""
    if not _libc:
        yield False
        return
    libc = _libc[0]
    _set(libc, READING_TRIM_BYTES, READING_PAD_BYTES)
    _reading.append(True)
    try:
        yield True
    finally:
        _reading.pop()
        _set(libc, TRIM_BYTES, 0)
        libc.malloc_trim(0)


def reading_tuned() -> bool:
    """Whether :func:`reading_pages` holds its settings now in this process."""
    return bool(_reading)


def _set(libc: Any, trim_bytes: int, pad_bytes: int) -> bool:
    done = True
    for parameter, value in (
        (_M_MMAP_THRESHOLD, MMAP_BYTES),
        (_M_TRIM_THRESHOLD, trim_bytes),
        (_M_TOP_PAD, pad_bytes),
    ):
        done = bool(libc.mallopt(parameter, value)) and done
    return done
