"""The one way dnnlens writes a time and a share, in prose and in table cells.

Prose (a finding's message, a headline, a chart label) carries the unit and two or three
significant digits: ``0.81 ms``, ``12.3 ms``, ``1,234 ms``; ``35%``, ``0.4%``. A table cell
carries a fixed number of decimals so that a column lines up and a reader can add it up by
hand: ``1,234.567``; ``35.0%``. Every view uses these, so the same figure reads the same
everywhere. ``None`` and non-finite values are ``-``.
"""

from __future__ import annotations

import math

__all__ = ["ms", "ms_cell", "pct", "pct_cell", "speed"]


def _bad(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


def ms(value: float | None) -> str:
    """A time in prose: ``0.812 ms`` below 0.1 ms is ``0.081 ms``, ``12.3 ms``, ``1,234 ms``."""
    if _bad(value):
        return "-"
    assert value is not None
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f} ms"
    if size >= 10:
        return f"{value:.1f} ms"
    if size >= 0.1:
        return f"{value:.2f} ms"
    return f"{value:.3f} ms"


def ms_cell(value: float | None) -> str:
    """A time in a table cell (ms, no unit): three decimals and thousands separators."""
    return "-" if _bad(value) else f"{value:,.3f}"


def pct(value: float | None) -> str:
    """A share in prose: ``35%``, ``0.4%`` below one percent."""
    if _bad(value):
        return "-"
    assert value is not None
    return f"{value:.1%}" if abs(value) < 0.01 else f"{value:.0%}"


def pct_cell(value: float | None) -> str:
    """A share in a table cell: one decimal, ``35.0%``."""
    return "-" if _bad(value) else f"{100 * value:.1f}%"  # type: ignore[operator]


def speed(ratio: float | None) -> str:
    """A speed ratio: ``1.97x faster`` or ``1.23x slower`` (``ratio`` = old / new time)."""
    if _bad(ratio) or not ratio:
        return "-"
    assert ratio is not None
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
