"""Runs the rules over an analysis (stub until the rules engine lands)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.result import Analysis


@dataclass
class RuleOptions:
    """What the user chose: extra rule files, selection, config file."""

    rule_paths: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config_path: str | None = None


def run_rules(analysis: Analysis, options: RuleOptions) -> list[Finding]:
    """All findings of the selected rules, most severe first."""
    return []


class RuleSetupError(Exception):
    """A user mistake in rule setup (bad rule file, unknown rule name): one readable line."""
