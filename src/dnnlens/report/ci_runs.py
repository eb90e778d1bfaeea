"""What the CI formats (SARIF, workflow annotations, JUnit) are written from: per run, its
name, inputs, the rules that looked at it and its findings as the JSON report holds them.

The findings are the JSON report's own finding documents (:mod:`dnnlens.report.schema`),
so a CI format shows the figures, shares and evidence ``--format json`` shows, computed
once; a CI format only chooses how to say them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: ``--fail-on``'s severities, least severe first (``never``: none of them).
SEVERITY_ORDER = ("info", "warning", "error")


@dataclass(frozen=True)
class CiRun:
    """One run of the inputs, for a CI format.

    ``name``: the run's name when the inputs are several runs, else "" (one run: the
    inputs); ``inputs``: its input paths; ``rules``: the rules that ran on it
    (:class:`dnnlens.rules.engine.RuleRun`: name, code, severity, summary, description);
    ``findings``: its finding documents in report order.
    """

    name: str
    inputs: tuple[str, ...]
    rules: tuple[Any, ...]
    findings: tuple[dict[str, Any], ...]


def at_or_above(severity: str, threshold: str) -> bool:
    """Whether a finding of ``severity`` reaches ``--fail-on threshold`` (never: no)."""
    if threshold not in SEVERITY_ORDER or severity not in SEVERITY_ORDER:
        return False
    return SEVERITY_ORDER.index(severity) >= SEVERITY_ORDER.index(threshold)


def rule_id(finding: dict[str, Any]) -> str:
    """The identifier CI tools key a finding by: its code, else its rule's name."""
    return str(finding.get("code") or finding.get("rule") or "dnnlens")


def every_rule(runs: Sequence[CiRun]) -> list[Any]:
    """The rules of all runs, each once, in the order they ran."""
    seen: dict[str, Any] = {}
    for run in runs:
        for rule in run.rules:
            seen.setdefault(rule.code or rule.name, rule)
    return list(seen.values())
