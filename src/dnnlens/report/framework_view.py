"""The framework view (a PyTorch profiler trace or table) in the terminal and the HTML.

Every figure is the :class:`~dnnlens.analysis.framework.FrameworkAnalysis`'s own: the steps
and the typical step, time by phase, the ops that cost the most per step (with their oneDNN
part when a verbose log was joined), ATen time outside oneDNN, and the threads.
"""

from __future__ import annotations

from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.fmt import ms, ms_cell, pct, pct_cell
from dnnlens.report.svg_charts import Segment, color_for, esc, legend, share_bar
from dnnlens.report.text_layout import Grid, prose

TITLE = "Framework view: steps, phases, ops"
TOP_OPS = 10

_PHASE_COLORS = {
    "forward": "#1f77b4",
    "backward": "#ff7f0e",
    "optimizer": "#2ca02c",
    "data loading": "#9467bd",
    "other": "#7f7f7f",
}


def _steps_line(doc: dict[str, Any]) -> str:
    st = doc["steps"]
    return (
        f"{st['count']} steps ({st['method'].replace('_', ' ')}), {st['warmup']} warm-up, "
        f"typical step {ms(st['typical_step_ms'])} (median step {ms(st['median_step_ms'])}; "
        f"{ms(st['untracked_ms_per_step'])} per step outside any op)"
    )


def _facts(doc: dict[str, Any]) -> list[str]:
    """One line per fact of the view that is no finding by itself: the norms by kind
    (a batch norm being trained is normal cost), the convolutions outside oneDNN."""
    lines = []
    norms = doc.get("normalization") or []
    if norms:
        lines.append(
            "Normalization per step: "
            + "; ".join(
                f"{n['kind']}, {n['calls_per_step']:g} per step, {ms(n['ms_per_step'])} "
                f"({pct(n['share'])}){', foldable' if n['foldable'] else ''}"
                for n in norms
            )
        )
    convs = doc.get("convolutions_outside_onednn") or []
    if convs:
        total = sum(c["ms_per_step"] for c in convs)
        top = convs[0]
        lines.append(
            f"Convolutions outside oneDNN: {len(convs)} kind(s), {ms(total)} per step "
            f"({pct(_total_share(convs))}); the costliest, {top['op']} "
            f"{top.get('input_dims') or ''} {top.get('dtype') or ''}: {top['reason']}"
        )
    return lines


def _total_share(rows: list[dict[str, Any]]) -> float | None:
    """The summed share of some rows (``None`` when theirs are: no typical step)."""
    shares = [r["share"] for r in rows]
    return None if any(x is None for x in shares) else sum(shares)


def terminal_lines(analysis: Analysis, console: Any, top: int = 5) -> None:
    """The framework view as a few lines and two small tables."""
    fw = analysis.framework
    if fw is None:
        return
    doc = fw.to_json()
    console.print()
    prose(console, f"{TITLE}: {_steps_line(doc)}", style="bold")
    phases = Grid(
        "Phases per typical step",
        [("phase", "left"), ("ms/step", "right"), ("share", "right"), ("in oneDNN", "right")],
    )
    for p in doc["phases"]:
        if p["ms_per_step"] > 0:
            onednn = pct_cell(p["onednn_share"]) if "onednn_share" in p else "-"
            phases.add_row(p["phase"], ms_cell(p["ms_per_step"]), pct_cell(p["share"]), onednn)
    phases.print(console)
    ops = Grid(
        "Ops by self time per step",
        [("op", "flex"), ("phase", "left"), ("calls", "right"), ("self ms", "right"),
         ("share", "right")],
        f"{len(doc['ops']) - top} more in --format json" if len(doc["ops"]) > top else "",
    )  # fmt: skip
    for o in doc["ops"][:top]:
        ops.add_row(o["name"], o["phase"], f"{o['calls_per_step']:g}",
                    ms_cell(o["self_ms_per_step"]), pct_cell(o["self_share"]))  # fmt: skip
    ops.print(console)
    for line in _facts(doc):
        prose(console, line)
    for note in doc["notes"]:
        prose(console, f"note: {note}", style="yellow")


def html_section(analysis: Analysis) -> str:
    """The framework view as a section: steps, the phase bar, ops, ATen outside oneDNN."""
    fw = analysis.framework
    if fw is None:
        return ""
    doc = fw.to_json()
    phases = [p for p in doc["phases"] if p["ms_per_step"] > 0]
    segs = [
        Segment(
            p["phase"],
            p["ms_per_step"],
            _PHASE_COLORS.get(p["phase"], color_for(p["phase"])),
            f"{p['phase']}: {ms(p['ms_per_step'])} per step, {pct(p['share'])}",
        )  # fmt: skip
        for p in phases
    ]
    rows = [
        "<table><tr><th>op</th><th>phase</th><th class=n>calls per step</th>"
        "<th class=n>self ms per step</th><th class=n>total ms per step</th>"
        "<th class=n>self share</th><th class=n>in oneDNN</th></tr>"
    ]
    for o in doc["ops"][:TOP_OPS]:
        onednn = o.get("onednn_ms_per_step")
        rows.append(
            f"<tr><td class=mono>{esc(o['name'])}</td><td>{esc(o['phase'])}</td>"
            f"<td class=n>{o['calls_per_step']:g}</td>"
            f"<td class=n>{esc(ms_cell(o['self_ms_per_step']))}</td>"
            f"<td class=n>{esc(ms_cell(o['total_ms_per_step']))}</td>"
            f"<td class=n>{esc(pct_cell(o['self_share']))}</td>"
            f"<td class=n>{esc(ms_cell(onednn)) if onednn is not None else '-'}</td></tr>"
        )
    rows.append("</table>")
    outside = doc.get("aten_outside_onednn") or []
    aten = ""
    if outside:
        listed = ", ".join(
            f"{o['name']} {ms(o['outside_ms_per_step'])} ({pct(o['outside_share'])})"
            for o in outside[:6]
        )
        aten = f'<p class="note">ATen time outside oneDNN per step, most first: {esc(listed)}.</p>'
    threads = ", ".join(
        f"{t['name']}: {ms(t['busy_ms_per_step'])} busy, {ms(t['idle_ms_per_step'])} idle"
        for t in doc.get("threads", [])[:4]
    )
    facts = "".join(f'<p class="note">{esc(line)}.</p>' for line in _facts(doc))
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in doc["notes"])
    return (
        f'<section id="framework-view"><h2>{esc(TITLE)}</h2>'
        f"<p>{esc(_steps_line(doc))}</p>"
        + (share_bar(segs, label="typical step by phase") if segs else "")
        + legend([(p["phase"], _PHASE_COLORS.get(p["phase"], "#999")) for p in phases])
        + "".join(rows)
        + aten
        + (f'<p class="note">Threads per step: {esc(threads)}.</p>' if threads else "")
        + facts
        + notes
        + "</section>"
    )
