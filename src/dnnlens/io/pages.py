"""The C allocator's settings for the command's own process: freed memory kept for reuse
while reading, given back before the analysis.

Scanning a log makes and frees the same few arrays of a block's size for every block of
about 1 MiB. By default glibc gives freed memory at the top of its heap back to the system
as soon as a little is free there, so every block touches new pages, and a first touch is a
page fault: on the virtual machines this project is measured on, a fault costs 3 to 4 us,
and a 1M-line log took about 70,000 of them in one process (110,000 with two workers).
While reading, the command keeps up to :data:`READING_TRIM_BYTES` of freed memory, grows
the heap :data:`READING_PAD_BYTES` at a time and serves requests up to :data:`MMAP_BYTES`
from the heap (larger ones, the event columns, get mappings of their own that are given
back when freed). Once the inputs are read, :func:`give_back_memory` returns what is
free and keeps at most :data:`ANALYSIS_TRIM_BYTES`, so that what the reading left free does
not raise the peak of the analysis. Measured with ``/usr/bin/time`` (minor faults, maximum
resident size) in ``dnnlens/cli/allocator.py``'s commit and the README's Speed section.
This only changes where the allocator puts memory, never what the process computes.

The settings are made with ``mallopt`` in the command's process (:func:`dnnlens.cli.main`),
never through the environment, so a program ``dnnlens run`` starts is not affected; worker
processes forked for reading inherit them. A user who set any of glibc's ``MALLOC_*``
variables has chosen: then nothing is changed. Elsewhere than glibc on Linux nothing is
done.
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: Requests up to this size come from the heap, larger ones from a mapping of their own.
MMAP_BYTES = 4 << 20
#: Freed memory at the top of the heap kept for reuse while reading.
READING_TRIM_BYTES = 32 << 20
#: How much more than asked the heap grows by while reading.
READING_PAD_BYTES = 8 << 20
#: Freed memory kept at the top of the heap once the inputs are read.
ANALYSIS_TRIM_BYTES = 4 << 20

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

_libc: list[Any] = []  # the C library, once the settings were made


def keep_freed_memory() -> bool:
    """Make the reading settings of the module doc for this process; whether they were."""
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
    done = _set(libc, MMAP_BYTES, READING_TRIM_BYTES, READING_PAD_BYTES)
    if done:
        _libc.append(libc)
    return done


def give_back_memory() -> bool:
    """The inputs are read: give back what is free, keep less from here on (nothing when
    :func:`keep_freed_memory` made no settings); whether it was done."""
    if not _libc:
        return False
    libc = _libc[0]
    done = _set(libc, MMAP_BYTES, ANALYSIS_TRIM_BYTES, 0)
    libc.malloc_trim(0)
    return done


def _set(libc: Any, mmap_bytes: int, trim_bytes: int, pad_bytes: int) -> bool:
    done = True
    for parameter, value in (
        (_M_MMAP_THRESHOLD, mmap_bytes),
        (_M_TRIM_THRESHOLD, trim_bytes),
        (_M_TOP_PAD, pad_bytes),
    ):
        done = bool(libc.mallopt(parameter, value)) and done
    return done
