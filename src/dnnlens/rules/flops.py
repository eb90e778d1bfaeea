"""FLOPs of one primitive execution for rule files, and ISA classes for the ISA rules.

The FLOP count is the cost model's (:func:`dnnlens.analysis.costmodel.primitive_flops`,
formulas in docs/cost-model.md); the ``flops`` column of rule files calls it through
:data:`FLOP_FUNCTION`. Peaks and efficiencies are not computed here: the analysis owns
them (``Analysis.machine``, ``Analysis.primitives``; :mod:`dnnlens.analysis.machine`), and
the ``low-efficiency`` rule reads them there.
"""

from __future__ import annotations

from collections.abc import Callable

from dnnlens.analysis.costmodel import primitive_flops


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


#: The FLOP function in use (a fuller cost model replaces this one name).
FLOP_FUNCTION: Callable[[str, str, str, str], float | None] = primitive_flops
