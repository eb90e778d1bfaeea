"""DL107 aten-convolution."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._framework import QUIET_BELOW_SHARE, cost, impact, step_finding
from dnnlens.rules.context import RuleContext

#: The fix for each reason the arguments give (the first word of ``convs.reason``).
_FIXES = {
    "bfloat16": (
        "Run bfloat16 on a CPU whose bfloat16 support oneDNN reports (AVX-512 BW/VL/DQ or "
        "AVX-NE-CONVERT) without ONEDNN_MAX_CPU_ISA below it; on this CPU, train and run in "
        "float32 (no bfloat16 autocast), which PyTorch sends to oneDNN."
    ),
    "float16": (
        "Run float16 on a CPU with AVX-512 FP16 or AVX-NE-CONVERT, or use float32 (or "
        "bfloat16 where the CPU supports it) on this one."
    ),
    "float32 1x1": (
        "A batch of 16 or more, or more than one intra-op thread (torch.set_num_threads), "
        "lets PyTorch pick oneDNN for these 1x1 convolutions."
    ),
}


class AtenConvolution(Rule):
    """Convolutions run in PyTorch's own reference kernels, not oneDNN's.

    PyTorch chooses a convolution's CPU backend per call: oneDNN for float32 unless a size
    rule prefers its own kernel (1x1 with a batch under 16 on one thread, tiny problems),
    for bfloat16 and float16 only where oneDNN supports the type on the CPU; everything
    else runs ATen's reference kernels (``aten::_slow_conv2d_forward`` under
    ``aten::thnn_conv2d``, ``slow_conv3d``, ``slow_conv_dilated2d`` ... and their backward),
    often ten times slower. The framework view lists each such convolution
    (``convolutions_outside_onednn``: shapes, dtype, memory format, stride, dilation, groups,
    and the reason those arguments give); the rule adds their typical time and fires when
    it is at least ``min_share`` of a typical step, graded by that share like every
    framework rule. Its message and fix follow the costliest one's reason.

    Saving, per row of the table (one kernel, phase and shape), then added up:

    * ``same_shape``: a oneDNN forward convolution of the same shape (batch, channels,
      spatial size, kernel, stride, groups) runs in the inputs (a verbose log analysed
      with the trace): the row saves ``ms_per_step - calls_per_step x`` that primitive's
      median run. Backward rows have no such pair (oneDNN splits them in two).
    * ``roofline``: else, when the machine is known (a log header or ``--machine``), the
      row saves its time minus the time at the f32 roof of the machine (what oneDNN would
      run on this CPU with the fix): ``max(FLOPs / peak, bytes / bandwidth)`` per call,
      ``2 x N x OC x OH x OW x IC/groups x KH x KW`` FLOPs forward and twice that backward
      (gradients of the input and the weight), the three tensors' f32 bytes once. It is a
      bound: no kernel runs at its roof.
    * ``unknown``: no pair and no machine (a trace alone); the finding then ranks by its
      time after those whose saving is known.

    The finding's basis is the weakest one its rows used; rows with no figure count as
    saving nothing (the note says how much time they hold), so a known saving is never
    more than the evidence gives.

    Fix: give PyTorch a convolution it sends to oneDNN: float32 (or bfloat16/float16 on a
    CPU that supports them), ``torch.backends.mkldnn.enabled = True``, and for 1x1
    convolutions a batch of 16 or more or several threads.
    """

    name = "aten-convolution"
    code = "DL107"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = ctx.framework
        if fw is None or not fw.steady_count:
            return
        table = fw.slow_convolutions
        if table.empty:
            return
        total = float(table["ms_per_step"].sum())
        top = table.iloc[0]
        calls = table.groupby("op", sort=False)["calls_per_step"].sum()
        listed = ", ".join(f"{n.removeprefix('aten::')} x{c:g}" for n, c in calls.items())
        shape = ""
        if isinstance(top["input_dims"], list) and top["input_dims"]:
            shape = (
                f" (input {top['input_dims']}, weight {top['weight_dims']}, {top['dtype']}, "
                f"{top['layout'] or 'layout not told'})"
            )
        reason = str(top["reason"])
        rows = fw.slow_convolution_rows
        evidence = (
            fw.evidence(rows, 3) if rows is not None else fw.table_evidence(list(calls.index))
        )
        fix = next((text for key, text in _FIXES.items() if reason.startswith(key)), "")
        yield from step_finding(
            self,
            fw,
            f"convolutions in PyTorch's own kernels ({listed} kernel calls per step): "
            f"{cost(fw, total)}; "
            f"the costliest{shape}: {reason}",
            evidence,
            total,
            impact(
                fw,
                total,
                calls_per_step=dict(calls.astype(float)),
                reasons=sorted(set(table["reason"])),
                convolutions=len(table),
            ),
            fix=fix,
            saving=saving(ctx, table),
        )


#: The strength of each basis a row can have: the finding takes the weakest one used.
_STRENGTH = {"same_shape": 0, "roofline": 1}


def saving(ctx: RuleContext, table: Any) -> Saving:
    """What running these convolutions in oneDNN would save per step (class docstring)."""
    m = ctx.analysis.machine
    # a log's header (or its kernels) told the ISA, or the user gave a machine profile
    machine_known = (
        ctx.analysis.options.machine is not None or m.sources.get("isa", "default") != "default"
    )
    pairs = _onednn_forward(ctx)
    total, used, without = 0.0, set(), 0.0
    for row in table.itertuples(index=False):
        spent = float(row.ms_per_step)
        shape = _shape(row)
        if shape is None:
            without += spent
            continue
        calls = float(row.calls_per_step)
        if row.phase == "forward" and shape["key"] in pairs:
            total += max(spent - calls * pairs[shape["key"]], 0.0)
            used.add("same_shape")
            continue
        if not machine_known:
            without += spent
            continue
        flops = shape["flops"] * (2 if row.phase == "backward" else 1)
        roof_ms = max(flops / m.peak("f32"), shape["bytes"] / m.bandwidth_gbs) / 1e6
        total += max(spent - calls * roof_ms, 0.0)
        used.add("roofline")
    if not used:
        why = (
            "no oneDNN convolution of these shapes in the inputs, and no machine "
            "(a log header or --machine) to bound them"
        )
        return Saving.unknown(why)
    basis = max(used, key=_STRENGTH.__getitem__)
    note = (
        "time minus the time at oneDNN's rate for the same shape"
        if basis == "same_shape" and len(used) == 1
        else f"time minus the time at the roof of {m.isa} x{m.threads} in f32"
        + (" (the same shape's oneDNN rate where the inputs hold it)" if len(used) > 1 else "")
    )
    if without:
        note += f"; {without:.3g} ms of kernels with no figure count as saving nothing"
    return Saving(total, basis, note)


def _shape(row: Any) -> dict[str, Any] | None:
    """A row's comparable shape (``key``), its forward FLOPs per call and its three
    tensors' f32 bytes; None when the trace holds no shapes."""
    src, wei = row.input_dims, row.weight_dims
    if not isinstance(src, list) or not isinstance(wei, list) or len(src) != 4 or len(wei) != 4:
        return None  # 2-D convolutions only: the oneDNN problem names what they have
    if row.transposed:
        return None
    n, ic, ih, iw = src
    oc, icg, kh, kw = wei
    stride = list(row.stride) or [1, 1]
    pad = list(row.padding) if isinstance(row.padding, list) and row.padding else [0, 0]
    dil = list(row.dilation) or [1, 1]
    groups = int(row.groups or 1)
    if len(stride) == 1:
        stride = stride * 2
    if len(pad) == 1:
        pad = pad * 2
    if len(dil) == 1:
        dil = dil * 2
    oh = (ih + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (iw + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    if min(oh, ow) <= 0:
        return None
    flops = 2.0 * n * oc * oh * ow * icg * kh * kw
    elements = n * ic * ih * iw + oc * icg * kh * kw + n * oc * oh * ow
    key = (n, ic, oc, ih, iw, kh, kw, stride[0], stride[1], groups)
    return {"key": key, "flops": flops, "bytes": 4.0 * elements}


def _onednn_forward(ctx: RuleContext) -> dict[tuple[int, ...], float]:
    """The steady oneDNN forward convolutions of the inputs by shape (``_shape``'s key):
    the fastest median run among those of that shape, in ms."""
    st = ctx.steady_stats
    if st.empty:
        return {}
    conv = st[st["kind"] == "convolution"]
    out: dict[tuple[int, ...], float] = {}
    for record, median in zip(conv.index, conv["median_ms"], strict=True):
        rec = ctx.log.records[int(record)]
        if not str(rec.prop_kind).startswith("forward"):
            continue
        d = ctx.problem(record).dims
        try:
            key = tuple(
                int(d.get(k) if d.get(k) is not None else default)
                for k, default in (
                    ("mb", -1), ("ic", -1), ("oc", -1), ("ih", -1), ("iw", -1), ("kh", -1),
                    ("kw", -1), ("sh", 1), ("sw", 1), ("g", 1),
                )
            )  # fmt: skip
        except (TypeError, ValueError):
            continue
        if -1 in key or not median == median:
            continue
        out[key] = min(out.get(key, float("inf")), float(median))
    return out
