"""DL004 reference-implementation."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._util import (
    Fix,
    FixedByProducer,
    is_reference,
    ms,
    producer_fix,
    ratio,
)
from dnnlens.rules.context import RuleContext

_DISPATCH = (
    "run once with `ONEDNN_VERBOSE=dispatch`: it prints why each optimised kernel was skipped"
)

REFERENCE_FIX = Fix(
    pytorch=(
        _DISPATCH + "; then check the tensor's data type (bf16 and f16 need AVX-512 BF16 or "
        "AMX kernels), memory format (`x.contiguous()` or channels_last instead of odd "
        "strides) and shape (groups, dilation); a newer PyTorch bundles a newer oneDNN"
    ),
    tensorflow=(
        _DISPATCH + "; then check the data type (bf16 needs AVX-512 BF16 or AMX kernels), "
        "the layout (NHWC, Keras' default) and the shape; a newer TensorFlow bundles a newer "
        "oneDNN"
    ),
    openvino=(
        _DISPATCH + "; then check the precision the plugin chose (`INFERENCE_PRECISION_HINT`: "
        "bf16 needs AVX-512 BF16 or AMX kernels) and the shape; a newer OpenVINO bundles a "
        "newer oneDNN fork"
    ),
    onednn=(
        _DISPATCH + "; then create the primitive with `memory::format_tag::any` (a fixed "
        "plain layout may have only reference kernels), check its data types and attributes "
        "(post-ops, scales, zero points) against what the CPU's ISA supports, and upgrade "
        "oneDNN"
    ),
)


class ReferenceImplementation(FixedByProducer):
    """Primitives run oneDNN's reference (unoptimised) kernels and take real time.

    ``ref``, ``ref:any``, ``gemm:ref``, ``simple:any`` ... are the portable C++ fallbacks
    oneDNN dispatches when no optimised (jit, brgemm, gemm) kernel supports the shape,
    data type, layout or attributes; they can be tens of times slower. The rule fires when
    such primitives take at least ``min_share`` of the steady-state time, measured with
    median times (executions x median) so one noisy call or a one-time warm-up reorder
    does not count.

    Saving: what ``dnnlens project --replace reference-kernels`` projects (one owner, the
    projection): each reference kernel run as fast as an optimised kernel of the same
    primitive measured in the inputs (``same_shape``), else as an optimised kernel of the
    same kind on another shape scaled by the roofline (``roofline``); ``unknown`` when
    neither is in the inputs. A reader's figure: that command's ``saving ms``.

    Fix: find what the optimised kernels refused: ``ONEDNN_VERBOSE=dispatch`` prints why
    each was skipped; then change that (data type, layout, attributes, shape) in the terms of
    the program that made the log, or upgrade it (each framework bundles its oneDNN).
    """

    name = "reference-implementation"
    code = "DL004"
    severity = "warning"
    defaults = {"min_share": 0.05}
    fixes = (("", REFERENCE_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        if st.empty:
            return
        ref = st[[is_reference(i) for i in st["impl"]]]
        if ref.empty:
            return
        typical = float(ref["typical_ms"].sum())
        share = ratio(typical, float(st["typical_ms"].sum()))
        if share < self.options["min_share"]:
            return
        ref = ref.sort_values("typical_ms", ascending=False)
        groups = ref.groupby(["kind", "impl"], sort=False).agg(
            calls=("count", "sum"), typical_ms=("typical_ms", "sum"), time_ms=("time_ms", "sum")
        )
        listed = "; ".join(
            f"{k} {i} ({int(g.calls)} calls, {ms(g.typical_ms)})"
            for (k, i), g in groups.head(4).iterrows()
        )
        msg = (
            f"{len(ref)} primitives run reference kernels and take "
            f"{ctx.cost_text(typical / ctx.steady_iterations)} (by median times): {listed}"
        )
        yield self.finding(
            msg,
            ctx.record_evidence([int(r) for r in ref.index]),
            fix=producer_fix(ctx, REFERENCE_FIX),
            impact_ms=typical / ctx.steady_iterations,
            saving=projected_saving(ctx, "replace:reference-kernels"),
            data={
                "share": ctx.share(typical / ctx.steady_iterations),
                "share_of_steady_time": share,
                "typical_ms": typical,
                "raw_ms": float(ref["time_ms"].sum()),
                "primitives": [
                    {
                        "kind": k,
                        "impl": i,
                        "calls": int(g.calls),
                        "typical_ms": float(g.typical_ms),
                        "time_ms": float(g.time_ms),
                    }
                    for (k, i), g in groups.iterrows()
                ],
                "producer": ctx.producer.to_json(),
            },
        )


#: A projection's basis as a finding's saving basis: the same primitive measured in
#: another implementation is the same shape running faster in the inputs; a kernel
#: measured on another shape carried over by the roofline is a roofline figure.
_PROJECTED = {"measured": "same_shape", "estimate": "roofline"}


def projected_saving(ctx: RuleContext, change: str) -> Saving:
    """What ``dnnlens project`` says ``change`` saves per iteration, as a finding's
    saving (``unknown`` when the projection changes nothing)."""
    from dnnlens.analysis.projection import project

    result = project(ctx.analysis, [change]).changes[0]
    basis = _PROJECTED.get(result.basis)
    command = f"dnnlens project --{change.replace(':', ' ')}"
    if basis is None:
        return Saving.unknown(f"{command}: nothing measured or modelled to replace them with")
    if result.saving_ms <= 0:  # the optimised kernel measured is not faster here
        return Saving(
            0.0, basis, f"{command} projects {result.saving_ms:+.3g} ms: not faster, no saving"
        )
    return Saving(result.saving_ms, basis, f"as {command} projects it")
