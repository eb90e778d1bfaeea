"""DL104 autocast-casts."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._framework import (
    QUIET_BELOW_SHARE,
    counted,
    masked_finding,
    table_finding,
    table_view,
    trace_view,
)
from dnnlens.rules.context import RuleContext


class AutocastCasts(Rule):
    """Tensors are cast between float32 and bfloat16/float16 on every step.

    ``torch.autocast`` keeps weights in float32 and casts them (and activations) to the low
    precision at every op that runs in it, every step; autograd casts the gradients back
    (``ToCopyBackward0``). Each cast is an ``aten::_to_copy`` / ``aten::copy_`` that reads
    and writes the whole tensor. The rule adds the typical time of the casts the framework
    issues itself (from the top of an op, from ``.to(dtype)`` in the program, or from a
    ``ToCopyBackward`` node; not the up-casts inside ATen kernels) and fires when they take
    at least ``min_share`` of a typical step, graded by that share like every framework rule
    (info under 5%: ``_framework.WARNING_SHARE``), except that a trace's finding is graded
    by its saving, which is sure (the casts' whole time): from 2% of the step it is a
    warning when larger than the recording's step-to-step spread (``_framework``;
    ``tests/data/alarms/cnn_bf16_autocast``: 3.3% of the step, spread 2.7%, a warning; its
    float32 twin ``cnn_fp32`` casts nothing). From a key_averages table (no dtypes)
    the casts are ``table_patterns.casts``: in training twice the ``ToCopyBackward`` nodes
    (each gradient cast back), within every ``aten::_to_copy`` at most.

    Saving (``removal``): the casts' whole time. A model and input kept in the low precision
    cast nothing each step (recorded: ``sample_logs/framework/autocast_fixed`` has no cast
    a step); the one cast of the weights is made once. A reader's figure: the finding's
    ``impact_ms_per_step``.

    Fix: cast once instead of every step: keep the model in bfloat16 (``model.to(
    torch.bfloat16)``, with float32 master weights in the optimizer if needed) and feed
    bfloat16 inputs; or let ``torch.compile`` fuse the casts into the kernels around them.
    """

    name = "autocast-casts"
    code = "DL104"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        table = table_view(ctx)
        if table is not None:
            # imported here, not at the top: a log without a trace or table never needs it
            from dnnlens.analysis.framework import table_patterns

            found = table_patterns.casts(table)
            calls = found.calls_per_step
            yield from table_finding(
                self,
                table,
                f"casts to or from low precision ({counted(list(calls), list(calls.values()))} "
                "per step)",
                found,
                saving=lambda spent: Saving.removal(
                    spent, "a model and input kept in low precision cast nothing each step"
                ),
            )
            return
        fw = trace_view(ctx)
        if fw is None:
            return
        from dnnlens.analysis.framework.patterns import casts

        yield from masked_finding(
            self,
            fw,
            casts(fw),
            "casts to or from low precision",
            "casts_per_step",
            saving=lambda spent: Saving.removal(
                spent, "a model and input kept in low precision cast nothing each step"
            ),
        )
