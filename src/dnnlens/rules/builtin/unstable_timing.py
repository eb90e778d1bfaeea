"""DL010 unstable-timing."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._util import ms, ratio
from dnnlens.rules.context import RuleContext


class UnstableTiming(Rule):
    """The same primitive takes far longer on some runs than its median: noisy timing.

    An identical primitive line (same shapes, layouts, implementation) should take about
    the same time on every steady-state run. When its 95th percentile is ``ratio`` times
    its median or more, something outside oneDNN interfered: other processes on the same
    cores, more threads than free cores (OMP_NUM_THREADS), frequency changes, page faults.
    The rule fires when such primitives' time above their medians is ``min_excess_share``
    of all exec time or more, so a verdict about layouts or kernels is not built on noise;
    the other rules already use medians. Its cost per iteration is that time above the
    typical runs per steady pass: wall time the noise adds on top of the typical iteration,
    a part of the mean steady pass (the raw exec times summed per steady pass), which is
    its basis: the typical iteration does not hold the noise it leaves out.

    Saving (``unknown``): the excess is noise of the machine, not work a fix removes from
    the model; the finding ranks after those whose saving is known.

    Fix: measure on quiet, pinned cores (``taskset``/``numactl``, no other load), set
    ``OMP_NUM_THREADS`` to the physical cores available, run more iterations and compare
    medians, disable frequency scaling for benchmarks.
    """

    name = "unstable-timing"
    code = "DL010"
    severity = "warning"
    defaults = {"ratio": 3.0, "min_runs": 5, "min_excess_share": 0.20}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        if st.empty:
            return
        runs = st[st["count"] >= self.options["min_runs"]]
        if runs.empty:
            return
        noisy = runs[runs["p95_ms"] >= self.options["ratio"] * runs["median_ms"]]
        total = float(st["time_ms"].sum())
        excess = float((noisy["time_ms"] - noisy["typical_ms"]).clip(lower=0).sum())
        share = ratio(excess, total)
        if noisy.empty or share < self.options["min_excess_share"]:
            return
        worst = noisy.assign(r=noisy["p95_ms"] / noisy["median_ms"]).sort_values(
            "time_ms", ascending=False
        )
        w = worst.iloc[0]
        per_pass = excess / ctx.steady_iterations
        msg = (
            f"timing is unstable: {len(noisy)} of {len(runs)} repeated primitives have a p95 "
            f"at least {self.options['ratio']:g}x their median (e.g. {w['kind']} "
            f"{w['impl']}: median {ms(w['median_ms'])}, p95 {ms(w['p95_ms'])}); "
            f"the time above the medians is {ctx.cost_text(per_pass, 'mean_pass')} "
            f"({ms(excess)} of {ms(total)} over the steady passes): contention or "
            "oversubscribed threads, not the kernels; other findings use median times"
        )
        yield self.finding(
            msg,
            ctx.record_evidence([int(r) for r in worst.index]),
            data={
                "noisy_primitives": int(len(noisy)),
                "repeated_primitives": int(len(runs)),
                "excess_ms": excess,
                "total_ms": total,
                "share": ctx.share(per_pass, "mean_pass"),
                "excess_share_of_steady_time": share,
                "typical_ms": float(st["typical_ms"].sum()),
                "worst_ratio": float(worst["r"].max()),
            },
            impact_ms=per_pass,
            basis="mean_pass",
            saving=Saving.unknown("noise of the machine, not work a fix removes"),
        )
