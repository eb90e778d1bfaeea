"""FLOPs of one primitive execution and the peak a CPU could reach, as the rules use them.

The FLOP count is the cost model's (:func:`dnnlens.analysis.costmodel.primitive_flops`,
formulas in docs/cost-model.md); the ``low-efficiency`` rule and the ``flops`` column of
rule files call it through :data:`FLOP_FUNCTION`.
"""

from __future__ import annotations

from collections.abc import Callable

from dnnlens.analysis.costmodel import primitive_flops

#: f32 FLOPs per cycle per core by ISA class (2 FMA ports x vector width x 2).
F32_FLOPS_PER_CYCLE = {"sse": 8.0, "avx": 16.0, "avx2": 32.0, "avx512": 64.0, "amx": 64.0}
#: Multipliers of the f32 rate for low-precision compute, by ISA class.
LOW_PRECISION_GAIN = {
    ("bf16", "avx512"): 2.0,
    ("bf16", "amx"): 16.0,
    ("f16", "amx"): 16.0,
    ("s8", "avx2"): 2.0,
    ("s8", "avx512"): 4.0,
    ("s8", "amx"): 32.0,
    ("u8", "avx2"): 2.0,
    ("u8", "avx512"): 4.0,
    ("u8", "amx"): 32.0,
}


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


def peak_gflops(isa: str, dtype: str, threads: int, clock_ghz: float) -> float | None:
    """Peak GFLOP/s for ``threads`` cores at ``clock_ghz`` on ISA ``isa`` for ``dtype``."""
    cls = isa_class(isa)
    if not cls or threads <= 0:
        return None
    rate = F32_FLOPS_PER_CYCLE[cls] * LOW_PRECISION_GAIN.get((dtype, cls), 1.0)
    return rate * clock_ghz * threads


#: The FLOP function in use (a fuller cost model replaces this one name).
FLOP_FUNCTION: Callable[[str, str, str, str], float | None] = primitive_flops
