"""What the framework rules share: the view of a trace, the numbers every finding has, and
how a finding is graded by its share of the step.

Each framework finding's ``data`` holds ``impact_ms_per_step`` (the typical time per steady
step it accounts for), ``share_of_step`` (that over the typical step) and
``typical_step_ms``; its evidence names the trace event (path, line, op, step, timestamp).

**Grading, the same for every framework rule** (docs/rules.md, "Framework thresholds").
The steps of one recording differ from their median by about 5%: the median absolute
deviation of the step durations over the median step, in the traces of
``sample_logs/framework/`` (``scripts/make_traces.py``: 4 ``ProfilerStep`` spans each, one
thread, a shared 2-core machine; 22 traces when this was written), ranges from 0.7% to
22% with a median of 4.6% (``tests/test_framework_rules.py`` keeps it between 2% and 8%).
A cost below that cannot be told from step-to-step noise, and its fix would not show in a
second recording of as many steps:

* under :data:`QUIET_BELOW_SHARE` (2%, under half that noise) a framework rule says
  nothing (its ``min_share`` option, default this);
* under :data:`WARNING_SHARE` (5%, the noise) it is ``info``: real and measured, after the
  findings that matter (they rank by cost);
* from :data:`WARNING_SHARE` up it has the rule's severity (``warning``).

**From a key_averages table alone** (no trace rows) a rule applies the same thresholds and
grading to the figure :mod:`dnnlens.analysis.framework.table_patterns` gives
(:func:`table_finding`); when that figure's bounds straddle the threshold the message says
"as far as a table tells" and what a table cannot see. The impact is never more than the
step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._util import ms, pct
from dnnlens.rules.context import RuleContext

if TYPE_CHECKING:  # the framework view is imported where a trace or table is analysed
    from dnnlens.analysis.framework import FrameworkAnalysis
    from dnnlens.analysis.framework.table_patterns import TableEstimate

#: A framework finding under this share of the typical step is not reported (module doc).
QUIET_BELOW_SHARE = 0.02
#: A framework finding under this share of the typical step is ``info`` (module doc).
WARNING_SHARE = 0.05


def graded(rule: Rule, share: float) -> str:
    """The severity of a finding of ``share`` of the step: ``info`` under
    :data:`WARNING_SHARE`, else the rule's; a severity set in the configuration is kept."""
    if rule.level != type(rule).severity:
        return rule.level
    return "info" if share < WARNING_SHARE else rule.level


def step_finding(
    rule: Rule,
    fw: FrameworkAnalysis,
    message: str,
    evidence: list,
    impact_ms: float,
    data: dict[str, Any],
    fix: str = "",
    saving: Saving | None = None,
) -> Iterator[Finding]:
    """The finding, graded, when ``impact_ms`` reaches the rule's ``min_share`` of the step
    (nothing otherwise); ``saving`` what its fix saves (default: unknown)."""
    share = fw.share(impact_ms)
    if not impact_ms or share is None or share < rule.options["min_share"]:
        return
    yield rule.finding(
        message,
        evidence,
        data=data,
        fix=fix,
        severity=graded(rule, share),
        impact_ms=impact_ms,
        basis="step",
        saving=saving,
    )


def trace_view(ctx: RuleContext) -> FrameworkAnalysis | None:
    """The framework view when it comes from a trace with steady steps, else None."""
    fw = ctx.framework
    if fw is None or fw.rows is None or not fw.steady_count:
        return None
    return fw


def table_view(ctx: RuleContext) -> FrameworkAnalysis | None:
    """The framework view when it comes from a key_averages table with steps, else None."""
    fw = ctx.framework
    if fw is None or fw.rows is not None or fw.table is None or not fw.steady_count:
        return None
    return fw


def hedge(rule: Rule, fw: FrameworkAnalysis, estimate: TableEstimate) -> str:
    """``" (as far as a table tells: ...)"`` when ``estimate``'s bounds straddle the rule's
    ``min_share`` of the step, else nothing."""
    if estimate.certain(rule.options["min_share"] * fw.typical_step_ms):
        return ""
    return f" (as far as a table tells: {estimate.basis})"


def table_finding(
    rule: Rule,
    fw: FrameworkAnalysis,
    what: str,
    estimate: TableEstimate,
    fix: str = "",
    saving: Callable[[float], Saving] | None = None,
    **extra: Any,
) -> Iterator[Finding]:
    """The finding of a rule on a table: ``estimate``'s figure (at most the step) graded
    like a trace's, its bounds in ``data``, the table's rows of its ops as evidence;
    ``saving`` makes what the fix saves from that figure (default: unknown)."""
    impact_ms = min(estimate.ms_per_step, fw.typical_step_ms)
    calls, high = estimate.calls_per_step, estimate.high_ms
    yield from step_finding(
        rule,
        fw,
        f"{what}: {cost(fw, impact_ms)}{hedge(rule, fw, estimate)}",
        fw.table_evidence(list(calls), 3),
        impact_ms,
        impact(
            fw,
            impact_ms,
            **{
                "ops_per_step": calls,
                "table_low_ms_per_step": estimate.low_ms,
                "table_high_ms_per_step": high if math.isfinite(high) else None,
                **extra,
            },
        ),
        fix=fix,
        saving=saving(impact_ms) if saving is not None else None,
    )


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
    """``0.23 ms per step, 27% of the typical 0.87 ms step``: the finding's one share, in
    the headline's words (a framework finding's share of the step is its share of the
    report's basis, :meth:`Analysis.share_of`)."""
    return (
        f"{ms(impact_ms)} per step, {pct(fw.share(impact_ms))} of the typical "
        f"{ms(fw.typical_step_ms)} step"
    )


def counted(names: list[str], calls: list[float]) -> str:
    """``add_ x32, mul_ x16`` (largest first, ``aten::`` left out)."""
    pairs = sorted(zip(names, calls, strict=True), key=lambda p: -p[1])
    return ", ".join(f"{n.removeprefix('aten::')} x{c:g}" for n, c in pairs)


def masked_finding(
    rule: Rule,
    fw: FrameworkAnalysis,
    mask: np.ndarray,
    what: str,
    count_key: str,
    saving: Callable[[float], Saving] | None = None,
) -> Iterator[Finding]:
    """The finding of a rule that blames the rows of ``mask``: their typical time per step,
    when it reaches the rule's ``min_share``, with their calls per step by op name;
    ``saving`` makes what the fix saves from that time (default: unknown)."""
    total = fw.typical_ms(mask)
    calls = fw.calls_by_name(mask)
    count = sum(calls.values())
    yield from step_finding(
        rule,
        fw,
        f"{count:g} {what} per step ({counted(list(calls), list(calls.values()))}): "
        f"{cost(fw, total)}",
        fw.evidence(mask, 3),
        total,
        impact(fw, total, **{count_key: count}, ops_per_step=calls),
        saving=saving(total) if saving is not None else None,
    )
