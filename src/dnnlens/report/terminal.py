"""The terminal report (rich): what a person reads after ``dnnlens analyze``."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dnnlens.analysis.analysis import Analysis
from dnnlens.io.inputs import display_path
from dnnlens.report.framework_terminal import render_framework

MALFORMED_SHOWN = 10
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _ms(value: float) -> str:
    return f"{value:,.3f}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _breakdown(title: str, rows: list[dict[str, Any]], keys: list[str], limit: int) -> Table:
    table = Table(title=title, title_justify="left", expand=False)
    for key in keys:
        table.add_column(key, overflow="fold")
    table.add_column("count", justify="right")
    table.add_column("time ms", justify="right")
    table.add_column("share", justify="right")
    for row in rows[:limit]:
        table.add_row(
            *(escape(str(row[k]) or "-") for k in keys),
            f"{row['count']:,}",
            _ms(row["time_ms"]),
            _pct(row["share"]),
        )
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more rows in --format json"
    return table


def _inputs(console: Console, analysis: Analysis) -> None:
    table = Table(title="Inputs", title_justify="left")
    for col in (
        "input",
        "family",
        "oneDNN",
        "ISA",
        "threads",
        "lines",
        "parsed",
        "foreign",
        "malformed",
    ):
        table.add_column(
            col,
            justify="right"
            if col in ("threads", "lines", "parsed", "foreign", "malformed")
            else "left",
        )
    for s in analysis.log.scans:
        h = s.header
        table.add_row(
            escape(display_path(s.path)),
            ", ".join(s.family_names) or "-",
            h.version or "-",
            escape(h.isa or "-"),
            str(h.threads or "-"),
            f"{s.lines:,}",
            f"{s.parsed:,}",
            f"{s.foreign:,}",
            f"[red]{s.malformed:,}[/red]" if s.malformed else "0",
        )
    console.print(table)
    for s in analysis.log.scans:
        if s.read_error:
            console.print(f"[red]error:[/red] {escape(s.read_error)}")
        if s.invalid_utf8_bytes:
            console.print(
                f"[yellow]note:[/yellow] {escape(s.path)}: {s.invalid_utf8_bytes} "
                "bytes were not UTF-8 and were replaced"
            )
        if s.malformed:
            shown = list(zip(s.malformed_line, s.malformed_reason, strict=True))[:MALFORMED_SHOWN]
            for line, reason in shown:
                console.print(
                    f"  [red]malformed[/red] {escape(display_path(s.path))}:{line}: "
                    f"{escape(analysis.log.reasons[reason])}"
                )
            if s.malformed > MALFORMED_SHOWN:
                console.print(
                    f"  ... and {s.malformed - MALFORMED_SHOWN} more malformed lines "
                    "(all listed in --format json)"
                )
    for err in analysis.log.input_errors:
        console.print(f"[red]error:[/red] {escape(err)}")


def render_terminal(analysis: Analysis, console: Console, top: int = 10) -> None:
    """Print the whole report to ``console``."""
    s = analysis.summary
    _inputs(console, analysis)
    if s.exec_count == 0 and s.create_count == 0 and s.graph_exec_count == 0:
        console.print("\n[bold]No oneDNN primitive events in the input.[/bold]")
    else:
        console.print(
            f"\n[bold]{s.exec_count:,}[/bold] primitive executions, "
            f"[bold]{_ms(s.total_time_ms)} ms[/bold] in total"
            + (f" ({s.untimed_exec_count:,} without a time field)" if s.untimed_exec_count else "")
            + (
                f"; {s.graph_exec_count:,} graph partition executions "
                f"({_ms(s.graph_time_ms)} ms, not added to the total)"
                if s.graph_exec_count
                else ""
            )
        )
        console.print(_breakdown("Time by primitive kind", s.by_kind, ["kind"], top))
        console.print(_breakdown("Time by implementation", s.by_impl, ["kind", "impl"], top))
        console.print(_breakdown("Time by kind and shape", s.by_shape, ["kind", "problem"], top))
        console.print(_breakdown("Forward / backward", s.by_direction, ["direction"], top))
        _top(console, s.top_primitives, top)
        if s.create_count:
            console.print(f"{s.create_count:,} primitive creations, {_ms(s.create_time_ms)} ms")
            console.print(
                _breakdown("Creations by cache state", s.by_cache, ["operation", "cache"], top)
            )
    if s.diagnostics:
        console.print(
            "Diagnostics: " + ", ".join(f"{d['operation']} {d['count']:,}" for d in s.diagnostics)
        )
    render_framework(analysis.framework_links, console, top)
    _findings(console, analysis)


def _top(console: Console, rows: list[dict[str, Any]], top: int) -> None:
    table = Table(title="Top primitives", title_justify="left")
    for col in (
        "kind",
        "impl",
        "prop_kind",
        "problem",
        "count",
        "time ms",
        "mean ms",
        "share",
        "first at",
    ):
        table.add_column(
            col,
            overflow="fold",
            justify="right" if col in ("count", "time ms", "mean ms", "share") else "left",
        )
    for r in rows[:top]:
        table.add_row(
            escape(r["kind"]),
            escape(r["impl"] or "-"),
            escape(r["prop_kind"]),
            escape(r["problem"]),
            f"{r['count']:,}",
            _ms(r["time_ms"]),
            _ms(r["mean_ms"]),
            _pct(r["share"]),
            escape(f"{os.path.basename(r['example']['path'])}:{r['example']['line']}"),
        )
    console.print(table)


def _findings(console: Console, analysis: Analysis) -> None:
    if not analysis.findings:
        console.print("\nNo findings.")
        return
    console.print("\n[bold]Findings[/bold]")
    for f in analysis.findings:
        style = _SEVERITY_STYLE.get(f.severity, "")
        where = ", ".join(f"{e.path}:{e.line}" for e in f.evidence[:3])
        console.print(f"[{style}]{f.severity}[/{style}] {f.code} {f.rule}: {escape(f.message)}")
        if where:
            console.print(f"    evidence: {escape(where)}")
        if f.fix:
            console.print(f"    fix: {escape(f.fix)}")
