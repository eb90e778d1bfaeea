"""Where the time went: totals and breakdowns over the event table.

Every figure here is a count or a sum of the time field of ``exec`` lines, which a reader
can reproduce with grep and awk (see the README, "How the numbers are computed"):

* ``exec_count``: primitive ``exec`` lines (graph partition ``exec`` lines are counted apart
  in ``graph_exec_count``: the primitives inside a partition print their own exec lines);
* ``total_time_ms``: the sum of the time field of those lines;
* a ``share`` is a group's time divided by ``total_time_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dnnlens.analysis.aggregate import stats_from_events
from dnnlens.model import ParsedLog, direction_of
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


_RECORD_FIELDS = ("operation", "cache", "kind", "impl", "prop_kind", "problem", "mds", "attrs",
                  "aux")


def _with_records(stats: pd.DataFrame, records: list[LineRecord]) -> pd.DataFrame:
    """The stats frame with the fields of each record beside its numbers."""
    frame = stats.copy()
    rows = [records[int(r)] for r in frame.index]
    for name in _RECORD_FIELDS:
        frame[name] = [getattr(r, name) for r in rows]
    frame["direction"] = [direction_of(r.prop_kind) for r in rows]
    return frame


def _grouped(frame: pd.DataFrame, keys: list[str], total: float) -> list[dict[str, Any]]:
    if frame.empty:
        return []
    g = frame.groupby(keys, sort=False)[["count", "time_ms"]].sum().reset_index()
    g = g.sort_values(["time_ms", "count"], ascending=False, kind="stable")
    rows = []
    for rec in g.itertuples(index=False):
        values = rec._asdict()
        row: dict[str, Any] = {k: str(values[k]) for k in keys}
        row["count"] = int(values["count"])
        row["time_ms"] = float(values["time_ms"])
        row["share"] = row["time_ms"] / total if total > 0 else 0.0
        rows.append(row)
    return rows


def _top_primitives(execs: pd.DataFrame, total: float) -> list[dict[str, Any]]:
    top = execs.sort_values(["time_ms", "count"], ascending=False, kind="stable")
    rows = []
    for rid, r in top.head(TOP_PRIMITIVES).iterrows():
        rows.append({
            "record": int(rid), "kind": r["kind"], "impl": r["impl"],
            "prop_kind": r["prop_kind"], "problem": r["problem"], "mds": r["mds"],
            "attrs": r["attrs"], "aux": r["aux"], "count": int(r["count"]),
            "time_ms": float(r["time_ms"]),
            "mean_ms": float(r["time_ms"] / r["timed"]) if r["timed"] else float("nan"),
            "max_ms": float(r["max_ms"]),
            "share": float(r["time_ms"]) / total if total > 0 else 0.0,
            "example": {"path": str(r["first_input"]), "line": int(r["first_line"])},
        })
    return rows


def summarize(log: ParsedLog, stats: pd.DataFrame | None = None) -> Summary:
    """Totals and breakdowns of the primitive executions in ``log``.

    ``stats`` are the per-record statistics of ``log.events`` when the caller has them
    already (:func:`~dnnlens.analysis.aggregate.stats_from_events`).
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
    """The summary from per-record statistics (see :mod:`dnnlens.analysis.aggregate`)."""
    frame = _with_records(stats, records)
    is_graph = frame["kind"] == "graph_partition"
    execs = frame[(frame["operation"] == "exec") & ~is_graph]
    graph = frame[(frame["operation"] == "exec") & is_graph]
    creates = frame[frame["operation"].isin(["create", "create_nested"])]
    total = float(execs["time_ms"].sum())
    s = Summary(
        exec_count=int(execs["count"].sum()),
        untimed_exec_count=int((execs["count"] - execs["timed"]).sum()),
        total_time_ms=total,
        graph_exec_count=int(graph["count"].sum()),
        graph_time_ms=float(graph["time_ms"].sum()),
        create_count=int(creates["count"].sum()),
        create_time_ms=float(creates["time_ms"].sum()),
    )
    s.by_kind = _grouped(execs, ["kind"], total)
    s.by_impl = _grouped(execs, ["kind", "impl"], total)
    s.by_shape = _grouped(execs, ["kind", "problem"], total)[:TOP_SHAPES]
    s.by_direction = _grouped(execs, ["direction"], total)
    s.by_cache = _grouped(creates, ["operation", "cache"], s.create_time_ms)
    s.top_primitives = _top_primitives(execs, total)
    s.diagnostics = [
        {"operation": k, "count": v}
        for k, v in sorted(diagnostics.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return s
