"""DL007 dtype-conversion."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.columns import row_dicts
from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._util import Fix, FixedByProducer, ms, producer_fix, ratio
from dnnlens.rules.context import RuleContext

COMPUTE = ("convolution", "deconvolution", "inner_product", "matmul", "rnn", "gemm_api")
LOW = ("bf16", "f16", "s8", "u8", "f8_e5m2", "f8_e4m3")

DTYPE_FIX = Fix(
    pytorch=(
        "put the whole forward pass under one `torch.autocast('cpu', dtype=torch.bfloat16)` "
        "region rather than parts of it (ops autocast keeps in f32, or left outside the region, "
        "convert at every border), quantize whole blocks rather than single layers, or let "
        "`torch.compile` fuse the conversions into the ops; bf16 kernels need AVX-512 BF16 or "
        "AMX"
    ),
    tensorflow=(
        "set one Keras policy for the whole model before building it "
        "(`keras.config.set_dtype_policy('mixed_bfloat16')`) rather than per "
        "layer, so that neighbouring layers compute in the same type; bf16 kernels need "
        "AVX-512 BF16 or AMX"
    ),
    openvino=(
        "the CPU plugin chooses the compute precision: on a CPU with AVX-512 BF16 or AMX it "
        "computes in bf16 and converts the f32 input on every inference (recorded); "
        "`INFERENCE_PRECISION_HINT` f32 (`openvino.properties.hint.inference_precision`) keeps "
        "the model in f32 and the conversion goes away (recorded), at f32's speed: compare "
        "both"
    ),
    onednn=(
        "create neighbouring primitives with the same data type, or let the producing "
        "primitive write the next one's data type itself (its `dst` memory descriptor in "
        "bf16 or s8, with scales as attributes) instead of a separate reorder; bf16 kernels "
        "need AVX-512 BF16 or AMX"
    ),
)


class DtypeConversion(FixedByProducer):
    """Data is converted between data types, or f32 compute runs beside low precision.

    Two signs of an incomplete mixed-precision setup: reorders that convert data type
    (f32 to bf16 and back, f32 to s8) on every pass, which copy the tensor and throw away
    the gain of the lower precision; and convolutions or matmuls still running in f32 while
    others in the same log run in bf16 or int8 (an op the autocast or quantization recipe
    missed). One-time conversions in warm-up (weights quantized once) are listed in
    ``data`` only. Times are medians per steady iteration.

    Saving (``removal``): the conversions' whole part: tensors kept in one precision are
    not converted every pass (recorded: ``openvino_cnn_f32_infer`` with
    ``INFERENCE_PRECISION_HINT`` f32 converts nothing). None for f32 compute alone (a
    chance, not a measured cost). A reader's figure: ``conversion_ms_per_iteration``.

    Fix: keep tensors in one precision across neighbouring ops, in the terms of the program
    that made the log: one autocast region in PyTorch, one Keras mixed-precision policy in
    TensorFlow, one inference precision in OpenVINO, primitives created with the neighbours'
    data type with oneDNN's own API.
    """

    name = "dtype-conversion"
    code = "DL007"
    part_of = "reorder-overhead"
    severity = "warning"
    defaults = {"min_share": 0.01}
    fixes = (("", DTYPE_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        if st.empty:
            return
        conv_rows, f32_rows, low_kinds = [], [], set()
        for rid, row in row_dicts(ctx.stats):
            mds = ctx.mds(int(rid))
            types = {md.dtype for md in mds if md.dtype and md.dtype != "undef"}
            if row["kind"] == "reorder" and len(types) > 1:
                conv_rows.append(int(rid))
            elif row["kind"] in COMPUTE:
                src = (
                    mds.get("src")
                    or mds.get("src_layer")
                    or mds.get("src_a")
                    or (mds[0] if len(mds) else None)
                )
                dt = getattr(src, "dtype", "")
                if dt in LOW:
                    low_kinds.add((row["kind"], dt))
                elif dt == "f32":
                    f32_rows.append(int(rid))
        steady_conv = [r for r in conv_rows if r in st.index]
        iters = ctx.steady_iterations
        iteration = ctx.typical_iteration_ms
        conv_ms = float(st.loc[steady_conv, "typical_ms"].sum()) / iters if steady_conv else 0.0
        f32_steady = [r for r in f32_rows if r in st.index] if low_kinds else []
        f32_ms = float(st.loc[f32_steady, "typical_ms"].sum()) / iters if f32_steady else 0.0
        share_conv, share_f32 = ratio(conv_ms, iteration), ratio(f32_ms, iteration)
        minimum = self.options["min_share"]
        parts = []
        if steady_conv and share_conv >= minimum:
            pairs = sorted({self._pair(ctx, r) for r in steady_conv})
            parts.append(
                f"{len(steady_conv)} reorders convert data type on every pass "
                f"({', '.join(pairs)}): {ctx.cost_text(conv_ms)}"
            )
        if f32_steady and share_f32 >= minimum:
            low = ", ".join(f"{k} in {d}" for k, d in sorted(low_kinds))
            kinds = sorted({str(ctx.stats.loc[r, "kind"]) for r in f32_steady})
            parts.append(
                f"{len(f32_steady)} {'/'.join(kinds)} primitives compute in f32 "
                f"while {low} runs elsewhere in the log: {ms(f32_ms)} per iteration"
            )
        if not parts:
            return
        once = [r for r in conv_rows if r not in st.index]
        evidence = ctx.record_evidence(steady_conv + f32_steady)
        yield self.finding(
            "; ".join(parts) + f" (typical iteration {ms(iteration)})",
            evidence,
            fix=producer_fix(ctx, DTYPE_FIX),
            # the conversions are a cost; f32 compute is a chance, not a measured cost
            impact_ms=conv_ms if steady_conv and share_conv >= minimum else None,
            saving=Saving.removal(conv_ms, "tensors kept in one precision are not converted"),
            data={
                "conversion_reorders": len(steady_conv),
                "conversion_ms_per_iteration": conv_ms,
                "share": ctx.share(conv_ms) if steady_conv and share_conv >= minimum else None,
                "conversion_share_of_onednn_iteration": share_conv,
                "conversions": sorted({self._pair(ctx, r) for r in steady_conv}),
                "one_time_conversions": sorted({self._pair(ctx, r) for r in once}),
                "f32_compute_primitives": len(f32_steady),
                "f32_ms_per_iteration": f32_ms,
                "f32_share_of_onednn_iteration": share_f32,
                "low_precision": sorted(f"{k}:{d}" for k, d in low_kinds),
                "producer": ctx.producer.to_json(),
            },
        )

    @staticmethod
    def _pair(ctx: RuleContext, rid: int) -> str:
        mds = ctx.mds(rid)
        types = [md.dtype for md in mds if md.dtype and md.dtype != "undef"]
        return f"{types[0]}->{types[-1]}" if types else "?"
