"""What the framework rules share: the view of a trace, and the numbers every finding has.

Each framework finding's ``data`` holds ``impact_ms_per_step`` (the typical time per steady
step it accounts for), ``share_of_step`` (that over the typical step) and
``typical_step_ms``; its evidence names the trace event (path, line, op, step, timestamp).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.framework import FrameworkAnalysis
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import ms, pct
from dnnlens.rules.context import RuleContext


def trace_view(ctx: RuleContext) -> FrameworkAnalysis | None:
    """The framework view when it comes from a trace with steady steps, else None."""
    fw = ctx.framework
    if fw is None or fw.rows is None or not fw.steady_count:
        return None
    return fw


def impact(fw: FrameworkAnalysis, impact_ms: float, **extra: Any) -> dict[str, Any]:
    """The ``data`` of a framework finding."""
    return {
        "impact_ms_per_step": impact_ms,
        "share_of_step": fw.share(impact_ms),
        "typical_step_ms": fw.typical_step_ms,
        "steady_steps": fw.steady_count,
        **extra,
    }


def cost(fw: FrameworkAnalysis, impact_ms: float) -> str:
    """``0.23 ms per step, 27% of a typical step (0.87 ms)``."""
    return (
        f"{ms(impact_ms)} per step, {pct(fw.share(impact_ms))} of a typical step "
        f"({ms(fw.typical_step_ms)})"
    )


def counted(names: list[str], calls: list[float]) -> str:
    """``add_ x32, mul_ x16`` (largest first, ``aten::`` left out)."""
    pairs = sorted(zip(names, calls, strict=True), key=lambda p: -p[1])
    return ", ".join(f"{n.removeprefix('aten::')} x{c:g}" for n, c in pairs)


def masked_finding(
    rule: Rule, fw: FrameworkAnalysis, mask: np.ndarray, what: str, count_key: str
) -> Iterator[Finding]:
    """The finding of a rule that blames the rows of ``mask``: their typical time per step,
    when it reaches the rule's ``min_share``, with their calls per step by op name."""
    total = fw.typical_ms(mask)
    if not total or fw.share(total) < rule.options["min_share"]:
        return
    calls = fw.calls_by_name(mask)
    count = sum(calls.values())
    yield rule.finding(
        f"{count:g} {what} per step ({counted(list(calls), list(calls.values()))}): "
        f"{cost(fw, total)}",
        fw.evidence(mask, 3),
        data=impact(fw, total, **{count_key: count}, ops_per_step=calls),
        impact_ms=total,
        basis="step",
    )
