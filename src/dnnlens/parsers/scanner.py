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

import numpy as np

from dnnlens.parsers.header import Header
from dnnlens.parsers.onednn_line import parse_line
from dnnlens.parsers.records import LINE_DIAGNOSTIC, LINE_EVENT, LineRecord, MalformedLine

_MARK = "_verbose,"
_MARK_LEN = len(_MARK)
_NAN = math.nan
_NEEDS_FULL = -1  # memo value: the last field was not a time, parse the whole key
# A verbose marker cut short at the end of a line (``mkldnn_ve``, ``onednn_verb``).
_CUT_MARKER = re.compile(
    r"(?:^|[\s>`\]:])(?:onednn|mkldnn|dnnl)_(?:v|ve|ver|verb|verbo|verbos|verbose)?$"
)

#: How many malformed lines keep their text (all are counted and keep line and reason).
MALFORMED_TEXT_KEPT = 200
FOREIGN_EXAMPLES_KEPT = 5


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
    event_record: array = field(default_factory=lambda: array("l"))
    event_time: array = field(default_factory=lambda: array("d"))
    event_timestamp: array = field(default_factory=lambda: array("d"))
    # diagnostics (check, dispatch, error, warning), one entry per line
    diag_line: array = field(default_factory=lambda: array("q"))
    diag_record: array = field(default_factory=lambda: array("l"))
    # malformed lines: line number and reason id (into Scanner.reasons) for all of them
    malformed_line: array = field(default_factory=lambda: array("q"))
    malformed_reason: array = field(default_factory=lambda: array("l"))
    malformed_text: dict[int, str] = field(default_factory=dict)
    foreign_examples: list[tuple[int, str]] = field(default_factory=list)
    read_error: str | None = None
    has_timestamps: bool = False
    slow_events: int = 0
    gzip: bool = False
    invalid_utf8_bytes: int = 0

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
    """Scans inputs; distinct records and malformed reasons are shared across inputs."""

    def __init__(self) -> None:
        self.records: list[LineRecord] = []
        self._record_ids: dict[LineRecord, int] = {}
        self.reasons: list[str] = []
        self._reason_ids: dict[str, int] = {}
        self._memo: dict[str, int] = {}
        self._memo_full: dict[str, int] = {}
        # raw line head (junk prefix kept, no timestamp) -> record id (~id when prefixed)
        self._fast: dict[str, int] = {}

    # -- slow path: one call per distinct line -------------------------------------------
    def _intern_record(self, record: LineRecord) -> int:
        rid = self._record_ids.get(record)
        if rid is None:
            rid = len(self.records)
            self.records.append(record)
            self._record_ids[record] = rid
        return rid

    def _intern_reason(self, reason: str) -> int:
        rid = self._reason_ids.get(reason)
        if rid is None:
            rid = len(self.reasons)
            self.reasons.append(reason)
            self._reason_ids[reason] = rid
        return -2 - rid

    def _parse(self, key: str, timed: bool) -> int:
        try:
            record = parse_line(key)
        except MalformedLine as exc:
            return self._intern_reason(str(exc))
        except Exception as exc:  # noqa: BLE001 - no input may produce a traceback
            return self._intern_reason(f"internal parser error: {type(exc).__name__}")
        if timed and record.line_kind != LINE_EVENT:
            return _NEEDS_FULL
        return self._intern_record(record)

    def _lookup_full(self, key: str) -> int:
        rid = self._memo_full.get(key)
        if rid is None:
            rid = self._parse(key, timed=False)
            if rid >= 0 and key.endswith(",") and self.records[rid].line_kind == LINE_EVENT:
                rid = self._intern_reason("event line ends with an empty field (cut before "
                                          "its time)")
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
        through :meth:`_classify`.
        """
        scan = InputScan(path)
        fast = self._fast
        get = fast.get
        ev_line, ev_rec, ev_time = scan.event_line, scan.event_record, scan.event_time
        classify = self._classify
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
                    if rid < 0:
                        rid = ~rid
                        prefixed += 1
                    ev_line.append(lineno)
                    ev_rec.append(rid)
                    ev_time.append(t)
                else:
                    classify(scan, lineno, line)
        scan.lines = lineno
        scan.prefixed += prefixed
        fast_events = len(ev_line) - scan.slow_events
        scan.parsed += fast_events
        self._count_families(scan)
        if scan.has_timestamps:
            pad = len(ev_line) - len(scan.event_timestamp)
            scan.event_timestamp.extend([_NAN] * pad)
        return scan

    def _count_families(self, scan: InputScan) -> None:
        records = self.records
        for ids in (scan.event_record, scan.diag_record):
            if len(ids):
                counts = np.bincount(np.frombuffer(ids, dtype=np.int64))
                for rid in np.flatnonzero(counts):
                    scan.families[records[rid].family] += int(counts[rid])

    def _classify(self, scan: InputScan, lineno: int, line: str) -> None:
        """The full path for one line: marker, timestamp, time, memo, parse."""
        i = line.find(_MARK)
        if i < 0:
            self._foreign_or_cut(scan, lineno, line)
            return
        tail = line[i - 6 : i]
        if tail == "onednn" or tail == "mkldnn":
            start = i - 6
        elif line[i - 4 : i] == "dnnl":
            start = i - 4
        else:  # ov_cpu_verbose and other look-alikes are not oneDNN
            self._foreign(scan, lineno, line)
            return
        body = line[start:].rstrip()
        p = i - start + _MARK_LEN
        c = body[p : p + 1]
        if c == "v":
            q = body.find(",", p)
            p = q + 1 if q > 0 else p
            c = body[p : p + 1]
        ts = _NAN
        if c.isdigit():
            q = body.find(",", p)
            if q > 0:
                try:
                    ts = float(body[p:q])
                    body = body[:p] + body[q + 1 :]
                except ValueError:
                    pass
        head, _, last = body.rpartition(",")
        try:
            t = float(last)
        except ValueError:
            t = _NAN
        if t == t:
            rid = self._memo.get(head)
            if rid is None:
                rid = self._parse(head, timed=True)
                self._memo[head] = rid
            if rid == _NEEDS_FULL:
                rid = self._lookup_full(body)
                t = _NAN
        else:
            rid = self._lookup_full(body)
        if rid < 0:
            self._malformed(scan, lineno, line, -2 - rid)
            return
        record = self.records[rid]
        if start:
            scan.prefixed += 1
        if record.line_kind == LINE_EVENT:
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
            scan.event_line.append(lineno)
            scan.event_record.append(rid)
            scan.event_time.append(t)
            # Memoise the raw line's head for the fast path: only when the line has no
            # timestamp (else the head never repeats) and its last field was the time.
            if ts != ts and t == t:
                raw_head = line.rpartition(",")[0]
                self._fast[raw_head] = ~rid if start else rid
        elif record.line_kind == LINE_DIAGNOSTIC:
            scan.parsed += 1
            scan.diag_line.append(lineno)
            scan.diag_record.append(rid)
        else:
            scan.parsed += 1
            scan.header.add(record.text, record.component, lineno)
            scan.info_families[record.family] += 1

    def _foreign_or_cut(self, scan: InputScan, lineno: int, line: str) -> None:
        if "dnn" in line and _CUT_MARKER.search(line.rstrip()):
            reason = self._intern_reason("verbose marker cut off (truncated line)")
            self._malformed(scan, lineno, line, -2 - reason)
            return
        self._foreign(scan, lineno, line)

    @staticmethod
    def _foreign(scan: InputScan, lineno: int, line: str) -> None:
        scan.foreign += 1
        if len(scan.foreign_examples) < FOREIGN_EXAMPLES_KEPT and line.strip():
            scan.foreign_examples.append((lineno, line[:200]))

    @staticmethod
    def _malformed(scan: InputScan, lineno: int, line: str, reason_id: int) -> None:
        scan.malformed += 1
        scan.malformed_line.append(lineno)
        scan.malformed_reason.append(reason_id)
        if len(scan.malformed_text) < MALFORMED_TEXT_KEPT:
            scan.malformed_text[lineno] = line[:300]
