"""The tables rule files query, with their column types, and the variables they can use.

* ``events``: one row per primitive exec line, the event-table columns plus derived ones
  (iteration, neighbours in the stream, data types and layouts, FLOPs, graph facts);
* ``creates``: one row per primitive creation line (``time_ms`` is the creation time);
* ``reorders``: one row per distinct steady-state reorder, from the op graph;
* ``primitives``: one row per distinct primitive with its timing statistics.

``share()`` divides by :data:`BASE_TIME` of the table: all exec time for ``events`` and
``primitives``, all creation time for ``creates``, steady-state exec time for ``reorders``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import str_values
from dnnlens.model import EVENT_COLUMNS
from dnnlens.rules.expr import BOOL, NUM, STR
from dnnlens.rules.flops import FLOP_FUNCTION

if TYPE_CHECKING:
    from dnnlens.rules.context import RuleContext

_NUMERIC_EVENT = {"line", "record", "time_ms", "timestamp_ms"}
_EVENT_BASE = {c: (NUM if c in _NUMERIC_EVENT else STR) for c in EVENT_COLUMNS}
_DERIVED = {
    "path": STR,
    "iteration": NUM,
    "steady": BOOL,
    "prev_op": STR,
    "next_op": STR,
    "prev_kind": STR,
    "next_kind": STR,
    "src_dtype": STR,
    "dst_dtype": STR,
    "wei_dtype": STR,
    "src_layout": STR,
    "dst_layout": STR,
    "wei_layout": STR,
    "post_ops": STR,
    "median_ms": NUM,
    "typical_ms": NUM,
    "flops": NUM,
    "gflops": NUM,
    "tensor": STR,
    "converts": STR,
    "round_trip": BOOL,
}
TABLES: dict[str, dict[str, str]] = {
    "events": {**_EVENT_BASE, **_DERIVED},
    "creates": {**_EVENT_BASE, "path": STR, "iteration": NUM, "steady": BOOL},
    "reorders": {
        "node": STR,
        "record": NUM,
        "steady": BOOL,
        "tensor": STR,
        "role": STR,
        "converts": STR,
        "round_trip": BOOL,
        "count": NUM,
        "time_ms": NUM,
        "p50_ms": NUM,
        "typical_ms": NUM,
        "per_iteration": NUM,
        "iter_ms": NUM,
        "dims": STR,
        "src_layout": STR,
        "dst_layout": STR,
        "src_dtype": STR,
        "dst_dtype": STR,
        "producer": STR,
        "consumer": STR,
        "consumer_kind": STR,
        "round_trip_with": STR,
        "impl": STR,
        "path": STR,
        "line": NUM,
    },
    "primitives": {
        "record": NUM,
        "kind": STR,
        "impl": STR,
        "count": NUM,
        "time_ms": NUM,
        "mean_ms": NUM,
        "median_ms": NUM,
        "p95_ms": NUM,
        "max_ms": NUM,
        "typical_ms": NUM,
        "path": STR,
        "line": NUM,
        "share": NUM,
    },
}

TABLES.update(
    {
        # the framework view of a PyTorch profile (empty without a trace or table); times
        # are typical ms per steady step, ``time_ms`` the column share() sums
        "framework_ops": {
            "name": STR,
            "calls_per_step": NUM,
            "self_ms_per_step": NUM,
            "total_ms_per_step": NUM,
            "self_share": NUM,
            "phase": STR,
            "onednn_ms_per_step": NUM,
            "onednn_share": NUM,
            "time_ms": NUM,
            "path": STR,
            "line": NUM,
        },
        "framework_phases": {
            "phase": STR,
            "ms_per_step": NUM,
            "share": NUM,
            "onednn_ms_per_step": NUM,
            "onednn_share": NUM,
            "time_ms": NUM,
        },
        "framework_steps": {
            "index": NUM,
            "name": STR,
            "dur_ms": NUM,
            "warmup": BOOL,
            "partial": BOOL,
            "steady": BOOL,
            "time_ms": NUM,
            "path": STR,
            "line": NUM,
        },
    }
)

#: Variables every expression can use, with their types.
VARIABLES: dict[str, str] = {
    "total_ms": NUM,
    "exec_count": NUM,
    "iterations": NUM,
    "steady_iterations": NUM,
    "iterations_found": BOOL,
    "warmup_iterations": NUM,
    "typical_iteration_ms": NUM,
    "steady_ms": NUM,
    "threads": NUM,
    "header_isa": STR,
    "inputs": NUM,
    "is_training": BOOL,
    "typical_step_ms": NUM,
    "steady_steps": NUM,
}

_FIRST = {
    "src": ("src", "src_layer", "data", "in", "query"),
    "dst": ("dst", "dst_layer", "data", "out"),
    "wei": ("wei", "wei_layer"),
}


def variables(ctx: RuleContext) -> dict[str, Any]:
    """The values of :data:`VARIABLES` for this analysis: the analysis's facts under the
    names of the JSON report's ``summary`` (one figure for one fact in both)."""
    it = ctx.iterations
    steady_ms = float(ctx.steady_execs["time_ms"].sum())
    steady = it.steady_count if it.found else 1
    isas = [h["isa"] for h in ctx.headers if h["isa"]]
    return {
        "total_ms": ctx.total_ms,
        "exec_count": len(ctx.execs),
        "iterations": it.count,
        "steady_iterations": steady,
        "iterations_found": it.found,
        "warmup_iterations": ctx.analysis.steady.warmup_left_out,
        "typical_iteration_ms": ctx.typical_iteration_ms,
        "steady_ms": steady_ms,
        "threads": ctx.threads or 0,
        "header_isa": isas[0] if isas else "",
        "inputs": len(ctx.log.scans),
        "is_training": ctx.is_training,
        "typical_step_ms": ctx.framework.typical_step_ms if ctx.framework else 0.0,
        "steady_steps": ctx.framework.steady_count if ctx.framework else 0,
    }


def table(ctx: RuleContext, name: str) -> tuple[pd.DataFrame, float]:
    """The table ``name`` and its base time (the denominator of ``share()``)."""
    if name == "events":
        frame = events_view(ctx)
        return frame, float(frame["time_ms"].sum())
    if name == "creates":
        ev = ctx.events
        mask = ev["operation"].isin(["create", "create_nested"]).to_numpy()
        frame = ev[mask].copy()
        frame["path"] = str_values(frame["input"])
        frame["iteration"] = ctx.iterations.iteration[mask]
        frame["steady"] = ctx.iterations.steady[mask]
        return frame, float(frame["time_ms"].sum())
    if name == "reorders":
        return ctx.reorders, float(ctx.steady_execs["time_ms"].sum())
    if name == "primitives":
        frame = ctx.stats.reset_index()
        total = ctx.total_ms
        frame["share"] = frame["time_ms"] / total if total > 0 else 0.0
        return frame, total
    if name.startswith("framework_"):
        return _framework_table(ctx, name)
    raise KeyError(name)


def _framework_table(ctx: RuleContext, name: str) -> tuple[pd.DataFrame, float]:
    """A framework table (:data:`TABLES`) and the typical step as its base time."""
    fw = ctx.framework
    columns = list(TABLES[name])
    if fw is None:
        return pd.DataFrame({c: [] for c in columns}), 0.0
    where = fw.table.source if fw.table is not None else fw.path
    if name == "framework_steps":
        frame = fw.steps.copy()
        frame["steady"] = ~frame["warmup"] & ~frame["partial"]
        frame["time_ms"] = frame["dur_ms"]
        frame["path"] = where
        return frame.reindex(columns=columns), float(frame["dur_ms"].sum())
    frame = (fw.ops if name == "framework_ops" else fw.phases).copy()
    for col in ("onednn_ms_per_step", "onednn_share"):
        if col not in frame:
            frame[col] = np.nan
    if name == "framework_ops":
        frame["time_ms"] = frame["self_ms_per_step"]
        frame["path"] = where
        frame["line"] = [fw.first_line(n) for n in frame["name"]]
    else:
        frame["time_ms"] = frame["ms_per_step"]
    return frame.reindex(columns=columns), fw.typical_step_ms


def events_view(ctx: RuleContext) -> pd.DataFrame:
    """The exec rows with derived columns (cached on the context)."""
    cached = getattr(ctx, "_events_view", None)
    if cached is not None:
        return cached
    ex = ctx.execs.copy()
    pos = ctx.events.index.get_indexer(ex.index)
    ex["path"] = str_values(ex["input"])
    ex["iteration"] = ctx.iterations.iteration[pos]
    ex["steady"] = ctx.iterations.steady[pos]
    _neighbours(ex)
    per_record = _record_columns(ctx, ex["record"].unique())
    for col in per_record.columns:
        ex[col] = per_record[col].reindex(ex["record"].to_numpy()).to_numpy()
    # per execution: the typical run and median of its position in the pass (its op-graph
    # node), the very terms of the typical iteration
    terms = ctx.typical.terms.set_index("node")
    nodes = ctx.analysis.graph.node_of_rows(ex.index.to_numpy())
    ex["median_ms"] = terms["median_ms"].reindex(nodes).to_numpy()
    ex["typical_ms"] = terms["run_ms"].reindex(nodes).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ex["gflops"] = ex["flops"] / (ex["time_ms"] * 1e6)
    ctx._events_view = ex  # type: ignore[attr-defined]
    return ex


def _neighbours(ex: pd.DataFrame) -> None:
    kinds = pd.Series(str_values(ex["kind"]), index=ex.index)
    groups = ex["path"]
    ex["prev_kind"] = kinds.groupby(groups).shift(1).fillna("")
    ex["next_kind"] = kinds.groupby(groups).shift(-1).fillna("")
    ops = kinds.where(kinds != "reorder")
    ex["prev_op"] = ops.groupby(groups).shift(1).groupby(groups).ffill().fillna("")
    ex["next_op"] = ops.groupby(groups).shift(-1).groupby(groups).bfill().fillna("")


def _md_of(mds: Any, role: str) -> Any:
    for arg in _FIRST[role]:
        md = mds.get(arg)
        if md is not None:
            return md
    if role == "src" and len(mds):
        return mds[0]
    if role == "dst" and len(mds) > 1:
        return mds[-1]
    return None


def _record_columns(ctx: RuleContext, records: np.ndarray) -> pd.DataFrame:
    rows = {}
    reorders = None
    if len(ctx.reorders):
        reorders = ctx.reorders.groupby("record").agg(
            tensor=("tensor", "first"),
            converts=("converts", "first"),
            round_trip=("round_trip", "any"),
        )
    for rid in records:
        rid = int(rid)
        rec = ctx.log.records[rid]
        mds = ctx.mds(rid)
        row: dict[str, Any] = {}
        for role in ("src", "dst", "wei"):
            md = _md_of(mds, role)
            row[f"{role}_dtype"] = md.dtype if md is not None else ""
            row[f"{role}_layout"] = md.layout if md is not None else ""
        row["post_ops"] = ",".join(p.kind for p in ctx.attrs(rid).post_ops)
        flops = FLOP_FUNCTION(rec.kind, rec.problem, rec.prop_kind, rec.aux)
        row["flops"] = float(flops) if flops is not None else np.nan
        if reorders is not None and rid in reorders.index:
            r = reorders.loc[rid]
            row["tensor"], row["converts"] = str(r["tensor"]), str(r["converts"])
            row["round_trip"] = bool(r["round_trip"])
        else:
            row["tensor"], row["converts"], row["round_trip"] = "", "", False
        rows[rid] = row
    return pd.DataFrame.from_dict(rows, orient="index")
