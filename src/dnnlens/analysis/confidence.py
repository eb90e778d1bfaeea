"""How far a diff's verdict can be trusted: a change told apart from pass-to-pass noise.

``dnnlens diff`` compares one number per side (the typical steady iteration or step, or the
mean). That number alone cannot say whether the difference is the change under test or the
noise of the machine: a run whose steady passes wander from 1 ms to 63 ms says little about
a 0.5 ms change, and two runs of different programs have no speed ratio at all. Every diff
therefore carries a :class:`Confidence`, ``high``, ``low`` or ``none``, with its reasons:

* **different workloads** (``none``): the two runs share little of their work. The share of
  NEW's time in primitives (kind, forward or backward, and shape; not layouts,
  implementation or data type, which a change under test may move) that BASE runs too,
  and the same for BASE against NEW; the smaller of the two is the ``workload_overlap``.
  Below
  :data:`MIN_WORKLOAD_OVERLAP` (half) most of either run's time is work the other does not
  do, so a ratio of the two times says what the programs are, not how fast: the verdict
  says "different workloads" instead of faster or slower. With a profiler trace on both
  sides (the verdict compares steps) the ops are compared by name, by self time per step.
  Inference against training of one model is two workloads: the forward primitives are
  shared, the backward ones (most of a training step) are not.
* **too few passes** (``low``): each side's spread is known from its steady passes (per-pass
  exec sums, :mod:`dnnlens.analysis.steady`; steady steps' wall time with a profiler trace;
  a key_averages table has no per-step times). The test below needs enough of them that
  even a perfect separation could not be chance (see the p-value);
* **within the spread** (``low``): the rule. NEW differs from BASE when the ranges of the
  two sides' steady passes (fastest to slowest) do not overlap: every pass of NEW slower
  than every pass of BASE, or every one faster. Why ranges and not means: pass times on a
  shared machine are skewed by stalls (one 63 ms pass among 1.6 ms ones), so a mean and a
  standard deviation describe neither; a range asks only that no pass of one side did as
  well as a pass of the other. Its strength is exact: if the change did nothing, the
  passes of both sides are exchangeable and a complete separation of ``n`` and ``m``
  passes happens by chance with probability ``2 / C(n + m, n)`` (the two-sided exact
  Mann-Whitney test at its extreme). The separation counts only when that probability is
  at most :data:`MAX_CHANCE` (5%): three passes a side cannot reach it (0.10), four can
  (0.029); so "too few passes" is a probability too, not a count picked by hand. Ranges
  that overlap mean the change is smaller than the pass-to-pass spread of at least one
  side;
* **disagreement** (``low``): the ranges are apart but in the other direction than the
  compared times (the typical iteration says faster, every pass says slower).

* **untrustworthy times** (``low``): a side whose run was slowed as a whole (a large part
  of its typical iteration at rates 100x below the machine model,
  :mod:`dnnlens.analysis.timing_trust`) compares the load of the machine, not the program,
  whatever its passes say.

``high`` is what is left: the same work, enough passes, and every pass of one side beyond
every pass of the other, in the direction of the verdict. ``--fail-if-slower`` gates only
on a ``high`` diff (``dnnlens diff`` exits 2 otherwise, naming the reason).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dnnlens.fmt import ms

#: Below this share of time in work both runs do (the smaller of NEW's share in BASE's
#: primitives and BASE's share in NEW's), the runs are different workloads. Why half: below
#: it, most of either run's time is work the other does not run, so the ratio of the two
#: times is mostly a ratio of two programs. A change under test (a layout, a fusion, a
#: dtype) keeps the shapes of the main primitives and moves less than that.
MIN_WORKLOAD_OVERLAP = 0.5
#: The largest chance, under "no change", of the separation the rule asks for: the usual 5%.
MAX_CHANCE = 0.05

LEVELS = ("high", "low", "none")


@dataclass(frozen=True)
class Spread:
    """One side's steady passes (or steps): their count and range, in ms."""

    count: int
    low_ms: float | None
    high_ms: float | None

    @staticmethod
    def of(times: Sequence[float]) -> Spread:
        finite = [t for t in times if math.isfinite(t)]
        if not finite:
            return Spread(len(finite), None, None)
        return Spread(len(finite), min(finite), max(finite))

    def text(self) -> str:
        if self.low_ms is None or self.high_ms is None:
            return "no timed pass"
        return f"{ms(self.low_ms)} to {ms(self.high_ms)}"


@dataclass(frozen=True)
class Confidence:
    """How far the verdict of one diff can be trusted (module docstring)."""

    level: str
    #: why, one sentence each (empty for ``high``: :attr:`reason` then says why it is high)
    reasons: list[str] = field(default_factory=list)
    #: the smaller of NEW's time share in work BASE does and BASE's in work NEW does; None
    #: when there is nothing to compare
    workload_overlap: float | None = None
    #: what the overlap was measured on: ``primitives`` (kind and shape) or ``ops`` (names)
    workload_by: str = "primitives"
    base: Spread = Spread(0, None, None)
    new: Spread = Spread(0, None, None)
    #: the chance of a complete separation of the passes when nothing changed
    #: (``2 / C(n + m, n)``), None without two timed sides
    chance: float | None = None
    #: the unit of the spreads: ``pass`` or ``step``
    unit: str = "pass"
    #: a side's times are not to be trusted (slowed as a whole: the machine's load)
    untrusted: bool = False

    @property
    def different_workloads(self) -> bool:
        """Whether the runs share too little work for a speed ratio."""
        return self.workload_overlap is not None and self.workload_overlap < MIN_WORKLOAD_OVERLAP

    @property
    def reason(self) -> str:
        """The reasons in one line (why it is high, when it is)."""
        if self.reasons:
            return "; ".join(self.reasons)
        return (
            f"every steady {self.unit} of one side is beyond every one of the other "
            f"(BASE {self.base.text()}, NEW {self.new.text()}; chance {_pct(self.chance)} "
            "if nothing changed)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "reason": self.reason,
            "reasons": list(self.reasons),
            "different_workloads": self.different_workloads,
            "workload_overlap": self.workload_overlap,
            "workload_by": self.workload_by,
            "unit": self.unit,
            "base_steady": self.base.count,
            "new_steady": self.new.count,
            "base_range_ms": _range(self.base),
            "new_range_ms": _range(self.new),
            "chance": self.chance,
        }


def _range(s: Spread) -> list[float] | None:
    return None if s.low_ms is None or s.high_ms is None else [s.low_ms, s.high_ms]


def _pct(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{100 * p:.2g}%" if p >= 0.001 else "<0.1%"


def separation_chance(n: int, m: int) -> float | None:
    """The chance that ``n`` and ``m`` exchangeable passes fall apart completely, one side
    all below the other, either way round: ``2 / C(n + m, n)`` (1 at most)."""
    if n < 1 or m < 1:
        return None
    return min(1.0, 2.0 / math.comb(n + m, n))


def overlap_share(base: dict[Any, float], new: dict[Any, float]) -> float | None:
    """The smaller of NEW's time share in keys BASE has and BASE's share in keys NEW has
    (times per key, ms); None when a side has no time."""
    shares = []
    for mine, other in ((new, base), (base, new)):
        total = sum(v for v in mine.values() if math.isfinite(v) and v > 0)
        if not total > 0:
            return None
        shared = sum(v for k, v in mine.items() if k in other and math.isfinite(v) and v > 0)
        shares.append(shared / total)
    return min(shares)


def assess(
    base_times: Sequence[float],
    new_times: Sequence[float],
    compared: tuple[float, float],
    overlap: float | None,
    workload_by: str = "primitives",
    unit: str = "pass",
    distrust: Sequence[str] = (),
) -> Confidence:
    """The confidence of a diff: the steady pass (or step) times of each side, the two
    compared times (BASE, NEW), the work both runs share (:func:`overlap_share`), and why
    a side's times are not to be trusted (``distrust``, one reason each: at most ``low``)."""
    found = _assess(base_times, new_times, compared, overlap, workload_by, unit)
    if not distrust:
        return found
    level = "low" if found.level == "high" else found.level
    return replace(found, level=level, reasons=[*found.reasons, *distrust], untrusted=True)


def _assess(
    base_times: Sequence[float],
    new_times: Sequence[float],
    compared: tuple[float, float],
    overlap: float | None,
    workload_by: str,
    unit: str,
) -> Confidence:
    b, n = Spread.of(base_times), Spread.of(new_times)
    chance = separation_chance(b.count, n.count)
    common = {
        "workload_overlap": overlap,
        "workload_by": workload_by,
        "base": b,
        "new": n,
        "chance": chance,
        "unit": unit,
    }
    if overlap is not None and overlap < MIN_WORKLOAD_OVERLAP:
        what = "primitives (kind, direction, shape)" if workload_by == "primitives" else "ops"
        return Confidence(
            "none",
            [
                f"different workloads: only {100 * overlap:.0f}% of a run's time is in "
                f"{what} the other run has too (a speed ratio needs "
                f"{100 * MIN_WORKLOAD_OVERLAP:.0f}%)"
            ],
            **common,
        )
    cb, cn = compared
    if not (math.isfinite(cb) and math.isfinite(cn)) or cb <= 0:
        return Confidence("none", ["a compared time is not a positive number"], **common)
    plural = f"{unit}es" if unit == "pass" else f"{unit}s"
    if chance is None or chance > MAX_CHANCE or b.low_ms is None or n.low_ms is None:
        return Confidence(
            "low",
            [
                f"too few steady {plural} to tell a change from noise: BASE {b.count}, "
                f"NEW {n.count} (even if every {unit} of one side beat every {unit} of "
                f"the other, chance alone would do that "
                f"{_pct(chance) if chance is not None else '100%'} of the time; at most "
                f"{100 * MAX_CHANCE:g}% counts)"
            ],
            **common,
        )
    assert b.high_ms is not None and n.high_ms is not None
    if n.low_ms <= b.high_ms and b.low_ms <= n.high_ms:
        return Confidence(
            "low",
            [
                f"within the noise: BASE's steady {plural} take {b.text()} and NEW's "
                f"{n.text()}; the ranges overlap, so the change ({ms(cn - cb)}) is smaller "
                "than the pass-to-pass spread"
            ],
            **common,
        )
    passes_slower = n.low_ms > b.high_ms
    if passes_slower != (cn > cb):
        return Confidence(
            "low",
            [
                f"the compared times say NEW is {'slower' if cn > cb else 'faster'} but "
                f"every steady {unit} of NEW is {'slower' if passes_slower else 'faster'} "
                f"(BASE {b.text()}, NEW {n.text()})"
            ],
            **common,
        )
    return Confidence("high", [], **common)


__all__ = [
    "LEVELS",
    "MAX_CHANCE",
    "MIN_WORKLOAD_OVERLAP",
    "Confidence",
    "Spread",
    "assess",
    "overlap_share",
    "separation_chance",
]
