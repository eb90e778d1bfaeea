"""The one way dnnlens writes a time and a share, in prose and in table cells.

Prose (a finding's message, a headline, a chart label) carries the unit and two or three
significant digits: ``0.81 ms``, ``12.3 ms``, ``1,234 ms``; ``35%``, ``0.4%``. A table cell
carries a fixed number of decimals so that a column lines up and a reader can add it up by
hand: ``1,234.567``; ``35.0%``. Every view uses these, so the same figure reads the same
everywhere. ``None`` and non-finite values are ``-``.
"""

from __future__ import annotations

import math

__all__ = ["ms", "ms_cell", "pct", "pct_cell", "signed_pct", "speed"]


def _bad(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


#: Past this a figure is written with three significant digits and an exponent
#: (``1.00e+300``): the digits of a 1e300 ratio say nothing and fill a terminal.
HUGE = 1e9


def _huge(value: float) -> bool:
    return abs(value) >= HUGE


def ms(value: float | None) -> str:
    """A time in prose: ``0.812 ms`` below 0.1 ms is ``0.081 ms``, ``12.3 ms``, ``1,234 ms``."""
    if _bad(value):
        return "-"
    assert value is not None
    size = abs(value)
    if _huge(value):
        return f"{value:.3g} ms"
    if size >= 1000:
        return f"{value:,.0f} ms"
    if size >= 10:
        return f"{value:.1f} ms"
    if size >= 0.1:
        return f"{value:.2f} ms"
    return f"{value:.3f} ms"


def ms_cell(value: float | None) -> str:
    """A time in a table cell (ms, no unit): three decimals and thousands separators."""
    if _bad(value):
        return "-"
    assert value is not None
    return f"{value:.3g}" if _huge(value) else f"{value:,.3f}"


def pct(value: float | None) -> str:
    """A share in prose: ``35%``, ``0.4%`` below one percent."""
    if _bad(value):
        return "-"
    assert value is not None
    if _huge(100 * value):
        return f"{100 * value:.3g}%"
    return f"{value:.1%}" if abs(value) < 0.01 else f"{value:.0%}"


def pct_cell(value: float | None) -> str:
    """A share in a table cell: one decimal, ``35.0%``."""
    if _bad(value):
        return "-"
    assert value is not None
    return f"{100 * value:.3g}%" if _huge(100 * value) else f"{100 * value:.1f}%"


def speed(ratio: float | None) -> str:
    """A speed ratio: ``1.97x faster`` or ``1.23x slower`` (``ratio`` = old / new time)."""
    if _bad(ratio) or not ratio:
        return "-"
    assert ratio is not None
    times = ratio if ratio >= 1 else 1 / ratio
    if not math.isfinite(times):  # 1 / 1e-320
        return "-"
    text = f"{times:.3g}" if _huge(times) else f"{times:.2f}"
    return f"{text}x faster" if ratio >= 1 else f"{text}x slower"


def signed_pct(fraction: float | None) -> str:
    """A change as a signed share in a table cell: ``+12.3%``, ``-4.0%``."""
    if _bad(fraction):
        return "-"
    assert fraction is not None
    value = 100 * fraction
    return f"{value:+.3g}%" if _huge(value) else f"{value:+.1f}%"
