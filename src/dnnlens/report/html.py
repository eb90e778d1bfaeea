"""The self-contained HTML report: one file, inline CSS and SVG, no script, nothing fetched.

Sections, top to bottom: the verdict (what share of the time reorders take), headline
cards, the time by kind as one bar, one iteration in order (where the reorders sit), time
per iteration, the reorder flow from layout to layout, time by kind and by implementation,
the top primitives, the findings with their evidence lines, and the inputs.

Every string that comes from a log (paths, implementation names, problems, layouts,
messages, evidence lines) goes through :func:`~dnnlens.report.svg_charts.esc`: logs are
untrusted input, and the page carries no ``<script>`` of its own.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dnnlens._version import __version__
from dnnlens.analysis.diff import IterationInfo, flow_label, iteration_info, md_layouts
from dnnlens.analysis.findings import Finding
from dnnlens.analysis.result import Analysis
from dnnlens.analysis.summary import primitive_execs
from dnnlens.io.inputs import InputSource, ReadStats, iter_lines
from dnnlens.model import ParsedLog
from dnnlens.report.svg_charts import (
    Bar,
    Column,
    Flow,
    Item,
    Segment,
    color_for,
    esc,
    flow_chart,
    fmt_ms,
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
REORDER_ALERT_SHARE = 0.10
WEIGHT_COLOR = "#ff9896"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------------------------
# the one dependency on dnnlens.analysis.graph


def _graph(log: ParsedLog) -> Any | None:
    """The op graph (``nodes`` and ``reorders`` tables), or ``None`` if it cannot be built."""
    try:
        from dnnlens.analysis.graph import build_graph  # type: ignore[attr-defined]

        graph = build_graph(log)
        if not isinstance(graph.nodes, pd.DataFrame) or not isinstance(
            graph.reorders, pd.DataFrame
        ):
            return None
        return graph
    except Exception:  # noqa: BLE001 - the report must render without the graph
        return None


# ---------------------------------------------------------------------------------------
# facts the sections share


@dataclass
class _Facts:
    analysis: Analysis
    info: IterationInfo
    graph: Any | None
    total: float
    reorder_ms: float
    reorder_count: int

    @property
    def reorder_share(self) -> float:
        return self.reorder_ms / self.total if self.total > 0 else 0.0

    @cached_property
    def typical(self) -> tuple[float, float] | None:
        return _typical(self)

    @property
    def alarming(self) -> bool:
        """Reorders are worth a red flag: judged on a typical iteration when there is one
        (outliers cannot raise it), else on the summed times."""
        typical = self.typical
        share = typical[0] / typical[1] if typical and typical[1] > 0 else self.reorder_share
        return share >= REORDER_ALERT_SHARE


def _facts(analysis: Analysis) -> _Facts:
    s = analysis.summary
    row = next((r for r in s.by_kind if r["kind"] == "reorder"), None)
    log = analysis.log
    graph = _graph(log) if s.exec_count else None
    return _Facts(
        analysis,
        iteration_info(log),
        graph,
        s.total_time_ms,
        row["time_ms"] if row else 0.0,
        row["count"] if row else 0,
    )


def _node_typical_ms(n: pd.Series) -> float:
    """A node's typical cost per iteration: executions per iteration x median time."""
    runs = float(n["count"]) / max(float(n["iterations"]), 1.0)
    return runs * float(n["p50_ms"])


def _typical(f: _Facts) -> tuple[float, float] | None:
    """(reorder ms, iteration ms) of a typical steady iteration, from per-primitive medians.

    Over the steady iterations, each distinct primitive costs (executions per iteration) x
    (its median time); the sums are what a typical iteration costs, whatever a few slow
    outliers did. The reorder-overhead rule computes the same; when it fired, its figures
    are used so the page and the finding agree.
    """
    for x in f.analysis.findings:
        d = x.data or {}
        if x.rule == "reorder-overhead" and "iteration_ms" in d:
            try:
                return float(d["reorder_ms_per_iteration"]), float(d["iteration_ms"])
            except (KeyError, TypeError, ValueError):
                break
    log, info = f.analysis.log, f.info
    if info.count <= 1 or len(info.index) != len(log.events):
        return None
    execs = primitive_execs(log.events)
    idx = info.index[execs.index.to_numpy()]
    lo = info.warmup if info.count > info.warmup else 0
    steady = execs[idx >= lo]
    if steady.empty:
        return None
    g = steady.groupby("record", sort=False)["time_ms"].agg(["size", "median"])
    typical = g["size"] * g["median"].fillna(0.0)
    kinds = np.array([log.records[int(r)].kind for r in g.index])
    iters = info.count - lo
    return float(typical[kinds == "reorder"].sum()) / iters, float(typical.sum()) / iters


def _steady_reorders_per_iteration(f: _Facts) -> float | None:
    log, info = f.analysis.log, f.info
    if info.count <= 1 or len(info.index) != len(log.events):
        return None
    ev = log.events
    mask = ((ev["operation"] == "exec") & (ev["kind"] == "reorder")).to_numpy()
    lo = info.warmup if info.count > info.warmup else 0
    return float(((info.index >= lo) & mask).sum()) / (info.count - lo)


def _graph_sentence(f: _Facts) -> str:
    r = f.graph.reorders
    steady = r[r["steady"].astype(bool)] if "steady" in r else r
    extra = r.drop(steady.index)
    act = steady[steady["tensor"] == "activation"]
    weights = steady[steady["tensor"] == "weight"]
    trips = int(act["round_trip"].sum()) if "round_trip" in act else 0

    def share(rows: pd.DataFrame) -> str:
        return _pct(float(rows["time_ms"].sum()) / f.total) if f.total else "0%"

    text = ""
    if len(act):
        text += (
            f" {len(act)} of the {len(steady)} reorders of an iteration move activations "
            f"({share(act)} of the time)"
        )
        text += f", {trips} of them in round trips between layouts." if trips else "."
    if len(weights):
        who = (
            f"{len(weights)} move weights"
            if len(act)
            else (f"All {len(steady)} reorders of an iteration move weights")
        )
        text += f" {who} ({share(weights)} of the time)."
    if len(extra):
        text += (
            f" {len(extra)} more ran only outside the steady iterations (warm-up, "
            f"one-time weight reorders: {share(extra)} of the time)."
        )
    return text


def _verdict(f: _Facts) -> str:
    s = f.analysis.summary
    if s.exec_count == 0:
        return '<p class="verdict ok">No oneDNN primitive executions in the input.</p>'
    if f.reorder_count == 0:
        return (
            '<p class="verdict ok">No reorders: all the primitive time is compute '
            f"({fmt_ms(f.total)} in {s.exec_count:,} executions).</p>"
        )
    text = (
        f"Reorders take <b>{_pct(f.reorder_share)}</b> of the primitive time "
        f"({fmt_ms(f.reorder_ms)} in {f.reorder_count:,} executions"
    )
    per = _steady_reorders_per_iteration(f)
    if per is not None:
        text += f", {per:.3g} per steady iteration" if per else ", none in steady iterations"
    text += ")"
    typical = f.typical
    if typical and typical[1] > 0:
        text += (
            f"; {_pct(typical[0] / typical[1])} of a typical steady iteration "
            f"({fmt_ms(typical[0])} of {fmt_ms(typical[1])}, from per-primitive "
            "medians)"
        )
    text += "."
    if f.graph is not None and not f.graph.reorders.empty:
        text += _graph_sentence(f)
    cls = "verdict" if f.alarming else "verdict ok"
    return f'<p class="{cls}">{text}</p>'


def _cards(f: _Facts) -> str:
    s = f.analysis.summary
    cards = [("Primitive time", fmt_ms(f.total), f"{s.exec_count:,} executions", False)]
    typical = f.typical
    detail = f"{fmt_ms(f.reorder_ms)} in {f.reorder_count:,} executions"
    if typical and typical[1] > 0:
        detail += f"; {_pct(typical[0] / typical[1])} of a typical iteration"
    cards.append(("Reorders", _pct(f.reorder_share), detail, f.alarming))
    if f.info.count:
        times = f.info.times_ms(f.analysis.log)
        steady = times[f.info.warmup :] if f.info.count > f.info.warmup else times
        med = float(np.median(steady)) if len(steady) else 0.0
        cards.append(
            (
                "Iterations",
                f"{f.info.count:,}",
                f"{f.info.warmup} warm-up; {fmt_ms(f.total / f.info.count)} mean, "
                f"{fmt_ms(med)} median steady",
                False,
            )
        )
    counts = {
        sev: sum(1 for x in f.analysis.findings if x.severity == sev)
        for sev in ("error", "warning", "info")
    }
    cards.append(
        (
            "Findings",
            f"{len(f.analysis.findings)}",
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


# ---------------------------------------------------------------------------------------
# sections


def _share_section(f: _Facts) -> str:
    rows = f.analysis.summary.by_kind
    if not rows:
        return ""
    segs = [
        Segment(
            r["kind"],
            r["time_ms"],
            color_for(r["kind"]),
            f"{r['kind']}: {fmt_ms(r['time_ms'])}, {_pct(r['share'])}, {r['count']:,} executions",
        )
        for r in rows
    ]
    return (
        "<section><h2>Where the time went</h2>"
        + share_bar(segs, label="time by kind")
        + legend([(r["kind"], color_for(r["kind"])) for r in rows])
        + "</section>"
    )


def _node_label(node: pd.Series) -> str:
    if node["kind"] == "reorder":
        return f"{node['src_layout']}→{node['dst_layout']}"
    return str(node["kind"])[:4]


_Strip = tuple[list[Item], str, dict[str, str]]


def _strip_from_graph(f: _Facts) -> _Strip | None:
    if f.graph is None:
        return None
    nodes = f.graph.nodes
    steady = nodes[nodes["position"] >= 0].sort_values("position")
    if steady.empty:
        return None
    per = max(f.info.count, 1)
    reorders = f.graph.reorders.set_index("node") if not f.graph.reorders.empty else None
    items, keys = [], {}
    for _, n in steady.head(MAX_STRIP_ITEMS).iterrows():
        kind = str(n["kind"])
        value = _node_typical_ms(n)
        tip = (
            f"#{int(n['position'])} {kind} {n['impl']} {n['problem']}: "
            f"{fmt_ms(value)} typical per iteration (mean "
            f"{fmt_ms(float(n['time_ms']) / per)})"
        )
        color, key = color_for(kind), kind
        if kind == "reorder" and reorders is not None and n["node"] in reorders.index:
            r = reorders.loc[n["node"]]
            tip += f"; {r['tensor']} reorder" + (", round trip" if r["round_trip"] else "")
            if r["tensor"] == "weight":
                color, key = WEIGHT_COLOR, "reorder (weights)"
        keys[key] = color
        items.append(
            Item(value, color, _node_label(n), tip, kind == "reorder", str(int(n["position"])))
        )
    note = (
        f"The {len(steady):,} primitives of one iteration in the order they run, numbered "
        "by position; width is their typical time per iteration (runs per iteration x "
        f"median over all {per:,} iterations, so a few slow outliers do not stretch it)."
    )
    return items, note, keys


def _strip_from_events(f: _Facts) -> _Strip | None:
    log = f.analysis.log
    execs = primitive_execs(log.events)
    if execs.empty:
        return None
    times = f.info.times_ms(log)
    idx = f.info.index[execs.index.to_numpy()] if len(f.info.index) == len(log.events) else None
    chosen = execs
    note = "The primitives of the log in order; width is their time."
    if idx is not None and len(times):
        lo = min(f.info.warmup, len(times) - 1)
        steady = np.arange(lo, len(times))
        pick = int(steady[np.argsort(times[steady])[len(steady) // 2]])
        chosen = execs[idx == pick]
        note = (
            f"The primitives of iteration {pick} (the median steady iteration) in the "
            "order they run; width is their time."
        )
    items, keys = [], {}
    for k, row in enumerate(chosen.head(MAX_STRIP_ITEMS).itertuples(index=False)):
        kind = str(row.kind)
        label = flow_label(str(row.mds)).replace("->", "→") if kind == "reorder" else kind[:4]
        t = float(row.time_ms) if math.isfinite(row.time_ms) else 0.0
        keys[kind] = color_for(kind)
        items.append(
            Item(
                t,
                color_for(kind),
                label,
                f"{kind} {row.impl} {row.problem}: {fmt_ms(t)} (line {row.line})",
                kind == "reorder",
                str(k),
            )
        )
    return items, note, keys


def _iteration_strip(f: _Facts) -> str:
    got = _strip_from_graph(f) or _strip_from_events(f)
    if not got:
        return ""
    items, note, keys = got
    return (
        "<section><h2>One iteration, in order: where the reorders sit</h2>"
        + timeline(items, label="one iteration")
        + legend(sorted(keys.items()))
        + f'<p class="note">{esc(note)} Reorders are marked ▲ below the strip; hover '
        "for details.</p></section>"
    )


def _per_iteration(f: _Facts) -> str:
    log, info = f.analysis.log, f.info
    if info.count <= 1 or len(info.index) != len(log.events):
        return ""
    execs = primitive_execs(log.events)
    idx = info.index[execs.index.to_numpy()]
    keep = idx >= 0
    kinds = execs["kind"].astype(str).to_numpy()[keep]
    times = np.nan_to_num(execs["time_ms"].to_numpy(dtype=float))[keep]
    idx = idx[keep]
    order = [r["kind"] for r in f.analysis.summary.by_kind]
    order = (["reorder"] if "reorder" in order else []) + [k for k in order if k != "reorder"]
    per_kind = {
        k: np.bincount(idx[kinds == k], weights=times[kinds == k], minlength=info.count)
        for k in order
    }
    size = max(1, math.ceil(info.count / MAX_COLUMNS))
    columns = []
    for start in range(0, info.count, size):
        stop = min(start + size, info.count)
        vals = {k: float(v[start:stop].mean()) for k, v in per_kind.items()}
        label = f"{start}" if size == 1 else f"{start}-{stop - 1}"
        tot = sum(vals.values())
        tip = f"iteration {label}: {fmt_ms(tot)}" + "".join(
            f"; {k} {fmt_ms(v)}" for k, v in vals.items() if v > 0
        )
        columns.append(Column(label, vals, start < info.warmup, tip))
    series = [(k, color_for(k)) for k in order]
    note = (
        f"{info.count:,} iterations found in the exec stream"
        + (f" ({info.warmup} warm-up, hatched)" if info.warmup else "")
        + ("" if size == 1 else f"; each column is the mean of {size} iterations")
        + "."
    )
    return (
        "<section><h2>Time per iteration</h2>"
        + stacked_columns(columns, series, label="time per iteration")
        + legend(series)
        + f'<p class="note">{esc(note)}</p></section>'
    )


def _node_desc(nodes: pd.DataFrame | None, ids: str) -> str:
    if not ids:
        return "-"
    out = []
    for node in ids.split(","):
        if nodes is not None and node in nodes.index:
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


def _reorder_section(f: _Facts) -> str:
    if f.reorder_count == 0:
        return ""
    if f.graph is not None and not f.graph.reorders.empty:
        return _reorders_from_graph(f)
    return _reorders_from_events(f)


def _reorders_from_graph(f: _Facts) -> str:
    r = f.graph.reorders
    nodes = f.graph.nodes.set_index("node")
    flows_df = (
        r.groupby(["src_layout", "dst_layout", "src_dtype", "dst_dtype", "tensor"], dropna=False)[
            "time_ms"
        ]
        .sum()
        .reset_index()
    )
    flows = []
    for row in flows_df.itertuples(index=False):
        src = (
            row.src_layout
            if row.src_dtype == row.dst_dtype
            else f"{row.src_dtype}:{row.src_layout}"
        )
        dst = (
            row.dst_layout
            if row.src_dtype == row.dst_dtype
            else f"{row.dst_dtype}:{row.dst_layout}"
        )
        color = WEIGHT_COLOR if row.tensor == "weight" else "#d62728"
        flows.append(
            Flow(
                str(src),
                str(dst),
                float(row.time_ms),
                color,
                f"{src} -> {dst} ({row.tensor}): {fmt_ms(float(row.time_ms))}",
            )
        )
    body = [
        flow_chart(
            flows,
            height=max(180, 40 + 34 * len(flows)),
            left_title="from layout",
            right_title="to layout",
            label="reorder flow",
        ),
        legend([("activation reorders", "#d62728"), ("weight reorders", WEIGHT_COLOR)]),
    ]
    rows = [
        "<table><tr><th class=n>#</th><th>from → to</th><th>dims</th><th>tensor</th>"
        "<th>round trip</th><th>after</th><th>before</th><th class=n>count</th>"
        "<th class=n>time</th><th class=n>share</th><th>first at</th></tr>"
    ]
    for _, x in r.sort_values(["position", "node"]).iterrows():
        pos = int(x["position"])
        flow = f"{x['src_layout']} → {x['dst_layout']}"
        if x["src_dtype"] != x["dst_dtype"]:
            flow = f"{x['src_dtype']}:{x['src_layout']} → {x['dst_dtype']}:{x['dst_layout']}"
        rows.append(
            f"<tr class=reorder><td class=n>{pos if pos >= 0 else 'extra'}</td>"
            f"<td class='mono nw'>{esc(flow)}</td><td class='mono nw'>{esc(x['dims'])}</td>"
            f"<td>{esc(x['tensor'])}</td><td>{'yes' if x['round_trip'] else ''}</td>"
            f"<td class=mono>{esc(_node_desc(nodes, str(x['producer'])))}</td>"
            f"<td class=mono>{esc(_node_desc(nodes, str(x['consumer'])))}</td>"
            f"<td class=n>{int(x['count']):,}</td><td class=n>{fmt_ms(float(x['time_ms']))}</td>"
            f"<td class=n>{_pct(float(x['time_ms']) / f.total if f.total else 0)}</td>"
            f"<td class=mono>{esc(x['example'])}</td></tr>"
        )
    rows.append("</table>")
    note = (
        "Each row is a reorder at its position in the iteration (# as in the strip "
        "above), with the primitive whose output it reads and the one that reads its "
        "result; a round trip is a reorder that a later one undoes."
    )
    return (
        "<section><h2>Reorder flow: from layout to layout</h2>"
        + "".join(body)
        + "".join(rows)
        + f'<p class="note">{esc(note)}</p></section>'
    )


def _reorders_from_events(f: _Facts) -> str:
    log = f.analysis.log
    execs = primitive_execs(log.events)
    re_rows = execs[execs["kind"] == "reorder"]
    g = re_rows.groupby("record", sort=False)["time_ms"].agg(["size", "sum"])
    flows: dict[tuple[str, str], float] = {}
    table = [
        "<table><tr><th>from → to</th><th>dims</th><th class=n>count</th>"
        "<th class=n>time</th><th class=n>share</th></tr>"
    ]
    for rid, st in g.sort_values("sum", ascending=False).iterrows():
        rec = log.records[int(rid)]
        label = flow_label(rec.mds)
        src, _, dst = label.partition("->")
        flows[(src, dst)] = flows.get((src, dst), 0.0) + float(st["sum"])
        table.append(
            f"<tr class=reorder><td class=mono>{esc(label.replace('->', ' → '))}"
            f"</td><td class=mono>{esc(rec.problem)}</td>"
            f"<td class=n>{int(st['size']):,}</td><td class=n>"
            f"{fmt_ms(float(st['sum']))}</td><td class=n>"
            f"{_pct(float(st['sum']) / f.total if f.total else 0)}</td></tr>"
        )
    table.append("</table>")
    chart = flow_chart(
        [Flow(s, d, v) for (s, d), v in flows.items()],
        height=max(180, 40 + 34 * len(flows)),
        left_title="from layout",
        right_title="to layout",
        label="reorder flow",
    )
    return (
        "<section><h2>Reorder flow: from layout to layout</h2>"
        + chart
        + "".join(table)
        + "</section>"
    )


def _breakdowns(f: _Facts) -> str:
    s = f.analysis.summary
    if not s.by_kind:
        return ""
    kinds = [
        Bar(
            r["kind"],
            r["time_ms"],
            color_for(r["kind"]),
            f"{fmt_ms(r['time_ms'])} · {_pct(r['share'])}",
            f"{r['kind']}: {r['count']:,} executions",
        )
        for r in s.by_kind[:TOP_ROWS]
    ]
    impls = [
        Bar(
            f"{r['kind']} {r['impl'] or '-'}",
            r["time_ms"],
            color_for(r["kind"]),
            f"{fmt_ms(r['time_ms'])} · {_pct(r['share'])}",
            f"{r['kind']} {r['impl']}: {r['count']:,} executions",
        )
        for r in s.by_impl[:TOP_ROWS]
    ]
    return (
        '<div class="grid2"><section><h2>Time by primitive kind</h2>'
        + hbar_chart(kinds, label="time by kind")
        + "</section>"
        + "<section><h2>Time by implementation</h2>"
        + hbar_chart(impls, label="time by implementation")
        + "</section></div>"
    )


def _roofline(analysis: Analysis) -> str:
    """Every distinct primitive on the roofline of the machine in the log's header."""
    from dnnlens.analysis.machine import machine_for_log
    from dnnlens.report.roofline_svg import roofline_svg

    points = analysis.extras.get("primitives")
    if not points:
        return ""
    machine = machine_for_log(analysis.log)
    src = machine.sources
    about = (
        f"Machine: {machine.isa}, {machine.threads} threads at {machine.freq_ghz:g} GHz "
        f"({src.get('freq_ghz', '')}), f32 peak {machine.peak('f32'):,.0f} GFLOP/s, "
        f"{machine.bandwidth_gbs:g} GB/s ({src.get('bandwidth_gbs', '')}); override with "
        "dnnlens machine probe"
    )
    return (
        "<section><h2>Roofline</h2>"
        + roofline_svg(points, machine)
        + f'<p class="note">{esc(about)}. Each point is one distinct '
        "primitive: its FLOPs per call times its calls over its time (docs/cost-model.md)."
        " Reorders do no arithmetic and sit on the memory roof.</p></section>"
    )


def _top_table(f: _Facts) -> str:
    rows = f.analysis.summary.top_primitives[:TOP_ROWS]
    if not rows:
        return ""
    out = [
        "<section><h2>Top primitives</h2><table><tr><th>kind</th><th>impl</th>"
        "<th>prop_kind</th><th>problem</th><th>layouts</th><th class=n>count</th>"
        "<th class=n>time</th><th class=n>mean</th><th class=n>share</th>"
        "<th>first at</th></tr>"
    ]
    for r in rows:
        layouts = (
            flow_label(r["mds"]).replace("->", " → ")
            if r["kind"] == "reorder"
            else md_layouts(r["mds"])
        )
        cls = " class=reorder" if r["kind"] == "reorder" else ""
        out.append(
            f"<tr{cls}><td>{esc(r['kind'])}</td><td class='mono nw'>{esc(r['impl'] or '-')}</td>"
            f"<td>{esc(r['prop_kind'])}</td><td class=mono>{esc(r['problem'])}</td>"
            f"<td class=mono>{esc(layouts)}</td><td class=n>{r['count']:,}</td>"
            f"<td class=n>{fmt_ms(r['time_ms'])}</td><td class=n>{fmt_ms(r['mean_ms'])}</td>"
            f"<td class=n>{_pct(r['share'])}</td><td class=mono>"
            f"{esc(r['example']['path'])}:{r['example']['line']}</td></tr>"
        )
    out.append("</table></section>")
    return "".join(out)


def evidence_text(
    findings: list[Finding],
    per_finding: int = EVIDENCE_SHOWN,
) -> dict[tuple[str, int], str]:
    """The text of the evidence lines shown in the report, read back from the inputs."""
    wanted: dict[str, set[int]] = {}
    for f in findings:
        for e in f.evidence[:per_finding]:
            wanted.setdefault(e.path, set()).add(int(e.line))
    out: dict[tuple[str, int], str] = {}
    for path, lines in wanted.items():
        if path == "-" or not Path(path).is_file():
            continue
        last = max(lines)
        try:
            for n, text in enumerate(iter_lines(InputSource(path), ReadStats()), 1):
                if n in lines:
                    out[(path, n)] = text[:EVIDENCE_TEXT]
                if n >= last:
                    break
        except OSError:
            continue
    return out


def _findings(f: _Facts) -> str:
    findings = f.analysis.findings
    if not findings:
        return (
            '<section><h2>Findings</h2><p class="note">No findings: no rule fired on '
            "this input.</p></section>"
        )
    texts = evidence_text(findings)
    out = [f"<section><h2>Findings ({len(findings)})</h2>"]
    for x in findings:
        sev = x.severity if x.severity in ("error", "warning", "info") else "info"
        out.append(
            f'<div class="finding"><span class="sev {sev}">{esc(x.severity)}</span>'
            f'<b>{esc(x.rule)}</b> <span class="tag">{esc(x.code)}</span>'
            f"<p>{esc(x.message)}</p>"
        )
        if x.fix:
            out.append(f"<p><b>Fix:</b> {esc(x.fix)}</p>")
        for e in x.evidence[:EVIDENCE_SHOWN]:
            text = texts.get((e.path, int(e.line)))
            out.append(
                f'<div class="tag">{esc(e.path)}:{int(e.line)}</div>'
                + (f"<pre>{esc(text)}</pre>" if text is not None else "")
            )
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
    out.append("</section>")
    return "".join(out)


def _inputs(f: _Facts) -> str:
    rows = [
        "<section><h2>Inputs</h2><table><tr><th>input</th><th>family</th>"
        "<th>oneDNN</th><th>ISA</th><th class=n>threads</th><th class=n>lines</th>"
        "<th class=n>parsed</th><th class=n>foreign</th><th class=n>malformed</th></tr>"
    ]
    log = f.analysis.log
    for s in log.scans:
        h = s.header
        rows.append(
            f"<tr><td class=mono>{esc(s.path)}</td><td>{esc(', '.join(s.family_names) or '-')}"
            f"</td><td>{esc(h.version or '-')}</td><td>{esc(h.isa or '-')}</td>"
            f"<td class=n>{esc(h.threads or '-')}</td><td class=n>{s.lines:,}</td>"
            f"<td class=n>{s.parsed:,}</td><td class=n>{s.foreign:,}</td>"
            f"<td class=n>{s.malformed:,}</td></tr>"
        )
    rows.append("</table>")
    errors = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    rows += [f'<p class="note">error: {esc(e)}</p>' for e in errors]
    rows.append("</section>")
    return "".join(rows)


def _css() -> str:
    return (files("dnnlens.report") / "templates" / "report.css").read_text(encoding="utf-8")


def render_html(analysis: Analysis) -> str:
    """The whole report as one HTML document."""
    f = _facts(analysis)
    names = ", ".join(Path(s.path).name for s in analysis.log.scans) or "no input"
    s = analysis.summary
    sub = f"{s.exec_count:,} primitive executions, {fmt_ms(f.total)}" + (
        f", {f.info.count:,} iterations" if f.info.count else ""
    )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>dnnlens report: {esc(names)}</title>",
        f"<style>{_css()}</style></head><body><main>",
        f"<h1>dnnlens report: {esc(names)}</h1>",
        f'<p class="sub">{esc(sub)}</p>',
        _verdict(f),
        _cards(f),
        _share_section(f),
        _iteration_strip(f),
        _per_iteration(f),
        _reorder_section(f),
        _breakdowns(f),
        _roofline(analysis),
        _top_table(f),
        _findings(f),
        _inputs(f),
        f"<footer>Generated by dnnlens {esc(__version__)}. Times are the time fields of "
        "oneDNN <code>exec</code> lines (ms); shares are of their sum. Iterations are found "
        "in the exec stream; the graph places each reorder between the primitives whose "
        "tensors it converts.</footer>",
        "</main></body></html>",
    ]
    return "\n".join(p for p in parts if p)
