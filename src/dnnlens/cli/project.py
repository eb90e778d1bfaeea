"""``dnnlens project LOG``: what a change would buy, projected per change and combined.

Every projected time names its source (``log``, ``measured``, ``roofline``, ``assumed``)
and the assumptions behind it (see :mod:`dnnlens.analysis.projection`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from dnnlens.errors import fail
from dnnlens.report.json_safe import json_safe

#: Adjustments listed per change in the terminal report.
SHOWN_ADJUSTMENTS = 12


def register(app: typer.Typer) -> None:
    """Add ``project`` to the command line."""

    @app.command()
    def project(
        log: str = typer.Argument(..., help="The oneDNN verbose log to project from."),
        remove: list[str] = typer.Option(
            [],
            "--remove",
            help="reorders, activation-reorders or weight-reorders (repeatable).",
        ),
        fuse: list[str] = typer.Option([], "--fuse", help="eltwise: fuse into the producer."),
        dtype: str | None = typer.Option(None, "--dtype", help="bf16: run f32 work in bf16."),
        machine: Path | None = typer.Option(
            None, "--machine", help="Machine profile (dnnlens machine probe -o FILE)."
        ),
        measured: list[str] = typer.Option(
            [],
            "--measured",
            help="Another log of the same model (other layout or dtype) to take times from.",
        ),
        statistic: str = typer.Option(
            "median", "--statistic", help="median (robust to outliers) or mean per step."
        ),
        benchdnn: Path | None = typer.Option(
            None,
            "--benchdnn",
            help="A benchdnn binary: run the top primitives alone and "
            "show isolated beside in-workload times.",
        ),
        benchdnn_top: int = typer.Option(
            5, "--benchdnn-top", min=1, help="How many top primitives to run in benchdnn."
        ),
        fmt: str = typer.Option("terminal", "--format", "-f", help="terminal or json."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Write here."),
    ) -> None:
        """Project the iteration time without reorders, with fused eltwise, or in bf16.

        Without a change option every change is projected. Each change is shown alone,
        then all of them together.
        """

        from dnnlens.analysis.machine import load_machine
        from dnnlens.analysis.projection import CHANGES, normalize_changes
        from dnnlens.analysis.projection import project as run_projection
        from dnnlens.reading import load
        from dnnlens.report.output import emit_text, report_console

        if fmt not in ("terminal", "json"):
            raise fail(f"--format {fmt}: expected terminal or json")
        if statistic not in ("median", "mean"):
            raise fail(f"--statistic {statistic}: expected median or mean")
        try:
            changes = normalize_changes(remove, fuse, dtype) or list(CHANGES)
            model = load_machine(machine) if machine else None
        except ValueError as exc:
            raise fail(str(exc)) from None
        parsed = load([log])
        others = [load([m]) for m in measured]
        errors = [e for p in (parsed, *others) for e in p.input_errors] + [
            s.read_error for p in (parsed, *others) for s in p.scans if s.read_error
        ]
        if errors or not parsed.scans:
            raise fail("; ".join(errors) or f"cannot read {log}")
        result = run_projection(parsed, changes, model, others, statistic)
        bench: list[Any] = []
        if benchdnn is not None:
            from dnnlens.report.benchdnn_bridge import run_benchdnn

            try:
                bench = run_benchdnn(str(benchdnn), parsed, top=benchdnn_top)
            except OSError as exc:
                raise fail(f"cannot run benchdnn {benchdnn}: {exc.strerror or exc}") from None
        if fmt == "json":
            doc = result.to_json()
            if benchdnn is not None:
                doc["benchdnn"] = [b.to_json() for b in bench]
            emit_text(json.dumps(json_safe(doc), indent=2) + "\n", output)
            return
        console = report_console(output)
        render_projection(result, console)
        if benchdnn is not None:
            render_bench(bench, console)


def render_bench(results: list[Any], console: Any) -> None:
    """Isolated (benchdnn) beside in-workload times of the top primitives."""
    from rich.markup import escape
    from rich.table import Table

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
            escape(r.kind),
            escape(r.impl or "-"),
            escape(r.problem[:60]),
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
                f"  {escape(r.kind)} {escape(r.problem[:60])}: {escape(r.error)}", highlight=False
            )
    console.print(
        "The difference is what the kernel alone does not explain: cold caches, "
        "framework work between primitives, thread contention.",
        highlight=False,
    )


def render_projection(result: Any, console: Any) -> None:
    """The terminal report of a :class:`~dnnlens.analysis.projection.Projection`."""
    from rich.markup import escape
    from rich.table import Table

    t, m = result.table, result.machine
    console.print(
        f"[bold]Projection[/bold] of {escape(t.source)}: {t.iterations_used} steady "
        f"iterations, {len(t.steps)} primitives each, {t.statistic} per primitive"
    )
    it = f"{t.iteration_ms:.3f} ms" if t.iteration_ms is not None else "n/a"
    console.print(
        f"baseline {t.total_ms:.3f} ms per iteration (sum of the primitives' "
        f"{t.statistic}s; {t.statistic} of the iteration totals: {it}); oneDNN time "
        "only",
        highlight=False,
    )
    console.print(
        f"machine: {escape(m.name)}, {m.isa}, {m.threads} threads, peak f32 "
        f"{m.peak('f32'):.0f} GFLOP/s ({escape(m.peak_source('f32'))}), "
        f"{m.bandwidth_gbs:.1f} GB/s ({escape(m.sources.get('bandwidth_gbs', 'file'))})",
        highlight=False,
    )
    for o in result.measured:
        console.print(
            f"measured log {escape(o.source)}: {o.total_ms:.3f} ms per iteration "
            f"(sum of {o.statistic}s over {o.iterations_used} steady iterations)",
            highlight=False,
        )
    for note in t.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    table = Table(title="Projected iteration time")
    for col in ("change", "projected ms", "saving ms", "speedup", "sources"):
        table.add_column(col, justify="left" if col in ("change", "sources") else "right")
    rows = list(result.changes) + ([result.combined] if result.combined else [])
    for c in rows:
        sp = f"{c.speedup:.2f}x" if c.speedup else "n/a"
        name = ("all together: " if c is result.combined else "") + c.change
        table.add_row(
            escape(name),
            f"{c.projected_ms:.3f}",
            f"{c.saving_ms:.3f}",
            sp,
            ", ".join(c.sources) or "-",
        )
    console.print(table)
    for c in rows:
        console.print(
            f"\n[bold]{escape(c.change)}[/bold]: {c.baseline_ms:.3f} -> {c.projected_ms:.3f} ms",
            highlight=False,
        )
        adj = sorted(c.adjustments, key=lambda a: -abs(a.before_ms - a.after_ms))
        for a in adj[:SHOWN_ADJUSTMENTS]:
            console.print(
                f"  {a.node}: {a.before_ms:.4f} -> {a.after_ms:.4f} ms "
                f"[{escape(a.source)}] {escape(a.detail)}",
                highlight=False,
            )
        if len(adj) > SHOWN_ADJUSTMENTS:
            console.print(f"  ... {len(adj) - SHOWN_ADJUSTMENTS} more (--format json lists all)")
        for x in c.assumptions:
            console.print(f"  assumes: {escape(x)}", highlight=False)
        for x in c.warnings:
            console.print(f"  [yellow]warning:[/yellow] {escape(x)}", highlight=False)
