"""The streaming accumulator must agree with the bulk statistics, chunking notwithstanding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.model.stats import StatsAccumulator, stats_from_events
from dnnlens.reading import load

SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs" / "convnet_nchw_train.log"


def _accumulate(events: pd.DataFrame, cuts: list[int]) -> pd.DataFrame:
    acc = StatsAccumulator()
    bounds = [0, *sorted(set(c % (len(events) + 1) for c in cuts)), len(events)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = events.iloc[a:b]
        acc.add(
            str(SAMPLE),
            part["line"].to_numpy(),
            part["record"].to_numpy(np.int64),
            part["time_ms"].to_numpy(),
        )
    return acc.frame()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_chunked_equals_bulk(cuts: list[int]) -> None:
    events = load([str(SAMPLE)]).events
    bulk = stats_from_events(events)
    streamed = _accumulate(events, cuts)
    assert list(streamed.index) == list(bulk.index)
    for col in ("count", "timed", "first_line"):
        assert streamed[col].tolist() == bulk[col].tolist()
    for col in ("time_ms", "min_ms", "max_ms"):
        np.testing.assert_allclose(streamed[col].to_numpy(), bulk[col].to_numpy())
    assert streamed["first_input"].tolist() == bulk["first_input"].tolist()


def test_untimed_events_are_counted_not_summed() -> None:
    acc = StatsAccumulator()
    acc.add("x", np.array([1, 2, 3]), np.array([0, 0, 1]), np.array([1.5, np.nan, np.nan]))
    f = acc.frame()
    assert f.loc[0, "count"] == 2 and f.loc[0, "timed"] == 1 and f.loc[0, "time_ms"] == 1.5
    assert f.loc[1, "count"] == 1 and f.loc[1, "timed"] == 0 and np.isnan(f.loc[1, "min_ms"])
