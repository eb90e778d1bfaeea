"""Read PyTorch profiler chrome traces into a table of framework ops, streaming.

``prof.export_chrome_trace()`` and ``tensorboard_trace_handler`` write one JSON object
(``.json`` or ``.json.gz``; gzip is recognised by content) whose ``traceEvents`` array can
hold millions of events. The file is read in chunks and each event is decoded on its own
with :meth:`json.JSONDecoder.raw_decode` over a sliding buffer, so memory holds the op
table, not the JSON. A file that ends early (a crashed run, a copy cut short) keeps every
complete event read before the cut and reports one clear error.

``ops`` has one row per complete (``"ph": "X"``) event, in file order:

=============== ==========================================================================
column          meaning
=============== ==========================================================================
name            op or annotation name (``aten::mkldnn_convolution``, ``ProfilerStep#3``)
cat             category (``cpu_op``, ``user_annotation``, ``python_function``, ...)
pid, tid        process and thread as printed (strings)
ts_us, dur_us   start and duration in the trace's microseconds
end_us          ``ts_us + dur_us``
input_dims      ``args["Input Dims"]`` as the table prints them, ``[[4, 3, 64, 64], [16, 3,
                3, 3], []]`` (valid JSON; needs ``record_shapes=True``), or ""
stack           ``args["Call stack"]`` (``with_stack=True`` on older torch), or ""
external_id     ``args["External id"]``, -1 without one
sequence        ``args["Sequence number"]`` (forward/backward pairing), -1 without one
parent          row of the innermost op enclosing this one on its thread, -1 for none
depth           nesting depth on its thread (0 for a top-level op)
self_us         ``dur_us`` minus the time of the direct children
=============== ==========================================================================

Timestamps: torch >= 2.0 (kineto) writes ``ts`` relative to ``baseTimeNanoseconds`` (a
top-level key; torch 2.13 writes it), so ``epoch ms = baseTimeNanoseconds / 1e6 + ts / 1e3``
(:meth:`TraceData.epoch_ms`), the axis of ``ONEDNN_VERBOSE_TIMESTAMP=1`` timestamps on
Linux. Older traces without the key wrote epoch microseconds directly; that is assumed when
the timestamps are that large, otherwise :attr:`TraceData.base_time_ms` is None.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from dnnlens.parsers.torch_table import ProfilerTable, TableFinder

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_CHARS = 1 << 20
#: Give up looking for the end of one JSON value after this many characters.
MAX_VALUE_CHARS = 256 << 20
#: Timestamps above this many microseconds (year 2001) are taken as epoch microseconds.
EPOCH_US_THRESHOLD = 1e15
_WS = re.compile(r"[ \t\n\r]*")
TRACE_SUFFIXES = (".json", ".json.gz")

OP_COLUMNS = (
    "name",
    "cat",
    "pid",
    "tid",
    "ts_us",
    "dur_us",
    "end_us",
    "input_dims",
    "stack",
    "external_id",
    "sequence",
    "parent",
    "depth",
    "self_us",
)


class TraceError(Exception):
    """The input is not a readable chrome trace (message is one readable line)."""


@dataclass
class TraceData:
    """One parsed chrome trace."""

    path: str
    ops: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    base_time_ms: float | None = None
    #: profiled span (start, end) in trace microseconds, from the profiler's span event
    window_us: tuple[float, float] | None = None
    events: int = 0
    skipped: Counter = field(default_factory=Counter)
    error: str | None = None

    def epoch_ms(self, ts_us: Any) -> Any:
        """Trace microseconds -> milliseconds since the epoch (NaN without a base time)."""
        if self.base_time_ms is None:
            return ts_us * math.nan
        return self.base_time_ms + ts_us / 1e3


@dataclass
class FrameworkData:
    """Framework profiler output found among the inputs (``ParsedLog.framework``)."""

    traces: list[TraceData] = field(default_factory=list)
    tables: list[ProfilerTable] = field(default_factory=list)
    #: input path -> [(line, "start" | "stop")] of profiler marker lines in that log
    markers: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.traces or self.tables)


# --------------------------------------------------------------------------------------------
# detection


def has_trace_suffix(path: str) -> bool:
    """True for ``*.json`` and ``*.json.gz`` names."""
    return path.lower().endswith(TRACE_SUFFIXES)


def starts_like_json(head: bytes) -> bool:
    """True if ``head`` (the first bytes, gunzipped if need be) opens a JSON object."""
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    return text[:1] == b"{"


def sniff(raw: BinaryIO) -> bool:
    """Peek at a buffered binary stream (not consuming it): does it hold a JSON object?"""
    peek = getattr(raw, "peek", None)
    if peek is None:
        return False
    head = peek(4096)[:4096]
    if head[:2] == GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
        except zlib.error:
            return False
    return starts_like_json(head)


# --------------------------------------------------------------------------------------------
# the streaming JSON reader


class _Reader:
    """A sliding window over a text stream with raw_decode of one value at a time."""

    def __init__(self, text: io.TextIOBase) -> None:
        self._text = text
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front of buf
        self._decoder = json.JSONDecoder()

    def offset(self) -> int:
        """Characters read before the current position."""
        return self.consumed + self.pos

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self._text.read(CHUNK_CHARS)
        if not data:
            self.eof = True
            return False
        self.consumed += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next non-blank character ("" at the end of the input)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def take(self, char: str) -> bool:
        """Consume ``char`` if it comes next."""
        if self.peek() == char:
            self.pos += 1
            return True
        return False

    def value(self) -> Any:
        """Decode the next JSON value; raise TraceError when it is cut off or invalid."""
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos < MAX_VALUE_CHARS and self._fill():
                    continue
                at = self.consumed + exc.pos
                if self.eof and (exc.pos >= len(self.buf) - 1 or "Unterminated" in exc.msg):
                    raise TraceError(f"the trace ends early (character {at:,})") from None
                raise TraceError(f"invalid JSON at character {at:,}: {exc.msg}") from None
            if end == len(self.buf) and self._fill():  # a number may go on in the next chunk
                continue
            self.pos = end
            return value


class _Codes:
    """A categorical column being filled: one int code per row, each distinct value once."""

    def __init__(self) -> None:
        self.codes = array("i")
        self.index: dict[str, int] = {}

    def add(self, value: str) -> None:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.index)
        self.codes.append(code)

    def categorical(self) -> pd.Categorical:
        values = list(self.index)
        codes = (
            np.frombuffer(self.codes, dtype=np.int32)
            if len(self.codes)
            else np.zeros(0, dtype=np.int32)
        )
        if not values:
            return pd.Categorical.from_codes(codes, categories=[])
        # categories in sorted order, like pd.Categorical(list) gives
        order = np.argsort(np.array(values, dtype=object))
        remap = np.empty(len(values), dtype=np.int32)
        remap[order] = np.arange(len(values), dtype=np.int32)
        return pd.Categorical.from_codes(remap[codes], categories=[values[i] for i in order])


class _OpColumns:
    """The complete events as compact columns (codes and machine numbers, not objects),
    so memory grows by tens of bytes per op however large the JSON of each event is."""

    def __init__(self) -> None:
        self.name, self.cat, self.pid, self.tid = _Codes(), _Codes(), _Codes(), _Codes()
        self.dims, self.stack = _Codes(), _Codes()
        self.ts, self.dur = array("d"), array("d")
        self.external, self.sequence = array("q"), array("q")

    def add(self, ev: dict[str, Any]) -> None:
        get = ev.get
        args = get("args") or _NO_ARGS
        self.name.add(_text(get("name")))
        self.cat.add(_text(get("cat")))
        self.pid.add(_text(get("pid")))
        self.tid.add(_text(get("tid")))
        self.ts.append(_float(get("ts")))
        self.dur.append(_float(get("dur")))
        dims = args.get("Input Dims")
        self.dims.add("" if dims is None else _dims_text(dims))
        stack = args.get("Call stack")
        self.stack.add("" if stack is None else _text(stack))
        self.external.append(_int(args.get("External id")))
        self.sequence.append(_int(args.get("Sequence number")))


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    return (
        ""
        if value is None
        else str(value)
        if isinstance(value, int | float)
        else (json.dumps(value))
    )


_NO_ARGS: dict[str, Any] = {}


def _dims_text(dims: Any) -> str:
    """Input dims as the table prints them: ``[[4, 3, 64, 64], [16, 3, 3, 3], []]``.

    ``repr`` of nested int lists is that text and valid JSON; anything else goes through
    json.dumps (a ``None`` would otherwise print as Python).
    """
    text = repr(dims)
    return text if _DIMS_OK.fullmatch(text) else json.dumps(dims)


_DIMS_OK = re.compile(r"[\[\]0-9, -]*")


def _float(value: Any) -> float:
    if type(value) is float:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if value is None:
        return -1
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return -1


def _nesting(
    thread: np.ndarray, ts: np.ndarray, end: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """parent, depth and self time of every op, per thread, by a stack sweep."""
    n = len(ts)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int32)
    child_time = np.zeros(n, dtype=np.float64)
    order = np.lexsort((-dur, ts, thread))
    stack: list[int] = []
    current = None
    eps = 1e-3  # trace times have microsecond decimals: tolerate rounding
    for i in order.tolist():
        if thread[i] != current:
            current, stack = thread[i], []
        while stack and end[stack[-1]] <= ts[i] + eps:
            stack.pop()
        if stack:
            p = stack[-1]
            parent[i] = p
            depth[i] = len(stack)
            child_time[p] += dur[i]
        stack.append(i)
    return parent, depth, np.maximum(dur - child_time, 0.0)


def _ops_frame(cols: _OpColumns) -> pd.DataFrame:
    ts = np.frombuffer(cols.ts, dtype=np.float64) if len(cols.ts) else np.zeros(0)
    dur = (
        np.nan_to_num(np.frombuffer(cols.dur, dtype=np.float64)) if len(cols.dur) else (np.zeros(0))
    )
    end = ts + dur
    pid, tid = cols.pid.categorical(), cols.tid.categorical()
    thread = pid.codes.astype(np.int64) * (len(tid.categories) + 1) + tid.codes
    parent, depth, self_us = _nesting(thread, ts, end, dur)
    return pd.DataFrame(
        {
            "name": cols.name.categorical(),
            "cat": cols.cat.categorical(),
            "pid": pid,
            "tid": tid,
            "ts_us": ts.copy(),
            "dur_us": dur,
            "end_us": end,
            "input_dims": cols.dims.categorical(),
            "stack": cols.stack.categorical(),
            "external_id": np.array(cols.external, dtype=np.int64),
            "sequence": np.array(cols.sequence, dtype=np.int64),
            "parent": parent,
            "depth": depth,
            "self_us": self_us,
        },
        columns=list(OP_COLUMNS),
    )


#: Whitespace, then an optional comma, then whitespace: what separates two events.
_SEP = re.compile(r"[ \t\n\r]*(,?)[ \t\n\r]*")
#: The fast loop stops this far from the end of the buffer and lets _Reader refill it.
_MARGIN = 1 << 16


def _read_events(reader: _Reader, on_event: Callable[[Any], None]) -> None:
    """Read a JSON array of events (the ``[`` already taken) up to its ``]``.

    The inner loop decodes straight from the buffer while it holds more than ``_MARGIN``
    characters; near its end (or on anything unusual) one event goes the careful way,
    through the reader, which refills and reports cut-off or invalid JSON.
    """
    decode = reader._decoder.raw_decode
    while True:
        buf = reader.buf
        pos = _WS.match(buf, reader.pos).end()
        limit = len(buf) if reader.eof else len(buf) - _MARGIN
        expect_value = True
        while pos < limit:
            if buf[pos] == "]":
                reader.pos = pos + 1
                return
            try:
                event, pos = decode(buf, pos)
            except json.JSONDecodeError:
                break
            on_event(event)
            m = _SEP.match(buf, pos)
            if not m.group(1):  # no comma: the array must end here
                reader.pos = m.end()
                expect_value = False
                break
            pos = m.end()
        else:
            reader.pos = pos
        if expect_value:
            reader.pos = pos
            char = reader.peek()
            if char == "]":
                reader.pos += 1
                return
            if char == "":
                raise TraceError("the trace ends early, inside traceEvents")
            on_event(reader.value())
            if reader.take(","):
                continue
        if reader.peek() == "":
            raise TraceError("the trace ends early, inside traceEvents")
        if not reader.take("]"):
            raise TraceError(
                f"invalid JSON at character {reader.offset():,}: expected , or ] between events"
            )
        return


def parse_trace_text(text: io.TextIOBase, path: str = "<trace>") -> TraceData:
    """Parse a chrome trace from a text stream; never raises on bad content."""
    reader = _Reader(text)
    cols = _OpColumns()
    metadata: dict[str, Any] = {}
    skipped: Counter = Counter()
    spans: list[tuple[float, float]] = []
    count = 0

    def on_event(ev: Any) -> None:
        nonlocal count
        count += 1
        if not isinstance(ev, dict):
            skipped["not an object"] += 1
            return
        ph = ev.get("ph")
        if ph != "X":
            skipped[str(ph)] += 1
            return
        if ev.get("cat") == "Trace":  # the profiler's own span: the profiled window
            ts, dur = _float(ev.get("ts")), _float(ev.get("dur"))
            spans.append((ts, ts + dur))
            return
        cols.add(ev)

    error = None
    try:
        first = reader.peek()
        if first == "[":  # the JSON Array Format: just the events
            reader.pos += 1
            _read_events(reader, on_event)
        elif first == "{":
            reader.pos += 1
            _read_object(reader, metadata, on_event)
        else:
            raise TraceError("not a chrome trace (no JSON object at the start)")
    except TraceError as exc:
        error = f"{path}: {exc}; {count:,} events were read"
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        error = f"{path}: truncated or corrupt gzip stream ({exc}); {count:,} events were read"
    except OSError as exc:
        error = f"{path}: read error ({exc.strerror or exc}); {count:,} events were read"
    ops = _ops_frame(cols)
    base = _base_time_ms(metadata, ops)
    window = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    if window is None and len(ops):
        window = (float(ops["ts_us"].min()), float(ops["end_us"].max()))
    return TraceData(
        path=path,
        ops=ops,
        metadata=metadata,
        base_time_ms=base,
        window_us=window,
        events=count,
        skipped=skipped,
        error=error,
    )


def _read_object(
    reader: _Reader, metadata: dict[str, Any], on_event: Callable[[Any], None]
) -> None:
    """Read the top-level object: metadata keys kept, ``traceEvents`` streamed."""
    while True:
        char = reader.peek()
        if char == "}":
            reader.pos += 1
            return
        if char == "":
            raise TraceError("the trace ends early")
        key = reader.value()
        if not isinstance(key, str) or not reader.take(":"):
            raise TraceError(f"invalid JSON at character {reader.offset():,}: expected a key")
        if key == "traceEvents" and reader.take("["):
            _read_events(reader, on_event)
        else:
            metadata[key] = reader.value()
        if not reader.take(","):
            if reader.peek() == "":
                raise TraceError("the trace ends early")
            if not reader.take("}"):
                raise TraceError(f"invalid JSON at character {reader.offset():,}: expected , or }}")
            return


def _base_time_ms(metadata: dict[str, Any], ops: pd.DataFrame) -> float | None:
    base = metadata.get("baseTimeNanoseconds")
    if isinstance(base, int | float) and not isinstance(base, bool):
        return float(base) / 1e6
    if len(ops) and float(ops["ts_us"].median()) > EPOCH_US_THRESHOLD:
        return 0.0
    return None


class _GunzipUntilError(io.RawIOBase):
    """Gunzip ``raw``; a truncated or corrupt stream ends the data instead of raising.

    Everything decompressed before the damage is delivered; :attr:`error` says what
    happened. (``GzipFile.read(n)`` would drop the data of the call that hit the damage.)
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.error: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.error is not None:
            return 0
        try:
            data = self._gz.read1(len(buffer))
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            what = "truncated" if isinstance(exc, EOFError) else "corrupt"
            self.error = f"{what} gzip stream ({exc})"
            return 0
        buffer[: len(data)] = data
        return len(data)


def parse_trace_stream(raw: BinaryIO, path: str = "<trace>") -> TraceData:
    """Parse a chrome trace from a binary stream (plain or gzip, recognised by content)."""
    if not hasattr(raw, "peek"):
        raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    gunzip = None
    binary: Any = raw
    if raw.peek(2)[:2] == GZIP_MAGIC:  # type: ignore[attr-defined]
        gunzip = _GunzipUntilError(raw)
        binary = io.BufferedReader(gunzip)
    trace = parse_trace_text(io.TextIOWrapper(binary, encoding="utf-8", errors="replace"), path)
    if gunzip is not None and gunzip.error is not None:
        trace.error = f"{path}: {gunzip.error}; {trace.events:,} events were read"
    return trace


def read_trace(path: str) -> TraceData:
    """Parse the chrome trace in file ``path``; raise TraceError only if it cannot be opened."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror or exc})") from None
    with raw:
        return parse_trace_stream(raw, path)


def parse_trace_json(text: str, path: str = "<trace>") -> TraceData:
    """Parse a chrome trace held in a string (tests, notebooks)."""
    return parse_trace_text(io.StringIO(text), path)


# --------------------------------------------------------------------------------------------
# used by dnnlens.reading: which inputs are traces, and the tables inside the others


class FrameworkReader:
    """Collects framework data while :func:`dnnlens.reading.load` reads the inputs."""

    def __init__(self) -> None:
        self.data = FrameworkData()
        self._finders: list[TableFinder] = []

    def take_trace(self, path: str) -> bool:
        """Parse ``path`` as a trace if it is one (by name or content); True if it was."""
        if path == "-":
            import sys

            stdin = sys.stdin.buffer
            if not sniff(stdin):  # type: ignore[arg-type]
                return False
            trace = parse_trace_stream(stdin, path)  # type: ignore[arg-type]
        else:
            try:
                raw = open(path, "rb")  # noqa: SIM115 - closed below
            except OSError:
                return False  # the line reader reports it
            with raw:
                if not (has_trace_suffix(path) or sniff(raw)):
                    return False
                trace = parse_trace_stream(raw, path)
            if trace.events == 0 and trace.error is None:
                # JSON, but no trace event in it (a manifest, a config): read it as lines,
                # so that every line is accounted for and the user is told what it is
                return False
        self.data.traces.append(trace)
        if trace.error:
            self.data.errors.append(trace.error)
        return True

    def finder(self, path: str) -> TableFinder:
        """A table finder for the log ``path`` (see :meth:`TableFinder.watch`)."""
        finder = TableFinder(path)
        self._finders.append(finder)
        return finder

    def result(self) -> FrameworkData | None:
        """The framework data found, None if there is none."""
        for f in self._finders:
            self.data.tables.extend(f.tables)
            self.data.errors.extend(f.errors)
            if f.markers:
                self.data.markers[f.source] = list(f.markers)
        return self.data if self.data else None
