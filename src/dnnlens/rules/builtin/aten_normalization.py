"""DL103 aten-normalization."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._framework import (
    QUIET_BELOW_SHARE,
    cost,
    counted,
    impact,
    step_finding,
    table_finding,
)
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext

if TYPE_CHECKING:  # the framework view is imported where a trace or table is analysed
    from dnnlens.analysis.framework import FrameworkAnalysis

#: The fix in training: only the program can fold (the norm sits between trained layers).
_FIX_TRAINING = (
    "Fold each frozen norm into the convolution before it: scale that convolution's weights "
    "by weight / sqrt(running_var + eps) per output channel and shift its bias by bias - "
    "running_mean * scale, once, then drop the norm (its statistics and affine never change)."
)
#: The fix where the program runs inference: the tools that fold for you.
_FIX_INFERENCE = (
    "Fold each norm into the convolution before it (scale the weights, shift the bias, "
    "once): torch.ao.quantization.fuse_modules(model.eval(), [['conv', 'bn'], ...]) or "
    "torch.fx's fuser, torch.jit.freeze(torch.jit.script(model.eval())), or torch.compile "
    "with torch._inductor.config.freezing = True."
)


class AtenNormalization(Rule):
    """A frozen norm runs as passes of its own instead of being folded into the convolution.

    A batch norm whose statistics and affine do not change is a per-channel scale and shift
    ``x * scale + bias``: folded into the convolution before it (its weights scaled, its
    bias shifted, once), it costs nothing. Not folded, it costs a pass over the activation
    (and in training another in the backward, for the gradient of ``x``) every step. The
    rule adds the typical time of the frozen norms: ATen's batch-norm kernels run in eval
    mode (``training=False``: at inference, or frozen by ``.eval()`` in training with no
    gradient for their affine), norm modules made of elementwise ops (``FrozenBatchNorm2d``
    of torchvision and detection models, traces made with ``with_modules=True``), and, with
    no module frames, their elementwise ops found by shape: per-channel ``rsqrt``, ``mul``,
    ``sub`` on ``[C]`` or ``[1, C, 1, 1]`` tensors, then ``x * scale + bias``, with none of
    the per-channel ops getting a gradient; with the backward nodes of those ops (by
    sequence number). It fires when that is at least ``min_share`` of a typical step, graded
    by that share like every framework rule.

    A batch norm being trained (``nn.BatchNorm2d`` in train mode: ``native_batch_norm`` and
    its backward) is the normal cost of training it, not a finding; the framework view
    lists it (``normalization``). From a key_averages table (no arguments, no sequence
    numbers: ``table_patterns.normalization``) ATen's kernels count at inference only, and
    norm modules with their forward (exact) and the backward nodes of the ops a scale and
    shift runs (said "as far as a table tells" when that decides).

    Saving (``removal``): the whole time counted. A frozen norm folded into the convolution
    before it is gone (its scale and shift are in that convolution's weights and bias,
    computed once), forward and backward; recorded: RetinaNet's ``fold_bn`` run has no
    FrozenBN op left (``sample_logs/retinanet``). A reader's figure: the finding's
    ``impact_ms_per_step``.

    Fix: fold the frozen norm into the convolution before it: in training, scale that
    convolution's weights and shift its bias once (the norm's statistics and affine never
    change) and drop the norm; at inference, torch.ao.quantization.fuse_modules, torch.fx's
    fuser, torch.jit.freeze, or torch.compile with freezing do it for you.
    """

    name = "aten-normalization"
    code = "DL103"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = ctx.framework
        if fw is None or not fw.steady_count:
            return
        if fw.rows is None:
            if fw.table is not None:
                yield from self._from_table(fw)
            return
        found = fw.norms
        assert found is not None
        native = found.frozen_native if fw.is_training else found.frozen_native | found.unknown
        native_ms = fw.typical_ms(native)
        module_ms = fw.typical_ms(found.modules)
        per_channel_ms = fw.typical_ms(found.per_channel)
        backward_ms = fw.typical_ms(found.backward)
        total = native_ms + module_ms + per_channel_ms + backward_ms
        parts = []
        if native_ms:
            calls = fw.calls_by_name(native)
            parts.append(
                f"ATen's batch norm kernels in eval mode "
                f"({counted(list(calls), list(calls.values()))} per step) {ms(native_ms)}"
            )
        if module_ms:
            parts.append(
                f"{'/'.join(found.module_classes)} modules made of elementwise ops "
                f"{ms(module_ms)} forward"
            )
        if per_channel_ms:
            count = len(found.per_channel_channels)
            parts.append(
                f"{count} per-channel scale-and-shift norm(s) in elementwise ops (rsqrt, mul, "
                f"sub on [C] tensors, then x * scale + bias) {ms(per_channel_ms)} forward"
            )
        if backward_ms:
            parts.append(f"their backward nodes {ms(backward_ms)}")
        elementwise = found.modules | found.per_channel
        evidence = fw.evidence(native | elementwise, 2) + fw.evidence(found.backward, 1)
        yield from step_finding(
            self,
            fw,
            "frozen norms not folded into the convolution before them: "
            + "; ".join(parts)
            + f": {cost(fw, total)}",
            evidence,
            total,
            impact(
                fw,
                total,
                native_ms_per_step=native_ms,
                module_ms_per_step=module_ms,
                per_channel_ms_per_step=per_channel_ms,
                module_backward_ms_per_step=backward_ms,
                module_classes=found.module_classes,
                per_channel_norms_per_step=len(found.per_channel_channels),
                per_channel_channels=found.per_channel_channels,
                native_calls_per_step=fw.calls_per_step(native),
                trained_ms_per_step=fw.typical_ms(found.trained),
            ),
            fix=_FIX_TRAINING if fw.is_training else _FIX_INFERENCE,
            saving=Saving.removal(
                total, "folding each norm into the convolution before it removes its passes"
            ),
        )

    def _from_table(self, fw: FrameworkAnalysis) -> Iterator[Finding]:
        # imported here, not at the top: a log without a trace or table never needs it
        from dnnlens.analysis.framework import table_patterns
        from dnnlens.analysis.framework.table_patterns import TableEstimate

        found = table_patterns.normalization(fw)
        # in training ATen's kernels run trained and frozen norms alike: a table has no
        # arguments to tell (module doc); norm modules made of elementwise ops are frozen
        native = None if fw.is_training else found.native
        modules = found.modules
        parts = []
        if native is not None and native.ms_per_step:
            calls = native.calls_per_step
            parts.append(
                f"ATen's batch norm kernels at inference "
                f"({counted(list(calls), list(calls.values()))} per step) {ms(native.ms_per_step)}"
            )
        if modules.ms_per_step:
            parts.append(
                f"{'/'.join(found.module_classes)} modules made of elementwise ops "
                f"{ms(modules.low_ms)} forward, {ms(modules.ms_per_step - modules.low_ms)} "
                "backward nodes"
            )
        both = [e for e in (native, modules) if e is not None]
        estimate = TableEstimate(
            sum(e.ms_per_step for e in both),
            sum(e.low_ms for e in both),
            sum(e.high_ms for e in both),
            {n: c for e in both for n, c in e.calls_per_step.items()},
            "; ".join(e.basis for e in both),
        )
        yield from table_finding(
            self,
            fw,
            "frozen norms not folded into the convolution before them: " + "; ".join(parts),
            estimate,
            fix=_FIX_TRAINING if fw.is_training else _FIX_INFERENCE,
            saving=lambda spent: Saving.removal(
                spent, "folding each norm into the convolution before it removes its passes"
            ),
            native_ms_per_step=native.ms_per_step if native is not None else 0.0,
            module_ms_per_step=modules.low_ms,
            module_backward_ms_per_step=modules.ms_per_step - modules.low_ms,
            module_classes=found.module_classes,
        )
