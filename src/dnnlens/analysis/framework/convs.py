"""Convolutions PyTorch ran in its own kernels, not oneDNN's, and why, as the trace shows it.

PyTorch picks a convolution's backend per call (``ConvParams::use_mkldnn`` in ATen's
``Convolution.cpp``, torch 2.x): on the CPU it calls oneDNN (``aten::mkldnn_convolution``)
for float32 unless a size rule prefers its own kernel, for bfloat16 and float16 only when
oneDNN reports that the CPU supports the type; anything else runs ATen's reference kernels
(``aten::_slow_conv2d_forward`` under ``aten::thnn_conv2d``, ``slow_conv3d``,
``slow_conv_dilated2d``, ``slow_conv_transpose2d`` ..., and their backward). The reason is
read from the arguments of the ``aten::_convolution`` or ``aten::convolution_backward``
call above the kernel (dtype, memory format, kernel, stride, dilation, groups, batch); what
the trace cannot show (the CPU, the thread count, ``torch.backends.mkldnn.enabled``) is
named as such, never guessed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.args import (
    column_codes,
    dtype,
    int_list,
    json_list,
    memory_format,
)
from dnnlens.analysis.framework.names import PHASES

if TYPE_CHECKING:
    from dnnlens.analysis.framework.view import FrameworkAnalysis

#: ATen's own convolution kernels (the outermost of them is timed).
SLOW_CONVOLUTION = re.compile(
    r"^aten::(?:_?slow_conv|thnn_conv|_nnpack_spatial_convolution|_conv_depthwise)"
)
#: The calls above a kernel that hold the convolution's arguments: name -> argument index
#: of (input, weight, stride, dilation, transposed, groups, padding).
_CALLERS = {
    "aten::_convolution": (0, 1, 3, 5, 6, 8, 4),
    "aten::convolution": (0, 1, 3, 5, 6, 8, 4),
    "aten::convolution_backward": (1, 2, 4, 6, 7, 9, 5),
}
#: PyTorch's float32 size rules (``use_mkldnn``): its own kernel for a 1x1 convolution
#: with unit stride, no dilation and a batch under this, on one thread ...
ONE_BY_ONE_BATCH = 16
#: ... and for a batch of 1, groups 1, a kernel of at most 3 on a side and an input of at
#: most this many elements.
SMALL_INPUT_ELEMENTS = 20480

COLUMNS = (
    "op",
    "phase",
    "input_dims",
    "weight_dims",
    "dtype",
    "layout",
    "stride",
    "padding",
    "dilation",
    "groups",
    "transposed",
    "calls_per_step",
    "ms_per_step",
    "share",
    "reason",
)


def reason(attrs: dict[str, Any]) -> str:
    """Why PyTorch ran this convolution outside oneDNN, as far as its arguments show."""
    kind = attrs.get("dtype") or ""
    if not kind:
        return "the trace holds no input types (recorded without record_shapes=True)"
    if kind == "bfloat16":
        return (
            "bfloat16 input: PyTorch runs bfloat16 convolutions in oneDNN only when oneDNN "
            "reports bfloat16 support on the CPU (AVX-512 BW, VL and DQ, or AVX-NE-CONVERT; "
            "ONEDNN_MAX_CPU_ISA below that turns it off too); the trace does not record the CPU"
        )
    if kind == "float16":
        return (
            "float16 input: PyTorch runs float16 convolutions in oneDNN only when oneDNN "
            "reports float16 support on the CPU (AVX-512 FP16 or AVX-NE-CONVERT); the trace "
            "does not record the CPU"
        )
    if kind != "float32":
        return f"{kind} input: PyTorch calls oneDNN for float32, bfloat16 and float16 only"
    src, wei = attrs.get("input_dims") or [], attrs.get("weight_dims") or []
    stride, dilation = attrs.get("stride") or [], attrs.get("dilation") or []
    groups = attrs.get("groups") or 1
    if len(src) >= 3 and len(wei) >= 3:
        batch, kernel = src[0], wei[2:]
        unit = all(s == 1 for s in stride) and all(d == 1 for d in dilation)
        if unit and all(k == 1 for k in kernel) and batch < ONE_BY_ONE_BATCH:
            return (
                f"float32 1x1 convolution, stride 1, batch {batch} < {ONE_BY_ONE_BATCH}: "
                "PyTorch prefers its own kernel for these when it runs on one thread"
            )
        small = int(np.prod(src)) <= SMALL_INPUT_ELEMENTS
        if groups == 1 and batch <= 1 and not all(k > 3 for k in kernel[-2:]) and small:
            return (
                f"float32, batch {batch}, kernel {'x'.join(map(str, kernel))}, input of "
                f"{int(np.prod(src))} <= {SMALL_INPUT_ELEMENTS} elements: PyTorch's own "
                "kernel is faster for problems this small"
            )
    return (
        "float32 and none of PyTorch's size rules applies: oneDNN is off "
        "(torch.backends.mkldnn.enabled = False) or this PyTorch was built without it"
    )


def _caller(fw: FrameworkAnalysis, at: np.ndarray) -> np.ndarray:
    """Per row of ``at``, the nearest enclosing convolution call (-1 if none)."""
    rows = fw.rows
    assert rows is not None
    wanted = rows.mask_names(frozenset(_CALLERS))
    out = np.full(len(at), -1, dtype=np.int64)
    cur = rows.parent[at].astype(np.int64)
    for _ in range(6):  # convolution -> _convolution -> thnn_conv2d -> _slow_conv2d_forward
        live = (cur >= 0) & (out < 0)
        if not live.any():
            break
        hit = live & wanted[np.maximum(cur, 0)]
        out[hit] = cur[hit]
        cur = np.where(live & ~hit, rows.parent[np.maximum(cur, 0)], -1)
    return out


def _attrs(fw: FrameworkAnalysis, row: int, caller: int) -> dict[str, Any]:
    """The arguments that decide the backend, from the caller (else the kernel itself)."""
    rows = fw.rows
    assert rows is not None
    source = caller if caller >= 0 else row
    name = str(rows.name_of(source))
    idx = _CALLERS.get(name, (0, 1, -1, -1, -1, -1, -1))
    texts = {}
    for column in ("input_dims", "input_types", "input_strides", "concrete_inputs"):
        codes, cats = column_codes(rows, column)
        texts[column] = json_list(cats[codes[source]]) if codes[source] >= 0 else ()

    def arg(column: str, i: int) -> Any:
        values = texts[column]
        return values[i] if 0 <= i < len(values) else None

    src, wei = arg("input_dims", idx[0]), arg("input_dims", idx[1])
    groups = str(arg("concrete_inputs", idx[5]) or "")
    transposed = arg("concrete_inputs", idx[4])
    return {
        "input_dims": src if isinstance(src, list) else [],
        "weight_dims": wei if isinstance(wei, list) else [],
        "dtype": dtype(arg("input_types", idx[0])),
        "layout": memory_format(src, arg("input_strides", idx[0])),
        "stride": int_list(arg("concrete_inputs", idx[2])) or [],
        "padding": int_list(arg("concrete_inputs", idx[6])) or [],
        "dilation": int_list(arg("concrete_inputs", idx[3])) or [],
        "groups": int(groups) if groups.isdigit() else None,
        "transposed": transposed == "True" if transposed in ("True", "False") else None,
    }


def slow_convolutions(fw: FrameworkAnalysis) -> tuple[pd.DataFrame, np.ndarray]:
    """The table of ATen-kernel convolutions (one row per kernel name, phase and input
    shapes: its arguments, calls and typical ms per step, share of the step, the reason),
    most costly first; and the mask of their rows."""
    rows = fw.rows
    if rows is None:
        return pd.DataFrame(columns=list(COLUMNS)), np.zeros(0, dtype=bool)
    mask = fw.steady_rows(rows.outermost(rows.mask_match(SLOW_CONVOLUTION)))
    at = np.flatnonzero(mask)
    if not len(at):
        return pd.DataFrame(columns=list(COLUMNS)), mask
    callers = _caller(fw, at)
    caller_dims = np.where(callers >= 0, rows.dims[np.maximum(callers, 0)], rows.dims[at])
    group = (rows.name[at].astype(np.int64) * len(PHASES) + rows.phase[at]) * (
        len(rows.dims_names) + 1
    ) + caller_dims
    out = []
    for g in np.unique(group).tolist():
        members = at[group == g]
        first = int(members[0])
        attrs = _attrs(fw, first, int(callers[np.flatnonzero(group == g)[0]]))
        member_mask = np.zeros(len(rows), dtype=bool)
        member_mask[members] = True
        ms = fw.typical_ms(member_mask)
        out.append(
            {
                "op": str(rows.name_of(first)),
                "phase": PHASES[int(rows.phase[first])],
                **attrs,
                "calls_per_step": fw.calls_per_step(member_mask),
                "ms_per_step": ms,
                "share": fw.share(ms),
                "reason": reason(attrs),
            }
        )
    table = pd.DataFrame(out, columns=list(COLUMNS))
    table = table.sort_values("ms_per_step", ascending=False, kind="stable")
    return table.reset_index(drop=True), mask
