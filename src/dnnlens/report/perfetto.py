"""Chrome trace-event JSON (opens in https://ui.perfetto.dev and chrome://tracing).

One complete event (``"ph": "X"``, ``ts`` and ``dur`` in microseconds) per primitive
execution, and per creation (category ``create:*``) and graph partition:

* **timestamps**: when an input's lines carry oneDNN timestamps (``ONEDNN_VERBOSE_TIMESTAMP=1``,
  the start time in ms), ``ts`` is that start relative to the input's first timestamp;
* **end to end** otherwise: events are laid one after the other in log order, each lasting
  the time the line printed. Graph partition executions are drawn on their own track,
  ending where the primitives printed before them end (they contain them).

``dur`` is exactly the line's time field times 1000. Each input is one process
(``pid``); overlapping events (asynchronous GPU timings) go to extra tracks so each track's
events never overlap and their ``ts`` only grow. A track ``iterations`` spans each iteration;
findings are instant events (``"ph": "i"``) on the lines that are their evidence.

Big logs stay openable: ``window=(A, B)`` keeps iterations ``A <= i < B`` (0-based) and
``max_events`` cuts the window short at an iteration boundary.

The trace is JSON, which has no NaN or infinity: an event whose time in µs (or whose start,
from huge timestamps or times) is not a finite number is left out and counted
(``otherData.left_out_events``, :attr:`TraceStats.left_out`); everything is written with
``allow_nan=False``, so no such value can slip through.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from dnnlens._version import __version__
from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.columns import category_mask, str_values
from dnnlens.analysis.diff import flow_label
from dnnlens.model import ParsedLog

TID_ITERATIONS = 0
TID_PRIMITIVES = 1
TID_GRAPH = 1001
_OPERATIONS = ("exec", "create", "create_nested", "compile")
NAME_MAX = 160


@dataclass
class TraceOptions:
    """What to put in the trace."""

    window: tuple[int | None, int | None] | None = None
    include_creates: bool = True
    max_events: int | None = None


@dataclass
class TraceStats:
    """What was written: counts, the window actually used, how times were placed."""

    events: int = 0
    executions: int = 0
    findings: int = 0
    window: tuple[int, int] | None = None
    truncated: bool = False
    timing: dict[str, str] = field(default_factory=dict)
    #: Events left out because their time or start in µs is not a finite number.
    left_out: int = 0


def parse_window(text: str) -> tuple[int | None, int | None]:
    """``"A:B"`` -> ``(A, B)``; ``"A:"``, ``":B"``; ``"A"`` alone is the one iteration A.

    Raises ``ValueError`` with a readable message.
    """
    text = text.strip()
    try:
        if ":" not in text:
            a = int(text)
            return a, a + 1
        left, right = text.split(":", 1)
        a = int(left) if left.strip() else None
        b = int(right) if right.strip() else None
    except ValueError:
        raise ValueError(
            f"--iterations {text!r}: expected A:B, A:, :B or A (0-based iteration numbers)"
        ) from None
    if (a is not None and a < 0) or (b is not None and b < 0):
        raise ValueError(f"--iterations {text!r}: iteration numbers start at 0")
    if a is not None and b is not None and b <= a:
        raise ValueError(f"--iterations {text!r}: the end must be after the start")
    return a, b


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Greedy track assignment: an event goes to the first track free at its start.

    ``start`` must be sorted. Returns a track number (0, 1, ...) per event.
    """
    lanes = np.zeros(len(start), dtype=np.int64)
    eps = 1e-6
    if len(start) < 2 or bool(np.all(start[1:] + eps >= np.maximum.accumulate(end)[:-1])):
        return lanes  # nothing overlaps (always so end to end): one track
    free_at: list[float] = []
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
        for lane, t in enumerate(free_at):
            if s + eps >= t:
                free_at[lane] = e
                lanes[i] = lane
                break
        else:
            free_at.append(e)
            lanes[i] = len(free_at) - 1
    return lanes


def _place(
    times_us: np.ndarray, stamps_ms: np.ndarray, graph: np.ndarray, creates: np.ndarray
) -> tuple[np.ndarray, str]:
    """Start of each event in µs from the input's start, and how it was found."""
    stamped = np.isfinite(stamps_ms)
    if stamped.any():
        t0 = float(np.nanmin(stamps_ms))
        start = np.empty(len(times_us))
        cursor = 0.0
        for i in range(len(times_us)):
            if stamped[i]:
                start[i] = (stamps_ms[i] - t0) * 1000.0
            else:
                start[i] = cursor
            cursor = max(cursor, start[i] + times_us[i])
        return start, "timestamps"
    advance = np.where(graph & ~creates, 0.0, times_us)
    cursor = np.cumsum(advance) - advance
    start = np.where(graph & ~creates, np.maximum(cursor - times_us, 0.0), cursor)
    return start, "end-to-end"


def _record_info(log: ParsedLog) -> list[tuple[str, dict[str, str]]]:
    out = []
    for r in log.records:
        if r.kind == "reorder":
            name = f"reorder {flow_label(r.parsed_mds)} {r.problem}"
        elif r.kind == "graph_partition":
            name = f"graph {r.prop_kind} {r.problem}"
        else:
            name = f"{r.kind} {r.problem}".strip()
        args = {
            "kind": r.kind,
            "impl": r.impl,
            "prop_kind": r.prop_kind,
            "problem": r.problem,
            "mds": r.mds,
            "attrs": r.attrs,
            "aux": r.aux,
            "engine": r.engine,
        }
        out.append((name[:NAME_MAX], {k: v for k, v in args.items() if v}))
    return out


@dataclass
class _InputEvents:
    """Placed, windowed events of one input, as arrays."""

    pid: int
    path: str
    rows: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    tid: np.ndarray
    iteration: np.ndarray
    timing: str


def _select(
    log: ParsedLog,
    ev: pd.DataFrame,
    passes: int,
    options: TraceOptions,
    stats: TraceStats | None = None,
) -> tuple[list[_InputEvents], tuple[int, int] | None, bool]:
    stats = stats if stats is not None else TraceStats()
    ops = str_values(ev["operation"])
    wanted = np.isin(ops, _OPERATIONS if options.include_creates else ("exec",))
    is_graph = (ev["kind"] == "graph_partition").to_numpy()
    is_create = np.isin(ops, ("create", "create_nested", "compile"))
    with np.errstate(over="ignore", invalid="ignore"):
        times = np.nan_to_num(ev["time_ms"].to_numpy(dtype=float)) * 1000.0
    finite = np.isfinite(times)
    stats.left_out += int((wanted & ~finite).sum())
    wanted &= finite
    stamps = ev["timestamp_ms"].to_numpy(dtype=float)
    it = ev["iteration"].to_numpy(dtype=np.int64)
    lo, hi = 0, max(passes, 1)
    keep = wanted.copy()
    if options.window is not None:
        a, b = options.window
        lo = a if a is not None else 0
        hi = b if b is not None else hi
        keep = wanted & (it >= lo) & (it < hi)
    truncated = False
    if options.max_events is not None and int(keep.sum()) > options.max_events:
        per_it = np.bincount(it[keep] - lo, minlength=hi - lo)
        fits = int(np.searchsorted(np.cumsum(per_it), options.max_events, side="right"))
        hi = lo + max(fits, 1)
        keep = wanted & (it >= lo) & (it < hi)
        truncated = True
    codes = ev["input"].cat.codes.to_numpy() if len(ev) else np.zeros(0, dtype=np.int8)
    out = []
    positions = np.arange(len(ev))
    for pid, scan in enumerate(log.scans, start=1):
        mine = positions[(codes == pid - 1) & wanted]
        if len(mine) == 0:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            start, timing = _place(times[mine], stamps[mine], is_graph[mine], is_create[mine])
            placed = np.isfinite(start) & np.isfinite(start + times[mine])
        stats.left_out += int((keep[mine] & ~placed).sum())
        sel = keep[mine] & placed
        rows, start, dur = mine[sel], start[sel], times[mine][sel]
        order = np.argsort(start, kind="stable")
        rows, start, dur = rows[order], start[order], dur[order]
        tid = np.empty(len(rows), dtype=np.int64)
        graph = is_graph[rows]
        for base, mask in ((TID_PRIMITIVES, ~graph), (TID_GRAPH, graph)):
            if mask.any():
                tid[mask] = base + _lanes(start[mask], start[mask] + dur[mask])
        out.append(_InputEvents(pid, scan.path, rows, start, dur, tid, it[rows], timing))
    window = (lo, hi) if passes else None
    return out, window, truncated


def _metadata(inp: _InputEvents) -> Iterator[dict[str, Any]]:
    yield {"name": "process_name", "ph": "M", "pid": inp.pid, "tid": 0, "args": {"name": inp.path}}
    yield {
        "name": "process_sort_index",
        "ph": "M",
        "pid": inp.pid,
        "tid": 0,
        "args": {"sort_index": inp.pid},
    }
    names = {TID_ITERATIONS: "iterations"}
    for tid in np.unique(inp.tid).tolist():
        if tid >= TID_GRAPH:
            names[tid] = "graph partitions" + (
                f" ({tid - TID_GRAPH + 1})" if tid > TID_GRAPH else ""
            )
        else:
            names[tid] = "oneDNN primitives" + (f" ({tid})" if tid > TID_PRIMITIVES else "")
    for tid, name in sorted(names.items()):
        yield {"name": "thread_name", "ph": "M", "pid": inp.pid, "tid": tid, "args": {"name": name}}
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": inp.pid,
            "tid": tid,
            "args": {"sort_index": tid},
        }


def _us(value: float) -> float:
    return round(float(value), 3)


def _iteration_spans(inp: _InputEvents, warm: set[int]) -> Iterator[dict[str, Any]]:
    inside = inp.iteration >= 0
    if not inside.any():
        return
    it = inp.iteration[inside]
    order = np.argsort(it, kind="stable")
    it = it[order]
    starts = inp.start[inside][order]
    ends = (inp.start + inp.dur)[inside][order]
    first = np.flatnonzero(np.r_[True, it[1:] != it[:-1]])
    lo = np.minimum.reduceat(starts, first)
    hi = np.maximum.reduceat(ends, first)
    counts = np.diff(np.r_[first, len(it)])
    for i, s, e, n in zip(
        it[first].tolist(), lo.tolist(), hi.tolist(), counts.tolist(), strict=True
    ):
        yield {
            "name": f"iteration {i}" + (" (warm-up)" if i in warm else ""),
            "cat": "iteration",
            "ph": "X",
            "ts": _us(s),
            "dur": _us(e - s),
            "pid": inp.pid,
            "tid": TID_ITERATIONS,
            "args": {"iteration": i, "events": n},
        }


def _record_json(info: list[tuple[str, dict[str, str]]]) -> list[tuple[str, str]]:
    """Per record: its name and its constant ``args`` members, as JSON text."""
    return [(json.dumps(name), json.dumps(args)[1:-1]) for name, args in info]


def _x_events(
    ev: pd.DataFrame, inp: _InputEvents, records: list[tuple[str, str]]
) -> Iterator[tuple[str, bool]]:
    """``(event JSON, is a primitive exec)`` per execution/creation, built as text: a
    million events take seconds, not minutes, through ``json.dumps``."""
    rec = ev["record"].to_numpy()[inp.rows].tolist()
    ops = ev["operation"].to_numpy()[inp.rows].tolist()
    cache = ev["cache"].to_numpy()[inp.rows].tolist()
    cat_text: dict[tuple[str, str], str] = {}
    for pair in set(zip(ops, cache, strict=True)):
        op, c = pair
        cat_text[pair] = json.dumps(op if op in ("exec", "compile") or not c else f"{op}:{c}")
    lines = ev["line"].to_numpy()[inp.rows].tolist()
    tms = ev["time_ms"].to_numpy(dtype=float)[inp.rows].tolist()
    starts = np.char.mod("%.3f", inp.start).tolist()  # µs, to the nanosecond
    durs = np.char.mod("%.3f", inp.dur).tolist()
    tids, its = inp.tid.tolist(), inp.iteration.tolist()
    pid = inp.pid
    exec_cat = '"exec"'
    for k in range(len(rec)):
        name, base = records[rec[k]]
        cat = cat_text[(ops[k], cache[k])]
        t = tms[k]
        text = (
            f'{{"name":{name},"cat":{cat},"ph":"X","ts":{starts[k]},'
            f'"dur":{durs[k]},"pid":{pid},"tid":{tids[k]},"args":{{{base}'
            f'{"," if base else ""}"line":{lines[k]},"iteration":{its[k]},'
            f'"time_ms":{repr(t) if t == t and abs(t) != math.inf else "null"}}}}}'
        )
        yield text, cat == exec_cat and tids[k] < TID_GRAPH


def _finding_events(
    analysis: Analysis, inputs: list[_InputEvents], window: tuple[int, int] | None
) -> Iterator[dict[str, Any]]:
    lines_col = analysis.events["line"].to_numpy()
    wanted: dict[str, set[int]] = {}
    for f in analysis.findings:
        for e in f.evidence:
            wanted.setdefault(e.path, set()).add(int(e.line))
    where: dict[tuple[str, int], tuple[int, float, int]] = {}
    for inp in inputs:
        if inp.path not in wanted:
            continue
        lines = lines_col[inp.rows]
        for k in np.flatnonzero(np.isin(lines, list(wanted[inp.path]))).tolist():
            where.setdefault(
                (inp.path, int(lines[k])), (inp.pid, float(inp.start[k]), int(inp.tid[k]))
            )
    first_pid = inputs[0].pid if inputs else 1
    first_ts = float(inputs[0].start.min()) if inputs and len(inputs[0].start) else 0.0
    for f in analysis.findings:
        args = {
            "rule": f.rule,
            "code": f.code,
            "severity": f.severity,
            "message": f.message,
            "fix": f.fix,
            "evidence": [f"{e.path}:{e.line}" for e in f.evidence[:20]],
        }
        placed = 0
        for e in f.evidence:
            hit = where.get((e.path, e.line))
            if hit is None:
                continue
            pid, ts, tid = hit
            yield {
                "name": f"{f.severity}: {f.rule}",
                "cat": "finding",
                "ph": "i",
                "s": "t",
                "ts": _us(ts),
                "pid": pid,
                "tid": tid,
                "args": args,
            }
            placed += 1
            if placed >= 20:
                break
        if not placed:  # evidence outside the window (or none): one global marker
            yield {
                "name": f"{f.severity}: {f.rule}",
                "cat": "finding",
                "ph": "i",
                "s": "g",
                "ts": _us(first_ts),
                "pid": first_pid,
                "tid": TID_PRIMITIVES,
                "args": {
                    **args,
                    "note": "evidence lines are outside this window"
                    if f.evidence
                    else "no evidence lines",
                },
            }


def iter_trace_json(
    analysis: Analysis, options: TraceOptions | None = None, stats: TraceStats | None = None
) -> Iterator[str]:
    """Every trace event as JSON text, process by process, each track sorted by ``ts``."""
    options = options or TraceOptions()
    stats = stats if stats is not None else TraceStats()
    log = analysis.log
    events, steady = analysis.events, analysis.steady
    t = steady.times
    left_out = ~t["steady"].to_numpy() & ~t["partial"].to_numpy(dtype=bool)
    warm = set(t["iteration"].to_numpy()[left_out].tolist())
    inputs, window, truncated = _select(log, events, steady.passes, options, stats)
    stats.window, stats.truncated = window, truncated
    records = _record_json(_record_info(log))
    execs = 0
    for inp in inputs:
        stats.timing[inp.path] = inp.timing
        for event in _metadata(inp):
            yield _dumps(event)
        for event in _iteration_spans(inp, warm):
            stats.events += 1
            yield _dumps(event)
        for text, is_exec in _x_events(events, inp, records):
            stats.events += 1
            execs += is_exec
            yield text
    for event in _finding_events(analysis, inputs, window):
        stats.events += 1
        stats.findings += 1
        yield _dumps(event)
    for text in framework_events(analysis, inputs, options):
        stats.events += 1
        yield text
    stats.executions = int(execs)


def _dumps(event: dict[str, Any]) -> str:
    """One event as JSON; a non-finite number is a bug here, never invalid JSON."""
    return json.dumps(event, allow_nan=False)


# --------------------------------------------------------------------------------------------
# framework ops of a PyTorch profiler trace, on their own threads

#: Trace categories exported beside the primitives (Python frames are not: too many).
FRAMEWORK_CATEGORIES = frozenset({"cpu_op", "user_annotation", "operator", "Operator", ""})


def _origin_ms(log: ParsedLog, inputs: list[_InputEvents], options: TraceOptions) -> float | None:
    """The epoch ms that ``ts`` 0 stands for: the first timestamp of the first input placed
    by its timestamps (as :func:`_place` takes it), None when no input has timestamps."""
    ev = log.events
    if not len(ev):
        return None
    operations = _OPERATIONS if options.include_creates else ("exec",)
    wanted = category_mask(ev["operation"], set(operations).__contains__)
    paths = str_values(ev["input"])
    stamps = ev["timestamp_ms"].to_numpy(dtype=float)
    for inp in inputs:
        if inp.timing == "timestamps":
            mine = stamps[wanted & (paths == inp.path)]
            return float(np.nanmin(mine))
    return None


def framework_events(
    analysis: Analysis, inputs: list[_InputEvents], options: TraceOptions
) -> Iterator[str]:
    """The framework ops of each profiler trace among the inputs, as JSON text: one process
    per trace after the logs' processes, one track per thread of the trace.

    With verbose timestamps and a trace base time they share the primitives' time axis
    (``ts`` 0 is the first timestamp of the first timestamped input) and keep to the span of
    the exported primitives; otherwise their ``ts`` counts from the trace's first op. At most
    ``max_events`` ops per trace when that is set.
    """
    framework = analysis.log.framework
    if framework is None or not framework.traces:
        return
    origin = _origin_ms(analysis.log, inputs, options)
    span = None
    if origin is not None and inputs:
        lo = min(float(i.start.min()) for i in inputs if len(i.start))
        hi = max(float((i.start + i.dur).max()) for i in inputs if len(i.start))
        span = (lo, hi)
    for k, trace in enumerate(framework.traces):
        yield from _trace_events(trace, len(analysis.log.scans) + 1 + k, origin, span, options)


def _trace_events(
    trace: Any,
    pid: int,
    origin: float | None,
    span: tuple[float, float] | None,
    options: TraceOptions,
) -> Iterator[str]:
    ops = trace.ops
    keep = ops["cat"].astype(str).isin(FRAMEWORK_CATEGORIES).to_numpy().copy()
    ts = ops["ts_us"].to_numpy(dtype=float)
    aligned = origin is not None and trace.base_time_ms is not None
    first = float(ts[keep].min()) if keep.any() else 0.0
    start = (trace.epoch_ms(ts) - origin) * 1000.0 if aligned else ts - first
    dur = ops["dur_us"].to_numpy(dtype=float)
    if aligned and span is not None:
        keep &= (start + dur >= span[0]) & (start <= span[1])
    rows = np.flatnonzero(keep & np.isfinite(start) & np.isfinite(dur))
    if options.max_events is not None:
        rows = rows[: options.max_events]
    label = f"PyTorch profiler: {trace.path}" + ("" if aligned else " (own time axis)")
    yield json.dumps(
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}}
    )
    pairs = list(
        zip(
            ops["pid"].astype(str).to_numpy()[rows],
            ops["tid"].astype(str).to_numpy()[rows],
            strict=True,
        )
    )
    tids = {p: i + 1 for i, p in enumerate(dict.fromkeys(pairs))}
    for (p, t), tid in tids.items():
        name = trace.thread_names.get((p, t)) or f"thread {t}"
        yield json.dumps(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        )
    names = ops["name"].cat.codes.to_numpy()[rows]
    name_text = [json.dumps(str(n)[:NAME_MAX]) for n in ops["name"].cat.categories]
    cats = ops["cat"].cat.codes.to_numpy()[rows]
    cat_text = [json.dumps(str(c)) for c in ops["cat"].cat.categories]
    lines = ops["line"].to_numpy()[rows].tolist()
    starts = np.char.mod("%.3f", start[rows]).tolist()
    durs = np.char.mod("%.3f", dur[rows]).tolist()
    for k in range(len(rows)):
        yield (
            f'{{"name":{name_text[names[k]]},"cat":{cat_text[cats[k]]},"ph":"X",'
            f'"ts":{starts[k]},"dur":{durs[k]},"pid":{pid},"tid":{tids[pairs[k]]},'
            f'"args":{{"line":{lines[k]}}}}}'
        )


def iter_trace(
    analysis: Analysis, options: TraceOptions | None = None, stats: TraceStats | None = None
) -> Iterator[dict[str, Any]]:
    """Every trace event as a dict (the same events as :func:`iter_trace_json`)."""
    for text in iter_trace_json(analysis, options, stats):
        yield json.loads(text)


def _other_data(analysis: Analysis, stats: TraceStats) -> dict[str, Any]:
    return {
        "generator": f"dnnlens {__version__}",
        "inputs": [s.path for s in analysis.log.scans],
        "window": list(stats.window) if stats.window else None,
        "truncated": stats.truncated,
        "timing": stats.timing,
        "executions": stats.executions,
        "left_out_events": stats.left_out,
    }


def build_trace(analysis: Analysis, options: TraceOptions | None = None) -> dict[str, Any]:
    """The whole trace as one JSON-ready dict (fine for tests and small logs)."""
    stats = TraceStats()
    events = list(iter_trace(analysis, options, stats))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": _other_data(analysis, stats),
    }


def _open(path: Path) -> IO[str]:
    from dnnlens.report.console import is_stdout, stdout_stream

    if is_stdout(path):  # -o -: plain JSON on standard output
        return stdout_stream()
    if path.name.endswith(".gz"):  # level 6: nearly the size of 9, several times faster
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=6)
    return path.open("w", encoding="utf-8")


def write_trace(analysis: Analysis, path: Path, options: TraceOptions | None = None) -> TraceStats:
    """Stream the trace to ``path`` (gzip when it ends in ``.gz``); memory stays flat."""
    stats = TraceStats()
    with _open(path) as fh:
        fh.write('{"traceEvents":[\n')
        batch: list[str] = []
        first = True
        for text in iter_trace_json(analysis, options, stats):
            batch.append(text)
            if len(batch) >= 4096:
                fh.write(("" if first else ",\n") + ",\n".join(batch))
                batch, first = [], False
        if batch:
            fh.write(("" if first else ",\n") + ",\n".join(batch))
        fh.write('\n],"displayTimeUnit":"ms","otherData":')
        fh.write(_dumps(_other_data(analysis, stats)))
        fh.write("}\n")
    return stats
