"""DL011 low-efficiency."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.columns import row_dicts
from dnnlens.analysis.findings import Finding
from dnnlens.parsers.fields import split_impl
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import pct, ratio
from dnnlens.rules.context import RuleContext
from dnnlens.rules.flops import FLOP_FUNCTION, isa_class, peak_gflops

#: The kinds the rule judges: where a FLOP rate against the peak means something.
JUDGED_KINDS = frozenset(
    {"convolution", "deconvolution", "inner_product", "matmul", "gemm_api", "brgemm"}
)


class LowEfficiency(Rule):
    """Convolutions and matmuls reach a small fraction of the CPU's peak FLOP rate.

    FLOPs come from each problem descriptor (``flops.primitive_flops``: 2 x multiply-adds),
    time from each primitive's median, so the achieved rate is what a typical call reaches.
    The peak is ``peak_gflops`` when set, else FLOPs per cycle for the header's ISA class and
    the data type (f32: SSE4 8, AVX 16, AVX2 32, AVX-512 64 per core) x ``clock_ghz`` x
    threads (``threads``, else the header's ``nthr``). The verdict is the time-weighted
    mean of each primitive's efficiency. Small shapes, few input channels,
    reference kernels or a capped ISA show up here. Without a thread count the rule stays
    quiet.

    Fix: set ``peak_gflops`` for your machine first (the default clock is a guess); then
    look at the worst primitives: batch more work per call, use a better layout (channels
    last, blocked), make sure optimised kernels of the machine's ISA run (see
    isa-below-machine, reference-implementation).
    """

    name = "low-efficiency"
    code = "DL011"
    severity = "warning"
    defaults = {
        "efficiency": 0.10,
        "min_share": 0.20,
        "clock_ghz": 2.5,
        "peak_gflops": 0.0,
        "threads": 0,
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        threads = int(self.options["threads"]) or (ctx.threads or 0)
        if st.empty or threads <= 0:
            return
        isas = [h["isa"] for h in ctx.headers if isa_class(h["isa"])]
        rows: list[dict] = []
        flops_total, time_total = 0.0, 0.0
        for rid, row in row_dicts(st):
            rec = ctx.log.records[int(rid)]
            if rec.kind not in JUDGED_KINDS:
                continue
            flops = FLOP_FUNCTION(rec.kind, rec.problem, rec.prop_kind, rec.aux)
            if not flops or not row["run_ms"] or row["run_ms"] != row["run_ms"]:
                continue
            isa = isas[0] if isas else split_impl(rec.impl)[1]
            src = ctx.mds(int(rid))
            dtype = src[0].dtype if len(src) else "f32"
            peak = float(self.options["peak_gflops"]) or peak_gflops(
                isa, dtype, threads, float(self.options["clock_ghz"])
            )
            if not peak:
                continue
            achieved = flops / (row["run_ms"] * 1e6)
            rows.append(
                {
                    "record": int(rid),
                    "kind": rec.kind,
                    "problem": rec.problem,
                    "gflops": achieved,
                    "peak_gflops": peak,
                    "efficiency": achieved / peak,
                    "typical_ms": float(row["typical_ms"]),
                }
            )
            flops_total += flops * row["count"]
            time_total += float(row["typical_ms"])
        if not rows:
            return
        share = ratio(time_total, float(st["typical_ms"].sum()))
        achieved = flops_total / (time_total * 1e6) if time_total else 0.0
        # time-weighted efficiency: each primitive against the peak of its own data type
        eff = ratio(sum(r["efficiency"] * r["typical_ms"] for r in rows), time_total)
        peak_used = max(rows, key=lambda r: r["typical_ms"])["peak_gflops"]
        if eff >= self.options["efficiency"] or share < self.options["min_share"]:
            return
        rows.sort(key=lambda r: r["efficiency"])
        w = rows[0]
        basis = (
            f"set peak_gflops = {self.options['peak_gflops']:g}"
            if self.options["peak_gflops"]
            else f"{threads} threads of {isas[0] if isas else 'the kernel ISA'} at "
            f"{self.options['clock_ghz']:g} GHz"
        )
        msg = (
            f"compute primitives ({pct(share)} of the time) reach {achieved:.1f} GFLOP/s, "
            f"{pct(eff)} of peak (time-weighted; {peak_used:.0f} GFLOP/s for {basis}); "
            f"lowest: {w['kind']} "
            f"{w['problem']} at {w['gflops']:.1f} GFLOP/s ({pct(w['efficiency'])})"
        )
        # the time above what the peak would take: what better kernels could save
        lost = sum(r["typical_ms"] * (1.0 - min(r["efficiency"], 1.0)) for r in rows)
        yield self.finding(
            msg,
            ctx.record_evidence([r["record"] for r in rows]),
            impact_ms=lost / ctx.steady_iterations,
            data={
                "gflops": achieved,
                "peak_gflops": peak_used,
                "efficiency": eff,
                "compute_share": share,
                "threads": threads,
                "clock_ghz": self.options["clock_ghz"],
                "primitives": [{k: v for k, v in r.items() if k != "record"} for r in rows],
            },
        )
