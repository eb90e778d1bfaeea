"""DL011 low-efficiency."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.machine import CLOCK_ASSUMED
from dnnlens.analysis.shares import share as share_of
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._util import ms, pct
from dnnlens.rules.context import RuleContext

#: The kinds the rule judges: where a FLOP rate against the peak means something.
JUDGED_KINDS = frozenset(
    {"convolution", "deconvolution", "inner_product", "matmul", "gemm_api", "brgemm"}
)


class LowEfficiency(Rule):
    """Convolutions and matmuls reach a small fraction of what the machine's roofline allows.

    The rule weighs figures the analysis owns (``Analysis.primitives``): each primitive's
    FLOPs from its problem descriptor over its typical run, against the roof of the one
    machine model (``Analysis.machine``: the clock from a profile, the log header or this
    machine, else assumed and labelled so). The verdict is the mean efficiency weighted by
    each primitive's part of the typical iteration. It fires below ``efficiency`` (0.10: a
    tuned jit kernel of a mid-sized convolution or GEMM reaches 30-80% of its roof, so
    under a tenth something structural is wrong: small shapes, few channels, reference
    kernels, a capped ISA) when these primitives take at least ``min_share`` (0.20: under
    a fifth of the iteration even a ten times faster kernel saves less than other causes)
    of the typical iteration. A primitive measured faster than its roof has no efficiency
    (the machine's clock or bandwidth is wrong, not the kernel better than possible): it is
    named and left out of the mean. Without a thread count (the header's ``nthr``, or a
    profile) the peak would be a per-thread guess, and the rule stays quiet.

    Saving (``roofline``): the impact itself, the time above what the roof would take: a
    bound (no kernel reaches its roof), as good as the machine model (its peak labelled
    assumed when it is). A reader's figure: per primitive, its typical time minus
    ``roof_ms`` x its executions per iteration, summed (``primitives[]``).

    Fix: when the peak is assumed, give the machine first (``dnnlens machine probe -o
    box.toml``, then ``--machine box.toml``); then look at the worst primitives: batch more
    work per call, use a better layout (channels last, blocked), make sure optimised kernels
    of the machine's ISA run (see isa-below-machine, reference-implementation).
    """

    name = "low-efficiency"
    code = "DL011"
    severity = "warning"
    defaults = {"efficiency": 0.10, "min_share": 0.20}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        m = a.machine
        if m.sources.get("threads", "default") == "default":
            return
        rows = [
            p
            for p in a.primitives
            if p["kind"] in JUDGED_KINDS and p["flops"] and p["run_ms"] and p["iter_ms"] > 0
        ]
        known = [p for p in rows if p["efficiency"] is not None]
        if not known:
            return
        time_total = sum(p["iter_ms"] for p in rows)
        share = a.typical.share(time_total)
        eff = share_of(sum(p["efficiency"] * p["iter_ms"] for p in known), sum_iter(known))
        if share is None or eff is None:  # no typical iteration, no time: nothing to weigh
            return
        if eff >= self.options["efficiency"] or share < self.options["min_share"]:
            return
        passes = max(a.steady.divisor, 1)
        flops = sum(p["flops"] * p["steady_count"] for p in rows) / passes
        achieved = flops / (time_total * 1e6)
        top = max(rows, key=lambda p: p["iter_ms"])
        worst = min(known, key=lambda p: p["efficiency"])
        above = [p for p in rows if p["efficiency"] is None and p["above_roof"]]
        # the time above what the roof would take: what better kernels could save
        lost = sum(p["iter_ms"] * (1.0 - p["efficiency"]) for p in known)
        msg = (
            f"compute primitives ({ms(time_total)} per iteration) reach "
            f"{achieved:.1f} GFLOP/s, {pct(eff)} of their roofline (weighted by time) "
            f"against the {m.peak_label(top['dtype'])}; lowest: {worst['kind']} "
            f"{worst['problem']} at {worst['gflops']:.1f} GFLOP/s "
            f"({pct(worst['efficiency'])} of its roofline); the time above their roofs: "
            f"{ctx.cost_text(lost)}"
        )
        if above:
            msg += (
                f"; {len(above)} ran faster than their roof and are left out: "
                f"{above[0]['above_roof']}"
            )
        yield self.finding(
            msg,
            ctx.record_evidence([p["record"] for p in sorted(known, key=_by_efficiency)]),
            impact_ms=lost,
            saving=Saving(
                lost, "roofline", f"the time above the roof, {m.peak_label(top['dtype'])}"
            ),
            data={
                "gflops": achieved,
                "peak_gflops": m.peak(top["dtype"]),
                "peak_basis": m.peak_basis(top["dtype"]),
                "peak_assumed": m.peak_basis(top["dtype"]) == CLOCK_ASSUMED,
                "efficiency": eff,
                "share": ctx.share(lost),
                "compute_share_of_onednn_iteration": share,
                "threads": m.threads,
                "clock_ghz": m.freq_ghz,
                "clock_basis": m.clock_basis,
                "above_roof": [
                    {"kind": p["kind"], "problem": p["problem"], "reason": p["above_roof"]}
                    for p in above
                ],
                "primitives": [_row(p) for p in sorted(known, key=_by_efficiency)],
            },
        )


def sum_iter(rows: list[dict[str, Any]]) -> float:
    """Their part of the typical iteration, in ms."""
    return float(sum(p["iter_ms"] for p in rows))


def _by_efficiency(p: dict[str, Any]) -> float:
    return float(p["efficiency"])


def _row(p: dict[str, Any]) -> dict[str, Any]:
    keys = ("kind", "problem", "gflops", "peak_gflops", "efficiency", "run_ms", "iter_ms")
    return {k: p[k] for k in keys}
