"""Per-primitive statistics: one row per distinct line, built in bulk or as events stream in.

The summary needs, for every distinct event line (a ``record``: the line without its time and
timestamp), how often it ran and how long it took. Bulk analysis computes that from the event
table; streaming analysis (:class:`StatsAccumulator`) folds each chunk of events into running
sums, so memory depends on the number of distinct lines, not on the length of the log.

``stats`` frame columns (index: record id):

========== ===============================================================================
count      event lines of this record
timed      of which carried a time field
time_ms    sum of their times
min_ms     smallest time (NaN when untimed)
max_ms     largest time
first_input input path of the first occurrence
first_line line number of the first occurrence
========== ===============================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

STATS_COLUMNS = ("count", "timed", "time_ms", "min_ms", "max_ms", "first_input", "first_line")


def stats_from_events(events: pd.DataFrame) -> pd.DataFrame:
    """The stats frame of an event table (exact)."""
    import pandas as pd

    if events.empty:
        return _empty()
    g = events["time_ms"].groupby(events["record"], sort=True)
    sums = g.sum()
    # record ids are small integers: counts and first rows are array updates
    rec = events["record"].to_numpy()
    timed = ~np.isnan(events["time_ms"].to_numpy(dtype=np.float64))
    present = sums.index.to_numpy()
    size = int(rec.max()) + 1
    frame = pd.DataFrame(
        {
            "count": np.bincount(rec, minlength=size)[present].astype(np.int64),
            "timed": np.bincount(rec[timed], minlength=size)[present].astype(np.int64),
            "time_ms": sums,
            "min_ms": g.min(),
            "max_ms": g.max(),
        },
        index=sums.index,
    )
    rows = first_rows(rec, present)
    frame["first_input"] = events["input"].iloc[rows].astype(str).set_axis(frame.index)
    frame["first_line"] = events["line"].to_numpy()[rows].astype(np.int64)
    return frame


def first_rows(records: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of the first occurrence of each id of ``wanted`` in ``records`` (ids >= 0).

    Reads growing chunks from the start until every wanted id has been seen: a log repeats
    its lines, so that is usually a few thousand rows of millions.
    """
    n = len(records)
    first = np.full(int(records.max()) + 1 if n else 0, n, dtype=np.int64)
    begin, step = 0, 4096
    while begin < n:
        end = min(begin + step, n)
        np.minimum.at(first, records[begin:end], np.arange(begin, end))
        if (first[wanted] < n).all():
            break
        begin, step = end, 2 * step
    return first[wanted]


def _empty() -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in STATS_COLUMNS})
    frame["first_input"] = frame["first_input"].astype(object)
    frame.index.name = "record"
    return frame


class StatsAccumulator:
    """Running per-record statistics, fed one chunk of events at a time."""

    def __init__(self) -> None:
        self._count = np.zeros(0, dtype=np.int64)
        self._timed = np.zeros(0, dtype=np.int64)
        self._sum = np.zeros(0, dtype=np.float64)
        self._min = np.zeros(0, dtype=np.float64)
        self._max = np.zeros(0, dtype=np.float64)
        self._first_line = np.zeros(0, dtype=np.int64)
        self._first_input: list[str | None] = []

    def _grow(self, size: int) -> None:
        old = len(self._count)
        if size <= old:
            return
        extra = size - old
        self._count = np.concatenate([self._count, np.zeros(extra, dtype=np.int64)])
        self._timed = np.concatenate([self._timed, np.zeros(extra, dtype=np.int64)])
        self._sum = np.concatenate([self._sum, np.zeros(extra)])
        self._min = np.concatenate([self._min, np.full(extra, np.inf)])
        self._max = np.concatenate([self._max, np.full(extra, -np.inf)])
        self._first_line = np.concatenate([self._first_line, np.full(extra, -1, np.int64)])
        self._first_input.extend([None] * extra)

    def add(self, path: str, lines: np.ndarray, records: np.ndarray, times: np.ndarray) -> None:
        """Fold one chunk of events (parallel arrays) into the running statistics."""
        if len(records) == 0:
            return
        self._grow(int(records.max()) + 1)
        size = len(self._count)
        counts = np.bincount(records, minlength=size)
        self._count += counts
        timed = ~np.isnan(times)
        self._timed += np.bincount(records[timed], minlength=size)
        self._sum += np.bincount(records[timed], weights=times[timed], minlength=size)
        np.minimum.at(self._min, records[timed], times[timed])
        np.maximum.at(self._max, records[timed], times[timed])
        present = np.flatnonzero(counts)
        new = present[self._first_line[present] < 0]
        if len(new):  # first seen here: their first lines (only their events are looked at)
            is_new = np.zeros(size, dtype=bool)
            is_new[new] = True
            at = np.flatnonzero(is_new[records])
            uniq, first = np.unique(records[at], return_index=True)
            self._first_line[uniq] = lines[at[first]]
            for rid in uniq:
                self._first_input[rid] = path

    def merge(self, other: StatsAccumulator, ids: np.ndarray, line_offset: int) -> None:
        """Fold in ``other``, the statistics of the next events of the inputs (folded in
        another process): ``ids`` maps its record ids to these, ``line_offset`` shifts its
        line numbers (of the same input as its first events)."""
        present = np.flatnonzero(other._count)
        if not len(present):
            return
        into = ids[present]
        self._grow(int(into.max()) + 1)
        self._count[into] += other._count[present]
        self._timed[into] += other._timed[present]
        self._sum[into] += other._sum[present]
        self._min[into] = np.minimum(self._min[into], other._min[present])
        self._max[into] = np.maximum(self._max[into], other._max[present])
        new = self._first_line[into] < 0
        self._first_line[into[new]] = other._first_line[present[new]] + line_offset
        for rid, src in zip(into[new].tolist(), present[new].tolist(), strict=True):
            self._first_input[rid] = other._first_input[src]

    def frame(self) -> pd.DataFrame:
        """The stats frame of everything added so far."""
        import pandas as pd

        seen = np.flatnonzero(self._count)
        if len(seen) == 0:
            return _empty()
        mins = np.where(np.isinf(self._min[seen]), np.nan, self._min[seen])
        maxs = np.where(np.isinf(self._max[seen]), np.nan, self._max[seen])
        frame = pd.DataFrame(
            {
                "count": self._count[seen],
                "timed": self._timed[seen],
                "time_ms": self._sum[seen],
                "min_ms": mins,
                "max_ms": maxs,
                "first_input": [self._first_input[r] for r in seen],
                "first_line": self._first_line[seen],
            },
            index=pd.Index(seen, name="record"),
        )
        return frame
