"""Logical dims of a primitive's tensors, from a named problem descriptor.

A problem descriptor of named values (``mb4_ic16oc32_ih32oh16kh3...``,
``l1t20mb4sic64slc32dhc64dic64``, ``m32n48k64``) tells the dims of every tensor of the
primitive only together with the role of each memory descriptor (``src``, ``wei``,
``diff_dst``, ``src_layer`` ...). :func:`named_tensor_dims` is that mapping, the one used by
the cost model (:mod:`dnnlens.analysis.costmodel`, which needs complete dims) and by the op
graph (:mod:`dnnlens.analysis.graph`, which matches tensors and lets an unknown dim match
any). Descriptors that are lists of dims (``2x16x7x7``, ``A:B``) are not named: each of
those modules reads them with its own list reader.
"""

from __future__ import annotations

from collections.abc import Mapping

from dnnlens.parsers.fields import MemDesc, spatial_dims

__all__ = [
    "DATA_KINDS",
    "GEMM_KINDS",
    "RNN_GATES",
    "Dims",
    "conv_weights_grouped",
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
    values of :func:`~dnnlens.parsers.fields.parse_problem` (``Problem.dims``), ``aux`` the
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
