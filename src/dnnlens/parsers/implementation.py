"""Implementation names: split ``jit:avx2`` into a family (``jit``) and an ISA (``avx2``)."""

from __future__ import annotations

import re
from functools import lru_cache

# ISA-like suffixes of implementation names (x64, aarch64 and the portable ``uni``/``any``).
_ISA = re.compile(
    r"uni|any|sse41|avx|avx2|avx2_vnni(_2)?|avx512_(common|mic|core)[a-z0-9_]*|avx10_[0-9_]+"
    r"[a-z0-9_]*|amx[a-z0-9_]*|sve_?\d*|asimd|aarch64|ref|gen\d+|xe[a-z0-9_]*"
)


@lru_cache(maxsize=4096)
def split_impl(impl: str) -> tuple[str, str]:
    """``(family, isa)`` of an implementation name.

    The family is the name without its trailing ISA (``brg_conv_fwd:avx2_vnni_2`` ->
    ``brg_conv_fwd``, ``x64:gemm:jit`` -> ``x64:gemm:jit``); the ISA is the part after the
    last ``:`` when it names an ISA, else empty.
    """
    head, sep, last = impl.rpartition(":")
    if sep and _ISA.fullmatch(last):
        return head, last
    return impl, ""
