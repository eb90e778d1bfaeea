"""Roofline: each distinct primitive (and each kind) against the machine's two limits.

For a primitive with ``F`` FLOPs and ``B`` bytes per call (:mod:`dnnlens.analysis.costmodel`)
whose typical run (the median over its steady executions, the fastest below three;
:mod:`dnnlens.analysis.timing`) takes ``t`` ms, on a machine with compute peak ``P``
(GFLOP/s, for the primitive's data type) and bandwidth ``W`` (GB/s)
(:mod:`dnnlens.analysis.machine`):

* attained ``gflops = F / t`` (``t`` in ms, so ``/ 1e6``), ``gbs = B / t``;
* arithmetic intensity ``AI = F / B``; roof ``min(P, AI x W)``;
* ``bound`` is ``compute`` when ``AI >= P / W`` (the ridge point), else ``memory``;
* ``roof_ms = max(F / P, B / W)``: the time the roof allows per call;
* ``efficiency = roof_ms / t``: for ``F > 0`` this is ``gflops / min(P, AI x W)``; for a
  primitive that does no arithmetic (reorder, concat) it is ``gbs / W``.
* ``best_gflops`` / ``best_efficiency``: the same for the fastest call of all (``min_ms``),
  a guide when stalls (thread wake-ups, a shared machine) inflate the typical run.

The typical run is the time every report uses (the typical iteration is made of them), so
the rate and the efficiency here are the ones the ``low-efficiency`` rule judges. A call
faster than its roof cannot be more than 100% of it: the efficiency is then ``None`` and
``above_roof`` says which assumption the measurement disproves (an assumed clock that is
too low, data that came from a cache; :meth:`Machine.above_roof`). ``peak_basis`` says how
the binding roof is known (``profile``, ``log header``, ``this machine``, ``assumed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dnnlens.analysis.columns import row_dicts
from dnnlens.analysis.costmodel import Cost, record_cost
from dnnlens.analysis.machine import Machine

__all__ = [
    "RooflinePoint",
    "kind_points",
    "place",
    "primitives_json",
    "roofline_json",
    "roofline_points",
]


@dataclass
class RooflinePoint:
    """One distinct primitive line placed on the roofline (``None``: cost or time unknown).

    ``count``, ``timed`` and ``time_ms`` are raw, over every execution; ``run_ms`` (typical
    run) and ``steady_count`` over the steady ones; the rates and efficiencies follow from
    ``run_ms`` (and ``min_ms`` for ``best_*``).
    """

    record: int
    kind: str
    impl: str
    prop_kind: str
    problem: str
    count: int
    timed: int
    time_ms: float
    run_ms: float | None = None
    steady_count: int = 0
    dtype: str = ""
    flops: int | None = None
    bytes: int | None = None
    intensity: float | None = None
    gflops: float | None = None
    gbs: float | None = None
    peak_gflops: float | None = None
    roof_gflops: float | None = None
    roof_ms: float | None = None
    bound: str | None = None
    efficiency: float | None = None
    best_gflops: float | None = None
    best_efficiency: float | None = None
    peak_basis: str | None = None
    above_roof: str | None = None
    example: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``primitives`` entry of the JSON report (contract keys first)."""
        return {
            "kind": self.kind, "impl": self.impl, "problem": self.problem,
            "count": self.count, "time_ms": self.time_ms, "flops": self.flops,
            "bytes": self.bytes, "gflops": self.gflops, "bound": self.bound,
            "efficiency": self.efficiency, "prop_kind": self.prop_kind, "dtype": self.dtype,
            "intensity": self.intensity, "gbs": self.gbs, "peak_gflops": self.peak_gflops,
            "roof_gflops": self.roof_gflops, "roof_ms": self.roof_ms,
            "best_gflops": self.best_gflops, "best_efficiency": self.best_efficiency,
            "peak_basis": self.peak_basis, "above_roof": self.above_roof,
            "record": self.record, "example": self.example,
        }  # fmt: skip


def _timed(ms: float | None) -> float | None:
    """A time that can be divided by: positive and finite, else ``None``."""
    return ms if ms is not None and math.isfinite(ms) and ms > 0 else None


def place(
    cost: Cost, run_ms: float | None, machine: Machine, best_ms: float | None = None
) -> dict[str, Any]:
    """Roofline numbers of one primitive of ``cost`` whose typical run takes ``run_ms``.

    Returns ``gflops``, ``gbs``, ``peak_gflops``, ``roof_gflops``, ``roof_ms`` (per call),
    ``bound``, ``efficiency``, ``best_gflops``, ``best_efficiency`` (from ``best_ms``, the
    fastest call), ``peak_basis`` and ``above_roof``. A time that is missing or zero gives
    ``None`` rates; a time under ``roof_ms`` gives a ``None`` efficiency and the reason.
    """
    peak = machine.peak(cost.dtype)
    bw = machine.bandwidth_gbs
    compute_ms = cost.flops / peak / 1e6 if peak > 0 else 0.0
    memory_ms = cost.bytes / bw / 1e6 if bw > 0 else 0.0
    roof_ms = max(compute_ms, memory_ms)
    ai = cost.intensity
    bound = "compute" if compute_ms >= memory_ms and cost.flops > 0 else "memory"
    out: dict[str, Any] = {
        "peak_gflops": peak,
        "roof_gflops": min(peak, ai * bw) if ai is not None else (peak if cost.flops else 0.0),
        "roof_ms": roof_ms,
        "bound": bound,
        "peak_basis": machine.peak_basis(cost.dtype) if bound == "compute" else (
            machine.bandwidth_basis
        ),
        "gflops": None, "gbs": None, "efficiency": None,
        "best_gflops": None, "best_efficiency": None, "above_roof": None,
    }  # fmt: skip
    for what, ms, rate, eff in (
        ("the typical run", _timed(run_ms), "gflops", "efficiency"),
        ("the fastest call", _timed(best_ms), "best_gflops", "best_efficiency"),
    ):
        if ms is None:
            continue
        out[rate] = cost.flops / ms / 1e6
        if rate == "gflops":
            out["gbs"] = cost.bytes / ms / 1e6
        if roof_ms <= 0:
            continue
        if roof_ms <= ms:
            out[eff] = roof_ms / ms
        elif out["above_roof"] is None:  # the typical run's reason first: it implies the other
            out["above_roof"] = machine.above_roof(bound, cost.dtype, what)
    return out


def roofline_points(
    log: Any, machine: Machine, totals: pd.DataFrame, steady: pd.DataFrame
) -> list[RooflinePoint]:
    """Every distinct executed primitive of ``log`` on the roofline, most raw time first.

    ``totals`` is the per-record statistics frame over all events
    (:mod:`dnnlens.model.stats`: ``count``, ``timed``, ``time_ms``, ``min_ms``); ``steady``
    the per-record timing of the steady executions (:func:`.timing.record_stats`:
    ``run_ms``, ``count``).
    """
    runs = steady["run_ms"].to_dict() if len(steady) else {}
    steady_counts = steady["count"].to_dict() if len(steady) else {}
    points: list[RooflinePoint] = []
    for rid, row in row_dicts(totals):
        rec = log.records[int(rid)]
        if rec.operation != "exec" or rec.kind in ("", "graph_partition"):
            continue
        timed = int(row["timed"])
        run = runs.get(rid)
        p = RooflinePoint(
            record=int(rid), kind=rec.kind, impl=rec.impl, prop_kind=rec.prop_kind,
            problem=rec.problem, count=int(row["count"]), timed=timed,
            time_ms=float(row["time_ms"]) if timed else float("nan"),
            run_ms=float(run) if run is not None and run == run else None,
            steady_count=int(steady_counts.get(rid, 0)),
            example=f"{row['first_input']}:{int(row['first_line'])}",
        )  # fmt: skip
        cost = record_cost(rec)
        if cost is not None:
            p.dtype, p.flops, p.bytes, p.intensity = (
                cost.dtype,
                cost.flops,
                cost.bytes,
                cost.intensity,
            )
            best = float(row["min_ms"]) if "min_ms" in row else None
            for key, value in place(cost, p.run_ms, machine, best).items():
                setattr(p, key, value)
        points.append(p)
    points.sort(key=lambda q: (-(q.time_ms if q.time_ms == q.time_ms else -1.0), -q.count))
    return points


def kind_points(points: list[RooflinePoint], machine: Machine) -> list[dict[str, Any]]:
    """Per primitive kind: FLOPs, bytes and typical-run time of its steady executions."""
    acc: dict[str, dict[str, float]] = {}
    for p in points:
        if p.flops is None or p.bytes is None or p.run_ms is None or not p.steady_count:
            continue
        n = p.steady_count
        a = acc.setdefault(
            p.kind,
            {"flops": 0.0, "bytes": 0.0, "time_ms": 0.0, "roof_ms": 0.0, "count": 0,
             "compute_ms": 0.0},
        )  # fmt: skip
        a["flops"] += p.flops * n
        a["bytes"] += p.bytes * n
        a["time_ms"] += p.run_ms * n
        a["count"] += n
        a["roof_ms"] += (p.roof_ms or 0.0) * n
        if p.bound == "compute":
            a["compute_ms"] += (p.roof_ms or 0.0) * n
    rows = []
    for kind, a in acc.items():
        ratio = a["roof_ms"] / a["time_ms"] if a["roof_ms"] and a["time_ms"] > 0 else None
        rows.append({
            "kind": kind, "count": int(a["count"]), "time_ms": a["time_ms"],
            "flops": int(a["flops"]), "bytes": int(a["bytes"]),
            "intensity": a["flops"] / a["bytes"] if a["bytes"] else None,
            "gflops": a["flops"] / a["time_ms"] / 1e6 if a["time_ms"] > 0 else None,
            "gbs": a["bytes"] / a["time_ms"] / 1e6 if a["time_ms"] > 0 else None,
            "bound": "compute" if a["compute_ms"] * 2 >= a["roof_ms"] and a["flops"] else
            "memory",
            "efficiency": ratio if ratio is not None and ratio <= 1.0 else None,
        })  # fmt: skip
    rows.sort(key=lambda r: -r["time_ms"])
    return rows


def primitives_json(analysis: Any, machine: Machine | None = None) -> list[dict[str, Any]]:
    """The roofline of ``analysis``'s primitives (``analysis.primitives``, the report's);
    ``machine`` places the same timings under another machine's roofs instead."""
    if machine is None:
        return list(analysis.primitives)
    points = roofline_points(analysis.log, machine, analysis.record_totals, analysis.steady_stats)
    return [p.to_json() for p in points]


def roofline_json(analysis: Any, machine: Machine | None = None) -> dict[str, Any]:
    """Machine, primitives and kinds: everything a roofline chart or table needs."""
    m = machine if machine is not None else analysis.machine
    points = roofline_points(analysis.log, m, analysis.record_totals, analysis.steady_stats)
    return {
        "machine": m.to_json(),
        "primitives": primitives_json(analysis, machine),
        "kinds": kind_points(points, m),
    }
