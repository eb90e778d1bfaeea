"""DL002 layout-round-trip."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import ms, pct, ratio
from dnnlens.rules.context import RuleContext


class LayoutRoundTrip(Rule):
    """Activations are reordered into a blocked layout and back around ops.

    oneDNN's fastest convolution kernels want a blocked layout (aBcd8b, aBcd16b) or
    channels-last; a framework tensor in plain NCHW (abcd) is reordered into it before each
    convolution and back after it, so every activation is copied twice per op, on every
    pass. The op graph tells activations from weights and finds the reorders that a later
    reorder undoes. The cost is the activation reorders' median time x runs per steady
    iteration, against a typical iteration computed the same way.

    Fix: run the model and its input in channels_last
    (``model.to(memory_format=torch.channels_last)``,
    ``x.contiguous(memory_format=torch.channels_last)``) so oneDNN reads and writes the
    framework's layout directly, or keep the blocked layout between ops with layout
    propagation (torch.compile with freezing, IPEX, oneDNN Graph).
    """

    name = "layout-round-trip"
    code = "DL002"
    severity = "warning"
    defaults = {"min_share": 0.02}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        r = ctx.reorders
        if r.empty:
            return
        act = r[
            (r["tensor"] == "activation")
            & r["steady"].astype(bool)
            & r["converts"].isin(["layout", "both"])
        ]
        trips = act[act["round_trip"].astype(bool)]
        if trips.empty:
            return
        per_iter = float(act["iter_ms"].sum())
        trip_ms = float(trips["iter_ms"].sum())
        iteration = ctx.typical_iteration_ms
        share = ratio(per_iter, iteration)
        if share < self.options["min_share"]:
            return
        pairs = Counter(
            tuple(sorted((a, b)))
            for a, b in zip(trips["src_layout"], trips["dst_layout"], strict=True)
        )
        (lay_a, lay_b), _ = pairs.most_common(1)[0]
        ops = Counter(k for k in act["consumer_kind"] if k and k != "reorder")
        around = ", ".join(f"{n} {k}" for k, n in ops.most_common(2)) or "ops"
        msg = (
            f"activations are reordered between {lay_a} and {lay_b} around the ops "
            f"({around} inputs): {len(act)} activation reorders per iteration, {len(trips)} "
            f"of them in round trips, cost {ms(per_iter)} of a typical {ms(iteration)} "
            f"iteration ({pct(share)})"
        )
        evidence = [
            Evidence(str(p), int(n))
            for p, n in zip(trips["path"].head(4), trips["line"].head(4), strict=True)
        ]
        yield self.finding(
            msg,
            evidence,
            impact_ms=per_iter,
            data={
                "share": share,
                "activation_reorder_ms_per_iteration": per_iter,
                "round_trip_ms_per_iteration": trip_ms,
                "iteration_ms": iteration,
                "activation_reorders": int(len(act)),
                "round_trip_reorders": int(len(trips)),
                "layouts": [lay_a, lay_b],
                "nodes": [str(n) for n in trips["node"]],
            },
        )
