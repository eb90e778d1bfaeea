"""Per-primitive timing statistics and the one *typical iteration*.

The machines that produce verbose logs are noisy: a 0.01 ms reorder sometimes prints 8 ms.
Every per-primitive figure therefore comes with a *typical run*: the median of its
executions, or its fastest run when it ran fewer than :data:`MIN_RUNS_FOR_MEDIAN` times
(with two runs a median is a mean, and one spike decides it).

**The typical iteration** is built from the positions of one pass (the nodes of the op
graph, :mod:`dnnlens.analysis.graph`: position ``k`` of the repeating sequence, plus one node
per extra execution that not every pass runs), over the steady passes
(:mod:`dnnlens.analysis.steady`):

    typical_iteration_ms = sum over nodes n of
                           (steady executions of n / steady passes) x typical run of n

For a log whose steady passes all run the same sequence this is: cut the exec lines into
passes, drop the warm-up passes, take the median time of each position, add them up.

Why this formula and not the median of the passes' sums: it is robust to a spike in any
one execution (a pass sum is not: one 8 ms reorder moves it), and it is *additive*: the
reorders' part, the weight reorders' part, the part of each kind and each finding's impact
are sums over a subset of the same terms, so the parts add up to the whole and every share
is a share of the same figure. Why per position and not per distinct line: the same line
can cost different amounts at different places in a pass (three identical gradient
reorders of a training step take 0.5, 2.1 and 2.1 ms, the first one on warm caches), and
a median over all of them would give each the cost of the others. The per-pass sums are
still shown (iterations tables), as what they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dnnlens.model import ParsedLog
from dnnlens.model.stats import first_rows

#: Below this many runs a primitive's typical run is its fastest, not its median.
MIN_RUNS_FOR_MEDIAN = 3

#: Columns of :func:`record_stats` frames (index: record id).
RECORD_STAT_COLUMNS = (
    "kind", "impl", "count", "time_ms", "mean_ms", "median_ms", "p95_ms", "max_ms",
    "run_ms", "typical_ms", "path", "line",
)  # fmt: skip


def record_stats(execs: pd.DataFrame, log: ParsedLog) -> pd.DataFrame:
    """Per-record timing of some exec rows: count, sums, mean/median/p95/max, typical run.

    ``run_ms`` is the typical run (median, or fastest below :data:`MIN_RUNS_FOR_MEDIAN`
    runs); ``typical_ms`` = count x run_ms; ``path``/``line`` locate the first exec. Sorted
    by ``time_ms``, largest first.
    """
    cols = list(RECORD_STAT_COLUMNS)
    if execs.empty:
        return pd.DataFrame(columns=cols)
    g = execs["time_ms"].groupby(execs["record"], sort=False)
    size = g.size()
    count, median = size.to_numpy(), g.median().to_numpy()
    run = np.where(count >= MIN_RUNS_FOR_MEDIAN, median, g.min().to_numpy())
    rows = first_rows(execs["record"].to_numpy(), size.index.to_numpy())
    recs = [log.records[int(r)] for r in size.index]
    frame = pd.DataFrame(
        {
            "kind": [r.kind for r in recs],
            "impl": [r.impl for r in recs],
            "count": count,
            "time_ms": g.sum().to_numpy(),
            "mean_ms": g.mean().to_numpy(),
            "median_ms": median,
            "p95_ms": g.quantile(0.95).to_numpy(),
            "max_ms": g.max().to_numpy(),
            "run_ms": run,
            "typical_ms": count * np.where(np.isnan(run), 0.0, run),
            "path": execs["input"].iloc[rows].astype(str).to_numpy(),
            "line": execs["line"].to_numpy()[rows].astype(np.int64),
        },
        index=size.index,
        columns=cols,
    )
    return frame.sort_values("time_ms", ascending=False, kind="stable")


@dataclass(frozen=True)
class TypicalIteration:
    """The typical steady iteration and its terms (see the module docstring).

    ``terms`` has one row per node of the op graph that ran in steady state: ``node``,
    ``record``, ``kind``, ``impl``, ``steady_count``, ``run_ms`` (typical run), ``median_ms``,
    ``p95_ms``, ``per_iteration`` (steady executions per steady pass) and ``iter_ms``
    (per_iteration x run_ms). ``by_record`` is ``iter_ms`` summed per distinct line;
    ``ms`` the sum of ``iter_ms``; ``passes`` the steady passes divided by (1 when no
    repeating iteration was found: the whole log is one).
    """

    ms: float
    passes: int
    terms: pd.DataFrame
    by_record: pd.Series

    def part_ms(self, records: object) -> float:
        """The part of the typical iteration spent in some records (ids)."""
        ids = [int(r) for r in records]  # type: ignore[attr-defined]
        if not ids or self.by_record.empty:
            return 0.0
        at = self.by_record.reindex(pd.Index(ids).unique())
        return float(np.nansum(at.to_numpy()))

    def share(self, part_ms: float | None) -> float:
        """``part_ms`` as a share of the typical iteration (0 without one)."""
        return float(part_ms or 0.0) / self.ms if self.ms > 0 else 0.0

    def by_kind(self) -> dict[str, float]:
        """The typical iteration per primitive kind, largest first."""
        if self.terms.empty:
            return {}
        sums = self.terms.groupby("kind", sort=False)["iter_ms"].sum()
        return {str(k): float(v) for k, v in sums.sort_values(ascending=False).items()}


TERM_COLUMNS = (
    "node", "record", "kind", "impl", "steady_count", "run_ms", "median_ms", "p95_ms",
    "per_iteration", "iter_ms",
)  # fmt: skip


def typical_iteration(
    node_names: list[str],
    node_kind: list[str],
    node_impl: list[str],
    node_record: np.ndarray,
    exec_node: np.ndarray,
    exec_time: np.ndarray,
    exec_steady: np.ndarray,
    passes: int,
) -> TypicalIteration:
    """The typical iteration from the node of every exec row, its time and steady flag."""
    node = exec_node[exec_steady]
    t = exec_time[exec_steady]
    if not len(node):
        empty = pd.DataFrame(columns=list(TERM_COLUMNS))
        return TypicalIteration(0.0, passes, empty, pd.Series(dtype="float64"))
    g = pd.Series(t).groupby(node, sort=True)
    count = g.size()
    at = count.index.to_numpy()
    median = g.median().to_numpy()
    runs = count.to_numpy()
    run = np.where(runs >= MIN_RUNS_FOR_MEDIAN, median, g.min().to_numpy())
    run = np.where(np.isnan(run), 0.0, run)
    per = runs / max(passes, 1)
    terms = pd.DataFrame(
        {
            "node": [node_names[i] for i in at],
            "record": node_record[at].astype(np.int64),
            "kind": [node_kind[i] for i in at],
            "impl": [node_impl[i] for i in at],
            "steady_count": runs.astype(np.int64),
            "run_ms": run,
            "median_ms": median,
            "p95_ms": g.quantile(0.95).to_numpy(),
            "per_iteration": per,
            "iter_ms": per * run,
        },
        columns=list(TERM_COLUMNS),
    )
    by_record = terms.groupby("record", sort=False)["iter_ms"].sum()
    return TypicalIteration(float(terms["iter_ms"].sum()), passes, terms, by_record)
