"""Sub-field parsers of a oneDNN primitive line: memory descriptors, attributes, aux, problem.

Each parser is a lark LALR grammar (``grammars/memdesc.lark``, ``attrs.lark``,
``problem.lark``, read beside the format doc §3-§5) plus a transformer that names the
fields. The parsers are made once, lazily, on first use (from the grammars' pre-analysed
tables, see :mod:`dnnlens.parsers.lalr_tables`). Every public function

* memoises on its input string, so each distinct string goes through lark once;
* never raises: a string that does not parse still gives a result, filled in as far as a
  permissive fallback could, with ``error`` set to a short message.

Results are frozen dataclasses; their mappings are read-only views (compare equal to dicts).

Public API::

    parse_mds(text) -> MdList                 # all four md grammars, detected per string
    parse_attrs(text) -> Attrs                # the three attribute grammars
    parse_aux(text) -> dict[str, str]         # `alg:eltwise_relu alpha:0 beta:0`
    parse_problem(kind, text) -> Problem      # conv, pool, ip, rnn, matmul, dims lists ...
    parse_graph_tensors(text) -> tuple[LogicalTensor, ...]
    split_impl(impl) -> (family, isa)
    ISA_RANK, AARCH64_ISA_RANK, isa_rank(isa), isa_from_header(text)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from dnnlens.parsers.lalr_tables import lalr_parser

__all__ = [
    "AARCH64_ISA_RANK",
    "DATA_TYPES",
    "ISA_RANK",
    "Attrs",
    "LogicalTensor",
    "MdList",
    "MemDesc",
    "PostOp",
    "Problem",
    "QuantEntry",
    "ascii_float",
    "ascii_int",
    "is_reference",
    "isa_from_header",
    "isa_rank",
    "parse_attrs",
    "parse_aux",
    "parse_graph_tensors",
    "parse_mds",
    "parse_problem",
    "split_impl",
]

#: Bound of every memo (distinct strings); a real log has a few hundred at most.
_CACHE_SIZE = 1 << 16

#: Data type names printed by oneDNN (``dnnl_dt2str``, all versions; ``s16``/``bin`` 0.x/1.x).
DATA_TYPES: frozenset[str] = frozenset(
    {
        "undef", "f16", "bf16", "f32", "f64", "s32", "s8", "u8", "s16", "u16", "s64",
        "s4", "u4", "boolean", "bin", "f8_e5m2", "f8_e4m3", "f4_e2m1", "f4_e3m0", "e8m0",
        "nf4",
    }
)  # fmt: skip

_EMPTY_MAP: Mapping[str, Any] = MappingProxyType({})


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


_BLOCK = re.compile(r"[0-9]+[A-Za-z]")
_LEADING_LETTERS = re.compile(r"[A-Za-z]+")
_BOLD = "**"
# GitHub renders `:abcd:`-style tags as emoji when a log is pasted (format doc §10.10).
_EMOJI = {
    "\U0001f521": ":abcd:",  # 🔡 :abcd:
    "\U0001f524": ":abc:",  # 🔤 :abc:
    "\U0001f18e": ":ab:",  # 🆎 :ab:
    "\U0001f170\ufe0f": ":a:",  # 🅰️ :a:
    "\U0001f170": ":a:",
    "\U0001f171\ufe0f": ":b:",  # 🅱️ :b:
    "\U0001f171": ":b:",
}


# ---------------------------------------------------------------------------------------
# grammars


@cache
def _md_parser() -> Lark:
    return lalr_parser("memdesc.lark", _MdTransformer())


@cache
def _attrs_parser() -> Lark:
    return lalr_parser("attrs.lark", _AttrsTransformer())


@cache
def _problem_parser() -> Lark:
    return lalr_parser("problem.lark", _ProblemTransformer())


def _lark_error(exc: Exception) -> str:
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


def _s(tok: Token | str | None) -> str:
    return "" if tok is None else str(tok)


# ---------------------------------------------------------------------------------------
# memory descriptors (format doc §3)


@dataclass(frozen=True, slots=True)
class MemDesc:
    """One memory descriptor of the ``memory_descriptors`` field.

    All values are the strings as printed; an empty slot is ``""``.

    * ``arg``: tensor role (``src``, ``wei``, ``diff_src``, ``src_layer``, ``query`` ...);
      ``""`` for the nameless zero_pad md of v1.x - v3.5.
    * ``dtype``: data type (``f32``, ``f8_e5m2``, ``undef`` for an absent tensor).
    * ``props``: subset of ``a`` (user asked for format ``any``), ``p`` (padded dims),
      ``o`` (padded offsets), ``0`` (non-zero offset0).
    * ``format_kind``: ``blocked``, ``any``, ``wino``, ``rnn_packed``, ``sparse``, ``undef``...
    * ``tag``: ``aBcd8b`` style tag (``*`` for runtime strides, sparse encoding, F0 format
      name such as ``nChw8c``).
    * ``strides``: non-dense strides ``4096x64x1`` (v3.2+), ``""`` when dense.
    * ``flags``: the extra-flags value *without* its ``f`` (``"0"``, ``"8"``; hex in
      v1.0 - v2.2), ``""`` when not printed (absent tensors). See :attr:`flags_value`.
    * ``extra``: what follows the flags, ``:``-joined (``zpm1``, ``s8m3:zpm1``, ``sa0.5``).
    * ``mask``: the matmul/gemm bias ``_mask<m>`` suffix value, else ``None``.
    * ``raw``: the entry as printed.
    """

    arg: str
    dtype: str
    props: str
    format_kind: str
    tag: str
    strides: str
    flags: str
    extra: str
    mask: str | None
    raw: str = ""

    @property
    def layout(self) -> str:
        """The tag for blocked memory (``acdb``, ``aBcd8b``), else the format kind (``any``)."""
        if self.format_kind == "blocked" and self.tag:
            return self.tag
        return self.format_kind or self.tag

    @property
    def is_blocked_layout(self) -> bool:
        """Whether the tag has an inner block (``aBcd8b``, ``AB16b64a``, F0 ``nChw8c``)."""
        return bool(_BLOCK.search(self.tag))

    @property
    def is_absent(self) -> bool:
        """An absent tensor (``bia_undef::undef::``, ``bia:undef::undef:::``)."""
        return self.dtype == "undef" or self.format_kind == "undef"

    @property
    def ndims(self) -> int | None:
        """Number of dimensions told by a letter tag (``aBcd8b`` -> 4), else ``None``."""
        if self.format_kind != "blocked" or not self.tag or self.tag == "*":
            return None
        m = _LEADING_LETTERS.match(self.tag)
        return len(m.group(0)) if m else None

    @property
    def flags_value(self) -> int | None:
        """The flags as a number, best effort: hex when it has a-f digits, else decimal.

        v1.0 - v2.2 printed the flags in hex; values of 10 and more are then ambiguous
        and read as decimal (the common flags 0, 1, 2, 3, 8, 9, 11 mean the same either way
        up to 9).
        """
        f = self.flags
        if not f:
            return None
        try:
            return ascii_int(f)
        except ValueError:
            try:
                return int(f, 16) if f.isascii() and "_" not in f else None
            except ValueError:
                return None


@dataclass(frozen=True, slots=True)
class MdList:
    """The parsed ``memory_descriptors`` field: a sequence of :class:`MemDesc`.

    ``family`` tells which grammar matched: ``f0`` (§3.1), ``v1`` (§3.2, v1.0 - v3.1),
    ``v32`` (§3.3, v3.2 - v3.5), ``v36`` (§3.4, v3.6+) or ``""`` (empty / nothing parsed).
    ``overflow`` is set when oneDNN replaced the field with ``#`` (buffer overflow, v1.x).
    ``notes`` lists repairs made before parsing (``markdown-bold``, ``emoji``).
    """

    mds: tuple[MemDesc, ...] = ()
    family: str = ""
    error: str | None = None
    notes: tuple[str, ...] = ()
    overflow: bool = False
    raw: str = ""

    def __iter__(self) -> Iterator[MemDesc]:
        return iter(self.mds)

    def __len__(self) -> int:
        return len(self.mds)

    def __getitem__(self, index: int) -> MemDesc:
        return self.mds[index]

    def get(self, arg: str) -> MemDesc | None:
        """The first descriptor of a given arg (``src``, ``wei``, ``dst`` ...), or ``None``."""
        for md in self.mds:
            if md.arg == arg:
                return md
        return None

    @property
    def args(self) -> tuple[str, ...]:
        """The arg names in order."""
        return tuple(md.arg for md in self.mds)


def _split_arg_dt(token: str) -> tuple[str, str]:
    """Split a legacy ``<arg>_<dt>`` token (``diff_src_f32``, ``src_f8_e5m2``, ``f32``).

    The split is at the first ``_`` whose suffix is a known data type (what oneDNN's
    verbose_converter does); a bare data type is a nameless md (zero_pad); otherwise the
    split is at the last ``_``.
    """
    if token in DATA_TYPES:
        return "", token
    idx = token.find("_")
    while idx != -1:
        if token[idx + 1 :] in DATA_TYPES:
            return token[:idx], token[idx + 1 :]
        idx = token.find("_", idx + 1)
    head, sep, tail = token.rpartition("_")
    if sep:
        return head, tail
    return token, ""


def _split_dt_prefix(value: str) -> tuple[str, str]:
    """Split an F0 ``<dt>_<format>`` value (``f32_nChw8c``) into ``(dt, format)``."""
    idx = value.find("_")
    while idx != -1:
        if value[:idx] in DATA_TYPES:
            return value[:idx], value[idx + 1 :]
        idx = value.find("_", idx + 1)
    return "", value


def _flags(tok: Token | str | None) -> str:
    s = _s(tok)
    return s[1:] if s.startswith("f") else s


def _mask(tok: Token | str | None) -> str | None:
    s = _s(tok)
    return s[len("_mask") :] if s else None


def _f0_format(value: str) -> tuple[str, str]:
    """``(format_kind, tag)`` of an F0 format name."""
    if value in ("undef", "format_undef", ""):
        return "undef", ""
    if value == "any":
        return "any", ""
    if value == "blocked":
        return "blocked", ""
    if value.startswith("wino"):
        return "wino", value
    if value == "rnn_packed":
        return "rnn_packed", ""
    return "blocked", value


def _f0_mds(items: list[tuple[str, str]], raw_entries: list[str]) -> tuple[MemDesc, ...]:
    """Turn F0 ``key:value`` pairs into descriptors (format doc §3.1)."""
    out: list[MemDesc] = []
    pending_dt = ""
    for (key, value), raw in zip(items, raw_entries, strict=False):
        if key == "dt":  # shuffle: dt:f32 fmt:nchw
            pending_dt = value
            continue
        if key == "fmt":
            kind, tag = _f0_format(value)
            out.append(MemDesc("data", pending_dt, "", kind, tag, "", "", "", None, raw))
            pending_dt = ""
            continue
        if key in ("in", "out"):
            dt, fmt = _split_dt_prefix(value)
            kind, tag = _f0_format(fmt)
            out.append(MemDesc(key, dt, "", kind, tag, "", "", "", None, raw))
            continue
        if key in ("ddata", "dwei", "ddiff"):  # rnn data types of the fdata/fwei tensors
            arg = key[1:]
            for i, md in enumerate(out):
                if md.arg == arg and not md.dtype:
                    out[i] = MemDesc(
                        md.arg,
                        value,
                        md.props,
                        md.format_kind,
                        md.tag,
                        md.strides,
                        md.flags,
                        md.extra,
                        md.mask,
                        f"{md.raw} {raw}",
                    )
                    break
            else:
                out.append(MemDesc(arg, value, "", "", "", "", "", "", None, raw))
            continue
        arg = key[1:] if key.startswith("f") and len(key) > 1 else key
        kind, tag = _f0_format(value)
        out.append(MemDesc(arg, "", "", kind, tag, "", "", "", None, raw))
    if pending_dt:
        out.append(MemDesc("data", pending_dt, "", "", "", "", "", "", None, f"dt:{pending_dt}"))
    return tuple(out)


class _MdTransformer(Transformer):
    """Builds :class:`MemDesc` values while memdesc.lark parses (LALR, inline transform)."""

    def f0_item(self, c: list[Any]) -> tuple[str, str]:
        return _s(c[0]), _s(c[1])

    def f0_list(self, c: list[Any]) -> tuple[str, list[tuple[str, str]]]:
        return "f0", c

    def extras(self, c: list[Any]) -> str:
        return ":".join(str(t) for t in c)

    def v1_md(self, c: list[Any]) -> MemDesc:
        arg_dt, props, kind, tag, flags, extras, mask = c
        arg, dt = _split_arg_dt(str(arg_dt))
        return MemDesc(
            arg, dt, _s(props), _s(kind), _s(tag), "", _flags(flags), extras, _mask(mask)
        )

    def v32_md(self, c: list[Any]) -> MemDesc:
        arg_dt, props, kind, tag, strides, flags, extras, mask = c
        arg, dt = _split_arg_dt(str(arg_dt))
        return MemDesc(
            arg, dt, _s(props), _s(kind), _s(tag), _s(strides), _flags(flags), extras, _mask(mask)
        )

    def v36_md(self, c: list[Any]) -> MemDesc:
        arg, dt, props, kind, tag, strides, flags, extras, mask = c
        return MemDesc(
            _s(arg),
            _s(dt),
            _s(props),
            _s(kind),
            tag,
            _s(strides),
            _flags(flags),
            extras,
            _mask(mask),
        )

    def v36_md_nostrides(self, c: list[Any]) -> MemDesc:
        arg, dt, props, kind, tag, flags, extras, mask = c
        return MemDesc(
            _s(arg), _s(dt), _s(props), _s(kind), tag, "", _flags(flags), extras, _mask(mask)
        )

    def tag36(self, c: list[Any]) -> str:
        return _s(c[0])

    def grouped_tag(self, c: list[Any]) -> str:
        return ":".join(str(t) for t in c)

    def v1_list(self, c: list[MemDesc]) -> tuple[str, list[MemDesc]]:
        return "v1", c

    def v32_list(self, c: list[MemDesc]) -> tuple[str, list[MemDesc]]:
        return "v32", c

    def v36_list(self, c: list[MemDesc]) -> tuple[str, list[MemDesc]]:
        return "v36", c

    def lt(self, c: list[Any]) -> LogicalTensor:
        name_dt, lt_id, layout_type, prop, dims, layout = c
        return _make_lt(
            str(name_dt), str(lt_id), _s(layout_type), _s(prop), _s(dims), _s(layout), "", None
        )

    def lt_list(self, c: list[LogicalTensor]) -> tuple[str, list[LogicalTensor]]:
        return "lt", c


_MD_STARTS = ("v36_list", "v32_list", "v1_list", "f0_list")
_FLAGS_SLOT = re.compile(r"f[0-9a-fA-F]*(_mask[0-9]+)?")


def _md_family_guess(entry: str) -> str:
    """The start symbol that fits the first entry of a md list (format doc §3)."""
    fields = entry.split(":")
    if len(fields) == 2:
        return "f0_list"
    if len(fields) >= 2 and fields[1] in DATA_TYPES:
        return "v36_list"
    if len(fields) >= 5:
        if fields[4].startswith("f") or (len(fields) == 5 and not fields[4]):
            return "v1_list"
        return "v32_list"
    return "v1_list"


def _repair(text: str) -> tuple[str, tuple[str, ...]]:
    notes: list[str] = []
    if _BOLD in text:
        text = text.replace(_BOLD, "")
        notes.append("markdown-bold")
    if any(e in text for e in _EMOJI):
        for emoji, tag in _EMOJI.items():
            text = text.replace(emoji, tag)
        notes.append("emoji")
    return text, tuple(notes)


def _fallback_md(entry: str, start: str) -> MemDesc:
    """Best-effort split of one entry that the grammar refused."""
    fields = entry.split(":")
    if start == "f0_list":
        key, _, value = entry.partition(":")
        return _f0_mds([(key, value)], [entry])[0] if key else _empty_md(entry)
    if start == "v36_list":
        arg, dt = fields[0], fields[1] if len(fields) > 1 else ""
        rest = fields[2:]
    else:
        arg, dt = _split_arg_dt(fields[0])
        rest = fields[1:]
    rest += [""] * (3 - len(rest))
    props, kind, tag = rest[0], rest[1], rest[2]
    tail = rest[3:]
    flags, strides, extra, mask = "", "", "", None
    for i, f in enumerate(tail):
        if _FLAGS_SLOT.fullmatch(f):
            head, _, m = f.partition("_mask")
            flags, mask = head[1:], (m or None)
            if i > 0 and start != "v1_list":
                strides = tail[0]
            extra = ":".join(tail[i + 1 :])
            break
    else:
        if tail and start != "v1_list":
            strides = tail[0]
    return MemDesc(arg, dt, props, kind, tag, strides, flags, extra, mask, entry)


def _empty_md(raw: str) -> MemDesc:
    return MemDesc("", "", "", "", "", "", "", "", None, raw)


def _parse_md_entries(
    text: str, starts: tuple[str, ...]
) -> tuple[tuple[str, list[Any]] | None, UnexpectedInput | None]:
    """Parse with each start symbol in turn: (result, None) or (None, first failure)."""
    parser = _md_parser()
    first: UnexpectedInput | None = None
    for start in starts:
        try:
            return parser.parse(text, start=start), None
        except UnexpectedInput as exc:
            first = first or exc
    return None, first


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_mds_cached(text: str) -> MdList:
    raw = text
    body = text.strip()
    if not body:
        return MdList(raw=raw)
    if body == "#":
        return MdList(overflow=True, raw=raw)
    body, notes = _repair(body)
    entries = body.split()
    if not entries:  # nothing left once the damage is removed (``**``)
        return MdList(notes=notes, raw=raw)
    primary = _md_family_guess(entries[0])
    starts = (primary,) + tuple(s for s in _MD_STARTS if s != primary)
    parsed, _ = _parse_md_entries(" ".join(entries), starts)
    if parsed is not None:
        family, values = parsed
        mds = _f0_mds(values, entries) if family == "f0" else tuple(values)
        if family != "f0":
            mds = tuple(_with_raw(md, e) for md, e in zip(mds, entries, strict=False))
        return MdList(mds, family, None, notes, False, raw)
    # Isolate the damaged entries: parse one by one, fall back to a plain split.
    out: list[MemDesc] = []
    error: str | None = None
    for entry in entries:
        got, exc = _parse_md_entries(entry, starts)
        if got is not None:
            fam, values = got
            out.extend(
                _f0_mds(values, [entry]) if fam == "f0" else [_with_raw(v, entry) for v in values]
            )
            continue
        if error is None:
            reason = _lark_error(exc) if exc is not None else "does not parse"
            error = f"memory descriptor {entry!r}: {reason}"
        out.append(_fallback_md(entry, primary))
    return MdList(tuple(out), primary.removesuffix("_list"), error, notes, False, raw)


def _with_raw(md: MemDesc, raw: str) -> MemDesc:
    return replace(md, raw=raw)


def parse_mds(text: str) -> MdList:
    """Parse a ``memory_descriptors`` field (space-separated list, format doc §3).

    Works for all four printed forms, detected per string: F0 format names
    (``fsrc:nchw``, ``in:f32_nchw``), v1.0 - v3.1 ``src_f32::blocked:aBcd8b:f0``,
    v3.2 - v3.5 ``src_f32::blocked:abcd::f0`` and v3.6+ ``src:f32::blocked:abcd::f0``.
    Markdown ``**bold**`` and GitHub emoji damage is repaired first (see ``notes``);
    ``#`` (overflow) gives an empty list with ``overflow`` set. Never raises.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return _parse_mds_cached(text)
    except Exception as exc:  # never raise on any input
        return MdList(error=f"internal error: {exc!r}", raw=text)


# ---------------------------------------------------------------------------------------
# attributes (format doc §4.1) and aux (§4.2)


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


class _AttrsTransformer(Transformer):
    """Builds items, post-ops and quantization entries while attrs.lark parses."""

    def semi_item(self, c: list[Any]) -> tuple[str, str]:
        value = _s(c[1])
        if value.startswith("'"):
            value = value[1:-1] if value.endswith("'") and len(value) > 1 else value[1:]
        return _s(c[0]), value

    def semi_list(self, c: list[Any]) -> list[tuple[str, str]]:
        return [item for item in c if item is not None]

    def kv(self, c: list[Any]) -> tuple[str, str]:
        return _s(c[0]), _s(c[1])

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
    items: Mapping[str, str] = field(default_factory=lambda: _EMPTY_MAP)
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
        return (), f"{start} {text!r}: {_lark_error(exc)}"


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


@lru_cache(maxsize=_CACHE_SIZE)
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
            errors.append(f"attributes: {_lark_error(exc)}")
            pairs = [
                (k, v.strip("'"))
                for k, _, v in (item.partition(":") for item in body.split(";") if item)
            ]
    else:
        family = "v2.3-v3.5" if text.endswith(" ") else "v3.6+"
        try:
            pairs = parser.parse(body, start="kv_list")
        except UnexpectedInput as exc:  # pragma: no cover - kv_list accepts any text
            errors.append(f"attributes: {_lark_error(exc)}")
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
    Never raises.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return _parse_attrs_cached(text)
    except Exception as exc:  # never raise on any input
        return Attrs(raw=text, error=f"internal error: {exc!r}")


@lru_cache(maxsize=_CACHE_SIZE)
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
    Returns a new dict on each call. Never raises.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return dict(_parse_aux_cached(text))
    except Exception:  # never raise on any input
        return {}


# ---------------------------------------------------------------------------------------
# problem descriptors (format doc §4.3)


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
    dims: Mapping[str, int | None] = field(default_factory=lambda: _EMPTY_MAP)
    tensors: tuple[tuple[int | None, ...], ...] = ()
    params: Mapping[str, float] = field(default_factory=lambda: _EMPTY_MAP)
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


class _ProblemTransformer(Transformer):
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


@lru_cache(maxsize=_CACHE_SIZE)
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
        error = f"problem {body!r}: {_lark_error(exc)}"
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
    to the same ``dims``. Never raises.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not isinstance(kind, str):
        kind = "" if kind is None else str(kind)
    try:
        return _parse_problem_cached(_normalize_kind(kind), text)
    except Exception as exc:  # never raise on any input
        return Problem(raw=text, kind=kind, error=f"internal error: {exc!r}")


# ---------------------------------------------------------------------------------------
# graph logical tensors (format doc §5)


@dataclass(frozen=True, slots=True)
class LogicalTensor:
    """One graph-API logical tensor ``in0_f32:0:strided:undef:1x16x384x64:393216s24576s64s1``.

    ``name`` is ``in0``/``out0``, ``direction`` ``in``/``out``, ``index`` its position;
    ``layout_type`` is ``strided``/``opaque``/``any``; ``property`` ``undef``/``constant``/
    ``variable``; ``dims`` and ``strides`` (strided layout only) with ``None`` for unknown
    (-1); ``layout`` is the raw layout slot (strides, opaque layout id or ``any``).
    """

    name: str
    direction: str
    index: int | None
    dtype: str
    id: int | None
    layout_type: str
    property: str
    dims: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    layout: str
    raw: str = ""
    error: str | None = None


def _ints(text: str, sep: str) -> tuple[int | None, ...]:
    if not text:
        return ()
    out: list[int | None] = []
    for part in text.split(sep):
        try:
            v = ascii_int(part)
        except ValueError:
            v = None
        out.append(None if v is None or v < 0 else v)
    return tuple(out)


def _make_lt(
    name_dt: str,
    lt_id: str,
    layout_type: str,
    prop: str,
    dims: str,
    layout: str,
    raw: str,
    error: str | None,
) -> LogicalTensor:
    name, _, dt = name_dt.partition("_")
    m = re.fullmatch(r"(in|out)([0-9]+)", name)
    direction = m.group(1) if m else ""
    index = int(m.group(2)) if m else None
    try:
        ident: int | None = ascii_int(lt_id)
    except ValueError:
        ident = None
    strides = _ints(layout, "s") if layout_type == "strided" else ()
    return LogicalTensor(
        name,
        direction,
        index,
        dt,
        ident,
        layout_type,
        prop,
        _ints(dims, "x"),
        strides,
        layout,
        raw,
        error,
    )


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_graph_tensors_cached(text: str) -> tuple[LogicalTensor, ...]:
    entries = text.split()
    if not entries:
        return ()
    parser = _md_parser()
    try:
        _, lts = parser.parse(" ".join(entries), start="lt_list")
        return tuple(_with_lt_raw(lt, e) for lt, e in zip(lts, entries, strict=False))
    except UnexpectedInput:
        pass
    out: list[LogicalTensor] = []
    for entry in entries:
        try:
            _, lts = parser.parse(entry, start="lt_list")
            out.append(_with_lt_raw(lts[0], entry))
        except UnexpectedInput as exc:
            f = entry.split(":") + [""] * 6
            out.append(
                _make_lt(
                    f[0],
                    f[1],
                    f[2],
                    f[3],
                    f[4],
                    f[5],
                    entry,
                    f"logical tensor {entry!r}: {_lark_error(exc)}",
                )
            )
    return tuple(out)


def _with_lt_raw(lt: LogicalTensor, raw: str) -> LogicalTensor:
    return replace(lt, raw=raw)


def parse_graph_tensors(text: str) -> tuple[LogicalTensor, ...]:
    """Parse the logical-tensors field of a graph line (format doc §5).

    An entry that does not parse is still returned, split on ``:``, with ``error`` set.
    Never raises.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return _parse_graph_tensors_cached(text)
    except Exception as exc:  # never raise on any input
        return (
            LogicalTensor(
                "", "", None, "", None, "", "", (), (), "", text, f"internal error: {exc!r}"
            ),
        )


# ---------------------------------------------------------------------------------------
# implementation names and ISAs (format doc §2, §4.6)

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


@lru_cache(maxsize=_CACHE_SIZE)
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

    Never raises.
    """
    if not isinstance(impl, str):
        impl = "" if impl is None else str(impl)
    try:
        return _split_impl_cached(impl)
    except Exception:  # never raise on any input
        return impl, ""


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

    Never raises.
    """
    if not isinstance(text, str):
        return ""
    try:
        return _isa_from_header_cached(text)
    except Exception:  # never raise on any input
        return ""
