"""Small inline-SVG charts for the HTML report: no JavaScript, nothing fetched.

Every function returns an ``<svg>`` element as a string. Every piece of text that reaches
the markup goes through :func:`esc` (log strings are untrusted). Hover text uses SVG
``<title>`` elements, which browsers show as tooltips without any script.
"""

from __future__ import annotations

import html
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from dnnlens.fmt import ms

#: Colours per primitive kind; reorders are the one red.
KIND_COLORS = {
    "reorder": "#d62728",
    "convolution": "#1f77b4",
    "deconvolution": "#6baed6",
    "inner_product": "#9467bd",
    "matmul": "#2ca02c",
    "gemm_api": "#98df8a",
    "eltwise": "#ff7f0e",
    "pooling": "#8c564b",
    "pooling_v2": "#8c564b",
    "batch_normalization": "#e377c2",
    "layer_normalization": "#f7b6d2",
    "binary": "#17becf",
    "sum": "#bcbd22",
    "softmax": "#7f7f7f",
    "rnn": "#393b79",
    "concat": "#c49c94",
    "graph_partition": "#aec7e8",
}
_SPARE = (
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#31a354",
    "#756bb1",
    "#636363",
    "#e6550d",
    "#9c9ede",
)
FONT = "12px"


def esc(value: object) -> str:
    """HTML/SVG-escape any value (quotes included, for attributes)."""
    return html.escape(str(value), quote=True)


def color_for(kind: str) -> str:
    """A stable colour for a primitive kind (unknown kinds hash into a spare palette)."""
    if kind in KIND_COLORS:
        return KIND_COLORS[kind]
    return _SPARE[zlib.crc32(kind.encode("utf-8", "replace")) % len(_SPARE)]


def _text(
    x: float,
    y: float,
    text: str,
    anchor: str = "start",
    cls: str = "",
    fill: str | None = None,
    weight: str | None = None,
) -> str:
    attrs = [f'x="{x:.1f}"', f'y="{y:.1f}"', f'text-anchor="{anchor}"']
    if cls:
        attrs.append(f'class="{cls}"')
    if fill:
        attrs.append(f'fill="{fill}"')
    if weight:
        attrs.append(f'font-weight="{weight}"')
    return f"<text {' '.join(attrs)}>{esc(text)}</text>"


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str = "", cls: str = "") -> str:
    tip = f"<title>{esc(title)}</title>" if title else ""
    c = f' class="{cls}"' if cls else ""
    return (
        f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{h:.2f}" '
        f'fill="{fill}"{c}>{tip}</rect>'
    )


def _svg(width: float, height: float, body: Sequence[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="100%" role="img" aria-label="{esc(label)}" '
        f'style="font-size:{FONT};max-width:{width:.0f}px">' + "".join(body) + "</svg>"
    )


def _fits(text: str, width: float, px_per_char: float = 6.6) -> bool:
    return len(text) * px_per_char + 8 <= width


def _clip(text: str, width: float, px_per_char: float = 6.6) -> str:
    room = int((width - 8) / px_per_char)
    if room <= 1:
        return ""
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


# ---------------------------------------------------------------------------------------


@dataclass
class Segment:
    """A part of a whole: label, value, colour and hover text."""

    label: str
    value: float
    color: str
    tooltip: str = ""


def share_bar(
    segments: Sequence[Segment], width: int = 1160, height: int = 40, label: str = "share of time"
) -> str:
    """One 100% stacked bar; segments wide enough carry ``label share%`` inside."""
    total = sum(max(s.value, 0.0) for s in segments)
    body: list[str] = []
    x = 0.0
    for s in segments:
        if total <= 0 or s.value <= 0:
            continue
        w = width * s.value / total
        pct = 100 * s.value / total
        body.append(_rect(x, 0, w, height, s.color, s.tooltip or f"{s.label}: {pct:.1f}%"))
        text = f"{s.label} {pct:.1f}%"
        if not _fits(text, w):
            text = f"{pct:.0f}%"
        if _fits(text, w):
            body.append(_text(x + w / 2, height / 2 + 4.5, text, "middle", "inbar", weight="bold"))
        x += w
    return _svg(width, height, body, label)


@dataclass
class Bar:
    """One horizontal bar."""

    label: str
    value: float
    color: str
    value_text: str = ""
    tooltip: str = ""


def hbar_chart(
    bars: Sequence[Bar],
    width: int = 570,
    label_width: int = 210,
    bar_height: int = 20,
    gap: int = 6,
    label: str = "bar chart",
) -> str:
    """Horizontal bars sorted as given, label on the left, value text at the bar's end."""
    top = max((b.value for b in bars), default=0.0)
    value_w = 120
    plot_w = width - label_width - value_w
    height = max(len(bars), 1) * (bar_height + gap) + gap
    body: list[str] = []
    for i, b in enumerate(bars):
        y = gap + i * (bar_height + gap)
        w = plot_w * b.value / top if top > 0 else 0.0
        body.append(
            _text(
                label_width - 6, y + bar_height / 2 + 4, _clip(b.label, label_width), "end", "lbl"
            )
        )
        body.append(
            _rect(
                label_width,
                y,
                max(w, 1.0),
                bar_height,
                b.color,
                b.tooltip or f"{b.label}: {b.value_text}",
            )
        )
        body.append(
            _text(label_width + w + 5, y + bar_height / 2 + 4, b.value_text, "start", "val")
        )
    return _svg(width, height, body, label)


def nice_step(span: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 5 x 10^k) giving about ``ticks`` ticks over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * mag >= raw:
            return mult * mag
    return 10 * mag


@dataclass
class Column:
    """One stacked column: its label, value per series, and whether to mark it."""

    label: str
    values: dict[str, float]
    marked: bool = False
    tooltip: str = ""


def stacked_columns(
    columns: Sequence[Column],
    series: Sequence[tuple[str, str]],
    width: int = 1160,
    height: int = 240,
    y_label: str = "ms",
    mark_label: str = "warm-up",
    label: str = "stacked columns",
) -> str:
    """Vertical stacked columns (one per iteration), a y axis in ms, marked columns hatched."""
    left, bottom, top_pad = 58, 34, 14
    plot_h = height - bottom - top_pad
    plot_w = width - left - 10
    totals = [sum(max(v, 0.0) for v in c.values.values()) for c in columns]
    top = max(totals, default=0.0)
    step = nice_step(top)
    y_max = step * math.ceil(top / step) if top > 0 else 1.0
    body: list[str] = [
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="3" height="6" fill="#ffffff" '
        'fill-opacity="0.55"/></pattern></defs>'
    ]
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = top_pad + plot_h * (1 - tick / y_max)
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        body.append(_text(left - 6, y + 4, f"{tick:g}", "end", "axis"))
        tick += step
    body.append(_text(12, top_pad + plot_h / 2, y_label, "middle", "axis"))
    n = max(len(columns), 1)
    slot = plot_w / n
    bar_w = max(min(slot * 0.72, 60), 1.0)
    every = max(1, math.ceil(n / 40))
    for i, c in enumerate(columns):
        x = left + i * slot + (slot - bar_w) / 2
        y = top_pad + plot_h
        for name, color in series:
            v = c.values.get(name, 0.0)
            if v <= 0:
                continue
            h = plot_h * v / y_max
            y -= h
            body.append(_rect(x, y, bar_w, h, color, f"{c.label} {name}: {ms(v)}"))
        if c.marked:
            body.append(
                _rect(x, y, bar_w, top_pad + plot_h - y, "url(#hatch)", f"{c.label}: {mark_label}")
            )
        body.append(
            f'<rect x="{x:.2f}" y="{top_pad}" width="{bar_w:.2f}" '
            f'height="{plot_h}" fill="transparent"><title>'
            f"{esc(c.tooltip or c.label)}</title></rect>"
        )
        if i % every == 0:
            body.append(_text(x + bar_w / 2, height - bottom + 16, c.label, "middle", "axis"))
    return _svg(width, height, body, label)


@dataclass
class Item:
    """One event on a timeline strip."""

    value: float
    color: str
    label: str = ""
    tooltip: str = ""
    emphasis: bool = False
    tick: str = ""


def timeline(
    items: Sequence[Item], width: int = 1160, height: int = 64, label: str = "timeline"
) -> str:
    """Events end to end, width proportional to time; labels where they fit.

    Emphasised items get a mark under the strip, so even a thin one is seen; an item's
    ``tick`` text (its position) is written under it where there is room.
    """
    total = sum(max(i.value, 0.0) for i in items)
    strip_h = height - 22
    body: list[str] = []
    x = 0.0
    for it in items:
        w = width * max(it.value, 0.0) / total if total > 0 else 0.0
        body.append(_rect(x, 0, max(w, 0.6), strip_h, it.color, it.tooltip, "ev"))
        if it.label and _fits(it.label, w, 6.0):
            body.append(_text(x + w / 2, strip_h / 2 + 4, it.label, "middle", "inbar"))
        if it.emphasis:
            body.append(f'<path d="M{x + w / 2:.1f} {strip_h + 3} l-4 7 h8 z" fill="{it.color}"/>')
        if it.tick and _fits(it.tick, w - 14, 6.0):
            body.append(
                _text(
                    x + w / 2 + (9 if it.emphasis else 0), strip_h + 14, it.tick, "middle", "axis"
                )
            )
        x += w
    return _svg(width, height, body, label)


@dataclass
class Flow:
    """A band from a source node to a destination node."""

    src: str
    dst: str
    value: float
    color: str = "#d62728"
    tooltip: str = ""


@dataclass
class _Node:
    name: str
    value: float = 0.0
    y: float = 0.0
    h: float = 0.0
    used: float = field(default=0.0)


def flow_chart(
    flows: Sequence[Flow],
    width: int = 1160,
    height: int = 260,
    left_title: str = "from",
    right_title: str = "to",
    label: str = "flow",
) -> str:
    """A two-column Sankey diagram: sources on the left, destinations on the right."""
    flows = [f for f in flows if f.value > 0]
    if not flows:
        return _svg(width, 30, [_text(0, 18, "nothing to show", "start", "axis")], label)
    node_w, pad, title_h, label_w = 16, 10, 22, 200
    lefts: dict[str, _Node] = {}
    rights: dict[str, _Node] = {}
    for f in flows:
        lefts.setdefault(f.src, _Node(f.src)).value += f.value
        rights.setdefault(f.dst, _Node(f.dst)).value += f.value
    total = sum(f.value for f in flows)
    avail = height - title_h - pad * (max(len(lefts), len(rights)) + 1)
    scale = max(avail, 20) / total

    def place(nodes: dict[str, _Node]) -> None:
        y = title_h + pad
        for node in sorted(nodes.values(), key=lambda n: -n.value):
            node.y, node.h = y, max(node.value * scale, 2.0)
            y += node.h + pad

    place(lefts)
    place(rights)
    x0, x1 = label_w, width - label_w - node_w
    body = [
        _text(x0 + node_w / 2, 14, left_title, "middle", "axis", weight="bold"),
        _text(x1 + node_w / 2, 14, right_title, "middle", "axis", weight="bold"),
    ]
    for f in sorted(flows, key=lambda f: (lefts[f.src].y, rights[f.dst].y)):
        a, b = lefts[f.src], rights[f.dst]
        h = max(f.value * scale, 1.0)
        ya, yb = a.y + a.used + h / 2, b.y + b.used + h / 2
        a.used += h
        b.used += h
        xa, xb = x0 + node_w, x1
        mid = (xa + xb) / 2
        tip = f.tooltip or f"{f.src} -> {f.dst}: {ms(f.value)}"
        body.append(
            f'<path d="M{xa:.1f} {ya:.1f} C{mid:.1f} {ya:.1f} {mid:.1f} {yb:.1f} '
            f'{xb:.1f} {yb:.1f}" stroke="{f.color}" stroke-opacity="0.45" '
            f'stroke-width="{h:.2f}" fill="none" class="band"><title>{esc(tip)}'
            "</title></path>"
        )
    for node in lefts.values():
        body.append(_rect(x0, node.y, node_w, node.h, "#444", f"{node.name}: {ms(node.value)}"))
        body.append(
            _text(
                x0 - 6,
                node.y + node.h / 2 + 4,
                _clip(f"{node.name}  {ms(node.value)}", label_w),
                "end",
                "lbl",
            )
        )
    for node in rights.values():
        body.append(_rect(x1, node.y, node_w, node.h, "#444", f"{node.name}: {ms(node.value)}"))
        body.append(
            _text(
                x1 + node_w + 6,
                node.y + node.h / 2 + 4,
                _clip(f"{node.name}  {ms(node.value)}", label_w),
                "start",
                "lbl",
            )
        )
    return _svg(width, height, body, label)


def legend(items: Sequence[tuple[str, str]]) -> str:
    """An HTML legend: coloured swatches with labels."""
    return (
        '<div class="legend">'
        + "".join(
            f'<span class="key"><i style="background:{esc(color)}"></i>{esc(name)}</span>'
            for name, color in items
        )
        + "</div>"
    )
