"""DL003 weight-reorder-per-iteration."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import ms, pct, ratio
from dnnlens.rules.context import RuleContext


class WeightReorderPerIteration(Rule):
    """Weights are reordered on every pass at inference.

    At inference the weights do not change, yet eager frameworks hand oneDNN plain
    weights (oihw, or ohwi in channels_last) and the convolution, matmul or RNN reorders
    them into its blocked layout on every call. The op graph tells weights from
    activations; a weight reorder that runs in every steady-state iteration is pure
    repeated work. Training logs (any backward primitive) are skipped: there the weights
    change every step, and weight-reorder-training judges their reorders.

    Fix: freeze the model so weights are prepacked once: ``torch.jit.freeze``,
    ``torch.compile`` with ``torch._inductor.config.freezing = True``, IPEX
    ``ipex.optimize(model)``, or keep the weights in oneDNN's layout (``to_mkldnn``).
    """

    name = "weight-reorder-per-iteration"
    code = "DL003"
    severity = "warning"
    defaults = {"min_share": 0.01}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        r = ctx.reorders
        if r.empty or ctx.is_training or not ctx.iterations.found:
            return
        w = r[(r["tensor"] == "weight") & r["steady"].astype(bool)]
        if w.empty:
            return
        per_iter = float(w["iter_ms"].sum())
        iteration = ctx.typical_iteration_ms
        share = ratio(per_iter, iteration)
        if share < self.options["min_share"]:
            return
        kinds = sorted({k for k in w["consumer_kind"] if k})
        dims = ", ".join(dict.fromkeys(str(d) for d in w["dims"]))
        msg = (
            f"{len(w)} weight reorders run in every one of the {ctx.steady_iterations} steady "
            f"iterations ({dims}{' for ' + ', '.join(kinds) if kinds else ''}): "
            f"{ms(per_iter)} per iteration, {pct(share)} of a typical {ms(iteration)} "
            "iteration, repeated work at inference"
        )
        evidence = [
            Evidence(str(p), int(n))
            for p, n in zip(w["path"].head(4), w["line"].head(4), strict=True)
        ]
        yield self.finding(
            msg,
            evidence,
            impact_ms=per_iter,
            data={
                "share": share,
                "weight_reorder_ms_per_iteration": per_iter,
                "iteration_ms": iteration,
                "weight_reorders": int(len(w)),
                "iterations": ctx.steady_iterations,
                "dims": list(dict.fromkeys(w["dims"])),
            },
        )
