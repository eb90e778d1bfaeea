"""Collecting scanned parts into one ParsedLog, in memory bounded by a window of events.

Every part of every input (a block of lines, a byte range scanned elsewhere) goes through
:meth:`Collector.add` in input order. While the text read is small, every event is kept, as
bulk reading always did. Once the decompressed text read passes :data:`STREAM_FILE_MIN_BYTES`
(decided by what was read, not by the size of a file on disk, which says nothing of a gzip's
content), the collector *streams*: every event is folded into per-record statistics
(:class:`~dnnlens.model.stats.StatsAccumulator`) and only the last ``window_events`` raw
events are kept. Totals and breakdowns are then exact however long the inputs; what looks
at the sequence of events (iterations, the op graph, the rules) sees the window.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np

from dnnlens.defaults import DEFAULT_WINDOW_EVENTS as DEFAULT_WINDOW_EVENTS
from dnnlens.model import EventWindow, ParsedLog, build_diagnostics, build_events
from dnnlens.model.stats import StatsAccumulator
from dnnlens.parsers.scanner import EVENT_ARRAYS, InputScan, Scanner
from dnnlens.reading.merge import (
    PartEvents,
    add_events,
    append_scan,
    cap_kept_lines,
    part_events,
)

#: Decompressed text read (all inputs) past which events are folded, not all kept.
STREAM_FILE_MIN_BYTES = 64 << 20
#: Malformed and diagnostic lines kept with their line numbers once streaming (all are counted).
KEPT_LINES = 10_000
#: Events a live snapshot carries (the last ones read).
SNAPSHOT_EVENTS = 20_000
#: Text scanned into one part before it is handed to the collector.
PART_BYTES = 16 << 20

_Piece = tuple[int, PartEvents]  # (input index, events)


@dataclass
class FoldedPart:
    """What was folded of a part where it was scanned (another process), so that only its
    last events travel: the statistics of all its events and the diagnostic lines per
    record (the part's own record ids), its event count, and the line (in the part) of the
    last event it left out (0: none)."""

    stats: StatsAccumulator
    diag_counts: np.ndarray
    events: int
    dropped_line: int


class Collector:
    """The scans of all inputs, built part by part (see the module doc).

    ``window_events`` None (or 0) keeps every event whatever the size; ``live`` keeps
    running statistics from the start, so that :meth:`snapshot` costs little.
    """

    def __init__(self, scanner: Scanner, window_events: int | None, live: bool = False) -> None:
        self.scanner = scanner
        self.window_events = window_events or 0
        self.scans: list[InputScan] = []
        self.stats: StatsAccumulator | None = StatsAccumulator() if live else None
        #: events are folded into ``stats`` and only the last ones kept
        self.streaming = False
        self.events_total = 0
        self.text_bytes = 0
        #: per input path: the line of the last event that left the window
        self.dropped: dict[str, int] = {}
        self._window: deque[_Piece] = deque()
        self._window_size = 0
        self._diag = np.zeros(0, dtype=np.int64)  # diagnostic lines per record id

    def _marker(self) -> str | None:
        """The iteration marker the scanner looked for (``ParsedLog.marker``)."""
        marker = self.scanner.marker
        return marker.pattern if marker is not None else None

    def begin(self, path: str) -> InputScan:
        """Start the next input; its scan (counts so far) is returned."""
        scan = InputScan(path)
        self.scans.append(scan)
        return scan

    def add(
        self,
        part: InputScan,
        records: np.ndarray | None = None,
        reasons: np.ndarray | None = None,
        text_bytes: int = 0,
        folded: FoldedPart | None = None,
    ) -> None:
        """Add ``part``, the next lines of the current input (``text_bytes`` of text).

        ``records`` and ``reasons`` map the part's ids to the scanner's (None: the same).
        ``folded``: the part was folded where it was scanned (:meth:`folded`; only while
        streaming, see :meth:`stream_now`) and holds only its last events.
        """
        into = self.scans[-1]
        offset = into.lines
        events = part_events(into, part, records)
        kept = KEPT_LINES if self.streaming else None
        append_scan(into, part, None if self.streaming else events, records, reasons, kept)
        if folded is not None:
            self._count_diagnostics(folded.diag_counts, records)
        elif len(part.diag_record):
            self._count_diagnostics(np.bincount(np.frombuffer(part.diag_record, np.int64)), records)
        self.events_total += folded.events if folded is not None else len(events)
        if folded is not None:
            if not self.streaming or self.stats is None:
                raise ValueError("a folded part is added only while streaming")
            self.stats.merge(folded.stats, self._ids(records), offset)
            if folded.dropped_line:
                path = into.path
                self.dropped[path] = max(self.dropped.get(path, -1), folded.dropped_line + offset)
        elif len(events) and self.stats is not None:
            self.stats.add(into.path, events.lines, events.records, events.times)
        if len(events) and self.streaming:
            self._keep(len(self.scans) - 1, events)
        self.text_bytes += text_bytes
        if not self.streaming and self.window_events and self.text_bytes >= stream_min():
            self._start_streaming()

    def folded(self) -> FoldedPart:
        """What was folded of the one input read (the parts of a byte range, streamed where
        it was scanned): its statistics, its diagnostic lines per record, its event count and
        the line of the last event left out; its scan is left the window's events (and the
        first :data:`KEPT_LINES` malformed and diagnostic lines), all it sends on."""
        if not self.streaming or self.stats is None or len(self.scans) != 1:
            raise ValueError("folded() is for one input read while streaming")
        cut = max(0, self._window_size - self.window_events)
        if cut:
            self._trim(cut)
        (kept,) = self._window_scans(self.window_events)
        scan = self.scans[0]
        for name in EVENT_ARRAYS:
            setattr(scan, name, getattr(kept, name))
        return FoldedPart(
            self.stats, self._diag, self.events_total, max(0, self.dropped.get(scan.path, 0))
        )

    def stream_now(self) -> None:
        """Stream from here on (the inputs are known to be large enough to stream)."""
        if not self.streaming and self.window_events:
            self._start_streaming()

    def _ids(self, records: np.ndarray | None) -> np.ndarray:
        if records is not None:
            return records
        return np.arange(len(self.scanner.records), dtype=np.int64)

    def _count_diagnostics(self, counts: np.ndarray, records: np.ndarray | None) -> None:
        """Add diagnostic lines per record (``counts`` by the part's record ids)."""
        present = np.flatnonzero(counts)
        if not len(present):
            return
        ids = self._ids(records)[present]
        if ids.max() >= len(self._diag):
            grow = int(ids.max()) + 1 - len(self._diag)
            self._diag = np.concatenate([self._diag, np.zeros(grow, np.int64)])
        self._diag[ids] += counts[present]

    # -- the window --------------------------------------------------------------------------
    def _start_streaming(self) -> None:
        """Fold every event kept so far into the statistics and keep only the window."""
        if self.stats is None:
            self.stats = StatsAccumulator()
            for scan in self.scans:
                events = _scan_events(scan)
                if len(events):
                    self.stats.add(scan.path, events.lines, events.records, events.times)
        self.streaming = True
        for i, scan in enumerate(self.scans):
            events = _scan_events(scan)
            for name in EVENT_ARRAYS:
                setattr(scan, name, array(getattr(scan, name).typecode))
            if len(events):
                self._keep(i, events)
            cap_kept_lines(scan, KEPT_LINES)

    def _keep(self, index: int, events: PartEvents) -> None:
        self._window.append((index, events))
        self._window_size += len(events)
        while self._window and self._window_size - len(self._window[0][1]) >= self.window_events:
            i, gone = self._window.popleft()
            self._window_size -= len(gone)
            self._drop(i, gone.lines)

    def _drop(self, index: int, lines: np.ndarray) -> None:
        path = self.scans[index].path
        self.dropped[path] = max(self.dropped.get(path, -1), int(lines[-1]))

    def _window_scans(self, limit: int) -> list[InputScan]:
        """Scans holding the last ``limit`` events of the window, one per input."""
        out = [InputScan(s.path, has_timestamps=s.has_timestamps) for s in self.scans]
        left = limit
        pieces: list[_Piece] = []
        for index, events in reversed(self._window):
            if left <= 0:
                break
            if len(events) > left:
                events = events.tail(left)
            pieces.append((index, events))
            left -= len(events)
        for index, events in reversed(pieces):
            add_events(out[index], events)
        return out

    # -- results -----------------------------------------------------------------------------
    def diagnostic_counts(self) -> dict[str, int]:
        """Diagnostic lines by operation, over every line read."""
        counts: dict[str, int] = {}
        records = self.scanner.records
        for rid in np.flatnonzero(self._diag).tolist():
            op = records[rid].operation
            counts[op] = counts.get(op, 0) + int(self._diag[rid])
        return counts

    def result(self, input_errors: list[str]) -> ParsedLog:
        """The ParsedLog of everything added (the framework data is the caller's)."""
        records = self.scanner.records
        window = None
        if self.streaming:
            cut = max(0, self._window_size - self.window_events)
            if cut:  # the oldest pieces of the window beyond its size leave it now
                self._trim(cut)
            scans = self._window_scans(self.window_events)
            for scan, kept in zip(self.scans, scans, strict=True):
                for name in EVENT_ARRAYS:
                    setattr(scan, name, getattr(kept, name))
            window = EventWindow(
                size=self.window_events,
                events_total=self.events_total,
                events_kept=self._window_size,
                dropped_last_line=dict(self.dropped),
            )
        log = ParsedLog(
            scans=self.scans,
            records=records,
            reasons=self.scanner.reasons,
            events=build_events(self.scans, records),
            diagnostics=build_diagnostics(self.scans, records),
            input_errors=list(input_errors),
            marker=self._marker(),
        )
        if self.streaming:
            assert self.stats is not None
            log.record_stats = self.stats.frame()
            log.diagnostic_counts = self.diagnostic_counts()
            log.window = window
        return log

    def _trim(self, cut: int) -> None:
        while cut > 0 and self._window:
            index, events = self._window[0]
            if len(events) <= cut:
                self._window.popleft()
                self._drop(index, events.lines)
                self._window_size -= len(events)
                cut -= len(events)
                continue
            self._drop(index, events.lines[:cut])
            self._window[0] = (index, events.tail(len(events) - cut))
            self._window_size -= cut
            cut = 0

    def snapshot(self) -> ParsedLog:
        """What was read so far (see ``ParsedLog``: exact counts and statistics, the last
        :data:`SNAPSHOT_EVENTS` events, no diagnostics table). Read it at once: it shares
        state with the reading that goes on."""
        records = self.scanner.records
        if self.streaming:
            tails = self._window_scans(SNAPSHOT_EVENTS)
        else:
            tails = [_tail_scan(s, SNAPSHOT_EVENTS) for s in self.scans]
            over = sum(len(t.event_line) for t in tails) - SNAPSHOT_EVENTS
            for t in tails:  # the last events across inputs
                if over <= 0:
                    break
                n = min(over, len(t.event_line))
                for name in EVENT_ARRAYS:
                    values = getattr(t, name)
                    if len(values):
                        del values[:n]
                over -= n
        counts = [
            dataclasses.replace(
                s,
                event_line=t.event_line,
                event_record=t.event_record,
                event_time=t.event_time,
                event_timestamp=t.event_timestamp,
                event_rank=t.event_rank,
            )
            for s, t in zip(self.scans, tails, strict=True)
        ]
        stats = self.stats.frame() if self.stats is not None else None
        kept = sum(len(t.event_line) for t in tails)
        return ParsedLog(
            scans=counts,
            records=records,
            reasons=self.scanner.reasons,
            events=build_events(tails, records),
            diagnostics=build_diagnostics([], records),
            input_errors=[],
            marker=self._marker(),
            record_stats=stats,
            diagnostic_counts=self.diagnostic_counts(),
            window=EventWindow(
                size=SNAPSHOT_EVENTS,
                events_total=self.events_total,
                events_kept=kept,
                dropped_last_line=dict(self.dropped),
            ),
        )


def stream_min() -> int:
    """:data:`STREAM_FILE_MIN_BYTES`, read at call time (tests lower it)."""
    return STREAM_FILE_MIN_BYTES


def _scan_events(scan: InputScan) -> PartEvents:
    return part_events(InputScan(scan.path), scan)


def _tail_scan(scan: InputScan, n: int) -> InputScan:
    """A scan with the last ``n`` events of ``scan`` (copied; nothing else)."""
    out = InputScan(scan.path, has_timestamps=scan.has_timestamps)
    total = len(scan.event_line)
    for name in EVENT_ARRAYS:
        values = getattr(scan, name)
        if len(values) == total and total:
            getattr(out, name).frombytes(memoryview(values)[max(0, total - n) :].tobytes())
    return out
