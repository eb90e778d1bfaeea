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

from dnnlens.model import ParsedLog

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


def _grouped(frame: pd.DataFrame, keys: list[str], total: float) -> list[dict[str, Any]]:
    if frame.empty:
        return []
    g = frame.groupby(keys, observed=True, sort=False)["time_ms"].agg(["count", "sum", "size"])
    g = g.reset_index().sort_values(["sum", "size"], ascending=False, kind="stable")
    rows = []
    for rec in g.itertuples(index=False):
        values = rec._asdict()
        row: dict[str, Any] = {k: str(values[k]) for k in keys}
        row["count"] = int(values["size"])
        row["time_ms"] = float(values["sum"])
        row["share"] = float(values["sum"]) / total if total > 0 else 0.0
        rows.append(row)
    return rows


def _top_primitives(execs: pd.DataFrame, log: ParsedLog, total: float) -> list[dict[str, Any]]:
    if execs.empty:
        return []
    g = execs.groupby("record", sort=False)["time_ms"].agg(["size", "sum", "mean", "max"])
    g = g.sort_values(["sum", "size"], ascending=False, kind="stable").head(TOP_PRIMITIVES)
    first = execs.drop_duplicates("record").set_index("record")[["input", "line"]]
    rows = []
    for rid, stats in g.iterrows():
        r = log.records[int(rid)]
        where = first.loc[rid]
        rows.append({
            "kind": r.kind, "impl": r.impl, "prop_kind": r.prop_kind, "problem": r.problem,
            "mds": r.mds, "attrs": r.attrs, "aux": r.aux, "count": int(stats["size"]),
            "time_ms": float(stats["sum"]), "mean_ms": float(stats["mean"]),
            "max_ms": float(stats["max"]),
            "share": float(stats["sum"]) / total if total > 0 else 0.0,
            "example": {"path": str(where["input"]), "line": int(where["line"])},
        })
    return rows


def summarize(log: ParsedLog) -> Summary:
    """Totals and breakdowns of the primitive executions in ``log``."""
    ev = log.events
    execs = primitive_execs(ev)
    total = float(execs["time_ms"].sum())
    graph = ev[(ev["kind"] == "graph_partition") & (ev["operation"] == "exec")]
    creates = ev[ev["operation"].isin(["create", "create_nested"])]
    s = Summary(
        exec_count=len(execs),
        untimed_exec_count=int(execs["time_ms"].isna().sum()),
        total_time_ms=total,
        graph_exec_count=len(graph),
        graph_time_ms=float(graph["time_ms"].sum()),
        create_count=len(creates),
        create_time_ms=float(creates["time_ms"].sum()),
    )
    s.by_kind = _grouped(execs, ["kind"], total)
    s.by_impl = _grouped(execs, ["kind", "impl"], total)
    s.by_shape = _grouped(execs, ["kind", "problem"], total)[:TOP_SHAPES]
    s.by_direction = _grouped(execs, ["direction"], total)
    create_total = s.create_time_ms
    s.by_cache = _grouped(creates, ["operation", "cache"], create_total)
    s.top_primitives = _top_primitives(execs, log, total)
    diag = log.diagnostics
    if not diag.empty:
        counts = diag.groupby("operation", observed=True).size().sort_values(ascending=False)
        s.diagnostics = [{"operation": str(k), "count": int(v)} for k, v in counts.items()]
    return s
