"""DL105 aten-layout-copies."""

from __future__ import annotations

import json
import re
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
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext

if TYPE_CHECKING:  # the framework view is imported where a trace or table is analysed
    from dnnlens.analysis.framework import FrameworkAnalysis
    from dnnlens.analysis.framework.rows import OpRows

#: Callers whose conversions a well-configured channels_last run makes too (weights and
#: their gradients, a multi-tensor optimizer's): no change of the program's memory format
#: removes them. ``aten::convolution_backward``'s are its own only of a weight-shaped
#: tensor (:data:`GRADIENT_BACK` otherwise).
_ATEN_OWN = ("aten::convolution_backward", "aten::_fused_", "aten::_foreach_")
#: Loss ops (and their softmax) by name: their conversions are the program's, with a fix
#: of their own (the class doc).
_LOSS = re.compile(r"loss|softmax", re.IGNORECASE)
#: What ``ms_per_step_by_caller`` calls ``aten::convolution_backward``'s conversions of
#: a tensor that is not the weight's shape (an activation gradient come back in the other
#: format, from a loss or an op of the program): the program's.
GRADIENT_BACK = "aten::convolution_backward of an activation gradient"
#: Ops that only wrap a copy: never the caller (as ``patterns.callers`` has it).
_WRAPPERS = frozenset(
    {"aten::to", "aten::_to_copy", "aten::copy_", "aten::contiguous", "aten::clone"}
)
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
    weights and gradients, a ``_foreach_`` op's) or by ``aten::convolution_backward`` of a
    tensor of its weight's shape (the weight gradient back to the parameter's format) are
    ATen's: a clean channels_last training step makes them too. Recorded:
    ``tests/data/alarms/resnet_cl_fused`` (a ResNet-style net, channels_last model and
    input, ``SGD(fused=True)``; torch 2.13) spends
    about 10% of its step on them, all from ``aten::_fused_sgd_`` and
    ``aten::convolution_backward``. They are counted in the impact and named in the
    message, but the saving leaves them out and the finding is graded by that saving
    (``_framework``, "Graded by the saving"): when the program itself converts nothing,
    the finding is ``info``.

    **A loss's conversions are the program's.** A per-pixel loss on channels_last logits
    (``F.cross_entropy(logits, target)`` with ``[N, C, H, W]`` logits) converts them:
    ``aten::_log_softmax`` copies the logits to NCHW, and ``aten::convolution_backward``
    converts the gradient that comes back NCHW into channels_last (an activation
    gradient, :data:`GRADIENT_BACK`). The program removes both by giving the loss the
    logits as ``[N*H*W, C]``, a view of channels_last memory (recorded with torch 2.13: a
    3x3 conv head of 32 classes at 32x32, batch 4: 111 us and 278 us a step, and neither
    with the flattened loss). They count in the saving.

    Saving (``removal``, from a trace): the time of the conversions the program causes (its
    own calls, ``aten::_convolution`` converting a mismatched input, a loss's, and
    ``aten::convolution_backward`` converting an activation or its gradient, listed as
    :data:`GRADIENT_BACK`), which one memory format end to end removes; not those ATen
    makes of channels_last weights and their gradients (``aten::convolution_backward`` of
    a weight-shaped tensor, a fused optimizer's ``aten::_fused_...``, anything inside the
    optimizer step), which a well-configured run pays too (RetinaNet's ``plain`` run: 13.1
    ms a step). ``sample_logs/framework/layout_bad`` (NCHW input into a channels_last
    model): 4.66 ms of its 4.69 ms a step, against a step 4.06 ms shorter in
    ``layout_fixed`` (10.86 ms to 6.80 ms, median steps; a second recording). A reader's
    figure: ``impact_ms_per_step`` minus those callers' ``ms_per_step_by_caller``. From a
    table (no callers): ``unknown``.

    Fix: use one memory format end to end: convert the input once in the data pipeline
    (``x.to(memory_format=torch.channels_last)``), the model once
    (``model.to(memory_format=torch.channels_last)``), and avoid ``.contiguous()`` on
    channels_last activations; give a per-pixel loss channels_last logits as ``[N*H*W, C]``
    (``F.cross_entropy(logits.permute(0, 2, 3, 1).reshape(-1, C), target.reshape(-1))``,
    a view, no copy) rather than ``[N, C, H, W]``.
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
        if "aten::convolution_backward" in made:
            weights = _of_weights(fw, made["aten::convolution_backward"])
            made[GRADIENT_BACK] = made["aten::convolution_backward"] & ~weights
            made["aten::convolution_backward"] &= weights
        if "the program" in made and (made["the program"] & in_step).any():
            made[OPTIMIZER_STEP] = made["the program"] & in_step
            made["the program"] = made["the program"] & ~in_step
        made_by = {n: fw.typical_ms(m) for n, m in made.items() if m.any()}
        made_by = dict(sorted(made_by.items(), key=lambda item: -item[1]))
        kept = sum(t for n, t in made_by.items() if _own(n))
        by_whom = ", ".join(f"{n.removeprefix('aten::')} {ms(t)}" for n, t in made_by.items())
        if total - kept <= 1e-9 * max(total, 1.0):
            by_whom += " (all ATen's own: the program converts nothing)"
        if any(_LOSS.search(n) for n in made_by):
            by_whom += (
                "; a loss converts its 4-D logits: give it [N*H*W, C], a view of "
                "channels_last memory"
            )
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
    return caller == OPTIMIZER_STEP or (caller != GRADIENT_BACK and caller.startswith(_ATEN_OWN))


def _of_weights(fw: FrameworkAnalysis, mask: np.ndarray) -> np.ndarray:
    """The rows of ``mask`` (conversions by ``aten::convolution_backward``) whose tensor has
    the shape of that call's weight (its third input)."""
    rows = fw.rows
    assert rows is not None
    wrapper = rows.mask_names(_WRAPPERS)
    out = np.zeros(len(rows), dtype=bool)
    for r in np.flatnonzero(mask):
        caller = int(rows.parent[r])
        while caller >= 0 and wrapper[caller]:
            caller = int(rows.parent[caller])
        mine, theirs = _dims(rows, r), _dims(rows, caller) if caller >= 0 else []
        out[r] = bool(mine) and len(theirs) > 2 and mine[0] == theirs[2]
    return out


def _dims(rows: OpRows, r: int) -> list:
    """The input dims of row ``r`` (``[]`` when not recorded)."""
    try:
        dims = json.loads(str(rows.dims_names[rows.dims[r]]))
    except (ValueError, IndexError):
        return []
    return dims if isinstance(dims, list) else []
