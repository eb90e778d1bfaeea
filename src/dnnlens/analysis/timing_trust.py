"""Whether a run's times can be trusted at all: a uniform slowdown against the machine model.

Spikes are easy to see (a primitive whose p95 is many times its median: the
``unstable-timing`` rule). A machine loaded for the whole run is not: every call is slow,
the medians are slow, and the report ranks findings on times that say more about the
other processes than about the program (an 18 KB reorder at 95 ms "costs 63%"). What
gives it away is the rate: bytes/s of a memory-bound primitive (reorders, eltwise, pooling
...) and FLOP/s of a compute-bound one (convolutions, matmuls) against the roofline of the
machine model (:mod:`dnnlens.analysis.roofline`: ``roof_ms`` is the time its bandwidth or
peak allows one call).

A call is **impossibly slow** when its typical run takes at least :data:`SLOW_FACTOR` (100)
times its roof and at least :data:`MIN_RUN_MS` (0.1 ms). Why these:

* 100x below the roof: the model's bandwidth is conservative (10 GB/s per thread, about half
  of one DDR4 channel, when no profile says more), so 100x below it is 0.1 GB/s per thread,
  far below what a single DRAM channel gives one core. On the clean sample recordings
  (``sample_logs/``, 30 logs) the slowest primitive reaches 1/120 of its roof, and only in
  calls under 0.02 ms;
* at least 0.1 ms: a call's fixed cost (dispatch, the thread pool's barrier) is a few
  microseconds and makes every tiny call look slow against its roof; none reaches 0.1 ms.
  A run that is slower than that 100 times over at that size was not running on the CPU.

The run's times are **not trustworthy** (``level = "low"``) when impossibly slow calls hold
:data:`MIN_SLOW_SHARE` (a quarter) or more of the typical iteration: the clean recordings
hold at most 1%, a loaded recording (``tests/data/noise/``) 93%, and a quarter of the
iteration in calls that did not run is more than the share most findings rank by, so their
order can no longer be trusted. Causes: other processes on the cores (or the program
niced), a throttled or oversubscribed CPU, or warm-up that could not be left out (a run of
first calls only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: A typical run this many times the roof's time or more is impossibly slow (docstring).
SLOW_FACTOR = 100.0
#: ... and at least this long (ms): no call's fixed cost reaches it.
MIN_RUN_MS = 0.1
#: Impossibly slow calls holding this share of the typical iteration or more: timings are
#: not trustworthy.
MIN_SLOW_SHARE = 0.25


@dataclass(frozen=True)
class TimingTrust:
    """How far the run's times can be trusted (module docstring)."""

    level: str
    #: impossibly slow primitives' part of the typical iteration (ms) and its share
    slow_ms: float = 0.0
    typical_ms: float = 0.0
    share: float | None = None
    #: what those calls would take at the roof, per iteration (ms): their roof time x
    #: their part of the typical iteration / their typical run
    roof_ms: float = 0.0
    #: the records of the impossibly slow primitives, slowest part first
    records: list[int] = field(default_factory=list)
    #: the worst of them against its roof, in words
    example: str = ""
    #: how many times slower than its roof the worst one runs
    worst_factor: float | None = None

    @property
    def trustworthy(self) -> bool:
        return self.level == "high"

    @property
    def reason(self) -> str:
        if self.trustworthy:
            if self.share is None:
                return "no primitive has a known cost to check its rate against"
            return (
                f"{100 * self.share:.0f}% of the typical iteration runs at least "
                f"{SLOW_FACTOR:g}x below the machine model (less than "
                f"{100 * MIN_SLOW_SHARE:.0f}%)"
            )
        return (
            f"{100 * (self.share or 0):.0f}% of the typical iteration ({_ms(self.slow_ms)} of "
            f"{_ms(self.typical_ms)}) runs at least {SLOW_FACTOR:g}x below the machine "
            f"model's bound ({self.example}): the whole run was slowed"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "reason": self.reason,
            "slow_share_of_iteration": self.share,
            "slow_ms_per_iteration": self.slow_ms,
            "roof_ms_per_iteration": self.roof_ms,
            "worst_factor": self.worst_factor,
            "slow_factor": SLOW_FACTOR,
            "min_run_ms": MIN_RUN_MS,
            "min_slow_share": MIN_SLOW_SHARE,
        }


def _ms(value: float) -> str:
    from dnnlens.fmt import ms

    return ms(value)


def _bytes_rate(gbs: float) -> str:
    """A rate in GB/s, in the unit that makes it readable."""
    for unit, scale in (("GB/s", 1.0), ("MB/s", 1e3), ("KB/s", 1e6)):
        if gbs * scale >= 1.0:
            return f"{gbs * scale:.2g} {unit}"
    return f"{gbs * 1e9:.2g} B/s"


def _rate(point: dict[str, Any]) -> str:
    """What the worst call attained against its roof, in words."""
    kind = point.get("kind", "")
    if point.get("bound") == "memory" or not point.get("flops"):
        gbs = point.get("gbs")
        size = point.get("bytes") or 0
        got = _bytes_rate(gbs) if gbs is not None else "?"
        return f"{kind} of {size / 1024:.0f} KB in {_ms(point['run_ms'])}: {got}"
    gflops = point.get("gflops")
    roof = point.get("roof_gflops")
    got = f"{gflops:.3g} GFLOP/s" if gflops is not None else "?"
    against = f" against {roof:.3g}" if roof is not None else ""
    return f"{kind} at {got}{against}"


def timing_trust(points: list[dict[str, Any]], typical_ms: float) -> TimingTrust:
    """The trust in a run's times from its roofline points (``Analysis.primitives``: each
    with ``run_ms``, ``roof_ms`` and ``iter_ms``, its part of the typical iteration)."""
    if not (math.isfinite(typical_ms) and typical_ms > 0):
        return TimingTrust("high")
    known = False
    slow: list[tuple[float, float, dict[str, Any]]] = []
    for p in points:
        run, roof = p.get("run_ms"), p.get("roof_ms")
        if not run or not roof or not (math.isfinite(run) and math.isfinite(roof)):
            continue
        known = True
        factor = run / roof
        if factor >= SLOW_FACTOR and run >= MIN_RUN_MS:
            slow.append((float(p.get("iter_ms") or 0.0), factor, p))
    if not known:
        return TimingTrust("high", typical_ms=typical_ms)
    slow_ms = float(sum(s[0] for s in slow))
    roof_ms = float(sum(s[0] / s[1] for s in slow))  # iter_ms x roof / run
    share = min(slow_ms / typical_ms, 1.0)
    slow.sort(key=lambda s: -s[0])
    level = "low" if share >= MIN_SLOW_SHARE else "high"
    worst = max(slow, key=lambda s: s[1]) if slow else None
    example = ""
    if worst is not None:
        example = f"e.g. {_rate(worst[2])}, {worst[1]:,.0f}x its roof"
    return TimingTrust(
        level,
        slow_ms=slow_ms,
        typical_ms=typical_ms,
        share=share,
        roof_ms=roof_ms,
        records=[int(s[2]["record"]) for s in slow],
        example=example,
        worst_factor=worst[1] if worst is not None else None,
    )


__all__ = ["MIN_RUN_MS", "MIN_SLOW_SHARE", "SLOW_FACTOR", "TimingTrust", "timing_trust"]
