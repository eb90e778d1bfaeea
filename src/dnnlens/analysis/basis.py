"""The one basis of a report: what every share in it is a part of (a typical step or a
typical iteration).

Its own module, outside :mod:`dnnlens.analysis.framework`, because every analysis asks
for it and a log without a trace or table should not import the framework view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from dnnlens.analysis.shares import share
from dnnlens.fmt import ms


@dataclass(frozen=True)
class ReportBasis:
    """What every share of one report is a part of, said once.

    With a framework view whose steps are steps (a trace; a table with ``ProfilerStep#``
    rows), or with nothing else to go by (no oneDNN execution), the basis is its typical
    step: the step holds everything, oneDNN's part too. The oneDNN typical iteration is
    then shown as a part of the step, ``iterations_per_step`` times: the linked oneDNN
    executions per steady step over the executions of a typical iteration, rounded to a
    whole number (at least 1), since a step repeats and so holds whole passes; rounding
    absorbs executions the linking missed. Without a link (``linked`` False) one pass per
    step is assumed, and the report says so. Otherwise the basis is the typical
    iteration; a key_averages table without step rows (its profiled window taken as one
    step) beside a log is then ``iterations_per_step`` iterations, and a framework
    finding's impact per window counts once per iteration divided by that.
    """

    unit: str  # "step" or "iteration"
    ms: float
    onednn_iteration_ms: float = 0.0
    iterations_per_step: int = 1
    linked: bool = False
    has_onednn: bool = False

    @property
    def onednn_ms_per_step(self) -> float:
        """The oneDNN typical iteration(s) of one step, ms."""
        return self.onednn_iteration_ms * self.iterations_per_step

    def per_unit(self, impact_ms: float, finding_basis: str) -> float:
        """A finding's impact in ms per basis unit: an iteration finding's impact counts
        ``iterations_per_step`` times in a step, a step finding's is shared out over the
        iterations of its step."""
        if self.unit == "step" and finding_basis != "step":
            return impact_ms * self.iterations_per_step
        if self.unit != "step" and finding_basis == "step":
            return impact_ms / self.iterations_per_step
        return impact_ms

    def share(self, impact_ms: float, finding_basis: str) -> float | None:
        """A finding's impact as a share of the basis (None without a basis)."""
        return share(self.per_unit(impact_ms, finding_basis), self.ms)

    def own_share(self, impact_ms: float, finding_basis: str) -> float | None:
        """A finding's impact as a share of its own unit (what the rule engine checks a
        built-in rule's impact against; every view shows :meth:`share`): a oneDNN
        finding's of the typical iteration, a framework finding's of the step."""
        own = self.ms * self.iterations_per_step if self.unit != "step" else self.ms
        if finding_basis != "step":
            own = self.onednn_iteration_ms
        return share(impact_ms, own)

    def mismatch_note(self) -> str | None:
        """The note when the oneDNN time of a step is longer than the step itself: the log
        and the profiler recording are not of one run (or not of the same part of it), so
        a oneDNN finding's share of the step exceeds 100%; ``None`` when the step holds it."""
        if self.unit != "step" or not self.has_onednn:
            return None
        if self.onednn_ms_per_step <= self.ms * (1 + 1e-9):
            return None
        return (
            f"the oneDNN typical iteration ({ms(self.onednn_iteration_ms)}, "
            f"{self.iterations_per_step} per step) is longer than the profiler's typical step "
            f"({ms(self.ms)}): the log and the profiler recording are not of one run, so "
            "shares of the step above 100% say only that"
        )

    def to_json(self) -> dict[str, Any]:
        """The report's ``basis`` key."""
        joined = self.has_onednn and (self.unit == "step" or self.linked)
        return {
            "unit": self.unit,
            "typical_ms": self.ms,
            "onednn_iteration_ms": self.onednn_iteration_ms if self.has_onednn else None,
            "iterations_per_step": self.iterations_per_step if joined else None,
            "onednn_ms_per_step": self.onednn_ms_per_step if joined else None,
            "iterations_per_step_from": (
                ("linked executions" if self.linked else "assumed: nothing linked")
                if joined
                else None
            ),
        }


def report_basis(
    step_ms: float | None,
    step_is_a_step: bool,
    primitives: pd.DataFrame | None,
    iteration_ms: float,
    execs_per_iteration: float,
) -> ReportBasis:
    """The basis of a report (:class:`ReportBasis`): ``step_ms`` is the framework view's
    typical step (None without one), ``step_is_a_step`` False for a table's profiled
    window, ``primitives`` its joined primitives (None without a log), the rest the
    oneDNN typical iteration and its executions."""
    has_onednn = execs_per_iteration > 0
    if step_ms is None:
        return ReportBasis("iteration", iteration_ms, iteration_ms, has_onednn=has_onednn)
    linked_per_step = (
        float(primitives["calls_per_step"].sum())
        if primitives is not None and len(primitives)
        else 0.0
    )
    linked = has_onednn and linked_per_step > 0
    k = max(1, round(linked_per_step / execs_per_iteration)) if linked else 1
    if has_onednn and not step_is_a_step:
        return ReportBasis("iteration", iteration_ms, iteration_ms, k, linked, has_onednn)
    return ReportBasis("step", step_ms, iteration_ms, k, linked, has_onednn)
