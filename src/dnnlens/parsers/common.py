"""What the sub-field grammars share: oneDNN's numbers and data type names, lark's errors.

Numbers are read as oneDNN prints them (``%g``, ASCII only); a lark failure becomes the
one-line reason a field's ``error`` (and a malformed line's reason) carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from lark import Token
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

__all__ = [
    "CACHE_SIZE",
    "DATA_TYPES",
    "EMPTY_MAP",
    "ascii_float",
    "ascii_int",
    "lark_error",
    "token_text",
]

#: Bound of every memo (distinct strings); a real log has a few hundred at most.
CACHE_SIZE = 1 << 16

#: Data type names printed by oneDNN (``dnnl_dt2str``, all versions; ``s16``/``bin`` 0.x/1.x).
DATA_TYPES: frozenset[str] = frozenset(
    {
        "undef", "f16", "bf16", "f32", "f64", "s32", "s8", "u8", "s16", "u16", "s64",
        "s4", "u4", "boolean", "bin", "f8_e5m2", "f8_e4m3", "f4_e2m1", "f4_e3m0", "e8m0",
        "nf4",
    }
)  # fmt: skip

#: The empty read-only mapping of a result that holds no values.
EMPTY_MAP: Mapping[str, Any] = MappingProxyType({})


def ascii_float(text: str) -> float:
    """``float(text)`` for text as oneDNN prints numbers (``%g``): ASCII only.

    Python's ``float`` also reads ``1_000``, Arabic-Indic ``\u0661\u0660`` and full-width
    ``\uff11\uff12``, which no C program prints and ``awk`` reads differently; those raise
    ``ValueError`` here, like any other text that is not a number.
    """
    if not text.isascii() or "_" in text:
        raise ValueError(f"not an ASCII number: {text[:40]!r}")
    return float(text)


def ascii_int(text: str) -> int:
    """``int(text)`` with the same rule as :func:`ascii_float` (ASCII digits only)."""
    if not text.isascii() or "_" in text:
        raise ValueError(f"not an ASCII number: {text[:40]!r}")
    return int(text)


def lark_error(exc: Exception) -> str:
    """A one-line description of a lark failure (lark's own messages span several lines)."""
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r} at column {exc.column}"
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            return "unexpected end of text"
        return f"unexpected {str(tok)!r} at column {exc.column}"
    if isinstance(exc, UnexpectedEOF):
        return "unexpected end of text"
    if isinstance(exc, UnexpectedInput):
        return f"unexpected input at column {getattr(exc, 'column', '?')}"
    return f"{type(exc).__name__}: {exc}"


def token_text(tok: Token | str | None) -> str:
    """A token as text; ``""`` for a slot the grammar left empty (``maybe_placeholders``)."""
    return "" if tok is None else str(tok)
