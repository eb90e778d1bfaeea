"""Findings: what a rule concludes, with the lines that prove it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "error")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for error."""
    return SEVERITIES.index(severity)


@dataclass(frozen=True)
class Evidence:
    """One log line that shows the problem."""

    path: str
    line: int


@dataclass
class Finding:
    """A verdict: the rule that made it, how bad it is, a message, and evidence.

    ``data`` holds the numbers behind the verdict (shares, counts, times), so a reader can
    check the message against the log.
    """

    rule: str
    code: str
    severity: str
    message: str
    evidence: list[Evidence] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    fix: str = ""
    #: The steady time per typical iteration this finding accounts for (None: not a time).
    impact_ms_per_iteration: float | None = None
    #: The rule's one-line description ("Reorders take a large share of each iteration.").
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of a finding (keys ``rule, code, severity, message, evidence``)."""
        return {
            "rule": self.rule,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "evidence": [{"path": e.path, "line": e.line} for e in self.evidence],
            "data": self.data,
            "fix": self.fix,
            "impact_ms_per_iteration": self.impact_ms_per_iteration,
            "title": self.title,
        }
