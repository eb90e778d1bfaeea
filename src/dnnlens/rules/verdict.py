"""The verdict of one analysis: its findings, in report order.

Report order is what to fix first, by what the fix would **save** per unit of the report's
basis (a typical iteration or step), not by the time a finding spends:

1. findings with a known saving above zero (``Finding.saving_ms_per_iteration``, per unit
   of the basis: ``saving_per_basis``), largest saving first;
2. then findings that spend time but whose saving is unknown (``saving_basis`` ``unknown``),
   by the time they spend (``impact_per_basis``), largest first: where the saving is
   unknown the report says so and does not lead with it;
3. then findings whose known saving is zero (time spent that no known fix removes: the
   reorders of a training step that are all weight reorders), by the time they spend;
4. then findings that are not about time (no lines, tiny primitives), most severe first;
5. last the framework findings graded ``info`` (under 5% of the step: within its
   step-to-step noise; or a sure saving under the recording's spread:
   ``rules.builtin._framework``), by the same tiers.

Ties keep the order the rules ran in. Every output (terminal, JSON, HTML, the dataset)
shows the findings in this order, so "the first finding" means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding, severity_rank
from dnnlens.rules.duplicates import fold
from dnnlens.rules.engine import RuleOptions, run_rules


def report_order(
    findings: list[Finding],
    per_basis: Callable[[Finding], float | None] | None = None,
    saving_per_basis: Callable[[Finding], float | None] | None = None,
) -> list[Finding]:
    """``findings`` in report order (module docstring). ``per_basis`` gives each finding's
    time per unit of the report's basis (``Analysis.impact_per_basis``: a table's profiled
    window of three iterations holds a framework finding's time three times) and
    ``saving_per_basis`` its saving the same way (``Analysis.saving_per_basis``); by
    default each finding's own figures."""
    order = {id(f): i for i, f in enumerate(findings)}

    def key(f: Finding) -> tuple[bool, int, float, int, int]:
        impact = per_basis(f) if per_basis is not None else f.impact_ms_per_iteration
        saving = saving_per_basis(f) if saving_per_basis is not None else f.saving_ms_per_iteration
        noise = f.basis == "step" and f.severity == "info" and impact is not None
        if impact is None:
            tier, figure = 3, 0.0
        elif saving is None:
            tier, figure = 1, impact
        elif saving > 0:
            tier, figure = 0, saving
        else:
            tier, figure = 2, impact
        return (noise, tier, -figure, -severity_rank(f.severity), order[id(f)])

    return sorted(findings, key=key)


def apply_rules(analysis: Analysis, options: RuleOptions) -> list[Finding]:
    """Run the selected rules on ``analysis`` and keep their findings on it, in report order."""
    found = run_rules(analysis, options)
    # one cause, one finding (rules.duplicates): a part that is all but its broader finding
    found = fold(found, {r.name: r.part_of for r in analysis.rules_run if r.part_of})
    analysis.findings = report_order(found, analysis.impact_per_basis, analysis.saving_per_basis)
    return analysis.findings
