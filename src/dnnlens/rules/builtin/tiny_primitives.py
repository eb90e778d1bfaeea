"""DL009 tiny-primitives."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.builtin._util import Fix, FixedByProducer, pct, producer_fix, ratio
from dnnlens.rules.context import RuleContext

TINY_FIX = Fix(
    pytorch=(
        "give each call more work (a larger batch) and make fewer calls: `torch.compile` "
        "fuses small ops and removes the per-op dispatch from Python; measure wall time "
        "(`torch.profiler`) beside oneDNN's times"
    ),
    tensorflow=(
        "give each call more work (a larger batch) and run the whole step as one "
        "`tf.function` (Keras `fit` and `predict` do) rather than op by op from Python; "
        "measure wall time beside oneDNN's times"
    ),
    openvino=(
        "give each inference more work (a batch: `openvino.set_batch(model, n)` before "
        "compiling, or a batched input shape) and keep several requests in flight "
        "(`AsyncInferQueue` with `PERFORMANCE_HINT` THROUGHPUT) so that per-inference overhead "
        "overlaps; measure wall time beside oneDNN's times"
    ),
    onednn=(
        "give each primitive more work (larger problems, a batch), fuse small ops into their "
        "producers as post-ops, create each primitive once and execute it many times, and "
        "measure wall time beside oneDNN's times"
    ),
)


class TinyPrimitives(FixedByProducer):
    """Most primitive calls are tiny: per-call framework overhead dominates.

    When most calls run in under ``max_us`` microseconds (by each primitive's median), the
    work per call is smaller than what the framework spends around it (op dispatch, tensor
    allocation, primitive creation from the cache, often 5-20 us per op), so the log's
    exec times understate the wall time and faster kernels would not help.

    Saving: none stated (the finding is not about time: ``unknown``).

    Fix: give each call more work (a larger batch, fewer and bigger tensors) and make fewer
    calls, in the terms of the program that made the log; measure wall time as well as
    oneDNN time.
    """

    name = "tiny-primitives"
    code = "DL009"
    severity = "info"
    defaults = {"max_us": 10.0, "min_call_share": 0.5, "min_calls": 20}
    fixes = (("", TINY_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        st = ctx.steady_stats
        calls = int(st["count"].sum()) if len(st) else 0
        if calls < self.options["min_calls"]:
            return
        limit_ms = self.options["max_us"] / 1000.0
        tiny = st[st["run_ms"] < limit_ms]
        n_tiny = int(tiny["count"].sum())
        share = ratio(n_tiny, calls)
        if share < self.options["min_call_share"]:
            return
        time_share = ratio(float(tiny["typical_ms"].sum()), float(st["typical_ms"].sum()))
        kinds = tiny.groupby("kind")["count"].sum().sort_values(ascending=False)
        listed = ", ".join(f"{int(n)} {k}" for k, n in kinds.head(4).items())
        msg = (
            f"{pct(share)} of primitive calls ({n_tiny} of {calls}) take under "
            f"{self.options['max_us']:g} us (median): {listed}; they are {pct(time_share)} of "
            "oneDNN's steady exec time, so per-call framework overhead likely dominates wall time"
        )
        yield self.finding(
            msg,
            ctx.record_evidence([int(r) for r in tiny.sort_values("count", ascending=False).index]),
            fix=producer_fix(ctx, TINY_FIX),
            data={
                "tiny_calls": n_tiny,
                "calls": calls,
                "call_share": share,
                "time_share_of_steady_time": time_share,
                "max_us": self.options["max_us"],
                "by_kind": {str(k): int(v) for k, v in kinds.items()},
                "producer": ctx.producer.to_json(),
            },
        )
