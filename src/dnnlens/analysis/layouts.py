"""Layouts as people read them: ``abcd->aBcd8b`` for a reorder, ``src:acdb wei:...`` for others."""

from __future__ import annotations

from dnnlens.parsers.memdesc import parse_mds

ARROW = "->"


def reorder_layouts(mds: str) -> tuple[str, str, str, str]:
    """``(src_dtype, src_layout, dst_dtype, dst_layout)`` of a reorder's md field."""
    parsed = parse_mds(mds)
    if not len(parsed):
        return "", "", "", ""
    src = parsed.get("src") or parsed.get("in") or parsed[0]
    dst = parsed.get("dst") or parsed.get("out") or parsed[len(parsed) - 1]
    return src.dtype, src.layout, dst.dtype, dst.layout


def flow_label(mds: str) -> str:
    """``abcd->aBcd8b`` (with data types when they differ: ``f32:abcd->bf16:abcd``)."""
    sdt, sl, ddt, dl = reorder_layouts(mds)
    if sdt != ddt:
        return f"{sdt}:{sl}{ARROW}{ddt}:{dl}"
    return f"{sl}{ARROW}{dl}"


def md_layouts(mds: str) -> str:
    """The layouts of the present tensors, ``src:aBcd8b wei:ABcd8b8a dst:aBcd8b``."""
    parts = []
    for md in parse_mds(mds):
        if md.is_absent:
            continue
        parts.append(f"{md.arg}:{md.layout}" if md.arg else md.layout)
    return " ".join(parts)
