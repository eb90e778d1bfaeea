"""Read PyTorch profiler chrome traces into a table of framework ops, streaming.

``prof.export_chrome_trace()`` and ``tensorboard_trace_handler`` write one JSON object
(``.json`` or ``.json.gz``; gzip is recognised by content, a UTF-8 byte order mark is
allowed) whose ``traceEvents`` array can hold millions of events. The file is read in
chunks and each event is decoded on its own with :meth:`json.JSONDecoder.raw_decode` over a
sliding buffer, so memory holds the op table, not the JSON: each op costs one code into a
table of distinct (name, category, thread, shapes ...) signatures plus its numbers, a few
tens of bytes however large its JSON. A file that ends early (a crashed run, a copy cut
short) keeps every complete event read before the cut and reports one clear error.

Hostile content never ends the read: a value nested deeper than the JSON decoder allows,
a number with more digits than Python converts, an event without a finite time are each
skipped (found by an iterative scan, never by recursion), counted in
:attr:`TraceData.skipped` and named with their line in :attr:`TraceData.problems`.

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
input_types     ``args["Input type"]`` as JSON (``["float", "Scalar"]``), or ""; kept for
                the ops that copy or convert tensors (:data:`ARG_OPS`) only
input_strides   ``args["Input Strides"]`` as JSON, or ""; :data:`ARG_OPS` only
concrete_inputs ``args["Concrete Inputs"]`` as JSON (``["", "15", "False"]``: scalar
                arguments such as a dtype or memory format), or ""; :data:`ARG_OPS` only
stack           ``args["Call stack"]`` (``with_stack=True`` on older torch), or ""
external_id     ``args["External id"]``, -1 without one
sequence        ``args["Sequence number"]`` (forward/backward pairing), -1 without one
parent          row of the innermost op enclosing this one on its thread, -1 for none
depth           nesting depth on its thread (0 for a top-level op)
self_us         ``dur_us`` minus the time of the direct children
line            line of the file (of the decompressed text) where the event starts
=============== ==========================================================================

Timestamps: torch >= 2.0 (kineto) writes ``ts`` relative to ``baseTimeNanoseconds`` (a
top-level key; torch 2.13 writes it), so ``epoch ms = baseTimeNanoseconds / 1e6 + ts / 1e3``
(:meth:`TraceData.epoch_ms`), the axis of ``ONEDNN_VERBOSE_TIMESTAMP=1`` timestamps on
Linux. Older traces without the key wrote epoch microseconds directly; that is assumed when
the timestamps are that large, otherwise :attr:`TraceData.base_time_ms` is None.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import math
import re
import zlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from dnnlens.parsers.torch_table import ProfilerTable, TableFinder

if TYPE_CHECKING:
    import pandas as pd

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_CHARS = 1 << 20
#: Give up looking for the end of one JSON value after this many characters.
MAX_VALUE_CHARS = 256 << 20
#: Times (start or duration) past this many microseconds (285 years) are refused: a float
#: that large holds no microsecond, so ends, nesting and sums of them are noise.
MAX_TIME_US = float(1 << 53)
#: Timestamps above this many microseconds (year 2001) are taken as epoch microseconds.
EPOCH_US_THRESHOLD = 1e15
_WS = re.compile(r"[ \t\n\r]*")
#: A decode error this near the buffer's end may be a value the buffer cut (``-Infinity``).
_CUT_CHARS = 16
TRACE_SUFFIXES = (".json", ".json.gz")
#: Ops whose input types, strides and scalar arguments are kept: the ones that copy or
#: convert tensors (dtype casts, memory-format changes), batch norm (its ``training`` flag
#: and which gradients its backward computes) and convolution (dtype, layout, stride,
#: dilation and groups say why PyTorch ran one outside oneDNN). Other ops keep their dims.
ARG_OPS = frozenset(
    {
        "aten::to",
        "aten::_to_copy",
        "aten::copy_",
        "aten::contiguous",
        "aten::clone",
        "aten::native_batch_norm",
        "aten::_native_batch_norm_legit",
        "aten::_native_batch_norm_legit_no_training",
        "aten::native_batch_norm_backward",
        "aten::batch_norm_backward",
        "aten::convolution",
        "aten::_convolution",
        "aten::convolution_backward",
    }
)

OP_COLUMNS = (
    "name",
    "cat",
    "pid",
    "tid",
    "ts_us",
    "dur_us",
    "end_us",
    "input_dims",
    "input_types",
    "input_strides",
    "concrete_inputs",
    "stack",
    "external_id",
    "sequence",
    "parent",
    "depth",
    "self_us",
    "line",
)
#: The text fields of an event's signature, in order (one categorical column each).
_SIGNATURE_FIELDS = ("name", "cat", "pid", "tid", "input_dims", "extra", "stack")


class TraceError(Exception):
    """The input is not a readable chrome trace (message is one readable line)."""


class _Hostile(Exception):
    """A JSON value the decoder refuses although it may be well-formed (too deep, a
    number too long); the reader skips it."""


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
    #: events not in ``ops``: by ``ph`` (``M``, ``i``, ``s`` ...) or by what was wrong
    skipped: Counter = field(default_factory=Counter)
    error: str | None = None
    #: one line per kind of skipped malformed content, with the first line it was seen at
    problems: list[str] = field(default_factory=list)
    #: (pid, tid) as printed -> the thread's name from the ``thread_name`` metadata events
    thread_names: dict[tuple[str, str], str] = field(default_factory=dict)

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
    #: the error line of each trace without a usable op (not in ``traces``: an input error)
    unusable: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.traces or self.tables)


# --------------------------------------------------------------------------------------------
# detection


def has_trace_suffix(path: str) -> bool:
    """True for ``*.json`` and ``*.json.gz`` names."""
    return path.lower().endswith(TRACE_SUFFIXES)


def json_encoding(head: bytes) -> str:
    """The encoding of JSON text from its first bytes: a byte order mark, else the zero
    bytes around the first (ASCII) character tell UTF-16 and UTF-32 from UTF-8 (RFC 4627,
    section 3), so a trace PowerShell wrote is decoded before it is recognised."""
    return json.detect_encoding(head)


def starts_like_json(head: bytes) -> bool:
    """True if ``head`` (the first bytes, gunzipped if need be) opens a JSON object or an
    array of objects (after blanks and a byte order mark, in UTF-8, UTF-16 or UTF-32);
    ``[rank0]: ...`` does not."""
    text = head.decode(json_encoding(head), errors="replace").lstrip(" \t\r\n\ufeff")
    if text[:1] == "[":
        rest = text[1:].lstrip(" \t\r\n")
        return rest[:1] in ("{", "]", "")
    return text[:1] == "{"


def sniff(raw: BinaryIO) -> bool:
    """Peek at a buffered binary stream (not consuming it): does it hold JSON?"""
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

#: One token of the iterative skip over a value: a string, a bracket, or a run of the rest.
_SKIP_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|[^\[\]{}"]+', re.S)
_SCALAR = re.compile(r"[^,\]}\s]+")


class _Reader:
    """A sliding window over a text stream with raw_decode of one value at a time.

    It also counts lines: :meth:`line_at` gives the line of a position of the buffer, for
    positions that only move forward.
    """

    def __init__(self, text: io.TextIOBase) -> None:
        self._text = text
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front of buf
        self._decoder = json.JSONDecoder()
        self._line = 1  # the line of buf[_line_pos]
        self._line_pos = 0

    def offset(self) -> int:
        """Characters read before the current position."""
        return self.consumed + self.pos

    def line_at(self, pos: int) -> int:
        """The line of ``buf[pos]`` (``pos`` never behind the previous call's)."""
        if pos > self._line_pos:
            self._line += self.buf.count("\n", self._line_pos, pos)
            self._line_pos = pos
        return self._line

    def _fill(self, size: int = 0) -> bool:
        if self.eof:
            return False
        data = self._text.read(max(size, CHUNK_CHARS))
        if not data:
            self.eof = True
            return False
        self.line_at(self.pos)
        keep = min(self.pos, self._line_pos)  # the counted line stays inside the buffer
        self.consumed += keep
        self.buf = self.buf[keep:] + data
        self.pos -= keep
        self._line_pos -= keep
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
        """Decode the next JSON value; raise TraceError when it is cut off or invalid,
        _Hostile (after skipping it) when the decoder refuses a well-formed value."""
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # more text helps only a value cut by the buffer's end (an unterminated
                # string, a literal cut short): NUL padding fails at once, wherever it is;
                # the buffer doubles, so a long value is decoded a few times, not per chunk
                cut = "Unterminated" in exc.msg or len(self.buf) - exc.pos <= _CUT_CHARS
                held = len(self.buf) - self.pos
                if cut and held < MAX_VALUE_CHARS and self._fill(held):
                    continue
                at = self.consumed + exc.pos
                if self.eof and (exc.pos >= len(self.buf) - 1 or "Unterminated" in exc.msg):
                    raise TraceError(f"the trace ends early (character {at:,})") from None
                raise TraceError(f"invalid JSON at character {at:,}: {exc.msg}") from None
            except (RecursionError, ValueError) as exc:
                raise _Hostile(self.skip_value(exc)) from None
            if end == len(self.buf) and self._fill():  # a number may go on in the next chunk
                continue
            self.pos = end
            return value

    def skip_value(self, cause: BaseException) -> str:
        """Move past the value at ``pos`` without decoding it (an iterative scan of its
        strings and brackets: no recursion, whatever the nesting); say why it was refused."""
        reason = (
            "a value nested deeper than the JSON decoder allows"
            if isinstance(cause, RecursionError)
            else "a number too long to convert"
            if "digits" in str(cause)
            else f"a value the JSON decoder refused ({cause})"
        )
        self.peek()
        start = self.pos
        if self.buf[self.pos] not in "[{":
            pattern = _SKIP_TOKEN if self.buf[self.pos] == '"' else _SCALAR
            while True:
                m = pattern.match(self.buf, self.pos)
                if m and (m.end() < len(self.buf) or self.eof):
                    self.pos = m.end()
                    return reason
                if self.consumed + len(self.buf) - start > MAX_VALUE_CHARS or not self._fill():
                    raise TraceError("the trace ends early, inside a refused value")
        depth = 0
        while True:
            m = _SKIP_TOKEN.match(self.buf, self.pos)
            if m is None or (m.end() == len(self.buf) and not self.eof):
                if self.offset() - start > MAX_VALUE_CHARS or not self._fill():
                    raise TraceError("the trace ends early, inside a refused value")
                continue
            token = m.group()
            self.pos = m.end()
            if token in ("[", "{"):
                depth += 1
            elif token in ("]", "}"):
                depth -= 1
                if depth == 0:
                    return reason


class _OpColumns:
    """The complete events as compact columns: per event one signature code (into the
    distinct tuples of its text fields) and its numbers in machine arrays, so memory grows
    by about 44 bytes per op however large the JSON of each event is."""

    def __init__(self) -> None:
        self.index: dict[tuple[Any, ...], int] = {}
        self.keys: list[tuple[Any, ...]] = []
        self.sig = array("i")
        self.ts, self.dur = array("d"), array("d")
        self.external, self.sequence = array("q"), array("q")
        self.line = array("q")

    def add(self, ev: dict[str, Any], line: int) -> None:
        """Add one ``X`` event (TypeError, OverflowError or RecursionError: malformed)."""
        get = ev.get
        args = get("args")
        if type(args) is not dict:
            args = _NO_ARGS
        aget = args.get
        name = get("name")
        dims = aget("Input Dims")
        extra = None
        if name in ARG_OPS:
            extra = repr((aget("Input type"), aget("Input Strides"), aget("Concrete Inputs")))
        key = (
            name,
            get("cat"),
            get("pid"),
            get("tid"),
            None if dims is None else repr(dims),
            extra,
            aget("Call stack"),
        )
        code = self.index.get(key)
        if code is None:
            code = self.index[key] = len(self.keys)
            self.keys.append(key)
        ts = get("ts")
        dur = get("dur")
        ext = aget("External id")
        seq = aget("Sequence number")
        self.ts.append(ts if type(ts) is float else _float(ts))
        self.dur.append(dur if type(dur) is float else _float(dur))
        self.external.append(ext if type(ext) is int else _int(ext))
        self.sequence.append(seq if type(seq) is int else _int(seq))
        self.sig.append(code)
        self.line.append(line)

    def __len__(self) -> int:
        return len(self.sig)


_NO_ARGS: dict[str, Any] = {}


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)


def _json_text(value: Any) -> str:
    """A list or dict as JSON ("" for None); the repr of nested int lists is that text."""
    if value is None:
        return ""
    text = repr(value)
    return text if _DIMS_OK.fullmatch(text) else json.dumps(value)


_DIMS_OK = re.compile(r"[\[\]0-9, -]*")


def _from_repr(text: str | None) -> Any:
    """The value behind a ``repr`` made while reading (distinct values only)."""
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return text


def _float(value: Any) -> float:
    if type(value) is float:
        return value
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _int(value: Any) -> int:
    if type(value) is int and -(1 << 63) <= value < (1 << 63):
        return value
    if value is None or isinstance(value, bool) or not isinstance(value, int | float | str):
        return -1
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return -1
    return out if -(1 << 63) <= out < (1 << 63) else -1


def _nesting(
    thread: np.ndarray, ts: np.ndarray, end: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """parent, depth and self time of every op, per thread, by a stack sweep.

    Ops sorted by thread, start and longest first; an op's parent is the op on top of the
    stack once the ops that ended before it started are popped. The sweep walks plain
    lists in blocks, so its memory stays a few arrays of the op count.
    """
    n = len(ts)
    order = np.lexsort((-dur, ts, thread))
    thread_o = thread[order]
    bounds = (np.flatnonzero(np.diff(thread_o)) + 1).tolist()
    del thread_o
    ts_o, end_o = ts[order], end[order]
    parent_o = np.full(n, -1, dtype=np.int64)
    depth_o = np.zeros(n, dtype=np.int32)
    eps = 1e-3  # trace times have microsecond decimals: tolerate rounding
    block = 1 << 16
    for lo, hi in zip([0, *bounds], [*bounds, n], strict=True):
        stack: list[int] = []
        stack_end: list[float] = []
        for a in range(lo, hi, block):
            b = min(a + block, hi)
            starts, ends = ts_o[a:b].tolist(), end_o[a:b].tolist()
            parents, depths = [], []
            for k in range(b - a):
                t = starts[k] + eps
                while stack_end and stack_end[-1] <= t:
                    stack_end.pop()
                    stack.pop()
                parents.append(stack[-1] if stack else -1)
                depths.append(len(stack))
                stack.append(a + k)
                stack_end.append(ends[k])
            parent_o[a:b] = parents
            depth_o[a:b] = depths
    del ts_o, end_o
    parent = np.full(n, -1, dtype=np.int64)
    has = parent_o >= 0
    parent[order[has]] = order[parent_o[has]]
    del parent_o, has
    depth = np.empty(n, dtype=np.int32)
    depth[order] = depth_o
    del order, depth_o
    child = parent >= 0
    child_time = np.bincount(parent[child], weights=dur[child], minlength=n)
    return parent, depth, np.maximum(dur - child_time[:n], 0.0)


def _small_ints(values: np.ndarray) -> np.ndarray:
    """``values`` in int32 when they fit (ids, lines and rows nearly always do)."""
    if len(values) and (values.min() < -(1 << 31) or values.max() >= (1 << 31)):
        return values
    return values.astype(np.int32)


def _categorical(values: list[str], codes: np.ndarray) -> pd.Categorical:
    """A categorical column from per-signature texts and the signature codes."""
    import pandas as pd

    distinct = sorted(set(values))
    position = {v: i for i, v in enumerate(distinct)}
    per_signature = np.array([position[v] for v in values], dtype=np.int32)
    taken = per_signature[codes] if len(codes) else np.zeros(0, dtype=np.int32)
    return pd.Categorical.from_codes(taken, categories=distinct)


def _signature_texts(keys: list[tuple[Any, ...]]) -> dict[str, list[str]]:
    """Per text column, the text of each distinct signature."""
    texts: dict[str, list[str]] = {
        "name": [_text(k[0]) for k in keys],
        "cat": [_text(k[1]) for k in keys],
        "pid": [_text(k[2]) for k in keys],
        "tid": [_text(k[3]) for k in keys],
        "input_dims": [_json_text(_from_repr(k[4])) for k in keys],
        "stack": [_text(k[6]) for k in keys],
    }
    extras = [_from_repr(k[5]) if k[5] is not None else (None, None, None) for k in keys]
    for i, column in enumerate(("input_types", "input_strides", "concrete_inputs")):
        texts[column] = [
            _json_text(e[i]) if isinstance(e, tuple) and len(e) == 3 else "" for e in extras
        ]
    return texts


def _take(values: array, dtype: Any, keep: np.ndarray | None) -> np.ndarray:
    """A machine array as numpy (a copy: the array's buffer is freed by the caller)."""
    out = np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype)
    return out[keep] if keep is not None else out.copy()


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (JSON's ``"\\ud800"``: no character, and no
    UTF-8 for it) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _clean_value(value: Any) -> tuple[Any, bool]:
    """A decoded JSON value without lone surrogates, and whether it held one."""
    if isinstance(value, str):
        clean = _no_surrogates(value)
        return clean, clean != value
    if not isinstance(value, list | dict):
        return value, False
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):  # pragma: no cover - it was just decoded
        return value, False
    if not _SURROGATE.search(text):
        return value, False
    return json.loads(_no_surrogates(text)), True


def _replace_surrogates(
    texts: dict[str, list[str]], sig: np.ndarray, lines: np.ndarray, builder: _TraceBuilder
) -> None:
    """Lone surrogates in the signatures' texts become U+FFFD (checked per distinct
    signature, not per event), and a note says how many events held one."""
    hit: set[int] = set()
    for values in texts.values():
        for i, value in enumerate(values):
            if not value.isascii() and _SURROGATE.search(value):
                values[i] = _no_surrogates(value)
                hit.add(i)
    if hit:
        at = np.isin(sig, np.fromiter(hit, dtype=np.int32, count=len(hit)))
        if at.any():
            builder.notes.append(
                f"{builder.path}:{int(lines[at][0])}: {int(at.sum()):,} events with a lone "
                "surrogate (\\ud800-\\udfff, not a character) in their text, shown as U+FFFD"
            )


def _usable(cols: _OpColumns, builder: _TraceBuilder) -> np.ndarray | None:
    """Which events have a start and a duration to place them by (None: all of them).

    The others are counted and named by what is wrong, the first reason that holds: no
    finite start (or an infinite duration), no duration (a complete event has one), a
    negative one, or a time past :data:`MAX_TIME_US`.
    """
    ts = np.frombuffer(cols.ts, dtype=np.float64) if len(cols) else np.zeros(0)
    dur = np.frombuffer(cols.dur, dtype=np.float64) if len(cols) else np.zeros(0)
    with np.errstate(invalid="ignore"):
        checks = (
            ("an X event without a finite ts or dur", ~np.isfinite(ts) | np.isinf(dur)),
            ("an X event without a dur", np.isnan(dur)),
            ("an X event with a negative dur", dur < 0),
            (
                "an X event with a ts or dur past 2**53 us (no microsecond is left in it)",
                (np.abs(ts) > MAX_TIME_US) | (dur > MAX_TIME_US),
            ),
        )
    bad = np.zeros(len(ts), dtype=bool)
    lines = np.frombuffer(cols.line, dtype=np.int64) if len(cols) else np.zeros(0, np.int64)
    for what, hit in checks:
        hit = hit & ~bad
        if hit.any():
            at = lines[hit]
            builder.malformed(what, int(at[0]), len(at))
            bad |= hit
    return ~bad if bad.any() else None


def _ops_frame(cols: _OpColumns, builder: _TraceBuilder) -> pd.DataFrame:
    """The op table; events without a finite start time are dropped (and counted).

    Each column is made from its machine array, whose buffer is then released, and the
    frame keeps one block per column (no consolidation copy): the peak stays near the
    size of the table.
    """
    import pandas as pd

    keep = _usable(cols, builder)
    ts = _take(cols.ts, np.float64, keep)
    dur = _take(cols.dur, np.float64, keep)
    sig = _take(cols.sig, np.int32, keep)
    cols.ts = cols.dur = cols.sig = array("d")
    end = ts + dur
    texts = _signature_texts(cols.keys)
    _replace_surrogates(texts, sig, _take(cols.line, np.int64, keep), builder)
    columns: dict[str, Any] = {c: _categorical(texts[c], sig) for c in texts}
    del sig
    pid, tid = columns["pid"], columns["tid"]
    thread = pid.codes.astype(np.int64) * (len(tid.categories) + 1) + tid.codes
    parent, depth, self_us = _nesting(thread, ts, end, dur)
    del thread
    columns.update(ts_us=ts, dur_us=dur, end_us=end)
    columns["external_id"] = _small_ints(_take(cols.external, np.int64, keep))
    columns["sequence"] = _small_ints(_take(cols.sequence, np.int64, keep))
    cols.external = cols.sequence = array("q")
    columns.update(parent=_small_ints(parent), depth=depth, self_us=self_us)
    columns["line"] = _small_ints(_take(cols.line, np.int64, keep))
    cols.line = array("q")
    return pd.DataFrame({c: columns[c] for c in OP_COLUMNS}, copy=False)


#: Whitespace, then an optional comma, then whitespace: what separates two events.
_SEP = re.compile(r"[ \t\n\r]*(,?)[ \t\n\r]*")
#: The fast loop stops this far from the end of the buffer and lets _Reader refill it.
_MARGIN = 1 << 16


class _TraceBuilder:
    """What the events of one trace add up to, while they are read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cols = _OpColumns()
        self.skipped: Counter = Counter()
        self.spans: list[tuple[float, float]] = []
        self.thread_names: dict[tuple[str, str], str] = {}
        self.count = 0
        #: per kind of skipped content, the line it was first seen on
        self.skipped_lines: dict[str, int] = {}
        #: lines on content kept in another form (not skipped)
        self.notes: list[str] = []

    def event(self, ev: Any, line: int) -> None:
        self.count += 1
        if type(ev) is not dict:
            self.malformed("an event that is not a JSON object", line)
            return
        ph = ev.get("ph")
        if ph != "X":
            if ph == "M" and ev.get("name") == "thread_name":
                self._thread_name(ev)
            self.skipped[ph if type(ph) is str else _text(ph)[:20]] += 1
            return
        if ev.get("cat") == "Trace":  # the profiler's own span: the profiled window
            ts, dur = _float(ev.get("ts")), _float(ev.get("dur"))
            if abs(ts) <= MAX_TIME_US and 0 <= dur <= MAX_TIME_US:  # NaN fails both
                self.spans.append((ts, ts + dur))
            return
        try:
            self.cols.add(ev, line)
        except (TypeError, OverflowError, RecursionError, ValueError):
            self.malformed("an event with fields of the wrong type", line)

    def malformed(self, what: str, line: int, count: int = 1) -> None:
        self.skipped[what] += count
        self.skipped_lines.setdefault(what, line)

    def _thread_name(self, ev: dict[str, Any]) -> None:
        args = ev.get("args")
        name = args.get("name") if isinstance(args, dict) else None
        if isinstance(name, str):
            key = (_text(ev.get("pid")), _text(ev.get("tid")))
            self.thread_names.setdefault(key, _no_surrogates(name))

    def problems(self) -> list[str]:
        return [
            f"{self.path}:{line}: {self.skipped[what]:,} x {what} (skipped)"
            for what, line in self.skipped_lines.items()
        ] + self.notes


def _read_events(reader: _Reader, builder: _TraceBuilder) -> None:
    """Read a JSON array of events (the ``[`` already taken) up to its ``]``.

    The inner loop decodes straight from the buffer while it holds more than ``_MARGIN``
    characters; near its end (or on anything unusual) one event goes the careful way,
    through the reader, which refills, reports cut-off or invalid JSON and skips values
    the decoder refuses.
    """
    decode = reader._decoder.raw_decode
    on_event = builder.event
    line_at = reader.line_at
    while True:
        buf = reader.buf
        pos = _WS.match(buf, reader.pos).end()
        limit = len(buf) if reader.eof else len(buf) - _MARGIN
        expect_value = True
        go_on = False
        while pos < limit:
            if buf[pos] == "]":
                reader.pos = pos + 1
                return
            try:
                event, end = decode(buf, pos)
            except (json.JSONDecodeError, RecursionError, ValueError):
                break
            on_event(event, line_at(pos))
            m = _SEP.match(buf, end)
            if not m.group(1):  # no comma: the array ends here, unless the buffer did
                reader.pos = m.end()
                expect_value = False
                go_on = m.end() == len(buf) and reader.take(",")
                break
            pos = m.end()
        else:
            reader.pos = pos
        if go_on:
            continue
        if expect_value:
            reader.pos = pos
            char = reader.peek()
            if char == "]":
                reader.pos += 1
                return
            if char == "":
                raise TraceError("the trace ends early, inside traceEvents")
            line = line_at(reader.pos)
            try:
                on_event(reader.value(), line)
            except _Hostile as refused:
                builder.count += 1
                builder.malformed(str(refused), line)
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
    builder = _TraceBuilder(path)
    metadata: dict[str, Any] = {}
    error = None
    try:
        first = reader.peek()
        if first == "\ufeff":  # a byte order mark the decoding did not take
            reader.pos += 1
            first = reader.peek()
        if first == "[":  # the JSON Array Format: just the events
            reader.pos += 1
            _read_events(reader, builder)
        elif first == "{":
            reader.pos += 1
            _read_object(reader, metadata, builder)
        else:
            raise TraceError("not a chrome trace (no JSON object at the start)")
        if reader.peek():  # NUL padding (``truncate -s``), a second object: never read
            builder.notes.append(
                f"{path}: the trace goes on after its end (character {reader.offset():,}); "
                "the rest was not read"
            )
    except TraceError as exc:
        error = f"{path}: {exc}; {builder.count:,} events were read"
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        error = (
            f"{path}: truncated or corrupt gzip stream ({exc}); {builder.count:,} events were read"
        )
    except OSError as exc:
        error = f"{path}: read error ({exc.strerror or exc}); {builder.count:,} events were read"
    ops = _ops_frame(builder.cols, builder)
    base = _base_time_ms(metadata, ops)
    spans = builder.spans
    window = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    if window is None and len(ops):
        window = (float(ops["ts_us"].min()), float(ops["end_us"].max()))
    problems = builder.problems()
    if error is None and builder.skipped_lines and not len(ops):
        error = f"{path}: no usable event: " + "; ".join(
            f"{builder.skipped[what]:,} x {what} (line {line})"
            for what, line in builder.skipped_lines.items()
        )
    return TraceData(
        path=path,
        ops=ops,
        metadata=metadata,
        base_time_ms=base,
        window_us=window,
        events=builder.count,
        skipped=builder.skipped,
        error=error,
        problems=problems,
        thread_names=builder.thread_names,
    )


def _read_object(reader: _Reader, metadata: dict[str, Any], builder: _TraceBuilder) -> None:
    """Read the top-level object: metadata keys kept, ``traceEvents`` streamed."""
    while True:
        char = reader.peek()
        if char == "}":
            reader.pos += 1
            return
        if char == "":
            raise TraceError("the trace ends early")
        line = reader.line_at(reader.pos)
        try:
            key = reader.value()
        except _Hostile as refused:
            raise TraceError(f"line {line}: {refused} where a key belongs") from None
        if not isinstance(key, str) or not reader.take(":"):
            raise TraceError(f"invalid JSON at character {reader.offset():,}: expected a key")
        if key == "traceEvents" and reader.take("["):
            _read_events(reader, builder)
        else:
            line = reader.line_at(reader.pos)
            try:
                value, replaced = _clean_value(reader.value())
                key, renamed = _clean_value(key)
                metadata[key] = value
                if replaced or renamed:
                    builder.notes.append(
                        f"{builder.path}:{line}: metadata key {key[:40]!r} holds a lone "
                        "surrogate (not a character), shown as U+FFFD"
                    )
            except _Hostile as refused:
                builder.malformed(f"{refused} (metadata key {key[:40]!r})", line)
        if not reader.take(","):
            if reader.peek() == "":
                raise TraceError("the trace ends early")
            if not reader.take("}"):
                raise TraceError(f"invalid JSON at character {reader.offset():,}: expected , or }}")
            return


def _base_time_ms(metadata: dict[str, Any], ops: pd.DataFrame) -> float | None:
    base = metadata.get("baseTimeNanoseconds")
    if isinstance(base, int | float) and not isinstance(base, bool) and math.isfinite(base):
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
    encoding = json_encoding(binary.peek(4)[:4])
    if encoding == "utf-8":
        encoding = "utf-8-sig"  # a byte order mark is dropped
    text = io.TextIOWrapper(binary, encoding=encoding, errors="replace")
    trace = parse_trace_text(text, path)
    if encoding.startswith("utf-16") or encoding.startswith("utf-32"):
        how = "no byte order mark" if encoding.endswith(("-le", "-be")) else "byte order mark"
        trace.problems.insert(0, f"{path}: read as {encoding.upper()} ({how})")
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

    def take_trace(self, path: str, name: str | None = None) -> bool:
        """Parse ``path`` as a trace if it is one (by name or content); True if it was.
        ``name``: what the trace is called (the path's text, :func:`dnnlens.textsafe.path_text`)."""
        name = path if name is None else name
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
                if not sniff(raw):  # a log named *.json is still a log: read as lines
                    return False
                trace = parse_trace_stream(raw, name)
            if trace.events == 0 and trace.error is None:
                # JSON, but no trace event in it (a manifest, a config): read it as lines,
                # so that every line is accounted for and the user is told what it is
                return False
        self.add(trace)
        return True

    def add(self, trace: TraceData) -> None:
        """Keep a parsed trace. One without a usable op (cut before its first event,
        every event skipped, no complete event) is left out: it has nothing to analyse,
        and its one line is an input error."""
        if not len(trace.ops):
            self.data.unusable.append(
                trace.error
                or f"{trace.path}: no complete (X) event among its {trace.events:,} events"
            )
            return
        self.data.traces.append(trace)
        if trace.error:
            self.data.errors.append(trace.error)
        self.data.errors.extend(trace.problems)

    def finder(self, path: str) -> TableFinder:
        """A table finder for the log ``path`` (see :meth:`TableFinder.watch`)."""
        finder = TableFinder(path)
        self._finders.append(finder)
        return finder

    def result(self) -> FrameworkData | None:
        """The framework data found, None if there is none.

        A table given twice (printed in the log and saved to a file beside it) counts once:
        the copy in the later input is left out with a note. The same table printed again
        in one log is another run's (each links to the stretch of log before it): kept.
        """
        seen: dict[tuple, ProfilerTable] = {}
        for f in self._finders:
            for table in f.tables:
                key = _table_key(table)
                first = seen.setdefault(key, table)
                if first is table or first.source == table.source:
                    self.data.tables.append(table)
                else:
                    self.data.errors.append(
                        f"{table.source}:{table.line}: the same profiler table as "
                        f"{first.source}:{first.line}: counted once"
                    )
            self.data.errors.extend(f.errors)
            if f.markers:
                self.data.markers[f.source] = list(f.markers)
        return self.data if self.data else None


def _table_key(table: ProfilerTable) -> tuple:
    """What two copies of one table share: the headers and every cell as text (NaN as
    "nan", so that two empty cells are equal). Built from the column arrays, not the
    DataFrame: a log holds thousands of tables, and a DataFrame of text columns is made
    of Arrow strings cell by cell."""
    cells = tuple(tuple(map(str, values.tolist())) for values in table.columns.values())
    return (tuple(table.headers), cells)
