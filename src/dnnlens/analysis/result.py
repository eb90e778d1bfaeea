"""The result of one analysis: what every reporter takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.summary import Summary, summarize
from dnnlens.model import ParsedLog


@dataclass
class Analysis:
    """Parsed inputs, their time breakdown and the findings of the rules."""

    log: ParsedLog
    summary: Summary
    findings: list[Finding] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


def analyze_log(log: ParsedLog) -> Analysis:
    """Summarise ``log``; rules are run by the caller (see ``dnnlens.analysis.rules``)."""
    analysis = Analysis(log=log, summary=summarize(log))
    if log.framework is not None:  # issue 3: framework ops linked to their primitives
        from dnnlens.analysis.linking import framework_extras

        analysis.extras.update(framework_extras(log))
    add_primitives(analysis)
    return analysis


def add_primitives(analysis: Analysis, stats: Any = None) -> None:
    """``primitives`` in the JSON: each distinct primitive on the roofline (issue 9).

    ``stats`` are per-record statistics when the event table holds only a window of the
    events (streaming); by default they are computed from the event table.
    """
    from dnnlens.analysis.roofline import primitives_json

    analysis.extras["primitives"] = primitives_json(analysis, stats=stats)
