"""DL004 reference-implementation."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import is_reference, ms, pct, ratio
from dnnlens.rules.context import RuleContext


class ReferenceImplementation(Rule):
    """Primitives run oneDNN's reference (unoptimised) kernels and take real time.

    ``ref``, ``ref:any``, ``gemm:ref``, ``simple:any`` ... are the portable C++ fallbacks
    oneDNN dispatches when no optimised (jit, brgemm, gemm) kernel supports the shape,
    data type, layout or attributes; they can be tens of times slower. The rule fires when
    such primitives take at least ``min_share`` of the steady-state time, measured with
    median times (executions x median) so one noisy call or a one-time warm-up reorder
    does not count.

    Fix: find what the optimised kernels refused: run with ``ONEDNN_VERBOSE=dispatch`` (it
    prints why each was skipped); check the data type (f16/bf16 without CPU support), an
    unusual layout or ``format any`` not used, uncommon post-ops or attributes, odd shapes
    (groups, dilation); upgrade oneDNN.
    """

    name = "reference-implementation"
    code = "DL004"
    severity = "warning"
    defaults = {"min_share": 0.05}

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
            f"{len(ref)} primitives run reference kernels and take {pct(share)} of the time "
            f"({ms(typical)} of {ms(float(st['typical_ms'].sum()))} in steady state, by median "
            f"times): {listed}"
        )
        yield self.finding(
            msg,
            ctx.record_evidence([int(r) for r in ref.index]),
            impact_ms=typical / ctx.steady_iterations,
            data={
                "share": share,
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
            },
        )
