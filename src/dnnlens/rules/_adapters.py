"""Adapters from the issue-4 modules (iterations, op graph) to what the rules read.

The rules read an :class:`~dnnlens.rules.context.IterationView` and a reorder
table (``context.REORDER_COLUMNS``). These functions build them from
``dnnlens.analysis.iterations.find_iterations`` and ``dnnlens.analysis.graph.build_graph``;
only when those fail to import or raise is the minimal fallback in ``_fallback.py`` used,
and the context says so (``RuleContext.notes``, ``iterations.source``, ``graph_source``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from dnnlens.rules.context import IterationView, RuleContext


def iterations(ctx: RuleContext) -> IterationView:
    """The iterations of ``ctx.events`` (issue-4 module, else the fallback)."""
    from dnnlens.rules.context import IterationView

    n = len(ctx.events)
    try:
        from dnnlens.analysis.iterations import find_iterations

        found: Any = find_iterations(ctx.events)
        steady = np.asarray(found.steady_mask(), dtype=bool)
        ctx._iterations_raw = found  # type: ignore[attr-defined]
        count, warm = int(found.count), int(found.warmup)
        if count - warm < 2:
            steady = np.ones(n, dtype=bool)
        return IterationView(
            count,
            warm,
            int(found.period_exec),
            np.asarray(found.iteration, dtype=np.int64),
            steady,
            "iterations",
        )
    except Exception as exc:  # noqa: BLE001 - fall back, and say so
        ctx.notes.append(f"iterations module unusable ({exc!r}); used the rules' fallback")
    from dnnlens.rules import _fallback

    fb = _fallback.find_iterations_fallback(ctx.events) if n else None
    if fb is None or fb.count < 2:
        it = np.full(n, -1, dtype=np.int64) if fb is None else fb.iteration
        return IterationView(0, 0, 0, it, np.ones(n, dtype=bool), "fallback")
    return IterationView(
        fb.count + fb.warmup, fb.warmup, fb.period_exec, fb.iteration, fb.steady, "fallback"
    )


def reorders(ctx: RuleContext) -> pd.DataFrame:
    """Reorders with tensor / converts / round_trip and their cost (REORDER_COLUMNS)."""
    from dnnlens.rules.context import REORDER_COLUMNS

    try:
        frame = _from_graph(ctx)
        ctx._graph_source = "graph"  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - fall back, and say so
        ctx.notes.append(f"op graph unusable ({exc!r}); used the rules' fallback")
        frame = _from_fallback(ctx)
        ctx._graph_source = "fallback"  # type: ignore[attr-defined]
    for col in REORDER_COLUMNS:
        if col not in frame.columns:
            frame[col] = ""
    frame = frame[list(REORDER_COLUMNS)]
    return frame.sort_values("typical_ms", ascending=False, kind="stable").reset_index(drop=True)


def _from_graph(ctx: RuleContext) -> pd.DataFrame:
    from dnnlens.analysis.graph import build_graph

    _ = ctx.iterations
    graph = build_graph(ctx.log, getattr(ctx, "_iterations_raw", None))
    frame = graph.reorders.copy()
    if frame.empty:
        return frame
    where = [str(e).rpartition(":") for e in frame["example"]]
    frame["path"] = [w[0] for w in where]
    line = pd.Series([w[2] for w in where], index=frame.index)
    frame["line"] = pd.to_numeric(line, errors="coerce").fillna(0).astype(int)
    # ``record`` is the graph's: that of the event at ``example`` (its first execution)
    frame["typical_ms"] = frame["p50_ms"].fillna(0.0) * frame["count"]
    frame["per_iteration"] = np.where(frame["steady"].astype(bool), 1.0, 0.0)
    frame["iter_ms"] = frame["p50_ms"].fillna(0.0) * frame["per_iteration"]
    return frame


def _from_fallback(ctx: RuleContext) -> pd.DataFrame:
    from dnnlens.rules import _fallback

    it = ctx.iterations
    base = _fallback.classify_reorders(ctx.events, ctx.log.records, it.steady, it.iteration)
    if base.empty:
        return base
    stats = ctx.steady_stats
    base = base.set_index("record")
    base["count"] = stats["count"].reindex(base.index).fillna(0).astype(int)
    base["time_ms"] = stats["time_ms"].reindex(base.index).fillna(0.0)
    base["p50_ms"] = stats["median_ms"].reindex(base.index).fillna(0.0)
    base["typical_ms"] = stats["typical_ms"].reindex(base.index).fillna(0.0)
    base["path"] = stats["path"].reindex(base.index)
    base["line"] = stats["line"].reindex(base.index)
    steady_iters = max(it.count - it.warmup, 1)
    base["per_iteration"] = base["count"] / steady_iters
    base["iter_ms"] = base["p50_ms"] * base["per_iteration"]
    base["steady"] = base["per_iteration"] >= 1.0
    base = base.reset_index()
    base["node"] = [f"r{r}" for r in base["record"]]
    return base
