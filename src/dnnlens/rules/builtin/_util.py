"""Small helpers shared by the built-in rules: formatting and implementation-name tests."""

from __future__ import annotations

import pandas as pd


def ms(value: float) -> str:
    """``0.81 ms``, ``12.3 ms``, ``0.004 ms``: milliseconds with 2-3 significant digits."""
    if value >= 10:
        return f"{value:.1f} ms"
    if value >= 0.1:
        return f"{value:.2f} ms"
    return f"{value:.3f} ms"


def pct(value: float) -> str:
    """``35%`` (``0.4%`` below one percent)."""
    return f"{value:.1%}" if value < 0.01 else f"{value:.0%}"


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
