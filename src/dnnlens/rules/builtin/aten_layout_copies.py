"""DL105 aten-layout-copies."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext

#: Callers whose conversions a well-configured channels_last run makes too (weights and
#: their gradients, a multi-tensor optimizer's, a loss's): no change of the program's
#: memory format removes them.
_ATEN_OWN = ("aten::convolution_backward", "aten::_fused_", "aten::_foreach_")
#: Loss ops (and their softmax) by name: the conversions inside them are ATen's own.
_LOSS = re.compile(r"loss|softmax", re.IGNORECASE)
#: What ``ms_per_step_by_caller`` calls the conversions inside an ``Optimizer.step#`` span
#: made from Python (an optimizer's loop), which no caller op names.
OPTIMIZER_STEP = "the optimizer step"


class AtenLayoutCopies(Rule):
    """Tensors are converted between NCHW and channels_last on every step.

    A model in ``channels_last`` fed NCHW input (or the reverse, or a layer that calls
    ``.contiguous()``) makes PyTorch copy the tensor into the other memory format before
    the op, every step, and again in the backward: ``aten::contiguous`` / ``aten::clone``
    with a memory format, ``aten::copy_`` between differently strided tensors. The rule
    adds the typical time of the calls that change a 4-D/5-D tensor's memory format (from
    their input strides and memory-format argument) and fires when they take at least
    ``min_share`` of a typical step, graded by that share like every framework rule (info
    under 5%: ``_framework.WARNING_SHARE``). The message says which op made them: the
    program, or ATen itself (``aten::_convolution`` converting a mismatched input,
    ``aten::convolution_backward`` and ``aten::_fused_sgd_`` converting channels_last
    weights and their gradients, which a well-configured channels_last run pays too).
    From a key_averages table (no strides) the conversions are ``table_patterns.
    layout_copies``: the ``aten::contiguous`` calls that copied.

    **Torch's own conversions are no warning.** Conversions made inside the optimizer step
    (an ``Optimizer.step#`` span: a fused kernel's ``.contiguous()`` of channels_last
    weights and gradients, a ``_foreach_`` op's), inside a loss or its softmax (a caller op
    whose name holds ``loss`` or ``softmax``) or by ``aten::convolution_backward`` (the
    weight gradient back to the parameter's format) are ATen's: a clean channels_last
    training step makes them too. Recorded: ``tests/data/alarms/resnet_cl_fused`` (a
    ResNet-style net, channels_last model and input, ``SGD(fused=True)``; torch 2.13) spends
    about 10% of its step on them, all from ``aten::_fused_sgd_`` and
    ``aten::convolution_backward``. They are counted in the impact and named in the
    message, but the saving leaves them out and the finding is graded by that saving
    (``_framework``, "Graded by the saving"): when the program itself converts nothing,
    the finding is ``info``.

    Saving (``removal``, from a trace): the time of the conversions the program causes (its
    own calls and ``aten::_convolution`` converting a mismatched input), which one memory
    format end to end removes; not those ATen makes of channels_last weights and their
    gradients (``aten::convolution_backward``, a fused optimizer's ``aten::_fused_...``),
    which a well-configured run pays too (RetinaNet's ``plain`` run: 13.1 ms a step).
    A reader's figure: ``impact_ms_per_step`` minus those callers'
    ``ms_per_step_by_caller``. From a table (no callers): ``unknown``.

    Fix: use one memory format end to end: convert the input once in the data pipeline
    (``x.to(memory_format=torch.channels_last)``), the model once
    (``model.to(memory_format=torch.channels_last)``), and avoid ``.contiguous()`` on
    channels_last activations.
    """

    name = "aten-layout-copies"
    code = "DL105"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        table = table_view(ctx)
        if table is not None:
            # imported here, not at the top: a log without a trace or table never needs it
            from dnnlens.analysis.framework import table_patterns

            found = table_patterns.layout_copies(table)
            count = sum(found.calls_per_step.values())
            calls = counted(list(found.calls_per_step), list(found.calls_per_step.values()))
            yield from table_finding(
                self,
                table,
                f"{count:g} memory-format conversions per step ({calls})",
                found,
                conversions_per_step=count,
            )
            return
        fw = trace_view(ctx)
        if fw is None:
            return
        from dnnlens.analysis.framework.patterns import callers, layout_changes, optimizer_ops
        from dnnlens.analysis.framework.rows import propagate

        mask = layout_changes(fw)
        total = fw.typical_ms(mask)
        calls = fw.calls_by_name(mask)
        count = sum(calls.values())
        in_step = optimizer_ops(fw).steps
        in_step = propagate(fw.rows.parent, fw.rows.depth, in_step, outermost=True) >= 0
        made = callers(fw, mask)
        if "the program" in made and (made["the program"] & in_step).any():
            made[OPTIMIZER_STEP] = made["the program"] & in_step
            made["the program"] = made["the program"] & ~in_step
        made_by = {n: fw.typical_ms(m) for n, m in made.items() if m.any()}
        made_by = dict(sorted(made_by.items(), key=lambda item: -item[1]))
        kept = sum(t for n, t in made_by.items() if _own(n))
        by_whom = ", ".join(f"{n.removeprefix('aten::')} {ms(t)}" for n, t in made_by.items())
        if total - kept <= 1e-9 * max(total, 1.0):
            by_whom += " (all ATen's own: the program converts nothing)"
        yield from step_finding(
            self,
            fw,
            f"{count:g} memory-format conversions per step "
            f"({counted(list(calls), list(calls.values()))}): {cost(fw, total)}; made by "
            f"{by_whom}",
            fw.evidence(mask, 3),
            total,
            impact(
                fw,
                total,
                conversions_per_step=count,
                ops_per_step=calls,
                ms_per_step_by_caller=made_by,
            ),
            saving=Saving.removal(
                max(total - kept, 0.0),
                "one memory format end to end removes the program's conversions"
                + (f"; ATen's own ({ms(kept)}) stay" if kept else ""),
            ),
        )


def _own(caller: str) -> bool:
    """Whether the conversions of ``caller`` are ATen's own (module constants)."""
    return caller == OPTIMIZER_STEP or caller.startswith(_ATEN_OWN) or bool(_LOSS.search(caller))
