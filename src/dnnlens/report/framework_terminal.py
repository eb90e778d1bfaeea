"""Terminal section of the framework linking: which framework op spent how much in oneDNN."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _kinds(row: dict[str, Any]) -> str:
    return ", ".join(f"{k['kind']} x{k['count']:,}" for k in row["onednn"])


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_framework(extras: dict[str, Any], console: Console, top: int = 10) -> None:
    """Print the framework-op table, the ops without oneDNN and the linking notes, if any."""
    if "framework_ops" not in extras:
        return
    rows: list[dict[str, Any]] = extras["framework_ops"]
    if rows:
        table = Table(title="Framework ops and their oneDNN primitives", title_justify="left")
        for col in (
            "framework op",
            "calls",
            "time ms",
            "oneDNN ms",
            "oneDNN share",
            "primitives",
            "reorder ms",
            "link",
        ):
            right = col in ("calls", "time ms", "oneDNN ms", "oneDNN share", "reorder ms")
            table.add_column(col, justify="right" if right else "left", overflow="fold")
        for r in rows[:top]:
            table.add_row(
                escape(r["name"]),
                f"{r['calls']:,}",
                f"{r['time_ms']:,.3f}",
                f"{r['onednn_time_ms']:,.3f}",
                _share(r["onednn_share"]),
                escape(_kinds(r)),
                f"{r['reorder_time_ms']:,.3f}",
                r["link"],
            )
        if len(rows) > top:
            table.caption = f"{len(rows) - top} more rows in --format json"
        console.print(table)
    without = extras.get("framework_ops_without_onednn") or []
    if without:
        shown = ", ".join(
            f"{escape(r['name'])} x{r['calls']:,} ({r['time_ms']:,.3f} ms)" for r in without[:top]
        )
        console.print(f"Framework ops without oneDNN: {shown}")
    link = extras.get("framework_link") or {}
    for run in link.get("runs", []):
        what = run.get("trace") or run.get("table")
        if run.get("method"):
            console.print(
                f"Linked {run['primitives_linked']:,} of {run['primitives_in_window']:,} "
                f"primitives in the profiled window of {escape(str(what))} "
                f"(by {', '.join(f'{m} {c:,}' for m, c in run['by_method'].items())}); "
                f"{run['outside_window']:,} outside it"
            )
    for note in link.get("notes", []):
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
