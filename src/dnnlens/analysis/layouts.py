"""Layouts as people read them: ``abcd->aBcd8b`` for a reorder, ``src:acdb wei:...`` for others.

Each reads memory descriptors already parsed (a record's ``parsed_mds``).
"""

from __future__ import annotations

from dnnlens.model import MdList

ARROW = "->"


def reorder_layouts(mds: MdList) -> tuple[str, str, str, str]:
    """``(src_dtype, src_layout, dst_dtype, dst_layout)`` of a reorder's memory descriptors."""
    if not len(mds):
        return "", "", "", ""
    src = mds.get("src") or mds.get("in") or mds[0]
    dst = mds.get("dst") or mds.get("out") or mds[len(mds) - 1]
    return src.dtype, src.layout, dst.dtype, dst.layout


def flow_label(mds: MdList) -> str:
    """``abcd->aBcd8b`` (with data types when they differ: ``f32:abcd->bf16:abcd``)."""
    sdt, sl, ddt, dl = reorder_layouts(mds)
    if sdt != ddt:
        return f"{sdt}:{sl}{ARROW}{ddt}:{dl}"
    return f"{sl}{ARROW}{dl}"


def md_layouts(mds: MdList) -> str:
    """The layouts of the present tensors, ``src:aBcd8b wei:ABcd8b8a dst:aBcd8b``."""
    parts = []
    for md in mds:
        if md.is_absent:
            continue
        parts.append(f"{md.arg}:{md.layout}" if md.arg else md.layout)
    return " ".join(parts)
