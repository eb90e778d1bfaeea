"""``dnnlens project`` as a document (JSON) and a terminal report.

Every figure comes from :class:`~dnnlens.analysis.projection.Projection`, whose baseline is
the analysis's typical iteration; this module only lays them out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dnnlens._version import __version__
from dnnlens.analysis.projection import Projection
from dnnlens.fmt import ms, ms_cell
from dnnlens.report.schema import SCHEMA_VERSION, Row, to_plain

#: Adjustments listed per change in the terminal report.
SHOWN_ADJUSTMENTS = 12


@dataclass
class BaselineDoc:
    """The iteration the changes are projected from: the typical iteration of ``analyze``."""

    log: str
    typical_iteration_ms: float
    steady_iterations: int
    pass_shown: int
    other_ms: float
    statistic: str


@dataclass
class ProjectionDoc:
    """The ``dnnlens project --format json`` document."""

    schema_version: str
    dnnlens_version: str
    log: str
    baseline: BaselineDoc
    baseline_ms: float
    iterations_used: int
    statistic: str
    notes: list[str]
    steps: list[Row]
    machine: dict[str, Any]
    measured_logs: list[Row]
    changes: list[Row]
    combined: Row | None
    benchdnn: list[Row] | None = None


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
        machine=p.machine.to_dict(),
        measured_logs=[
            {"log": m.source, "baseline_ms": m.total_ms, "iterations_used": m.iterations_used}
            for m in p.measured
        ],
        changes=[c.to_json() for c in p.changes],
        combined=p.combined.to_json() if p.combined else None,
        benchdnn=[b.to_json() for b in bench] if bench is not None else None,
    )


def render_json(p: Projection, bench: list[Any] | None = None) -> str:
    """The projection as JSON text."""
    return json.dumps(to_plain(projection_doc(p, bench)), indent=2) + "\n"


def render_terminal(result: Projection, console: Any) -> None:
    """The terminal report of a projection: the changes ranked, then their details."""
    from rich.markup import escape
    from rich.table import Table

    from dnnlens.textsafe import safe as _plain

    def safe(text: object) -> str:
        return escape(_plain(text))

    t, m = result.table, result.machine
    rows = list(result.changes) + ([result.combined] if result.combined else [])
    best = max(result.changes, key=lambda c: c.saving_ms, default=None)
    if best is not None and best.saving_ms > 0:
        console.print(
            f"[bold]{safe(best.change)}[/bold] would save the most: {ms(best.saving_ms)} of "
            f"{ms(t.total_ms)} per iteration ({ms(best.projected_ms)} projected)"
        )
    console.print(
        f"[bold]Projection[/bold] of {safe(t.source)}: baseline {ms(t.total_ms)} per "
        f"iteration, the typical iteration over {t.iterations_used} steady passes "
        f"({len(t.steps)} primitives per pass; oneDNN time only)",
        highlight=False,
    )
    console.print(
        f"machine: {safe(m.name)}, {m.isa}, {m.threads} threads, peak f32 "
        f"{m.peak('f32'):.0f} GFLOP/s ({safe(m.peak_source('f32'))}), "
        f"{m.bandwidth_gbs:.1f} GB/s ({safe(m.sources.get('bandwidth_gbs', 'file'))})",
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
    for col in ("change", "projected ms", "saving ms", "speedup", "sources"):
        table.add_column(col, justify="left" if col in ("change", "sources") else "right")
    for c in rows:
        sp = f"{c.speedup:.2f}x" if c.speedup else "-"
        name = ("all together: " if c is result.combined else "") + c.change
        table.add_row(
            safe(name),
            ms_cell(c.projected_ms),
            ms_cell(c.saving_ms),
            sp,
            ", ".join(c.sources) or "-",
        )
    console.print(table)
    for c in rows:
        console.print(
            f"\n[bold]{safe(c.change)}[/bold]: {ms(c.baseline_ms)} -> {ms(c.projected_ms)}",
            highlight=False,
        )
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
