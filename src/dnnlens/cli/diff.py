"""``dnnlens diff BASE NEW``: what changed between two runs, as text, markdown or JSON.

Exit codes: 0 compared; 1 ``--fail-if-slower`` was given and NEW is slower than BASE by more
than that (per iteration when both runs have iterations, else in total); 2 usage or input
error.
"""

from __future__ import annotations

import json
import math
import sys
from enum import StrEnum
from typing import Any

import typer

from dnnlens.report.json_safe import json_safe

EXIT_SLOWER = 1
EXIT_USAGE = 2


class DiffFormat(StrEnum):
    """Output formats of ``diff``."""

    terminal = "terminal"
    markdown = "markdown"
    json = "json"


def parse_percent(text: str) -> float:
    """``"5%"`` or ``"5"`` -> 0.05. Raises ``ValueError`` with a readable message."""
    body = text.strip().removesuffix("%").strip()
    try:
        value = float(body)
    except ValueError:
        raise ValueError(f"--fail-if-slower {text!r}: expected a percentage such as 5%") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--fail-if-slower {text!r}: expected a percentage >= 0")
    return value / 100.0


# ---------------------------------------------------------------------------------------
# shared wording


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"


def _delta(base: float, new: float) -> str:
    if base <= 0:
        return "new" if new > 0 else "-"
    return f"{100 * (new / base - 1):+.1f}%"


def verdict(d: Any) -> str:
    """One sentence: faster or slower, by how much, on which basis."""
    b, n = d.compared_ms()
    typical = (
        d.basis == "typical" and d.base.typical_ms is not None and d.new.typical_ms is not None
    )
    basis = (
        "per typical iteration" if typical else "per iteration" if d.per_iteration else "in total"
    )
    if b <= 0 and n <= 0:
        return "Neither run has primitive executions."
    if n <= 0:
        return "NEW has no primitive executions."
    if b <= 0:
        return "BASE has no primitive executions."
    ratio = b / n
    word = "faster" if ratio >= 1 else "slower"
    factor = ratio if ratio >= 1 else 1 / ratio
    return (
        f"NEW is {factor:.2f}x {word} {basis}: {_ms(b)} -> {_ms(n)} ms "
        f"({_delta(b, n)}); total {_ms(d.base.total_ms)} -> {_ms(d.new.total_ms)} ms, "
        f"{d.base.exec_count:,} -> {d.new.exec_count:,} executions."
    )


def typical_line(d: Any) -> str:
    """The typical-iteration comparison (robust to outliers), or "" without iterations."""
    b, n = d.base.typical_ms, d.new.typical_ms
    if b is None or n is None or b <= 0 or n <= 0:
        return ""
    ratio = b / n
    word = "faster" if ratio >= 1 else "slower"
    factor = ratio if ratio >= 1 else 1 / ratio
    bm, nm = d.base.steady_median_ms, d.new.steady_median_ms
    extra = (
        f"; median of the steady iteration sums {_ms(bm)} -> {_ms(nm)} ms"
        if bm is not None and nm is not None
        else ""
    )
    return (
        f"Typical steady iteration (per-primitive medians): {_ms(b)} -> {_ms(n)} ms, "
        f"{factor:.2f}x {word} ({_delta(b, n)}){extra}."
    )


def _impl(names: list[str]) -> str:
    return ", ".join(names) or "-"


def _layouts(names: list[str]) -> str:
    return " | ".join(names) or "-"


def _sections(d: Any, top: int) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, caption) of every table, shared by terminal and markdown."""
    per = d.per_iteration
    typical = d.base.typical_ms is not None and d.new.typical_ms is not None
    out = []
    head = ["kind", "count", "ms", "delta ms", "change", "share"]
    if per:
        head.append("per iteration")
    if typical:
        head.append("typical iteration")
    rows = []
    for k in d.kinds:
        row = [
            k["kind"],
            f"{k['base_count']:,} -> {k['new_count']:,}",
            f"{_ms(k['base_ms'])} -> {_ms(k['new_ms'])}",
            f"{k['delta_ms']:+,.3f}",
            _delta(k["base_ms"], k["new_ms"]),
            f"{100 * k['base_share']:.1f}% -> {100 * k['new_share']:.1f}%",
        ]
        if per:
            row.append(
                f"{k['base_per_iteration_count']:g}x {_ms(k['base_per_iteration_ms'])} "
                f"-> {k['new_per_iteration_count']:g}x {_ms(k['new_per_iteration_ms'])}"
            )
        if typical:
            row.append(
                f"{_ms(k.get('base_typical_ms', 0.0))} -> {_ms(k.get('new_typical_ms', 0.0))}"
            )
        rows.append(row)
    cap = []
    if per:
        cap.append("per iteration: executions x ms, total / iterations")
    if typical:
        cap.append("typical iteration: per-primitive medians over the steady iterations")
    out.append(("Time by kind", head, rows, "; ".join(cap)))

    def prim_rows(items: list[dict[str, Any]], with_new: bool) -> list[list[str]]:
        res = []
        for p in items[:top]:
            side = "new" if with_new else "base"
            res.append(
                [
                    p["kind"],
                    p["shape"],
                    p["layouts"] or _layouts(p[f"{side}_layouts"]),
                    _impl(p[f"{side}_impl"]),
                    f"{p[f'{side}_count']:,}",
                    _ms(p[f"{side}_ms"]),
                ]
            )
        return res

    phead = ["kind", "shape", "layouts", "impl", "count", "ms"]
    for title, items, with_new in (
        ("Vanished (only in BASE)", d.vanished, False),
        ("Appeared (only in NEW)", d.appeared, True),
    ):
        ms = sum(p["base_ms" if not with_new else "new_ms"] for p in items)
        cap = f"{len(items)} primitive(s), {_ms(ms)} ms"
        if len(items) > top:
            cap += f"; {len(items) - top} more in --format json"
        out.append((title, phead, prim_rows(items, with_new), cap))
    rows = []
    changes = d.impl_changes
    for p in changes[:top]:
        rows.append(
            [
                p["kind"],
                p["shape"],
                _impl(p["base_impl"]) + " -> " + _impl(p["new_impl"]),
                _layouts(p["base_layouts"]) + " -> " + _layouts(p["new_layouts"]),
                f"{p['base_count']:,} -> {p['new_count']:,}",
                f"{_ms(p['base_ms'])} -> {_ms(p['new_ms'])}",
            ]
        )
    cap = f"{len(changes)} primitive(s)" + (
        f"; {len(changes) - top} more in --format json" if len(changes) > top else ""
    )
    out.append(
        (
            "Implementation or layout changed",
            ["kind", "shape", "impl", "layouts", "count", "ms"],
            rows,
            cap,
        )
    )
    same = [p for p in d.primitives if p["status"] == "same"]
    rows = [
        [
            p["kind"],
            p["shape"],
            p["layouts"] or _impl(p["base_impl"]),
            f"{p['base_count']:,} -> {p['new_count']:,}",
            f"{_ms(p['base_ms'])} -> {_ms(p['new_ms'])}",
            _delta(p["base_ms"], p["new_ms"]),
        ]
        for p in same[:top]
    ]
    out.append(
        (
            "Unchanged primitives, largest time changes first",
            ["kind", "shape", "impl/layouts", "count", "ms", "change"],
            rows,
            f"{len(same)} primitive(s)",
        )
    )
    if d.iterations:
        shown = (
            d.iterations[:top]
            if len(d.iterations) <= top
            else (d.iterations[: top // 2] + d.iterations[-(top - top // 2) :])
        )
        rows = [
            [
                str(it["iteration"]) + (" (warm-up)" if it["warmup"] else ""),
                _ms(it["base_ms"]),
                _ms(it["new_ms"]),
                _delta(it["base_ms"], it["new_ms"])
                if it["base_ms"] is not None and it["new_ms"] is not None
                else "-",
            ]
            for it in shown
        ]
        cap = (
            f"{len(d.iterations)} iterations"
            if len(d.iterations) <= top
            else f"{len(d.iterations)} iterations, first and last shown"
        )
        out.append(("Per iteration", ["iteration", "base ms", "new ms", "change"], rows, cap))
    return out


# ---------------------------------------------------------------------------------------
# renderers


def render_markdown(d: Any, top: int = 15) -> str:
    """GitHub-flavoured markdown (a PR comment)."""

    def cell(text: str) -> str:
        return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = [
        "## dnnlens diff",
        "",
        f"- BASE: `{cell(d.base.path)}` ({d.base.exec_count:,} executions, "
        f"{_ms(d.base.total_ms)} ms, {d.base.iterations} iterations)",
        f"- NEW: `{cell(d.new.path)}` ({d.new.exec_count:,} executions, "
        f"{_ms(d.new.total_ms)} ms, {d.new.iterations} iterations)",
        "",
        f"**{cell(verdict(d))}**",
        "",
    ]
    if typical_line(d):
        lines += [cell(typical_line(d)), ""]
    for title, head, rows, cap in _sections(d, top):
        lines += [f"### {title}", ""]
        if rows:
            lines.append("| " + " | ".join(cell(h) for h in head) + " |")
            lines.append("|" + "|".join("---" for _ in head) + "|")
            lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
        else:
            lines.append("none")
        if cap:
            lines += ["", f"_{cell(cap)}_"]
        lines.append("")
    return "\n".join(lines)


def render_terminal(d: Any, console: Any, top: int = 15) -> None:
    """Rich tables on ``console``."""
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]BASE[/bold] {escape(d.base.path)}: {d.base.exec_count:,} executions, "
        f"{_ms(d.base.total_ms)} ms, {d.base.iterations} iterations"
    )
    console.print(
        f"[bold]NEW[/bold]  {escape(d.new.path)}: {d.new.exec_count:,} executions, "
        f"{_ms(d.new.total_ms)} ms, {d.new.iterations} iterations"
    )
    style = "green" if d.slower_fraction <= 0 else "red"
    console.print(f"\n[bold {style}]{escape(verdict(d))}[/bold {style}]")
    if typical_line(d):
        console.print(escape(typical_line(d)))
    for title, head, rows, cap in _sections(d, top):
        if not rows and title.startswith("Unchanged"):
            continue
        table = Table(
            title=title, title_justify="left", caption=cap or None, caption_justify="left"
        )
        for h in head:
            numeric = h in ("count", "ms", "change", "delta ms") or h.startswith(("base", "new"))
            table.add_column(h, justify="right" if numeric else "left", overflow="fold")
        for r in rows:
            table.add_row(*(escape(str(c)) for c in r))
        if not rows:
            table.add_row(*(["none"] + [""] * (len(head) - 1)))
        console.print(table)


# ---------------------------------------------------------------------------------------
# the command


def diff(
    base: str = typer.Argument(..., help="The reference log (file, glob, directory or -)."),
    new: str = typer.Argument(..., help="The log to compare with it."),
    fmt: DiffFormat = typer.Option(DiffFormat.terminal, "--format", "-f", help="Output format."),
    fail_if_slower: str | None = typer.Option(
        None,
        "--fail-if-slower",
        help="Exit 1 if NEW is slower than BASE by more than this (5% or 5), per iteration.",
    ),
    basis: str = typer.Option(
        "mean",
        "--basis",
        help="What the verdict and --fail-if-slower compare: mean (total / iterations) or "
        "typical (per-primitive medians, robust to outliers).",
    ),
    top: int = typer.Option(15, "--top", min=1, help="Rows per table (terminal, markdown)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Compare two runs: time and count per kind, primitive and iteration."""
    from dnnlens.analysis.diff import diff_logs
    from dnnlens.report.console import error, load_inputs, make_console

    try:
        limit = parse_percent(fail_if_slower) if fail_if_slower is not None else None
    except ValueError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    if basis not in ("mean", "typical"):
        error(f"--basis {basis!r}: mean or typical")
        raise typer.Exit(EXIT_USAGE)
    if base == "-" and new == "-":
        error("BASE and NEW cannot both be standard input")
        raise typer.Exit(EXIT_USAGE)
    logs = []
    for spec in (base, new):
        log = load_inputs([spec], quiet)
        problems = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
        if not log.scans or problems:
            error("; ".join(p for p in problems if p) or f"{spec}: no input")
            raise typer.Exit(EXIT_USAGE)
        logs.append(log)
    d = diff_logs(logs[0], logs[1], basis)
    if fmt is DiffFormat.json:
        doc = d.to_json()
        doc["verdict"] = verdict(d)
        if limit is not None:
            doc["fail_if_slower_pct"] = 100 * limit
        sys.stdout.write(json.dumps(json_safe(doc), indent=2) + "\n")
    elif fmt is DiffFormat.markdown:
        sys.stdout.write(render_markdown(d, top) + "\n")
    else:
        render_terminal(d, make_console(), top)
    if limit is not None and d.slower_fraction > limit:
        where = (
            "per typical iteration"
            if basis == "typical" and d.base.typical_ms
            else "per iteration"
            if d.per_iteration
            else "in total"
        )
        error(
            f"NEW is {100 * d.slower_fraction:.1f}% slower than BASE {where} "
            f"(--fail-if-slower {100 * limit:g}%)"
        )
        raise typer.Exit(EXIT_SLOWER)


def register(app: typer.Typer) -> None:
    """Add ``dnnlens diff`` to the command line."""
    app.command("diff")(diff)
