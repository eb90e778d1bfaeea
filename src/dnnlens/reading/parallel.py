"""Parallel scanning: plain log files, cut into byte ranges at line starts, across cores.

Each worker process scans ranges with a copy of this process's scanner as it was once the
first range was scanned here (handed to the worker at its start, pickled: its records,
reasons and memos, no lark parser), so every worker starts knowing the lines
seen so far and no worker parses a distinct line that this process parsed. It sends back
the range's :class:`InputScan`, the records and reasons it learnt since its last range,
what its table finder found, and, when the reading streams, the statistics of the range's
events with only its last events: what travels between processes is bounded by the
window, not by the range. The front door merges the parts in input order
(:mod:`dnnlens.reading.merge` shifts line numbers and maps ids), so the result is the one
a single scanner gives (``tests/test_parallel.py`` checks that on real logs, under every
start method). Ranges are at most :data:`RANGE_BYTES`, as many per file as a multiple of
the workers, and at most twice as many as there are workers are under way, so memory
stays bounded however large the files.

Workers start by :data:`START_METHOD`, the one argument that differs between platforms:
the worker gets what it needs as arguments, never from this process's memory, so fork,
spawn and forkserver run the same code. The number of processes is bounded by the CPUs
this process may use; :func:`choose_jobs` picks it when the user did not (several only
for inputs large enough to pay for them, and no more than the CPUs other work left idle).
Workers ignore SIGINT (the terminal sends it to them too: the parent decides) and are
killed when reading stops early (a signal, an error), so none outlives the command.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import pickle
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from dnnlens.io import pages
from dnnlens.io.idle_cpus import idle_since_start
from dnnlens.io.inputs import InputSource, ReadStats, open_range_blocks, splittable
from dnnlens.io.signals import StopCheck
from dnnlens.parsers.bulk import BulkScan
from dnnlens.parsers.records import LineRecord
from dnnlens.parsers.scanner import InputScan, Scanner
from dnnlens.parsers.torch_table import TableFinder
from dnnlens.reading.stream import PART_BYTES, Collector, FoldedPart

if TYPE_CHECKING:  # the pool is made only when workers start
    from multiprocessing.pool import AsyncResult, Pool

#: Files smaller than this are one range (a range costs a process's time to start).
SPLIT_MIN_BYTES = 32 << 20
#: The largest range whose every event is sent back: what a worker holds at a time.
RANGE_BYTES = 64 << 20
#: The largest range whose events a worker folds (it holds a part and the window at a
#: time; smaller ranges than this are cut for the workers to end together).
FOLDED_RANGE_BYTES = 1 << 30
#: The first range of a split file, scanned here before the workers start (they start
#: with the lines it taught the scanner).
WARM_BYTES = 2 << 20
#: Plain files that add up to this are read in several processes when ``-j`` is not given.
#: While the workers scan, this process imports what the report needs (pandas, the
#: analysis), so even one range pays once the scan takes longer than that import and the
#: workers' start (the measurements are in ``docs/speed.md``).
AUTO_MIN_BYTES = 32 << 20
#: Bytes read at a time when looking for the line start after a cut.
_SEARCH_BYTES = 1 << 20
#: How often a wait for a worker looks at the stop request.
_POLL_SECONDS = 0.1
#: How worker processes start. Fork on Linux: a forked worker has the modules this
#: process imported, where a spawned one imports numpy, Arrow, lark and the scanner again
#: before its first range (``docs/speed.md``, "Worker start"). Elsewhere the platform's
#: default (spawn on macOS, where fork is unsafe, and on Windows; None). Tests run the
#: workers by every method.
START_METHOD: str | None = "fork" if sys.platform.startswith("linux") else None


@dataclass
class Task:
    """One range to scan: bytes ``[start, end)`` of ``path`` (line starts). ``keep``: fold
    the range's events, keeping its last ``keep`` (None: keep them all), in parts of
    ``part_bytes`` of text (decided here, as everything a worker does)."""

    path: str
    start: int
    end: int
    keep: int | None = None
    part_bytes: int = PART_BYTES


@dataclass
class Part:
    """What scanning one range gave (see the module doc)."""

    scan: InputScan
    #: records and reasons the scanner learnt since its last part, in id order (None: it is
    #: this process's own scanner)
    records: list[LineRecord] | None
    reasons: list[str] | None
    stats: ReadStats
    #: the worker process that scanned it (0: this process, with its own scanner; None:
    #: elsewhere, with a scanner of its own, see :func:`scan_range`)
    worker: int | None
    #: the tables and profiler markers of the range, found from its first line on as if
    #: no table were open there (:meth:`TableFinder.absorb` puts them in place)
    finder: TableFinder
    folded: FoldedPart | None = None


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


def idle_cores() -> int:
    """CPUs this process may use that other work leaves idle: a worker on a busy CPU only
    adds the cost of parallel reading. Measured from the command's start to now
    (:mod:`dnnlens.io.idle_cpus`: the kernel's CPU times, less this process's own), so that
    this user's earlier runs, which the load average counts for a minute, do not make an
    idle machine look busy; a CPU counts as idle when others left at least half of it.
    Without ``/proc/stat`` (not Linux) there is no such measure, and the load average
    would count those earlier runs: one process, unless ``-j`` says otherwise."""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:  # not Linux: no /proc/stat either
        return 1
    idle = idle_since_start(cpus)
    if idle is None:
        return 1
    return max(1, min(len(cpus), math.floor(idle + 0.5)))


def _starts_like_trace(path: str) -> bool:
    """A JSON trace is read by the trace reader, in this process, whatever its size (a
    sparse file of 2 GiB is not a large log)."""
    from dnnlens.parsers.torch_trace import starts_like_json

    try:
        with open(path, "rb") as f:
            return starts_like_json(f.read(4096))
    except OSError:
        return False


def choose_jobs(sources: Sequence[InputSource]) -> int:
    """The processes to read ``sources`` with when the user did not say: one per
    :data:`AUTO_MIN_BYTES` of plain files (several only when that pays: starting and
    merging workers costs about what scanning a few MiB does), no more than the CPUs other
    work leaves idle (:func:`idle_cores`, measured only when the size asks for several)."""
    total = 0
    for source in sources:
        if source.is_stdin:
            continue
        try:
            path = source.path
            if os.path.isfile(path) and splittable(path) and not _starts_like_trace(path):
                total += os.path.getsize(path)
        except OSError:
            continue
    wanted = total // AUTO_MIN_BYTES + (1 if total >= AUTO_MIN_BYTES else 0)
    if wanted < 2:
        return 1
    return max(1, min(wanted, idle_cores()))


def ranges(path: str, jobs: int, folded: bool = False) -> list[tuple[int, int]] | None:
    """Byte ranges, cut at line starts, that scan ``path`` in workers; None when the file
    must be read in this process (not a regular file, compressed, UTF-16).

    A large file starts with a small range (:data:`WARM_BYTES`); the rest is cut into a
    multiple of ``jobs`` ranges of at most :data:`RANGE_BYTES` (:data:`FOLDED_RANGE_BYTES`
    and at least two per worker when the workers fold their events), so that the workers
    end together.
    """
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
    with open(path, "rb") as f:
        warm = _line_start(f, min(WARM_BYTES, size // (2 * jobs + 2)), size)
    if warm >= size:
        return [(0, size)]
    most = FOLDED_RANGE_BYTES if folded else RANGE_BYTES
    parts = jobs * max(2 if folded else 1, -(-(size - warm) // (jobs * most)))
    return [(0, warm), *line_ranges(path, size, parts, begin=warm)]


def line_ranges(path: str, size: int, parts: int, begin: int = 0) -> list[tuple[int, int]]:
    """``parts`` byte ranges of about equal size covering bytes ``begin``..``size`` of
    ``path`` (``begin`` a line start), each cut at a line start."""
    cuts = [begin]
    with open(path, "rb") as f:
        for k in range(1, parts):
            pos = _line_start(f, max(begin + (size - begin) * k // parts, cuts[-1]), size)
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


#: In a worker: its scanner (given at its start) and how many of its records and reasons
#: the parent knows.
_WORKER: dict[str, Any] = {}


def _scan(task: Task, scanner: Scanner) -> tuple[InputScan, ReadStats, TableFinder]:
    stats = ReadStats()
    finder = TableFinder(task.path)
    scan = InputScan(task.path)
    bulk = BulkScan(scanner, scan, stats, finder)
    for block in open_range_blocks(task.path, task.start, task.end, stats):
        bulk.feed(block)
    scanner.finish_scan(scan)
    return scan, stats, finder


def _scan_folded(
    task: Task, scanner: Scanner
) -> tuple[InputScan, ReadStats, TableFinder, FoldedPart]:
    """Scan a range as one process streams an input: in parts of ``task.part_bytes`` of
    text, each folded by a collector that keeps the last ``task.keep`` events."""
    assert task.keep
    stats = ReadStats()
    finder = TableFinder(task.path)
    collector = Collector(scanner, task.keep)
    collector.stream_now()
    collector.begin(task.path)
    scan, size = InputScan(task.path), 0
    bulk = BulkScan(scanner, scan, stats, finder)
    for block in open_range_blocks(task.path, task.start, task.end, stats):
        bulk.feed(block)
        size += len(block)
        if size >= task.part_bytes:
            scanner.finish_scan(scan)
            collector.add(scan)
            scan, size = InputScan(task.path), 0
            bulk = BulkScan(scanner, scan, stats, finder)
    scanner.finish_scan(scan)
    collector.add(scan)
    folded = collector.folded()
    return collector.scans[0], stats, finder, folded


def scan_task(task: Task, scanner: Scanner | None = None) -> Part:
    """Scan one range: with ``scanner`` here, else in a worker with the one it was given."""
    own = scanner if scanner is not None else _WORKER["scanner"]
    folded = None
    if task.keep:
        scan, stats, finder, folded = _scan_folded(task, own)
    else:
        scan, stats, finder = _scan(task, own)
    if scanner is not None:
        return Part(scan, None, None, stats, 0, finder, folded)
    sent_records, sent_reasons = _WORKER["sent"]
    records, reasons = own.records[sent_records:], own.reasons[sent_reasons:]
    _WORKER["sent"] = (len(own.records), len(own.reasons))
    return Part(scan, records, reasons, stats, os.getpid(), finder, folded)


def scan_range(path: str, start: int, end: int) -> Part:
    """The scan of bytes ``start``..``end`` of ``path`` (cut at line starts) with a fresh
    scanner, every event kept: one byte range scanned elsewhere (another machine's task),
    for ``read(..., parts=...)``."""
    scanner = Scanner()
    scan, stats, finder = _scan(Task(path, start, end), scanner)
    return Part(scan, scanner.records, scanner.reasons, stats, None, finder)


def _worker_init(scanner_state: bytes, tuned_pages: bool) -> None:
    """A worker's start: signals, the parent's allocator settings (``tuned_pages``: the
    parent reads with :func:`pages.reading_pages` on) and its scanner, unpickled from
    ``scanner_state`` (the same bytes for every worker, so each knows the same records and
    reasons as the parent's :attr:`Workers.inherited` says, a worker started later to
    replace one included)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGHUP"):  # stops the main process like SIGTERM, ends a worker
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if tuned_pages and pages.allow():  # held until the worker ends
        _WORKER["pages"] = contextlib.ExitStack()
        _WORKER["pages"].enter_context(pages.reading_pages())
    scanner = pickle.loads(scanner_state)
    _WORKER["scanner"] = scanner
    _WORKER["sent"] = (len(scanner.records), len(scanner.reasons))


class Workers:
    """``jobs`` processes scanning ``tasks``; :meth:`next_part` gives their parts in order.

    The first task, when small, is scanned here before the workers start, with
    ``scanner``; each worker starts with a copy of it. ``method``: how the workers start
    (None: :data:`START_METHOD`). ``meanwhile`` is called once,
    here, the first time a worker's part is asked for (work of this process that needs no
    part: it then costs no time of its own while the workers scan). Use as a context
    manager: on leaving it early (a stop, an error) the workers are killed.
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        jobs: int,
        stop: StopCheck | None,
        scanner: Scanner,
        meanwhile: Callable[[], None] | None = None,
        method: str | None = None,
    ) -> None:
        self._meanwhile = meanwhile
        self._method = method
        self._tasks = iter(tasks)
        self._first = tasks[0] if tasks else None
        self._jobs = jobs
        self._stop = stop
        self._scanner = scanner
        self._pending: deque[AsyncResult[Any] | Part] = deque()
        self._pool: Pool | None = None
        self._done = False
        #: per worker: how many records and reasons it started with (known here already)
        self.inherited = (0, 0)

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
                if task is self._first and task.end - task.start <= 2 * WARM_BYTES:
                    self._pending.append(scan_task(task, self._scanner))
                    continue
                # what every worker starts with, a worker started later to replace one too
                state = pickle.dumps(self._scanner, pickle.HIGHEST_PROTOCOL)
                self.inherited = (len(self._scanner.records), len(self._scanner.reasons))
                method = self._method or START_METHOD
                self._pool = multiprocessing.get_context(method).Pool(
                    self._jobs,
                    initializer=_worker_init,
                    initargs=(state, pages.reading_tuned()),
                )
            self._pending.append(self._pool.apply_async(scan_task, (task,)))

    def next_part(self) -> Part | None:
        """The part of the next task, in task order; None when reading was asked to stop."""
        self._submit()
        result = self._pending.popleft()
        if isinstance(result, Part):
            self._submit()
            return result
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
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


def tasks_of(
    plan: Sequence[tuple[str, list[tuple[int, int]] | None]], keep: int | None = None
) -> Iterator[Task]:
    """The tasks of a plan, in input order (``keep``: see :class:`Task`)."""
    for path, spans in plan:
        for start, end in spans or ():
            yield Task(path, start, end, keep, PART_BYTES)
