"""The profiled regions of a log, from its profiler_start/stop lines: what the reader and
the linker both need to know about the markers it kept."""

from __future__ import annotations


def marker_ranges(markers: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """The ``(start, stop)`` lines of each profiled region of a log (an open one ends at the
    end of the log)."""
    ranges, start = [], None
    for line, what in markers:
        if what == "start":
            start = line
        elif start is not None:
            ranges.append((start, line))
            start = None
    if start is not None:
        ranges.append((start, 1 << 62))
    return ranges
