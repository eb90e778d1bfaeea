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

from dnnlens.analysis.shares import share
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

    def share(self, part_ms: float | None) -> float | None:
        """``part_ms`` as a share of the typical iteration (``None`` without one or
        without a part: :mod:`.shares`)."""
        return share(part_ms, self.ms)

    def by_kind(self) -> dict[str, float]:
        """The typical iteration per primitive kind, largest first."""
        if self.terms.empty:
            return {}
        sums = self.terms.groupby("kind", sort=False)["iter_ms"].sum()
        return {str(k): float(v) for k, v in sums.sort_values(ascending=False).items()}


#: A position whose median is within this many timer ticks (:func:`timer_tick`) is
#: timed at the timer's resolution: its times are a handful of tick multiples, their median
#: is off by up to half a tick, and over many such positions (TensorFlow's ``gemm_api``
#: calls of a microsecond each) that is most of the iteration.
RESOLUTION_TICKS = 8


def _to_median_pass(
    times: np.ndarray, passes_of: np.ndarray, run: np.ndarray, per: np.ndarray
) -> np.ndarray:
    """``run`` scaled so that the terms add up to the median steady pass.

    When the passes' sizes change (a batch or sequence length that varies), a pass costs
    what its sizes cost, and every position of it moves together: the typical pass is the
    median pass. Medians taken position by position pick sizes independently and add up
    to a pass of no size at all; their proportions still say where a pass's time goes.
    """
    total = float((per * run).sum())
    if not total > 0:
        return run
    _, index = np.unique(passes_of, return_inverse=True)
    sums = np.bincount(index, weights=np.nan_to_num(times))
    return run * (float(np.median(sums)) / total) if len(sums) else run


#: Positions at the timer's resolution are measured together only when they are this share
#: of the iteration or more: each median is off by at most half a tick, half its own value,
#: so below this share the iteration moves less than half of it (5%), and the per-position
#: medians stay comparable position by position.
RESOLUTION_SHARE = 0.10


def timer_tick(times: np.ndarray) -> float | None:
    """The timer's resolution as the times show it: the smallest difference between two
    distinct times printed (oneDNN's own clock prints multiples of 1/4096 ms, TensorFlow's
    ``gemm_api`` lines of 1/2048 ms); None with fewer than two distinct times."""
    distinct = np.unique(times[np.isfinite(times)])
    if len(distinct) < 2:
        return None
    return float(np.diff(distinct).min())


def _at_resolution(
    node: np.ndarray,
    times: np.ndarray,
    passes_of: np.ndarray,
    at: np.ndarray,
    median: np.ndarray,
    runs: np.ndarray,
    run: np.ndarray,
    per: np.ndarray,
) -> np.ndarray:
    """``run`` with the positions timed at the timer's resolution measured together.

    Times a few ticks long only mean something summed: their sum per steady pass, its
    median over the passes (robust to a pass with spikes, as every median here), shared
    out over the positions by their summed times. Without such positions, ``run``.
    """
    tick = timer_tick(times)
    if tick is None:
        return run
    coarse = (runs >= MIN_RUNS_FOR_MEDIAN) & (median <= RESOLUTION_TICKS * tick)
    if coarse.sum() < 2:
        return run
    if (per[coarse] * median[coarse]).sum() < RESOLUTION_SHARE * (per * run).sum():
        return run  # their bias (half a tick each at most) moves the iteration < 5%
    in_coarse = np.isin(node, at[coarse])
    t = np.nan_to_num(times[in_coarse])
    _, pass_index = np.unique(passes_of[in_coarse], return_inverse=True)
    steady_passes = max(int(round(float(runs[coarse].max() / per[coarse].max()))), 1)
    per_pass = np.bincount(pass_index, weights=t, minlength=steady_passes)
    if len(per_pass) < steady_passes:
        per_pass = np.concatenate([per_pass, np.zeros(steady_passes - len(per_pass))])
    typical = float(np.median(per_pass))
    total = np.bincount(np.searchsorted(at, node[in_coarse]), weights=t, minlength=len(at))
    whole = float(total[coarse].sum())
    if not whole > 0:
        return run
    out = run.copy()
    out[coarse] = typical * total[coarse] / whole / per[coarse]
    return out


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
    exec_pass: np.ndarray | None = None,
    sizes_vary: bool = False,
) -> TypicalIteration:
    """The typical iteration from the node of every exec row, its time and steady flag
    (``exec_pass``: the pass of each exec row, for the positions timed at the timer's
    resolution, :func:`_at_resolution`, and for passes whose sizes vary,
    :func:`_to_median_pass`)."""
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
    if exec_pass is not None:
        run = _at_resolution(node, t, exec_pass[exec_steady], at, median, runs, run, per)
        if sizes_vary:
            run = _to_median_pass(t, exec_pass[exec_steady], run, per)
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
