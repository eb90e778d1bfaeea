"""FLOPs and bytes of one primitive call, from its problem and memory descriptors.

Every formula is written down, with a hand calculation per kind, in ``docs/cost-model.md``.
In short:

* **FLOPs** count multiply-adds as 2 and are the ones benchdnn reports where benchdnn has a
  count: convolution and deconvolution skip kernel taps that fall into padding (the count is
  separable: a product of per-dimension tap counts, :func:`conv_taps`), matmul/gemm/inner
  product are ``2 B M N K``, rnn counts only its GEMMs. Memory-bound kinds (eltwise,
  pooling, normalisations, softmax, binary, sum ...) use a fixed, documented number of
  operations per element; reorder, concat and shuffle do no arithmetic.
* **Bytes** are the compulsory traffic: every tensor of the memory-descriptor field that is
  present is moved once, at its size in memory (dims padded to the inner blocks of its
  layout tag, times the bits of its data type). Inputs are read and outputs written, so a
  reorder reads and writes its tensor; a ``sum`` post-op reads ``dst`` too and a
  ``binary`` post-op reads its second operand. Caches and repeated passes are not modelled.

:func:`primitive_cost` never raises: a kind or descriptor it does not understand gives
``None``. A line of a log is costed from its record (:func:`record_cost`: the descriptors the
record parsed once); the text forms are for descriptors no log printed (a projection's
what-if, a test), which become a record of their own.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from dnnlens.analysis.tensor_dims import (
    GEMM_KINDS,
    RNN_GATES,
    Groups,
    broadcast_dims,
    list_groups,
    list_tensor_dims,
    named_tensor_dims,
)
from dnnlens.parsers.attrs import Attrs
from dnnlens.parsers.memdesc import MemDesc
from dnnlens.parsers.problem import spatial_dims
from dnnlens.parsers.records import LINE_EVENT, LineRecord

__all__ = [
    "DTYPE_BITS",
    "Cost",
    "TensorCost",
    "compute_dtype",
    "conv_taps",
    "padded_elements",
    "primitive_cost",
    "primitive_flops",
    "record_cost",
    "record_no_cost_reason",
]

#: Bits per element of each oneDNN data type.
DTYPE_BITS: dict[str, int] = {
    "f64": 64, "s64": 64, "f32": 32, "s32": 32, "bf16": 16, "f16": 16, "s16": 16, "u16": 16,
    "s8": 8, "u8": 8, "f8_e5m2": 8, "f8_e4m3": 8, "e8m0": 8, "boolean": 8,
    "s4": 4, "u4": 4, "f4_e2m1": 4, "f4_e3m0": 4, "nf4": 4, "bin": 1,
}  # fmt: skip
#: Data type assumed when a line prints none (MKL-DNN 0.x convolutions).
DEFAULT_DTYPE = "f32"

#: Operations per element of the memory-bound kinds (conventions, see the docs).
OPS_ELTWISE = {"forward": 1, "backward": 2}
OPS_SOFTMAX = {"forward": 5, "backward": 4}
OPS_PRELU = {"forward": 2, "backward": 4}
OPS_NORM_APPLY = 2  # (x - mean) * rsigma * scale + shift, folded to one multiply-add
OPS_NORM_STATS = 3  # mean: 1 add; variance: 1 subtract + 1 multiply-add (counted 2)
OPS_NORM_BACKWARD = {"backward": 8, "backward_data": 5}

_CONV_KINDS = frozenset({"convolution", "deconvolution"})
_BY_ROLE_KINDS = frozenset(
    {"convolution", "deconvolution", "pooling", "inner_product", "resampling"}
)
_NORM_KINDS = frozenset({"batch_normalization", "layer_normalization", "group_normalization"})
_DATA_KINDS = frozenset({"eltwise", "softmax", "logsoftmax", "lrn", "shuffle", *_NORM_KINDS})
_NO_TENSOR = ("scale", "shift", "mean", "var", "stats", "scratchpad")
_TAG = re.compile(r"([A-Za-z]+)((?:[0-9]+[a-z])*)")
_BLOCK = re.compile(r"([0-9]+)([a-z])")

Dims = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TensorCost:
    """One tensor moved by a call: role, data type, logical dims, padded elements, bytes."""

    arg: str
    dtype: str
    dims: Dims
    elements: int
    bytes: int
    access: str = "read"  # read, write (or read+write for a sum post-op's dst)


@dataclass(frozen=True, slots=True)
class Cost:
    """The cost of one call of a primitive.

    ``flops`` and ``bytes`` are per call; ``dtype`` is the data type the arithmetic runs
    in (what the compute peak is looked up with); ``formula`` is the FLOP formula with its
    numbers; ``notes`` tell what was assumed or left out.
    """

    kind: str
    flops: int
    bytes: int
    dtype: str
    formula: str = ""
    tensors: tuple[TensorCost, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOP per byte (``None`` when nothing is moved)."""
        return self.flops / self.bytes if self.bytes else None


# ---------------------------------------------------------------------------------------
# helpers


def conv_taps(i: int, o: int, k: int, s: int = 1, p: int = 0, d: int = 0) -> int:
    """Pairs (output position, kernel tap) along one dimension whose input is not padding.

    The input index of output ``x`` and tap ``t`` is ``x*s - p + t*(d+1)`` (``d`` as
    oneDNN prints it: 0 is a dense kernel); benchdnn counts a tap only when that index is
    in ``[0, i)``. Example: ``i=o=64, k=3, s=1, p=1``: taps 0 and 2 miss one output each,
    63 + 64 + 63 = 190.
    """
    total = 0
    for t in range(k):
        off = t * (d + 1) - p
        lo = max(0, -(off // s))  # smallest x with x*s + off >= 0
        hi = min(o - 1, (i - 1 - off) // s)  # largest x with x*s + off <= i - 1
        total += max(0, hi - lo + 1)
    return total


def padded_elements(dims: Dims, tag: str) -> int:
    """Elements of a tensor in memory: each dim rounded up to the product of its blocks.

    Letter-coded tags only (``aBcd8b``: dim ``b`` blocked by 8; ``ABcd8b8a``; ``AB16b64a``);
    a tag that is not letter-coded or does not match the dims gives the logical count.
    """
    count = math.prod(dims)
    m = _TAG.fullmatch(tag or "")
    if not m or len(m.group(1)) != len(dims) or not m.group(2):
        return count
    outer = m.group(1).lower()
    if any(not "a" <= c <= "l" for c in outer):  # F0 names (nChw8c) are not letter-coded
        return count
    block = [1] * len(dims)
    for size, letter in _BLOCK.findall(m.group(2)):
        idx = ord(letter) - ord("a")
        if idx < len(dims):
            block[idx] *= int(size)
    return math.prod(-(-d // b) * b for d, b in zip(dims, block, strict=True))


def _bits(dtype: str) -> int:
    return DTYPE_BITS.get(dtype or DEFAULT_DTYPE, 32)


def _tensor(arg: str, dtype: str, dims: Dims, tag: str = "", access: str = "read") -> TensorCost:
    dt = dtype or DEFAULT_DTYPE
    elements = padded_elements(dims, tag)
    return TensorCost(arg, dt, dims, elements, -(-elements * _bits(dt) // 8), access)


def compute_dtype(mds: list[MemDesc] | tuple[MemDesc, ...], fpmath: str | None = None) -> str:
    """The data type the arithmetic runs in: the weights' (else the source's) data type.

    Integer weights or sources give ``int8``/``int4``; an f32 primitive allowed to compute
    in a lower precision (``attr-fpmath:bf16``) gives that precision.
    """
    by_arg = {md.arg: md.dtype for md in mds if md.dtype and md.dtype != "undef"}
    dt = ""
    for arg in (
        "wei",
        "wei_layer",
        "key",
        "src_b",
        "src",
        "src_layer",
        "query",
        "src_a",
        "data",
        "diff_dst",
        "in",
        "src0",
    ):
        if by_arg.get(arg):
            dt = by_arg[arg]
            break
    if not dt:
        dt = next(iter(by_arg.values()), DEFAULT_DTYPE)
    if dt in ("s8", "u8"):
        return "int8"
    if dt in ("s4", "u4", "nf4"):
        return "int4"
    if dt == "f32" and fpmath in ("bf16", "f16", "tf32"):
        return fpmath
    return dt


def _complete(dims: tuple[int | None, ...] | None) -> Dims | None:
    if dims is None or any(v is None for v in dims):
        return None
    return tuple(int(v) for v in dims if v is not None)


def _negative_sizes(
    named: dict[str, int | None], tensors: tuple[tuple[int | None, ...], ...]
) -> bool:
    """Whether a problem gives a size below zero: a named value other than a padding
    (``p*``, which oneDNN allows below zero) or a dim of a dims list."""
    if any(v is not None and v < 0 for key, v in named.items() if not key.startswith("p")):
        return True
    return any(v is not None and v < 0 for t in tensors for v in t)


def _direction(prop_kind: str) -> str:
    return "backward" if prop_kind.startswith("backward") else "forward"


# ---------------------------------------------------------------------------------------
# FLOPs per kind: each returns (flops, formula) or None


def _conv_flops(kind: str, d: dict[str, int | None]) -> tuple[int, str] | None:
    mb, ic, oc = d.get("mb"), d.get("ic"), d.get("oc")
    g = d.get("g") or 1
    if mb is None or ic is None or oc is None:
        return None
    taps = 1
    parts = []
    for x in "dhw":
        if f"k{x}" not in d and f"i{x}" not in d:
            continue
        i, o, k = d.get(f"i{x}"), d.get(f"o{x}"), d.get(f"k{x}", 1)
        s, p, dl = d.get(f"s{x}", 1), d.get(f"p{x}", 0), d.get(f"d{x}", 0)
        if None in (i, o, k, s, p, dl):
            return None
        if kind == "deconvolution":  # the transposed convolution: swap input and output
            i, o = o, i
        t = conv_taps(i, o, k, s or 1, p, dl)  # type: ignore[arg-type]
        taps *= t
        parts.append(f"taps_{x}={t}")
    flops = 2 * mb * oc * (ic // g) * taps
    return flops, f"2*mb*oc*(ic/g)*taps = 2*{mb}*{oc}*({ic}/{g})*{taps} ({', '.join(parts)})"


def _gemm_shape(kind: str, prob_dims: dict, groups: Groups) -> tuple[int, int, int, int] | None:
    """(B, M, N, K) of a matmul / gemm / inner product."""
    if kind == "inner_product":
        mb, oc, ic = prob_dims.get("mb"), prob_dims.get("oc"), prob_dims.get("ic")
        sp = _complete(spatial_dims(prob_dims, "i"))
        if None in (mb, oc, ic) or sp is None:
            return None
        return 1, mb, oc, ic * math.prod(sp)
    ts = [_complete(t) for t in groups[0][:2]] if groups else []
    if len(ts) == 2 and ts[0] is not None and ts[1] is not None:
        src, wei = ts[0], ts[1]
        if len(src) < 2 or len(wei) < 2:
            return None
        batch = _complete(broadcast_dims(src[:-2], wei[:-2])) or ()
        return math.prod(batch), src[-2], wei[-1], src[-1]
    if all(prob_dims.get(k) is not None for k in ("M", "N", "K")):
        return prob_dims.get("B") or 1, prob_dims["M"], prob_dims["N"], prob_dims["K"]
    return None


def _rnn_flops(
    d: dict[str, int | None], aux: Mapping[str, str], prop_kind: str, has_proj: bool
) -> tuple[int, str] | None:
    layers, t, mb = d.get("l", 1), d.get("t"), d.get("mb")
    sic, slc = d.get("sic"), d.get("slc")
    dhc = d.get("dhc") if d.get("dhc") is not None else d.get("dic")
    dic = d.get("dic") if d.get("dic") is not None else dhc
    if None in (layers, t, mb, sic, slc, dhc, dic):
        return None
    gates = RNN_GATES.get(aux.get("alg", ""), 4)
    dirs = 2 if aux.get("direction", "").startswith("bidirectional") else 1
    cell = 2 * gates * dhc * mb * (sic + slc)  # type: ignore[operator]
    if has_proj:
        cell += 2 * dhc * mb * dic  # type: ignore[operator]
    mult = 2 if prop_kind.startswith("backward") else 1
    flops = mult * dirs * layers * t * cell  # type: ignore[operator]
    return flops, (
        f"{mult}*dirs*l*t*2*gates*dhc*mb*(sic+slc) = {mult}*{dirs}*{layers}*{t}*2*"
        f"{gates}*{dhc}*{mb}*({sic}+{slc})" + (" + projection" if has_proj else "")
    )


# ---------------------------------------------------------------------------------------
# tensors per kind


def _list_dims(
    kind: str, groups: Groups, mds: list[MemDesc], aux: Mapping[str, str]
) -> list[Dims | None]:
    """Complete dims of each md of a dims-list descriptor (see ``list_tensor_dims``).

    The dst of a concat whose ``axis`` is not printed (or whose sources differ in rank)
    has no dims; its bytes need only its element count, the sources' total, so it is
    given that as one dim.
    """
    dims = [_complete(d) for d in list_tensor_dims(kind, groups, mds, aux)]
    if kind == "concat" and groups:
        srcs = [_complete(t) for t in groups[0]]
        if srcs and all(t is not None for t in srcs):
            total = (sum(math.prod(t) for t in srcs if t is not None),)
            dims = [
                total
                if d is None and (md.arg.removeprefix("diff_").startswith("dst") or md.arg == "out")
                else d
                for md, d in zip(mds, dims, strict=True)
            ]
    return dims


# ---------------------------------------------------------------------------------------
# the model


def _default_mds(kind: str, groups: Groups) -> list[MemDesc]:
    """Plain f32 descriptors for a line given without its md field (FLOP-only callers)."""
    if kind == "rnn":
        args = ["src_layer", "src_iter", "wei_layer", "wei_iter", "dst_layer", "dst_iter"]
    elif kind in _CONV_KINDS or kind in GEMM_KINDS or kind == "inner_product":
        args = ["src", "wei", "dst"]
    elif kind == "sdpa":
        args = ["query", "key", "val", "dst"]
    elif kind in ("binary", "concat", "sum"):
        n = len(groups[0]) if groups and kind != "sum" else 1
        args = ["src"] * n + ["dst"]
    else:
        args = ["src", "dst"]
    return [MemDesc(a, "f32", "", "blocked", "", "", "0", "", None) for a in args]


def _access(kind: str, prop_kind: str, arg: str) -> str:
    """``read`` or ``write``: whether a call reads or writes the tensor of an md slot."""
    base = arg.removeprefix("diff_")
    if arg == "out":
        return "write"
    if not prop_kind.startswith("backward"):
        return "write" if base.startswith(("dst", "ws")) else "read"
    if prop_kind == "backward_weights":
        return "write" if base.startswith(("wei", "bia")) else "read"
    if arg.startswith("diff_") and base.startswith(("src", "wei", "bia", "data", "scale", "shift")):
        return "write"
    if arg == "src" and kind in _BY_ROLE_KINDS:
        return "write"  # backward data names its diff_src `src` (format doc §3.5)
    return "read"


def _norm_extra(
    kind: str,
    prob: dict[str, int | None],
    elements_dims: Dims,
    aux: Mapping[str, str],
    prop_kind: str,
) -> tuple[list[TensorCost], bool]:
    """Statistics and scale/shift tensors of a normalisation; and whether stats are computed."""
    flags = aux.get("flags", "")
    if flags.isdigit():  # v1.x - v2.x numeric flags
        n = int(flags)
        letters = ("G" if n & 1 else "") + ("CH" if n & 2 else "") + ("R" if n & 4 else "")
        letters += ("C" if n & 8 else "") + ("H" if n & 16 else "")
    else:
        letters = flags.replace("S", "CH")
    glob = "G" in letters
    if kind == "batch_normalization":
        channels, stats = elements_dims[1] if len(elements_dims) > 1 else 1, None
        stats = channels
    elif kind == "layer_normalization":
        channels, stats = elements_dims[-1], math.prod(elements_dims[:-1])
    else:
        channels = elements_dims[1] if len(elements_dims) > 1 else 1
        stats = (prob.get("mb") or 1) * (prob.get("g") or 1)
    computes = not glob and not prop_kind.startswith("backward")
    stat_access = "write" if computes and prop_kind == "forward_training" else "read"
    out = []
    if not (computes and prop_kind == "forward_inference"):
        out += [
            _tensor("mean", "f32", (stats,), access=stat_access),
            _tensor("variance", "f32", (stats,), access=stat_access),
        ]
    for letter, name in (("C", "scale"), ("H", "shift")):
        if letter in letters:
            out.append(_tensor(name, "f32", (channels,)))
            if prop_kind == "backward":
                out.append(_tensor(f"diff_{name}", "f32", (channels,), access="write"))
    if "R" in letters and prop_kind == "forward_training" and kind == "batch_normalization":
        out.append(_tensor("ws", "u8", elements_dims, access="write"))
    return out, computes


def _post_op_tensors(attrs: Attrs, dst: TensorCost | None) -> tuple[list[TensorCost], int]:
    """Extra tensors read by post-ops, and their operation count (1 per dst element each)."""
    if dst is None:
        return [], 0
    extra: list[TensorCost] = []
    ops = 0
    for po in attrs.post_ops:
        if po.kind == "sum":
            extra.append(_tensor("dst(sum)", po.dtype or dst.dtype, dst.dims, access="read"))
        elif po.kind in ("binary", "prelu"):
            mask = next((a for a in po.args if a.isdigit()), "")
            keep = int(mask) if mask else 0
            dims = tuple(v if keep >> i & 1 else 1 for i, v in enumerate(dst.dims))
            extra.append(_tensor(f"{po.alg}(src1)", po.dtype or "f32", dims))
        if po.kind in ("sum", "eltwise", "binary", "prelu"):
            ops += math.prod(dst.dims)
    return extra, ops


#: The largest count a cost may hold: every reader divides FLOPs and bytes as floats.
MAX_COUNT = int(sys.float_info.max)


class _Refused(Exception):
    """A descriptor whose cost cannot be counted, with the reason the reader is told."""


@lru_cache(maxsize=1 << 14)
def _record_cost_or_reason(record: LineRecord) -> Cost | str | None:
    """The cost of one call of a record, the reason it has none when a count is impossible,
    or ``None`` (a kind or descriptor the model does not cover). Keyed by the record's
    printed fields: equal lines are costed once."""
    try:
        return _cost(record)
    except _Refused as refused:
        return str(refused)


def record_cost(record: LineRecord) -> Cost | None:
    """The cost of one call of the primitive of ``record``, or ``None`` (no cost: see
    :func:`record_no_cost_reason`)."""
    cost = _record_cost_or_reason(record)
    return cost if isinstance(cost, Cost) else None


def record_no_cost_reason(record: LineRecord) -> str | None:
    """Why the primitive of ``record``, whose sizes were printed, has no cost (``None``: it
    has one, or the model does not cover its kind)."""
    cost = _record_cost_or_reason(record)
    return cost if isinstance(cost, str) else None


def _as_record(
    kind: str, problem: str, mds: str, prop_kind: str, aux: str, attrs: str
) -> LineRecord:
    return LineRecord(
        LINE_EVENT, "", kind=kind, prop_kind=prop_kind, mds=mds, attrs=attrs, aux=aux,
        problem=problem,
    )  # fmt: skip


def cost_or_reason(
    kind: str, problem: str, mds: str = "", prop_kind: str = "", aux: str = "", attrs: str = ""
) -> Cost | str | None:
    """:func:`record_cost` or :func:`record_no_cost_reason` of descriptors given as text."""
    return _record_cost_or_reason(_as_record(kind, problem, mds, prop_kind, aux, attrs))


def primitive_cost(
    kind: str, problem: str, mds: str = "", prop_kind: str = "", aux: str = "", attrs: str = ""
) -> Cost | None:
    """The cost of one call of a primitive line given as text, or ``None`` (no cost: see
    :func:`no_cost_reason`)."""
    cost = cost_or_reason(kind, problem, mds, prop_kind, aux, attrs)
    return cost if isinstance(cost, Cost) else None


def no_cost_reason(
    kind: str, problem: str, mds: str = "", prop_kind: str = "", aux: str = "", attrs: str = ""
) -> str | None:
    """Why a primitive given as text, whose sizes were printed, has no cost (``None``: it
    has one, or the model does not cover its kind)."""
    cost = cost_or_reason(kind, problem, mds, prop_kind, aux, attrs)
    return cost if isinstance(cost, str) else None


def primitive_flops(
    kind: str, problem: str, prop_kind: str = "", aux: str = "", mds: str = ""
) -> float | None:
    """FLOPs of one call (drop-in for ``rules.flops.FLOP_FUNCTION``), ``None`` if unknown."""
    cost = primitive_cost(kind, problem, mds, prop_kind, aux, "")
    return None if cost is None else float(cost.flops)


def _cost(record: LineRecord) -> Cost | None:
    kind, problem, prop_kind = record.kind, record.problem, record.prop_kind
    k = (kind or "").strip().lower().removesuffix("_v2")
    if not k or k == "graph_partition" or k == "zero_pad":
        return None
    if not (problem or "").strip():
        return None
    prob = record.parsed_problem
    if prob.overflow:  # oneDNN's "#": its print buffer was too small for the sizes
        raise _Refused("sizes not printed (oneDNN's '#': its buffer overflowed)")
    d = dict(prob.dims)
    if _negative_sizes(d, prob.tensors):
        # no tensor has a negative size: a damaged or hand-made line
        raise _Refused("a size below zero (a damaged or hand-edited line)")
    aux = record.parsed_aux
    mdl = [md for md in record.parsed_mds if not md.is_absent and md.arg not in _NO_TENSOR]
    fpmath = record.parsed_attrs.fpmath if record.attrs else None
    groups = list_groups(problem) if prob.form == "dims" or prob.error else ()
    direction = _direction(prop_kind)
    notes: list[str] = []
    if mdl and all(not md.dtype for md in mdl):
        notes.append("no data types printed: f32 assumed")
    if not mdl:
        mdl = _default_mds(k, groups)
        notes.append("no memory descriptors: f32 tensors in plain layouts assumed")

    # tensors
    if groups:
        dims_list = _list_dims(k, groups, mdl, aux)
    else:
        dims_list = [named_tensor_dims(k, d, md, aux) for md in mdl]
    tensors: list[TensorCost] = []
    for md, dims in zip(mdl, dims_list, strict=True):
        full = _complete(dims)
        if full is None:
            continue
        tensors.append(
            _tensor(
                md.arg,
                md.dtype,
                full,
                md.tag if md.ndims == len(full) else "",
                _access(k, prop_kind, md.arg),
            )
        )
    if not tensors:
        return None
    data = tensors[0]

    # kinds whose only md is `data` read it and write it back (eltwise/bnorm/lrn/softmax).
    if k in _DATA_KINDS and not any(t.access == "write" for t in tensors):
        if direction == "forward":
            tensors.append(
                TensorCost("dst(=data)", data.dtype, data.dims, data.elements, data.bytes, "write")
            )
        else:
            diff = next((t for t in tensors if t.arg.startswith("diff")), data)
            tensors.append(
                TensorCost(
                    "diff_src(=diff)", diff.dtype, diff.dims, diff.elements, diff.bytes, "write"
                )
            )
    # sum (F0: one `in` md and aux num:<n>)
    n_src = sum(1 for t in tensors if t.arg.startswith("src") or t.arg == "in")
    if k == "sum" and aux.get("num", "").isdigit() and int(aux["num"]) > n_src:
        for _ in range(int(aux["num"]) - n_src):
            tensors.insert(0, TensorCost("in", data.dtype, data.dims, data.elements, data.bytes))
        n_src = int(aux["num"])

    elems = math.prod(data.dims)
    flops, formula = 0, "0 (data movement only)"
    if k in _CONV_KINDS:
        r = _conv_flops(k, d)
        if r is None:
            return None
        flops, formula = r
    elif k in GEMM_KINDS or k == "inner_product":
        shape = _gemm_shape(k, d, groups)
        if shape is None:
            return None
        b, m, n, kk = shape
        flops, formula = 2 * b * m * n * kk, f"2*B*M*N*K = 2*{b}*{m}*{n}*{kk}"
    elif k == "rnn":
        has_proj = any(md.arg.removeprefix("diff_") == "wei_proj" for md in mdl)
        r = _rnn_flops(d, aux, prop_kind, has_proj)
        if r is None:
            return None
        flops, formula = r
        notes.append("rnn: GEMM FLOPs only (benchdnn convention); gate math not counted")
    elif k == "sdpa":
        first = groups[0] if groups else ()
        q, key, v = (_complete(t) for t in (*first, None, None, None)[:3])
        if q is None or key is None or v is None:
            return None
        bh = math.prod(_complete(broadcast_dims(q[:-2], key[:-2])) or ())
        sq, dk, sk, dv = q[-2], q[-1], key[-1], v[-1]
        flops = 2 * bh * sq * sk * (dk + dv) + OPS_SOFTMAX["forward"] * bh * sq * sk
        formula = (
            f"2*BH*Sq*Sk*(D+Dv) + 5*BH*Sq*Sk = 2*{bh}*{sq}*{sk}*({dk}+{dv}) + 5*{bh}*{sq}*{sk}"
        )
    elif k == "eltwise":
        flops, formula = OPS_ELTWISE[direction] * elems, f"{OPS_ELTWISE[direction]}*{elems}"
    elif k in ("softmax", "logsoftmax"):
        flops, formula = OPS_SOFTMAX[direction] * elems, f"{OPS_SOFTMAX[direction]}*{elems}"
    elif k == "prelu":
        flops, formula = OPS_PRELU[direction] * elems, f"{OPS_PRELU[direction]}*{elems}"
    elif k in _NORM_KINDS:
        extra, computes = _norm_extra(k, d, data.dims, aux, prop_kind)
        tensors.extend(extra)
        per = (
            OPS_NORM_BACKWARD.get(prop_kind, 8)
            if direction == "backward"
            else OPS_NORM_APPLY + (OPS_NORM_STATS if computes else 0)
        )
        flops, formula = per * elems, f"{per}*{elems}"
    elif k == "lrn":
        ls = d.get("ls") or 5
        nsp = max(len(data.dims) - 2, 0)
        window = ls**nsp if "within" in aux.get("alg", "") else ls
        per = 2 * window + 3
        flops, formula = per * elems, f"(2*{window}+3)*{elems}"
    elif k == "pooling":
        mb, ic = d.get("mb"), d.get("ic")
        taps = 1
        for x in "dhw":
            if f"i{x}" in d:
                taps *= conv_taps(
                    d[f"i{x}"],
                    d[f"o{x}"],
                    d.get(f"k{x}", 1),
                    d.get(f"s{x}", 1) or 1,
                    d.get(f"p{x}", 0),
                    d.get(f"d{x}", 0) or 0,
                )
        flops, formula = mb * ic * taps, f"mb*ic*taps = {mb}*{ic}*{taps}"
    elif k == "binary":
        dst = next((t for t in tensors if t.access == "write"), data)
        flops, formula = math.prod(dst.dims), f"1*{math.prod(dst.dims)}"
    elif k == "sum":
        per = 2 * n_src - 1
        flops, formula = per * elems, f"(2*{n_src}-1)*{elems}"
    elif k == "reduction":
        flops, formula = elems, f"1*{elems}"
    elif k == "resampling":
        dst = next((t for t in tensors if t.arg.endswith("dst")), data)
        if "linear" in aux.get("alg", ""):
            per = 2 * 2 ** max(len(dst.dims) - 2, 0)
            flops, formula = per * math.prod(dst.dims), f"{per}*{math.prod(dst.dims)}"
    elif k not in ("reorder", "concat", "shuffle"):
        return None

    dst_t = next((t for t in tensors if t.access == "write"), None)
    extra, po_ops = _post_op_tensors(record.parsed_attrs, dst_t)
    if extra or po_ops:
        tensors.extend(extra)
        flops += po_ops
        formula += f" + post-ops {po_ops}"
    moved = sum(t.bytes for t in tensors)
    if flops > MAX_COUNT or moved > MAX_COUNT:
        big = (d.get("mb") or 0) > MAX_COUNT
        raise _Refused("minibatch too large to count" if big else "sizes too large to count")
    return Cost(
        kind=k,
        flops=int(flops),
        bytes=int(moved),
        dtype=compute_dtype(mdl, fpmath),
        formula=formula,
        tensors=tuple(tensors),
        notes=tuple(notes),
    )
