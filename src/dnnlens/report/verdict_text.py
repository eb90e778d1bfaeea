"""The verdict in words: one sentence per finding, the same in the terminal and the HTML.

A finding's cost is written from the analysis's one basis (:attr:`Analysis.report_basis`):
the framework view's typical step when a trace or table is there (a oneDNN finding's
per-iteration impact counted as many times as a step holds typical iterations), else the
typical iteration. The headline, the finding list and the JSON (``share_of_iteration``, a
share of the report's basis) say the same number, and :func:`basis_line` says the basis
once.

A finding's saving (``Finding.saving_ms_per_iteration``, computed once by its rule) is
written beside its time: ``saves ~0.68 ms per iteration (removal); spends 0.68 ms per
iteration, 32% of the typical 2.09 ms``, or ``...; saving unknown``. The headline leads
with the finding of the largest known saving (report order, ``rules.verdict``); when no
finding has one it says so and names the one that spends the most time.
"""

from __future__ import annotations

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.fmt import ms, pct

#: How the report says where a model's name came from (``Analysis.model.source``).
_MODEL_SOURCES = {
    "trace": "the profiler trace's modules",
    "table": "the profiler table's modules",
    "benchdnn": "benchdnn's problem name",
}


def model(analysis: Analysis) -> str:
    """``Model X (from ...)`` when an input names the model, else ''; the name is a log's
    text: the caller escapes the phrase for where it goes (terminal, HTML)."""
    m = analysis.model
    if m is None:
        return ""
    return f"Model {m.name} (from {_MODEL_SOURCES.get(m.source, m.source)})"


def cost(f: Finding, analysis: Analysis) -> str:
    """The saving beside the time spent: ``saves ~0.67 ms per iteration (removal); spends
    0.67 ms per iteration, 32% of the typical 2.09 ms``, or ``0.67 ms per iteration, 32% of
    the typical 2.09 ms; saving unknown`` ('' without a time)."""
    spent = time_spent(f, analysis)
    if not spent:
        return ""
    saves = saving(f, analysis)
    return f"{saves}; spends {spent}" if saves else f"{spent}; saving unknown"


def saving(f: Finding, analysis: Analysis) -> str:
    """``saves ~0.67 ms per iteration (removal)``: the finding's saving in the report's
    basis and what it rests on ('' when unknown or not about time)."""
    saved = analysis.saving_per_basis(f)
    if saved is None or analysis.impact_per_basis(f) is None:
        return ""
    return f"saves ~{ms(saved)} per {analysis.report_basis.unit} ({f.saving_basis})"


def time_spent(f: Finding, analysis: Analysis) -> str:
    """``0.67 ms per iteration, 32% of the typical 2.09 ms`` ('' without a time); in a
    report on a step, ``... per step, 26% of the typical 0.80 ms step``."""
    impact = analysis.impact_per_basis(f)
    if impact is None:
        return ""
    basis = analysis.report_basis
    share = analysis.share_of(f)
    if share is None:
        return f"{ms(impact)} per {basis.unit}"
    return f"{ms(impact)} per {basis.unit}, {pct(share)} of {analysis.basis_label(f)}"


def onednn_part(analysis: Analysis) -> str:
    """``oneDNN: 1.55 ms of the 4.28 ms step`` in a report on a step with a verbose log
    ('' otherwise), with how many typical iterations a step holds when not one, and when
    that could not be counted."""
    b = analysis.report_basis
    if b.unit != "step" or not b.has_onednn:
        return ""
    text = f"oneDNN: {ms(b.onednn_ms_per_step)} of the {ms(b.ms)} step"
    if b.iterations_per_step != 1:
        text += (
            f" ({b.iterations_per_step} typical iterations of {ms(b.onednn_iteration_ms)} "
            "per step, counted from the linked executions)"
        )
    elif not b.linked:
        text += " (one typical iteration per step assumed: no execution was linked to the ops)"
    return text


def title(f: Finding) -> str:
    """The finding's one-line title: its rule's description, else its rule name."""
    return (f.title or f.rule).rstrip(".")


def headline(analysis: Analysis) -> str:
    """One sentence that names what to fix first."""
    s = analysis.summary
    basis = analysis.report_basis
    if not analysis.findings:
        if basis.unit == "step":
            fw = analysis.framework
            steps = fw.steady_count if fw is not None else 0
            if fw is not None and fw.step_method == "table_window":
                return f"No findings: no rule fired on the profiled window ({ms(basis.ms)})."
            plural = "s" if steps != 1 else ""
            return (
                f"No findings: no rule fired on {steps:,} steady step{plural} "
                f"(typical step {ms(basis.ms)})."
            )
        if s.exec_count == 0:
            return "No oneDNN primitive executions in the input."
        return (
            f"No findings: no rule fired on {s.exec_count:,} primitive executions "
            f"(typical iteration {ms(analysis.typical_iteration_ms)})."
        )
    top = analysis.findings[0]
    where = cost(top, analysis)
    if not where:
        return f"First: {title(top)}."
    if not saving(top, analysis):
        return f"Most time, saving unknown: {title(top)} ({time_spent(top, analysis)})."
    return f"Fix first: {title(top)} ({where})."


def dispatch_only(analysis: Analysis) -> str | None:
    """What a log of only ``create:dispatch`` lines holds, in one phrase (None for any
    other): the terminal's and the page's opening line."""
    if analysis.summary.exec_count:
        return None
    lines = sum(r.lines for reasons in analysis.dispatch.values() for r in reasons)
    if not lines:
        return None
    return (
        f"only dispatch diagnostics ({lines:,} create:dispatch lines, no times): set "
        "ONEDNN_VERBOSE=1 for times"
    )
