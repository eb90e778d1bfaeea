"""Parallel scanning: plain log files, cut into byte ranges at line starts, across cores.

Each worker process scans one range with its own :class:`Scanner` and sends back the
range's :class:`InputScan` with its records and reasons; the front door merges the parts in
input order (:func:`dnnlens.reading.merge.append_scan` shifts line numbers and maps ids), so
the result is the one a single scanner gives (``tests/test_parallel.py`` checks that on real
logs). Ranges are at most :data:`RANGE_BYTES`, and at most twice as many as there are
workers are under way, so memory stays bounded however large the files.

The number of processes is bounded by the CPUs this process may use. Workers ignore SIGINT
(the terminal sends it to them too: the parent decides) and are killed when reading stops
early (a signal, an error), so none outlives the command.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Iterator, Sequence
from multiprocessing import get_context
from multiprocessing.pool import AsyncResult, Pool
from typing import Any, BinaryIO

from dnnlens.io.inputs import ReadStats, open_range_blocks, splittable
from dnnlens.io.signals import StopCheck
from dnnlens.parsers import bulk
from dnnlens.parsers.records import LineRecord
from dnnlens.parsers.scanner import InputScan, Scanner

#: Files smaller than this are one range (a range costs a process's time to start).
SPLIT_MIN_BYTES = 32 << 20
#: The largest range: what one worker holds and sends back at a time.
RANGE_BYTES = 64 << 20
#: Bytes read at a time when looking for the line start after a cut.
_SEARCH_BYTES = 1 << 20
#: How often a wait for a worker looks at the stop request.
_POLL_SECONDS = 0.1

#: what a worker sends back for one range
Part = tuple[InputScan, list[LineRecord], list[str], ReadStats]
Task = tuple[str, int, int]  # (path, start, end)


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def bounded_jobs(jobs: int) -> int:
    """``-j``: 0 for one process per CPU; more than there are CPUs is that many."""
    cores = default_jobs()
    return cores if jobs <= 0 else max(1, min(jobs, cores))


def ranges(path: str, jobs: int) -> list[tuple[int, int]] | None:
    """Byte ranges, cut at line starts, that scan ``path`` in workers; None when the file
    must be read in this process (not a regular file, compressed, UTF-16)."""
    try:
        if not os.path.isfile(path):
            return None
        size = os.path.getsize(path)
    except OSError:
        return None
    if not splittable(path):
        return None
    if size < SPLIT_MIN_BYTES:
        return [(0, size)]
    return line_ranges(path, size, max(jobs, -(-size // RANGE_BYTES)))


def line_ranges(path: str, size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges of about equal size covering ``path`` (``size`` bytes), each cut
    at a line start."""
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            pos = _line_start(f, max(size * k // parts, cuts[-1]), size)
            if pos >= size:
                break  # no line end after this cut: the rest is one range
            if pos > cuts[-1]:
                cuts.append(pos)
    cuts.append(size)
    return list(zip(cuts, cuts[1:], strict=False))


def _line_start(f: BinaryIO, pos: int, size: int) -> int:
    """The first line start after ``pos`` (``size`` when there is none), reading
    :data:`_SEARCH_BYTES` at a time: a file without line ends is not read into memory."""
    f.seek(pos)
    while pos < size:
        chunk = f.read(_SEARCH_BYTES)
        if not chunk:
            break
        j = chunk.find(b"\n")
        if j >= 0:
            return pos + j + 1
        pos += len(chunk)
    return size


def scan_range(path: str, start: int, end: int) -> Part:
    """The scan of bytes ``start``..``end`` of ``path`` (cut at line starts), in a fresh
    scanner: what a worker, a Dask task or this process returns for one byte range."""
    scanner = Scanner()
    stats = ReadStats()
    scan = bulk.scan_blocks(scanner, path, open_range_blocks(path, start, end, stats), stats)
    return scan, scanner.records, scanner.reasons, stats


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Workers:
    """``jobs`` processes scanning ``tasks``; :meth:`next_part` gives their parts in order.

    Use as a context manager: on leaving it early (a stop, an error) the workers are killed.
    """

    def __init__(self, tasks: Sequence[Task], jobs: int, stop: StopCheck | None) -> None:
        self._tasks = iter(tasks)
        self._jobs = jobs
        self._stop = stop
        self._pending: deque[AsyncResult[Any]] = deque()
        self._pool: Pool | None = None
        self._done = False

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is None:
            return
        if self._done and exc[0] is None:
            self._pool.close()
        else:
            self._pool.terminate()
        self._pool.join()
        self._pool = None

    def _submit(self) -> None:
        while len(self._pending) < 2 * self._jobs:
            task = next(self._tasks, None)
            if task is None:
                return
            if self._pool is None:
                self._pool = get_context("fork").Pool(self._jobs, initializer=_worker_init)
            self._pending.append(self._pool.apply_async(scan_range, task))

    def next_part(self) -> Part | None:
        """The part of the next task, in task order; None when reading was asked to stop."""
        self._submit()
        result = self._pending.popleft()
        while not result.ready():
            if self._stop:
                return None
            result.wait(_POLL_SECONDS)
        self._submit()
        if not self._pending:
            self._done = True
        return result.get()

    def stopped(self) -> bool:
        """Whether reading was asked to stop."""
        return bool(self._stop)


def tasks_of(plan: Sequence[tuple[str, list[tuple[int, int]] | None]]) -> Iterator[Task]:
    """The tasks of a plan, in input order."""
    for path, spans in plan:
        for start, end in spans or ():
            yield path, start, end
