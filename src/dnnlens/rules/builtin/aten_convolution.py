"""DL107 aten-convolution."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import QUIET_BELOW_SHARE, cost, impact, step_finding
from dnnlens.rules.context import RuleContext

#: The fix for each reason the arguments give (the first word of ``convs.reason``).
_FIXES = {
    "bfloat16": (
        "Run bfloat16 on a CPU whose bfloat16 support oneDNN reports (AVX-512 BW/VL/DQ or "
        "AVX-NE-CONVERT) without ONEDNN_MAX_CPU_ISA below it; on this CPU, train and run in "
        "float32 (no bfloat16 autocast), which PyTorch sends to oneDNN."
    ),
    "float16": (
        "Run float16 on a CPU with AVX-512 FP16 or AVX-NE-CONVERT, or use float32 (or "
        "bfloat16 where the CPU supports it) on this one."
    ),
    "float32 1x1": (
        "A batch of 16 or more, or more than one intra-op thread (torch.set_num_threads), "
        "lets PyTorch pick oneDNN for these 1x1 convolutions."
    ),
}


class AtenConvolution(Rule):
    """Convolutions run in PyTorch's own reference kernels, not oneDNN's.

    PyTorch chooses a convolution's CPU backend per call: oneDNN for float32 unless a size
    rule prefers its own kernel (1x1 with a batch under 16 on one thread, tiny problems),
    for bfloat16 and float16 only where oneDNN supports the type on the CPU; everything
    else runs ATen's reference kernels (``aten::_slow_conv2d_forward`` under
    ``aten::thnn_conv2d``, ``slow_conv3d``, ``slow_conv_dilated2d`` ... and their backward),
    often ten times slower. The framework view lists each such convolution
    (``convolutions_outside_onednn``: shapes, dtype, memory format, stride, dilation, groups,
    and the reason those arguments give); the rule adds their typical time and fires when
    it is at least ``min_share`` of a typical step, graded by that share like every
    framework rule. Its message and fix follow the costliest one's reason.

    Fix: give PyTorch a convolution it sends to oneDNN: float32 (or bfloat16/float16 on a
    CPU that supports them), ``torch.backends.mkldnn.enabled = True``, and for 1x1
    convolutions a batch of 16 or more or several threads.
    """

    name = "aten-convolution"
    code = "DL107"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = ctx.framework
        if fw is None or not fw.steady_count:
            return
        table = fw.slow_convolutions
        if table.empty:
            return
        total = float(table["ms_per_step"].sum())
        top = table.iloc[0]
        calls = table.groupby("op", sort=False)["calls_per_step"].sum()
        listed = ", ".join(f"{n.removeprefix('aten::')} x{c:g}" for n, c in calls.items())
        shape = ""
        if isinstance(top["input_dims"], list) and top["input_dims"]:
            shape = (
                f" (input {top['input_dims']}, weight {top['weight_dims']}, {top['dtype']}, "
                f"{top['layout'] or 'layout not told'})"
            )
        reason = str(top["reason"])
        rows = fw.slow_convolution_rows
        evidence = (
            fw.evidence(rows, 3) if rows is not None else fw.table_evidence(list(calls.index))
        )
        fix = next((text for key, text in _FIXES.items() if reason.startswith(key)), "")
        yield from step_finding(
            self,
            fw,
            f"convolutions in PyTorch's own kernels ({listed} kernel calls per step): "
            f"{cost(fw, total)}; "
            f"the costliest{shape}: {reason}",
            evidence,
            total,
            impact(
                fw,
                total,
                calls_per_step=dict(calls.astype(float)),
                reasons=sorted(set(table["reason"])),
                convolutions=len(table),
            ),
            fix=fix,
        )
