"""Primitive creations that miss the cache where the iteration repeats: one definition.

Creating a primitive (``create:cache_miss``, ``create_nested`` too) JIT-compiles its
kernel. In the first pass that is warm-up; in the steady passes it is a cost of every pass,
which no exec time shows (creation times are not part of the typical iteration). The scope:

* with steady passes (:mod:`dnnlens.analysis.steady`): the creations in them, per steady
  pass (a run whose every pass creates its primitives has steady passes too: the cache
  off, or shapes that keep changing);
* with passes but none steady: the creations after the first pass, the whole log being
  one iteration;
* without passes: none can be told from the first creation of each primitive.

The cache-miss rule and ``project --remove cache-misses`` read this one fact
(``Analysis.creations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import category_mask, str_values
from dnnlens.analysis.iterations import Iterations
from dnnlens.analysis.steady import SteadyState

__all__ = ["Creations", "steady_creations"]


@dataclass
class Creations:
    """Primitive creations that miss the primitive cache where the iteration repeats.

    ``by_kind`` maps a kind to (misses, their summed ms, the first one's ``path:line``) in
    ``scope`` (in words); ``passes`` is what they are divided by to give ms per iteration
    (the steady passes; 1 for the whole log); ``hit_ms`` the median time of a cache hit
    creation in the same scope (``None``: none there); ``rows`` the event rows of the
    misses and ``hit_rows`` of the hits. ``found`` is False when the log has no passes at
    all.
    """

    found: bool
    passes: int
    scope: str = ""
    by_kind: dict[str, tuple[int, float, str]] = field(default_factory=dict)
    hit_ms: float | None = None
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hit_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def misses(self) -> int:
        """Cache misses in the scope."""
        return sum(n for n, _, _ in self.by_kind.values())

    @property
    def total_ms(self) -> float:
        """Creation time of the misses in the scope."""
        return sum(t for _, t, _ in self.by_kind.values())

    @property
    def ms(self) -> float:
        """Creation time of the misses per iteration."""
        return self.total_ms / max(self.passes, 1)


def steady_creations(events: pd.DataFrame, steady: SteadyState, it: Iterations) -> Creations:
    """The creations of ``events`` (with ``steady``/``iteration`` columns) in the scope
    the module docstring defines."""
    if not len(events):
        return Creations(False, 1)
    if steady.found:
        scope = events["steady"].to_numpy(dtype=bool)
        where = f"in the {steady.divisor} steady passes after {steady.warmup} warm-up"
        passes = steady.divisor
    elif it.count >= 2:
        scope = events["iteration"].to_numpy() >= 1
        where = (
            f"after the first of the log's {it.count} passes (none is steady, so the whole "
            "log is the iteration)"
        )
        passes = 1
    else:
        return Creations(False, 1)
    creates = category_mask(events["operation"], lambda v: v in ("create", "create_nested"))
    miss = category_mask(events["cache"], lambda v: "miss" in v)
    hit_rows = np.flatnonzero(scope & creates & ~miss)
    hits = events["time_ms"].to_numpy(dtype=np.float64)[hit_rows]
    hits = hits[np.isfinite(hits)]
    rows = np.flatnonzero(scope & creates & miss)
    late = events.iloc[rows]
    by_kind: dict[str, tuple[int, float, str]] = {}
    times = np.nan_to_num(late["time_ms"].to_numpy(dtype=np.float64))
    inputs, lines = str_values(late["input"]), late["line"].to_numpy()
    for i, (kind, t) in enumerate(zip(str_values(late["kind"]), times, strict=True)):
        n, total, first = by_kind.get(kind, (0, 0.0, f"{inputs[i]}:{int(lines[i])}"))
        by_kind[kind] = (n + 1, total + float(t), first)
    hit_ms = float(np.median(hits)) if len(hits) else None
    return Creations(True, passes, where, by_kind, hit_ms, rows, hit_rows)
