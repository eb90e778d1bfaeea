"""The training step in the terminal and the HTML report: forward, backward, the reorders by
role and the rest, per typical steady step.

Every figure is :attr:`Analysis.training <dnnlens.analysis.analysis.Analysis.training>`'s
(:mod:`dnnlens.analysis.training`); this module only lays it out, and shows nothing for a
log without a backward pass. Parts that are zero in a step are left out of the views (the
JSON ``training`` document lists them all).
"""

from __future__ import annotations

from rich.console import Console

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.training import StepPart, TrainingStep
from dnnlens.fmt import ms, ms_cell, pct, pct_cell
from dnnlens.report.svg_charts import Segment, esc, legend, share_bar
from dnnlens.report.text_layout import Grid, prose

__all__ = ["html_section", "terminal_lines"]

TITLE = "Training step"
#: Colours of the parts: compute in blues and purples, weight reorders in reds, the rest grey.
PART_COLORS = {
    "forward": "#1f77b4",
    "backward_data": "#6baed6",
    "backward_weights": "#9467bd",
    "backward": "#393b79",
    "reorder_weight_forward": "#d62728",
    "reorder_weight_backward_data": "#ff9896",
    "reorder_weight_gradient": "#843c39",
    "reorder_weight": "#e7969c",
    "reorder_activation": "#ff7f0e",
    "other": "#7f7f7f",
}


def _shown(step: TrainingStep) -> list[StepPart]:
    return [p for p in step.parts if p.ms > 0 or p.per_step > 0]


def _title(analysis: Analysis) -> str:
    """In a report on the trace's step, this view is oneDNN's part of it: said so."""
    return "oneDNN's part of the training step" if _in_step(analysis) else TITLE


def _in_step(analysis: Analysis) -> bool:
    return analysis.report_basis.unit == "step"


def summary_text(step: TrainingStep, part_of_step: bool = False) -> str:
    """One sentence: the step, backward over forward, and the weight reorders' part
    (``part_of_step``: the report's basis is the trace's step, of which this is oneDNN's
    part)."""
    ratio = step.backward_forward_ratio
    ratio_text = f"{ratio:.2f}" if ratio is not None else "-"
    what = "oneDNN's typical training step" if part_of_step else "Typical training step"
    return (
        f"{what} {ms(step.step_ms)} over {step.steady_steps} steady steps: "
        f"forward {ms(step.forward_ms)}, backward {ms(step.backward_ms)} (backward/forward "
        f"{ratio_text}, compute only); weight reorders {ms(step.weight_reorder_ms)} "
        f"({pct(step.share(step.weight_reorder_ms))} of the step)."
    )


def terminal_lines(analysis: Analysis, console: Console) -> None:
    """Print the training step (nothing for a log without a backward pass)."""
    step = analysis.training
    if step is None:
        return
    grid = Grid(
        f"{_title(analysis)}: the typical steady step by pass and reorder role",
        [("part", "text"), ("ms/step", "right"), ("share", "right"), ("per step", "right")],
        "parts of the typical iteration: they add up to the step",
    )
    for p in _shown(step):
        grid.add_row(p.label, ms_cell(p.ms), pct_cell(step.share(p.ms)), f"{p.per_step:g}")
    total = sum(p.per_step for p in step.parts)
    grid.add_row("step", ms_cell(step.step_ms), "100.0%", f"{total:g}", style="bold")
    console.print()
    grid.print(console)
    prose(console, summary_text(step, _in_step(analysis)))


def html_section(analysis: Analysis) -> str:
    """The ``<section id="training">`` of the HTML report, or ``""`` without training."""
    step = analysis.training
    if step is None:
        return ""
    parts = _shown(step)
    segments = [
        Segment(
            p.label,
            p.ms,
            PART_COLORS[p.name],
            f"{p.label}: {ms(p.ms)} per step, {pct(step.share(p.ms))}, {p.per_step:g} per step",
        )
        for p in parts
    ]
    rows = "".join(
        f"<tr><td>{esc(p.label)}</td><td class=n>{esc(ms_cell(p.ms))}</td>"
        f"<td class=n>{esc(pct_cell(step.share(p.ms)))}</td>"
        f"<td class=n>{esc(f'{p.per_step:g}')}</td></tr>"
        for p in parts
    )
    total = sum(p.per_step for p in step.parts)
    table = (
        "<table><tr><th>part</th><th class=n>ms per step</th><th class=n>share</th>"
        f"<th class=n>executions per step</th></tr>{rows}"
        f"<tr><th>step</th><th class=n>{esc(ms_cell(step.step_ms))}</th>"
        f"<th class=n>100.0%</th><th class=n>{esc(f'{total:g}')}</th></tr></table>"
    )
    body = (
        f'<p class="note">{esc(summary_text(step, _in_step(analysis)))} Each part is a sum of '
        "terms of the typical iteration (per position of a step, its median over the steady "
        "steps), so the parts add up to the step.</p>"
        + share_bar(segments, label="training step by part")
        + legend([(p.label, PART_COLORS[p.name]) for p in parts])
        + table
    )
    return f'<section id="training"><h2>{esc(_title(analysis))}</h2>{body}</section>'
