"""DL101 unfused-optimizer."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import (
    QUIET_BELOW_SHARE,
    cost,
    counted,
    impact,
    step_finding,
    table_finding,
    table_view,
    trace_view,
)
from dnnlens.rules.context import RuleContext

if TYPE_CHECKING:  # the framework view is imported where a trace or table is analysed
    from dnnlens.analysis.framework import FrameworkAnalysis

#: Per-parameter ops per step below which there is no loop to blame: a loop over at least
#: four parameter tensors (two layers' weight and bias) with two ops each. A fused
#: optimizer runs none outside its kernel.
MIN_OPS = 8


class UnfusedOptimizer(Rule):
    """The optimizer step runs many small per-parameter ops, one kernel each.

    ``torch.optim`` on the CPU defaults to a Python loop over the parameters
    (``foreach=False``): every parameter costs a handful of tiny ``add_``, ``mul_``,
    ``addcmul_``, ``lerp_``, ``sqrt`` ... calls, each paying dispatch and a pass over memory.
    ``foreach=True`` removes the Python loop, but on the CPU its ``_foreach_`` ops still run
    one kernel per tensor inside (the trace shows them). The rule counts the per-parameter
    math ops inside the ``Optimizer.step#`` spans of the steady steps (also inside
    ``_foreach_`` ops, not inside a fused kernel's own call: ``_fused_sgd_`` copies
    channels_last weights with ``.contiguous()``, which is no dispatch from a loop) and fires
    when there are at least ``min_ops`` (``MIN_OPS``, 8) per step and the optimizer step
    takes at least ``min_share`` of a typical step; graded by that share like every
    framework rule. Its impact is the typical time of the optimizer step. From a
    key_averages table (``table_patterns.optimizer``) the step's time is exact, the
    per-parameter ops at least one per parameter tensor (``AccumulateGrad`` calls) unless a
    fused kernel runs: the rule fires when that least count reaches ``min_ops``.

    Saving (``unknown``): a fused update still reads and writes every parameter, gradient
    and state once (memory-bound over all parameters); how much of the loop it saves is not
    in one recording (RetinaNet's ``fused_sgd``: 19.3 ms became 9.9 ms a step, a second
    recording), so the finding ranks by its time after the findings whose saving is known.

    Fix: ``fused=True`` (SGD, Adam, AdamW, Adagrad on the CPU since torch 2.4) runs the whole
    update in one kernel (``_fused_sgd_``, ``_fused_adamw_``); ``foreach=True`` at least
    removes the Python loop; or compile the optimizer step (``torch.compile``).
    """

    name = "unfused-optimizer"
    code = "DL101"
    severity = "warning"
    defaults = {"min_ops": MIN_OPS, "min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        table = table_view(ctx)
        if table is not None:
            yield from self._from_table(table)
            return
        fw = trace_view(ctx)
        if fw is None:
            return
        # imported here, not at the top: a log without a trace or table never needs it
        from dnnlens.analysis.framework.patterns import optimizer_ops

        found = optimizer_ops(fw)
        calls = fw.calls_by_name(found.per_parameter)
        per_step = sum(calls.values())
        if per_step < self.options["min_ops"]:
            return
        step_ms = fw.typical_ms(found.steps)
        foreach = fw.calls_per_step(found.inside_foreach)
        where = (
            "inside _foreach_ ops, which on the CPU still run one kernel per tensor"
            if foreach >= per_step / 2
            else "dispatched one by one from the Python loop (foreach=False)"
        )
        names = ", ".join(found.names) or "Optimizer.step"
        listed = counted(list(calls), list(calls.values()))
        message = (
            f"{names}: {per_step:g} per-parameter ops per step ({listed}), {where}: "
            f"{cost(fw, step_ms)}"
        )
        evidence = fw.evidence(found.steps, 1) + fw.evidence(found.per_parameter, 2)
        yield from step_finding(
            self,
            fw,
            message,
            evidence,
            step_ms,
            impact(
                fw,
                step_ms,
                optimizer=found.names,
                per_parameter_ops_per_step=per_step,
                ops_per_step=calls,
                inside_foreach_per_step=foreach,
                fused_kernels_per_step=float(fw.calls_per_step(found.fused)),
                steps_found=int(np.count_nonzero(fw.steady_rows(found.steps))),
            ),
        )

    def _from_table(self, fw: FrameworkAnalysis) -> Iterator[Finding]:
        from dnnlens.analysis.framework import table_patterns

        found = table_patterns.optimizer(fw)
        least = found.per_parameter_low
        if not found.kind or found.kind == "fused" or least < self.options["min_ops"]:
            return
        where = (
            "_foreach_ ops, which on the CPU still run one kernel per tensor"
            if found.kind == "foreach"
            else "a Python loop over the parameters (foreach=False)"
        )
        by_name = found.per_parameter_by_name
        high = found.per_parameter_high
        most = f"{high:g}" if math.isfinite(high) else "? (rows left out)"
        yield from table_finding(
            self,
            fw,
            f"{', '.join(found.names)}: at least {least:g} per-parameter ops per step (one per "
            f"parameter tensor), at most {most} ({counted(list(by_name), list(by_name.values()))}"
            f", a table cannot tell which ran inside the step), from {where}",
            found.step,
            optimizer=found.names,
            per_parameter_ops_per_step=least,
            per_parameter_ops_per_step_at_most=high if math.isfinite(high) else None,
            ops_per_step=by_name,
            fused_kernels_per_step=found.fused_kernels_per_step,
            foreach_kernels_per_step=found.foreach_kernels_per_step,
        )
