"""Run against run: what changed between a BASE and a NEW log.

Every figure is a count or a sum of the time field of primitive ``exec`` lines, as in
:mod:`dnnlens.analysis.summary`. Changes are reported

* per primitive kind (``kinds``);
* per primitive: kind, prop_kind and problem (the shape), plus for reorders the layout
  flow (``abcd->aBcd8b``), because a reorder *is* its layouts; the implementation and the
  layouts of other kinds are attributes, so a convolution that moved from ``jit:avx2`` on
  ``aBcd8b`` to ``brg_conv_fwd:avx2`` on ``acdb`` is one primitive whose implementation
  changed, not one that vanished and one that appeared;
* per iteration, when both runs have iterations (the ``iteration_info`` adapter).

This module also holds two helpers the reporters share: :func:`iteration_info` (the one
place that depends on :mod:`dnnlens.analysis.iterations`) and :func:`reorder_layouts`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.analysis.summary import primitive_execs
from dnnlens.model import ParsedLog
from dnnlens.parsers.fields import parse_mds

ARROW = "->"


# ---------------------------------------------------------------------------------------
# iterations: the one dependency on dnnlens.analysis.iterations


@dataclass
class IterationInfo:
    """Iterations of a log, as the reporters need them.

    ``index`` is aligned with ``log.events``: one 0-based iteration number per event row
    (numbered one input after the other), ``-1`` for rows outside every iteration.
    ``source`` tells where the split came from: ``iterations``
    (:func:`dnnlens.analysis.iterations.find_iterations`) or ``fallback`` (the record that
    runs exactly once per pass, see :func:`_fallback_iterations`).
    """

    count: int
    warmup: int
    index: np.ndarray
    source: str
    period_exec: int = 0

    def times_ms(self, log: ParsedLog) -> np.ndarray:
        """Primitive exec time per iteration (length ``count``)."""
        return iteration_times(log, self)


def iteration_info(log: ParsedLog) -> IterationInfo:
    """Iterations of ``log``: from the iterations module when it is there, else a fallback."""
    try:
        from dnnlens.analysis.iterations import find_iterations  # type: ignore[attr-defined]
    except ImportError:
        return _fallback_iterations(log)
    try:
        found = find_iterations(log.events)
        index = np.asarray(found.iteration, dtype=np.int64)
        if len(index) != len(log.events):
            raise ValueError("iteration array not aligned with events")
        count = int(found.count)
        if count <= 0 and len(log.events):
            raise ValueError("no iterations")
        warmup = int(getattr(found, "warmup", 0) or 0)
        period = int(getattr(found, "period_exec", 0) or 0)
        return IterationInfo(count, warmup, index, "iterations", period)
    except Exception:  # noqa: BLE001 - a module under construction must not break reports
        return _fallback_iterations(log)


def _fallback_iterations(log: ParsedLog) -> IterationInfo:
    """Split each input at the exec of the primitive that runs once per pass.

    The pass count is the most common exec count among distinct primitives (ties: the
    larger); the boundary primitive is the first one in the log with that count. Events
    before its first exec belong to iteration 0. Warm-up: the leading iterations that
    created a primitive with a cache miss (at most ``count - 1``).
    """
    ev = log.events
    index = np.zeros(len(ev), dtype=np.int64)
    if ev.empty:
        return IterationInfo(0, 0, index - 1, "fallback")
    is_exec = ((ev["operation"] == "exec") & (ev["kind"] != "graph_partition")).to_numpy()
    if not is_exec.any():
        return IterationInfo(1, 0, index, "fallback")
    missed = (ev["cache"] == "cache_miss").to_numpy()
    records = ev["record"].to_numpy()
    inputs = ev["input"].cat.codes.to_numpy()
    positions = np.arange(len(ev))
    counts: list[int] = []
    warm: list[int] = []
    for code in np.unique(inputs):
        rows = positions[inputs == code]
        ex_rows = rows[is_exec[rows]]
        if len(ex_rows) == 0:
            continue
        rec = records[ex_rows]
        freq = Counter(rec.tolist())
        per_count = Counter(freq.values())
        passes = max(per_count.items(), key=lambda kv: (kv[1], kv[0]))[0]
        boundary = next(r for r in rec.tolist() if freq[r] == passes)
        starts = ex_rows[rec == boundary]
        it = np.maximum(np.searchsorted(starts, rows, side="right") - 1, 0)
        index[rows] = it
        counts.append(passes)
        with_miss = set(np.unique(it[missed[rows]]).tolist())
        lead = 0
        while lead < passes - 1 and lead in with_miss:
            lead += 1
        warm.append(lead)
    count = max(counts) if counts else 1
    period = int(round(int(is_exec.sum()) / count / max(len(counts), 1)))
    return IterationInfo(count, max(warm) if warm else 0, index, "fallback", period)


def iteration_times(log: ParsedLog, info: IterationInfo) -> np.ndarray:
    """Primitive exec time per iteration, summed over inputs (NaN times count as 0)."""
    if info.count <= 0:
        return np.zeros(0)
    ev = log.events
    mask = ((ev["operation"] == "exec") & (ev["kind"] != "graph_partition")).to_numpy()
    times = np.nan_to_num(ev["time_ms"].to_numpy()[mask])
    idx = info.index[mask]
    keep = (idx >= 0) & (idx < info.count)
    return np.bincount(idx[keep], weights=times[keep], minlength=info.count)


def typical_iteration(log: ParsedLog, info: IterationInfo) -> dict[str, float]:
    """A typical steady iteration per kind (ms), from per-primitive medians.

    Over the steady (non warm-up) iterations each distinct primitive costs its executions
    per iteration times its median time: a scheduler spike in a few executions cannot move
    it. Empty when the log has no iterations.
    """
    if info.count <= 0 or len(info.index) != len(log.events):
        return {}
    execs = primitive_execs(log.events)
    idx = info.index[execs.index.to_numpy()]
    lo = info.warmup if info.count > info.warmup else 0
    steady = execs[idx >= lo]
    if steady.empty:
        return {}
    g = steady.groupby("record", sort=False)["time_ms"].agg(["size", "median"])
    typical = (g["size"] * g["median"].fillna(0.0)).to_numpy() / (info.count - lo)
    out: dict[str, float] = {}
    for rid, value in zip(g.index.tolist(), typical.tolist(), strict=True):
        kind = log.records[int(rid)].kind
        out[kind] = out.get(kind, 0.0) + value
    return out


# ---------------------------------------------------------------------------------------
# layouts


def reorder_layouts(mds: str) -> tuple[str, str, str, str]:
    """``(src_dtype, src_layout, dst_dtype, dst_layout)`` of a reorder's md field."""
    parsed = parse_mds(mds)
    if not len(parsed):
        return "", "", "", ""
    src = parsed.get("src") or parsed.get("in") or parsed[0]
    dst = parsed.get("dst") or parsed.get("out") or parsed[len(parsed) - 1]
    return src.dtype, src.layout, dst.dtype, dst.layout


def flow_label(mds: str) -> str:
    """``abcd->aBcd8b`` (with data types when they differ: ``f32:abcd->bf16:abcd``)."""
    sdt, sl, ddt, dl = reorder_layouts(mds)
    if sdt != ddt:
        return f"{sdt}:{sl}{ARROW}{ddt}:{dl}"
    return f"{sl}{ARROW}{dl}"


def md_layouts(mds: str) -> str:
    """The layouts of the present tensors, ``src:aBcd8b wei:ABcd8b8a dst:aBcd8b``."""
    parts = []
    for md in parse_mds(mds):
        if md.is_absent:
            continue
        parts.append(f"{md.arg}:{md.layout}" if md.arg else md.layout)
    return " ".join(parts)


# ---------------------------------------------------------------------------------------
# the diff


@dataclass
class Side:
    """One run's figures used by the diff."""

    path: str
    exec_count: int
    total_ms: float
    iterations: int
    iteration_ms: list[float]
    warmup: int = 0
    typical_by_kind: dict[str, float] = field(default_factory=dict)

    @property
    def typical_ms(self) -> float | None:
        """A typical steady iteration (sum of per-primitive medians), None without one."""
        return sum(self.typical_by_kind.values()) if self.typical_by_kind else None

    @property
    def steady_median_ms(self) -> float | None:
        """Median time of the steady (non warm-up) iterations, None without iterations."""
        steady = self.iteration_ms[self.warmup :] or self.iteration_ms
        return float(np.median(steady)) if steady else None


@dataclass
class Diff:
    """BASE vs NEW, ready for any renderer (see :meth:`to_json`)."""

    base: Side
    new: Side
    kinds: list[dict[str, Any]] = field(default_factory=list)
    primitives: list[dict[str, Any]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    #: ``mean`` (total / iterations) or ``typical`` (per-primitive medians) for the verdict
    basis: str = "mean"

    @property
    def speedup(self) -> float:
        """BASE time / NEW time (> 1: NEW is faster); per iteration when both have them."""
        b, n = self.compared_ms()
        if n > 0:
            return b / n
        return math.inf if b > 0 else 1.0

    def compared_ms(self) -> tuple[float, float]:
        """The two times the verdict compares: per iteration if both runs have a count.

        With ``basis == "typical"`` and a typical iteration on both sides, those; else the
        mean iteration (total / count); else the totals.
        """
        b, n = self.base.typical_ms, self.new.typical_ms
        if self.basis == "typical" and b is not None and n is not None:
            return b, n
        if self.per_iteration:
            return (
                self.base.total_ms / self.base.iterations,
                self.new.total_ms / self.new.iterations,
            )
        return self.base.total_ms, self.new.total_ms

    @property
    def per_iteration(self) -> bool:
        """Whether both runs have iterations, so the comparison is per iteration."""
        return self.base.iterations > 0 and self.new.iterations > 0

    @property
    def slower_fraction(self) -> float:
        """How much slower NEW is than BASE (0.05 = 5% slower; negative when faster)."""
        b, n = self.compared_ms()
        if b <= 0:
            return 0.0 if n <= 0 else math.inf
        return n / b - 1.0

    @property
    def appeared(self) -> list[dict[str, Any]]:
        """Primitives only NEW runs."""
        return [p for p in self.primitives if p["status"] == "appeared"]

    @property
    def vanished(self) -> list[dict[str, Any]]:
        """Primitives only BASE runs."""
        return [p for p in self.primitives if p["status"] == "vanished"]

    @property
    def impl_changes(self) -> list[dict[str, Any]]:
        """Primitives in both runs whose implementation (or layouts) changed."""
        return [p for p in self.primitives if p["status"] == "changed"]

    def to_json(self) -> dict[str, Any]:
        """Plain data; ``total`` and ``kinds`` keep the keys named in the issue."""
        b, n = self.compared_ms()
        return {
            "base": _side_json(self.base),
            "new": _side_json(self.new),
            "total": {
                "base_ms": self.base.total_ms,
                "new_ms": self.new.total_ms,
                "speedup": _finite(
                    self.base.total_ms / self.new.total_ms if self.new.total_ms > 0 else math.inf
                ),
                "base_count": self.base.exec_count,
                "new_count": self.new.exec_count,
                "base_iterations": self.base.iterations,
                "new_iterations": self.new.iterations,
                "per_iteration": self.per_iteration,
                "base_per_iteration_ms": b if self.per_iteration else None,
                "new_per_iteration_ms": n if self.per_iteration else None,
                "per_iteration_speedup": _finite(self.speedup) if self.per_iteration else None,
                "base_typical_iteration_ms": self.base.typical_ms,
                "new_typical_iteration_ms": self.new.typical_ms,
                "typical_speedup": _finite(self.base.typical_ms / self.new.typical_ms)
                if self.base.typical_ms and self.new.typical_ms
                else None,
                "basis": self.basis,
                "slower_pct": _finite(100.0 * self.slower_fraction),
            },
            "kinds": self.kinds,
            "primitives": self.primitives,
            "appeared": self.appeared,
            "vanished": self.vanished,
            "implementation_changes": self.impl_changes,
            "iterations": self.iterations,
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _side_json(side: Side) -> dict[str, Any]:
    return {
        "path": side.path,
        "exec_count": side.exec_count,
        "total_ms": side.total_ms,
        "iterations": side.iterations,
        "warmup": side.warmup,
        "steady_median_ms": side.steady_median_ms,
        "typical_iteration_ms": side.typical_ms,
    }


def _side(log: ParsedLog, info: IterationInfo) -> Side:
    execs = primitive_execs(log.events)
    paths = ", ".join(s.path for s in log.scans)
    return Side(
        paths,
        len(execs),
        float(execs["time_ms"].sum()),
        info.count,
        [float(t) for t in iteration_times(log, info)],
        info.warmup,
        typical_iteration(log, info),
    )


def _primitive_key(log: ParsedLog, rid: int) -> tuple[str, str, str, str]:
    r = log.records[rid]
    flow = flow_label(r.mds) if r.kind == "reorder" else ""
    return r.kind, r.prop_kind, r.problem, flow


def _per_primitive(log: ParsedLog) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    execs = primitive_execs(log.events)
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    if execs.empty:
        return out
    g = execs.groupby("record", sort=False)["time_ms"].agg(["size", "sum"])
    for rid, row in g.iterrows():
        r = log.records[int(rid)]
        key = _primitive_key(log, int(rid))
        entry = out.setdefault(
            key, {"count": 0, "ms": 0.0, "impls": Counter(), "layouts": Counter()}
        )
        entry["count"] += int(row["size"])
        entry["ms"] += float(row["sum"])
        entry["impls"][r.impl] += int(row["size"])
        entry["layouts"][md_layouts(r.mds)] += int(row["size"])
    return out


def _names(counter: Counter) -> list[str]:
    return [k for k, _ in counter.most_common()]


def _primitive_rows(base: ParsedLog, new: ParsedLog) -> list[dict[str, Any]]:
    b, n = _per_primitive(base), _per_primitive(new)
    rows = []
    for key in list(b) + [k for k in n if k not in b]:
        eb = b.get(key, {"count": 0, "ms": 0.0, "impls": Counter(), "layouts": Counter()})
        en = n.get(key, {"count": 0, "ms": 0.0, "impls": Counter(), "layouts": Counter()})
        if not eb["count"]:
            status = "appeared"
        elif not en["count"]:
            status = "vanished"
        elif set(eb["impls"]) != set(en["impls"]) or set(eb["layouts"]) != set(en["layouts"]):
            status = "changed"
        else:
            status = "same"
        kind, prop, problem, flow = key
        rows.append(
            {
                "kind": kind,
                "prop_kind": prop,
                "shape": problem,
                "layouts": flow,
                "status": status,
                "base_count": eb["count"],
                "new_count": en["count"],
                "base_ms": eb["ms"],
                "new_ms": en["ms"],
                "delta_ms": en["ms"] - eb["ms"],
                "base_impl": _names(eb["impls"]),
                "new_impl": _names(en["impls"]),
                "base_layouts": _names(eb["layouts"]),
                "new_layouts": _names(en["layouts"]),
            }
        )
    rows.sort(key=lambda r: (-abs(r["delta_ms"]), r["kind"], r["shape"]))
    return rows


def _kind_rows(base: ParsedLog, new: ParsedLog, bs: Side, ns: Side) -> list[dict[str, Any]]:
    def per_kind(log: ParsedLog) -> pd.DataFrame:
        execs = primitive_execs(log.events)
        if execs.empty:
            return pd.DataFrame(columns=["size", "sum"])
        g = execs.groupby("kind", observed=True)["time_ms"].agg(["size", "sum"])
        g.index = g.index.astype(str)
        return g

    gb, gn = per_kind(base), per_kind(new)
    kinds = list(dict.fromkeys([*gb.index, *gn.index]))
    rows = []
    for kind in kinds:
        bc = int(gb.loc[kind, "size"]) if kind in gb.index else 0
        nc = int(gn.loc[kind, "size"]) if kind in gn.index else 0
        bm = float(gb.loc[kind, "sum"]) if kind in gb.index else 0.0
        nm = float(gn.loc[kind, "sum"]) if kind in gn.index else 0.0
        row: dict[str, Any] = {
            "kind": kind,
            "base_count": bc,
            "new_count": nc,
            "base_ms": bm,
            "new_ms": nm,
            "delta_ms": nm - bm,
            "base_share": bm / bs.total_ms if bs.total_ms > 0 else 0.0,
            "new_share": nm / ns.total_ms if ns.total_ms > 0 else 0.0,
        }
        if bs.typical_by_kind or ns.typical_by_kind:
            row["base_typical_ms"] = bs.typical_by_kind.get(kind, 0.0)
            row["new_typical_ms"] = ns.typical_by_kind.get(kind, 0.0)
        if bs.iterations and ns.iterations:
            row["base_per_iteration_ms"] = bm / bs.iterations
            row["new_per_iteration_ms"] = nm / ns.iterations
            row["base_per_iteration_count"] = bc / bs.iterations
            row["new_per_iteration_count"] = nc / ns.iterations
        rows.append(row)
    rows.sort(key=lambda r: -max(r["base_ms"], r["new_ms"]))
    return rows


def diff_logs(base: ParsedLog, new: ParsedLog, basis: str = "mean") -> Diff:
    """Compare two parsed runs; ``basis`` picks what the verdict compares (``mean``,
    ``typical``)."""
    if basis not in ("mean", "typical"):
        raise ValueError(f"unknown basis {basis!r} (mean or typical)")
    bi, ni = iteration_info(base), iteration_info(new)
    bs, ns = _side(base, bi), _side(new, ni)
    d = Diff(bs, ns, basis=basis)
    d.kinds = _kind_rows(base, new, bs, ns)
    d.primitives = _primitive_rows(base, new)
    length = max(len(bs.iteration_ms), len(ns.iteration_ms))
    for i in range(length):
        bm = bs.iteration_ms[i] if i < len(bs.iteration_ms) else None
        nm = ns.iteration_ms[i] if i < len(ns.iteration_ms) else None
        d.iterations.append(
            {
                "iteration": i,
                "base_ms": bm,
                "new_ms": nm,
                "warmup": i
                < max(bi.warmup if bm is not None else 0, ni.warmup if nm is not None else 0),
            }
        )
    return d
