"""DL001 reorder-overhead."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import ms, pct, top_records
from dnnlens.rules.context import RuleContext


class ReorderOverhead(Rule):
    """Reorders take a large share of each iteration.

    A reorder copies a tensor into another memory layout or data type and does no math, so
    every millisecond in reorders is overhead. The share is taken per steady-state
    iteration from each primitive's median time (executions per iteration x median), so a
    few noisy executions cannot make reorders look expensive; the share of the summed raw
    times, over the whole log, is in ``data`` beside it. Reorders of activations and of
    weights are told apart using the op graph. A log of reorders only (a reorder benchmark,
    a fragment) is not judged.

    Fix: look at the layout-round-trip and weight-reorder-per-iteration findings for the
    cause: run the model in channels_last, keep blocked layouts between ops (torch.compile,
    IPEX, oneDNN Graph), freeze or prepack weights for inference.
    """

    name = "reorder-overhead"
    code = "DL001"
    severity = "warning"
    defaults = {"share": 0.10}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        if st.empty:
            return
        reo = st[st["kind"] == "reorder"]
        if len(reo) == len(st):  # only reorders: a reorder benchmark or a fragment
            return
        iters = ctx.steady_iterations
        part = ctx.analysis.reorder_part
        per_iter, iteration, share = part.ms, part.iteration_ms, part.share
        if reo.empty or share < self.options["share"]:
            return
        raw_ms, raw_share, total_ms = part.raw_ms, part.raw_share, part.total_ms
        by_tensor = part.by_tensor
        calls = part.per_iteration
        where = (
            f"medians over {iters} steady iterations"
            if ctx.iterations.found
            else ("medians; no repeating iteration found, so the whole log is one")
        )
        parts = ", ".join(f"{k}s {ms(v)}" for k, v in sorted(by_tensor.items()) if v > 0)
        msg = (
            f"reorders take {pct(share)} of a typical iteration ({ms(per_iter)} of "
            f"{ms(iteration)}, {calls:.0f} reorders per iteration; {where})"
            + (f": {parts}" if parts else "")
            + f". Summed raw times say {pct(raw_share)} ({ms(raw_ms)} of {ms(total_ms)})."
        )
        yield self.finding(
            msg,
            ctx.record_evidence(top_records(reo, "typical_ms")),
            impact_ms=per_iter,
            data={
                "share": share,
                "reorder_ms_per_iteration": per_iter,
                "iteration_ms": iteration,
                "reorders_per_iteration": calls,
                "iterations": iters,
                "raw_share": raw_share,
                "raw_reorder_ms": raw_ms,
                "total_ms": total_ms,
                "by_tensor_ms_per_iteration": by_tensor,
            },
        )
