"""DL105 aten-layout-copies."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.framework.patterns import layout_changes
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import masked_finding, trace_view
from dnnlens.rules.context import RuleContext


class AtenLayoutCopies(Rule):
    """Tensors are converted between NCHW and channels_last on every step.

    A model in ``channels_last`` fed NCHW input (or the reverse, or a layer that calls
    ``.contiguous()``) makes PyTorch copy the tensor into the other memory format before
    the op, every step, and again in the backward: ``aten::contiguous`` / ``aten::clone``
    with a memory format, ``aten::copy_`` between differently strided tensors. The rule
    adds the typical time of the calls that change a 4-D/5-D tensor's memory format (from
    their input strides and memory-format argument) and fires when they take at least
    ``min_share`` of a typical step.

    Fix: use one memory format end to end: convert the input once in the data pipeline
    (``x.to(memory_format=torch.channels_last)``), the model once
    (``model.to(memory_format=torch.channels_last)``), and avoid ``.contiguous()`` on
    channels_last activations.
    """

    name = "aten-layout-copies"
    code = "DL105"
    severity = "warning"
    defaults = {"min_share": 0.01}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = trace_view(ctx)
        if fw is None:
            return
        yield from masked_finding(
            self, fw, layout_changes(fw), "memory-format conversions", "conversions_per_step"
        )
