"""The ``memory_descriptors`` field and graph logical tensors: ``grammars/memdesc.lark``.

One grammar, five start symbols: the four printed forms of a memory descriptor list
(format doc §3.1 F0 format names, §3.2 v1.0 - v3.1, §3.3 v3.2 - v3.5, §3.4 v3.6+) and the
logical tensors of a graph line (§5). The transformer below builds the values while lark
parses; the parser is made once, lazily, from the grammar's pre-analysed table
(:mod:`dnnlens.parsers.lalr_tables`). Each public function memoises on its input string.

A field that does not parse still gives a result, filled in as far as a plain split can,
with ``error`` set to a one-line reason; only lark's "does not parse" is caught, so a bug
raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from dnnlens.parsers.common import CACHE_SIZE, DATA_TYPES, ascii_int, lark_error, token_text
from dnnlens.parsers.lalr_tables import lalr_parser

__all__ = [
    "LogicalTensor",
    "MdList",
    "MemDesc",
    "MemdescTransformer",
    "parse_graph_tensors",
    "parse_mds",
]

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


@cache
def _md_parser() -> Lark:
    return lalr_parser("memdesc.lark", MemdescTransformer())


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
    s = token_text(tok)
    return s[1:] if s.startswith("f") else s


def _mask(tok: Token | str | None) -> str | None:
    s = token_text(tok)
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


class MemdescTransformer(Transformer):
    """Builds :class:`MemDesc` values while memdesc.lark parses (LALR, inline transform)."""

    def f0_item(self, c: list[Any]) -> tuple[str, str]:
        return token_text(c[0]), token_text(c[1])

    def f0_list(self, c: list[Any]) -> tuple[str, list[tuple[str, str]]]:
        return "f0", c

    def extras(self, c: list[Any]) -> str:
        return ":".join(str(t) for t in c)

    def v1_md(self, c: list[Any]) -> MemDesc:
        arg_dt, props, kind, tag, flags, extras, mask = c
        arg, dt = _split_arg_dt(str(arg_dt))
        return MemDesc(
            arg,
            dt,
            token_text(props),
            token_text(kind),
            token_text(tag),
            "",
            _flags(flags),
            extras,
            _mask(mask),
        )

    def v32_md(self, c: list[Any]) -> MemDesc:
        arg_dt, props, kind, tag, strides, flags, extras, mask = c
        arg, dt = _split_arg_dt(str(arg_dt))
        return MemDesc(
            arg,
            dt,
            token_text(props),
            token_text(kind),
            token_text(tag),
            token_text(strides),
            _flags(flags),
            extras,
            _mask(mask),
        )

    def v36_md(self, c: list[Any]) -> MemDesc:
        arg, dt, props, kind, tag, strides, flags, extras, mask = c
        return MemDesc(
            token_text(arg),
            token_text(dt),
            token_text(props),
            token_text(kind),
            tag,
            token_text(strides),
            _flags(flags),
            extras,
            _mask(mask),
        )

    def v36_md_nostrides(self, c: list[Any]) -> MemDesc:
        arg, dt, props, kind, tag, flags, extras, mask = c
        return MemDesc(
            token_text(arg),
            token_text(dt),
            token_text(props),
            token_text(kind),
            tag,
            "",
            _flags(flags),
            extras,
            _mask(mask),
        )

    def tag36(self, c: list[Any]) -> str:
        return token_text(c[0])

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
            str(name_dt),
            str(lt_id),
            token_text(layout_type),
            token_text(prop),
            token_text(dims),
            token_text(layout),
            "",
            None,
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


@lru_cache(maxsize=CACHE_SIZE)
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
            reason = lark_error(exc) if exc is not None else "does not parse"
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
    ``#`` (overflow) gives an empty list with ``overflow`` set. A list that does not parse
    sets ``error``.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return _parse_mds_cached(text)


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


@lru_cache(maxsize=CACHE_SIZE)
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
                    f"logical tensor {entry!r}: {lark_error(exc)}",
                )
            )
    return tuple(out)


def _with_lt_raw(lt: LogicalTensor, raw: str) -> LogicalTensor:
    return replace(lt, raw=raw)


def parse_graph_tensors(text: str) -> tuple[LogicalTensor, ...]:
    """Parse the logical-tensors field of a graph line (format doc §5).

    An entry that does not parse is still returned, split on ``:``, with ``error`` set.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return _parse_graph_tensors_cached(text)
