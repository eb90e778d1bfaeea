"""The bulk scanner: blocks of bytes classified with numpy and Arrow, not a loop per line.

It gives exactly the :class:`~dnnlens.parsers.scanner.InputScan` the line scanner gives
(``tests/test_bulk.py`` compares the two on every sample log, the public corpus and fuzzed
input), in a fraction of the time, because a verbose log is the same few hundred lines over
and over with different numbers. Per block of whole lines:

1. Line ends and commas are found with numpy. Lines holding a NUL or a non-ASCII byte,
   lines with fewer than four commas and lines over :data:`MAX_SHAPE_LINE` bytes are *slow
   lines*: decoded and classified one by one by :meth:`Scanner.classify`, as the line
   scanner would.
2. Every other line is cut into five pieces at its first fields and its last comma::

       onednn_verbose,v1,   1796010103273.252930   ,primitive,exec,cpu,...,   7.32593   \\n
       A (marker ...)       B (timestamp, or "")   C (the rest, to the      D (time)  E
                                                   last comma)

   ``(A, whether B is there, C)`` is the line's *shape*; the lines of a shape differ only in
   B and D. Arrow casts B and D to numbers; a line whose B or D is not a plain decimal
   number (``[0-9]+(.[0-9]*)?(e[+-]?NN)?``) is a slow line.
3. Each shape is decided once (then remembered), on its first line, by the line scanner's
   own classification: when that line is an event whose time and timestamp are exactly D
   and B, every line of the shape is that event with its own D and B; otherwise every line
   of the shape is a slow line. Nothing else is assumed about the format. The junk before
   the marker (a ``[rank0]:`` of ``torchrun``) is part of A, so an event's rank is its
   shape's, kept in the verdict: a line costs nothing more for it.
   When at least one line in :data:`UNTIMED_SHARE` of a block is left, the lines left are
   looked at the same way with ``(A, whether B is there, everything after B)`` as their
   shape: a shape whose first line is a header or diagnostic line is that line (a
   diagnostic keeps no timestamp). Diagnostics then go in as columns.
4. Slow lines and header lines are classified in line order; the block's events and
   diagnostics are put in line order.

Profiler tables printed inside the log are looked for in the slow lines only
(profiler markers are always slow lines), unless a table is open or a slow line holds
``---``: then the whole block is given to the finder line by line, as the line scanner's
caller does.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dnnlens.io.inputs import (
    InputError,
    InputSource,
    ReadStats,
    decode_line,
    decode_lines,
    open_blocks,
)
from dnnlens.parsers.records import LINE_DIAGNOSTIC
from dnnlens.parsers.scanner import FOREIGN_EXAMPLES_KEPT, NO_RANK, InputScan, Scanner

if TYPE_CHECKING:
    from dnnlens.parsers.torch_table import TableFinder

_NL, _COMMA, _CR, _V, _ZERO, _NINE = 10, 44, 13, 118, 48, 57
_SLOW = -1  # shape verdict: its lines take the slow path
# An event shape's verdict: (rank + 1) << _RANK_AT | record id << 1 | prefixed. The rank of
# a [rankN] prefix is part of A, so it is the shape's (no cost per line); 0 above the record
# id is "no rank", as for every line of a plain log.
_RANK_AT = 32
_RECORD_MASK = (1 << (_RANK_AT - 1)) - 1
#: Bytes of shapes remembered across blocks, per kind (events; headers and diagnostics).
MAX_SHAPE_BYTES = 16 << 20
#: Header and diagnostic lines are looked at as shapes when at least 1 line in this many of
#: a block is one (``ONEDNN_VERBOSE=all`` logs); else they are classified one by one.
UNTIMED_SHARE = 8
#: Longer lines are slow lines (their shapes would be too big to remember).
MAX_SHAPE_LINE = 16_384
#: Pieces of each line: (start, stop) arrays, one entry per line in each.
_Bounds = list[tuple[np.ndarray, np.ndarray]]
_NUMBER = r"^[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]{1,2})?$"
_NUMBER_RE = re.compile(_NUMBER.encode())


class ShapeMemo(dict):
    """Shape -> verdict, within a budget of bytes (a log of distinct lines must not grow
    memory with them: past the budget, new shapes are decided again where they recur)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def remember(self, key: tuple[bytes, bool, bytes], verdict: int) -> None:
        """Keep ``verdict`` for ``key`` if the budget allows."""
        cost = len(key[0]) + len(key[2]) + 100
        if self.size + cost <= MAX_SHAPE_BYTES:
            self[key] = verdict
            self.size += cost


class BulkScan:
    """Scans one input block by block into an :class:`InputScan` (see the module doc)."""

    def __init__(
        self,
        scanner: Scanner,
        scan: InputScan,
        stats: ReadStats | None = None,
        finder: TableFinder | None = None,
    ) -> None:
        self.scanner = scanner
        self.scan = scan
        self.stats = stats if stats is not None else ReadStats()
        self.finder = finder
        # kept on the scanner: shapes carry over between inputs and blocks
        memos = scanner.shape_memos.setdefault("bulk", (ShapeMemo(), ShapeMemo()))
        #: (A, has B, C) -> the verdict of an event line (see _RANK_AT), or _SLOW
        self.shapes: ShapeMemo = memos[0]
        #: (A, has B, everything after B) -> record id * 2 + prefixed of a header or
        #: diagnostic line, or _SLOW
        self.untimed_shapes: ShapeMemo = memos[1]

    # -- the block -------------------------------------------------------------------------
    def feed(self, block: bytes) -> None:
        """Account for the lines of ``block`` (whole lines; the last may lack its ``\\n``)."""
        if not block:
            return
        arr = np.frombuffer(block, dtype=np.uint8)
        marks, nl = _marks(block, arr)
        ends = marks[nl]
        n = len(ends)
        starts = np.empty(n, dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        nexts = np.minimum(ends + 1, len(block))
        base = self.scan.lines
        events, untimed = self._fast_lines(block, arr, starts, ends, nexts, marks, nl)
        is_slow = untimed < 0
        is_slow[events[0]] = False
        slow = np.flatnonzero(is_slow)
        scan, stats = self.scan, self.stats
        texts = decode_lines(block, starts[slow].tolist(), nexts[slow].tolist(), stats)
        if self.finder is not None:
            self._watch_tables(block, n, slow, texts, starts, nexts)
        n0 = len(scan.event_line)
        classify = self.scanner.classify  # the same classification, by design
        add_untimed = self.scanner.add_untimed
        # header and diagnostic lines of known shapes: diagnostics go in as columns, header
        # lines one by one in line order with the slow lines (a header's effect is ordered)
        known = np.flatnonzero(untimed >= 0)
        diag = known[:0]
        if len(known):
            shapes, which = np.unique(untimed[known], return_inverse=True)
            records = self.scanner.records
            is_diag = np.array(
                [records[v >> 1].line_kind == LINE_DIAGNOSTIC for v in shapes.tolist()]
            )[which]
            diag, known = known[is_diag], known[~is_diag]
        d0 = len(scan.diag_line)
        at = slow.tolist()
        if len(scan.foreign_examples) >= FOREIGN_EXAMPLES_KEPT:
            # a line without the "dnn" of a marker (nor a NUL byte, removed before a line is
            # classified) is foreign: counted here, not classified one by one
            keep = [k for k, t in enumerate(texts) if "dnn" in t or "\x00" in t]
            if len(keep) < len(texts):
                scan.foreign += len(texts) - len(keep)
                note = self.scanner.program_line
                kept = set(keep)
                for k, t in enumerate(texts):
                    if k not in kept:
                        note(scan, base + at[k] + 1, t)
                at = [at[k] for k in keep]
                texts = [texts[k] for k in keep]
        if not len(known):
            for i, text in zip(at, texts, strict=True):
                classify(scan, base + i + 1, text)
        else:
            text_of = dict(zip(at, texts, strict=True))
            for i in np.sort(np.concatenate([np.array(at, np.int64), known])).tolist():
                text = text_of.get(i)
                if text is None:
                    v = int(untimed[i])
                    add_untimed(scan, base + i + 1, v >> 1, bool(v & 1))
                else:
                    classify(scan, base + i + 1, text)
        if len(events[0]):
            self._add_fast(*events, base, n0)
        if len(diag):
            self._add_diagnostics(diag + (base + 1), untimed[diag], d0)
        scan.lines = base + n

    def _fast_lines(
        self,
        block: bytes,
        arr: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        nexts: np.ndarray,
        marks: np.ndarray,
        nl: np.ndarray,
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """The events of a known shape: their lines (indices in the block, in order),
        verdicts (see _RANK_AT), times and timestamps; and the record id * 2 + prefixed of
        header and diagnostic lines of a known shape (-1 for every other line)."""
        n = len(ends)
        untimed = np.full(n, _SLOW, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        events = (none, none, np.zeros(0), np.zeros(0))
        cut = _cut_lines(block, arr, starts, ends, nexts, marks, nl)
        if cut is None:
            return events, untimed
        idx, s, nx, bstart, bend, lc, te, has_b = cut
        # events: B and D must start and end with a digit to be read as numbers here
        # (a line may end in its last comma, at the end of the block: clamp, te > lc + 1
        # below already says it has no time)
        d_first = arr[np.minimum(lc + 1, len(arr) - 1)]
        d_last = arr[np.maximum(te - 1, 0)]
        b_ok = ~has_b | _digit(arr[np.maximum(bend - 1, 0)])
        numeric = (te > lc + 1) & _digit(d_first) & _digit(d_last) & b_ok
        cand = np.flatnonzero(numeric)
        if len(cand):
            pick, verdicts, t_vals, ts_vals = self._event_shapes(
                block, s[cand], nx[cand], bstart[cand], bend[cand], lc[cand], te[cand], has_b[cand]
            )
            b_ok[cand[pick]] = False  # events, not header or diagnostic lines
            events = (idx[cand[pick]], verdicts, t_vals, ts_vals)
        # header and diagnostic lines (a timestamp at most varies): the rest, when they are
        # many (the step costs a few Arrow calls a block; a few lines cost less one by one)
        rest = np.flatnonzero(b_ok)
        if len(rest) * UNTIMED_SHARE >= n:
            pick, verdicts = self._untimed_shapes(
                block, s[rest], nx[rest], bstart[rest], bend[rest], te[rest], has_b[rest]
            )
            untimed[idx[rest[pick]]] = verdicts
        return events, untimed

    def _event_shapes(
        self,
        block: bytes,
        s: np.ndarray,
        nx: np.ndarray,
        bstart: np.ndarray,
        bend: np.ndarray,
        lc: np.ndarray,
        te: np.ndarray,
        has_b: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Of candidate event lines: which are events of a decided shape, their verdicts,
        times and timestamps (NaN without one)."""
        t_vals = _piece_numbers(block, [(lc + 1, te)])
        ts_vals = _stamps(block, bstart, bend, has_b)
        good = np.flatnonzero(np.isfinite(t_vals) & (~has_b | np.isfinite(ts_vals)))

        def decide(j: int, with_b: bool) -> tuple[int, bool]:
            return self._decide(
                block[int(s[j]) : int(nx[j])],
                block[int(bstart[j]) : int(bend[j])] if with_b else None,
                block[int(lc[j]) + 1 : int(te[j])],
            )

        verdict = self._verdicts(block, good, has_b, (s, bstart, bend, lc + 1), self.shapes, decide)
        pick = good[verdict >= 0]
        return pick, verdict[verdict >= 0], t_vals[pick], ts_vals[pick]

    def _untimed_shapes(
        self,
        block: bytes,
        s: np.ndarray,
        nx: np.ndarray,
        bstart: np.ndarray,
        bend: np.ndarray,
        te: np.ndarray,
        has_b: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Of the other lines: which are header or diagnostic lines of a decided shape
        (A, whether B is there, everything after B), and their verdicts."""
        stamps = _stamps(block, bstart, bend, has_b)
        good = np.flatnonzero(~has_b | np.isfinite(stamps))

        def decide(j: int, _with_b: bool) -> tuple[int, bool]:
            return self._decide_untimed(block[int(s[j]) : int(nx[j])])

        known = self.untimed_shapes
        verdict = self._verdicts(block, good, has_b, (s, bstart, bend, te), known, decide)
        return good[verdict >= 0], verdict[verdict >= 0]

    def _verdicts(
        self,
        block: bytes,
        good: np.ndarray,
        has_b: np.ndarray,
        cuts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        known: ShapeMemo,
        decide: Callable[[int, bool], tuple[int, bool]],
    ) -> np.ndarray:
        """The verdict of each ``good`` line: its shape's, from ``known`` or decided on the
        shape's first line. ``cuts`` (start, B's start, B's end, stop) make the shape: A is
        start..B's start, the rest B's end..stop. Without B the two are side by side, one
        piece to hash: the lines with and without B are hashed apart."""
        verdict = np.full(len(good), _SLOW, dtype=np.int64)
        s, bstart, bend, stop = cuts
        stamped_lines = has_b[good]
        for stamped in (False, True):
            at = np.flatnonzero(stamped_lines == stamped)
            if not len(at):
                continue
            j = good[at]
            if stamped:
                found = _piece_codes(block, [(s[j], bstart[j]), (bend[j], stop[j])])
            else:
                found = _piece_codes(block, [(s[j], stop[j])])
            if found is None:  # pragma: no cover - cannot happen (_cut_lines): all slow
                continue
            n_d, codes = found
            combined = codes[0] * n_d + codes[1] if stamped else codes[0]
            shape_of, uniq, firsts = _shapes(combined, n_d * n_d if stamped else n_d)
            first_lines = j[firsts]
            verdicts = np.empty(len(uniq), dtype=np.int64)
            for u, (r, a, b, c, d) in enumerate(
                zip(
                    first_lines.tolist(),
                    s[first_lines].tolist(),
                    bstart[first_lines].tolist(),
                    bend[first_lines].tolist(),
                    stop[first_lines].tolist(),
                    strict=True,
                )
            ):
                key = (block[a:b], stamped, block[c:d])
                v = known.get(key)
                if v is None:
                    v, final = decide(r, stamped)
                    if final:
                        known.remember(key, v)
                verdicts[u] = v
            verdict[at] = verdicts[shape_of]
        return verdict

    def _decide(self, line: bytes, b: bytes | None, d: bytes) -> tuple[int, bool]:
        """The verdict on the shape of ``line``, and whether it holds for the whole shape.

        The verdict is the event's (see _RANK_AT) when ``line`` is an event timed by ``d``
        (and stamped by ``b``); it is not final when ``d`` or ``b`` is a number the strict
        pattern does not take (another line of the shape decides then).
        """
        if not _NUMBER_RE.match(d) or (b is not None and not _NUMBER_RE.match(b)):
            return _SLOW, False
        if b"profiler_st" in line:  # the table finder must see it (see _watch_tables)
            return _SLOW, True
        probe = InputScan("")
        self.scanner.classify(probe, 1, line.decode("ascii"))
        if len(probe.event_line) != 1 or probe.malformed or probe.nul_lines:
            return _SLOW, True
        if probe.event_time[0] != float(d):
            return _SLOW, True
        if b is None:
            if probe.has_timestamps:
                return _SLOW, True
        elif not (probe.has_timestamps and probe.event_timestamp[-1] == float(b)):
            return _SLOW, True
        rank = probe.event_rank[0] if len(probe.event_rank) else NO_RANK
        verdict = (rank + 1) << _RANK_AT | probe.event_record[0] << 1
        return verdict | (1 if probe.prefixed else 0), True

    def _decide_untimed(self, line: bytes) -> tuple[int, bool]:
        """Record id * 2 + prefixed when ``line`` is a header or diagnostic line: then every
        line of its shape is that line (a timestamp is read, checked and not kept)."""
        if b"profiler_st" in line:  # the table finder must see it (see _watch_tables)
            return _SLOW, True
        probe = InputScan("")
        untimed = self.scanner.classify(probe, 1, line.decode("ascii"))
        if untimed is None or probe.parsed != 1 or probe.malformed or probe.nul_lines:
            return _SLOW, True
        rid, prefixed = untimed
        return rid * 2 + (1 if prefixed else 0), True

    # -- events ----------------------------------------------------------------------------
    def _add_fast(
        self,
        which: np.ndarray,
        verdicts: np.ndarray,
        times: np.ndarray,
        stamps: np.ndarray,
        base: int,
        n0: int,
    ) -> None:
        """Append the fast events, then put the block's events in line order."""
        scan = self.scan
        k = len(which)
        scan.parsed += k
        scan.prefixed += int((verdicts & 1).sum())
        lines = which + (base + 1)
        recs = (verdicts >> 1) & _RECORD_MASK
        ranks = (verdicts >> _RANK_AT) - 1
        if not scan.has_timestamps and not np.isnan(stamps).all():
            scan.has_timestamps = True
        if scan.has_timestamps:
            pad = len(scan.event_line) - len(scan.event_timestamp)
            if pad:
                scan.event_timestamp.extend([np.nan] * pad)
        columns = [(scan.event_line, lines), (scan.event_record, recs), (scan.event_time, times)]
        if scan.has_timestamps:
            columns.append((scan.event_timestamp, stamps))
        if len(scan.event_rank) or (ranks != NO_RANK).any():
            pad = len(scan.event_line) - len(scan.event_rank)
            if pad:
                scan.event_rank.extend(array("i", [NO_RANK]) * pad)
            columns.append((scan.event_rank, ranks))
        _append_in_order(scan.event_line, columns, n0)

    def _add_diagnostics(self, lines: np.ndarray, rid2: np.ndarray, d0: int) -> None:
        """Append diagnostic lines of known shapes, then put the block's in line order."""
        scan = self.scan
        scan.parsed += len(lines)
        scan.prefixed += int((rid2 & 1).sum())
        _append_in_order(
            scan.diag_line, [(scan.diag_line, lines), (scan.diag_record, rid2 >> 1)], d0
        )

    # -- profiler tables --------------------------------------------------------------------
    def _watch_tables(
        self,
        block: bytes,
        n: int,
        slow: np.ndarray,
        slow_texts: list[str],
        starts: np.ndarray,
        nexts: np.ndarray,
    ) -> None:
        """Show the finder the block's lines that matter, as the line scanner's caller would.

        Rule lines and profiler markers are slow lines (an event line is never a rule line,
        and a line holding ``profiler_st`` is never fast): while no table is open the finder
        only needs those, and from a rule line on, every line until the table ends (a fast
        line inside a table is decoded here). The other lines are counted, not looked at.
        """
        finder = self.finder
        assert finder is not None
        base = finder.lines_seen
        at = slow.tolist()
        hits = [k for k, t in enumerate(slow_texts) if "---" in t or "profiler_st" in t]
        if hits or not finder.idle:
            slow_pos = {i: k for k, i in enumerate(at)}
            i, h = 0, 0
            while i < n:
                if finder.idle:  # jump to the next line that can start a table or mark
                    while h < len(hits) and at[hits[h]] < i:
                        h += 1
                    if h == len(hits):
                        break
                    i = at[hits[h]]
                k = slow_pos.get(i)
                if k is not None:
                    text = slow_texts[k]
                else:  # ASCII (else it were slow): nothing to count
                    text = decode_line(block[int(starts[i]) : int(nexts[i])], ReadStats())
                finder.line(base + i + 1, text)
                i += 1
        finder.seek(base + n)


def _append_in_order(line_column: array, columns: list[tuple[array, np.ndarray]], n0: int) -> None:
    """Append ``values`` to each ``target`` column, then sort the rows from ``n0`` on (the
    slow path's rows of this block and the new ones) by ``line_column``."""
    if len(line_column) == n0:
        for target, values in columns:
            target.frombytes(values.astype(np.dtype(target.typecode)).tobytes())
        return
    # copies, no views: an array exporting its buffer cannot shrink
    slow_lines = np.frombuffer(line_column, dtype=np.int64)[n0:].copy()
    order = np.argsort(np.concatenate([slow_lines, columns[0][1]]), kind="stable")
    for target, values in columns:
        dtype = np.dtype(target.typecode)
        tail = np.frombuffer(target, dtype=dtype)[n0:].copy()
        merged = np.concatenate([tail, values.astype(dtype)])[order]
        del target[n0:]
        target.frombytes(merged.tobytes())


def _marks(block: bytes, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the block's commas and line ends in one array (one pass), with
    ``len(block)`` as the end of a last line without ``\\n``; and where in it each line
    ends. A line's commas are the marks between its end and the previous line's."""
    found = arr == _NL
    found |= arr == _COMMA
    marks = np.flatnonzero(found)
    is_end = arr[marks] == _NL
    if block[-1] != _NL:
        marks = np.append(marks, len(block))
        is_end = np.append(is_end, True)
    return marks, np.flatnonzero(is_end)


def _cut_lines(
    block: bytes,
    arr: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    nexts: np.ndarray,
    marks: np.ndarray,
    nl: np.ndarray,
) -> tuple[np.ndarray, ...] | None:
    """Where the pieces of each line that may be fast begin and end (module doc, step 2).

    Lines with a NUL or non-ASCII byte, fewer than four commas or over
    :data:`MAX_SHAPE_LINE` bytes are left out. Returns the indices of the other lines and,
    for each, its start, next line's start, B's start and end, last comma, time's end (a
    ``\r`` left out) and whether B is there; None when no line is left. ``marks`` and
    ``nl``: see :func:`_marks`.
    """
    first = np.empty_like(nl)  # index in marks of each line's first comma (if it has one)
    first[0] = 0
    first[1:] = nl[:-1] + 1
    ok = (nl - first >= 4) & (ends - starts <= MAX_SHAPE_LINE)
    signed = arr.view(np.int8)  # a NUL is 0, a non-ASCII byte below 0
    if signed.min() <= 0:  # one pass (isascii and a search for NUL: two, 5x the time)
        special = np.flatnonzero(signed <= 0)
        ok[np.searchsorted(ends, special)] = False
    idx = np.flatnonzero(ok)
    if not len(idx):
        return None
    s, e, nx = starts[idx], ends[idx], nexts[idx]
    fi = first[idx]
    c1, c2, c3 = marks[fi], marks[fi + 1], marks[fi + 2]
    lc = marks[nl[idx] - 1]
    has_v = arr[c1 + 1] == _V  # the format version field: the timestamp comes after it
    bstart = np.where(has_v, c2 + 1, c1 + 1)
    bcomma = np.where(has_v, c3, c2)
    has_b = _digit(arr[bstart])
    bend = np.where(has_b, bcomma, bstart)
    te = e - (arr[np.maximum(e - 1, 0)] == _CR)
    te = np.maximum(te, lc + 1)
    return idx, s, nx, bstart, bend, lc, te, has_b


def _digit(values: np.ndarray) -> np.ndarray:
    return (values >= _ZERO) & (values <= _NINE)


def _pieces(block: bytes, offsets: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
    """The pieces of ``block`` between consecutive ``offsets``, null where not ``valid``."""
    bitmap = np.packbits(valid, bitorder="little")
    return pa.Array.from_buffers(
        kind,
        len(offsets) - 1,
        [pa.py_buffer(bitmap), pa.py_buffer(offsets), pa.py_buffer(block)],
    )


def _numbers(block: bytes, offsets: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The ``valid`` pieces read as numbers; NaN elsewhere and where not a plain number."""
    pieces = _pieces(block, offsets, valid, pa.string())  # valid pieces are ASCII
    try:
        return _floats(pc.cast(pieces, pa.float64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        plain = pc.match_substring_regex(pieces, _NUMBER).fill_null(False)
        kept = _pieces(block, offsets, valid & plain.to_numpy(zero_copy_only=False), pa.string())
        return _floats(pc.cast(kept, pa.float64()))


def _floats(values: pa.Array) -> np.ndarray:
    """A float64 Arrow array as numpy, NaN where null, read from its buffers (Arrow's own
    conversion of an array with nulls, like its scalars, imports pandas: the scanner must
    not wait for that import, which the analysis makes meanwhile)."""
    n, offset = len(values), values.offset
    numbers = np.frombuffer(values.buffers()[1], dtype=np.float64, count=n + offset)[offset:]
    if not values.null_count:
        return numbers
    bitmap = np.frombuffer(values.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bitmap, count=n + offset, bitorder="little")[offset:].view(bool)
    return np.where(valid, numbers, np.nan)


def _interleaved(
    bounds: _Bounds,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Offsets of each line's pieces ``bounds`` (start and stop arrays, one entry per line)
    back to back, the gaps between them null; and which pieces are not gaps. None when the
    pieces overlap (Arrow would read out of bounds)."""
    k, m = len(bounds), len(bounds[0][0])
    offsets = np.empty(2 * k * m, dtype=np.int32)
    for p, (start, stop) in enumerate(bounds):
        offsets[2 * p :: 2 * k] = start
        offsets[2 * p + 1 :: 2 * k] = stop
    if (np.diff(offsets) < 0).any():  # pragma: no cover - cannot happen (_cut_lines)
        return None
    valid = np.zeros(2 * k * m - 1, dtype=bool)
    valid[0::2] = True
    return offsets, valid


def _piece_numbers(block: bytes, bounds: _Bounds) -> np.ndarray:
    """One piece per line (``bounds``: see :func:`_interleaved`) read as a number, NaN where
    it is not a plain one."""
    cut = _interleaved(bounds)
    if cut is None:  # pragma: no cover - cannot happen: no line is read as a number
        return np.full(len(bounds[0][0]), np.nan)
    return _numbers(block, *cut)[0::2]


def _stamps(block: bytes, bstart: np.ndarray, bend: np.ndarray, has_b: np.ndarray) -> np.ndarray:
    """Piece B of each line read as a number, NaN where it is not one or there is no B."""
    stamps = np.full(len(has_b), np.nan)
    stamped = np.flatnonzero(has_b)
    if len(stamped):
        stamps[stamped] = _piece_numbers(block, [(bstart[stamped], bend[stamped])])
    return stamps


def _piece_codes(block: bytes, bounds: _Bounds) -> tuple[int, list[np.ndarray]] | None:
    """How many distinct pieces ``bounds`` (see :func:`_interleaved`) cut, and for each of a
    line's pieces, each line's index into them; None when the pieces overlap."""
    cut = _interleaved(bounds)
    if cut is None:  # pragma: no cover - cannot happen (_cut_lines)
        return None
    encoded = _pieces(block, *cut, pa.binary()).dictionary_encode()
    indices = np.frombuffer(
        encoded.indices.buffers()[1], dtype=np.int32, count=len(encoded.indices)
    ).astype(np.int64)
    k = len(bounds)
    return max(len(encoded.dictionary), 1), [indices[2 * p :: 2 * k] for p in range(k)]


def _shapes(codes: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each element's index into the distinct ``codes`` (all below ``bound``), the distinct
    codes, and the position of each one's first element."""
    n = len(codes)
    if bound > 4 * n + 65_536:  # sparse codes (a block of distinct lines): sort them
        uniq, firsts, index = np.unique(codes, return_index=True, return_inverse=True)
        return index.astype(np.int64), uniq.astype(np.int64), firsts.astype(np.int64)
    first = np.full(bound, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    uniq = np.flatnonzero(first < n)
    lookup = np.empty(bound, dtype=np.int64)
    lookup[uniq] = np.arange(len(uniq), dtype=np.int64)
    return lookup[codes], uniq, first[uniq]


def scan_blocks(
    scanner: Scanner,
    path: str,
    blocks: Iterable[bytes],
    stats: ReadStats | None = None,
    finder: TableFinder | None = None,
) -> InputScan:
    """Account for every line of ``blocks`` (see :func:`~dnnlens.io.inputs.open_blocks`)."""
    scan = InputScan(path)
    bulk = BulkScan(scanner, scan, stats, finder)
    for block in blocks:
        bulk.feed(block)
    if finder is not None:
        finder.close()
    scanner.finish_scan(scan)
    return scan


def scan_source(
    scanner: Scanner,
    source: InputSource,
    finder: TableFinder | None = None,
    wrap: Callable[[Iterator[bytes]], Iterable[bytes]] | None = None,
) -> InputScan:
    """Read and scan one source in blocks; an unreadable source gives an empty scan.

    Everything learnt while reading (compression, invalid bytes, notes, a read error) lands
    on the scan. ``wrap`` may wrap the block iterator (a progress bar). A UTF-16 source is
    scanned line by line (:meth:`Scanner.scan_chunks`).
    """
    stats = ReadStats()
    try:
        opened = open_blocks(source, stats)
    except InputError as exc:
        scan = InputScan(source.path)
        scan.read_error = str(exc)
        return scan
    if stats.encoding == "utf-16":
        chunks: Iterable[list[str]] = opened  # type: ignore[assignment]
        if finder is not None:
            chunks = finder.watch(chunks)
        scan = scanner.scan_chunks(source.path, chunks)
    else:
        blocks: Iterable[bytes] = opened  # type: ignore[assignment]
        if wrap is not None:
            blocks = wrap(opened)  # type: ignore[arg-type]
        scan = scan_blocks(scanner, source.path, blocks, stats, finder)
    scan.add_reading(stats)
    return scan


__all__ = [
    "MAX_SHAPE_BYTES",
    "MAX_SHAPE_LINE",
    "BulkScan",
    "ShapeMemo",
    "scan_blocks",
    "scan_source",
]
