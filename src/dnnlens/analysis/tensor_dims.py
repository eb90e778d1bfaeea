"""Logical dims of a primitive's tensors, from its problem descriptor.

A problem descriptor of named values (``mb4_ic16oc32_ih32oh16kh3...``,
``l1t20mb4sic64slc32dhc64dic64``, ``m32n48k64``) tells the dims of every tensor of the
primitive only together with the role of each memory descriptor (``src``, ``wei``,
``diff_dst``, ``src_layer`` ...). :func:`named_tensor_dims` is that mapping. Descriptors that
are lists of dims (``2x16x7x7``, ``A:B``, ``A:B C``) are read by :func:`list_groups` and
mapped to the memory descriptors by :func:`list_tensor_dims`. Both are the ones used by the
cost model (:mod:`dnnlens.analysis.costmodel`, which needs complete dims) and by the op
graph (:mod:`dnnlens.analysis.graph`, which matches tensors and lets an unknown dim match
any).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dnnlens.parsers.memdesc import MemDesc
from dnnlens.parsers.problem import spatial_dims

__all__ = [
    "DATA_KINDS",
    "GEMM_KINDS",
    "RNN_GATES",
    "Dims",
    "Groups",
    "broadcast_dims",
    "conv_weights_grouped",
    "list_dst_dims",
    "list_groups",
    "list_tensor_dims",
    "named_tensor_dims",
]

#: Dims of a tensor; ``None`` where the descriptor does not tell one.
Dims = tuple[int | None, ...]

#: Gates of each RNN cell kind (the ``alg`` aux value); 4 (LSTM) when not printed.
RNN_GATES: dict[str, int] = {
    "vanilla_rnn": 1, "vanilla_lstm": 4, "vanilla_gru": 3, "lbr_gru": 3,
    "vanilla_augru": 3, "lbr_augru": 3,
}  # fmt: skip
#: Kinds whose problem is ``[b<B>]m<M>n<N>k<K>`` (v1.2 - v2.1) or a list of dims.
GEMM_KINDS = frozenset({"matmul", "gemm", "gemm_api", "brgemm"})
#: Kinds with one data tensor (``data``/``src``/``dst``) shaped ``(mb, ic, spatial...)``.
DATA_KINDS = frozenset(
    {"eltwise", "batch_normalization", "layer_normalization", "group_normalization", "lrn",
     "softmax", "logsoftmax", "shuffle", "zero_pad"}
)  # fmt: skip
_CONV_KINDS = frozenset({"convolution", "deconvolution"})
#: Roles whose dims a dims-list descriptor does not print (statistics, scale/shift ...).
_NO_LIST_DIMS = ("scale", "shift", "mean", "var", "stats", "scratchpad")

#: Dims lists of a dims-list descriptor: one tuple per space-separated word, one entry per
#: ``:``-separated piece of it (``None`` for a piece that is not dims).
Groups = tuple[tuple[Dims | None, ...], ...]


def _div(a: int | None, b: int | None) -> int | None:
    if a is None or b is None or b == 0:
        return None
    return a // b


def conv_weights_grouped(dims: Mapping[str, int | None], md: MemDesc) -> bool:
    """Whether the weights of a convolution/deconvolution carry a leading group dim.

    oneDNN prints ``g<G>`` in the problem exactly when the weights have the group dim
    (``with_groups()``: weights of rank ``spatial + 3``, ``goihw``), in every version
    (``mb1_g32ic32oc32_...`` up to v2.2, ``g32mb1_ic32oc32_...`` since), so ``g1`` is a
    grouped convolution with one group (MKL-DNN 0.x benchdnn prints ``g1`` with
    ``fwei:gOhwi8o``) and a depthwise convolution is ``g == ic == oc``. The rule:

    * the weights' tag has one more dim than an ungrouped weight (``spatial + 3``):
      grouped, whatever ``g`` says;
    * ``g > 1``: grouped, even against a tag of rank ``spatial + 2``, as the weights then
      hold ``oc * ic / g`` elements per tap (callers drop or ignore dims whose rank differs
      from the tag's; this cannot come from oneDNN, which prints both from one descriptor);
    * the tag tells no rank (``any``, no memory descriptors): grouped when ``g`` is printed
      at all (``g1`` included), as oneDNN prints it only for grouped weights.

    The cost model used to look at ``g > 1`` alone (so ``g1`` weights of rank 5 were given
    4 dims and their tag's blocking was ignored) and the op graph at the tag rank alone.
    """
    k = spatial_dims(dims, "k")
    g = dims.get("g")
    rank = md.ndims or None
    if rank == len(k) + 3:
        return True
    if g is None:
        return False
    return g > 1 or rank is None


def named_tensor_dims(
    kind: str, dims: Mapping[str, int | None], md: MemDesc, aux: Mapping[str, str]
) -> Dims | None:
    """Logical dims of the tensor of ``md`` in a primitive with a named problem descriptor.

    ``kind`` is the normalised primitive kind (lower case, no ``_v2``), ``dims`` the named
    values of :func:`~dnnlens.parsers.problem.parse_problem` (``Problem.dims``), ``aux`` the
    parsed aux field (rnn ``alg`` and ``direction``). ``diff_`` roles are shaped as the
    tensor they are the gradient of. A dim the descriptor does not print is ``None``;
    ``None`` is returned for a role the descriptor does not tell (scales, a bias of a
    matmul ...) and for a data tensor of a problem without ``mb``.

    * convolution/deconvolution: ``src (mb, ic, I...)``, ``dst (mb, oc, O...)``,
      ``bia (oc)``, ``wei (oc, ic, K...)`` or, grouped (see :func:`conv_weights_grouped`),
      ``(g, oc/g, ic/g, K...)``;
    * pooling/resampling: ``src (mb, ic, I...)``, ``dst``/``ws (mb, ic, O...)``;
    * inner product: ``src (mb, ic, I...)``, ``wei (oc, ic, I...)``, ``bia (oc)``,
      ``dst (mb, oc)``;
    * rnn: the ``ldigo``-style dims of each rnn tensor (``src_layer (t, mb, slc)`` ...);
    * matmul/gemm ``[b<B>]m<M>n<N>k<K>``: ``src ([B,] M, K)``, ``wei ([B,] K, N)``,
      ``dst ([B,] M, N)``;
    * any other kind: ``src``, ``dst``, ``data``, ``diff``, ``ws`` (and the nameless md of
      a :data:`DATA_KINDS` line) are ``(mb, ic, I...)``.
    """
    base = md.arg.removeprefix("diff_")
    mb, ic, oc = dims.get("mb"), dims.get("ic"), dims.get("oc")
    if kind in _CONV_KINDS:
        if base == "src":
            return (mb, ic, *spatial_dims(dims, "i"))
        if base == "dst":
            return (mb, oc, *spatial_dims(dims, "o"))
        if base.startswith("wei"):
            k = spatial_dims(dims, "k")
            if conv_weights_grouped(dims, md):
                g = dims.get("g") or 1
                return (g, _div(oc, g), _div(ic, g), *k)
            return (oc, ic, *k)
        if base.startswith("bia"):
            return (oc,)
        return None
    if kind in ("pooling", "resampling"):
        if base == "src":
            return (mb, ic, *spatial_dims(dims, "i"))
        if base in ("dst", "ws"):
            return (mb, ic, *spatial_dims(dims, "o"))
        return None
    if kind == "inner_product":
        sp = spatial_dims(dims, "i")
        if base == "src":
            return (mb, ic, *sp)
        if base.startswith("wei"):
            return (oc, ic, *sp)
        if base.startswith("bia"):
            return (oc,)
        return (mb, oc) if base == "dst" else None
    if kind == "rnn":
        return _rnn_dims(base, dims, aux)
    if kind in GEMM_KINDS:
        m, n, kk = dims.get("M"), dims.get("N"), dims.get("K")
        batch = (dims["b"],) if dims.get("b") is not None else ()
        return {"src": (*batch, m, kk), "wei": (*batch, kk, n), "dst": (*batch, m, n)}.get(base)
    data = base in ("src", "dst", "data", "diff", "ws") or (base == "" and kind in DATA_KINDS)
    if data and mb is not None:
        return (mb, ic, *spatial_dims(dims, "i"))
    return None


def _rnn_dims(base: str, d: Mapping[str, int | None], aux: Mapping[str, str]) -> Dims | None:
    """Dims of an rnn tensor (``l1t20mb4sic64slc32dhc64dic64``; ``dhc`` defaults to ``dic``)."""
    direction = aux.get("direction", "")
    dirs = 2 if direction.startswith("bidirectional") else 1
    gates = RNN_GATES.get(aux.get("alg", ""), 4)
    lay, t, mb = d.get("l", 1), d.get("t"), d.get("mb")
    sic, slc = d.get("sic"), d.get("slc")
    dhc = d.get("dhc") if d.get("dhc") is not None else d.get("dic")
    dic = d.get("dic") if d.get("dic") is not None else dhc
    wide = None if dic is None else dic * (2 if direction.endswith("concat") else 1)
    table: dict[str, Dims] = {
        "src_layer": (t, mb, slc), "src_iter": (lay, dirs, mb, sic),
        "src_iter_c": (lay, dirs, mb, dhc), "wei_layer": (lay, dirs, slc, gates, dhc),
        "wei_iter": (lay, dirs, sic, gates, dhc), "wei_peephole": (lay, dirs, 3, dhc),
        "wei_proj": (lay, dirs, dhc, dic),
        "bias": (lay, dirs, gates + (1 if aux.get("alg", "").startswith("lbr") else 0), dhc),
        "dst_layer": (t, mb, wide), "dst_iter": (lay, dirs, mb, dic),
        "dst_iter_c": (lay, dirs, mb, dhc),
    }  # fmt: skip
    return table.get(base)


# ---------------------------------------------------------------------------------------
# dims-list descriptors (``2x16x7x7``, ``A:B``, ``A:B C``)


def list_groups(text: str) -> Groups:
    """The dims lists of a dims-list problem descriptor, one group per space-separated word.

    ``2x16x14x14:1x16x1x1 2x16x14x14`` (a v2.0 binary) gives
    ``(((2, 16, 14, 14), (1, 16, 1, 1)), ((2, 16, 14, 14),))``. A runtime dim (``*``) is
    ``None``; a piece that is not dims at all (a truncated or named field) is ``None`` as a
    whole. The problem grammar of :func:`~dnnlens.parsers.problem.parse_problem` has no
    spaces, so its ``tensors`` run the word after a space into the last piece: the
    space-separated form is read here, from the text.
    """
    groups: list[tuple[Dims | None, ...]] = []
    for word in (text or "").split():
        part: list[Dims | None] = []
        for piece in word.split(":"):
            try:
                part.append(tuple(None if x == "*" else int(x) for x in piece.split("x")))
            except ValueError:
                part.append(None)
        groups.append(tuple(part))
    return tuple(groups)


def broadcast_dims(*shapes: Dims) -> Dims:
    """The broadcast of ``shapes``: aligned on the right, a missing leading dim is 1.

    oneDNN broadcasts dims of size 1 (binary sources, matmul and sdpa batch dims), so each
    dim of the result is the size other than 1 in its column, else 1. An unknown dim
    (``None``, a runtime ``*``) next to a known size other than 1 is that size (the runtime
    value can only be 1 or that size); among 1s it stays unknown. Sizes that disagree
    (oneDNN rejects them) give the larger.

    The cost model's copy had these rules for complete dims; the op graph's refused shapes
    of different ranks (oneDNN gives binary sources one rank, so only matmul batches could
    differ, which it handled apart) and made a runtime dim next to a size other than 1
    unknown, which loses a size oneDNN fixes.
    """
    n = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (n - len(s)) + tuple(s) for s in shapes]
    out: list[int | None] = []
    for column in zip(*padded, strict=True):
        sizes = [v for v in column if v is not None and v != 1]
        if sizes:
            out.append(max(sizes))
        else:
            out.append(None if None in column else 1)
    return tuple(out)


def _all_printed(shapes: Sequence[Dims | None]) -> list[Dims] | None:
    """``shapes`` when every one is printed, else ``None``."""
    if not shapes or any(s is None for s in shapes):
        return None
    return [s for s in shapes if s is not None]


def list_dst_dims(kind: str, groups: Groups, aux: Mapping[str, str]) -> Dims | None:
    """Dims of the ``dst`` of a dims-list descriptor of a binary, concat or matmul/gemm.

    * a second space-separated word is the dst, whatever the kind: binary ``src0:src1 dst``
      (``legacy/onednn-2.0.0.log``; ``src0:src1`` from ``onednn-2.2.0.log`` on), concat
      ``d0:d1:... dst`` and resampling ``src dst`` of the same era;
    * binary ``src0:src1``: the broadcast of the sources. oneDNN never prints a binary dst
      after a ``:``; a third piece is the condition of the ``select`` algorithm (a third
      source), so the dst is the broadcast of all three;
    * matmul/gemm: ``src:wei:dst`` (v1.8, v2.2 - v3.1) prints the dst; ``src:wei`` (v3.2+,
      gemm ``MxK:KxN``) gives ``(broadcast batch, M, N)``;
    * concat ``d0:d1:...`` (no dst printed): the sources summed along ``axis`` (aux
      ``axis:<n>``) when they all have one rank and the axis is in it; a single source is
      the dst as it is.

    ``None`` when the descriptor does not tell (a source not printed, no axis ...).
    """
    if len(groups) >= 2 and groups[1] and groups[1][0] is not None:
        return groups[1][0]
    srcs = _all_printed(groups[0] if groups else ())
    if srcs is None:
        return None
    if kind == "binary":
        return broadcast_dims(*srcs)
    if kind in GEMM_KINDS:
        if len(srcs) > 2:
            return srcs[2]
        if len(srcs) < 2 or len(srcs[0]) < 2 or len(srcs[1]) < 2:
            return None
        a, b = srcs[0], srcs[1]
        return (*broadcast_dims(a[:-2], b[:-2]), a[-2], b[-1])
    if kind == "concat":
        if len(srcs) == 1:
            return srcs[0]
        axis, first = aux.get("axis", ""), srcs[0]
        if not axis.lstrip("-").isdigit() or any(len(t) != len(first) for t in srcs):
            return None
        if not -len(first) <= int(axis) < len(first):
            return None
        ax = int(axis) % len(first)
        parts = [t[ax] for t in srcs]
        total = None if any(p is None for p in parts) else sum(p for p in parts if p)
        return (*first[:ax], total, *first[ax + 1 :])
    return None


def _bias_dims(dst: Dims | None, mask: str | None) -> Dims | None:
    """Matmul bias: the dst dims whose bit is set in ``_mask<m>`` (else the last dim)."""
    if dst is None:
        return None
    if not mask or not mask.isdigit():
        return (dst[-1],)
    m = int(mask)
    return tuple(v if m >> i & 1 else 1 for i, v in enumerate(dst))


def _sdpa_dims(base: str, flat: Sequence[Dims | None], aux: Mapping[str, str]) -> Dims | None:
    """Tensors of an sdpa ``q:k:v`` descriptor (``k`` printed transposed, ``D x Sk``)."""
    qkv = _all_printed(flat[:3]) if len(flat) >= 3 else None
    if qkv is None:
        return None
    q, k, v = qkv
    if base in ("query", "key", "val"):
        return {"query": q, "key": k, "val": v}[base]
    if base == "dst":
        return (*broadcast_dims(q[:-2], v[:-2]), q[-2], v[-1])
    if base == "msk":
        mask = aux.get("msk", "")
        if "causal" in mask:
            return None
        return (k[-1],) if "1d" in mask else (q[-2], k[-1])
    return None


def list_tensor_dims(
    kind: str, groups: Groups, mds: Sequence[MemDesc], aux: Mapping[str, str]
) -> list[Dims | None]:
    """Logical dims of each of ``mds`` in a primitive with a dims-list problem descriptor.

    ``kind`` is the normalised primitive kind, ``groups`` the :func:`list_groups` of the
    descriptor, ``aux`` the parsed aux field. ``diff_`` roles are shaped as the tensor they
    are the gradient of; a role the descriptor does not tell is ``None``.

    * binary, concat: the ``src`` mds (``in`` in MKL-DNN 0.x) take the pieces of the first
      word in order, the ``dst`` md (``out``) :func:`list_dst_dims`;
    * matmul/gemm: ``src``/``src_a`` the first piece, ``wei``/``src_b`` the second, ``dst``
      :func:`list_dst_dims`, ``bia`` the dst dims its ``_mask`` keeps;
    * sdpa ``q:k:v``: ``query``, ``key``, ``val``, ``dst`` ``(batch, Sq, Dv)``, a 1D/2D
      mask ``(Sk)``/``(Sq, Sk)``;
    * prelu ``data:wei`` and reduction ``src:dst``: the second piece for ``wei``/``dst``;
    * any other kind (eltwise, softmax, shuffle, layer norm, reorder, sum ...): the
      descriptor is the dims of the data tensor, so every role but weights, bias and the
      statistics/scale/shift has them (sum prints its dst, which every source matches).
      A second word (resampling ``src dst``) is the dst.

    The cost model and the op graph each had a copy of this. Where they differed, the
    behaviour kept is the one the verbose format supports:

    * space-separated forms: the graph read ``parse_problem(...).tensors``, whose grammar
      has no spaces and runs the word after one into the last piece, so the v2.0 binary
      ``2x16x14x14:1x16x1x1 2x16x14x14`` had no ``src1`` nor ``dst`` dims there; the cost
      model's reading (:func:`list_groups`, from the text) is kept;
    * binary ``a:b:c``: the graph took ``c`` for the dst; it is a source (see
      :func:`list_dst_dims`): the cost model's broadcast of all sources is kept;
    * ``gemm`` (``src_a``/``src_b``, the corpus's ``2x2:2x3``), ``brgemm`` and sdpa: the
      graph had no case for them and gave every tensor the first piece, so ``src_b``,
      ``key``, ``val`` and ``dst`` had wrong dims; matmul ``bia``: the graph had none.
      The cost model's cases are kept;
    * concat: the graph gave no dst for a negative axis, the cost model wrapped any axis
      (one past the rank too) and, without an axis, gave the dst the sources' element
      count as one dim. Kept: an axis within the rank, negative ones counted from the
      end; no dims without one (the cost model alone still counts the elements for its
      bytes, which do not depend on the shape);
    * a role not named ``src``/``dst``: the cost model gave a binary/concat md of any
      other name the dst dims, the graph none; MKL-DNN 0.x ``in``/``out`` are now a
      source and the dst, anything else has no dims;
    * runtime dims (``*``): the cost model dropped the whole tensor, the graph kept the
      known dims; they are kept (the cost model then drops what is incomplete itself).
    """
    flat = [t for grp in groups for t in grp]
    srcs = groups[0] if groups else ()
    t0 = flat[0] if flat else None
    second = flat[1] if len(flat) > 1 else None
    out: list[Dims | None] = []
    src_i = 0
    for md in mds:
        base = md.arg.removeprefix("diff_")
        dims: Dims | None = None
        if base.startswith(_NO_LIST_DIMS):
            pass
        elif kind in ("binary", "concat"):
            if base.startswith("src") or base == "in":
                dims = srcs[src_i] if src_i < len(srcs) else None
                src_i += 1
            elif base.startswith("dst") or base == "out":
                dims = list_dst_dims(kind, groups, aux)
        elif kind in GEMM_KINDS:
            if base in ("src", "src_a"):
                dims = t0
            elif base == "src_b" or base.startswith("wei"):
                dims = second
            elif base == "dst":
                dims = list_dst_dims(kind, groups, aux)
            elif base.startswith("bia"):
                dims = _bias_dims(list_dst_dims(kind, groups, aux), md.mask)
        elif kind == "sdpa":
            dims = _sdpa_dims(base, flat, aux)
        elif kind in ("prelu", "reduction"):
            takes_second = base.startswith("wei") if kind == "prelu" else base == "dst"
            dims = second if takes_second and len(flat) > 1 else t0
        elif base.startswith("dst") and len(groups) >= 2 and groups[1]:
            dims = groups[1][0]
        elif not base.startswith(("bia", "wei")):
            dims = t0
        out.append(dims)
    return out
