"""Where the time went: totals and breakdowns over the event table.

Every figure here is a count or a sum of the time field of ``exec`` lines, which a reader
can reproduce with grep and awk (see the README, "How the numbers are computed"):

* ``exec_count``: primitive ``exec`` lines (graph partition ``exec`` lines are counted apart
  in ``graph_exec_count``: the primitives inside a partition print their own exec lines);
* ``total_time_ms``: the sum of the time field of those lines;
* a ``share`` is a group's time divided by ``total_time_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.model import ParsedLog, direction_of
from dnnlens.model.stats import stats_from_events
from dnnlens.parsers.records import LineRecord

TOP_PRIMITIVES = 15
TOP_SHAPES = 20


@dataclass
class Summary:
    """The time breakdown of one analysis; plain data, ready for any reporter."""

    exec_count: int = 0
    untimed_exec_count: int = 0
    total_time_ms: float = 0.0
    graph_exec_count: int = 0
    graph_time_ms: float = 0.0
    create_count: int = 0
    create_time_ms: float = 0.0
    by_kind: list[dict[str, Any]] = field(default_factory=list)
    by_impl: list[dict[str, Any]] = field(default_factory=list)
    by_shape: list[dict[str, Any]] = field(default_factory=list)
    by_direction: list[dict[str, Any]] = field(default_factory=list)
    by_cache: list[dict[str, Any]] = field(default_factory=list)
    top_primitives: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)


def primitive_execs(events: pd.DataFrame) -> pd.DataFrame:
    """The primitive ``exec`` rows (no graph partitions, no creations)."""
    mask = (events["operation"] == "exec") & (events["kind"] != "graph_partition")
    return events[mask]


#: The breakdowns of :class:`Summary`: attribute, rows (``exec`` or ``create``), keys.
_BREAKDOWNS = (
    ("by_kind", "exec", ("kind",)),
    ("by_impl", "exec", ("kind", "impl")),
    ("by_shape", "exec", ("kind", "problem")),
    ("by_direction", "exec", ("direction",)),
    ("by_cache", "create", ("operation", "cache")),
)


def _field(rec: LineRecord, name: str) -> str:
    return direction_of(rec.prop_kind) if name == "direction" else getattr(rec, name)


def _descending(rows: list[int], time: list[float], count: list[int]) -> list[int]:
    """``rows`` by time, then count, largest first (ties keep their order, NaN last)."""
    return sorted(rows, key=lambda i: (-time[i] if time[i] == time[i] else math.inf, -count[i]))


def _grouped_sums(
    recs: list[LineRecord],
    rows: list[int],
    fields: tuple[str, ...],
    count: list[int],
    time: pd.Series,
) -> list[tuple[tuple[str, ...], int, float]]:
    """``(key, count, time_ms)`` of each key of ``rows``, in order of first appearance.

    The time sums are pandas' group sums over the same rows in the same order as a groupby
    on the key columns (pandas picks its summation by how the groups lie), so they match it
    to the last bit; counts are integers.
    """
    seen: dict[tuple[str, ...], int] = {}
    codes = [seen.setdefault(tuple(_field(recs[i], f) for f in fields), len(seen)) for i in rows]
    counts = [0] * len(seen)
    for code, i in zip(codes, rows, strict=True):
        counts[code] += count[i]
    sums = time.iloc[rows].groupby(np.asarray(codes, dtype=np.int64), sort=False).sum()
    return [
        (key, counts[code], float(t))
        for (key, code), t in zip(seen.items(), sums.tolist(), strict=True)
    ]


def _grouped(
    groups: list[tuple[tuple[str, ...], int, float]], fields: tuple[str, ...], total: float
) -> list[dict[str, Any]]:
    """Rows of one breakdown, most time first."""
    order = _descending(list(range(len(groups))), [g[2] for g in groups], [g[1] for g in groups])
    rows = []
    for i in order:
        key, n, t = groups[i]
        row: dict[str, Any] = {k: str(v) for k, v in zip(fields, key, strict=True)}
        row["count"] = n
        row["time_ms"] = t
        row["share"] = t / total if total > 0 else 0.0
        rows.append(row)
    return rows


def _top_primitives(
    stats: pd.DataFrame, recs: list[LineRecord], execs: list[int], total: float
) -> list[dict[str, Any]]:
    rids = stats.index.tolist()
    count, timed = stats["count"].tolist(), stats["timed"].tolist()
    time, top = stats["time_ms"].tolist(), stats["max_ms"].tolist()
    paths, lines = stats["first_input"].tolist(), stats["first_line"].tolist()
    rows = []
    for i in _descending(execs, time, count)[:TOP_PRIMITIVES]:
        r = recs[i]
        rows.append(
            {
                "record": int(rids[i]),
                "kind": r.kind,
                "impl": r.impl,
                "prop_kind": r.prop_kind,
                "problem": r.problem,
                "mds": r.mds,
                "attrs": r.attrs,
                "aux": r.aux,
                "count": int(count[i]),
                "time_ms": float(time[i]),
                "mean_ms": float(time[i] / timed[i]) if timed[i] else float("nan"),
                "max_ms": float(top[i]),
                "share": float(time[i]) / total if total > 0 else 0.0,
                "example": {"path": str(paths[i]), "line": int(lines[i])},
            }
        )
    return rows


def summarize(log: ParsedLog, stats: pd.DataFrame | None = None) -> Summary:
    """Totals and breakdowns of the primitive executions in ``log``.

    ``stats`` are the per-record statistics of ``log.events`` when the caller has them
    already (:func:`~dnnlens.model.stats.stats_from_events`).
    """
    diag = log.diagnostics
    counts: dict[str, int] = {}
    if not diag.empty:
        sizes = diag.groupby("operation", observed=True).size()
        counts = {str(k): int(v) for k, v in sizes.items()}
    if stats is None:
        stats = stats_from_events(log.events)
    return summarize_stats(stats, log.records, counts)


def summarize_stats(
    stats: pd.DataFrame, records: list[LineRecord], diagnostics: dict[str, int]
) -> Summary:
    """The summary from per-record statistics (see :mod:`dnnlens.model.stats`)."""
    recs = [records[int(r)] for r in stats.index]
    rows: dict[str, list[int]] = {"exec": [], "graph": [], "create": []}
    for i, r in enumerate(recs):
        if r.operation == "exec":
            rows["graph" if r.kind == "graph_partition" else "exec"].append(i)
        elif r.operation in ("create", "create_nested"):
            rows["create"].append(i)
    count, timed, time = stats["count"], stats["timed"], stats["time_ms"]
    execs, graph, creates = (
        np.asarray(rows[k], dtype=np.int64) for k in ("exec", "graph", "create")
    )
    total = float(time.iloc[execs].sum())
    s = Summary(
        exec_count=int(count.iloc[execs].sum()),
        untimed_exec_count=int((count.iloc[execs] - timed.iloc[execs]).sum()),
        total_time_ms=total,
        graph_exec_count=int(count.iloc[graph].sum()),
        graph_time_ms=float(time.iloc[graph].sum()),
        create_count=int(count.iloc[creates].sum()),
        create_time_ms=float(time.iloc[creates].sum()),
    )
    counts = count.tolist()
    for name, which, fields in _BREAKDOWNS:
        sums = _grouped_sums(recs, rows[which], fields, counts, time)
        setattr(s, name, _grouped(sums, fields, s.create_time_ms if which == "create" else total))
    s.by_shape = s.by_shape[:TOP_SHAPES]
    s.top_primitives = _top_primitives(stats, recs, rows["exec"], total)
    s.diagnostics = [
        {"operation": k, "count": v}
        for k, v in sorted(diagnostics.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return s


def overflow_note(summary: Summary, typical_iteration_ms: float) -> str | None:
    """The note naming the totals that passed the largest float, or ``None``.

    Every exec time is finite (an infinite one makes its line malformed), so a total that
    is not finite is a sum that overflowed: it is shown without a value, and the reader is
    told which, instead of finding ``null`` unexplained.
    """

    def bad(value: float) -> bool:
        return not math.isfinite(value)

    names = [
        name
        for name, value in (
            ("the summed exec time", summary.total_time_ms),
            ("the summed graph partition time", summary.graph_time_ms),
            ("the summed creation time", summary.create_time_ms),
            ("the typical iteration", typical_iteration_ms),
        )
        if bad(value)
    ]
    rows = sum(
        bad(row["time_ms"])
        for rows_of in (summary.by_kind, summary.by_impl, summary.by_shape, summary.by_direction)
        for row in rows_of
    )
    if rows:
        names.append(f"{rows:,} rows of the breakdowns")
    primitives = sum(bad(p["time_ms"]) for p in summary.top_primitives)
    if primitives:
        names.append(f"the summed time of {primitives:,} primitives")
    if not names:
        return None
    return (
        "sums of exec times past the largest float (1.8e308 ms), shown without a value: "
        + ", ".join(names)
    )
