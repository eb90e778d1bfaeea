"""Small helpers shared by the built-in rules: formatting and implementation-name tests."""

from __future__ import annotations

import pandas as pd

from dnnlens.fmt import ms, pct
from dnnlens.parsers.fields import is_reference

__all__ = ["is_reference", "ms", "pct", "ratio", "top_records"]


def ratio(part: float, whole: float) -> float:
    """``part / whole``, 0 when ``whole`` is not positive."""
    return float(part) / float(whole) if whole and whole > 0 else 0.0


def top_records(frame: pd.DataFrame, column: str, limit: int = 3) -> list[int]:
    """Record ids of the rows with the largest ``column``."""
    if frame.empty:
        return []
    return [int(r) for r in frame.sort_values(column, ascending=False).index[:limit]]
