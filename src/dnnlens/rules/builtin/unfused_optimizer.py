"""DL101 unfused-optimizer."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
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

    Saving. Of a Python loop (``foreach=False``), ``removal`` of what surely goes: the
    Python time *between* the per-parameter ops inside the step span (from the first op's
    start to the last op's end, less the ops' own time; the median over the steady steps),
    which a ``foreach`` or fused step does not run, having no per-parameter op to call.
    It is a lower bound: the fused kernel also saves most of the ops' own passes, but how
    much is not in one recording (a fused update still reads and writes every parameter,
    gradient and state once). Measured pairs: ``tests/data/alarms/lstm_lm_adam_loop`` and
    ``_fused`` (an LSTM language model, torch 2.13, one thread): the Adam step span went
    from about 1.9 ms to 0.85 ms, of which the Python between the ops was about 0.3 ms
    against 0.035 ms fused (and some 0.27 ms of set-up before the first op in both, which
    the bound leaves out); RetinaNet's ``fused_sgd``: 19.3 ms became 9.9 ms a step. Of
    ``_foreach_`` ops (no Python loop to remove), ``unknown``: the finding ranks by its
    time after the findings whose saving is known. Graded by its saving when that is sure
    (``_framework``): a small Python loop is ``info``.

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
        loop = foreach < per_step / 2
        between = _python_between(fw, found.steps) if loop else 0.0
        saving = (
            Saving.removal(
                min(between, step_ms),
                "a foreach or fused step runs no Python between per-parameter ops (a lower "
                "bound: the ops' own passes are not counted)",
            )
            if loop
            else Saving.unknown(
                "the _foreach_ ops' per-tensor kernels a fused step saves are not in one recording"
            )
        )
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
                python_between_ops_ms_per_step=between if loop else None,
            ),
            saving=saving,
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


def _python_between(fw: FrameworkAnalysis, steps: np.ndarray) -> float:
    """The Python time between the ops of the optimizer step spans of ``steps``, per steady
    step (the median over the steady steps): for each span, from its first dispatched op's
    start to its last one's end, less those (outermost) ops' durations."""
    from dnnlens.analysis.framework.rows import propagate

    rows = fw.rows
    assert rows is not None
    spans = fw.steady_rows(steps)
    top = propagate(rows.parent, rows.depth, spans, outermost=True)
    cpu_op = np.array([c == "cpu_op" for c in rows.cats], dtype=bool)
    dispatched = cpu_op[rows.cat] if len(cpu_op) else np.zeros(len(rows), dtype=bool)
    inner = rows.outermost((top >= 0) & (top != np.arange(len(rows))) & dispatched)
    at = np.flatnonzero(inner)
    if not len(at):
        return 0.0
    per_step: dict[int, float] = {}
    for span in np.unique(top[at]):
        mine = at[top[at] == span]
        reach = float(rows.end[mine].max() - rows.ts[mine].min())
        gap = max(reach - float(rows.dur[mine].sum()), 0.0)
        k = int(rows.step[span])
        per_step[k] = per_step.get(k, 0.0) + gap
    table = fw.steps
    steady = [per_step.get(int(k), 0.0) for k in table.index[~table["warmup"] & ~table["partial"]]]
    return float(np.median(steady)) / 1e3 if steady else 0.0
