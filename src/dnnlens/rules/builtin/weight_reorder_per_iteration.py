"""DL003 weight-reorder-per-iteration."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._reorder_causes import WEIGHTS_INFERENCE_FIX
from dnnlens.rules.builtin._util import FixedByProducer, producer_fix, ratio
from dnnlens.rules.context import RuleContext


class WeightReorderPerIteration(FixedByProducer):
    """Weights are reordered on every pass at inference.

    At inference the weights do not change, yet eager frameworks hand oneDNN plain
    weights (oihw, or ohwi in channels_last) and the convolution, matmul or RNN reorders
    them into its blocked layout on every call. The op graph tells weights from
    activations; a weight reorder that runs in every steady-state iteration is pure
    repeated work. Training logs (any backward primitive) are skipped: there the weights
    change every step, and weight-reorder-training judges their reorders.

    Saving (``removal``): the weight reorders' whole part. Prepacked weights are reordered
    once, in warm-up (recorded: ``compile_freezing_infer``); ``dnnlens project --remove
    weight-reorders`` states the same figure. A reader's figure:
    ``weight_reorder_ms_per_iteration``.

    Fix: reorder the weights once and keep them, in the terms of the program that made the
    log: freezing in PyTorch, ``TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1`` in TensorFlow, weights as
    constants of the model in OpenVINO, a reorder at setup into ``pd.weights_desc()`` with
    oneDNN's own API.
    """

    name = "weight-reorder-per-iteration"
    code = "DL003"
    part_of = "reorder-overhead"
    severity = "warning"
    defaults = {"min_share": 0.01}
    fixes = (("", WEIGHTS_INFERENCE_FIX),)

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
            f"{ctx.cost_text(per_iter)}, repeated work at inference"
        )
        evidence = [
            Evidence(str(p), int(n))
            for p, n in zip(w["path"].head(4), w["line"].head(4), strict=True)
        ]
        yield self.finding(
            msg,
            evidence,
            fix=producer_fix(ctx, WEIGHTS_INFERENCE_FIX),
            impact_ms=per_iter,
            saving=Saving.removal(
                per_iter, "prepacked weights are reordered once, not every iteration"
            ),
            data={
                "share": ctx.share(per_iter),
                "share_of_onednn_iteration": share,
                "weight_reorder_ms_per_iteration": per_iter,
                "iteration_ms": iteration,
                "weight_reorders": int(len(w)),
                "iterations": ctx.steady_iterations,
                "dims": list(dict.fromkeys(w["dims"])),
                "producer": ctx.producer.to_json(),
            },
        )
