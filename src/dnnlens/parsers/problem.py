"""The ``problem_desc`` field: ``grammars/problem.lark``.

Two shapes (format doc §4.3): dims lists (``2x16x7x7``, ``128x256:256x512``) and named
values in ``_``-separated groups (``mb2_ic16oc32_ih7oh7kh3sh1dh0ph1_iw7...``); ``M``, ``N``,
``K``, ``B`` are derived for GEMM-like kinds. The transformer below builds the values while
lark parses; the parser is made once, lazily, from the grammar's pre-analysed table
(:mod:`dnnlens.parsers.lalr_tables`). :func:`parse_problem` memoises on its input.

A field that does not parse still gives a result, salvaged as far as a pattern can, with
``error`` set to a one-line reason; only lark's "does not parse" is caught, so a bug raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from dnnlens.parsers.common import (
    CACHE_SIZE,
    EMPTY_MAP,
    ascii_float,
    ascii_int,
    lark_error,
)
from dnnlens.parsers.lalr_tables import lalr_parser

__all__ = ["Problem", "ProblemTransformer", "parse_problem", "spatial_dims"]


@cache
def _problem_parser() -> Lark:
    return lalr_parser("problem.lark", ProblemTransformer())


@dataclass(frozen=True, slots=True)
class Problem:
    """The parsed ``problem_desc`` field.

    * ``dims``: the named values of a named descriptor, keys as printed (``mb``, ``g``,
      ``ic``, ``oc``, ``ih``, ``oh``, ``kh``, ``sh``, ``dh``, ``ph`` ..., rnn ``l``, ``t``,
      ``sic``, ``slc``, ``dhc``, ``dic``, lrn ``ls``, old matmul ``b``/``m``/``n``/``k``), plus
      ``M``, ``N``, ``K``, ``B`` derived for matmul / gemm / gemm_api / inner_product.
      ``None`` is a runtime value (``*``). Nothing is defaulted: a 2D conv has no ``id``,
      an ungrouped conv no ``g``.
    * ``tensors``: the dims of a dims-list descriptor (``2x16x7x7``, ``128x256:256x512``).
    * ``params``: non-integer named values (lrn ``beta``).
    * ``form``: ``named``, ``dims`` or ``""`` (empty field).
    * ``overflow``: oneDNN printed ``#`` (buffer overflow, v1.x).
    * ``kind``: the primitive kind passed in, lower-cased, ``_v2`` suffix dropped.
    """

    raw: str = ""
    kind: str = ""
    dims: Mapping[str, int | None] = field(default_factory=lambda: EMPTY_MAP)
    tensors: tuple[tuple[int | None, ...], ...] = ()
    params: Mapping[str, float] = field(default_factory=lambda: EMPTY_MAP)
    form: str = ""
    error: str | None = None
    overflow: bool = False

    def get(self, name: str, default: int | None = None) -> int | None:
        """A named value, or ``default`` when it was not printed."""
        return self.dims.get(name, default)


def _num(tok: str) -> int | float | None:
    if tok == "*":
        return None
    try:
        return ascii_int(tok)
    except ValueError:
        try:
            return ascii_float(tok)
        except ValueError:
            return None


class ProblemTransformer(Transformer):
    """Builds dims tuples / name-value pairs while problem.lark parses."""

    def dims(self, c: list[Token]) -> tuple[int | None, ...]:
        return tuple(None if t == "*" else int(t) for t in c)

    def dims_list(self, c: list[tuple[int | None, ...]]) -> tuple[str, Any]:
        return "dims", tuple(c)

    def pair(self, c: list[Token]) -> tuple[str, int | float | None]:
        return str(c[0]), _num(str(c[1]))

    def group(self, c: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return c

    def named(self, c: list[list[tuple[str, Any]]]) -> tuple[str, Any]:
        return "named", [p for g in c for p in g]

    def start(self, c: list[Any]) -> Any:
        return c[0]


_PAIR_SALVAGE = re.compile(r"([A-Za-z]+)(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?|\*)")
_MATMUL_KINDS = frozenset({"matmul", "gemm", "gemm_api", "brgemm"})


def _prod(values: tuple[int | None, ...]) -> int | None:
    if any(v is None for v in values):
        return None
    return math.prod(v for v in values if v is not None)


def _derive_mnk(
    kind: str, dims: dict[str, int | None], tensors: tuple[tuple[int | None, ...], ...]
) -> None:
    """Add ``M``, ``N``, ``K``, ``B`` for GEMM-like primitives (in place)."""
    if kind in _MATMUL_KINDS:
        if len(tensors) >= 2 and len(tensors[0]) >= 2 and len(tensors[1]) >= 2:
            src, wei = tensors[0], tensors[1]
            dims["M"], dims["K"], dims["N"] = src[-2], src[-1], wei[-1]
            batch = src[:-2] if len(src) >= len(wei) else wei[:-2]
            dims["B"] = _prod(batch) if batch else 1
        elif "m" in dims and "n" in dims and "k" in dims:  # v1.2 - v2.1 [b<B>]m<M>n<N>k<K>
            dims["M"], dims["N"], dims["K"] = dims["m"], dims["n"], dims["k"]
            dims["B"] = dims.get("b", 1)
    elif kind == "inner_product" and "mb" in dims and "oc" in dims and "ic" in dims:
        dims["M"], dims["N"] = dims["mb"], dims["oc"]
        dims["K"] = _prod(tuple(dims[k] for k in ("ic", "id", "ih", "iw") if k in dims))
        dims["B"] = 1


def _normalize_kind(kind: str) -> str:
    kind = (kind or "").strip().lower()
    return kind.removesuffix("_v2")


@lru_cache(maxsize=CACHE_SIZE)
def _parse_problem_cached(kind: str, text: str) -> Problem:
    body = text.strip()
    if not body:
        return Problem(raw=text, kind=kind)
    if body == "#":
        return Problem(raw=text, kind=kind, overflow=True)
    error = None
    try:
        form, value = _problem_parser().parse(body)
    except UnexpectedInput as exc:
        error = f"problem {body!r}: {lark_error(exc)}"
        if body[0] in "0123456789*":
            form = "dims"
            value = tuple(
                tuple(_int_or_none(d) for d in part.split("x")) for part in body.split(":")
            )
        else:
            form = "named"
            value = [(k, _num(v)) for k, v in _PAIR_SALVAGE.findall(body)]
    dims: dict[str, int | None] = {}
    params: dict[str, float] = {}
    tensors: tuple[tuple[int | None, ...], ...] = ()
    if form == "dims":
        tensors = value
    else:
        for name, v in value:
            if isinstance(v, float):
                params[name] = v
            else:
                dims[name] = v
    _derive_mnk(kind, dims, tensors)
    return Problem(
        text, kind, MappingProxyType(dims), tensors, MappingProxyType(params), form, error
    )


def _int_or_none(tok: str) -> int | None:
    try:
        return ascii_int(tok)
    except ValueError:
        return None


def spatial_dims(dims: Mapping[str, int | None], prefix: str) -> tuple[int | None, ...]:
    """The depth, height and width values of ``prefix`` present in ``dims``, in that order.

    ``spatial_dims(p.dims, "i")`` gives (id, ih, iw) of a 3D problem, (ih, iw) of a 2D one;
    prefixes are ``i``/``o`` (input/output sizes), ``k``, ``s``, ``d``, ``p`` (kernel, stride,
    dilation, padding).
    """
    return tuple(dims[f"{prefix}{x}"] for x in "dhw" if f"{prefix}{x}" in dims)


def parse_problem(kind: str, text: str) -> Problem:
    """Parse a ``problem_desc`` field (format doc §4.3) of a primitive of ``kind``.

    ``kind`` is the primitive kind as printed (``convolution``, ``matmul``, ``gemm_api``,
    ``inner_product``, ``pooling_v2`` ...); it only decides which of ``M``/``N``/``K``/``B``
    are derived. Both conv group positions (``g32mb1_ic32..`` and ``mb1_g32ic32..``) parse
    to the same ``dims``. A field that does not parse sets ``error``.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not isinstance(kind, str):
        kind = "" if kind is None else str(kind)
    return _parse_problem_cached(_normalize_kind(kind), text)
