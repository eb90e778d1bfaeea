"""The text a report shows for an evidence line, from what the reader kept: never re-read.

An input may be a pipe, standard input or a file that changed since: reading it a second
time would show another line or nothing. What the reader kept of every line it parsed is
enough to say what the line said:

* an event (create/exec) or diagnostic line: the text its record was parsed from
  (``LineRecord.raw``, from the marker on), with the line's own timestamp put back after
  the marker and its own time at the end: the line as printed, less a prefix before the
  marker (``[rank0]:``) and blanks at its end. A diagnostic line keeps no timestamp (the
  reader reads and checks it, and keeps none), so a timestamped log's diagnostic lines are
  shown without theirs;
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
    LineRecord,
)

#: What a report says where a line has no text: the reader did not keep that line.
NOT_KEPT = "(the reader keeps no text of this line: not an event or diagnostic line it parsed)"

__all__ = ["NOT_KEPT", "diagnostic_text", "event_text", "line_texts"]


def _number(value: float) -> str:
    """A time as oneDNN prints it (``%g``-like: no trailing ``.0``), exact to the bit."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _with_timestamp(raw: str, timestamp_ms: float) -> str:
    """``raw`` with the timestamp where oneDNN prints it: after the marker and the format
    version (a field starting with ``v``), as the scanner took it out."""
    if not math.isfinite(timestamp_ms):
        return raw
    at = raw.find(",") + 1
    if raw.startswith("v", at):
        at = raw.find(",", at) + 1
    if at <= 0:
        return raw
    return f"{raw[:at]}{timestamp_ms:.6f},{raw[at:]}"


def event_text(rec: LineRecord, time_ms: float, timestamp_ms: float = math.nan) -> str:
    """An event line as the reader parsed it: its record's text, timestamp and time."""
    text = _with_timestamp(rec.raw, timestamp_ms)
    return f"{text},{_number(time_ms)}" if math.isfinite(time_ms) else text


def diagnostic_text(rec: LineRecord) -> str:
    """A diagnostic line as the reader parsed it (without a timestamp: none is kept)."""
    return rec.raw


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
