"""The text a report shows for an evidence line, from what the reader kept: never re-read.

An input may be a pipe, standard input or a file that changed since: reading it a second
time would show another line or nothing. What the reader kept of every line it parsed is
enough to say what the line said:

* an event (create/exec) line: its record's fields and its own time (and timestamp), in
  the order oneDNN prints them, after the marker of its release family
  (``onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,<mds>,...,<time>``): the
  line as printed, less a prefix before the marker (``[rank0]:``) and extra blanks;
* a diagnostic line (check, dispatch, error, warning): its record's fields, its message
  and the source location;
* a malformed or foreign line the reader kept as an example: its text as read.

A line none of these holds (an info line, a line of a profiler table, a line the window
left out) has no text, and :func:`line_texts` says why in :data:`NOT_KEPT`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from dnnlens.model import ParsedLog
from dnnlens.parsers.records import (
    FAMILY_DNNL,
    FAMILY_MKLDNN_0X,
    FAMILY_MKLDNN_1_0,
    FAMILY_ONEDNN_COMPONENT,
    FAMILY_ONEDNN_FLAT,
    FAMILY_ONEDNN_V1,
    LineRecord,
)

#: What a report says where a line has no text: the reader did not keep that line.
NOT_KEPT = "(the reader keeps no text of this line: not an event or diagnostic line it parsed)"

__all__ = ["NOT_KEPT", "diagnostic_text", "event_text", "line_texts"]


def _number(value: float) -> str:
    """A time as oneDNN prints it (``%g``-like: no trailing ``.0``), exact to the bit."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _operation(rec: LineRecord) -> str:
    return f"{rec.operation}:{rec.cache}" if rec.cache else rec.operation


#: The marker each release family starts its lines with (format doc §1).
MARKERS = {
    FAMILY_MKLDNN_0X: "mkldnn_verbose",
    FAMILY_MKLDNN_1_0: "mkldnn_verbose",
    FAMILY_DNNL: "dnnl_verbose",
    FAMILY_ONEDNN_FLAT: "onednn_verbose",
    FAMILY_ONEDNN_COMPONENT: "onednn_verbose",
    FAMILY_ONEDNN_V1: "onednn_verbose,v1",
}


def _head(rec: LineRecord, timestamp_ms: float = math.nan) -> list[str]:
    """The marker, the timestamp (when printed) and the component (from v3.3)."""
    head = [MARKERS.get(rec.family, "onednn_verbose")]
    if math.isfinite(timestamp_ms):
        head.append(f"{timestamp_ms:.6f}")
    if rec.family in (FAMILY_ONEDNN_COMPONENT, FAMILY_ONEDNN_V1):
        head.append(rec.component or "primitive")
    return head


def event_text(rec: LineRecord, time_ms: float, timestamp_ms: float = math.nan) -> str:
    """An event line as the reader parsed it: its record's fields and its own time."""
    engine = [] if rec.family == FAMILY_MKLDNN_0X else [rec.engine]
    fields = [*_head(rec, timestamp_ms), _operation(rec), *engine, rec.kind, rec.impl]
    fields += [rec.prop_kind, rec.mds, rec.attrs, rec.aux, rec.problem]
    if rec.extra:
        fields.append(rec.extra)
    if math.isfinite(time_ms):
        fields.append(_number(time_ms))
    return ",".join(fields)


def diagnostic_text(rec: LineRecord) -> str:
    """A diagnostic line as the reader parsed it: its record's fields, message, location."""
    fields = [*_head(rec), rec.operation, *([rec.kind] if rec.kind else [])]
    if rec.engine:  # a dispatch line about one implementation: the primitive's fields
        fields += [rec.engine, rec.kind, rec.impl, rec.prop_kind, rec.mds, rec.attrs]
        fields += [rec.aux, rec.problem]
    fields += [f for f in (rec.text, rec.location) if f]
    return ",".join(fields)


def _rows(
    frame: pd.DataFrame, wanted: dict[str, set[int]]
) -> Iterable[tuple[str, int, int, float, float]]:
    """(input, line, record, time, timestamp) of the rows of ``frame`` that are wanted."""
    if frame.empty:
        return
    inputs = frame["input"]
    lines = frame["line"].to_numpy(dtype=np.int64)
    records = frame["record"].to_numpy(dtype=np.int64)
    times = frame["time_ms"].to_numpy(dtype=np.float64) if "time_ms" in frame else None
    stamps = frame["timestamp_ms"].to_numpy(dtype=np.float64) if "timestamp_ms" in frame else None
    for path, want in wanted.items():
        near = np.isin(lines, list(want))  # a few lines: the input compared on those only
        hit = np.flatnonzero(near)
        hit = hit[(inputs.iloc[hit] == path).to_numpy(dtype=bool)]
        for i in hit.tolist():
            yield (
                path,
                int(lines[i]),
                int(records[i]),
                float(times[i]) if times is not None else math.nan,
                float(stamps[i]) if stamps is not None else math.nan,
            )


def line_texts(log: ParsedLog, wanted: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The text of each wanted ``(input, line)`` the reader kept (see the module doc)."""
    by_path: dict[str, set[int]] = {}
    for path, line in wanted:
        by_path.setdefault(path, set()).add(int(line))
    out: dict[tuple[str, int], str] = {}
    if not by_path:
        return out
    records = log.records
    for path, line, rid, time_ms, stamp in _rows(log.events, by_path):
        out[(path, line)] = event_text(records[rid], time_ms, stamp)
    for path, line, rid, _, _ in _rows(log.diagnostics, by_path):
        out[(path, line)] = diagnostic_text(records[rid])
    for scan in log.scans:
        want = by_path.get(scan.path)
        if not want:
            continue
        kept = {**dict(scan.foreign_examples), **scan.malformed_text}
        for line in want:
            if (scan.path, line) not in out and line in kept:
                out[(scan.path, line)] = kept[line].rstrip("\r\n")
    return out
