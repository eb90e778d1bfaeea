"""``timing.order_stats``: per record, the figures pandas' grouped ``size``, ``min``,
``median``, ``quantile(0.95)`` and ``max`` give, to the last bit, in pandas' order of first
appearance; on times with ties, NaN (untimed executions) and records without any time."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.analysis.timing import order_stats

times = st.one_of(
    st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 0.5, 1.0, 2.5]),  # ties
    st.just(float("nan")),  # an execution that printed no time
)


def pandas_figures(records: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    g = pd.Series(values).groupby(records, sort=False)
    size = g.size()
    return (
        size.index.to_numpy(), size.to_numpy(), g.min().to_numpy(), g.median().to_numpy(),
        g.quantile(0.95).to_numpy(), g.max().to_numpy(),
    )  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), times), min_size=1, max_size=80))
def test_order_stats_are_pandas_figures_to_the_last_bit(rows: list[tuple[int, float]]) -> None:
    records = np.array([r for r, _ in rows], dtype=np.int32)
    values = np.array([t for _, t in rows], dtype=np.float64)
    mine, theirs = order_stats(records, values), pandas_figures(records, values)
    names = ("records", "count", "min", "median", "p95", "max")
    for name, a, b in zip(names, mine, theirs, strict=True):
        assert np.array_equal(a.astype(float), b.astype(float), equal_nan=True), (name, a, b)


def test_a_hand_count() -> None:
    """Record 7: 4, 1, 3, 2 ms (sorted 1 2 3 4: median 2.5; 0.95 x 3 = 2.85, so 3 + 0.85 x
    (4 - 3) = 3.85); record 2: one untimed run (count 1, no figure)."""
    ids, count, low, median, p95, high = order_stats(
        np.array([7, 2, 7, 7, 7]), np.array([4.0, np.nan, 1.0, 3.0, 2.0])
    )
    assert ids.tolist() == [7, 2] and count.tolist() == [4, 1]
    assert low[0] == 1.0 and median[0] == 2.5 and high[0] == 4.0
    assert abs(p95[0] - 3.85) < 1e-12
    assert np.isnan([low[1], median[1], p95[1], high[1]]).all()
