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

    @property
    def source(self) -> str:
        """The source file and line of the location, without its directories."""
        return self.location.rsplit("/", 1)[-1]

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


def dispatch_reasons(log: Any) -> dict[str, list[DispatchReason]]:
    """Per input of ``log`` (a ``ParsedLog``) with ``create:dispatch`` lines, those lines
    grouped by kind, implementation, reason and location, most lines first (then the first
    line). One pass over the diagnostics, whatever the number of inputs."""
    diag = log.diagnostics
    if not len(diag):
        return {}
    inputs = str_values(diag["input"])
    ops = str_values(diag["operation"])
    records, lines = diag["record"].tolist(), diag["line"].tolist()
    groups: dict[str, dict[tuple[str, str, str, str], list[int]]] = {}
    for i, (where, op) in enumerate(zip(inputs, ops, strict=True)):
        if op != "create:dispatch":
            continue
        rec = log.records[int(records[i])]
        key = (rec.kind, rec.impl, rec.text, rec.location)
        groups.setdefault(str(where), {}).setdefault(key, []).append(int(lines[i]))
    out = {}
    for path, by_key in groups.items():
        reasons = [
            DispatchReason(kind, impl, reason, location, len(found), min(found))
            for (kind, impl, reason, location), found in by_key.items()
        ]
        out[path] = sorted(reasons, key=lambda r: (-r.lines, r.first_line))
    return out
