"""DL103 aten-normalization."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.framework.patterns import normalization
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import cost, counted, impact
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext

#: Native batch-norm kernel names, for key_averages tables.
_NATIVE = ("aten::native_batch_norm", "aten::native_batch_norm_backward")


class AtenNormalization(Rule):
    """Batch norm runs in ATen's own kernels or as elementwise ops while training.

    In training, PyTorch runs ``nn.BatchNorm2d`` on plain CPU tensors with its native
    kernels (``aten::native_batch_norm`` and ``_backward``), not oneDNN's; a frozen batch
    norm written as a module (``FrozenBatchNorm2d`` of torchvision and detection models)
    is a chain of ``mul``/``add``/``rsqrt`` ops, each a pass over the activation, with as
    many backward nodes. The rule adds the typical time of the native kernels and of norm
    modules made of elementwise ops (traces recorded with ``with_modules=True``), with the
    backward nodes of their ops (by sequence number), and fires in training when that is
    at least ``min_share`` of a typical step. From a key_averages table alone, the native
    kernels' self time counts.

    Fix: fold a frozen norm into the convolution before it (scale the weights, shift the
    bias, once); for a trained norm, use a fused module (``torch.compile`` fuses
    conv+bn+relu chains) or the oneDNN path (IPEX, ``torch.jit.freeze`` at inference).
    """

    name = "aten-normalization"
    code = "DL103"
    severity = "warning"
    defaults = {"min_share": 0.03}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = ctx.framework
        if fw is None or not fw.steady_count or not fw.is_training:
            return
        if fw.rows is None:
            yield from self._from_table(fw)
            return
        found = normalization(fw)
        native_ms = fw.typical_ms(found.native)
        module_ms = fw.typical_ms(found.modules)
        backward_ms = fw.typical_ms(found.backward)
        total = native_ms + module_ms + backward_ms
        if fw.share(total) < self.options["min_share"]:
            return
        parts = []
        if native_ms:
            calls = fw.calls_by_name(found.native)
            parts.append(
                f"ATen's batch norm kernels ({counted(list(calls), list(calls.values()))} per "
                f"step) {ms(native_ms)}"
            )
        if module_ms or backward_ms:
            parts.append(
                f"{'/'.join(found.module_classes)} modules made of elementwise ops "
                f"{ms(module_ms)} forward and {ms(backward_ms)} backward"
            )
        evidence = fw.evidence(found.native | found.modules, 2) + fw.evidence(found.backward, 1)
        yield self.finding(
            "normalization outside oneDNN in training: "
            + "; ".join(parts)
            + f": {cost(fw, total)}",
            evidence,
            impact_ms=total,
            basis="step",
            data=impact(
                fw,
                total,
                native_ms_per_step=native_ms,
                module_ms_per_step=module_ms,
                module_backward_ms_per_step=backward_ms,
                module_classes=found.module_classes,
                native_calls_per_step=fw.calls_per_step(found.native),
            ),
        )

    def _from_table(self, fw) -> Iterator[Finding]:  # noqa: ANN001
        ops = fw.ops[fw.ops["name"].isin(_NATIVE)]
        total = float(ops["self_ms_per_step"].sum())
        if ops.empty or fw.share(total) < self.options["min_share"]:
            return
        yield self.finding(
            f"ATen's batch norm kernels in training ({', '.join(ops['name'])}): {cost(fw, total)}",
            fw.table_evidence(list(ops["name"])),
            data=impact(fw, total, native_ms_per_step=total),
            impact_ms=total,
            basis="step",
        )
