"""DL006 cache-miss-steady-state."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext


class CacheMissSteadyState(Rule):
    """Primitives are still created (primitive cache misses) after warm-up.

    Creating a primitive (``create:cache_miss``) JIT-compiles its kernel: tens to hundreds
    of microseconds, sometimes milliseconds. It should happen in the first pass only;
    misses later mean the shapes keep changing (dynamic batch or sequence length, varying
    image sizes), or the primitive cache is too small or disabled
    (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``). Which creations count is the analysis's one
    definition (:mod:`dnnlens.analysis.creations`: the steady passes). Its cost is their
    creation time per steady pass, a part of the pass with its creations (its basis: exec
    times do not hold creation time). Recreated primitives that hit the cache
    (``create:cache_hit``) are counted in
    ``data`` but do not fire.

    Saving (``unknown``): a larger cache saves the creations only when the shapes repeat,
    static shapes only when the program can pad or bucket them; which holds is not in the
    log, so the finding ranks by its creation time after those whose saving is known.

    Fix: keep shapes static (pad or bucket batch and sequence lengths, fixed image sizes),
    raise ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` (default 1024) if it was lowered, and warm up
    every shape before timing.
    """

    name = "cache-miss-steady-state"
    code = "DL006"
    severity = "warning"
    defaults = {"min_misses": 1}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        cr = ctx.analysis.creations
        if not cr.found or cr.misses < self.options["min_misses"]:
            return
        ev = ctx.events
        late = ev[["record", "input", "line", "kind", "problem", "time_ms"]].iloc[cr.rows]
        kinds = late["kind"].astype(str).value_counts()
        shapes = late.groupby(late["kind"].astype(str))["problem"].nunique()
        listed = ", ".join(f"{n} {k}" for k, n in kinds.head(4).items())
        churn = [k for k, n in shapes.items() if n > 1]
        hit_ms = ev["time_ms"].to_numpy()[cr.hit_rows]
        msg = (
            f"{cr.misses} primitives were created (cache misses) {cr.scope}: "
            f"{listed}; {ms(cr.total_ms)} of creation time"
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
            impact_ms=cr.ms,
            basis="with_creations",
            saving=Saving.unknown("the log does not tell whether the shapes could repeat"),
            data={
                "misses": cr.misses,
                "creation_ms": cr.total_ms,
                "by_kind": {str(k): int(v) for k, v in kinds.items()},
                "distinct_shapes": {str(k): int(v) for k, v in shapes.items()},
                "cache_hits_after_warmup": int(len(hit_ms)),
                "cache_hit_creation_ms": float(np.nansum(hit_ms)),  # as Series.sum
                "steady_state": cr.scope,
            },
        )
