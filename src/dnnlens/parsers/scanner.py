"""The line scanner: the hot loop that accounts for every physical line.

Each physical line is exactly one of

* ``parsed``: it carries a verbose marker and parses (event, header info or diagnostic);
* ``malformed``: it carries a verbose marker (or a cut-off one) but does not parse; its
  line number and a reason are kept;
* ``foreign``: anything else (program output, progress bars, warnings).

The same primitives print every iteration, so each distinct line is parsed by lark once:
the memo key is the line from its marker on, without its timestamp and trailing time.
A memo hit costs a dict lookup; nothing per line allocates more than a few slices.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dnnlens.io.inputs import MAX_LINE_CHARS, ReadStats
from dnnlens.parsers.common import ascii_float
from dnnlens.parsers.header import Header
from dnnlens.parsers.model_lines import REPRO_MARK, benchdnn_model
from dnnlens.parsers.onednn_line import parse_line
from dnnlens.parsers.program_lines import MAX_LINES_PER_SHAPE, ProgramLines
from dnnlens.parsers.records import LINE_DIAGNOSTIC, LINE_EVENT, LineRecord, MalformedLine

_MARK = "_verbose,"
_MARK_LEN = len(_MARK)
_NAN = math.nan
_isfinite = math.isfinite
_NEEDS_FULL = -1  # memo value: the last field was not a time, parse the whole key
# A verbose marker cut short at the end of a line (``mkldnn_ve``, ``onednn_verb``).
_CUT_MARKER = re.compile(
    r"(?:^|[\s>`\]:])(?:onednn|mkldnn|dnnl)_(?:v|ve|ver|verb|verbo|verbos|verbose)?$"
)

# A time followed by pasted prose or markdown: "0.5.", "0.5 ms", "0.5`", "0.5**". The
# number is atomic: "0.5ms" is not "0" followed by ".".
_TIME_THEN_TEXT = re.compile(
    r"\s*((?>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))[\s.`*)\]\"']", re.ASCII
)
# A last field that starts like a number in any script ("1_000", "\u0661\u0660", "0.5ms"):
# in the time's place it is a time that is not one.
_NUMBERISH = re.compile(r"\s*[-+]?\.?\d")

# ``torchrun`` prefixes each process's lines with ``[rank0]:``; a rank has at most 9 digits
# (an int32), a longer number in brackets is not one.
_RANK = re.compile(r"\[rank([0-9]{1,9})\]")
#: ``InputScan.event_rank`` of an event line without a ``[rankN]`` prefix.
NO_RANK = -1

_REASON_GLUED = "two verbose lines glued together (interleaved output of threads or processes)"
_REASON_TOO_LONG = f"line too long: over {MAX_LINE_CHARS:,} characters, not parsed"
_REASON_BAD_TIME = "time field is negative or infinite"

#: Whole header and diagnostic lines remembered (the headers of many processes repeat).
_SEEN_LINES = 4096
_SEEN_LINE_CHARS = 2048
#: How many malformed lines keep their text (all are counted and keep line and reason).
MALFORMED_TEXT_KEPT = 200
FOREIGN_EXAMPLES_KEPT = 5
#: How many marker lines an input keeps (the last ones), as many as the program lines keep
#: per shape: the reader's window of events needs no earlier ones.
MARKER_LINES_KEPT = MAX_LINES_PER_SHAPE
#: The per-event columns of an InputScan, in one order (each empty or one entry per event).
EVENT_ARRAYS = ("event_line", "event_record", "event_time", "event_timestamp", "event_rank")


def rank_of(prefix: str) -> int:
    """The rank of the first ``[rankN]`` in ``prefix`` (the text before a verbose marker),
    NO_RANK when there is none."""
    if "[rank" not in prefix:
        return NO_RANK
    m = _RANK.search(prefix)
    return int(m.group(1)) if m else NO_RANK


@dataclass
class InputScan:
    """Everything the scanner learnt from one input."""

    path: str
    lines: int = 0
    parsed: int = 0
    foreign: int = 0
    malformed: int = 0
    prefixed: int = 0
    header: Header = field(default_factory=Header)
    families: Counter = field(default_factory=Counter)
    info_families: Counter = field(default_factory=Counter)
    # events, one entry per event line
    event_line: array = field(default_factory=lambda: array("q"))
    event_record: array = field(default_factory=lambda: array("q"))
    event_time: array = field(default_factory=lambda: array("d"))
    event_timestamp: array = field(default_factory=lambda: array("d"))
    #: the rank of each event line's ``[rankN]`` prefix (NO_RANK without one); empty while
    #: no event line of the input had one, so plain logs carry no column
    event_rank: array = field(default_factory=lambda: array("i"))
    # diagnostics (check, dispatch, error, warning), one entry per line
    diag_line: array = field(default_factory=lambda: array("q"))
    diag_record: array = field(default_factory=lambda: array("q"))
    # malformed lines: line number and reason id (into Scanner.reasons) for all of them
    malformed_line: array = field(default_factory=lambda: array("q"))
    malformed_reason: array = field(default_factory=lambda: array("q"))
    malformed_text: dict[int, str] = field(default_factory=dict)
    foreign_examples: list[tuple[int, str]] = field(default_factory=list)
    #: shapes of the foreign lines and where they occur (step lines mark iterations)
    program_lines: ProgramLines = field(default_factory=ProgramLines)
    #: the program's own lines that match the scanner's marker (``--iteration-marker``), the
    #: last :data:`MARKER_LINES_KEPT` of them (the reader's window needs no more)
    marker_line: array = field(default_factory=lambda: array("q"))
    #: the first model name a program line told (line, name): a benchdnn problem name
    #: (:mod:`dnnlens.parsers.model_lines`), else None
    model_line: tuple[int, str] | None = None
    read_error: str | None = None
    has_timestamps: bool = False
    slow_events: int = 0
    gzip: bool = False
    invalid_utf8_bytes: int = 0
    #: Lines that held NUL bytes; the NULs were removed before the line was classified.
    nul_lines: int = 0
    #: Notes from reading (compression, encoding, cut lines), one line each.
    read_notes: list[str] = field(default_factory=list)

    def add_reading(self, stats: ReadStats) -> None:
        """Take in what reading learnt: a read error, compression, invalid bytes, notes."""
        self.read_error = self.read_error or stats.error
        self.gzip = self.gzip or stats.gzip
        self.invalid_utf8_bytes += stats.invalid_utf8_bytes
        self.read_notes.extend(stats.notes)

    def add_rank(self, rank: int) -> None:
        """Give the event about to be appended the rank ``rank`` (call before appending its
        line): the column is materialised at the first rank, NO_RANK for the events before."""
        pad = len(self.event_line) - len(self.event_rank)
        if pad:
            self.event_rank.extend(array("i", [NO_RANK]) * pad)
        self.event_rank.append(rank)

    @property
    def family_names(self) -> list[str]:
        """Families of the event and diagnostic lines; of the header lines if there are none.

        Header lines of v3.3 - v3.5 look like v2.5 - v3.2 ones (no component), so they only
        decide when nothing else does.
        """
        return sorted(self.families or self.info_families)

    @property
    def accounted(self) -> int:
        """parsed + foreign + malformed, which always equals ``lines``."""
        return self.parsed + self.foreign + self.malformed


class Scanner:
    """Scans inputs; distinct records and malformed reasons are shared across inputs.

    ``marker``: the program's own lines (foreign lines, never oneDNN's) that it matches
    (its ``search``: a pattern of :func:`~dnnlens.parsers.linear_regex.compile_linear`) are
    kept by number in ``InputScan.marker_line``, as they are read: the passes they mark are
    found without reading the input again (standard input included).
    """

    def __init__(self, marker: Any = None) -> None:
        self.marker = marker
        self.records: list[LineRecord] = []
        self._record_ids: dict[LineRecord, int] = {}
        self.reasons: list[str] = []
        self._reason_ids: dict[str, int] = {}
        self._memo: dict[str, int] = {}
        self._memo_full: dict[str, int] = {}
        # raw line head (junk prefix kept, no timestamp) -> record id (~id when prefixed)
        self._fast: dict[str, int] = {}
        # a raw line head of the fast path whose prefix holds a [rankN] -> its rank
        self._fast_rank: dict[str, int] = {}
        # a whole header or diagnostic line seen before -> (record id, prefixed)
        self._seen_lines: dict[str, tuple[int, bool]] = {}
        #: Memos other scanners of this scanner's inputs keep across inputs, by name (the
        #: bulk scanner's shapes); their content is theirs.
        self.shape_memos: dict[str, Any] = {}

    # -- the tables of distinct records and reasons (shared with other scanners) -----------
    def intern_record(self, record: LineRecord) -> int:
        """The id of ``record`` in :attr:`records`, added if new (one table for all inputs)."""
        rid = self._record_ids.get(record)
        if rid is None:
            rid = len(self.records)
            self.records.append(record)
            self._record_ids[record] = rid
        return rid

    def intern_reason(self, reason: str) -> int:
        """The id of a malformed-line ``reason`` in :attr:`reasons`, added if new."""
        rid = self._reason_ids.get(reason)
        if rid is None:
            rid = len(self.reasons)
            self.reasons.append(reason)
            self._reason_ids[reason] = rid
        return rid

    # -- slow path: one call per distinct line -------------------------------------------
    def _reason_verdict(self, reason: str) -> int:
        """A memo verdict meaning "malformed for ``reason``" (negative, below ``_NEEDS_FULL``)."""
        return -2 - self.intern_reason(reason)

    def _damage(self, key: str, timed: bool) -> str | None:
        """Why ``key`` (marker onwards) is not read at all: too long, or two lines glued.

        Checked once per distinct key, on a memo miss; a timed key is the line without its
        last field, so a second marker just before that field is looked for too.
        """
        if len(key) > MAX_LINE_CHARS:
            return _REASON_TOO_LONG
        text = key + "," if timed else key
        j = text.find(_MARK, text.find(_MARK) + _MARK_LEN)
        if j >= 0 and self._find_marker(text, j)[0] >= 0:
            return _REASON_GLUED
        return None

    def _parse(self, key: str, timed: bool) -> int:
        damage = self._damage(key, timed)
        if damage is not None:
            return self._reason_verdict(damage)
        try:
            record = parse_line(key)
        except MalformedLine as exc:
            return self._reason_verdict(str(exc))
        except Exception as exc:  # noqa: BLE001 - no input may produce a traceback
            return self._reason_verdict(f"internal parser error: {type(exc).__name__}")
        if timed and record.line_kind != LINE_EVENT:
            return _NEEDS_FULL
        return self.intern_record(record)

    def _lookup_head(self, head: str) -> int:
        """The memoised verdict on ``head``, the line without its last field, as timed."""
        rid = self._memo.get(head)
        if rid is None:
            rid = self._parse(head, timed=True)
            if len(head) <= MAX_LINE_CHARS:  # huge keys are not kept
                self._memo[head] = rid
        return rid

    def _not_a_number(self, scan: InputScan, lineno: int, line: str, what: str) -> None:
        reason = f"{what} is not a number as oneDNN prints it (ASCII digits, %g)"
        self._malformed(scan, lineno, line, self.intern_reason(reason))

    def _lookup_full(self, key: str) -> int:
        rid = self._memo_full.get(key)
        if rid is None:
            rid = self._parse(key, timed=False)
            if rid >= 0 and key.endswith(",") and self.records[rid].line_kind == LINE_EVENT:
                rid = self._reason_verdict(
                    "event line ends with an empty field (cut before its time)"
                )
            if len(key) <= MAX_LINE_CHARS:  # huge keys are not kept
                self._memo_full[key] = rid
        return rid

    # -- hot path -------------------------------------------------------------------------
    def scan(self, path: str, lines: Iterable[str]) -> InputScan:
        """Account for every line of one input and collect its events."""
        return self.scan_chunks(path, [lines])

    def scan_chunks(self, path: str, chunks: Iterable[Iterable[str]]) -> InputScan:
        """Like :meth:`scan`, for lines that come in chunks (lists), as files are read.

        Lines may keep their line end. The fast path handles a line already seen without a
        timestamp: one ``rpartition``, one dict lookup, one ``float``. Everything else goes
        through :meth:`classify`.
        """
        scan = InputScan(path)
        fast = self._fast
        get = fast.get
        ev_line, ev_rec, ev_time = scan.event_line, scan.event_record, scan.event_time
        fast_rank = self._fast_rank.get
        add_rank = scan.add_rank
        classify = self.classify
        lineno = 0
        prefixed = 0
        for chunk in chunks:
            for lineno, line in enumerate(chunk, lineno + 1):  # noqa: B020
                head, _, last = line.rpartition(",")
                rid = get(head)
                if rid is not None:
                    try:
                        t = float(last)
                    except ValueError:
                        classify(scan, lineno, line)
                        continue
                    if not last.isascii() or "_" in last:  # float() is more lenient than %g
                        classify(scan, lineno, line)
                        continue
                    if rid < 0:  # prefixed: only such a line may carry a rank
                        rid = ~rid
                        prefixed += 1
                        rank = fast_rank(head)
                        if rank is not None:
                            add_rank(rank)
                    ev_line.append(lineno)
                    ev_rec.append(rid)
                    ev_time.append(t)
                else:
                    classify(scan, lineno, line)
        scan.lines = lineno
        scan.prefixed += prefixed
        fast_events = len(ev_line) - scan.slow_events
        scan.parsed += fast_events
        self.finish_scan(scan)
        return scan

    def finish_scan(self, scan: InputScan) -> None:
        """After the last line: align the timestamp and rank columns, reject bad times, count
        families."""
        if scan.has_timestamps:
            pad = len(scan.event_line) - len(scan.event_timestamp)
            scan.event_timestamp.extend([_NAN] * pad)
        if len(scan.event_rank):
            pad = len(scan.event_line) - len(scan.event_rank)
            scan.event_rank.extend(array("i", [NO_RANK]) * pad)
        if len(scan.marker_line) > MARKER_LINES_KEPT:
            del scan.marker_line[:-MARKER_LINES_KEPT]
        self._reject_bad_times(scan)
        self._count_families(scan)

    def _reject_bad_times(self, scan: InputScan) -> None:
        """Events whose time is negative or infinite become malformed lines.

        Done once per input over the whole time column (numpy), so neither path of the loop
        pays for it per line; both paths accept what ``float`` accepts.
        """
        if not len(scan.event_time):
            return
        times = np.frombuffer(scan.event_time, dtype=np.float64)
        bad = (times < 0.0) | (times == np.inf)
        if not bad.any():
            return
        keep = ~bad
        lines = np.frombuffer(scan.event_line, dtype=np.int64)[bad]
        for name in EVENT_ARRAYS:
            old = getattr(scan, name)
            if len(old) != len(times):
                continue
            kept = array(old.typecode)
            kept.frombytes(np.frombuffer(old, dtype=np.dtype(old.typecode))[keep].tobytes())
            setattr(scan, name, kept)
        reason = self.intern_reason(_REASON_BAD_TIME)
        scan.parsed -= len(lines)
        scan.malformed += len(lines)
        scan.malformed_line.extend(lines.tolist())
        scan.malformed_reason.extend([reason] * len(lines))
        order = np.argsort(np.frombuffer(scan.malformed_line, dtype=np.int64), kind="stable")
        for name in ("malformed_line", "malformed_reason"):
            old = getattr(scan, name)
            ordered = array(old.typecode)
            ordered.frombytes(np.frombuffer(old, dtype=np.dtype(old.typecode))[order].tobytes())
            setattr(scan, name, ordered)

    def _count_families(self, scan: InputScan) -> None:
        records = self.records
        for ids in (scan.event_record, scan.diag_record):
            if len(ids):
                counts = np.bincount(np.frombuffer(ids, dtype=np.dtype(ids.typecode)))
                for rid in np.flatnonzero(counts):
                    scan.families[records[rid].family] += int(counts[rid])

    def _find_marker(self, line: str, i: int) -> tuple[int, int]:
        """The first real marker at or after ``_MARK`` position ``i``: (start, mark index).

        ``(-1, -1)`` when there is none (``ov_cpu_verbose,`` and other look-alikes are not
        oneDNN).
        """
        while i >= 0:
            if i >= 6 and line[i - 6 : i] in ("onednn", "mkldnn"):
                return i - 6, i
            if i >= 4 and line[i - 4 : i] == "dnnl":
                return i - 4, i
            i = line.find(_MARK, i + 1)
        return -1, -1

    def classify(self, scan: InputScan, lineno: int, line: str) -> tuple[int, bool] | None:
        """The full path for one line: NUL bytes, marker, timestamp, time, memo, parse.

        Returns ``(record id, prefixed)`` when the line was a header or diagnostic line.
        """
        seen = self._seen_lines.get(line)
        if seen is not None:  # headers of every process, repeated dispatch lines
            self.add_untimed(scan, lineno, *seen)
            return seen
        clean = True
        if "\x00" in line:  # preallocated or copytruncate'd files; never part of a line
            line = line.replace("\x00", "")
            scan.nul_lines += 1
            clean = False
        i = line.find(_MARK)
        if i < 0:
            self._foreign_or_cut(scan, lineno, line)
            return
        tail = line[i - 6 : i]
        if tail == "onednn" or tail == "mkldnn":
            start = i - 6
        elif line[i - 4 : i] == "dnnl":
            start = i - 4
        else:  # ov_cpu_verbose and other look-alikes are not oneDNN; a real one may follow
            start, i = self._find_marker(line, i)
            if start < 0:
                self._foreign(scan, lineno, line)
                return
        body = line[start:].rstrip()
        p = i - start + _MARK_LEN
        c = body[p : p + 1]
        if c == "v":  # the format version, v1 since 3.6 (any field starting with v)
            q = body.find(",", p)
            if q > 0:
                p = q + 1
                c = body[p : p + 1]
        ts = _NAN
        if c.isdigit() and not c.isascii():  # the grammar's \d would take it as a number
            self._not_a_number(scan, lineno, line, "number field after the marker")
            return
        while "0" <= c <= "9":  # the timestamp (and any further number field, see the docs)
            q = body.find(",", p)
            if q < 0:
                break
            try:
                value = ascii_float(body[p:q])
            except ValueError:
                break
            if not _isfinite(value):
                break
            if ts != ts:
                ts = value
            body = body[:p] + body[q + 1 :]
            c = body[p : p + 1]
        head, _, last = body.rpartition(",")
        timed = True
        try:
            t = ascii_float(last)
        except ValueError:
            m = _TIME_THEN_TEXT.match(last)  # "0.5." / "0.5 ms" / "0.5`": pasted prose
            if m is not None:
                t = float(m.group(1))
            else:
                t = _NAN
                timed = False
        if not timed and head and _NUMBERISH.match(last):
            # "1_000", "0.5ms": a time that is not a number, when the fields before it are
            # a whole event; otherwise the field is the line's own (an untimed line)
            rid = self._lookup_head(head)
            if rid >= 0 and self.records[rid].line_kind == LINE_EVENT:
                self._not_a_number(scan, lineno, line, "time field")
                return
        if timed:
            rid = self._lookup_head(head)
            if rid == _NEEDS_FULL:
                rid = self._lookup_full(body)
                t = _NAN
                timed = False
        else:
            rid = self._lookup_full(body)
        if rid < 0:
            self._malformed(scan, lineno, line, -2 - rid)
            return
        if self.records[rid].line_kind == LINE_EVENT:
            if start:
                scan.prefixed += 1
            scan.slow_events += 1
            scan.parsed += 1
            if ts == ts and not scan.has_timestamps:
                scan.has_timestamps = True
                scan.event_timestamp.extend([_NAN] * len(scan.event_line))
            if scan.has_timestamps:
                pad = len(scan.event_line) - len(scan.event_timestamp)
                if pad:
                    scan.event_timestamp.extend([_NAN] * pad)
                scan.event_timestamp.append(ts)
            rank = rank_of(line[:start]) if start else NO_RANK
            if rank != NO_RANK:
                scan.add_rank(rank)
            scan.event_line.append(lineno)
            scan.event_record.append(rid)
            scan.event_time.append(t)
            # Memoise the raw line's head for the fast path: only when the line has no
            # timestamp (else the head never repeats), its last field was the time, and the
            # line needed no cleaning (the fast path sees raw lines).
            if ts != ts and timed and clean:
                raw_head = line.rpartition(",")[0]
                self._fast[raw_head] = ~rid if start else rid
                if rank != NO_RANK:
                    self._fast_rank[raw_head] = rank
        else:
            self.add_untimed(scan, lineno, rid, bool(start))
            if clean and len(line) <= _SEEN_LINE_CHARS and len(self._seen_lines) < _SEEN_LINES:
                self._seen_lines[line] = (rid, bool(start))
            return rid, bool(start)
        return None

    def add_untimed(self, scan: InputScan, lineno: int, rid: int, prefixed: bool) -> None:
        """Account for a header or diagnostic line (``prefixed``: junk before its marker)."""
        record = self.records[rid]
        scan.parsed += 1
        if prefixed:
            scan.prefixed += 1
        if record.line_kind == LINE_DIAGNOSTIC:
            scan.diag_line.append(lineno)
            scan.diag_record.append(rid)
        else:
            scan.header.add(record.text, record.component, lineno)
            scan.info_families[record.family] += 1

    def _foreign_or_cut(self, scan: InputScan, lineno: int, line: str) -> None:
        if "dnn" in line and self._cut_marker_at_end(line):
            reason = self.intern_reason("verbose marker cut off (truncated line)")
            self._malformed(scan, lineno, line, reason)
            return
        self._foreign(scan, lineno, line)

    @staticmethod
    def _cut_marker_at_end(line: str) -> bool:
        """Whether ``line`` ends in a verbose marker cut short (only its tail is searched)."""
        text = line.rstrip()
        return _CUT_MARKER.search(text, max(0, len(text) - 20)) is not None

    def program_line(self, scan: InputScan, lineno: int, line: str) -> None:
        """Take in a line of the program's own (counted foreign by the caller): its shape,
        and its number when it matches the marker."""
        scan.program_lines.add(line, lineno)
        if scan.model_line is None and REPRO_MARK in line:
            name = benchdnn_model(line)
            if name is not None:
                scan.model_line = (lineno, name)
        if self.marker is not None and self.marker.search(line):
            kept = scan.marker_line
            kept.append(lineno)
            if len(kept) >= 2 * MARKER_LINES_KEPT:
                del kept[:-MARKER_LINES_KEPT]

    def _foreign(self, scan: InputScan, lineno: int, line: str) -> None:
        scan.foreign += 1
        self.program_line(scan, lineno, line)
        if len(scan.foreign_examples) < FOREIGN_EXAMPLES_KEPT and line.strip():
            scan.foreign_examples.append((lineno, line[:200]))

    @staticmethod
    def _malformed(scan: InputScan, lineno: int, line: str, reason_id: int) -> None:
        scan.malformed += 1
        scan.malformed_line.append(lineno)
        scan.malformed_reason.append(reason_id)
        if len(scan.malformed_text) < MALFORMED_TEXT_KEPT:
            scan.malformed_text[lineno] = line[:300]
