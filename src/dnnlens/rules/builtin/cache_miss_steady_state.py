"""DL006 cache-miss-steady-state."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dnnlens.analysis.columns import category_mask, str_values
from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext


class CacheMissSteadyState(Rule):
    """Primitives are still created (primitive cache misses) after warm-up.

    Creating a primitive (``create:cache_miss``) JIT-compiles its kernel: tens to hundreds
    of microseconds, sometimes milliseconds. It should happen in the first pass only;
    misses later mean the shapes keep changing (dynamic batch or sequence length, varying
    image sizes), or the primitive cache is too small or disabled
    (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``). Steady state is what the iteration finder says
    (when every pass misses, all passes after the first); without a repeating iteration,
    everything after the first primitive runs a second time (the start of the second
    pass). Recreated primitives that hit the cache (``create:cache_hit``) are counted in
    ``data`` but do not fire.

    Fix: keep shapes static (pad or bucket batch and sequence lengths, fixed image sizes),
    raise ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` (default 1024) if it was lowered, and warm up
    every shape before timing.
    """

    name = "cache-miss-steady-state"
    code = "DL006"
    severity = "warning"
    defaults = {"min_misses": 1}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        ev = ctx.events
        if ev.empty:
            return
        after, how = self._after_warmup(ctx)
        if after is None:
            return
        creates = category_mask(ev["operation"], lambda v: v in ("create", "create_nested"))
        miss = creates & category_mask(ev["cache"], lambda v: "miss" in v)
        late = ev[["record", "input", "line", "kind", "problem", "time_ms"]][miss & after]
        if len(late) < self.options["min_misses"]:
            return
        hit_ms = ev["time_ms"].to_numpy()[creates & ~miss & after]
        kinds = late["kind"].astype(str).value_counts()
        shapes = late.groupby(late["kind"].astype(str))["problem"].nunique()
        listed = ", ".join(f"{n} {k}" for k, n in kinds.head(4).items())
        churn = [k for k, n in shapes.items() if n > 1]
        msg = (
            f"{len(late)} primitives were created (cache misses) after warm-up ({how}): "
            f"{listed}; {ms(float(late['time_ms'].sum()))} of creation time"
            + (
                f"; {', '.join(churn)} with {int(shapes[churn].max())} different shapes: "
                "shapes keep changing"
                if churn
                else ""
            )
        )
        yield self.finding(
            msg,
            ctx.evidence(late),
            # creation time is not in the typical iteration (execs only): it comes on top,
            # and its basis is the iteration with it
            impact_ms=float(late["time_ms"].sum()) / ctx.steady_iterations,
            basis="with_creations",
            data={
                "misses": int(len(late)),
                "creation_ms": float(late["time_ms"].sum()),
                "by_kind": {str(k): int(v) for k, v in kinds.items()},
                "distinct_shapes": {str(k): int(v) for k, v in shapes.items()},
                "cache_hits_after_warmup": int(len(hit_ms)),
                "cache_hit_creation_ms": float(np.nansum(hit_ms)),  # as Series.sum
                "steady_state": how,
            },
        )

    @staticmethod
    def _after_warmup(ctx: RuleContext) -> tuple[np.ndarray | None, str]:
        it = ctx.iterations
        n = len(ctx.events)
        if it.found:
            return it.steady.copy(), f"after {it.warmup} warm-up of {it.count} iterations"
        if it.count >= 2 and it.steady_count == 0:
            return (
                it.iteration >= 1,
                f"after the first of {it.count} iterations, all of which create primitives",
            )
        ex = ctx.execs
        if ex.empty:
            return None, ""
        first = ex["record"].iloc[0]
        again = ex.index[ex["record"] == first]
        if len(again) < 2:
            return None, ""
        pos = ctx.events.index.get_loc(again[1])
        mask = np.zeros(n, dtype=bool)
        # creates just before the second run belong to the second pass
        start = pos
        ops = str_values(ctx.events["operation"])
        while start > 0 and ops[start - 1].startswith("create"):
            start -= 1
        mask[start:] = True
        line = int(ctx.events["line"].iloc[pos])
        return mask, f"no repeating iteration; after the first pass, from line {line}"
