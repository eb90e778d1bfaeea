"""What the framework rules share: the view of a trace, the numbers every finding has, and
how a finding is graded by its share of the step, or by its saving when that is sure.

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

**Graded by the saving where the saving is sure.** The share says what a finding spends;
the fix is worth a warning for what it saves. When a finding's saving has a sure basis
(:data:`SURE_BASES`: ``measured``, ``same_shape``, ``removal``: the fix removes or
replaces exactly that work, measured in the same trace; not ``roofline``, a bound, nor
``unknown``), the saving's share of the step takes the share's place:

* a sure saving of at least :data:`WARNING_SHARE` is a ``warning`` (whatever is spent);
* a sure saving under :data:`WARNING_SHARE` is still a ``warning`` when it is at least
  :data:`QUIET_BELOW_SHARE` and larger than *this recording's* step-to-step spread
  (:func:`step_spread`: the median absolute deviation of the steady steps' durations over
  their median). The 5% above is the spread of a typical recording; a recording whose
  own steps vary less tells a smaller saving from noise, and a saving larger than the
  spread of the steady steps shows as a shorter step in a second recording of as many
  steps. Fewer than three steady steps have no spread: the 5% holds;
* a sure saving under that (zero included: the conversions ATen makes of channels_last
  weights, which no change of the program removes) is ``info``, however much time the
  finding spends.

A saving that is not sure (``unknown``, ``roofline``) leaves the grading by share. From a
key_averages table the grading is by share alone: its figure is an estimate between
bounds, not a sure saving.

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
#: Saving bases a finding is graded by (module doc): the fix removes or replaces exactly
#: the work measured.
SURE_BASES = ("measured", "same_shape", "removal")
#: Steady steps below which a recording has no spread (:func:`step_spread`).
MIN_SPREAD_STEPS = 3


def graded(
    rule: Rule,
    share: float,
    saving_share: float | None = None,
    spread: float | None = None,
) -> str:
    """The severity of a finding of ``share`` of the step (module doc): with a sure
    ``saving_share``, by the saving (a ``warning`` from :data:`WARNING_SHARE`, or from
    :data:`QUIET_BELOW_SHARE` when above the recording's ``spread``); otherwise ``info``
    under :data:`WARNING_SHARE`, else the rule's. A severity set in the configuration is
    kept."""
    if rule.level != type(rule).severity:
        return rule.level
    if saving_share is not None:
        floor = WARNING_SHARE
        if spread is not None:
            floor = min(WARNING_SHARE, max(QUIET_BELOW_SHARE, spread))
        return rule.level if saving_share >= floor else "info"
    return "info" if share < WARNING_SHARE else rule.level


def step_spread(fw: FrameworkAnalysis) -> float | None:
    """The step-to-step spread of a recording: the median absolute deviation of its steady
    steps' durations over their median (None under :data:`MIN_SPREAD_STEPS` steady steps
    or from a table)."""
    if fw.rows is None:
        return None
    steps = fw.steps
    durations = steps.loc[~steps["warmup"] & ~steps["partial"], "dur_ms"].to_numpy(float)
    if len(durations) < MIN_SPREAD_STEPS:
        return None
    median = float(np.median(durations))
    if median <= 0:
        return None
    return float(np.median(np.abs(durations - median))) / median


def sure_share(fw: FrameworkAnalysis, saving: Saving | None) -> float | None:
    """The share of the step a sure saving is (None when it is not sure, or from a table)."""
    if fw.rows is None or saving is None or saving.ms is None or saving.basis not in SURE_BASES:
        return None
    return fw.share(max(saving.ms, 0.0))


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
    """The finding, graded (by its sure saving, else its share: module doc), when
    ``impact_ms`` reaches the rule's ``min_share`` of the step (nothing otherwise);
    ``saving`` what its fix saves (default: unknown)."""
    share = fw.share(impact_ms)
    if not impact_ms or share is None or share < rule.options["min_share"]:
        return
    saving_share = sure_share(fw, saving)
    spread = step_spread(fw) if saving_share is not None else None
    if saving_share is not None:
        data = {
            **data,
            "saving_share_of_step": saving_share,
            "step_spread": spread,
            "graded_by": "saving",
        }
    yield rule.finding(
        message,
        evidence,
        data=data,
        fix=fix,
        severity=graded(rule, share, saving_share, spread),
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
