"""``fleet diff --format terminal|json``: its renderers (:data:`FLEET_DIFF_RENDERERS`), and
the terminal layout: the baseline, every compared run with its confidence and gate, why
for those that matter, the primitives that grew, and the gate's verdict."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dnnlens.fleet.diff import ComparedRun, FleetDiff
from dnnlens.fmt import ms, ms_cell, pct, pct_cell, signed_pct
from dnnlens.report.diff_report import confidence_sentence
from dnnlens.report.renderers.base import Renderer, RenderOptions
from dnnlens.report.text_layout import Grid, prose
from dnnlens.textsafe import safe


def render(d: FleetDiff, console: Console, top: int = 20) -> None:
    """The comparison at the console's width; every cell terminal-safe."""
    prose(
        console,
        f"Baseline {d.baseline}: typical iteration {ms(d.baseline_typical_ms)}; "
        f"{len(d.compared):,} run(s) compared with it.",
        style="bold",
    )
    prose(console, workload_text(d.baseline_workload))
    if not d.compared:
        prose(console, "No other run of its workload is in the dataset (see --run).")
        return
    _runs(d, console, top)
    _reasons(d, console, top)
    if d.primitives:
        _primitives(d, console, top)
    prose(console, _verdict(d), style="bold")


def _runs(d: FleetDiff, console: Console, top: int) -> None:
    """The compared runs, those the gate fails first, then those it cannot decide on, then
    those that pass, each group by change (largest first): every failed and undecided run,
    and passing ones up to ``top`` rows in all (a fleet compares hundreds)."""
    grid = Grid(
        f"Runs against the baseline (--fail-if-slower {pct(d.threshold)}; confidence as in "
        "dnnlens diff)",
        [("run", "flex"), ("typical ms", "right"), ("change", "right"),
         ("confidence", "left"), ("gate", "left")],
    )  # fmt: skip
    ranked = _ranked(d.results)
    shown = [r for i, r in enumerate(ranked) if r.gate.outcome != "pass" or i < top]
    for r in shown:
        grid.add_row(
            r.run, ms_cell(r.typical_iteration_ms), signed_pct(r.change),
            r.confidence.level, r.gate.outcome,
        )  # fmt: skip
    if len(shown) < len(ranked):
        grid.caption = (
            f"{len(ranked) - len(shown):,} more run(s) that pass (--top, or --format json for all)"
        )
    grid.print(console)


def _reasons(d: FleetDiff, console: Console, top: int) -> None:
    """Why, for each run the gate fails or cannot decide on, or that looks slower (the
    first ``top`` of them, failed ones first)."""
    told = _ranked([r for r in d.results if r.gate.outcome != "pass" or r.beyond])
    for r in told[:top]:
        prose(console, f"{r.run}: {confidence_sentence(r.confidence)}")
    if len(told) > top:
        prose(console, f"... and {len(told) - top:,} more (--top, or --format json for all).")


def _ranked(results: list[ComparedRun]) -> list[ComparedRun]:
    """Runs the gate fails, then those it cannot decide on, then those that pass; each by
    change, largest first."""
    order = {"fail": 0, "refused": 1, "pass": 2}
    return sorted(results, key=lambda r: (order[r.gate.outcome], -(r.change or 0.0)))


def _primitives(d: FleetDiff, console: Console, top: int) -> None:
    """The primitives that grew: informational unless their run failed the gate."""
    limit = f"more than {pct(d.threshold)}"
    grid = Grid(
        f"Primitives slower than the baseline's by {limit}, adding at least "
        f"{pct(d.min_share)} of its iteration (ms per typical iteration); informational "
        "(no per-pass time of a primitive) unless their run's gate is fail",
        [("run", "flex"), ("kind", "left"), ("problem", "flex"), ("impl", "flex"),
         ("ms", "right"), ("baseline", "right"), ("added", "right"), ("change", "right")],
    )  # fmt: skip
    shown: dict[str, int] = {}
    for p in d.primitives:
        shown[p.run] = shown.get(p.run, 0) + 1
        if shown[p.run] > top:
            continue
        grid.add_row(
            p.run, p.kind, p.problem, p.impl, ms_cell(p.ms_per_iteration),
            ms_cell(p.baseline_ms_per_iteration), ms_cell(p.added_ms), _change(p.change),
        )  # fmt: skip
    left = sum(max(0, n - top) for n in shown.values())
    if left:
        grid.caption = f"{left:,} more (--top, or --format json for all)"
    grid.print(console)


def workload_text(w: dict[str, str | None]) -> str:
    """``Workload <name> (model <model>; <hash>)``: a log's text, escaped."""
    model = f"model {safe(w['model'])}; " if w.get("model") else ""
    return f"Workload {safe(w.get('workload_name') or '?')} ({model}{safe(w.get('workload'))})"


def _change(change: float | None) -> str:
    return "new" if change is None else "+" + pct_cell(change)


def _verdict(d: FleetDiff) -> str:
    """The gate's decision for the dataset, in one sentence."""
    if d.gate == "pass":
        return (
            f"Gate pass: no run is slower than the baseline by more than {pct(d.threshold)} "
            "beyond the noise."
        )
    return f"Gate {d.gate}: {d.verdict()}."


class FleetDiffJsonRenderer(Renderer[FleetDiff]):
    """The comparison as JSON data (:func:`~dnnlens.fleet.diff.to_doc`)."""

    name, extension = "json", ".json"

    def render(self, analysis: FleetDiff, options: RenderOptions) -> str:
        import json

        from dnnlens.fleet.diff import to_doc
        from dnnlens.report.json_safe import json_safe

        return json.dumps(json_safe(to_doc(analysis)), indent=2) + "\n"


class FleetDiffTerminalRenderer(Renderer[FleetDiff]):
    """The comparison for a terminal (:func:`render`): ``options.top`` runs that pass and
    primitives per run."""

    name, extension = "terminal", ".txt"

    def render(self, analysis: FleetDiff, options: RenderOptions) -> str:
        import io

        from dnnlens.report.console import make_console

        buf = io.StringIO()
        render(analysis, make_console(file=buf, width=options.width), options.top)
        return buf.getvalue()

    def write(self, analysis: FleetDiff, output: Path | None, options: RenderOptions) -> None:
        from dnnlens.report.console import make_console
        from dnnlens.report.output import FILE_WIDTH, open_output

        if output is None:
            render(analysis, make_console(width=options.width), options.top)
            return
        with open_output(output) as fh:
            render(analysis, make_console(file=fh, width=options.width or FILE_WIDTH), options.top)


#: The formats ``fleet diff --format`` takes, by name.
FLEET_DIFF_RENDERERS: dict[str, Renderer[FleetDiff]] = {
    r.name: r for r in (FleetDiffTerminalRenderer(), FleetDiffJsonRenderer())
}
