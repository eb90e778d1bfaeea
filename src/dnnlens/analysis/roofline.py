"""Roofline: each distinct primitive (and each kind) against the machine's two limits.

For a primitive that ran ``n`` timed calls in ``T`` ms, with ``F`` FLOPs and ``B`` bytes per
call (:mod:`dnnlens.analysis.costmodel`) on a machine with compute peak ``P`` (GFLOP/s, for
the primitive's data type) and bandwidth ``W`` (GB/s) (:mod:`dnnlens.analysis.machine`):

* attained ``gflops = F x n / T`` (``T`` in ms, so ``/ 1e6``), ``gbs = B x n / T``;
* arithmetic intensity ``AI = F / B``; roof ``min(P, AI x W)``;
* ``bound`` is ``compute`` when ``AI >= P / W`` (the ridge point), else ``memory``;
* ``efficiency = max(F / P, B / W) / (T / n)``: the time the roof allows per call over the
  measured time per call. For ``F > 0`` this is ``gflops / min(P, AI x W)``; for a
  primitive that does no arithmetic (reorder, concat) it is ``gbs / W``. Above 1 means the
  data came from caches faster than the DRAM bandwidth ``W`` allows.
* ``best_gflops`` / ``best_efficiency``: the same for the fastest call (``min_ms``), a
  guide when a few slow calls (thread wake-ups, a shared machine) dominate the mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from dnnlens.analysis.columns import row_dicts
from dnnlens.analysis.costmodel import Cost, primitive_cost
from dnnlens.analysis.machine import Machine, machine_for_log
from dnnlens.model.stats import stats_from_events

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
    """One distinct primitive line placed on the roofline (``None``: cost unknown)."""

    record: int
    kind: str
    impl: str
    prop_kind: str
    problem: str
    count: int
    timed: int
    time_ms: float
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
            "record": self.record, "example": self.example,
        }  # fmt: skip


def place(cost: Cost, calls: int, time_ms: float, machine: Machine) -> dict[str, Any]:
    """Roofline numbers of ``calls`` timed calls of a primitive of ``cost`` taking ``time_ms``.

    Returns ``gflops``, ``gbs``, ``peak_gflops``, ``roof_gflops``, ``roof_ms`` (per call),
    ``bound`` and ``efficiency`` (``None`` where the time is missing or zero).
    """
    peak = machine.peak(cost.dtype)
    bw = machine.bandwidth_gbs
    compute_ms = cost.flops / peak / 1e6 if peak > 0 else 0.0
    memory_ms = cost.bytes / bw / 1e6 if bw > 0 else 0.0
    roof_ms = max(compute_ms, memory_ms)
    ai = cost.intensity
    out: dict[str, Any] = {
        "peak_gflops": peak,
        "roof_gflops": min(peak, ai * bw) if ai is not None else (peak if cost.flops else 0.0),
        "roof_ms": roof_ms,
        "bound": "compute" if compute_ms >= memory_ms and cost.flops > 0 else "memory",
        "gflops": None, "gbs": None, "efficiency": None,
    }  # fmt: skip
    if calls > 0 and time_ms > 0:
        per_call = time_ms / calls
        out["gflops"] = cost.flops * calls / time_ms / 1e6
        out["gbs"] = cost.bytes * calls / time_ms / 1e6
        out["efficiency"] = roof_ms / per_call if roof_ms > 0 else None
    return out


def roofline_points(
    log: Any, machine: Machine | None = None, stats: pd.DataFrame | None = None
) -> list[RooflinePoint]:
    """Every distinct executed primitive of ``log`` on the roofline, most time first.

    ``stats`` is the per-record statistics frame (:mod:`dnnlens.model.stats`); by
    default it is computed from the log's event table (pass the stream accumulator's frame
    for a windowed streaming analysis).
    """
    m = machine or machine_for_log(log)
    frame = stats if stats is not None else stats_from_events(log.events)
    points: list[RooflinePoint] = []
    for rid, row in row_dicts(frame):
        rec = log.records[int(rid)]
        if rec.operation != "exec" or rec.kind in ("", "graph_partition"):
            continue
        timed = int(row["timed"])
        time_ms = float(row["time_ms"]) if timed else float("nan")
        p = RooflinePoint(
            record=int(rid), kind=rec.kind, impl=rec.impl, prop_kind=rec.prop_kind,
            problem=rec.problem, count=int(row["count"]), timed=timed, time_ms=time_ms,
            example=f"{row['first_input']}:{int(row['first_line'])}",
        )  # fmt: skip
        cost = primitive_cost(rec.kind, rec.problem, rec.mds, rec.prop_kind, rec.aux, rec.attrs)
        if cost is not None:
            p.dtype, p.flops, p.bytes, p.intensity = (
                cost.dtype,
                cost.flops,
                cost.bytes,
                cost.intensity,
            )
            for key, value in place(cost, timed, time_ms if timed else 0.0, m).items():
                setattr(p, key, value)
            best = float(row["min_ms"]) if "min_ms" in row else float("nan")
            if best > 0:  # the fastest call: what the primitive can do without interference
                p.best_gflops = cost.flops / best / 1e6
                p.best_efficiency = (p.roof_ms or 0.0) / best or None
        points.append(p)
    points.sort(key=lambda q: (-(q.time_ms if q.time_ms == q.time_ms else -1.0), -q.count))
    return points


def kind_points(points: list[RooflinePoint], machine: Machine) -> list[dict[str, Any]]:
    """Per primitive kind: summed FLOPs, bytes and time of its known-cost primitives."""
    acc: dict[str, dict[str, float]] = {}
    for p in points:
        if p.flops is None or p.bytes is None or not p.timed or not p.time_ms > 0:
            continue
        a = acc.setdefault(
            p.kind,
            {
                "flops": 0.0,
                "bytes": 0.0,
                "time_ms": 0.0,
                "roof_ms": 0.0,
                "count": 0,
                "compute_ms": 0.0,
            },
        )
        a["flops"] += p.flops * p.timed
        a["bytes"] += p.bytes * p.timed
        a["time_ms"] += p.time_ms
        a["count"] += p.timed
        a["roof_ms"] += (p.roof_ms or 0.0) * p.timed
        if p.bound == "compute":
            a["compute_ms"] += (p.roof_ms or 0.0) * p.timed
    rows = []
    for kind, a in acc.items():
        rows.append({
            "kind": kind, "count": int(a["count"]), "time_ms": a["time_ms"],
            "flops": int(a["flops"]), "bytes": int(a["bytes"]),
            "intensity": a["flops"] / a["bytes"] if a["bytes"] else None,
            "gflops": a["flops"] / a["time_ms"] / 1e6,
            "gbs": a["bytes"] / a["time_ms"] / 1e6,
            "bound": "compute" if a["compute_ms"] * 2 >= a["roof_ms"] and a["flops"] else
            "memory",
            "efficiency": a["roof_ms"] / a["time_ms"] if a["roof_ms"] else None,
        })  # fmt: skip
    rows.sort(key=lambda r: -r["time_ms"])
    return rows


def _resolve_machine(analysis: Any, machine: Machine | None) -> Machine:
    return machine if machine is not None else machine_for_log(analysis.log)


def primitives_json(
    analysis: Any, machine: Machine | None = None, stats: pd.DataFrame | None = None
) -> list[dict[str, Any]]:
    """The ``primitives`` list of ``analyze --format json`` (see the module docstring).

    ``machine`` defaults to the nominal machine of the log's header
    (:func:`~dnnlens.analysis.machine.machine_for_log`).
    """
    m = _resolve_machine(analysis, machine)
    return [p.to_json() for p in roofline_points(analysis.log, m, stats)]


def roofline_json(
    analysis: Any, machine: Machine | None = None, stats: pd.DataFrame | None = None
) -> dict[str, Any]:
    """Machine, primitives and kinds: everything a roofline chart or table needs."""
    m = _resolve_machine(analysis, machine)
    points = roofline_points(analysis.log, m, stats)
    return {
        "machine": {
            **m.to_dict(),
            "peaks": {dt: m.peak(dt) for dt in ("f32", "bf16", "f16", "int8")},
        },
        "primitives": [p.to_json() for p in points],
        "kinds": kind_points(points, m),
    }
