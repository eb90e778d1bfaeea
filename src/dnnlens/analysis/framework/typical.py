"""The typical cost per steady step: per-op medians times calls per step, additive.

The statistic, as on the oneDNN side (``typical_ms`` = executions x median): group the
rows of the steady steps by what they run (op name, input shapes, the phase they belong to
and which occurrence of that name and shapes in its step they are: the third
``ToCopyBackward0`` of a step is one thing, the fourth another, even without shapes), take
each group's *median* time and multiply by its calls per steady step (calls / steady
steps). A scheduler spike inflates one call, never the median, and the
parts add up: the typical step is the sum of its segments' typical times plus the median
untracked time (the time between segments: Python, the profiler), so the phases, which
partition the segments, add up to the step exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TYPICAL_COLUMNS = ("key", "calls", "calls_per_step", "median_us", "ms_per_step")


def typical(keys: np.ndarray, values_us: np.ndarray, steady_steps: int) -> pd.DataFrame:
    """Per distinct key: calls, calls per steady step, median value (us) and the typical
    milliseconds per step (calls per step x median). Rows in order of first appearance."""
    if not len(keys) or steady_steps <= 0:
        return pd.DataFrame({c: [] for c in TYPICAL_COLUMNS})
    frame = pd.DataFrame({"key": keys, "value": values_us})
    g = frame.groupby("key", sort=False)["value"]
    calls = g.size()
    median = g.median()
    per_step = calls.to_numpy() / steady_steps
    return pd.DataFrame(
        {
            "key": calls.index.to_numpy(),
            "calls": calls.to_numpy(),
            "calls_per_step": per_step,
            "median_us": median.to_numpy(),
            "ms_per_step": per_step * median.to_numpy() / 1e3,
        }
    )


def typical_ms(keys: np.ndarray, values_us: np.ndarray, steady_steps: int) -> float:
    """The sum of :func:`typical` over its keys: a typical total per step, in ms."""
    table = typical(keys, values_us, steady_steps)
    return float(table["ms_per_step"].sum()) if len(table) else 0.0


def compose(*parts: tuple[np.ndarray, int]) -> np.ndarray:
    """One int64 key from several code arrays, each given with its number of values."""
    key = np.zeros(len(parts[0][0]), dtype=np.int64)
    for codes, size in parts:
        key = key * (int(size) + 1) + codes.astype(np.int64)
    return key


def split(key: np.ndarray, *sizes: int) -> list[np.ndarray]:
    """The code arrays back from :func:`compose`'s keys (``sizes`` in the same order)."""
    out = []
    rest = key.astype(np.int64)
    for size in reversed(sizes):
        out.append(rest % (int(size) + 1))
        rest = rest // (int(size) + 1)
    return out[::-1]


def occurrences(step: np.ndarray, codes: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Per row, which occurrence (0, 1, ...) of its code it is within its step, in time
    order (rows outside every step, ``step`` -1, count among themselves)."""
    n = len(step)
    out = np.zeros(n, dtype=np.int32)
    if not n:
        return out
    order = np.lexsort((ts, codes, step))
    s, c = step[order], codes[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (s[1:] != s[:-1]) | (c[1:] != c[:-1])
    first = np.flatnonzero(starts)
    group_start = first[np.cumsum(starts) - 1]
    out[order] = np.arange(n) - group_start
    return out
