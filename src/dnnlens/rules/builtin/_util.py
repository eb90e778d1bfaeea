"""Small helpers shared by the built-in rules: formatting and implementation-name tests."""

from __future__ import annotations

import pandas as pd

from dnnlens.fmt import ms, pct

__all__ = ["is_reference", "ms", "pct", "ratio", "top_records"]


def ratio(part: float, whole: float) -> float:
    """``part / whole``, 0 when ``whole`` is not positive."""
    return float(part) / float(whole) if whole and whole > 0 else 0.0


def is_reference(impl: str) -> bool:
    """Whether an implementation name is a reference (unoptimised) kernel.

    ``ref``, ``ref:any``, ``gemm:ref``, ``ocl:ref:any``, ``ref_int8``, ``simple:any``,
    ``simple_concat`` ...: any ``:``-part that is ``ref`` or starts with ``ref_``, or a
    name that starts with ``simple``.
    """
    parts = str(impl).split(":")
    return parts[0].startswith("simple") or any(p == "ref" or p.startswith("ref_") for p in parts)


def top_records(frame: pd.DataFrame, column: str, limit: int = 3) -> list[int]:
    """Record ids of the rows with the largest ``column``."""
    if frame.empty:
        return []
    return [int(r) for r in frame.sort_values(column, ascending=False).index[:limit]]
