"""The verdict of one analysis: its findings, in report order.

Report order is what to fix first: findings that cost time, by the time they account for
per unit of the report's basis (a typical iteration or step: ``impact_ms_per_basis``),
largest first; then findings that
are not about time (a cache miss, noisy timing, a missing header), most severe first; last
the framework findings graded ``info`` (under 5% of the step: within its step-to-step
noise, ``rules.builtin._framework``). Ties keep the order the rules ran in. Every output
(terminal, JSON, HTML, the dataset) shows the findings in this order, so "the first
finding" means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding, severity_rank
from dnnlens.rules.duplicates import fold
from dnnlens.rules.engine import RuleOptions, run_rules


def report_order(
    findings: list[Finding], per_basis: Callable[[Finding], float | None] | None = None
) -> list[Finding]:
    """``findings`` in report order (module docstring); ``per_basis`` gives each finding's
    time per unit of the report's basis (``Analysis.impact_per_basis``: a table's profiled
    window of three iterations holds a framework finding's time three times), by default
    its own impact."""
    order = {id(f): i for i, f in enumerate(findings)}

    def key(f: Finding) -> tuple[bool, bool, float, int, int]:
        impact = per_basis(f) if per_basis is not None else f.impact_ms_per_iteration
        noise = f.basis == "step" and f.severity == "info" and impact is not None
        return (noise, impact is None, -(impact or 0.0), -severity_rank(f.severity), order[id(f)])

    return sorted(findings, key=key)


def apply_rules(analysis: Analysis, options: RuleOptions) -> list[Finding]:
    """Run the selected rules on ``analysis`` and keep their findings on it, in report order."""
    found = run_rules(analysis, options)
    # one cause, one finding (rules.duplicates): a part that is all but its broader finding
    found = fold(found, {r.name: r.part_of for r in analysis.rules_run if r.part_of})
    analysis.findings = report_order(found, analysis.impact_per_basis)
    return analysis.findings
