"""The one front door for reading: :func:`read` turns what the user named into a ParsedLog.

It chooses how to read, so that callers never do:

* **bulk**: every event kept, for inputs of ordinary size;
* **streamed**: once the decompressed text read passes a threshold, events are folded into
  exact per-record statistics and only a window of the last ones is kept
  (:mod:`dnnlens.reading.stream`); a gzip of a few MiB holding GiB of lines streams too;
* **live**: pipes, FIFOs, process substitution and standard input are read as their bytes
  arrive: copied unchanged to ``tee`` and ``copy_to`` at once, scanned in batches, and
  offered as snapshots to ``on_snapshot`` a few times a second;
* **parallel** (``jobs`` > 1): plain files are cut into byte ranges scanned by worker
  processes (:mod:`dnnlens.reading.parallel`); other inputs are read here, in order.

Every input goes through the same decoder (:class:`dnnlens.io.inputs.Decoder`), so a pipe is
read exactly like a file, and through the same merge (:mod:`dnnlens.reading.merge`).
``stop`` (a :class:`~dnnlens.io.signals.StopRequest`, or anything whose truth says "stop
now") is looked at between blocks: reading then ends early and returns what was read.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np

from dnnlens.io.inputs import (
    Decoder,
    Expansion,
    InputError,
    InputSource,
    LineBlocks,
    RawInput,
    ReadStats,
    decode_line,
    display_path,
    expand,
    note_cut_lines,
    open_input,
    open_range_blocks,
)
from dnnlens.io.pages import reading_pages
from dnnlens.io.progress import NoProgress, Progress
from dnnlens.io.signals import StopCheck
from dnnlens.model import ParsedLog
from dnnlens.parsers.bulk import BulkScan
from dnnlens.parsers.linear_regex import PatternError, compile_linear
from dnnlens.parsers.scanner import InputScan, Scanner
from dnnlens.parsers.torch_table import TableFinder
from dnnlens.parsers.torch_trace import FrameworkReader, parse_trace_stream, starts_like_json
from dnnlens.reading import parallel
from dnnlens.reading.stream import DEFAULT_WINDOW_EVENTS, PART_BYTES, Collector, stream_min
from dnnlens.reading.tables import keep_linkable_tables
from dnnlens.textsafe import path_text

#: Lines of a slow stream are scanned at least this often.
BATCH_SECONDS = 0.25
#: Snapshots are offered at most this often.
SNAPSHOT_SECONDS = 0.5
#: How long a wait for a stream's next bytes lasts before the stop request is looked at.
POLL_SECONDS = 0.1
#: Raw bytes asked for per read.
READ_BYTES = 1 << 20

Snapshot = Callable[[ParsedLog], None]


def read(
    specs: Sequence[str] | Expansion,
    *,
    jobs: int | None = 1,
    window_events: int | None = DEFAULT_WINDOW_EVENTS,
    progress: Progress | None = None,
    stop: StopCheck | None = None,
    tee: BinaryIO | None = None,
    copy_to: BinaryIO | None = None,
    on_snapshot: Snapshot | None = None,
    stdin: BinaryIO | None = None,
    stdin_name: str = "-",
    parts: Mapping[str, Sequence[tuple[parallel.Part, int]]] | None = None,
    meanwhile: Callable[[], None] | None = None,
    marker: str | None = None,
) -> ParsedLog:
    """Read every input named by ``specs`` (paths, globs, directories, ``-``), or by the
    :class:`~dnnlens.io.inputs.Expansion` the caller made of them already.

    ``window_events``: the events kept once the inputs are too large to keep them all (None
    keeps every event whatever the size). ``jobs``: processes scanning plain files (bounded
    by the CPUs; 0 is one per CPU; None: as many as pay, see ``parallel.choose_jobs``).
    ``tee`` and ``copy_to`` get the raw bytes of the inputs read as streams, unchanged, as
    they arrive (a ``tee`` whose write fails is dropped).
    ``tee.flush()`` is called after each write and whenever a stream pauses (a tee may hold
    the start of a line back briefly). ``on_snapshot`` is called with what was read so far
    (a snapshot, see ``ParsedLog``) at most every :data:`SNAPSHOT_SECONDS`. ``stop`` is
    looked at between blocks. ``stdin`` and ``stdin_name``: what ``-`` reads and what it is
    called (``dnnlens run`` reads its program's output under the name of its log).
    ``parts``: files scanned already, elsewhere, in byte ranges (:func:`parallel.scan_range`
    of each of :func:`parallel.line_ranges`, in order, with their sizes): merged in their
    place, exactly as the parts of ``jobs`` workers are. ``meanwhile``: called once while
    worker processes scan, the first time a worker's part is asked for (the command imports
    what its report needs there); not called when no worker starts. ``marker``: a regex
    (``--iteration-marker``) whose matches among the program's own lines are kept by line
    number as they are read (``InputScan.marker_line``; ``ParsedLog.marker`` says it was
    looked for); ``ValueError`` when it does not compile, or beside ``parts`` (scanned
    elsewhere, without it).
    """
    if marker is not None and parts:
        raise ValueError("an iteration marker cannot be looked for in parts scanned elsewhere")
    try:
        pattern = compile_linear(marker) if marker is not None else None
    except PatternError as exc:
        raise ValueError(f"iteration marker {marker!r}: {exc}") from None
    expansion = specs if isinstance(specs, Expansion) else expand(specs)
    sources, errors = expansion.sources, list(expansion.errors)
    notes = list(expansion.notes)
    reading = _Reading(
        window_events=window_events,
        progress=progress or NoProgress(),
        stop=stop,
        tee=tee,
        copy_to=copy_to,
        on_snapshot=on_snapshot,
        stdin=stdin,
        stdin_name=stdin_name,
        meanwhile=meanwhile,
        marker=pattern,
    )
    with reading_pages():  # freed memory kept for reuse while reading (io.pages)
        reading.progress.start(sources)
        try:
            # traces first: a large one is never counted as a log to read in processes
            logs = [s for s in sources if not reading.trace(s)]
            jobs = parallel.choose_jobs(logs) if jobs is None else parallel.bounded_jobs(jobs)
            if parts:
                reading.parallel(logs, 1, parts)
            elif jobs > 1 and len(logs) > 0:
                reading.parallel(logs, jobs)
            else:
                for source in logs:
                    if reading.stopped:
                        break
                    reading.source(source, traces=False)
        finally:
            reading.progress.finish()
        log = reading.result(errors)
        log.input_notes = notes
        return log


def load(
    specs: Sequence[str] | Expansion,
    progress: Progress | None = None,
    jobs: int = 1,
    marker: str | None = None,
) -> ParsedLog:
    """:func:`read` keeping every event, whatever the size (what the commands that need
    all of them use: export, diff, graph)."""
    return read(specs, jobs=jobs, progress=progress, window_events=None, marker=marker)


def _is_regular(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except OSError:
        return False


class _Part:
    """The part of the current input being scanned: a fresh scan fed block by block."""

    def __init__(self, scanner: Scanner, path: str, stats: ReadStats, finder: TableFinder | None):
        self.scanner, self.path, self.stats, self.finder = scanner, path, stats, finder
        self.scan: InputScan | None = None
        self._bulk: BulkScan | None = None
        self.bytes = 0

    def feed(self, block: bytes) -> None:
        if self._bulk is None:
            self.scan = InputScan(self.path)
            self._bulk = BulkScan(self.scanner, self.scan, self.stats, self.finder)
        self._bulk.feed(block)
        self.bytes += len(block)

    def take(self) -> tuple[InputScan, int] | None:
        """The finished part and its bytes of text; the next block starts a new one."""
        if self.scan is None:
            return None
        scan, size = self.scan, self.bytes
        self.scanner.finish_scan(scan)
        self.scan, self._bulk, self.bytes = None, None, 0
        return scan, size


class _Replay(io.RawIOBase):
    """The raw bytes of a stream from its start: those already read, then the rest (each
    new byte copied to ``tee``), for reading a stream again as a trace."""

    def __init__(self, seen: bytes, raw: RawInput, tee: Callable[[bytes], None]) -> None:
        super().__init__()
        self._seen = memoryview(seen)
        self._raw = raw
        self._tee = tee

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._seen:
            n = min(len(buffer), len(self._seen))
            buffer[:n] = self._seen[:n]
            self._seen = self._seen[n:]
            return n
        data = self._raw.read(len(buffer))
        self._tee(data)
        buffer[: len(data)] = data
        return len(data)


class _Reading:
    """One call of :func:`read`: the scanner, the collector and the options."""

    def __init__(
        self,
        *,
        window_events: int | None,
        progress: Progress,
        stop: StopCheck | None,
        tee: BinaryIO | None,
        copy_to: BinaryIO | None,
        on_snapshot: Snapshot | None,
        stdin: BinaryIO | None,
        stdin_name: str,
        meanwhile: Callable[[], None] | None = None,
        marker: Any = None,
    ) -> None:
        self.meanwhile = meanwhile
        self.scanner = Scanner(marker)
        self.collector = Collector(self.scanner, window_events, live=on_snapshot is not None)
        self.framework = FrameworkReader()
        self.progress = progress
        self.stop = stop
        self.tee = tee
        self.copy_to = copy_to
        self.on_snapshot = on_snapshot
        self.stdin = stdin
        self.stdin_name = stdin_name
        self._last_snapshot = time.monotonic()
        self._unseen = False  # something was read since the last snapshot
        #: why ``copy_to`` could not be written to the end (an input error of the result)
        self.copy_error: str | None = None

    @property
    def stopped(self) -> bool:
        return bool(self.stop)

    # -- one input, read here ----------------------------------------------------------------
    def trace(self, source: InputSource) -> bool:
        """Whether ``source`` is a regular file holding a trace (then read, as one)."""
        if self.stopped or source.is_stdin or not _is_regular(source.path):
            return False
        return self.framework.take_trace(source.path, path_text(source.path))

    def source(self, source: InputSource, tables: bool = True, traces: bool = True) -> None:
        """Read ``source`` to its end (or to a stop): a trace, or the lines of a log
        (``traces`` False: a file already known not to be a trace)."""
        name = self.stdin_name if source.is_stdin else path_text(source.path)
        if traces and not source.is_stdin and _is_regular(source.path):
            if self.framework.take_trace(source.path, name):
                return
        try:
            raw = open_input(source, self.stdin if source.is_stdin else None)
        except InputError as exc:
            self.collector.begin(name).read_error = str(exc)
            return
        try:
            _InputReading(self, raw, name, tables).run()
        finally:
            raw.close()

    def passthrough(self, data: bytes) -> None:
        """Copy raw bytes of a stream to ``copy_to`` and ``tee``, unchanged."""
        if self.copy_to is not None:
            try:
                self.copy_to.write(data)
            except (OSError, ValueError) as exc:  # a full disk: reading goes on, and says so
                shown = display_path(str(getattr(self.copy_to, "name", "the copy")))
                reason = getattr(exc, "strerror", None) or exc
                self.copy_error = f"{shown}: cannot write the copy of the input ({reason})"
                self.copy_to = None
        if self.tee is not None and data:
            try:
                self.tee.write(data)
                self.tee.flush()
            except (OSError, ValueError):  # the reader of our output went away: go on reading
                self.tee = None

    def flush_tee(self) -> None:
        """The stream paused: let ``tee`` write what it holds."""
        if self.tee is not None:
            try:
                self.tee.flush()
            except (OSError, ValueError):
                self.tee = None

    def add_part(self, taken: tuple[InputScan, int] | None) -> None:
        if taken is not None:
            self.collector.add(taken[0], text_bytes=taken[1])
            self._unseen = True

    def snapshot_due(self) -> bool:
        return (
            self.on_snapshot is not None
            and time.monotonic() - self._last_snapshot >= SNAPSHOT_SECONDS
        )

    def snapshot(self) -> None:
        """Offer what was read so far (when something was)."""
        if self.on_snapshot is not None and self._unseen:
            self._unseen = False
            self._last_snapshot = time.monotonic()
            self.on_snapshot(self.collector.snapshot())

    # -- parallel ----------------------------------------------------------------------------
    def parallel(
        self,
        sources: list[InputSource],
        jobs: int,
        given: Mapping[str, Sequence[tuple[parallel.Part, int]]] | None = None,
    ) -> None:
        """Plain files in worker processes (or their ``given`` parts), the others here,
        everything in input order."""
        plan: list[tuple[InputSource, list[tuple[int, int]] | None]] = []
        for source in sources:
            is_file = not source.is_stdin and _is_regular(source.path)
            if given is not None:  # parts scanned elsewhere, or read here as usual
                sizes = [size for _, size in given.get(source.path, ())]
                starts = [sum(sizes[:k]) for k in range(len(sizes))]
                spans = [(a, a + size) for a, size in zip(starts, sizes, strict=True)]
                plan.append((source, spans or None))
                continue
            plan.append((source, parallel.ranges(source.path, jobs) if is_file else None))
        split = sum(end - start for _, spans in plan for start, end in spans or ())
        keep = None
        if given is None and self.collector.window_events and split >= stream_min():
            # the inputs stream whatever else is read: workers fold their events and send
            # only the last ones, so their ranges can be large
            self.collector.stream_now()
            keep = self.collector.window_events
            plan = [(s, spans and parallel.ranges(s.path, jobs, folded=True)) for s, spans in plan]
        tasks = (
            []
            if given is not None
            else list(parallel.tasks_of([(s.path, spans) for s, spans in plan], keep))
        )
        with parallel.Workers(tasks, jobs, self.stop, self.scanner, self.meanwhile) as workers:
            maps = _IdMaps(self.scanner, workers)
            for source, spans in plan:
                if self.stopped:
                    return
                if spans is None:
                    self.source(source, traces=False)
                    continue
                self.collector.begin(path_text(source.path))
                finder = self.framework.finder(path_text(source.path))
                stats = ReadStats()
                ready = iter(given[source.path]) if given is not None else None
                for start, end in spans:
                    part = next(ready)[0] if ready is not None else workers.next_part()
                    if part is None:
                        return
                    task = parallel.Task(source.path, start, end)
                    self._add_worker_part(part, maps, finder, task)
                    stats.add(part.stats)
                    self.progress.advance(source, end - start)
                    if self.snapshot_due():
                        self.snapshot()
                finder.close()
                note_cut_lines(source.path, stats)
                self.collector.scans[-1].add_reading(stats)

    def _add_worker_part(
        self, part: parallel.Part, maps: _IdMaps, finder: TableFinder, task: parallel.Task
    ) -> None:
        offset = self.collector.scans[-1].lines
        rmap, wmap = maps.of(part)
        size = task.end - task.start
        self.collector.add(part.scan, rmap, wmap, text_bytes=size, folded=part.folded)
        self._unseen = True
        skip: tuple[int, int, int] | None = (0, 0, 0)
        if not finder.idle:  # a table open where the range starts: read on here
            skip = _resync(finder, part.finder, task, offset)
        if skip is None:
            finder.seek(offset + part.scan.lines)
        else:
            finder.absorb(part.finder, offset, skip)

    # -- the result --------------------------------------------------------------------------
    def result(self, errors: list[str]) -> ParsedLog:
        log = self.collector.result(errors)
        framework = self.framework.result()
        if framework is not None and log.window is not None:
            logs = {s.path for s in log.scans if s.parsed}
            framework, notes = keep_linkable_tables(
                framework, log.window.dropped_last_line, log.window.size, logs
            )
            log.window.notes = notes
        log.framework = framework
        if framework is not None:
            log.input_errors += [t.error for t in framework.traces if t.error]
        log.input_errors += self.framework.data.unusable
        if self.copy_error is not None:
            log.input_errors.append(self.copy_error)
        return log


class _InputReading:
    """Reading one opened input: raw bytes through the decoder into scanned parts."""

    def __init__(self, reading: _Reading, raw: RawInput, name: str, tables: bool) -> None:
        self.reading = reading
        self.raw = raw
        self.name = name
        self.stats = ReadStats()
        self.decoder = Decoder(self.stats, name)
        self.blocks = LineBlocks()
        self.stream = not raw.is_file
        #: standard input is copied to ``tee`` (and ``copy_to``) as it is read
        self.passes = raw.source.is_stdin
        #: a stream (or standard input) is looked at for a JSON trace in its first bytes
        self.sniff = self.stream or raw.source.is_stdin
        finder = reading.framework.finder(name) if tables else None
        self.finder = finder
        self.part = _Part(reading.scanner, name, self.stats, finder)
        self.scan: InputScan | None = None
        self._batch_start: float | None = None

    def run(self) -> None:
        r = self.reading
        while not r.stopped:
            if self.stream and not self.raw.wait(self._timeout()):
                if self.passes:
                    r.flush_tee()
                if not self._take(self.decoder.flush()):
                    return  # it was a trace
                self._tick(paused=True)
                continue
            try:
                data = self.raw.read(READ_BYTES)
            except Exception as exc:  # noqa: BLE001 - every stream error ends the input
                self.decoder.fail(exc)
                break
            if not data:
                break
            r.progress.advance(self.raw.source, len(data))
            if self.passes:
                r.passthrough(data)
            if self.decoder.failed or (self.scan is not None and self.scan.read_error):
                if self.passes and (r.tee is not None or r.copy_to is not None):
                    continue  # the program's output still passes through
                break
            if not self._take(self.decoder.push(data)):
                return
            self._tick(paused=False)
        self._end(stopped=r.stopped)

    def _timeout(self) -> float:
        if self._batch_start is None:
            return POLL_SECONDS
        return min(POLL_SECONDS, self._batch_start + BATCH_SECONDS - time.monotonic())

    def _take(self, pieces: Iterable[bytes]) -> bool:
        """Scan what the decoder gives; False when the input turned out to be a trace
        (then read as one). A binary format found in the first bytes ends the input."""
        try:
            for piece in pieces:
                if self.sniff and not self._log_or_trace():
                    return False
                self._piece(piece)
        except InputError as exc:
            self._begin().read_error = str(exc)
            return True
        if self.sniff and self.decoder.head is not None:
            return self._log_or_trace()
        return True

    def _log_or_trace(self) -> bool:
        """Once the first bytes are known: a JSON trace is parsed as one (False)."""
        self.sniff = False
        head = self.decoder.head or b""
        if not starts_like_json(head):
            self.decoder.raw_seen = bytearray()
            return True
        r = self.reading

        def tee(data: bytes) -> None:
            r.passthrough(data)

        replay = _Replay(bytes(self.decoder.raw_seen), self.raw, tee)
        trace = parse_trace_stream(io.BufferedReader(replay), self.name)  # type: ignore[arg-type]
        r.framework.add(trace)
        return False

    def _begin(self) -> InputScan:
        if self.scan is None:
            self.scan = self.reading.collector.begin(self.name)
        return self.scan

    def _piece(self, piece: bytes) -> None:
        if self._batch_start is None:
            self._batch_start = time.monotonic()
        block = self.blocks.add(piece)
        if block is not None:
            self._feed(block)

    def _feed(self, block: bytes) -> None:
        self._begin()
        self.part.feed(block)
        if self.part.bytes >= PART_BYTES:
            self.reading.add_part(self.part.take())

    def _tick(self, paused: bool) -> None:
        """A stream's lines are scanned at least every BATCH_SECONDS (at once when it
        pauses); snapshots are offered."""
        r = self.reading
        start = self._batch_start
        if start is not None and (paused or time.monotonic() - start >= BATCH_SECONDS):
            block = self.blocks.whole()
            if block is not None:
                self._feed(block)
            self._batch_start = time.monotonic() if self.blocks.pending else None
        if r.snapshot_due():
            r.add_part(self.part.take())
            r.snapshot()

    def _end(self, stopped: bool) -> None:
        """The input ended (or reading stopped): the last lines, then what reading learnt."""
        note = self.raw.shrink_note()
        if note is not None:
            self.stats.notes.append(note)
        if not self._take(self.decoder.flush() if stopped else self.decoder.end()):
            return
        block = self.blocks.whole()
        if block is not None:
            self._feed(block)
        last = self.blocks.rest()
        if last:
            self._feed(last)
        if self.finder is not None:
            self.finder.close()
        scan = self._begin()
        self.reading.add_part(self.part.take())
        scan.add_reading(self.stats)
        self.decoder.raw_seen = bytearray()
        if self.reading.snapshot_due():
            self.reading.snapshot()


class _IdMaps:
    """Per worker, its record and reason ids -> this scanner's (it inherited the first ones
    at fork; each part brings the ones it learnt since its last)."""

    def __init__(self, scanner: Scanner, workers: parallel.Workers) -> None:
        self.scanner = scanner
        self.workers = workers
        self._maps: dict[int, tuple[list[int], list[int]]] = {}

    def of(self, part: parallel.Part) -> tuple[np.ndarray | None, np.ndarray | None]:
        if part.records is None or part.reasons is None:  # scanned with this scanner
            return None, None
        maps = self._maps.get(part.worker) if part.worker is not None else ([], [])
        if maps is None:
            records, reasons = self.workers.inherited
            maps = self._maps[part.worker] = (list(range(records)), list(range(reasons)))
        intern_record = self.scanner.intern_record  # one table for all parts
        intern_reason = self.scanner.intern_reason
        maps[0].extend(intern_record(r) for r in part.records)
        maps[1].extend(intern_reason(r) for r in part.reasons)
        return np.array(maps[0] or [0], np.int64), np.array(maps[1] or [0], np.int64)


def _resync(
    finder: TableFinder, part: TableFinder, task: parallel.Task, offset: int
) -> tuple[int, int, int] | None:
    """A table was open where the range of ``part`` starts, which its worker could not
    know: read the range's first lines here, into ``finder`` and into a finder that does
    what the worker's did, until both are between tables after the same line (from there
    on the worker's finder is right). The tables, markers and errors the worker found
    before that point are left out (the counts); None when the range ended first (then
    ``finder`` read all of it)."""
    again = TableFinder(part.source)
    lineno = 0
    for block in open_range_blocks(task.path, task.start, task.end, ReadStats()):
        lines = decode_line(block, ReadStats()).split("\n")
        if block.endswith(b"\n"):
            lines.pop()
        for text in lines:
            lineno += 1
            finder.line(offset + lineno, text)
            again.line(lineno, text)
            if finder.idle and again.idle:
                return again.found
    return None
