"""Exports of the op graph: JSON, GraphML, Graphviz DOT and Mermaid.

The JSON shape is a contract (keys may be added, never renamed)::

    {"iterations": {"count": N, "warmup": N, "warmup_structural": N, "warmup_slow": N,
                    "steady": N, "period_exec": N, ...},
     "nodes": [{"id": str, "kind": str, "count": N, "time_ms": F,
                "reorder": {"tensor": "activation|weight",
                            "converts": "layout|dtype|both|none", "round_trip": bool, ...}
                           | null, ...}],
     "edges": [{"src": str, "dst": str, ...}]}

``converts`` is ``none`` for a reorder that copies without changing layout or data type.
In DOT and Mermaid nodes are coloured by the layout they produce, reorders are drawn with
a thick red border (orange for weight reorders), round trips dashed, nodes outside the
steady iteration dotted; every node shows its execution count and time.

Text from the log (implementation names, layouts, post-ops, dims) is made terminal-safe
first (:func:`dnnlens.textsafe.safe`: no control character, one line) and then escaped for
the format: ``\\`` and ``"`` in DOT strings (a label's lines are joined with DOT's own
``\\n``), entities in Mermaid labels (``#``, ``"``, ``<``, ``>``, ``&``), and node ids
reduced to ``[A-Za-z0-9_]``.

Warm-up and steady passes are the analysis's :class:`~dnnlens.analysis.steady.SteadyState`
(structural and slow warm-up), so ``graph`` and ``analyze`` give one count for one log.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import networkx as nx

from dnnlens.analysis.graph import OpGraph
from dnnlens.analysis.steady import SteadyState, steady_state
from dnnlens.fmt import ms
from dnnlens.textsafe import safe

__all__ = [
    "FORMATS",
    "graph_to_dict",
    "render",
    "render_dot",
    "render_graphml",
    "render_json",
    "render_mermaid",
]

#: Formats :func:`render` knows.
FORMATS = ("json", "graphml", "dot", "mermaid")

_PALETTE = (
    "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#ffff99", "#8dd3c7", "#fb9a99", "#d9d9d9",
    "#bebada", "#80b1d3", "#ccebc5", "#fccde5",
)  # fmt: skip
_NODE_KEYS = (
    "position", "steady", "impl", "prop_kind", "iterations", "mean_ms", "p50_ms", "p95_ms",
    "src_layout", "dst_layout", "dtype", "post_ops", "problem", "example",
)  # fmt: skip
_REORDER_KEYS = (
    "dims", "src_layout", "dst_layout", "src_dtype", "dst_dtype", "producer", "consumer",
    "consumer_arg",
)  # fmt: skip


def _num(v: Any) -> Any:
    """JSON-safe number: NaN and infinities become ``None``."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalars
        return _num(v.item())
    return v


def _ids(text: str) -> list[str]:
    return [s for s in text.split(",") if s]


def _steady_of(g: OpGraph, steady: SteadyState | None) -> SteadyState:
    """The passes' steady state: the analysis's, else the one definition applied to the
    graph's own iterations (a graph built without an :class:`Analysis`)."""
    return steady if steady is not None else steady_state(g.iterations)


def _iterations_dict(g: OpGraph, st: SteadyState) -> dict[str, Any]:
    it = g.iterations
    times = st.times
    steady = times[times["steady"].to_numpy(dtype=bool)]["time_ms"]
    warm_by_input = (~times["steady"].astype(bool)).groupby(times["input"].astype(str)).sum()
    return {
        "count": st.passes,
        "warmup": st.warmup,
        "warmup_structural": st.warmup_structural,
        "warmup_slow": st.warmup_slow,
        "steady": st.divisor,
        "period_exec": st.period_exec,
        "main_input": it.main_input,
        "steady_time_ms": {
            "mean": _num(float(steady.mean())) if len(steady) else None,
            "p50": _num(float(steady.median())) if len(steady) else None,
            "min": _num(float(steady.min())) if len(steady) else None,
            "max": _num(float(steady.max())) if len(steady) else None,
        },
        "inputs": [
            {
                "input": i.input,
                "count": i.count,
                "warmup": int(warm_by_input.get(i.input, 0)),
                "warmup_structural": i.warmup_structural,
                "period_exec": i.period_exec,
                "exec_rows": i.exec_rows,
                "method": i.method,
                "irregular": i.irregular,
                "outside_exec": i.outside_exec,
            }
            for i in it.inputs
        ],  # fmt: skip
    }


def graph_to_dict(g: OpGraph, steady: SteadyState | None = None) -> dict[str, Any]:
    """The JSON object of the op graph (see the module docstring)."""
    iterations = _iterations_dict(g, _steady_of(g, steady))
    reorders = {str(r["node"]): r for r in g.reorders.to_dict("records")}
    nodes: list[dict[str, Any]] = []
    for nid, attrs in g.graph.nodes(data=True):
        r = reorders.get(nid)
        reorder = None
        if r is not None:
            reorder = {
                "tensor": r["tensor"],
                "converts": r["converts"],
                "round_trip": bool(r["round_trip"]),
                "round_trip_with": _ids(str(r["round_trip_with"])),
                **{k: _num(r[k]) for k in _REORDER_KEYS},
            }
        nodes.append(
            {
                "id": nid,
                "kind": attrs["kind"],
                "count": int(attrs["count"]),
                "time_ms": _num(float(attrs["time_ms"])),
                "reorder": reorder,
                **{k: _num(attrs[k]) for k in _NODE_KEYS},
            }
        )
    edges = [
        {"src": u, "dst": v, **{k: d.get(k, "") for k in ("dims", "dtype", "layout",
                                                        "src_arg", "dst_arg")}}
        for u, v, d in g.graph.edges(data=True)
    ]  # fmt: skip
    return {"iterations": iterations, "nodes": nodes, "edges": edges}


def render_json(g: OpGraph, steady: SteadyState | None = None) -> str:
    """The op graph as JSON text."""
    return json.dumps(graph_to_dict(g, steady), indent=2)


def render_graphml(g: OpGraph, steady: SteadyState | None = None) -> str:
    """The op graph as GraphML (networkx), with the iteration numbers as graph attributes."""
    st = _steady_of(g, steady)
    out = nx.DiGraph()
    out.graph.update(
        {"iterations": st.passes, "warmup": st.warmup, "period_exec": st.period_exec}
    )  # fmt: skip
    for nid, attrs in g.graph.nodes(data=True):
        out.add_node(nid, **{k: _graphml_value(v) for k, v in attrs.items()})
    for u, v, attrs in g.graph.edges(data=True):
        out.add_edge(u, v, **{k: _graphml_value(x) for k, x in attrs.items()})
    return "\n".join(nx.generate_graphml(out)) + "\n"


def _graphml_value(v: Any) -> Any:
    """A GraphML attribute: XML 1.0 holds no control characters, so text is made safe."""
    v = _num(v)
    if v is None:
        return ""
    if isinstance(v, bool | int | float):
        return v
    return safe(v)


def _layout_colours(g: OpGraph) -> dict[str, str]:
    layouts = sorted({str(a.get("dst_layout") or a.get("src_layout") or "")
                      for _, a in g.graph.nodes(data=True)})  # fmt: skip
    return {lay: _PALETTE[i % len(_PALETTE)] for i, lay in enumerate(layouts)}


def _ms(v: Any) -> str:
    return ms(_num(v))


def _label_lines(nid: str, a: dict[str, Any]) -> list[str]:
    kind = str(a.get("kind") or "op")
    lines = [f"{nid}" if kind in nid else f"{nid} {kind}"]
    impl = str(a.get("impl") or "")
    if impl:
        lines.append(impl)
    src, dst = str(a.get("src_layout") or ""), str(a.get("dst_layout") or "")
    if kind == "reorder":
        lines.append(f"{src} -> {dst}")
        lines.append(f"{a.get('reorder_tensor', '')}, {a.get('reorder_converts', '')}"
                     + (", round trip" if a.get("reorder_round_trip") else ""))  # fmt: skip
    elif src or dst:
        lines.append(f"{src} -> {dst}" if src != dst else src)
    if a.get("post_ops"):
        lines.append(f"post-ops: {a['post_ops']}")
    lines.append(f"{int(a.get('count', 0))}x, total {_ms(a.get('time_ms'))}, "
                 f"p50 {_ms(a.get('p50_ms'))}")  # fmt: skip
    return lines


def _dot_str(text: str) -> str:
    """A DOT quoted string of one line of text."""
    return '"' + safe(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_label(lines: list[str]) -> str:
    """A DOT quoted string of several lines (joined by DOT's centred line break ``\\n``)."""
    return '"' + "\\n".join(_dot_str(line)[1:-1] for line in lines) + '"'


def render_dot(g: OpGraph, steady: SteadyState | None = None) -> str:
    """The op graph as Graphviz DOT text."""
    colours = _layout_colours(g)
    st = _steady_of(g, steady)
    title = (
        f"one iteration of {st.passes} ({st.warmup} warm-up), "
        f"{st.period_exec} primitive executions each"
    )
    out = [
        "digraph dnnlens {",
        f"  label={_dot_str(title)};",
        "  labelloc=t;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    for nid, a in g.graph.nodes(data=True):
        fill = colours[str(a.get("dst_layout") or a.get("src_layout") or "")]
        attrs = [f"label={_dot_label(_label_lines(nid, a))}", f'fillcolor="{fill}"']
        styles = ["rounded", "filled"]
        if a.get("kind") == "reorder":
            weight = a.get("reorder_tensor") == "weight"
            attrs += [f'color="{"#ff7f00" if weight else "#e31a1c"}"', "penwidth=3"]
            if a.get("reorder_round_trip"):
                styles.append("dashed")
        if not a.get("steady", True):
            styles.append("dotted")
        attrs.append(f'style="{",".join(styles)}"')
        out.append(f"  {_dot_str(nid)} [{', '.join(attrs)}];")
    for u, v, d in g.graph.edges(data=True):
        label = f"{d.get('dims', '')} {d.get('layout', '')}".strip()
        out.append(f"  {_dot_str(u)} -> {_dot_str(v)} [label={_dot_str(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_text(text: str) -> str:
    """Label text for Mermaid: terminal-safe, then its entity codes (``#35;`` is ``#``)."""
    return (safe(text).replace("#", "#35;").replace("&", "&amp;").replace('"', "#quot;")
            .replace("<", "&lt;").replace(">", "&gt;").replace("`", "#96;"))  # fmt: skip


def _mermaid_id(nid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", nid) or "node"


def render_mermaid(g: OpGraph, steady: SteadyState | None = None) -> str:
    """The op graph as a Mermaid flowchart."""
    colours = _layout_colours(g)
    layout_class = {lay: f"layout{i}" for i, lay in enumerate(colours)}
    out = ["flowchart TD"]
    for nid, a in g.graph.nodes(data=True):
        label = "<br/>".join(_mermaid_text(s) for s in _label_lines(nid, a))
        out.append(f'  {_mermaid_id(nid)}["{label}"]')
    for u, v, d in g.graph.edges(data=True):
        label = _mermaid_text(f"{d.get('dims', '')} {d.get('layout', '')}".strip())
        u, v = _mermaid_id(u), _mermaid_id(v)
        out.append(f'  {u} -->|"{label}"| {v}' if label else f"  {u} --> {v}")
    for lay, cls in layout_class.items():
        out.append(f"  classDef {cls} fill:{colours[lay]},stroke:#555")
    out.append("  classDef reorder stroke:#e31a1c,stroke-width:3px")
    out.append("  classDef weightreorder stroke:#ff7f00,stroke-width:3px")
    out.append("  classDef roundtrip stroke:#e31a1c,stroke-width:3px,stroke-dasharray:5 3")
    out.append("  classDef extra stroke-dasharray:2 2")
    for nid, a in g.graph.nodes(data=True):
        layout = str(a.get("dst_layout") or a.get("src_layout") or "")
        nid = _mermaid_id(nid)
        out.append(f"  class {nid} {layout_class[layout]}")
        if a.get("kind") == "reorder":
            if a.get("reorder_round_trip"):
                cls = "roundtrip"
            elif a.get("reorder_tensor") == "weight":
                cls = "weightreorder"
            else:
                cls = "reorder"
            out.append(f"  class {nid} {cls}")
        elif not a.get("steady", True):
            out.append(f"  class {nid} extra")
    return "\n".join(out) + "\n"


def render(g: OpGraph, fmt: str, steady: SteadyState | None = None) -> str:
    """The op graph in one of :data:`FORMATS`; ``steady`` is the analysis's steady state."""
    renderers = {"json": render_json, "graphml": render_graphml, "dot": render_dot,
                 "mermaid": render_mermaid}  # fmt: skip
    if fmt not in renderers:
        raise ValueError(f"unknown graph format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return renderers[fmt](g, steady)
