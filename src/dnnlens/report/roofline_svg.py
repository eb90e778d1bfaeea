"""The roofline chart as one inline SVG string (no script, no external resources).

Log-log axes: arithmetic intensity (FLOP/byte) across, attained GFLOP/s up. The memory roof
is ``AI x bandwidth``, the compute roofs are the peaks of the data types present (labelled
*assumed* when the clock or the bandwidth is); each primitive is a dot at the rate of its
typical run (area ~ its share of the time, colour = kind) with a tooltip that never prints
more than 100% of a roof (it says which assumption the point disproves instead). Primitives
that do no arithmetic (reorders, concat) cannot sit on a log FLOP axis: the caption counts
them (their bandwidth is in the ``primitives`` table). Every label is escaped.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

__all__ = ["roofline_svg"]

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_M = {"left": 64, "right": 220, "top": 36, "bottom": 56}


def _roofs(machine: Any, dtypes: set[str]) -> tuple[float, dict[str, float], dict[str, bool]]:
    """(bandwidth GB/s, {dtype: peak GFLOP/s}, {roof: assumed?}) of a Machine or a
    ``roofline_json`` dict; the roof ``bandwidth`` is a key of the last."""
    if isinstance(machine, dict):
        bw = float(machine.get("bandwidth_gbs") or 0.0)
        peaks = dict(machine.get("peaks") or machine.get("peak_gflops") or {})
        basis = dict(machine.get("peak_basis") or {})
        kept = {k: float(v) for k, v in peaks.items() if k in dtypes or k == "f32"}
        assumed = {k: basis.get(k, "assumed") == "assumed" for k in kept}
        assumed["bandwidth"] = machine.get("bandwidth_basis", "assumed") == "assumed"
        return bw, kept, assumed
    from dnnlens.analysis.machine import CLOCK_ASSUMED, dtype_class

    classes = {dtype_class(d) for d in dtypes} | {"f32"}
    assumed = {c: machine.peak_basis(c) == CLOCK_ASSUMED for c in classes}
    assumed["bandwidth"] = machine.bandwidth_basis == CLOCK_ASSUMED
    return machine.bandwidth_gbs, {c: machine.peak(c) for c in classes}, assumed


def _decades(lo: float, hi: float) -> tuple[int, int]:
    return math.floor(math.log10(lo)), math.ceil(math.log10(hi))


def _roof_label(dtype: str, peak: float, assumed: bool) -> str:
    return f"{dtype} {'assumed ' if assumed else ''}peak {peak:.0f} GFLOP/s"


def _efficiency_text(p: dict[str, Any]) -> str:
    """A point's efficiency as the tooltip says it: never above 100% of a roof."""
    eff, above = p.get("efficiency"), p.get("above_roof")
    if eff is not None:
        assumed = " of an assumed roof" if p.get("peak_basis") == "assumed" else ""
        return f"efficiency {100 * eff:.1f}%{assumed}"
    return str(above) if above else "efficiency n/a"


#: Points labelled with their kind and prop_kind beside them (the most time first).
LABELLED_POINTS = 6


def point_key(p: dict[str, Any]) -> str:
    """``convolution forward_inference``: what a point is, for its colour and label."""
    prop = str(p.get("prop_kind") or "")
    return f"{p['kind']} {prop}" if prop and prop != "undef" else str(p["kind"])


def roofline_svg(
    primitives: list[dict[str, Any]],
    machine: Any,
    width: int = 820,
    height: int = 420,
    title: str = "Roofline",
) -> str:
    """An inline ``<svg>`` of ``primitives`` (``primitives_json`` rows) under ``machine``'s roofs.

    ``machine`` is a :class:`~dnnlens.analysis.machine.Machine` or the ``machine`` object of
    ``roofline_json`` (``bandwidth_gbs`` and ``peaks``).
    """
    from dnnlens.analysis.machine import dtype_class

    pts = [
        p
        for p in primitives
        if (p.get("flops") or 0) > 0 and (p.get("bytes") or 0) > 0 and (p.get("gflops") or 0) > 0
    ]
    flat = [p for p in primitives if p.get("flops") == 0 and p.get("bytes")]
    dtypes = {dtype_class(str(p.get("dtype") or "f32")) for p in pts}
    bw, peaks, assumed = _roofs(machine, dtypes)
    top_peak = max(peaks.values(), default=1.0)
    ais = [p["flops"] / p["bytes"] for p in pts]
    ridge = top_peak / bw if bw > 0 else 1.0
    x0, x1 = _decades(min([*ais, ridge / 10, 0.1]), max([*ais, ridge * 10]))
    ys = [float(p["gflops"]) for p in pts]
    y0, y1 = _decades(min([*ys, top_peak / 1e3]), max([*ys, top_peak * 2]))
    pw = width - _M["left"] - _M["right"]
    ph = height - _M["top"] - _M["bottom"]

    def sx(ai: float) -> float:
        return _M["left"] + (math.log10(ai) - x0) / (x1 - x0) * pw

    def sy(g: float) -> float:
        return _M["top"] + ph - (math.log10(max(g, 10.0**y0)) - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="roofline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
        f'<rect x="{_M["left"]}" y="{_M["top"]}" width="{pw}" height="{ph}" fill="#fff" '
        'stroke="#999"/>',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="13">'
        f"{escape(title)}</text>",
    ]
    for e in range(x0, x1 + 1):
        x = sx(10.0**e)
        out.append(
            f'<line x1="{x:.1f}" y1="{_M["top"]}" x2="{x:.1f}" y2="{_M["top"] + ph}" '
            'stroke="#eee"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{_M["top"] + ph + 14}" text-anchor="middle">'
            f"{escape(f'{10.0**e:g}')}</text>"
        )
    for e in range(y0, y1 + 1):
        y = sy(10.0**e)
        out.append(
            f'<line x1="{_M["left"]}" y1="{y:.1f}" x2="{_M["left"] + pw}" y2="{y:.1f}" '
            'stroke="#eee"/>'
        )
        out.append(
            f'<text x="{_M["left"] - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(f'{10.0**e:g}')}</text>"
        )
    out.append(
        f'<text x="{_M["left"] + pw / 2:.0f}" y="{height - 22}" text-anchor="middle">'
        "arithmetic intensity (FLOP/byte)</text>"
    )
    out.append(
        f'<text transform="translate(16 {_M["top"] + ph / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">attained GFLOP/s</text>'
    )
    # roofs: memory slope up to each peak, then flat
    label_y = -math.inf
    for dt, peak in sorted(peaks.items(), key=lambda kv: -kv[1]):
        if bw <= 0 or peak <= 0:
            continue
        # the highest roof is labelled above its line, the others below theirs
        label_y = sy(peak) - 4 if label_y == -math.inf else max(sy(peak) + 13, label_y + 12)
        r = peak / bw
        xa = 10.0**x0
        dash = "" if dt == "f32" else ' stroke-dasharray="5 3"'
        out.append(
            f'<polyline fill="none" stroke="#333" stroke-width="1.5"{dash} points="'
            f"{sx(xa):.1f},{sy(xa * bw):.1f} {sx(r):.1f},{sy(peak):.1f} "
            f'{sx(10.0**x1):.1f},{sy(peak):.1f}"/>'
        )
        out.append(
            f'<text x="{sx(10.0**x1) - 4:.1f}" y="{label_y:.1f}" '
            f'text-anchor="end">{escape(_roof_label(dt, peak, assumed.get(dt, True)))}</text>'
        )
    if bw > 0:
        what = f"{'assumed ' if assumed['bandwidth'] else ''}{bw:.1f} GB/s"
        out.append(
            f'<text x="{sx(10.0**x0) + 6:.1f}" y="{sy(10.0**x0 * bw) + 16:.1f}">'
            f"{escape(what)}</text>"
        )
    # points, coloured and labelled by kind and prop_kind (forward and backward differ)
    kinds = sorted({point_key(p) for p in pts})
    colour = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kinds)}
    total = sum(float(p.get("time_ms") or 0.0) for p in pts) or 1.0
    biggest = sorted(range(len(pts)), key=lambda i: -float(pts[i].get("time_ms") or 0.0))
    labelled = set(biggest[:LABELLED_POINTS])
    for n, (p, ai) in enumerate(zip(pts, ais, strict=True)):
        share = float(p.get("time_ms") or 0.0) / total
        radius = 3.0 + 9.0 * math.sqrt(share)
        tip = (
            f"{p['kind']} {p.get('impl', '')} {p.get('problem', '')}\n"
            f"{p['gflops']:.3g} GFLOP/s in its typical run, AI {ai:.3g} FLOP/byte, "
            f"{p.get('bound', '?')}-bound, {_efficiency_text(p)}, "
            f"{p.get('count', 0)} calls, {float(p.get('time_ms') or 0):.3f} ms in all"
        )
        cx, cy = sx(ai), sy(float(p["gflops"]))
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" '
            f'r="{radius:.1f}" fill="{colour[point_key(p)]}" fill-opacity="0.7" '
            f'stroke="#222" stroke-width="0.5"><title>{escape(tip)}</title></circle>'
        )
        if n in labelled:
            out.append(
                f'<text x="{cx + radius + 3:.1f}" y="{cy + 4:.1f}" font-size="10">'
                f"{escape(point_key(p))}</text>"
            )
    for i, k in enumerate(kinds):
        y = _M["top"] + 10 + 16 * i
        out.append(f'<circle cx="{width - _M["right"] + 14}" cy="{y}" r="5" fill="{colour[k]}"/>')
        out.append(f'<text x="{width - _M["right"] + 24}" y="{y + 4}">{escape(k)}</text>')
    if flat:
        names = sorted({str(p["kind"]) for p in flat})
        out.append(
            f'<text x="{_M["left"]}" y="{height - 6}" fill="#555">'
            f"{escape(f'{len(flat)} primitives without arithmetic (' + ', '.join(names))}"
            f"{escape(') are not placed: see their GB/s in the table')}</text>"
        )
    if not pts:
        out.append(
            f'<text x="{_M["left"] + pw / 2:.0f}" y="{_M["top"] + ph / 2:.0f}" '
            'text-anchor="middle">no timed primitive with a known FLOP count</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
