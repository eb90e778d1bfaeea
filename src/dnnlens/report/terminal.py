"""The terminal report (rich): what a person reads after ``dnnlens analyze``.

The first screen is the verdict: one headline naming what to fix first, one line per
input, the findings (largest known saving first) with their fix, and a compact breakdown of the
typical iteration with the raw sums beside it. Every other table (implementations,
shapes, top primitives, passes, creations, framework ops) comes with ``--details``.

Made to be read at any width: table cells never wrap (they are cut with an ellipsis),
prose wraps between words, a word longer than the line is cut, and input paths are
shortened from the left to the shortest suffix that still tells them apart. Every string
from an input goes through :func:`~dnnlens.textsafe.safe` first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.layouts import flow_label
from dnnlens.fmt import ms, ms_cell, pct, pct_cell
from dnnlens.report import framework_view, training_view, verdict_text
from dnnlens.report.text_layout import Grid, prose, unique_suffixes
from dnnlens.textsafe import safe

if TYPE_CHECKING:
    from dnnlens.model import ProfilerTable

MALFORMED_SHOWN = 10
EVIDENCE_SHOWN = 3
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


# ---------------------------------------------------------------------------------------
# text that fits


def _table(title: str, columns: list[Any], caption: str = "") -> Grid:
    return Grid(title, columns, caption)


# ---------------------------------------------------------------------------------------
# the verdict


def _about(a: Analysis, names: dict[str, str]) -> str:
    """What the report is about, in one line: the inputs and the report's basis (the
    trace's typical step, oneDNN's part of it; or the oneDNN typical iteration)."""
    s, st, b, fw = a.summary, a.steady, a.report_basis, a.framework
    logs = ", ".join(names[x.path] for x in a.log.scans)
    passes = f"{st.passes:,} passes ({st.left_out_words})" if st.found else "no repeating iteration"
    profile = ""
    if fw is not None:
        doc = fw.to_json()["steps"]
        if fw.table is not None:
            source = fw.table.source
            what = f"{names.get(source, safe(source))}:{fw.table.line} (profiler table)"
        else:
            what = names.get(fw.path, safe(fw.path))
        profile = (
            f"{what}: a profiled window of {ms(fw.typical_step_ms)} (no steps)"
            if fw.step_method == "table_window"
            else f"{what}: {doc['count']:,} steps ({doc['method'].replace('_', ' ')}, "
            f"{doc['warmup']} warm-up), typical step {ms(fw.typical_step_ms)}"
        )
    if b.unit == "step":
        if not s.exec_count:
            return profile
        return (
            f"{profile}; {verdict_text.onednn_part(a)}, from {logs}: {s.exec_count:,} "
            f"primitive executions, {passes}"
        )
    if not s.exec_count:
        dispatch = verdict_text.dispatch_only(a)
        if dispatch:
            return f"{logs}: {dispatch}"
        return logs or "no input"
    about = (
        f"{logs}: {s.exec_count:,} primitive executions, {passes}, typical iteration "
        f"{ms(a.typical_iteration_ms)}"
    )
    if profile:  # a table's window beside the log: its figures are shared out per pass
        counted = (
            "counted from the linked executions"
            if b.linked
            else "taken as one: no execution was linked to the table"
        )
        about += f"; {profile}, {b.iterations_per_step} typical iterations ({counted})"
    return about


def _headline(console: Console, a: Analysis, names: dict[str, str]) -> None:
    model = verdict_text.model(a)
    prose(console, (f"{safe(model)}; " if model else "") + _about(a, names), style="bold")
    top = a.findings[0] if a.findings else None
    style = _SEVERITY_STYLE.get(top.severity, "") if top is not None else "green"
    console.print()
    prose(console, verdict_text.headline(a), style=f"bold {style}".strip())


def _inputs(console: Console, a: Analysis, names: dict[str, str]) -> None:
    console.print()
    fw = a.log.framework
    tables_in: dict[str, list[ProfilerTable]] = {}
    for table in fw.tables if fw is not None else []:
        tables_in.setdefault(table.source, []).append(table)
    for s in a.log.scans:
        h = s.header
        head = " ".join(
            x
            for x in (
                ", ".join(s.family_names),
                h.version or "",
                h.isa or "",
                f"{h.threads} threads" if h.threads else "",
            )
            if x
        )
        line = (
            f"{names[s.path]}: {head + '; ' if head else ''}{s.lines:,} lines, "
            f"{s.parsed:,} parsed, {s.foreign:,} foreign, {s.malformed:,} malformed"
        )
        prose(console, line, indent=2)
        for t in tables_in.get(s.path, []):
            prose(
                console,
                f"profiler table at line {t.line:,}: {len(t.rows):,} rows "
                "(its lines are among the foreign ones)",
                indent=4,
            )
        if s.read_error:
            prose(console, f"error: {s.read_error}", indent=4, style="red")
        if s.invalid_utf8_bytes:
            prose(
                console,
                f"note: {s.invalid_utf8_bytes} bytes were not UTF-8 and were replaced",
                indent=4,
            )
        shown = list(zip(s.malformed_line, s.malformed_reason, strict=True))[:MALFORMED_SHOWN]
        for line_no, reason in shown:
            prose(
                console,
                f"malformed {names[s.path]}:{line_no}: {a.log.reasons[reason]}",
                indent=4,
                style="red",
            )
        if s.malformed > MALFORMED_SHOWN:
            prose(
                console,
                f"... and {s.malformed - MALFORMED_SHOWN} more malformed lines "
                "(all listed in --format json)",
                indent=4,
            )
    for t in fw.traces if fw is not None else []:
        prose(console, f"{names.get(t.path, t.path)}: profiler trace, {len(t.ops):,} ops",
               indent=2)  # fmt: skip
    for err in a.log.input_errors:
        prose(console, f"error: {err}", indent=2, style="red")


def _findings(console: Console, a: Analysis, names: dict[str, str]) -> None:
    console.print()
    if not a.findings:
        console.print("No findings.")
        return
    console.print("[bold]Findings[/bold], largest saving first")
    for i, f in enumerate(a.findings, 1):
        cost = verdict_text.cost(f, a)
        head = f"{i}. {f.severity}: {verdict_text.title(f)}" + (f" ({cost})" if cost else "")
        prose(console, head, indent=1, style=_SEVERITY_STYLE.get(f.severity, ""), hang=3)
        prose(console, f"{f.rule} {f.code}: {f.message}", indent=4)
        if f.fix:
            prose(console, f"fix: {f.fix}", indent=4)
        if f.evidence:
            where = ", ".join(
                f"{names.get(e.path, e.path)}:{e.line}" for e in f.evidence[:EVIDENCE_SHOWN]
            )
            more = len(f.evidence) - EVIDENCE_SHOWN
            prose(console, f"evidence: {where}" + (f" (+{more})" if more > 0 else ""), indent=4)


def _dispatch(console: Console, a: Analysis) -> None:
    """Why oneDNN skipped implementations (``create:dispatch`` lines), counted."""
    one = len(a.dispatch) == 1
    table = _table(
        "Implementations oneDNN skipped, and why (create:dispatch lines, no times)",
        # the reason gives up room last: the source file and the implementation first
        [("kind", "left"), ("impl", "left"), ("lines", "right"),
         ("first at" if not one else "line", "whole", 1), ("source", "flex", 2),
         ("reason", "left")],
        "impl: named by the long form of the line; the source file says which otherwise",
    )  # fmt: skip
    for path, reasons in a.dispatch.items():
        for r in reasons:
            table.add_row(
                r.kind or "-",
                r.impl or "-",
                f"{r.lines:,}",
                str(r.first_line) if one else f"{path}:{r.first_line}",
                r.source or "-",
                r.reason,
            )
    console.print()
    table.print(console)


def _breakdown(console: Console, a: Analysis) -> None:
    s = a.summary
    if not s.exec_count:
        if a.dispatch:
            _dispatch(console, a)
        elif a.framework is None:  # a profiler trace alone is reported in its own section
            console.print("\n[bold]No oneDNN primitive events in the input.[/bold]")
        return
    typical = a.typical.by_kind()
    raw = {r["kind"]: r for r in s.by_kind}
    part = " (oneDNN, a part of the step)" if a.report_basis.unit == "step" else ""
    table = _table(
        f"Typical iteration by kind{part}; raw: sums of all passes",
        [
            ("kind", "left"),
            ("ms/iter", "right"),
            ("share", "right"),
            ("raw ms", "right"),
            ("raw", "right"),
            ("count", "right"),
        ],
    )
    for kind in dict.fromkeys([*typical, *raw]):
        r = raw.get(kind, {"time_ms": 0.0, "share": 0.0, "count": 0})
        v = typical.get(kind, 0.0)
        table.add_row(
            str(kind), ms_cell(v), pct_cell(a.typical.share(v)), ms_cell(r["time_ms"]),
            pct_cell(r["share"]), f"{r['count']:,}",
        )  # fmt: skip
    table.add_row(
        "total", ms_cell(a.typical_iteration_ms), "100.0%", ms_cell(s.total_time_ms),
        "100.0%", f"{s.exec_count:,}", style="bold",
    )  # fmt: skip
    console.print()
    table.print(console)
    extra = []
    if s.untimed_exec_count:
        extra.append(f"{s.untimed_exec_count:,} executions print no time")
    if s.graph_exec_count:
        extra.append(
            f"{s.graph_exec_count:,} graph partition executions ({ms(s.graph_time_ms)}, "
            "not added: their primitives print their own lines)"
        )
    if s.create_count:
        extra.append(f"{s.create_count:,} primitive creations, {ms(s.create_time_ms)}")
    if s.diagnostics:
        extra.append(
            "diagnostics: " + ", ".join(f"{d['operation']} {d['count']:,}" for d in s.diagnostics)
        )
    if a.window is not None:
        w = a.window
        names = unique_suffixes([sc.path for sc in a.log.scans])
        first = safe(names.get(w.first_input, w.first_input))
        where = f", from {first}:{w.first_line} on" if len(names) > 1 and w.first_input else ""
        extra.append(
            f"iterations, rules and the typical iteration use the last "
            f"{w.events_analysed:,} of {w.events_total:,} events (--window){where}; "
            "the raw sums use all of them"
        )
    extra.extend(a.notes)
    for text in extra:
        prose(console, text)


# ---------------------------------------------------------------------------------------
# the details


def _kind_table(title: str, rows: list[dict[str, Any]], keys: list[str], top: int) -> Grid:
    table = _table(
        title,
        [(k, "flex" if k in ("problem", "impl") else "left") for k in keys]
        + [("count", "right"), ("raw ms", "right"), ("raw", "right")],
        f"{len(rows) - top} more rows in --format json" if len(rows) > top else "",
    )
    for row in rows[:top]:
        table.add_row(
            *(str(str(row[k]) or "-") for k in keys),
            f"{row['count']:,}",
            ms_cell(row["time_ms"]),
            pct_cell(row["share"]),
        )
    return table


def _variant(row: dict[str, Any], a: Analysis) -> str:
    """What tells primitives of one kind, implementation and shape apart: a reorder's
    layouts (``abcd->ABcd16b16a``), another primitive's propagation kind."""
    if row["kind"] == "reorder":
        return flow_label(a.log.records[row["record"]].parsed_mds) or "-"
    prop = str(row["prop_kind"] or "-")
    return _PROP_SHORT.get(prop, prop)


#: Propagation kinds as short as benchdnn's ``--dir`` and still read as words.
_PROP_SHORT = {
    "forward_training": "fwd_train",
    "forward_inference": "fwd_infer",
    "forward_scoring": "fwd_infer",
    "backward_data": "bwd_data",
    "backward_weights": "bwd_weights",
    "backward": "bwd",
}


def _top(console: Console, a: Analysis, names: dict[str, str], top: int) -> None:
    terms = a.steady_stats
    rows = a.summary.top_primitives[:top]
    paths = {r["example"]["path"] for r in rows}
    # one file: its name once in the caption, the line numbers in the column
    one = next(iter(paths)) if len(paths) == 1 else None
    table = _table(
        "Top primitives: steady median and p95 per run, raw totals",
        [
            ("kind", "left"),
            ("impl", "flex"),
            ("problem", "flex"),
            ("variant", "flex"),
            # left out of a narrow row first: counts and raw sums; ms/iter last
            ("/iter", "right", 3),
            ("median", "right", 4),
            ("p95", "right", 5),
            ("ms/iter", "right", 1),
            ("raw ms", "right", 6),
            ("count", "right", 7),
            ("line" if one is not None else "first at", "whole", 2),
        ],
        f"first at: lines of {names.get(one, one)}" if one is not None else "",
    )
    part = a.typical.by_record
    steady = max(a.steady.divisor, 1)
    for r in rows:
        rid = r["record"]
        t = terms.loc[rid] if rid in terms.index else None
        where = r["example"]
        table.add_row(
            str(r["kind"]),
            str(r["impl"] or "-"),
            str(r["problem"]),
            _variant(r, a),
            f"{t['count'] / steady:g}" if t is not None else "0",
            ms_cell(t["median_ms"]) if t is not None else "-",
            ms_cell(t["p95_ms"]) if t is not None else "-",
            ms_cell(float(part.get(rid, 0.0))),
            ms_cell(r["time_ms"]),
            f"{r['count']:,}",
            str(where["line"]) if one is not None
            else f"{names.get(where['path'], where['path'])}:{where['line']}",
        )  # fmt: skip
    table.print(console)


def _passes(console: Console, a: Analysis, top: int) -> None:
    st = a.steady
    if st.passes <= 1:
        return
    times = st.times
    keep = list(range(len(times)))
    if len(times) > top + 1:
        keep = keep[: top // 2] + keep[len(times) - (top - top // 2) :]
    rows = times.iloc[keep]
    it = a.iterations
    cut = {
        "steps": f"cut at the program's step lines `{safe(it.step_line)}`; ",
        "markers": "cut at the marker lines; ",
    }.get(it.method, "")
    table = _table(
        f"Passes ({cut}{st.rule})",
        [("pass", "right"), ("state", "left"), ("execs", "right"), ("raw ms", "right"),
         ("reorder ms", "right"), ("lines", "left")],
        "" if len(keep) == len(times) else f"{len(times)} passes, first and last shown",
    )  # fmt: skip
    for r in rows.itertuples(index=False):
        state = "steady" if r.steady else ("slow warm-up" if r.slow else "warm-up")
        table.add_row(
            str(r.iteration), state, f"{r.exec_count:,}", ms_cell(r.time_ms),
            ms_cell(r.reorder_ms), f"{r.first_line}-{r.last_line}",
        )  # fmt: skip
    table.print(console)


def _framework(console: Console, a: Analysis, top: int) -> None:
    links = a.framework_links
    rows = links.get("framework_ops") or []
    if rows:
        table = _table(
            "Framework ops and their oneDNN primitives",
            [("framework op", "flex"), ("calls", "right"), ("ms", "right"),
             ("oneDNN ms", "right"), ("oneDNN", "right"), ("primitives", "flex")],
            f"{len(rows) - top} more rows in --format json" if len(rows) > top else "",
        )  # fmt: skip
        for r in rows[:top]:
            kinds = ", ".join(f"{k['kind']} x{k['count']:,}" for k in r.get("onednn", []))
            table.add_row(
                str(r["name"]), f"{r['calls']:,}", ms_cell(r.get("time_ms")),
                ms_cell(r.get("onednn_time_ms")), pct(r.get("onednn_share")), str(kinds),
            )  # fmt: skip
        table.print(console)
    without = links.get("framework_ops_without_onednn") or []
    if without:
        shown = ", ".join(
            f"{r['name']} x{r.get('calls', 0):,} ({ms(r.get('time_ms'))})" for r in without[:top]
        )
        prose(console, f"Framework ops without oneDNN: {shown}")
    link = links.get("framework_link") or {}
    for run in link.get("runs", []):
        what = run.get("trace") or run.get("table")
        if run.get("method"):
            by = ", ".join(f"{m} {c:,}" for m, c in run["by_method"].items())
            prose(
                console,
                f"Linked {run['primitives_linked']:,} of {run['primitives_in_window']:,} "
                f"primitives in the profiled window of {what} (by {by}); "
                f"{run['outside_window']:,} outside it",
            )
    for note in link.get("notes", []):
        prose(console, f"note: {note}", style="yellow")


def _details(console: Console, a: Analysis, names: dict[str, str], top: int) -> None:
    s = a.summary
    if s.exec_count:
        for title, rows, keys in (
            ("Time by implementation (raw)", s.by_impl, ["kind", "impl"]),
            ("Time by kind and shape (raw)", s.by_shape, ["kind", "problem"]),
            ("Forward / backward (raw)", s.by_direction, ["direction"]),
        ):
            console.print()
            _kind_table(title, rows, keys, top).print(console)
        console.print()
        _top(console, a, names, top)
        console.print()
        _passes(console, a, top)
        if s.create_count:
            console.print()
            _kind_table("Creations by cache state", s.by_cache, ["operation", "cache"], top).print(
                console
            )
    if a.log.framework is not None:
        console.print()
        _framework(console, a, top)


def render_terminal(
    analysis: Analysis, console: Console, top: int = 10, details: bool = False
) -> None:
    """Print the report to ``console``: the verdict first, the tables with ``details``."""
    a = analysis
    paths = [s.path for s in a.log.scans]
    if a.log.framework is not None:
        paths += [t.path for t in a.log.framework.traces]
        paths += [t.source for t in a.log.framework.tables if t.source not in paths]
    names = {p: safe(n) for p, n in unique_suffixes(paths).items()}
    _headline(console, a, names)
    _inputs(console, a, names)
    _findings(console, a, names)
    _breakdown(console, a)
    training_view.terminal_lines(a, console)
    framework_view.terminal_lines(a, console, min(top, 5))
    if details:
        _details(console, a, names, top)
    elif a.summary.exec_count or a.log.framework is not None:
        console.print()
        console.print(
            "[dim]--details: implementations, shapes, top primitives, passes, creations"
            + (", framework ops" if a.log.framework is not None else "")
            + "; --format json or html for everything[/dim]"
        )


def render_runs(
    analyses: list[Analysis],
    runs: list[Any],
    console: Console,
    top: int = 10,
    details: bool = False,
) -> None:
    """Several runs: one line each (what to fix first), then each run's report."""
    names = unique_suffixes([r.name for r in runs])
    table = _table(
        f"{len(runs)} runs (each input is a run unless it is part of one; --combine joins them)",
        [("run", "flex"), ("inputs", "right"), ("typical", "right"), ("fix first", "text")],
    )
    for a, run in zip(analyses, runs, strict=True):
        top_f = a.findings[0] if a.findings else None
        first = (
            f"{verdict_text.title(top_f)} ({verdict_text.cost(top_f, a) or top_f.severity})"
            if top_f is not None
            else "no finding"
        )
        b = a.report_basis
        unit = "step" if b.unit == "step" else "iter"
        table.add_row(names[run.name], str(len(run.paths)), f"{ms_cell(b.ms)} ms/{unit}", first)
    table.print(console)
    for run in runs:  # a trace of another run: said before any figure of either run
        if getattr(run, "note", ""):
            console.print(safe(run.note), markup=False)
    for i, (a, run) in enumerate(zip(analyses, runs, strict=True), 1):
        console.print()
        console.rule(f"{i}. {safe(run.name)}", align="left")
        render_terminal(a, console, top, details)
