"""DL001 reorder-overhead."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.graph import WEIGHT_ROLES
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._reorder_causes import CAUSE_FIXES, causes_of
from dnnlens.rules.builtin._util import FixedByProducer, ms, pct, top_records
from dnnlens.rules.context import RuleContext


class ReorderOverhead(FixedByProducer):
    """Reorders take a large share of each iteration.

    A reorder copies a tensor into another memory layout or data type and does no math, so
    every millisecond in reorders is overhead. The share is taken per steady-state
    iteration from each primitive's median time (executions per iteration x median), so a
    few noisy executions cannot make reorders look expensive. The rule fires on their share
    of oneDNN's typical iteration (``share`` option; ``data.share_of_onednn_iteration``);
    the message states the report's one share (of the step, with a profiler trace: oneDNN's
    iteration is then named as a second basis), and the share of the summed raw times, over
    the whole log, named as such. The op graph tells what each reorder does (its role):
    weights converted for a pass or gradients going back, activations in round trips,
    converted one way or copied; the message counts each, and the fix is the one for the
    cause that holds the most reorder time. A log of reorders only (a reorder benchmark, a
    fragment) is not judged.

    Saving (``removal``): the reorders' part, less the weight reorders of a training step,
    which no recorded fix removes (weight-reorder-training). At inference freezing
    prepacks the weights once and one activation layout (channels_last) removes the
    activation reorders, so the whole part goes; ``dnnlens project --remove reorders``
    states the same figure. A reader's figure: ``reorder_ms_per_iteration`` minus, in
    training, the ``weight_*`` entries of ``by_role_ms_per_iteration``.

    Fix: the one for the dominant cause, in the terms of the program that made the log
    (PyTorch, TensorFlow, OpenVINO, or oneDNN's own API when the log does not say): weights
    in training as weight-reorder-training says, weights at inference as
    weight-reorder-per-iteration, activations as layout-round-trip and dtype-conversion.
    """

    name = "reorder-overhead"
    code = "DL001"
    severity = "warning"
    defaults = {"share": 0.10}
    fixes = CAUSE_FIXES

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
        if reo.empty or share is None or share < self.options["share"]:
            return
        raw_ms, raw_share, total_ms = part.raw_ms, part.raw_share, part.total_ms
        by_tensor = part.by_tensor
        calls = part.per_iteration
        where = (
            f"medians over {iters} steady iterations"
            if ctx.iterations.found
            else ("medians; no repeating iteration found, so the whole log is one")
        )
        causes = causes_of(part)
        parts = causes.words()
        second = ctx.onednn_share_text(per_iter)
        msg = (
            f"reorders take {ctx.cost_text(per_iter)} ("
            + (f"{second}; " if second else "")
            + f"{calls:.0f} reorders per iteration; {where})"
            + (f": {parts}" if parts else "")
            + f". {pct(causes.dominant_share)} of the reorder time is {causes.dominant}."
            + f" Raw sums over the whole log: {pct(raw_share)} of the summed exec time "
            f"({ms(raw_ms)} of {ms(total_ms)})."
        )
        kept = (
            sum(v for k, v in part.by_role.items() if k in WEIGHT_ROLES) if ctx.is_training else 0.0
        )
        note = "the reorders' whole time: freezing and one activation layout remove them"
        if kept:
            note = (
                f"the reorders but the training step's weight reorders ({ms(kept)}), which no "
                "recorded fix removes"
            )
        yield self.finding(
            msg,
            ctx.record_evidence(top_records(reo, "typical_ms")),
            fix=causes.fix(ctx),
            impact_ms=per_iter,
            saving=Saving.removal(per_iter - kept, note),
            data={
                "dominant_cause": causes.dominant,
                "by_role_ms_per_iteration": dict(part.by_role),
                "reorders_by_role_per_iteration": dict(part.count_by_role),
                "share": ctx.share(per_iter),
                "share_of_onednn_iteration": share,
                "reorder_ms_per_iteration": per_iter,
                "iteration_ms": iteration,
                "reorders_per_iteration": calls,
                "iterations": iters,
                "raw_share": raw_share,
                "raw_reorder_ms": raw_ms,
                "total_ms": total_ms,
                "by_tensor_ms_per_iteration": by_tensor,
                "producer": ctx.producer.to_json(),
            },
        )
