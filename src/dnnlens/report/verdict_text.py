"""The verdict in words: one sentence per finding, the same in the terminal and the HTML.

A finding's cost is written from the analysis's one typical iteration, so the headline, the
finding list and the JSON (``impact_ms_per_iteration``, ``share_of_iteration``) say the
same number.
"""

from __future__ import annotations

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.fmt import ms, pct


def cost(f: Finding, analysis: Analysis) -> str:
    """``0.67 ms per iteration, 32% of the typical 2.09 ms`` ('' without a time); a
    framework finding's is per step, of the trace's typical step."""
    impact = f.impact_ms_per_iteration
    if impact is None:
        return ""
    unit = "step" if f.basis == "step" else "iteration"
    share = analysis.share_of(f)
    if share is None:
        return f"{ms(impact)} per {unit}"
    return f"{ms(impact)} per {unit}, {pct(share)} of {analysis.basis_label(f)}"


def title(f: Finding) -> str:
    """The finding's one-line title: its rule's description, else its rule name."""
    return (f.title or f.rule).rstrip(".")


def headline(analysis: Analysis) -> str:
    """One sentence that names what to fix first."""
    s = analysis.summary
    if not analysis.findings:
        if s.exec_count == 0:
            return "No oneDNN primitive executions in the input."
        return (
            f"No findings: no rule fired on {s.exec_count:,} primitive executions "
            f"(typical iteration {ms(analysis.typical_iteration_ms)})."
        )
    top = analysis.findings[0]
    where = cost(top, analysis)
    return f"Fix first: {title(top)} ({where})." if where else f"First: {title(top)}."
