"""The one merge of scans: the next part of an input added to what was read of it before.

Parts come from scanning an input in pieces: blocks of a file or a pipe as they are read,
byte ranges of a file scanned in other processes. Each part numbers its lines from 1 and may
hold its own table of records and reasons (another process's scanner); :func:`append_scan`
shifts its line numbers, maps its ids and adds it, so that the parts of an input together
are exactly the :class:`InputScan` one scan of the whole input gives (``tests/test_parallel.py``
and ``tests/test_stream.py`` check it on real logs). What reading itself learnt (compression,
invalid bytes, notes, a read error) is added once per input with ``InputScan.add_reading``.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from dnnlens.parsers.merge import merge_header
from dnnlens.parsers.scanner import (
    FOREIGN_EXAMPLES_KEPT,
    MALFORMED_TEXT_KEPT,
    MARKER_LINES_KEPT,
    NO_RANK,
    InputScan,
)

_COUNTS = ("parsed", "foreign", "malformed", "prefixed", "slow_events", "nul_lines")


@dataclass
class PartEvents:
    """The events of one part in the numbering of the whole input (parallel arrays)."""

    lines: np.ndarray
    records: np.ndarray
    times: np.ndarray
    #: timestamps, NaN where a line had none
    stamps: np.ndarray
    #: ranks of ``[rankN]`` prefixes, NO_RANK where a line had none; None: no line had one
    ranks: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.lines)

    def tail(self, n: int) -> PartEvents:
        """The last ``n`` events."""
        ranks = self.ranks[-n:] if self.ranks is not None else None
        return PartEvents(
            self.lines[-n:], self.records[-n:], self.times[-n:], self.stamps[-n:], ranks
        )


def add_events(scan: InputScan, events: PartEvents, stamps: bool = True) -> None:
    """Append ``events`` to the event columns of ``scan`` (``stamps``: their timestamps too).
    Ranks are kept aligned: once an event has one, the events without one get NO_RANK."""
    n = len(events)
    if not n:
        return
    if events.ranks is not None or len(scan.event_rank):
        _extend(scan.event_rank, np.full(len(scan.event_line) - len(scan.event_rank), NO_RANK))
        _extend(scan.event_rank, events.ranks if events.ranks is not None else np.full(n, NO_RANK))
    _extend(scan.event_line, events.lines)
    _extend(scan.event_record, events.records)
    _extend(scan.event_time, events.times)
    if stamps:
        _extend(scan.event_timestamp, events.stamps)


def _ints(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, np.int64)


def _mapped(ids: array, table: np.ndarray | None) -> np.ndarray:
    values = _ints(ids)
    return table[values] if table is not None and len(values) else values


def _extend(target: array, values: np.ndarray, room: int | None = None) -> None:
    if room is not None:
        values = values[: max(0, room - len(target))]
    if len(values):
        target.frombytes(values.astype(np.dtype(target.typecode), copy=False).tobytes())


def part_events(into: InputScan, part: InputScan, records: np.ndarray | None = None) -> PartEvents:
    """The events of ``part`` numbered as lines of ``into`` (call before :func:`append_scan`)."""
    n = len(part.event_line)
    stamps = (
        np.frombuffer(part.event_timestamp, dtype=np.float64).copy()
        if n and len(part.event_timestamp) == n
        else np.full(n, np.nan)
    )
    return PartEvents(
        lines=_ints(part.event_line) + into.lines,
        records=_mapped(part.event_record, records),
        times=np.frombuffer(part.event_time, dtype=np.float64).copy()
        if n
        else np.zeros(0, np.float64),
        stamps=stamps,
        ranks=np.frombuffer(part.event_rank, dtype=np.int32).copy()
        if n and len(part.event_rank) == n
        else None,
    )


def append_scan(
    into: InputScan,
    part: InputScan,
    events: PartEvents | None,
    records: np.ndarray | None = None,
    reasons: np.ndarray | None = None,
    kept_lines: int | None = None,
) -> None:
    """Add ``part``, the next lines of the input of ``into``, to ``into``.

    ``records`` and ``reasons`` map the part's record and reason ids to those of ``into``
    (None: the same tables). ``events`` (from :func:`part_events`) are added to the event
    columns of ``into``; None leaves them to the caller (a window of events kept apart).
    ``kept_lines`` bounds the malformed and diagnostic lines kept with their numbers (all
    are counted).
    """
    offset = into.lines
    for name in _COUNTS:
        setattr(into, name, getattr(into, name) + getattr(part, name))
    into.families.update(part.families)
    into.info_families.update(part.info_families)
    header = part.header
    header.version_lines = [n + offset for n in header.version_lines]
    templates = dict(header.templates)
    merge_header(into.header, header)
    into.header.templates.update(templates)  # a later template replaces one, as in one scan
    _extend(into.diag_line, _ints(part.diag_line) + offset, kept_lines)
    _extend(into.diag_record, _mapped(part.diag_record, records), kept_lines)
    _extend(into.malformed_line, _ints(part.malformed_line) + offset, kept_lines)
    _extend(into.malformed_reason, _mapped(part.malformed_reason, reasons), kept_lines)
    for line, text in part.malformed_text.items():
        if len(into.malformed_text) >= MALFORMED_TEXT_KEPT:
            break
        into.malformed_text[line + offset] = text
    room = FOREIGN_EXAMPLES_KEPT - len(into.foreign_examples)
    into.foreign_examples.extend((n + offset, s) for n, s in part.foreign_examples[:room])
    into.program_lines.merge(part.program_lines, offset)
    if into.model_line is None and part.model_line is not None:  # the first one, as one scan
        into.model_line = (part.model_line[0] + offset, part.model_line[1])
    if len(part.marker_line):
        _extend(into.marker_line, _ints(part.marker_line) + offset)
        if len(into.marker_line) > MARKER_LINES_KEPT:
            del into.marker_line[:-MARKER_LINES_KEPT]
    if events is not None and len(events):
        if part.has_timestamps and not into.has_timestamps:
            _extend(into.event_timestamp, np.full(len(into.event_line), np.nan))
        add_events(into, events, into.has_timestamps or part.has_timestamps)
    into.has_timestamps = into.has_timestamps or part.has_timestamps
    into.lines = offset + part.lines


def cap_kept_lines(scan: InputScan, kept_lines: int) -> None:
    """Keep the first ``kept_lines`` malformed and diagnostic lines of ``scan`` (all stay
    counted)."""
    for name in ("diag_line", "diag_record", "malformed_line", "malformed_reason"):
        values = getattr(scan, name)
        if len(values) > kept_lines:
            del values[kept_lines:]
