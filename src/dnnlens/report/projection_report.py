"""``dnnlens project`` as a document (JSON) and a terminal report.

Every figure comes from :class:`~dnnlens.analysis.projection.Projection`, whose baseline is
the analysis's typical iteration; this module only lays them out: the measured change that
saves the most first, then the best estimate, labelled with what it leans on (an assumed
clock or bandwidth), then every change, measured ones first.
"""

from __future__ import annotations

import json
from typing import Any

from dnnlens._version import __version__
from dnnlens.analysis.machine import CLOCK_ASSUMED
from dnnlens.analysis.projection import ChangeResult, Projection
from dnnlens.fmt import ms, ms_cell
from dnnlens.report.schema import (
    SCHEMA_VERSION,
    BaselineDoc,
    HeadlineDoc,
    ProjectionDoc,
    to_plain,
)

#: Adjustments listed per change in the terminal report.
SHOWN_ADJUSTMENTS = 12


def projection_doc(p: Projection, bench: list[Any] | None = None) -> ProjectionDoc:
    """The document of one projection (``bench``: ``project --benchdnn`` results)."""
    t = p.table
    return ProjectionDoc(
        schema_version=SCHEMA_VERSION,
        dnnlens_version=__version__,
        log=t.source,
        baseline=BaselineDoc(
            log=t.source,
            typical_iteration_ms=t.total_ms,
            steady_iterations=t.iterations_used,
            pass_shown=t.pass_index,
            other_ms=t.other_ms,
            statistic=t.statistic,
            creation_ms=t.creations.ms,
            creation_misses=t.creations.misses,
        ),
        baseline_ms=t.total_ms,
        iterations_used=t.iterations_used,
        statistic=t.statistic,
        notes=list(t.notes),
        steps=[
            {
                "position": s.position,
                "node": s.name,
                "kind": s.kind,
                "impl": s.impl,
                "problem": s.problem,
                "time_ms": s.time_ms,
                "tensor": s.tensor,
            }
            for s in t.steps
        ],
        machine=p.machine.to_json(),
        measured_logs=[
            {"log": m.source, "baseline_ms": m.total_ms, "iterations_used": m.iterations_used}
            for m in p.measured
        ],
        changes=[c.to_json() for c in p.changes],
        combined=p.combined.to_json() if p.combined else None,
        headline=_headline(p.headline),
        estimate=_headline(p.best_estimate),
        benchdnn=[b.to_json() for b in bench] if bench is not None else None,
    )


def _headline(c: ChangeResult | None) -> HeadlineDoc | None:
    if c is None:
        return None
    return HeadlineDoc(c.change, c.basis, c.baseline_ms, c.projected_ms, c.saving_ms)


def render_json(p: Projection, bench: list[Any] | None = None) -> str:
    """The projection as JSON text."""
    return json.dumps(to_plain(projection_doc(p, bench)), indent=2) + "\n"


def _estimate_basis(m: Any) -> str:
    """What an estimate leans on, in a few words (the machine's assumed parts)."""
    assumed = []
    if m.peak_basis("f32") == CLOCK_ASSUMED:
        assumed.append(f"an assumed clock of {m.freq_ghz:g} GHz")
    if m.bandwidth_basis == CLOCK_ASSUMED:
        assumed.append(f"an assumed {m.bandwidth_gbs:g} GB/s")
    return "the roofline with " + " and ".join(assumed) if assumed else "the roofline"


def _before_after(c: ChangeResult) -> str:
    """``2.09 ms -> 1.41 ms``; with creations removed, what the iteration held of them."""
    if not c.creation_saving_ms:
        return f"{ms(c.baseline_ms)} -> {ms(c.projected_ms)}"
    return (
        f"{ms(c.baseline_ms)} of executions and {ms(c.creation_saving_ms)} of creation -> "
        f"{ms(c.projected_ms)}"
    )


def render_terminal(result: Projection, console: Any) -> None:
    """The terminal report of a projection: what the log measured first, then the
    estimates (labelled), then each change's details."""
    from rich.markup import escape
    from rich.table import Table

    from dnnlens.textsafe import safe as _plain

    def safe(text: object) -> str:
        return escape(_plain(text))

    t, m = result.table, result.machine
    rows = list(result.changes) + ([result.combined] if result.combined else [])
    best = result.headline
    if best is not None:
        console.print(
            f"[bold]Measured in the log:[/bold] {safe(best.change)} would save "
            f"{ms(best.saving_ms)} per iteration ({_before_after(best)})",
            highlight=False,
        )
    else:
        console.print(
            "[bold]Measured in the log:[/bold] no change projected from what the log measured "
            "saves time",
            highlight=False,
        )
    guess = result.best_estimate
    if guess is not None:
        console.print(
            f"Estimate, not measured ({safe(_estimate_basis(m))}): {safe(guess.change)} "
            f"would save {ms(guess.saving_ms)} per iteration ({_before_after(guess)})",
            highlight=False,
        )
    console.print(
        f"[bold]Projection[/bold] of {safe(t.source)}: baseline {ms(t.total_ms)} per "
        f"iteration, the typical iteration over {t.iterations_used} steady "
        f"pass{'es' if t.iterations_used != 1 else ''} "
        f"({len(t.steps)} primitives per pass; oneDNN executions only)",
        highlight=False,
    )
    if t.creations.found and t.creations.misses:
        console.print(
            f"creation: {ms(t.creations.ms)} per iteration of primitive cache misses "
            f"{safe(t.creations.scope)} ({t.creations.misses} lines), on top of the baseline",
            highlight=False,
        )
    console.print(
        f"machine: {safe(m.name)}, {m.isa}, f32 {safe(m.peak_label('f32'))}, "
        f"{safe(m.bandwidth_label())}",
        highlight=False,
    )
    for o in result.measured:
        console.print(
            f"measured log {safe(o.source)}: typical iteration {ms(o.total_ms)} over "
            f"{o.iterations_used} steady passes",
            highlight=False,
        )
    for note in t.notes:
        console.print(f"note: {safe(note)}", highlight=False)
    table = Table(title="Projected iteration time", title_justify="left")
    for col in ("change", "basis", "projected ms", "saving ms", "speedup", "sources"):
        table.add_column(col, justify="left" if col in ("change", "basis", "sources") else "right")
    for c in rows:
        known = c.basis != "unknown"  # no saving projected: said, not shown as 0 or 1.00x
        sp = f"{c.speedup:.2f}x" if c.speedup and known else "-"
        name = ("all together: " if c is result.combined else "") + c.change
        table.add_row(
            safe(name),
            c.basis,
            ms_cell(c.projected_ms) if known else "-",
            ms_cell(c.saving_ms) if known else "unknown",
            sp,
            ", ".join(c.sources) or "-",
        )
    console.print(table)
    for c in rows:
        label = {
            "measured": "measured",
            "estimate": "estimate",
            "unknown": "saving unknown",
        }.get(c.basis, "nothing to change")
        after = _before_after(c) if c.basis != "unknown" else "not projected"
        console.print(f"\n[bold]{safe(c.change)}[/bold] ({label}): {after}", highlight=False)
        adj = sorted(c.adjustments, key=lambda a: -abs(a.before_ms - a.after_ms))
        for a in adj[:SHOWN_ADJUSTMENTS]:
            console.print(
                f"  {safe(a.node)}: {a.before_ms:.4f} -> {a.after_ms:.4f} ms "
                f"[{safe(a.source)}] {safe(a.detail)}",
                highlight=False,
            )
        if len(adj) > SHOWN_ADJUSTMENTS:
            console.print(f"  ... {len(adj) - SHOWN_ADJUSTMENTS} more (--format json lists all)")
        for x in c.assumptions:
            console.print(f"  assumes: {safe(x)}", highlight=False)
        for x in c.warnings:
            console.print(f"  [yellow]warning:[/yellow] {safe(x)}", highlight=False)


def render_bench(results: list[Any], console: Any) -> None:
    """Isolated (benchdnn) beside in-workload times of the top primitives."""
    from rich.markup import escape
    from rich.table import Table

    from dnnlens.textsafe import safe as _plain

    def safe(text: object) -> str:
        return escape(_plain(text))

    table = Table(
        title="Top primitives alone in benchdnn (--mode=P) vs in the workload", title_justify="left"
    )
    for col in (
        "kind",
        "impl",
        "problem",
        "calls",
        "workload mean ms",
        "benchdnn best ms",
        "benchdnn avg ms",
        "workload / best",
    ):
        table.add_column(col, overflow="fold")
    for r in results:
        best = "-" if r.isolated_min_ms is None else f"{r.isolated_min_ms:.4f}"
        avg = "-" if r.isolated_avg_ms is None else f"{r.isolated_avg_ms:.4f}"
        ratio = "-" if r.slowdown is None else f"{r.slowdown:.1f}x"
        table.add_row(
            safe(r.kind),
            safe(r.impl or "-"),
            safe(r.problem[:60]),
            f"{r.count:,}",
            f"{r.workload_mean_ms:.4f}",
            best,
            avg,
            ratio,
        )
    console.print(table)
    for r in results:
        if r.error:
            console.print(
                f"  {safe(r.kind)} {safe(r.problem[:60])}: {safe(r.error)}", highlight=False
            )
    console.print(
        "The difference is what the kernel alone does not explain: cold caches, "
        "framework work between primitives, thread contention.",
        highlight=False,
    )
