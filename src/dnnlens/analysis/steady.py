"""Steady state: which passes of a run are warm-up, from their structure and their time.

The iteration finder (:mod:`dnnlens.analysis.iterations`) cuts the exec stream into passes
and marks the leading passes whose *structure* is not yet steady: they create a primitive
with a cache miss, or their exec sequence is not the template. That misses a common case:
passes that run the same primitives as the others but far slower, because caches, page
faults, the thread pool and the allocator are still warming up. In the NCHW sample the
passes after the first take 100, 100 and 30 ms against a steady median of 2.9 ms.

The one definition used everywhere (rules, reports, ``diff``, ``project``, the dataset):

* **structural warm-up**: the leading passes the iteration finder marks (cache miss or a
  different sequence);
* **slow warm-up**: then, per input, the leading passes whose time (sum of their exec times)
  exceeds :data:`SLOW_WARMUP_FACTOR` times the median time of that input's structurally
  steady passes. It only applies with at least :data:`MIN_PASSES_FOR_SLOW` structurally
  steady passes, and never leaves fewer than :data:`MIN_STEADY_PASSES` steady ones. Only
  *leading* passes are warm-up: a slow pass in the middle of a run is noise, not warm-up,
  and stays (the per-primitive medians discount it);
* both together never take more passes than the run keeps steady
  (:func:`~dnnlens.analysis.iterations.max_warmup`);
* **partial**: the last pass of an input when it stops short: fewer executions than the
  input's period and not the template's sequence (a log cut by Ctrl-C, a program that
  ended mid-pass). It is neither warm-up nor steady: a per-iteration figure is a figure of
  whole passes, and a pass two thirds run would make "11 reorders per iteration" 10.43;
* **steady**: every other pass. With fewer than two steady passes there is no repeating
  iteration to speak of, and every event counts as steady state (one pass: the whole log).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dnnlens.analysis.iterations import Iterations, max_warmup

#: A leading pass (or framework step) slower than this many times the steady median is
#: warm-up. Why 3x: warm-up passes (first calls, page faults, a cold thread pool) run tens
#: of times slower than steady ones (100 ms against 2.9 ms in the NCHW sample), while
#: steady passes on a shared machine wander by up to about 2x; 3x separates the two with
#: room on both sides. The framework's steps (:mod:`.framework.steps`) use this one value.
SLOW_WARMUP_FACTOR = 3.0
#: Structurally steady passes needed before timing can call a pass warm-up.
MIN_PASSES_FOR_SLOW = 3
#: Steady passes the slow warm-up rule always leaves.
MIN_STEADY_PASSES = 2

RULE = (
    f"warm-up = leading passes that create more primitives than the median pass or run "
    f"other primitives, then leading passes slower than {SLOW_WARMUP_FACTOR:g}x the median "
    f"of the steady ones; fewer than the passes left steady"
)


@dataclass(frozen=True)
class SteadyState:
    """Passes, warm-up and the steady-state mask of one event table.

    ``iteration`` and ``steady`` are aligned with the event rows. ``passes`` counts every
    pass (warm-up and a partial last pass included); ``warmup`` = ``warmup_structural`` +
    ``warmup_slow``; ``partial`` the inputs' last passes that stopped short. ``times`` is
    :attr:`Iterations.times` with three more columns: ``slow`` (slow warm-up), ``partial``
    and ``steady``.
    """

    passes: int
    warmup_structural: int
    warmup_slow: int
    period_exec: int
    iteration: np.ndarray
    steady: np.ndarray
    times: pd.DataFrame
    partial: int = 0

    @property
    def warmup(self) -> int:
        """Leading passes that are not steady state, for either reason."""
        return self.warmup_structural + self.warmup_slow

    @property
    def steady_passes(self) -> int:
        """Passes in steady state."""
        return max(self.passes - self.warmup - self.partial, 0)

    @property
    def found(self) -> bool:
        """Whether a repeating iteration was found: two steady passes at least."""
        return self.steady_passes >= MIN_STEADY_PASSES and self.period_exec > 0

    @property
    def divisor(self) -> int:
        """Passes a steady total is divided by for a per-iteration figure (1: one pass)."""
        return self.steady_passes if self.found else 1

    @property
    def warmup_left_out(self) -> int:
        """Warm-up passes left out of the steady state (0 when the whole log is used)."""
        return self.warmup if self.found else 0

    @property
    def left_out_words(self) -> str:
        """The passes left out of the steady state, in words: ``4 warm-up`` or ``4
        warm-up, 1 partial`` (what the reports print in brackets after the passes)."""
        partial = self.partial if self.found else 0
        return f"{self.warmup_left_out} warm-up" + (f", {partial} partial" if partial else "")

    @property
    def rule(self) -> str:
        """The definition of warm-up, in words."""
        return RULE


def slow_leading(times_ms: np.ndarray) -> int:
    """How many leading passes of ``times_ms`` (structurally steady ones) are slow warm-up."""
    n = len(times_ms)
    if n < MIN_PASSES_FOR_SLOW:
        return 0
    median = float(np.median(times_ms))
    if not median > 0:
        return 0
    slow = 0
    while slow < n - MIN_STEADY_PASSES and times_ms[slow] > SLOW_WARMUP_FACTOR * median:
        slow += 1
    return slow


def _partial_last(times: pd.DataFrame, rows: np.ndarray, period: int) -> bool:
    """Whether the last of an input's passes (``rows`` of ``times``) stopped short: fewer
    executions than the input's period, not the template, after enough whole passes."""
    if len(rows) <= MIN_STEADY_PASSES or period <= 0:
        return False
    last = rows[-1]
    return not bool(times["regular"].iat[last]) and int(times["exec_count"].iat[last]) < period


def steady_state(iterations: Iterations) -> SteadyState:
    """The steady state of the event table ``iterations`` was found on (module docstring)."""
    times = iterations.times.copy()
    slow = np.zeros(len(times), dtype=bool)
    partial = np.zeros(len(times), dtype=bool)
    structural = times["structural_warmup"].to_numpy(dtype=bool)
    periods = {i.input: i.period_exec for i in iterations.inputs}
    for name, rows in times.groupby("input", sort=False).indices.items():
        if _partial_last(times, rows, periods.get(name, 0)):
            partial[rows[-1]] = True
            rows = rows[:-1]
        candidates = rows[~structural[rows]]
        k = slow_leading(times["time_ms"].to_numpy()[candidates])
        k = min(k, max(max_warmup(len(rows)) - int(structural[rows].sum()), 0))
        slow[candidates[:k]] = True
    times["slow"] = slow
    times["partial"] = partial
    times["steady"] = ~(structural | slow | partial)
    warm = np.zeros(max(iterations.count, 1), dtype=bool)
    warm[times["iteration"].to_numpy()[~times["steady"].to_numpy()]] = True
    it = iterations.iteration
    inside = it >= 0
    steady = np.zeros(len(it), dtype=bool)
    steady[inside] = ~warm[it[inside]]
    state = SteadyState(
        passes=iterations.count,
        warmup_structural=int(structural.sum()),
        warmup_slow=int(slow.sum()),
        period_exec=iterations.period_exec,
        iteration=it,
        steady=steady,
        times=times,
        partial=int(partial.sum()),
    )
    if not state.found:  # no repeating iteration: the whole log is the steady state
        return SteadyState(
            state.passes, state.warmup_structural, state.warmup_slow, state.period_exec,
            it, np.ones(len(it), dtype=bool), times, state.partial,
        )  # fmt: skip
    return state
