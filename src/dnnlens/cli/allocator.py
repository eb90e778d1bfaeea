"""The C allocator's settings for the command's own process: freed memory kept for reuse.

Scanning a log makes and frees the same few arrays of a block's size for every block of
about 1 MiB. By default glibc gives freed memory at the top of its heap back to the system
once more than 128 KiB is free there (and serves larger requests with fresh mappings), so
every block touches new pages, and a first touch is a page fault: on the virtual machines
this project is measured on, a fault costs 3 to 4 us, and a 1M-line log took about 70,000
of them. Keeping up to :data:`TRIM_BYTES` of freed memory, growing the heap
:data:`PAD_BYTES` at a time and serving requests up to :data:`MMAP_BYTES` from the heap
makes the same run take about 40,000, for a peak about 7 MiB higher (measured with
``/usr/bin/time``: minor faults, maximum resident size). This only changes where the
allocator puts memory, never what the process computes.

The settings are made with ``mallopt`` when :func:`dnnlens.cli.main` starts, never through
the environment, so a program ``dnnlens run`` starts is not affected; worker processes
forked for reading inherit them. A user who set any of glibc's ``MALLOC_*`` variables has
chosen: then nothing is changed. Elsewhere than glibc on Linux nothing is done.
"""

from __future__ import annotations

import os
import sys

#: Freed memory at the top of the heap kept for reuse, not given back.
TRIM_BYTES = 256 << 20
#: How much more than asked the heap grows by when it must.
PAD_BYTES = 64 << 20
#: Requests up to this size come from the heap, not from a fresh mapping (glibc's upper
#: limit for the setting on 64-bit systems).
MMAP_BYTES = 32 << 20

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Make the settings of the module doc for this process; whether they were made."""
    if not sys.platform.startswith("linux"):
        return False
    if any(name.startswith("MALLOC_") for name in os.environ):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not a C library with mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = True
    for parameter, value in (
        (_M_MMAP_THRESHOLD, MMAP_BYTES),
        (_M_TRIM_THRESHOLD, TRIM_BYTES),
        (_M_TOP_PAD, PAD_BYTES),
    ):
        done = bool(mallopt(parameter, value)) and done
    return done
