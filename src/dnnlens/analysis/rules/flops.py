"""FLOPs of one primitive execution and the peak a CPU could reach: the minimal cost model.

``primitive_flops`` is the one function a fuller cost model (issue 9) replaces: the
``low-efficiency`` rule and the ``flops`` column of rule files call it through
:data:`FLOP_FUNCTION`. Counts are multiply-adds x 2 from the problem descriptor:

* convolution: 2 x mb x oc x OD x OH x OW x (ic / g) x KD x KH x KW (deconvolution: input
  spatial dims); the same total for backward data and backward weights;
* inner product: 2 x mb x oc x ic x ID x IH x IW;
* matmul / gemm: 2 x B x M x N x K;
* rnn: 2 x l x dirs x t x mb x gates x dhc x (slc + sic), gates from ``alg`` (LSTM 4,
  GRU 3, vanilla 1).

Anything else gives ``None``.
"""

from __future__ import annotations

from collections.abc import Callable

from dnnlens.parsers.fields import parse_aux, parse_problem

#: f32 FLOPs per cycle per core by ISA class (2 FMA ports x vector width x 2).
F32_FLOPS_PER_CYCLE = {"sse": 8.0, "avx": 16.0, "avx2": 32.0, "avx512": 64.0, "amx": 64.0}
#: Multipliers of the f32 rate for low-precision compute, by ISA class.
LOW_PRECISION_GAIN = {
    ("bf16", "avx512"): 2.0, ("bf16", "amx"): 16.0, ("f16", "amx"): 16.0,
    ("s8", "avx2"): 2.0, ("s8", "avx512"): 4.0, ("s8", "amx"): 32.0,
    ("u8", "avx2"): 2.0, ("u8", "avx512"): 4.0, ("u8", "amx"): 32.0,
}
_GATES = {"vanilla_lstm": 4, "vanilla_gru": 3, "lbr_gru": 3, "vanilla_rnn": 1, "vanilla_augru": 3}


def isa_class(isa: str) -> str:
    """``sse``, ``avx``, ``avx2``, ``avx512``, ``amx`` (x64 ISA names), else ``""``."""
    if not isa:
        return ""
    if "amx" in isa:
        return "amx"
    if isa.startswith(("avx512", "avx10")):
        return "avx512"
    if isa.startswith("avx2"):
        return "avx2"
    if isa == "avx":
        return "avx"
    if isa.startswith("sse"):
        return "sse"
    return ""


ISA_CLASS_RANK = {"sse": 1, "avx": 2, "avx2": 3, "avx512": 4, "amx": 5}


def primitive_flops(kind: str, problem: str, prop_kind: str = "", aux: str = "") -> float | None:
    """FLOPs of one execution, or ``None`` when the kind or descriptor is not understood."""
    p = parse_problem(kind, problem)
    d = p.dims
    try:
        if kind in ("convolution", "deconvolution") and "oc" in d and "ic" in d:
            g = d.get("g") or 1
            out_sp = ("id", "ih", "iw") if kind == "deconvolution" else ("od", "oh", "ow")
            spatial = _prod(d.get(k) for k in out_sp)
            kernel = _prod(d.get(k) for k in ("kd", "kh", "kw"))
            return 2.0 * d["mb"] * d["oc"] * spatial * (d["ic"] / g) * kernel
        if kind == "inner_product" and "oc" in d:
            spatial = _prod(d.get(k) for k in ("id", "ih", "iw"))
            return 2.0 * d["mb"] * d["oc"] * d["ic"] * spatial
        if "M" in d and "N" in d and "K" in d:
            return 2.0 * (d.get("B") or 1) * d["M"] * d["N"] * d["K"]
        if kind == "rnn" and "dhc" in d:
            a = parse_aux(aux)
            gates = _GATES.get(a.get("alg", ""), 4)
            dirs = 2 if "bidirectional" in a.get("direction", "") else 1
            return (2.0 * d.get("l", 1) * dirs * d["t"] * d["mb"] * gates * d["dhc"]
                    * (d.get("slc", 0) + d.get("sic", 0)))
    except (TypeError, KeyError):
        return None
    return None


def _prod(values: object) -> float:
    out = 1.0
    for v in values:  # type: ignore[attr-defined]
        if v is not None:
            out *= v
    return out


def peak_gflops(isa: str, dtype: str, threads: int, clock_ghz: float) -> float | None:
    """Peak GFLOP/s for ``threads`` cores at ``clock_ghz`` on ISA ``isa`` for ``dtype``."""
    cls = isa_class(isa)
    if not cls or threads <= 0:
        return None
    rate = F32_FLOPS_PER_CYCLE[cls] * LOW_PRECISION_GAIN.get((dtype, cls), 1.0)
    return rate * clock_ghz * threads


#: The FLOP function in use (a fuller cost model replaces this one name).
FLOP_FUNCTION: Callable[[str, str, str, str], float | None] = primitive_flops
