"""The ``attributes`` and ``auxiliary`` fields: ``grammars/attrs.lark``.

Attributes come in three forms (format doc §4.1: ``;``-terminated items of v1.1 - v2.2,
``attr-*`` groups of v2.3 - v3.5 and v3.6+), with post-ops, scales and zero-points parsed
out of their values; aux is ``key:value`` words (§4.2). The transformer below builds the
values while lark parses; the parser is made once, lazily, from the grammar's pre-analysed
table (:mod:`dnnlens.parsers.lalr_tables`). Each public function memoises on its input.

A field that does not parse still gives a result, filled in as far as a plain split can,
with ``error`` set to a one-line reason; only lark's "does not parse" is caught, so a bug
raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from lark import Lark, Transformer
from lark.exceptions import UnexpectedInput

from dnnlens.parsers.common import CACHE_SIZE, DATA_TYPES, EMPTY_MAP, lark_error, token_text
from dnnlens.parsers.lalr_tables import lalr_parser

__all__ = [
    "Attrs",
    "AttrsTransformer",
    "PostOp",
    "QuantEntry",
    "parse_attrs",
    "parse_aux",
]


@cache
def _attrs_parser() -> Lark:
    return lalr_parser("attrs.lark", AttrsTransformer())


@dataclass(frozen=True, slots=True)
class PostOp:
    """One post-op entry.

    ``kind`` is ``sum``, ``eltwise``, ``binary``, ``dw``, ``prelu`` or ``other``; ``alg`` is
    the name as printed (``eltwise_relu``, ``binary_add``, ``sum``, ``prelu``), ``dw`` for
    depthwise fusion (whose ``k3s1p1`` spec is ``args[0]`` in both the old ``dw_k3s1p1`` and
    the new ``dw:k3s1p1`` spelling); ``args`` are the ``:``-separated values that follow.
    """

    kind: str
    alg: str
    args: tuple[str, ...] = ()
    raw: str = ""

    @property
    def short_alg(self) -> str:
        """``alg`` without its ``eltwise_`` / ``binary_`` prefix (``relu``, ``add``)."""
        for prefix in ("eltwise_", "binary_"):
            if self.alg.startswith(prefix):
                return self.alg[len(prefix) :]
        return self.alg

    @property
    def dtype(self) -> str:
        """The data type among the args (binary src1, sum dt, dw dst), else ``""``."""
        for a in self.args:
            if a in DATA_TYPES:
                return a
        return ""


@dataclass(frozen=True, slots=True)
class QuantEntry:
    """One scales / zero-points entry (``src0:0:f32``, ``wei:3:f16:32x1``, ``dst:0:0.5``).

    ``mask`` as printed (``0``, ``11``, ``common``); ``dtype`` and ``groups`` (``32x1``) when
    printed (v3.x syntax); ``value`` for the old ``<mask>:<value>[*]`` syntax; ``extra``
    keeps anything else (``host_scalar``, quantization mode). ``arg`` is ``oscale`` for
    output scales (``oscale:2:*``, ``attr-oscale:common:0.5``).
    """

    arg: str
    mask: str = ""
    dtype: str = ""
    groups: str = ""
    value: str = ""
    extra: tuple[str, ...] = ()
    raw: str = ""


_GROUPS = re.compile(r"[0-9]+x[0-9]+")
_NUMBERISH = re.compile(r"[-+0-9.eE]*\*?|\*")


def _quant(arg: str, pieces: list[str]) -> QuantEntry:
    mask = pieces[0] if pieces else ""
    dtype = groups = value = ""
    extra: list[str] = []
    for p in pieces[1:]:
        if not dtype and p in DATA_TYPES:
            dtype = p
        elif not groups and _GROUPS.fullmatch(p):
            groups = p
        elif not value and p and _NUMBERISH.fullmatch(p):
            value = p
        else:
            extra.append(p)
    raw = ":".join([arg, *pieces])
    return QuantEntry(arg, mask, dtype, groups, value, tuple(extra), raw)


def _post_op(name: str, args: tuple[str, ...]) -> PostOp:
    raw = ":".join((name, *args))
    if name == "dw":
        return PostOp("dw", "dw", args, raw)
    if name.startswith("dw_"):  # up to v2.6: dw_k3s2p1[:<dt>:<mask>[:<scale>]]
        return PostOp("dw", "dw", (name[3:], *args), raw)
    if name == "sum":
        return PostOp("sum", "sum", args, raw)
    if name.startswith("eltwise"):
        return PostOp("eltwise", name, args, raw)
    if name.startswith("binary"):
        return PostOp("binary", name, args, raw)
    if name == "prelu":
        return PostOp("prelu", "prelu", args, raw)
    return PostOp("other", name, args, raw)


class AttrsTransformer(Transformer):
    """Builds items, post-ops and quantization entries while attrs.lark parses."""

    def semi_item(self, c: list[Any]) -> tuple[str, str]:
        value = token_text(c[1])
        if value.startswith("'"):
            value = value[1:-1] if value.endswith("'") and len(value) > 1 else value[1:]
        return token_text(c[0]), value

    def semi_list(self, c: list[Any]) -> list[tuple[str, str]]:
        return [item for item in c if item is not None]

    def kv(self, c: list[Any]) -> tuple[str, str]:
        return token_text(c[0]), token_text(c[1])

    def kv_list(self, c: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return c

    def post_op(self, c: list[Any]) -> PostOp:
        return _post_op(str(c[0]), tuple(str(a) for a in c[1:]))

    def po_plus(self, c: list[PostOp]) -> tuple[PostOp, ...]:
        return tuple(c)

    def po_semi(self, c: list[PostOp | None]) -> tuple[PostOp, ...]:
        return tuple(p for p in c if p is not None)

    def q_entry(self, c: list[Any]) -> QuantEntry:
        return _quant(str(c[0]), [str(p) for p in c[1:]])

    q_old = q_entry

    def q_plus(self, c: list[QuantEntry]) -> tuple[QuantEntry, ...]:
        return tuple(c)

    q_under = q_plus


@dataclass(frozen=True, slots=True)
class Attrs:
    """The parsed ``attributes`` field (format doc §4.1).

    ``items`` maps each attribute name as printed, without the ``attr-`` prefix
    (``scratchpad``, ``fpmath``, ``post-ops``, ``scales``, ``zero-points``; v1.1 - v2.2:
    ``scratchpad_mode``, ``post_ops``, ``oscale``, ``scales``, ``zero_points``), to its raw
    value (quotes removed). ``post_ops``, ``scales`` (output scales included, arg
    ``oscale``) and ``zero_points`` are parsed out of those values.

    ``family``: ``""`` (empty field), ``v1.1-v2.2`` (``;``-terminated items),
    ``v2.3-v3.5`` (``attr-*`` groups each followed by a space) or ``v3.6+`` (no trailing
    space; also what a v2.3 - v3.5 field looks like once its trailing space was lost).
    """

    raw: str = ""
    family: str = ""
    items: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAP)
    post_ops: tuple[PostOp, ...] = ()
    scales: tuple[QuantEntry, ...] = ()
    zero_points: tuple[QuantEntry, ...] = ()
    error: str | None = None
    overflow: bool = False

    @property
    def scratchpad(self) -> str | None:
        """Scratchpad mode (``user``/``library``) if printed."""
        return self.items.get("scratchpad", self.items.get("scratchpad_mode"))

    @property
    def fpmath(self) -> str | None:
        """fpmath mode (``bf16``, ``tf32``, ``bf16:true`` ...) if printed."""
        return self.items.get("fpmath", self.items.get("fpmath_mode"))

    @property
    def acc_mode(self) -> str | None:
        """Accumulation mode (v3.6+: ``relaxed``, ``any``, ``f16`` ...) if printed."""
        return self.items.get("acc-mode")

    @property
    def oscale(self) -> str | None:
        """The raw output-scales value (<= v3.0) if printed."""
        return self.items.get("oscale")

    def has(self, name: str) -> bool:
        """Whether an attribute was printed (name without ``attr-``)."""
        return name in self.items


def _attr_sub(parser: Lark, start: str, text: str) -> tuple[tuple[Any, ...], str | None]:
    try:
        return parser.parse(text, start=start), None
    except UnexpectedInput as exc:
        return (), f"{start} {text!r}: {lark_error(exc)}"


def _fallback_post_ops(text: str, sep: str) -> tuple[PostOp, ...]:
    out = []
    for entry in text.split(sep):
        if entry:
            name, *args = entry.split(":")
            out.append(_post_op(name, tuple(args)))
    return tuple(out)


def _fallback_quant(text: str, sep: str) -> tuple[QuantEntry, ...]:
    out = []
    for entry in text.split(sep):
        if entry:
            arg, *pieces = entry.split(":")
            out.append(_quant(arg, pieces))
    return tuple(out)


@lru_cache(maxsize=CACHE_SIZE)
def _parse_attrs_cached(text: str) -> Attrs:
    body = text.strip()
    if not body:
        return Attrs(raw=text)
    if body == "#":
        return Attrs(raw=text, overflow=True)
    parser = _attrs_parser()
    errors: list[str] = []
    old = "attr-" not in body and (";" in body or "'" in body)
    if old:
        family = "v1.1-v2.2"
        if body.count("'") % 2:
            errors.append("attributes: unterminated quoted value (truncated field?)")
        try:
            pairs = parser.parse(body, start="semi_list")
        except UnexpectedInput as exc:
            errors.append(f"attributes: {lark_error(exc)}")
            pairs = [
                (k, v.strip("'"))
                for k, _, v in (item.partition(":") for item in body.split(";") if item)
            ]
    else:
        family = "v2.3-v3.5" if text.endswith(" ") else "v3.6+"
        try:
            pairs = parser.parse(body, start="kv_list")
        except UnexpectedInput as exc:  # pragma: no cover - kv_list accepts any text
            errors.append(f"attributes: {lark_error(exc)}")
            pairs = [(k, v) for k, _, v in (item.partition(":") for item in body.split())]
    items: dict[str, str] = {}
    post_ops: tuple[PostOp, ...] = ()
    scales: list[QuantEntry] = []
    zero_points: tuple[QuantEntry, ...] = ()
    for key, value in pairs:
        name = key[len("attr-") :] if key.startswith("attr-") else key
        items[name] = value
        if name in ("post-ops", "post_ops"):
            start, sep = ("po_semi", ";") if old else ("po_plus", "+")
            got, err = _attr_sub(parser, start, value) if value else ((), None)
            if err:
                errors.append(err)
                got = _fallback_post_ops(value, sep)
            post_ops += got
        elif name in ("scales", "zero-points", "zero_points", "oscale"):
            start, sep = ("q_under", "_") if old else ("q_plus", "+")
            text_q = f"oscale:{value}" if name == "oscale" else value
            got, err = _attr_sub(parser, start, text_q) if value else ((), None)
            if err:
                errors.append(err)
                got = _fallback_quant(text_q, sep)
            if name in ("scales", "oscale"):
                scales.extend(got)
            else:
                zero_points += got
    return Attrs(
        raw=text,
        family=family,
        items=MappingProxyType(items),
        post_ops=post_ops,
        scales=tuple(scales),
        zero_points=zero_points,
        error="; ".join(errors) if errors else None,
    )


def parse_attrs(text: str) -> Attrs:
    """Parse an ``attributes`` field, any of the three forms of format doc §4.1.

    Pass the field as printed, trailing space included: it tells v2.3 - v3.5 from v3.6+.
    A field that does not parse sets ``error``.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return _parse_attrs_cached(text)


@lru_cache(maxsize=CACHE_SIZE)
def _parse_aux_cached(text: str) -> tuple[tuple[str, str], ...]:
    body = text.strip()
    if not body:
        return ()
    try:
        pairs = _attrs_parser().parse(body, start="kv_list")
    except UnexpectedInput:  # pragma: no cover - kv_list accepts any text
        pairs = [(k, v) for k, _, v in (item.partition(":") for item in body.split())]
    return tuple(pairs)


def parse_aux(text: str) -> dict[str, str]:
    """Parse the ``auxiliary`` field: space-separated ``key:value`` (format doc §4.2).

    The value is everything after the first ``:`` (``runtime_dims_masks:1:2`` ->
    ``{"runtime_dims_masks": "1:2"}``); ``flags:`` and a bare word give ``""``.
    Returns a new dict on each call. Any text gives pairs (the grammar takes every word).
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return dict(_parse_aux_cached(text))
