"""``dnnlens diff`` as a document (JSON), a terminal report and markdown (a PR comment).

Every figure comes from :class:`~dnnlens.analysis.diff.Diff`, whose sides are taken from the
two analyses; this module only lays them out.
"""

from __future__ import annotations

import json
from typing import Any

from dnnlens._version import __version__
from dnnlens.analysis.confidence import Confidence
from dnnlens.analysis.diff import Diff, Side, StepSide
from dnnlens.analysis.training import TrainingStep
from dnnlens.fmt import ms, ms_cell, pct_cell, signed_pct, speed
from dnnlens.report.json_report import training_doc
from dnnlens.report.schema import (
    SCHEMA_VERSION,
    DiffConfidenceDoc,
    DiffDoc,
    DiffSideDoc,
    DiffStepDoc,
    DiffTotalDoc,
    to_plain,
)


def _step_doc(step: StepSide | None) -> DiffStepDoc | None:
    if step is None:
        return None
    return DiffStepDoc(
        path=step.path,
        method=step.method,
        steps=step.steps,
        steady_steps=step.steady,
        warmup_steps=step.warmup,
        typical_step_ms=step.typical_ms,
        median_step_ms=step.median_ms,
        mean_step_ms=step.mean_ms,
        untracked_ms_per_step=step.untracked_ms,
        phases=dict(step.phases),
        onednn_ms_per_step=step.onednn_ms,
        iterations_per_step=step.iterations_per_step,
    )


def _side_doc(side: Side) -> DiffSideDoc:
    return DiffSideDoc(
        path=side.path,
        exec_count=side.exec_count,
        total_ms=side.total_ms,
        iterations=side.iterations,
        steady_iterations=side.steady_iterations,
        warmup_iterations=side.warmup,
        typical_iteration_ms=side.typical_ms,
        mean_iteration_ms=side.mean_ms,
        steady_median_ms=side.steady_median_ms,
        reorder_share_of_iteration=side.reorder_share,
        training=training_doc(side.training),
        step=_step_doc(side.step),
    )


def _ratio(a: float | None, b: float | None) -> float | None:
    from dnnlens.analysis.diff import ratio

    return None if a is None or b is None else ratio(a, b)


def diff_doc(d: Diff, fail_if_slower: float | None = None) -> DiffDoc:
    """The document of one diff."""
    b, n = d.compared_ms()
    slower = d.slower_fraction
    return DiffDoc(
        schema_version=SCHEMA_VERSION,
        dnnlens_version=__version__,
        verdict=verdict(d),
        basis=d.basis,
        base=_side_doc(d.base),
        new=_side_doc(d.new),
        total=DiffTotalDoc(
            base_ms=d.base.total_ms,
            new_ms=d.new.total_ms,
            speedup=_ratio(d.base.total_ms, d.new.total_ms),
            base_count=d.base.exec_count,
            new_count=d.new.exec_count,
            base_iterations=d.base.iterations,
            new_iterations=d.new.iterations,
            per_iteration=d.base.iterations > 0 and d.new.iterations > 0,
            base_typical_iteration_ms=d.base.typical_ms,
            new_typical_iteration_ms=d.new.typical_ms,
            typical_speedup=_ratio(d.base.typical_ms, d.new.typical_ms),
            base_mean_iteration_ms=d.base.mean_ms,
            new_mean_iteration_ms=d.new.mean_ms,
            basis=d.basis,
            compared_base_ms=b,
            compared_new_ms=n,
            compared_speedup=d.speedup,
            slower_pct=None if slower is None else 100.0 * slower,
        ),
        kinds=d.kinds,
        primitives=d.primitives,
        appeared=d.with_status("appeared"),
        vanished=d.with_status("vanished"),
        implementation_changes=d.with_status("changed"),
        iterations=d.iterations,
        fail_if_slower_pct=None if fail_if_slower is None else 100.0 * fail_if_slower,
        unit=d.unit,
        phases=d.phases if d.unit == "step" else None,
        ops=d.ops if d.unit == "step" else None,
        steps=d.steps if d.unit == "step" else None,
        notes=list(d.notes),
        confidence=DiffConfidenceDoc(**d.confidence.to_json()),
    )


def render_json(d: Diff, fail_if_slower: float | None = None) -> str:
    """The diff as JSON text."""
    return json.dumps(to_plain(diff_doc(d, fail_if_slower)), indent=2) + "\n"


# ---------------------------------------------------------------------------------------
# wording shared by terminal and markdown


def _delta(base: float | None, new: float | None) -> str:
    q = _ratio(new, base)
    if q is None:
        return "new" if (new or 0) > 0 and not (base or 0) > 0 else "-"
    return signed_pct(q - 1)


def verdict(d: Diff) -> str:
    """One sentence: faster or slower, by how much, on which basis; for steps, the phase
    and the op that changed most."""
    b, n = d.compared_ms()
    if d.confidence.different_workloads:
        share = d.confidence.workload_overlap or 0.0
        return (
            f"Different workloads, no speed ratio: only {100 * share:.0f}% of a run's time "
            f"is work the other run does too; {d.basis_text} {ms(b)} -> {ms(n)}."
        )
    if d.unit == "step":
        return (
            f"NEW is {speed(d.speedup)} {d.basis_text}: {ms(b)} -> {ms(n)} ({_delta(b, n)})"
            + "".join(f"; {part}" for part in largest_changes(d))
            + "."
        )
    if d.base.exec_count == 0 or d.new.exec_count == 0:
        which = (
            "Neither run has"
            if d.base.exec_count == d.new.exec_count
            else ("BASE has" if d.base.exec_count == 0 else "NEW has")
        )
        return f"{which} no primitive executions."
    return (
        f"NEW is {speed(d.speedup)} {d.basis_text}: {ms(b)} -> {ms(n)} ({_delta(b, n)}); "
        f"total {ms(d.base.total_ms)} -> {ms(d.new.total_ms)}, "
        f"{d.base.exec_count:,} -> {d.new.exec_count:,} executions."
    )


def confidence_line(d: Diff) -> str:
    """The confidence of the verdict and why, in one sentence."""
    return confidence_sentence(d.confidence)


def confidence_sentence(c: Confidence) -> str:
    """A confidence and why, in one sentence (``diff``, and each run of ``fleet diff``)."""
    return f"Confidence: {c.level}: {c.reason}."


def largest_changes(d: Diff) -> list[str]:
    """The phase and the op (by self time per step) that changed most, and oneDNN's part
    of the step, in words (steps only)."""
    out = []
    if d.phases:
        p = max(d.phases, key=lambda r: abs(r["delta_ms"]))
        out.append(
            f"largest phase change {p['phase']} {ms(p['base_ms_per_step'])} -> "
            f"{ms(p['new_ms_per_step'])} ({_delta(p['base_ms_per_step'], p['new_ms_per_step'])})"
        )
    if d.ops:
        o = d.ops[0]
        what = {"appeared": " (only in NEW)", "vanished": " (only in BASE)"}.get(o["status"], "")
        calls = (
            f", {o['base_calls_per_step']:g} -> {o['new_calls_per_step']:g} calls"
            if o["base_calls_per_step"] != o["new_calls_per_step"]
            else ""
        )
        out.append(
            f"largest op change {o['name']}{what}: self {ms(o['base_self_ms_per_step'])} -> "
            f"{ms(o['new_self_ms_per_step'])} per step{calls}"
        )
    bs, ns = d.base.step, d.new.step
    if bs is not None and ns is not None and (bs.onednn_ms is not None or ns.onednn_ms is not None):
        out.append(f"oneDNN {ms(bs.onednn_ms)} -> {ms(ns.onednn_ms)} of the step")
    return out


def _steps_text(st: StepSide) -> str:
    """A side's steps in words: steady and warm-up steps of a trace, a table's window."""
    if st.method == "table_window":
        return "a key_averages table: its profiled window is one step (totals)"
    if st.from_table:
        return f"{st.steps} steps of a key_averages table (totals / steps)"
    return (
        f"{st.steady} steady of {st.steps} steps ({st.warmup} warm-up), "
        f"median step {ms(st.median_ms)}"
    )


def steady_line(d: Diff) -> str:
    """The steady passes (or steps) of both runs: counts, warm-up left out, and medians."""
    if d.unit == "step":
        parts = []
        for name, side in (("BASE", d.base), ("NEW", d.new)):
            st = side.step
            assert st is not None
            parts.append(f"{name} {_steps_text(st)}")
        bs, ns = d.base.step, d.new.step
        assert bs is not None and ns is not None
        other = "mean" if d.basis == "typical" else "typical"
        b = bs.mean_ms if other == "mean" else bs.typical_ms
        n = ns.mean_ms if other == "mean" else ns.typical_ms
        return "; ".join(parts) + f". By the {other} step: {ms(b)} -> {ms(n)} ({_delta(b, n)})."
    parts = []
    for name, s in (("BASE", d.base), ("NEW", d.new)):
        parts.append(
            f"{name} {s.steady_iterations} steady of {s.iterations} passes "
            f"({s.warmup} warm-up), median pass {ms(s.steady_median_ms)}"
        )
    other = "mean" if d.basis == "typical" else "typical"
    b = d.base.mean_ms if other == "mean" else d.base.typical_ms
    n = d.new.mean_ms if other == "mean" else d.new.typical_ms
    return "; ".join(parts) + f". By the {other} iteration: {ms(b)} -> {ms(n)} ({_delta(b, n)})."


def _names(names: list[str]) -> str:
    return ", ".join(names) or "-"


def _pair(base: str, new: str) -> str:
    """``base -> new``, or the one value when both sides have it."""
    return base if base == new else f"{base} -> {new}"


def _layouts(names: list[str]) -> str:
    return " | ".join(names) or "-"


Section = tuple[str, list[str], list[list[str]], str]


def step_sections(d: Diff, top: int) -> list[Section]:
    """The framework step's tables (both sides have one): the step, its phases, the ops
    with the largest changes of self time per step, and the steps side by side."""
    bs, ns = d.base.step, d.new.step
    if d.unit != "step" or bs is None or ns is None:
        return []

    def pair(b: float | None, n: float | None) -> list[str]:
        return [f"{ms_cell(b)} -> {ms_cell(n)}", _delta(b, n)]

    rows = [
        ["typical step", *pair(bs.typical_ms, ns.typical_ms)],
        ["median step (wall)", *pair(bs.median_ms, ns.median_ms)],
        ["mean step (wall, all steps)", *pair(bs.mean_ms, ns.mean_ms)],
        ["outside any op", *pair(bs.untracked_ms, ns.untracked_ms)],
    ]
    if bs.onednn_ms is not None or ns.onednn_ms is not None:
        rows.append(["oneDNN part", *pair(bs.onednn_ms, ns.onednn_ms)])
    tables = {side.from_table for side in (bs, ns)}  # how each side's typical step is made
    words = " and ".join(
        text
        for text, table in (
            ("calls per steady step x median duration, summed", False),
            ("a table's totals / steps", True),
        )
        if table in tables
    )
    cap = (
        f"steps: {bs.steps} ({bs.method.replace('_', ' ')}) -> {ns.steps} "
        f"({ns.method.replace('_', ' ')}); typical step: {words} (docs/framework.md)"
    )
    out: list[Section] = [("Framework step", ["", "ms/step", "change"], rows, cap)]
    rows = [
        [
            p["phase"],
            f"{ms_cell(p['base_ms_per_step'])} -> {ms_cell(p['new_ms_per_step'])}",
            _delta(p["base_ms_per_step"], p["new_ms_per_step"]),
            f"{pct_cell(p['base_share'])} -> {pct_cell(p['new_share'])}",
        ]
        for p in d.phases
    ]
    out.append(("Phases per typical step", ["phase", "ms/step", "change", "share"], rows, ""))
    shown = d.ops[:top]
    rows = [
        [
            o["name"] + {"appeared": " (new)", "vanished": " (gone)"}.get(o["status"], ""),
            o["phase"],
            f"{o['base_calls_per_step']:g} -> {o['new_calls_per_step']:g}",
            f"{ms_cell(o['base_self_ms_per_step'])} -> {ms_cell(o['new_self_ms_per_step'])}",
            _delta(o["base_self_ms_per_step"], o["new_self_ms_per_step"]),
        ]
        for o in shown
    ]
    gone = sum(1 for o in d.ops if o["status"] == "vanished")
    new = sum(1 for o in d.ops if o["status"] == "appeared")
    cap = f"{len(d.ops)} op names ({gone} only in BASE, {new} only in NEW)" + (
        f"; {len(d.ops) - top} more in --format json" if len(d.ops) > top else ""
    )
    out.append(
        (
            "Ops by self time per step, largest changes first",
            ["op", "phase", "calls", "self ms", "change"],
            rows,
            cap,
        )
    )
    steps = d.steps if len(d.steps) <= top else d.steps[: top // 2] + d.steps[-(top - top // 2) :]
    rows = [
        [
            str(st["step"]) + (" (warm-up)" if st["warmup"] else ""),
            ms_cell(st["base_ms"]),
            ms_cell(st["new_ms"]),
            _delta(st["base_ms"], st["new_ms"]),
        ]
        for st in steps
    ]
    cap = f"{len(d.steps)} steps, wall time" + (
        "" if len(d.steps) <= top else ", first and last shown"
    )
    out.append(("Per step", ["step", "base ms", "new ms", "change"], rows, cap))
    return out


def sections(d: Diff, top: int) -> list[Section]:
    """(title, header, rows, caption) of every table, shared by terminal and markdown:
    the framework step's first when both sides have one, the oneDNN tables when either
    side has primitive executions."""
    out = step_sections(d, top)
    if d.has_onednn:
        part = " (oneDNN)" if d.unit == "step" else ""
        out += [(title + part, *rest) for title, *rest in _onednn_sections(d, top)]
    return out


def _onednn_sections(d: Diff, top: int) -> list[Section]:
    """The oneDNN tables: kinds, primitives that vanished, appeared or changed, passes."""
    out = []
    head = ["kind", "count", "total ms", "change", "share", "typical iteration ms"]
    rows = [
        [
            k["kind"],
            f"{k['base_count']:,} -> {k['new_count']:,}",
            f"{ms_cell(k['base_ms'])} -> {ms_cell(k['new_ms'])}",
            _delta(k["base_ms"], k["new_ms"]),
            f"{pct_cell(k['base_share'])} -> {pct_cell(k['new_share'])}",
            f"{ms_cell(k['base_typical_ms'])} -> {ms_cell(k['new_typical_ms'])}",
        ]
        for k in d.kinds
    ]
    cap = (
        "total: summed raw times of all passes; typical iteration: the kind's part of the "
        "typical steady iteration (typical run of each position in a pass)"
    )
    out.append(("Time by kind", head, rows, cap))

    def prim_rows(items: list[dict[str, Any]], side: str) -> list[list[str]]:
        return [
            [
                p["kind"],
                p["shape"],
                p["layouts"] or _layouts(p[f"{side}_layouts"]),
                _names(p[f"{side}_impl"]),
                f"{p[f'{side}_count']:,}",
                ms_cell(p[f"{side}_ms"]),
            ]
            for p in items[:top]
        ]

    phead = ["kind", "shape", "layouts", "impl", "count", "total ms"]
    for title, status, side in (
        ("Vanished (only in BASE)", "vanished", "base"),
        ("Appeared (only in NEW)", "appeared", "new"),
    ):
        items = d.with_status(status)
        total = sum(p[f"{side}_ms"] for p in items)
        cap = f"{len(items)} primitive(s), {ms(total)}"
        if len(items) > top:
            cap += f"; {len(items) - top} more in --format json"
        out.append((title, phead, prim_rows(items, side), cap))
    training = _training_section(d)
    if training is not None:
        out.append(training)
    changes = d.with_status("changed")
    rows = [
        [
            p["kind"],
            p["shape"],
            _pair(_names(p["base_impl"]), _names(p["new_impl"])),
            _pair(_layouts(p["base_layouts"]), _layouts(p["new_layouts"])),
            f"{p['base_count']:,} -> {p['new_count']:,}",
            f"{ms_cell(p['base_ms'])} -> {ms_cell(p['new_ms'])}",
        ]
        for p in changes[:top]
    ]
    cap = f"{len(changes)} primitive(s); one value where both sides have it" + (
        f"; {len(changes) - top} more in --format json" if len(changes) > top else ""
    )
    out.append(
        (
            "Implementation or layout changed",
            ["kind", "shape", "impl", "layouts", "count", "total ms"],
            rows,
            cap,
        )
    )
    same = d.with_status("same")
    rows = [
        [
            p["kind"],
            p["shape"],
            p["layouts"] or _names(p["base_impl"]),
            f"{p['base_count']:,} -> {p['new_count']:,}",
            f"{ms_cell(p['base_ms'])} -> {ms_cell(p['new_ms'])}",
            _delta(p["base_ms"], p["new_ms"]),
        ]
        for p in same[:top]
    ]
    out.append(
        (
            "Unchanged primitives, largest time changes first",
            ["kind", "shape", "impl/layouts", "count", "total ms", "change"],
            rows,
            f"{len(same)} primitive(s)",
        )
    )
    if d.iterations:
        its = d.iterations
        shown = its if len(its) <= top else its[: top // 2] + its[-(top - top // 2) :]
        rows = [
            [
                str(it["iteration"]) + (" (warm-up)" if it["warmup"] else ""),
                ms_cell(it["base_ms"]),
                ms_cell(it["new_ms"]),
                _delta(it["base_ms"], it["new_ms"]),
            ]
            for it in shown
        ]
        cap = f"{len(its)} passes" + ("" if len(its) <= top else ", first and last shown")
        out.append(("Per pass", ["pass", "base ms", "new ms", "change"], rows, cap))
    return out


def _training_section(d: Diff) -> tuple[str, list[str], list[list[str]], str] | None:
    """The training step of both sides, part by part (when either side trains)."""
    from dnnlens.analysis.training import PARTS

    b, n = d.base.training, d.new.training
    if b is None and n is None:
        return None

    def cell(step: TrainingStep | None, name: str) -> tuple[float | None, float | None]:
        if step is None:
            return None, None
        part = step.part(name)
        return part.ms, step.share(part.ms)

    rows = []
    for name, _, label in PARTS:
        (bm, bs), (nm, ns) = cell(b, name), cell(n, name)
        if not (bm or nm):
            continue
        rows.append(
            [label, f"{ms_cell(bm)} -> {ms_cell(nm)}", _delta(bm, nm),
             f"{pct_cell(bs)} -> {pct_cell(ns)}"]
        )  # fmt: skip
    bt = b.step_ms if b is not None else None
    nt = n.step_ms if n is not None else None
    whole = " -> ".join("100.0%" if x is not None else "-" for x in (b, n))
    rows.append(["step", f"{ms_cell(bt)} -> {ms_cell(nt)}", _delta(bt, nt), whole])
    ratios = [
        f"{s.backward_forward_ratio:.2f}" if s and s.backward_forward_ratio is not None else "-"
        for s in (b, n)
    ]
    rows.append(["backward/forward (compute)", " -> ".join(ratios), "", ""])
    cap = (
        "each side's typical steady step by pass and reorder role (parts of its typical "
        "iteration); - for a side without a backward pass"
    )
    return ("Training step", ["part", "ms/step", "change", "share"], rows, cap)


def side_text(s: Side) -> str:
    """What one side is: its steps and typical step, its executions, passes and total."""
    parts = []
    if s.step is not None and s.step.method == "table_window":
        parts.append(f"a profiled window of {ms(s.step.typical_ms)} (key_averages table)")
    elif s.step is not None:
        parts.append(f"{s.step.steps} steps, typical step {ms(s.step.typical_ms)}")
    if s.exec_count or s.step is None:
        parts.append(f"{s.exec_count:,} executions, {ms(s.total_ms)}, {s.iterations} passes")
    return "; ".join(parts)


def render_markdown(d: Diff, top: int = 15) -> str:
    """GitHub-flavoured markdown (a PR comment)."""
    from dnnlens.textsafe import markdown_text as cell  # every text from an input

    lines = [
        "## dnnlens diff",
        "",
        f"- BASE: {cell(d.base.path)} ({cell(side_text(d.base))})",
        f"- NEW: {cell(d.new.path)} ({cell(side_text(d.new))})",
        "",
        f"**{cell(verdict(d))}**",
        "",
        cell(confidence_line(d), starts_line=True),
        "",
        cell(steady_line(d), starts_line=True),
        "",
        *(f"_note: {cell(n)}_\n" for n in d.notes),
    ]
    for title, head, rows, cap in sections(d, top):
        lines += [f"### {cell(title)}", ""]
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


#: Diff columns that hold numbers (never cut), text that shrinks first, and what may be left
#: out of a row too narrow for it (highest first): shares and counts before times.
_NUMERIC = {"count", "total ms", "change", "base ms", "new ms", "pass", "ms/step", "step",
            "calls", "self ms", "share", "typical iteration ms"}  # fmt: skip
_FLEX = {"shape", "layouts", "impl/layouts", "op"}  # ``impl`` gives up room after these
_LEAVE = {"share": 3, "count": 2, "calls": 2, "total ms": 1}


def _column(head: str) -> tuple[str, str, int]:
    justify = "right" if head in _NUMERIC else "flex" if head in _FLEX else "left"
    return head, justify, _LEAVE.get(head, 0)


def render_terminal(d: Diff, console: Any, top: int = 15) -> None:
    """The verdict first, then the tables, laid out to the console width."""
    from dnnlens.report.text_layout import Grid, prose, unique_suffixes

    style = "green" if (d.slower_fraction or 0.0) <= 0 else "red"
    if d.confidence.level != "high":
        style = "yellow"
    prose(console, verdict(d), style=f"bold {style}")
    prose(console, confidence_line(d), style="" if d.confidence.level == "high" else "yellow")
    prose(console, steady_line(d))
    names = unique_suffixes([d.base.path, d.new.path])
    for name, s in (("BASE", d.base), ("NEW", d.new)):
        prose(console, f"{name} {names.get(s.path, s.path)}: {side_text(s)}", indent=2)
    for note in d.notes:
        prose(console, f"note: {note}", style="yellow")
    for title, head, rows, cap in sections(d, top):
        if not rows and title.startswith("Unchanged"):
            continue
        grid = Grid(title, [_column(h) for h in head], cap)
        for r in rows:
            grid.add_row(*(str(c) for c in r))
        if not rows:
            grid.add_row(*(["none"] + [""] * (len(head) - 1)))
        console.print()
        grid.print(console)
