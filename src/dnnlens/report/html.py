"""The self-contained HTML report: one file, inline CSS and SVG, no script, nothing fetched.

Top to bottom: the banner (the finding that costs the most per iteration, whatever rule it
is, with a link to every finding), a table of contents, headline cards, the findings with
their fix and evidence, then the detail: where the time went, framework ops (when a profiler
trace or table was given), one iteration in order, time per pass, the reorders, time by kind
and implementation, the roofline, the top primitives and the inputs.

Every figure is the analysis's own (:class:`~dnnlens.analysis.analysis.Analysis`): this
module computes none. Shares are of the typical steady iteration unless a label says "raw"
(summed time fields of all passes). Every string that comes from a log (paths,
implementation names, problems, layouts, messages, evidence lines) goes through
:func:`~dnnlens.report.svg_charts.esc`: logs are untrusted input, and the page carries no
``<script>`` of its own.
"""

from __future__ import annotations

import json
import math
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

from dnnlens._version import __version__
from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.columns import str_values
from dnnlens.analysis.findings import Finding
from dnnlens.analysis.layouts import flow_label, md_layouts
from dnnlens.analysis.line_texts import NOT_KEPT
from dnnlens.fmt import ms, ms_cell, pct, pct_cell
from dnnlens.report import framework_view, training_view, verdict_text
from dnnlens.report.svg_charts import (
    Bar,
    Column,
    Flow,
    Item,
    Segment,
    color_for,
    esc,
    flow_chart,
    hbar_chart,
    legend,
    share_bar,
    stacked_columns,
    timeline,
)

TOP_ROWS = 15
MAX_COLUMNS = 120
MAX_STRIP_ITEMS = 4000
EVIDENCE_SHOWN = 3
EVIDENCE_TEXT = 400
WEIGHT_COLOR = "#ff9896"
ALERT_SHARE = 0.10

_CODE = re.compile(r"`([^`\n]+)`")


def prose(text: str) -> str:
    """Escaped text with its inline ``code`` (between backticks) set as ``<code>``."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", esc(text))


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{body}</section>'


# ---------------------------------------------------------------------------------------
# the verdict: banner, contents, cards, findings


def _banner(a: Analysis) -> str:
    text = prose(verdict_text.headline(a))
    if not a.findings:
        return f'<div class="banner ok" id="verdict"><p class="head">{text}</p></div>'
    top = a.findings[0]
    share = a.share_of(top)  # None: not about time, or no basis to be a part of
    bar = ""
    if share is not None:
        width = max(0.5, min(100.0, 100 * share))
        bar = (
            f'<div class="meter" title="{esc(pct(share))} of {esc(a.basis_label(top))}">'
            f'<i style="width:{width:.1f}%"></i></div>'
        )
    alert = share is not None and share >= ALERT_SHARE
    cls = "banner" if top.severity != "info" or alert else "banner ok"
    links = "".join(
        f'<li><a href="#finding-{i}">{esc(verdict_text.title(f))}</a>'
        f'<span class="tag"> {esc(verdict_text.cost(f, a) or f.severity)}</span></li>'
        for i, f in enumerate(a.findings, 1)
    )
    return (
        f'<div class="{cls}" id="verdict"><p class="head">{text}</p>{bar}'
        f"<p>{prose(top.message)}</p>"
        + (f'<p class="fix"><b>Fix:</b> {prose(top.fix)}</p>' if top.fix else "")
        + f'<ol class="links">{links}</ol></div>'
    )


def _contents(entries: list[tuple[str, str]]) -> str:
    items = "".join(f'<a href="#{anchor}">{esc(title)}</a>' for anchor, title in entries)
    return f'<nav class="toc" aria-label="contents">{items}</nav>'


def _framework_cards(a: Analysis) -> list[tuple[str, str, str, bool]]:
    """The cards of a profiler trace or table given without a verbose log."""
    doc = a.framework.to_json() if a.framework is not None else None
    if doc is None:
        return []
    st = doc["steps"]
    phases = sorted(doc["phases"], key=lambda p: -p["ms_per_step"])
    top = phases[0] if phases else None
    return [
        ("Typical step", ms(st["typical_step_ms"]),
         f"over {st['steady']} steady of {st['count']} steps ({st['warmup']} warm-up)", False),
        ("Largest phase", top["phase"] if top else "-",
         f"{ms(top['ms_per_step'])} per step, {pct(top['share'])}" if top else "", False),
        ("oneDNN", "no verbose log", "give the run's ONEDNN_VERBOSE log to join the two", False),
    ]  # fmt: skip


def _step_cards(a: Analysis) -> list[tuple[str, str, str, bool]]:
    """The first card of a report on a step with a verbose log: the step."""
    fw = a.framework
    if fw is None or a.report_basis.unit != "step" or not a.summary.exec_count:
        return []
    st = fw.to_json()["steps"]
    return [
        ("Typical step", ms(fw.typical_step_ms),
         f"over {st['steady']} steady of {st['count']} steps ({st['warmup']} warm-up): "
         "the basis of every share", False),
    ]  # fmt: skip


def _cards(a: Analysis) -> str:
    s, st, part = a.summary, a.steady, a.reorder_part
    fw_cards = _framework_cards(a) if not s.exec_count else []
    cards = fw_cards or _step_cards(a) + [
        (
            "Typical iteration" + (" (oneDNN)" if a.report_basis.unit == "step" else ""),
            ms(a.typical_iteration_ms),
            (f"{verdict_text.onednn_part(a)}; " if a.report_basis.unit == "step" else "")
            + (
                f"over {st.divisor} steady of {st.passes} passes ({st.left_out_words})"
                if st.found
                else "no repeating iteration: the whole log"
            ),
            False,
        ),
        (
            "Reorders",
            pct(part.share),
            f"of the typical iteration ({ms(part.ms)}); raw sums {pct(part.raw_share)} "
            f"({ms(part.raw_ms)} in {part.raw_count:,} executions)",
            part.share is not None and part.share >= ALERT_SHARE,
        ),
        ("Primitive time, raw", ms(s.total_time_ms), f"{s.exec_count:,} executions", False),
    ]
    counts = {
        sev: sum(1 for x in a.findings if x.severity == sev) for sev in ("error", "warning", "info")
    }
    cards.append(
        (
            "Findings",
            f"{len(a.findings)}",
            ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "none",
            counts["error"] + counts["warning"] > 0,
        )
    )
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{" alert" if alert else ""}"><div class="k">{esc(k)}</div>'
            f'<div class="v">{esc(v)}</div><div class="d">{esc(d)}</div></div>'
            for k, v, d, alert in cards
        )
        + "</div>"
    )


def evidence_text(
    a: Analysis, findings: list[Finding], per_finding: int = EVIDENCE_SHOWN
) -> dict[tuple[str, int], str]:
    """The text of the evidence lines shown in the report, as the analysis carries it
    (:meth:`Analysis.line_texts`: what the reader kept; inputs are not read again)."""
    wanted = [(e.path, int(e.line)) for f in findings for e in f.evidence[:per_finding]]
    return {k: v[:EVIDENCE_TEXT] for k, v in a.line_texts(wanted).items()}


def _findings(a: Analysis) -> str:
    findings = a.findings
    if not findings:
        return _section(
            "findings", "Findings", '<p class="note">No findings: no rule fired on this input.</p>'
        )
    texts = evidence_text(a, findings)
    out = [
        f'<p class="note">Largest saving first: by what each fix would save per typical '
        f"{a.report_basis.unit}; then the time of findings whose saving is unknown; findings "
        "that are not about time follow, most severe first.</p>"
    ]
    for i, x in enumerate(findings, 1):
        sev = x.severity if x.severity in ("error", "warning", "info") else "info"
        cost = verdict_text.cost(x, a)
        out.append(
            f'<div class="finding" id="finding-{i}">'
            f'<span class="sev {sev}">{esc(x.severity)}</span>'
            f"<b>{i}. {esc(verdict_text.title(x))}</b> "
            f'<span class="tag">{esc(x.rule)} {esc(x.code)}</span>'
            + (f'<p class="cost">{esc(cost)}</p>' if cost else "")
            + f"<p>{prose(x.message)}</p>"
        )
        if x.fix:
            out.append(f"<p><b>Fix:</b> {prose(x.fix)}</p>")
        for e in x.evidence[:EVIDENCE_SHOWN]:
            text = texts.get((e.path, int(e.line)))
            if e.op is not None:  # a trace event: its op, step and start say more than "{"
                text = f"{e.op} in {e.step or 'the trace'} at {e.ts_us or 0:,.0f} us"
            shown = (
                f"<pre>{esc(text)}</pre>"
                if text is not None
                else (f'<p class="note">{esc(NOT_KEPT)}</p>')
            )
            out.append(f'<div class="tag">{esc(e.path)}:{int(e.line)}</div>' + shown)
        if len(x.evidence) > EVIDENCE_SHOWN:
            out.append(
                f'<p class="note">and {len(x.evidence) - EVIDENCE_SHOWN} more '
                "evidence lines (all in --format json)</p>"
            )
        if x.data:
            data = json.dumps(x.data, indent=1, default=str, sort_keys=True)
            out.append(
                f"<details><summary>numbers behind it</summary><pre>{esc(data)}</pre></details>"
            )
        out.append("</div>")
    return _section("findings", f"Findings ({len(findings)})", "".join(out))


# ---------------------------------------------------------------------------------------
# where the time went


def _time_section(a: Analysis) -> str:
    by_kind = a.typical.by_kind()
    raw = a.summary.by_kind
    if not raw:
        return ""
    typical = a.typical_iteration_ms
    segs = [
        Segment(k, v, color_for(k), f"{k}: {ms(v)} per iteration, {pct(v / typical)}")
        for k, v in by_kind.items()
        if typical > 0
    ]
    raw_segs = [
        Segment(
            r["kind"],
            r["time_ms"],
            color_for(r["kind"]),
            f"{r['kind']}: {ms(r['time_ms'])} raw, {pct(r['share'])}, {r['count']:,} executions",
        )
        for r in raw
    ]
    body = ""
    if segs:
        body += (
            f'<p class="note">The typical steady iteration, {esc(ms(typical))}, by kind '
            "(the typical run of each position of a pass, over the steady passes):</p>"
            + share_bar(segs, label="typical iteration by kind")
        )
    body += (
        f'<p class="note">Raw sums of all passes, warm-up included '
        f"({esc(ms(a.summary.total_time_ms))}):</p>"
        + share_bar(raw_segs, label="raw time by kind")
        + legend([(r["kind"], color_for(r["kind"])) for r in raw])
    )
    return _section("time", "Where the time went", body)


def _framework(a: Analysis) -> str:
    links = a.framework_links
    fw = a.log.framework
    if fw is None:
        return ""
    rows = links.get("framework_ops") or []
    out = []
    if rows:
        out.append(
            "<table><tr><th>framework op</th><th class=n>calls</th><th class=n>time</th>"
            "<th class=n>self</th><th class=n>in oneDNN</th><th class=n>oneDNN share</th>"
            "<th>primitives</th><th>linked by</th></tr>"
        )
        for r in rows[:TOP_ROWS]:
            prims = ", ".join(f"{k['kind']} x{k['count']:,}" for k in r.get("onednn", []))
            out.append(
                f"<tr><td class=mono>{esc(r['name'])}</td><td class=n>{r['calls']:,}</td>"
                f"<td class=n>{esc(ms(r.get('time_ms')))}</td>"
                f"<td class=n>{esc(ms(r.get('self_ms')))}</td>"
                f"<td class=n>{esc(ms(r.get('onednn_time_ms')))}</td>"
                f"<td class=n>{esc(pct(r.get('onednn_share')))}</td>"
                f"<td class=mono>{esc(prims)}</td><td>{esc(r.get('link', ''))}</td></tr>"
            )
        out.append("</table>")
    without = links.get("framework_ops_without_onednn") or []
    if without:
        names = ", ".join(
            f"{r['name']} x{r.get('calls', 0):,} ({ms(r.get('self_ms'))} self)"
            for r in without[:TOP_ROWS]
        )
        out.append(f'<p class="note">Framework ops that reached no oneDNN primitive: '
                   f"{esc(names)}</p>")  # fmt: skip
    if not rows and not without:
        ops = sum(len(t.ops) for t in fw.traces)
        out.append(
            f'<p class="note">{len(fw.traces)} trace(s) with {ops:,} ops and '
            f"{len(fw.tables)} profiler table(s); no oneDNN primitive to link them to.</p>"
        )
    for note in links.get("framework_link", {}).get("notes", []):
        out.append(f'<p class="note">{esc(note)}</p>')
    return _section("framework", "Framework ops and their oneDNN primitives", "".join(out))


def _node_label(node: pd.Series) -> str:
    if node["kind"] == "reorder":
        return f"{node['src_layout']}→{node['dst_layout']}"
    return str(node["kind"])[:4]


def _iteration_strip(a: Analysis) -> str:
    nodes = a.graph.nodes if len(a.execs) else pd.DataFrame()
    steady = nodes[nodes["position"] >= 0].sort_values("position") if len(nodes) else nodes
    if steady.empty:
        return ""
    run = a.typical.terms.set_index("node")["run_ms"]
    reorders = a.reorders.set_index("node") if len(a.reorders) else None
    items, keys = [], {}
    for n in steady.head(MAX_STRIP_ITEMS).itertuples(index=False):
        kind = str(n.kind)
        value = float(run.get(str(n.node), 0.0))
        value = value if math.isfinite(value) else 0.0
        tip = f"#{int(n.position)} {kind} {n.impl} {n.problem}: {ms(value)} typical run"
        color, key = color_for(kind), kind
        if kind == "reorder" and reorders is not None and n.node in reorders.index:
            r = reorders.loc[n.node]
            tip += f"; {r['tensor']} reorder" + (", round trip" if r["round_trip"] else "")
            if r["tensor"] == "weight":
                color, key = WEIGHT_COLOR, "reorder (weights)"
        keys[key] = color
        label = _node_label(pd.Series(n._asdict()))
        items.append(Item(value, color, label, tip, kind == "reorder", str(int(n.position))))
    note = (
        f"The {len(steady):,} primitives of one steady pass in the order they run, numbered "
        "by position; width is their typical run (median over the steady passes, so a few "
        "slow outliers do not stretch it). Reorders are marked ▲ below the strip; hover for "
        "details."
    )
    return _section(
        "iteration",
        "One iteration, in order: where the reorders sit",
        timeline(items, label="one iteration")
        + legend(sorted(keys.items()))
        + f'<p class="note">{esc(note)}</p>',
    )


def _passes(a: Analysis) -> str:
    st = a.steady
    times = st.times
    if st.passes <= 1:
        return ""
    ex = a.execs
    it = ex["iteration"].to_numpy()
    keep = it >= 0
    kinds = str_values(ex["kind"])[keep]
    t = ex["time_ms"].to_numpy(dtype=float)[keep]
    t = pd.Series(t).fillna(0.0).to_numpy()
    it = it[keep]
    order = list(a.typical.by_kind()) or [r["kind"] for r in a.summary.by_kind]
    order = (["reorder"] if "reorder" in order else []) + [k for k in order if k != "reorder"]
    per_kind = {
        k: pd.Series(t[kinds == k]).groupby(it[kinds == k]).sum().reindex(
            range(st.passes), fill_value=0.0
        ).to_numpy()
        for k in order
    }  # fmt: skip
    warm = ~times.set_index("iteration")["steady"].reindex(range(st.passes), fill_value=True)
    size = max(1, math.ceil(st.passes / MAX_COLUMNS))
    columns = []
    for start in range(0, st.passes, size):
        stop = min(start + size, st.passes)
        vals = {k: float(v[start:stop].mean()) for k, v in per_kind.items()}
        label = f"{start}" if size == 1 else f"{start}-{stop - 1}"
        tot = sum(vals.values())
        tip = f"pass {label}: {ms(tot)}" + "".join(
            f"; {k} {ms(v)}" for k, v in vals.items() if v > 0
        )
        columns.append(Column(label, vals, bool(warm.iloc[start]), tip))
    series = [(k, color_for(k)) for k in order]
    note = (
        f"{st.passes:,} passes found in the exec stream; {st.warmup_left_out} warm-up "
        f"(hatched: {st.rule})"
        + ("" if size == 1 else f"; each column is the mean of {size} passes")
        + ". Bars are raw sums per pass."
    )
    return _section(
        "passes",
        "Time per pass",
        stacked_columns(columns, series, label="time per pass")
        + legend(series)
        + f'<p class="note">{esc(note)}</p>',
    )


def _node_desc(nodes: pd.DataFrame, ids: str) -> str:
    if not ids:
        return "-"
    out = []
    for node in ids.split(","):
        if node in nodes.index:
            n = nodes.loc[node]
            extra = (
                f"{n['src_layout']}→{n['dst_layout']}"
                if n["kind"] == "reorder"
                else _short(str(n["problem"]), 34)
            )
            out.append(f"#{int(n['position'])} {n['kind']} {extra}")
        else:
            out.append(node)
    return ", ".join(out)


def _reorder_section(a: Analysis) -> str:
    r = a.reorders
    if r.empty:
        return ""
    part = a.reorder_part
    nodes = a.graph.nodes.set_index("node")
    groups = r.groupby(
        ["src_layout", "dst_layout", "src_dtype", "dst_dtype", "tensor"], dropna=False
    )
    flows = []
    for (sl, dl, sd, dd, tensor), g in groups:
        src = sl if sd == dd else f"{sd}:{sl}"
        dst = dl if sd == dd else f"{dd}:{dl}"
        value = float(g["iter_ms"].sum())
        color = WEIGHT_COLOR if tensor == "weight" else "#d62728"
        flows.append(
            Flow(str(src), str(dst), value, color, f"{src} -> {dst} ({tensor}): {ms(value)}")
        )
    head = (
        f'<p class="note">Reorders are {esc(pct(part.share))} of the typical iteration '
        f"({esc(ms(part.ms))} of {esc(ms(part.iteration_ms))}, "
        f"{part.per_iteration:g} per iteration): "
        + esc(", ".join(f"{k}s {ms(v)}" for k, v in sorted(part.by_tensor.items())))
        + f". Raw sums: {esc(pct(part.raw_share))} ({esc(ms(part.raw_ms))}).</p>"
    )
    body = [
        head,
        flow_chart(
            flows,
            height=max(180, 40 + 34 * len(flows)),
            left_title="from layout",
            right_title="to layout",
            label="reorder flow",
        ),
        legend([("activation reorders", "#d62728"), ("weight reorders", WEIGHT_COLOR)]),
        "<table><tr><th class=n>#</th><th>from → to</th><th>dims</th><th>role</th>"
        "<th>round trip</th><th>after</th><th>before</th><th class=n>per pass</th>"
        "<th class=n>median</th><th class=n>per iteration</th><th class=n>share</th>"
        "<th class=n>raw count</th><th class=n>raw time</th><th>first at</th></tr>",
    ]
    position = {str(n): int(p) for n, p in zip(nodes.index, nodes["position"], strict=True)}
    for x in sorted(
        r.to_dict("records"),
        key=lambda x: (position.get(x["node"], -1) < 0, position.get(x["node"], -1)),
    ):
        pos = position.get(x["node"], -1)
        flow = f"{x['src_layout']} → {x['dst_layout']}"
        if x["src_dtype"] != x["dst_dtype"]:
            flow = f"{x['src_dtype']}:{x['src_layout']} → {x['dst_dtype']}:{x['dst_layout']}"
        body.append(
            f"<tr class=reorder><td class=n>{pos if pos >= 0 else 'extra'}</td>"
            f"<td class='mono nw'>{esc(flow)}</td><td class='mono nw'>{esc(x['dims'])}</td>"
            f"<td>{esc(str(x.get('role') or x['tensor']).replace('_', ' '))}</td>"
            f"<td>{'yes' if x['round_trip'] else ''}</td>"
            f"<td class=mono>{esc(_node_desc(nodes, str(x['producer'])))}</td>"
            f"<td class=mono>{esc(_node_desc(nodes, str(x['consumer'])))}</td>"
            f"<td class=n>{x['per_iteration']:g}</td><td class=n>{esc(ms_cell(x['p50_ms']))}</td>"
            f"<td class=n>{esc(ms_cell(x['iter_ms']))}</td>"
            f"<td class=n>{esc(pct_cell(a.typical.share(x['iter_ms'])))}</td>"
            f"<td class=n>{int(x['count']):,}</td><td class=n>{esc(ms_cell(x['time_ms']))}</td>"
            f"<td class=mono>{esc(x['path'])}:{int(x['line'])}</td></tr>"
        )
    body.append("</table>")
    note = (
        "Each row is a reorder at its position in the iteration (# as in the strip), with "
        "the primitive whose output it reads and the one that reads its result; a round trip "
        "is a reorder that a later one undoes. Per iteration = runs per steady pass x the "
        "median run (ms); raw = every pass of the window, warm-up included."
    )
    return _section(
        "reorders",
        "Reorder flow: from layout to layout",
        "".join(body) + f'<p class="note">{esc(note)}</p>',
    )


def _breakdowns(a: Analysis) -> str:
    s = a.summary
    if not s.by_kind:
        return ""
    typical = a.typical
    kinds = [
        Bar(k, v, color_for(k), f"{ms(v)} · {pct(typical.share(v))}", f"{k}: per iteration")
        for k, v in list(typical.by_kind().items())[:TOP_ROWS]
    ]
    terms = typical.terms
    impls = []
    if len(terms):
        g = (
            terms.groupby(["kind", "impl"], sort=False)["iter_ms"]
            .sum()
            .sort_values(ascending=False)
        )
        impls = [
            Bar(
                f"{k} {i or '-'}",
                float(v),
                color_for(str(k)),
                f"{ms(float(v))} · {pct(typical.share(float(v)))}",
                f"{k} {i}: per iteration",
            )
            for (k, i), v in list(g.items())[:TOP_ROWS]
        ]
    return (
        '<div class="grid2" id="breakdowns"><section><h2>Typical iteration by kind</h2>'
        + hbar_chart(kinds, label="time by kind")
        + "</section><section><h2>Typical iteration by implementation</h2>"
        + hbar_chart(impls, label="time by implementation")
        + "</section></div>"
    )


def _roofline(a: Analysis) -> str:
    """Every distinct primitive on the roofline of the machine in the log's header."""
    from dnnlens.report.roofline_svg import roofline_svg

    points = a.primitives
    if not points:
        return ""
    machine = a.machine
    about = (
        f"Machine: {machine.isa}, f32 {machine.peak_label('f32')}, "
        f"{machine.bandwidth_label()}. Clock: {machine.sources.get('freq_ghz', '')}. "
        "Give the machine with --machine FILE (dnnlens machine probe -o FILE)"
    )
    return _section(
        "roofline",
        "Roofline",
        roofline_svg(points, machine)
        + f'<p class="note">{esc(about)}. Each point is one distinct primitive, coloured and '
        "labelled by kind and prop_kind: its FLOPs per call over its typical run "
        "(docs/cost-model.md). Reorders do no arithmetic and sit on the memory roof.</p>",
    )


def _top_table(a: Analysis) -> str:
    rows = a.summary.top_primitives[:TOP_ROWS]
    if not rows:
        return ""
    stats, part = a.steady_stats, a.typical.by_record
    steady = max(a.steady.divisor, 1)
    out = [
        "<table><tr><th>kind</th><th>impl</th><th>prop_kind</th><th>problem</th>"
        "<th>layouts</th><th class=n>per pass</th><th class=n>median</th><th class=n>p95</th>"
        "<th class=n>per iteration</th><th class=n>raw count</th><th class=n>raw time</th>"
        "<th class=n>raw share</th><th>first at</th></tr>"
    ]
    for r in rows:
        rid = r["record"]
        t = stats.loc[rid] if rid in stats.index else None
        mds = a.log.records[rid].parsed_mds
        layouts = (
            flow_label(mds).replace("->", " → ") if r["kind"] == "reorder" else md_layouts(mds)
        )
        cls = " class=reorder" if r["kind"] == "reorder" else ""
        cells = (
            f"<td class=n>{t['count'] / steady:g}</td><td class=n>{ms_cell(t['median_ms'])}</td>"
            f"<td class=n>{ms_cell(t['p95_ms'])}</td>"
            f"<td class=n>{ms_cell(float(part.get(rid, 0.0)))}</td>"
            if t is not None
            else "<td class=n>0</td><td class=n>-</td><td class=n>-</td><td class=n>-</td>"
        )
        out.append(
            f"<tr{cls}><td>{esc(r['kind'])}</td><td class='mono nw'>{esc(r['impl'] or '-')}</td>"
            f"<td>{esc(r['prop_kind'])}</td><td class=mono>{esc(r['problem'])}</td>"
            f"<td class=mono>{esc(layouts)}</td>{cells}<td class=n>{r['count']:,}</td>"
            f"<td class=n>{ms_cell(r['time_ms'])}</td><td class=n>{pct_cell(r['share'])}</td>"
            f"<td class=mono>{esc(r['example']['path'])}:{r['example']['line']}</td></tr>"
        )
    out.append("</table>")
    note = (
        "Steady columns: runs per steady pass, median and p95 of one run, and its part of "
        "the typical iteration (ms). Raw columns: every execution of the log."
    )
    return _section("primitives", "Top primitives", "".join(out) + f'<p class="note">{note}</p>')


def _inputs(a: Analysis) -> str:
    rows = [
        "<table><tr><th>input</th><th>kind</th><th>family</th>"
        "<th>oneDNN</th><th>ISA</th><th class=n>threads</th><th class=n>lines</th>"
        "<th class=n>parsed</th><th class=n>foreign</th><th class=n>malformed</th></tr>"
    ]
    log = a.log
    for s in log.scans:
        h = s.header
        rows.append(
            f"<tr><td class=mono>{esc(s.path)}</td><td>verbose log</td>"
            f"<td>{esc(', '.join(s.family_names) or '-')}</td><td>{esc(h.version or '-')}</td>"
            f"<td>{esc(h.isa or '-')}</td><td class=n>{esc(h.threads or '-')}</td>"
            f"<td class=n>{s.lines:,}</td><td class=n>{s.parsed:,}</td>"
            f"<td class=n>{s.foreign:,}</td><td class=n>{s.malformed:,}</td></tr>"
        )
    fw = log.framework
    for t in fw.traces if fw is not None else []:
        rows.append(
            f"<tr><td class=mono>{esc(t.path)}</td><td>profiler trace</td>"
            f"<td colspan=4>{len(t.ops):,} ops of {t.events:,} trace events</td>"
            "<td class=n>-</td><td class=n>-</td><td class=n>-</td><td class=n>-</td></tr>"
        )
    for t in fw.tables if fw is not None else []:
        where = f"{t.source}:{t.line}" if t.line else t.source
        rows.append(
            f"<tr><td class=mono>{esc(where)}</td><td>profiler table</td>"
            f"<td colspan=4>{len(t.rows):,} rows</td>"
            "<td class=n>-</td><td class=n>-</td><td class=n>-</td><td class=n>-</td></tr>"
        )
    rows.append("</table>")
    errors = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    rows += [f'<p class="note">error: {esc(e)}</p>' for e in errors]
    return _section("inputs", "Inputs", "".join(rows))


def _css() -> str:
    return (files("dnnlens.report") / "templates" / "report.css").read_text(encoding="utf-8")


def _names(a: Analysis) -> str:
    names = [Path(s.path).name for s in a.log.scans]
    if a.log.framework is not None:
        names += [Path(t.path).name for t in a.log.framework.traces]
    return ", ".join(names) or "no input"


def _body(a: Analysis) -> list[str]:
    """The parts of one analysis's report, banner first."""
    s = a.summary
    sub = (
        f"{s.exec_count:,} primitive executions, {ms(s.total_time_ms)} raw; typical "
        f"iteration {ms(a.typical_iteration_ms)}"
        if s.exec_count or a.framework is None
        else "a profiler trace or table without a verbose log: the framework view"
    )
    sub = verdict_text.dispatch_only(a) or sub
    model = verdict_text.model(a)
    sub = f"{model}; {sub}" if model else sub
    has_execs = bool(len(a.execs))
    sections = [
        ("findings", "Findings", _findings(a)),
        ("time", "Where the time went", _time_section(a)),
        ("training", training_view.TITLE, training_view.html_section(a)),
        ("framework-view", framework_view.TITLE, framework_view.html_section(a)),
        ("framework", "Framework ops and oneDNN", _framework(a)),
        ("iteration", "One iteration", _iteration_strip(a) if has_execs else ""),
        ("passes", "Time per pass", _passes(a) if has_execs else ""),
        ("reorders", "Reorders", _reorder_section(a) if has_execs else ""),
        ("breakdowns", "By kind and implementation", _breakdowns(a)),
        ("roofline", "Roofline", _roofline(a)),
        ("primitives", "Top primitives", _top_table(a)),
        ("inputs", "Inputs", _inputs(a)),
    ]
    present = [(anchor, title, body) for anchor, title, body in sections if body]
    # what the analysis says of itself (times not to be trusted, findings a baseline left
    # out, a marker that matched nothing): right under the verdict, as the terminal does
    notes = "".join(f'<p class="note analysis-note">{esc(n)}</p>' for n in a.notes)
    return [
        f'<p class="sub">{esc(sub)}</p>',
        _banner(a),
        notes,
        _contents([(anchor, title) for anchor, title, _ in present]),
        _cards(a),
        *(body for _, _, body in present),
    ]


def _page(title: str, parts: list[str]) -> str:
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">",
            f"<title>dnnlens report: {esc(title)}</title>",
            f"<style>{_css()}</style></head><body><main>",
            f"<h1>dnnlens report: {esc(title)}</h1>",
            *parts,
            f"<footer>Generated by dnnlens {esc(__version__)}. Times are the time fields of "
            "oneDNN <code>exec</code> lines (ms). The typical iteration is the sum over the "
            "positions of a pass of their median run over the steady passes; shares are of it "
            "unless marked raw (summed times of every pass). Passes are found in the exec "
            "stream; the graph places each reorder between the primitives whose tensors it "
            "converts.</footer>",
            "</main></body></html>",
        ]
    )


def render_html(analysis: Analysis) -> str:
    """The whole report of one run as one HTML document."""
    return _page(_names(analysis), _body(analysis))


def _steady_count(a: Analysis) -> int:
    """Steady steps of a report on a step, steady passes otherwise."""
    fw = a.framework
    return fw.steady_count if fw is not None and a.report_basis.unit == "step" else a.steady.divisor


def render_runs(analyses: list[Analysis], runs: list[Any]) -> str:
    """Several runs on one page: an overview that names each run's first finding, then
    each run's report (its anchors prefixed with the run's number)."""
    rows = [
        "<table><tr><th>run</th><th>inputs</th><th class=n>typical step or iteration</th>"
        "<th class=n>steady steps or passes</th><th>fix first</th></tr>"
    ]
    parts: list[str] = []
    for i, (a, run) in enumerate(zip(analyses, runs, strict=True), 1):
        top = a.findings[0] if a.findings else None
        first = (
            f'<a href="#r{i}-finding-1">{esc(verdict_text.title(top))}</a> '
            f'<span class="tag">{esc(verdict_text.cost(top, a))}</span>'
            if top is not None
            else "no finding"
        )
        rows.append(
            f'<tr><td><a href="#run-{i}">{esc(run.name)}</a></td>'
            f"<td>{len(run.paths)} ({esc(run.how)})</td>"
            f"<td class=n>{esc(ms(a.report_basis.ms))} per {esc(a.report_basis.unit)}</td>"
            f"<td class=n>{_steady_count(a)}</td><td>{first}</td></tr>"
        )
        body = "\n".join(_body(a)).replace('id="', f'id="r{i}-').replace('href="#', f'href="#r{i}-')
        parts.append(f'<div class="run" id="run-{i}"><h1>{i}. {esc(run.name)}</h1>{body}</div>')
    rows.append("</table>")
    overview = _section(
        "runs",
        f"{len(runs)} runs",
        "".join(rows)
        + '<p class="note">Each input is a run of its own unless it is part of one (ranks, '
        "rotated logs, a profiler trace or table and the log of its run); --combine makes "
        "them one.</p>"
        + "".join(
            f'<p class="note">{esc(run.note)}</p>' for run in runs if getattr(run, "note", "")
        ),
    )
    return _page(f"{len(runs)} runs", [overview, *parts])
