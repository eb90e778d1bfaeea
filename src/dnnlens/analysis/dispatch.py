"""Why oneDNN skipped implementations: the ``create:dispatch`` lines of an input, counted.

``ONEDNN_VERBOSE=dispatch`` prints, for each implementation that refused a problem, one
line with the primitive kind, the implementation when it says so (the long form carries
the whole pd-info), the reason and the source location. A log of only these lines holds no
times; what it does hold is which implementations were passed over and why, which is what
this summary gives: one row per (kind, implementation, reason, location), most lines first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dnnlens.analysis.columns import str_values

__all__ = ["DispatchReason", "dispatch_reasons"]


@dataclass(frozen=True)
class DispatchReason:
    """One reason oneDNN gave for skipping an implementation, and how often."""

    kind: str
    impl: str
    reason: str
    location: str
    lines: int
    first_line: int

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "kind": self.kind,
            "impl": self.impl,
            "reason": self.reason,
            "location": self.location,
            "lines": self.lines,
            "first_line": self.first_line,
        }


def dispatch_reasons(log: Any, path: str) -> list[DispatchReason]:
    """The ``create:dispatch`` lines of input ``path`` of ``log`` (a ``ParsedLog``),
    grouped by kind, implementation, reason and location, most lines first (then the first
    line)."""
    diag = log.diagnostics
    if not len(diag):
        return []
    inputs = str_values(diag["input"])
    ops = str_values(diag["operation"])
    records, lines = diag["record"].tolist(), diag["line"].tolist()
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for i, (where, op) in enumerate(zip(inputs, ops, strict=True)):
        if where != path or op != "create:dispatch":
            continue
        rec = log.records[int(records[i])]
        key = (rec.kind, rec.impl, rec.text, rec.location)
        groups.setdefault(key, []).append(int(lines[i]))
    out = [
        DispatchReason(kind, impl, reason, location, len(found), min(found))
        for (kind, impl, reason, location), found in groups.items()
    ]
    return sorted(out, key=lambda r: (-r.lines, r.first_line))
