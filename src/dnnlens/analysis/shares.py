"""A part as a share of a whole: the one rule every view uses.

A whole that is zero, negative, not finite or absent has no share of anything: the answer
is ``None`` (printed ``-``), never ``0.0``, which would read as "measured and negligible".
"""

from __future__ import annotations

import math


def share(part: float | None, whole: float | None) -> float | None:
    """``part / whole``, or ``None`` when either is absent or the whole is not a positive
    finite number."""
    if part is None or whole is None:
        return None
    whole = float(whole)
    if not (math.isfinite(whole) and whole > 0):
        return None
    return float(part) / whole
