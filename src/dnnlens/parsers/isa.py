"""Implementation names and ISAs (format doc §2 header lines, §4.6 implementation names).

No grammar: an implementation name is split at its last ``:`` and the ISA ranked; the
header's ISA text is mapped to the implementation-name spelling.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dnnlens.parsers.common import CACHE_SIZE

__all__ = [
    "AARCH64_ISA_RANK",
    "ISA_RANK",
    "is_reference",
    "isa_from_header",
    "isa_rank",
    "split_impl",
]


#: x64 ISA names (as printed in implementation names) in increasing capability order.
#: Aliases share a rank: since v3.7 oneDNN names avx512_core_fp16 / avx512_core_amx /
#: avx512_core_amx_fp16 avx10_1_512 / avx10_1_512_amx / avx10_1_512_amx_fp16
#: (src/cpu/x64/cpu_isa_traits.hpp), and the v2.x AMX spellings (avx512_core_amx_int8,
#: avx512_core_bf16_amx_bf16 ...) rank with avx512_core_amx. The order is linear, so it
#: is only an approximation where ISAs are not subsets of one another (avx2_vnni_2 has no
#: AVX-512; avx10_2_512 has no AMX).
ISA_RANK: dict[str, int] = {
    "sse41": 10,
    "sse42": 11,
    "avx": 20,
    "avx2": 30,
    "avx2_vnni": 40,
    "avx2_vnni_2": 50,
    "avx512_common": 55,
    "avx512_mic": 56,
    "avx512_mic_4ops": 57,
    "avx512_core": 60,
    "avx512_core_vnni": 70,
    "avx512_core_bf16": 80,
    "avx512_core_bf16_ymm": 80,
    "avx512_core_fp16": 90,
    "avx10_1_512": 90,
    "avx512_core_amx": 100,
    "avx10_1_512_amx": 100,
    "avx512_core_amx_int8": 100,
    "avx512_core_amx_bf16": 100,
    "avx512_core_bf16_amx_int8": 100,
    "avx512_core_bf16_amx_bf16": 100,
    "avx512_core_amx_fp16": 110,
    "avx10_1_512_amx_fp16": 110,
    "avx10_2_512": 120,
    "avx10_2": 120,
    "avx10_2_512_amx_2": 130,
    "avx10_2_amx_2": 130,
}

#: AArch64 ISA names in increasing capability order.
AARCH64_ISA_RANK: dict[str, int] = {
    "asimd": 10,
    "sve_128": 20,
    "sve_256": 30,
    "sve_384": 35,
    "sve_512": 40,
}

_ISA_NAME = re.compile(
    r"uni|any|undef|sse4[12]|avx|avx2(?:_vnni(?:_2)?)?|avx512_[a-z0-9_]+|avx10_[a-z0-9_]+"
    r"|amx_?[a-z0-9_]*|asimd|sve|sve_[0-9]+|sve2(?:_[0-9]+)?|rvv|gen[0-9]+[a-z0-9_]*"
    r"|xe[a-z0-9_]*"
)


def isa_rank(isa: str) -> int | None:
    """Rank of an ISA name in :data:`ISA_RANK` or :data:`AARCH64_ISA_RANK`, else ``None``."""
    return ISA_RANK.get(isa, AARCH64_ISA_RANK.get(isa))


@lru_cache(maxsize=CACHE_SIZE)
def _split_impl_cached(impl: str) -> tuple[str, str]:
    impl = impl.strip()
    head, sep, last = impl.rpartition(":")
    if sep and (not last or _ISA_NAME.fullmatch(last)):
        return head, last
    return impl, ""


def is_reference(impl: str) -> bool:
    """Whether an implementation name is a reference (unoptimised) kernel.

    ``ref``, ``ref:any``, ``gemm:ref``, ``ocl:ref:any``, ``ref_int8``, ``simple:any``,
    ``simple_concat`` ...: any ``:``-part that is ``ref`` or starts with ``ref_``, or a
    name that starts with ``simple``.
    """
    parts = str(impl).split(":")
    return parts[0].startswith("simple") or any(p == "ref" or p.startswith("ref_") for p in parts)


def split_impl(impl: str) -> tuple[str, str]:
    """``(family, isa)`` of an implementation name (format doc §4.6).

    The ISA is the part after the last ``:`` when it looks like an ISA or an ISA slot (x64
    ``sse41`` ... ``avx10_2_512_amx_2``, AArch64 ``asimd``/``sve_256``, GPU ``gen9``/``xe_hp``,
    or the generic ``uni``, ``any``, ``undef``), else ``""``; the family is the name without
    that ISA (the whole name when there is none)::

        jit:avx2 -> (jit, avx2)              brg_conv_fwd:avx2_vnni_2 -> (brg_conv_fwd, ...)
        x64:gemm:jit -> (x64:gemm:jit, "")   gemm:acl -> (gemm:acl, "")
        ocl:ref:any -> (ocl:ref, any)        acl -> (acl, "")       "" -> ("", "")

    Any text gives an answer (``""`` when nothing is known).
    """
    if not isinstance(impl, str):
        impl = "" if impl is None else str(impl)
    return _split_impl_cached(impl)


_TM = re.compile(r"\((?:R|TM|r|tm)\)")
_SVE_BITS = re.compile(r"sve\D{0,20}?([0-9]+)\s*bits?")


@lru_cache(maxsize=1024)
def _isa_from_header_cached(text: str) -> str:
    s = _TM.sub("", text).strip()
    for prefix in ("isa:", "Detected ISA is "):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    low = " ".join(s.lower().split())
    if "aarch64" in low or "sve" in low or "advanced simd" in low or "neon" in low:
        m = _SVE_BITS.search(low)
        if m:
            return f"sve_{m.group(1)}"
        if "sve" in low:
            return "sve"
        return "asimd"
    amx_at = low.find("amx")
    has_amx = amx_at != -1
    amx_fp16 = has_amx and "float16" in low[amx_at:].replace("bfloat16", "")
    if "avx10.2" in low:
        return "avx10_2_512_amx_2" if has_amx else "avx10_2_512"
    if "avx10.1" in low:
        if has_amx:
            return "avx10_1_512_amx_fp16" if amx_fp16 else "avx10_1_512_amx"
        return "avx10_1_512"
    if "avx-512" in low or "avx512" in low or "advanced vector extensions 512" in low:
        if has_amx:
            return "avx512_core_amx_fp16" if amx_fp16 else "avx512_core_amx"
        if "float16" in low.replace("bfloat16", ""):
            return "avx512_core_fp16"
        if "bfloat16" in low:
            return "avx512_core_bf16"
        if "4fmaps" in low or "4vnniw" in low:
            return "avx512_mic_4ops"
        if "avx512er" in low or "avx512cd" in low:
            return "avx512_mic"
        if "dl boost" in low or "vnni" in low:
            return "avx512_core_vnni"
        if "avx512bw" in low:
            return "avx512_core"
        return "avx512_common"
    if "avx2" in low or "advanced vector extensions 2" in low:
        if "float16" in low or "bfloat16" in low:
            return "avx2_vnni_2"
        if "dl boost" in low or "vnni" in low:
            return "avx2_vnni"
        return "avx2"
    if re.search(r"\bavx\b", low) or "advanced vector extensions" in low:
        return "avx"
    if "sse4.1" in low or "sse41" in low:
        return "sse41"
    if "sse4.2" in low or "sse42" in low:
        return "sse42"
    return ""


def isa_from_header(text: str) -> str:
    """The implementation-name ISA (``avx2``, ``avx512_core_amx`` ...) of a header ISA string.

    Accepts the ``info,cpu,isa:`` text (with or without ``isa:``), the v0.x/v1.0 text after
    the version (``Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2)``) and v1.1's
    ``Detected ISA is ...``. The strings come from ``get_isa_info()`` in
    ``src/cpu/x64/cpu_isa_traits.cpp``; e.g.

    * ``Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions`` -> ``avx512_core``
    * ``Intel AVX-512 with Intel DL Boost`` -> ``avx512_core_vnni``
    * ``Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with
      bfloat16 and 8-bit integer support`` -> ``avx512_core_amx`` (Sapphire Rapids; the
      ``..._amx_fp16`` string says ``Intel AMX with bfloat16, float16 and 8-bit integer``)
    * ``AArch64 SVE (256 bits)`` -> ``sve_256``; unknown text -> ``""``.

    Any text gives an answer (``""`` when nothing is known).
    """
    if not isinstance(text, str):
        return ""
    return _isa_from_header_cached(text)
