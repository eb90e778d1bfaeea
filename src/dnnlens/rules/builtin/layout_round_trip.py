"""DL002 layout-round-trip."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pandas as pd

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._reorder_causes import (
    ONE_WAY_FIX,
    ROUND_TRIP_FIX,
    causes_of,
    count_value,
)
from dnnlens.rules.builtin._util import FixedByProducer, ms, producer_fix, ratio
from dnnlens.rules.context import RuleContext


class LayoutRoundTrip(FixedByProducer):
    """Activations are reordered into a blocked layout and back around ops.

    oneDNN's fastest convolution kernels want a blocked layout (aBcd8b, aBcd16b) or
    channels-last; a framework tensor in plain NCHW (abcd) is reordered into it before each
    convolution and back after it, so every activation is copied twice per op, on every
    pass. The op graph tells activations from weights and gives each activation reorder a
    role: in a round trip (a later reorder undoes it), a one-way conversion, or a copy
    into the same layout. The message counts each role (the counts every reorder finding
    uses) and follows the one that costs more: round trips or one-way reorders. The cost
    is the activation reorders that change the layout or copy, per typical iteration;
    pure data-type conversions are dtype-conversion's.

    Saving (``removal``): the activation reorders' whole part. With the model and its
    input in one layout the producers' output is read as it is (recorded: ``convnet_cl_*``
    and ``resnet18_cl_train`` have no activation reorder); ``dnnlens project --remove
    activation-reorders`` states the same figure. A reader's figure: the sum of the
    activation reorders' terms (``activation_reorder_ms_per_iteration``).

    Fix: keep activations in one layout from one op to the next, in the terms of the program
    that made the log: channels_last in PyTorch, NHWC in TensorFlow, an NHWC input declared
    with ``PrePostProcessor`` in OpenVINO, ``format_tag::any`` chained from primitive to
    primitive with oneDNN's own API.
    """

    name = "layout-round-trip"
    code = "DL002"
    part_of = "reorder-overhead"
    severity = "warning"
    defaults = {"min_share": 0.02}
    fixes = (("round trips", ROUND_TRIP_FIX), ("one-way conversions", ONE_WAY_FIX))

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        r = ctx.reorders
        if r.empty:
            return
        activation = r[r["role"].astype(str).str.startswith("activation")]
        act = activation[activation["converts"] != "dtype"]
        trips = act[act["role"] == "activation_round_trip"]
        if trips.empty or not trips["steady"].astype(bool).any():
            return
        per_iter = float(act["iter_ms"].sum())
        trip_ms = float(trips["iter_ms"].sum())
        iteration = ctx.typical_iteration_ms
        share = ratio(per_iter, iteration)
        if share < self.options["min_share"]:
            return
        causes = causes_of(ctx.analysis.reorder_part)
        dtype_only = activation[activation["converts"] == "dtype"]
        pairs = Counter(
            tuple(sorted((a, b)))
            for a, b in zip(trips["src_layout"], trips["dst_layout"], strict=True)
        )
        (lay_a, lay_b), _ = pairs.most_common(1)[0]
        ops = Counter(k for k in act["consumer_kind"] if k and k != "reorder")
        around = ", ".join(f"{n} {k}" for k, n in ops.most_common(2)) or "ops"
        one_way = act[act["role"] != "activation_round_trip"]
        one_way_ms = per_iter - trip_ms
        dtype_count = float(dtype_only["per_iteration"].sum())
        left_out = (
            f"; {dtype_count:g} of them convert the data type only, left to dtype-conversion"
            if dtype_count > 0
            else ""
        )
        if one_way_ms > trip_ms:
            top = one_way.sort_values("iter_ms", ascending=False, kind="stable").iloc[0]
            head = (
                f"activations are converted one way more than in round trips (largest "
                f"{top['src_layout']}->{top['dst_layout']} {top['dims']} {ms(top['iter_ms'])}); "
                f"round trips between {lay_a} and {lay_b} around the ops ({around} inputs)"
            )
            fix = producer_fix(
                ctx,
                ONE_WAY_FIX,
                "most of it converts activations one way, where the framework takes a tensor "
                "back into its own layout for an op oneDNN does not run (or hands one over in "
                "a layout the kernel does not use)",
            )
            shown = pd.concat([one_way.sort_values("iter_ms", ascending=False), trips])
        else:
            head = (
                f"activations are reordered between {lay_a} and {lay_b} around the ops "
                f"({around} inputs)"
            )
            fix = producer_fix(ctx, ROUND_TRIP_FIX)
            shown = trips
        msg = (
            f"{head}: {causes.activation_count:g} activation reorders per iteration "
            f"({causes.activation_split()}{left_out}), cost {ctx.cost_text(per_iter)}"
        )
        evidence = [
            Evidence(str(p), int(n))
            for p, n in zip(shown["path"].head(4), shown["line"].head(4), strict=True)
        ]
        yield self.finding(
            msg,
            evidence,
            fix=fix,
            impact_ms=per_iter,
            saving=Saving.removal(
                per_iter, "one activation layout end to end removes these reorders"
            ),
            data={
                "share": ctx.share(per_iter),
                "share_of_onednn_iteration": share,
                "activation_reorder_ms_per_iteration": per_iter,
                "round_trip_ms_per_iteration": trip_ms,
                "one_way_ms_per_iteration": one_way_ms,
                "iteration_ms": iteration,
                "activation_reorders": count_value(causes.activation_count),
                "round_trip_reorders": count_value(float(trips["per_iteration"].sum())),
                "dtype_only_reorders": count_value(dtype_count),
                "by_role_per_iteration": {
                    k: v
                    for k, v in ctx.analysis.reorder_part.count_by_role.items()
                    if k.startswith("activation")
                },
                "dominant": "one-way" if one_way_ms > trip_ms else "round trips",
                "layouts": [lay_a, lay_b],
                "nodes": [str(n) for n in trips["node"]],
                "producer": ctx.producer.to_json(),
            },
        )
