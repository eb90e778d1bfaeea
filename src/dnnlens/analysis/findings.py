"""Findings: what a rule concludes, with the lines that prove it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "error")

#: What a finding's impact can be a part of (``Finding.basis``), in words around its figure.
BASES = {
    "iteration": "the typical {ms}",
    "step": "the typical {ms} step",
    "mean_pass": "the mean {ms} steady pass",
    "with_creations": "the {ms} of a pass with its creations",
    # a framework finding beside a log, on a table's profiled window of several iterations
    "window_iteration": "the {ms} of an iteration in the profiled window",
}


#: What a finding's saving rests on (``Finding.saving_basis``), strongest first: how the
#: figure was had, and so how a reader reproduces it by hand (docs/rules.md, "Savings").
SAVING_BASES = {
    "measured": "a measured pair in the inputs: the same work done the fixed way",
    "same_shape": "the same shape runs faster elsewhere in the inputs: time minus the time "
    "at that faster rate",
    "roofline": "the machine model bounds it: time minus the time at the roof",
    "removal": "the fix removes the work: its whole time",
    "unknown": "no figure: what the fix would save is not in the inputs",
}


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for error."""
    return SEVERITIES.index(severity)


@dataclass(frozen=True)
class Evidence:
    """One log line that shows the problem.

    Evidence in a profiler trace also names the framework op, the step and the op's start
    (trace microseconds); ``line`` is then the line of the event in the trace file.
    """

    path: str
    line: int
    op: str | None = None
    step: str | None = None
    ts_us: float | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"path", "line"}`` plus ``op``, ``step``, ``ts_us`` when they are known."""
        out: dict[str, Any] = {"path": self.path, "line": self.line}
        for key in ("op", "step", "ts_us"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


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
    #: What the impact is a part of: ``iteration`` (the typical oneDNN iteration), ``step``
    #: (the typical training step of a profiler trace, framework time included),
    #: ``mean_pass`` (the mean steady pass: noise) or ``with_creations`` (the typical
    #: iteration plus this finding's creation time): never more than the impact's basis.
    basis: str = "iteration"
    #: What fixing it would save per unit of ``basis`` (never more than the impact; None:
    #: not known, or not about time). Reports rank by it (``rules.verdict``).
    saving_ms_per_iteration: float | None = None
    #: What the saving rests on: a key of :data:`SAVING_BASES` (``unknown`` with no saving).
    saving_basis: str = "unknown"
    #: How the saving was had, in a few words ("the reorders' whole time: channels_last
    #: removes them"), or why it is unknown.
    saving_note: str = ""

    def __post_init__(self) -> None:
        if self.saving_ms_per_iteration is None or self.saving_basis not in SAVING_BASES:
            self.saving_ms_per_iteration = None
            self.saving_basis = "unknown"
        elif self.saving_basis == "unknown":
            self.saving_ms_per_iteration = None

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of a finding (keys ``rule, code, severity, message, evidence``)."""
        return {
            "rule": self.rule,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "evidence": [e.to_json() for e in self.evidence],
            "data": self.data,
            "fix": self.fix,
            "impact_ms_per_iteration": self.impact_ms_per_iteration,
            "title": self.title,
            "basis": self.basis,
            "saving_ms_per_iteration": self.saving_ms_per_iteration,
            "saving_basis": self.saving_basis,
            "saving_note": self.saving_note,
        }
