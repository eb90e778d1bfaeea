"""Parse one oneDNN verbose line (marker onwards, time removed) into a :class:`LineRecord`.

The grammar is ``grammars/onednn_line.lark``; the transformer below names the fields per
release family. Lark runs once per *distinct* line: the scanner memoises on the line without
its timestamp and time, so this module is off the hot path.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, VisitError

from dnnlens.parsers.lalr_tables import lalr_parser
from dnnlens.parsers.records import (
    FAMILY_DNNL,
    FAMILY_MKLDNN_0X,
    FAMILY_MKLDNN_1_0,
    FAMILY_ONEDNN_COMPONENT,
    FAMILY_ONEDNN_FLAT,
    FAMILY_ONEDNN_V1,
    LINE_DIAGNOSTIC,
    LINE_EVENT,
    LINE_INFO,
    LineRecord,
    MalformedLine,
)

_ENGINE = re.compile(r"(cpu|gpu)(:\d+)?|cpu2gpu|gpu2cpu")
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_LOCATION = re.compile(r".+\.(c|cc|cpp|cxx|h|hpp|cl)?:\d+")

#: Number of pd-info fields (without the time) of a primitive event, per family.
_PD_FIELDS = {
    FAMILY_MKLDNN_0X: ("kind", "impl", "prop_kind", "mds", "aux", "problem"),
    FAMILY_MKLDNN_1_0: ("engine", "kind", "impl", "prop_kind", "mds", "aux", "problem"),
}
_PD_FIELDS_FULL = ("engine", "kind", "impl", "prop_kind", "mds", "attrs", "aux", "problem")
# gemm_api lines of v2.7 have no aux slot (format doc §6).
_PD_FIELDS_GEMM_API_27 = ("engine", "kind", "impl", "prop_kind", "mds", "attrs", "problem")
# ukernel lines: engine, ukernel kind, impl (or transform name), prop, info (format doc §6).
_UKERNEL_FIELDS = ("engine", "kind", "impl", "prop_kind", "problem")


def _family(marker: str, version: str, component: str, first_field: str) -> str:
    if marker == "mkldnn_verbose":
        return FAMILY_MKLDNN_1_0 if _ENGINE.fullmatch(first_field) else FAMILY_MKLDNN_0X
    if marker == "dnnl_verbose":
        return FAMILY_DNNL
    if version:
        return FAMILY_ONEDNN_V1
    return FAMILY_ONEDNN_COMPONENT if component else FAMILY_ONEDNN_FLAT


def _split_operation(operation: str) -> tuple[str, str]:
    op, _, state = operation.partition(":")
    return op, state


class _LineTransformer(Transformer):
    """Turns the parse tree of one line into a :class:`LineRecord`."""

    def field(self, children: list[Token]) -> str:
        return str(children[0]) if children else ""

    def fields(self, children: list[str]) -> list[str]:
        return children

    def version(self, children: list[Token]) -> str:
        return str(children[0])

    def timestamp(self, children: list[Token]) -> float:
        return float(children[0])

    def info(self, children: list[Token]) -> tuple[str, str, list[str]]:
        rest = str(children[1]) if len(children) > 1 else ""
        return ("info", "info", [rest])

    def event(self, children: list) -> tuple[str, str, list[str]]:
        return ("event", str(children[0]), children[1] if len(children) > 1 else [])

    def diagnostic(self, children: list) -> tuple[str, str, list[str]]:
        return ("diagnostic", str(children[0]), children[1] if len(children) > 1 else [])

    def component_body(self, children: list) -> tuple[str, tuple[str, str, list[str]]]:
        return (str(children[0]), children[1])

    def start(self, children: list) -> LineRecord:
        marker = str(children[0])
        version = ""
        rest = children[1:]
        if rest and isinstance(rest[0], str):
            version = rest[0]
            rest = rest[1:]
        if rest and isinstance(rest[0], float):
            rest = rest[1:]
        body = rest[0]
        component = ""
        if isinstance(body[1], tuple):
            component, body = body
        line_kind, operation, fields = body
        if line_kind == "info":
            family = _family(marker, version, component, "")
            return LineRecord(LINE_INFO, family, "info", component=component, text=fields[0])
        first = fields[0] if fields else ""
        family = _family(marker, version, component, first)
        if line_kind == "diagnostic":
            return _diagnostic(family, component, operation, fields)
        return _event(family, component, operation, fields)


def _diagnostic(family: str, component: str, operation: str, fields: list[str]) -> LineRecord:
    """Check, dispatch, error and warning lines: subject, [pd-info], message, location."""
    subject = fields[0] if fields else ""
    rest = fields[1:]
    location = ""
    if rest and _LOCATION.fullmatch(rest[-1]):
        location = rest.pop()
    values: dict[str, str] = {}
    # A dispatch line from an implementation carries the whole pd-info before its message.
    if len(rest) >= 9 and _ENGINE.fullmatch(rest[0]):
        values = dict(zip(_PD_FIELDS_FULL, rest[:8], strict=True))
        rest = rest[8:]
    elif component and operation == "create:dispatch" and subject:
        # the short form names the primitive kind it refused (``convolution,unsupported ...``)
        values = {"kind": subject}
    return LineRecord(
        LINE_DIAGNOSTIC,
        family,
        operation,
        component=component or subject,
        text=",".join(rest) if component else ",".join([subject, *rest]).strip(","),
        location=location,
        **values,
    )


def _event(family: str, component: str, operation: str, fields: list[str]) -> LineRecord:
    op, state = _split_operation(operation)
    if component == "graph" or _looks_like_graph(fields):
        return _graph_event(family, op, state, fields)
    if op == "exec" and state == "external":  # ACL kernel timing (aarch64)
        return LineRecord(
            LINE_EVENT,
            family,
            op,
            state,
            component,
            kind="external",
            impl=fields[0] if fields else "",
        )
    if component == "ukernel":
        names = _UKERNEL_FIELDS
    elif family in _PD_FIELDS:
        names = _PD_FIELDS[family]
    elif len(fields) == 7 and len(fields) > 1 and fields[1] == "gemm_api":
        names = _PD_FIELDS_GEMM_API_27
    else:
        names = _PD_FIELDS_FULL
    if len(fields) < len(names):
        raise MalformedLine(
            f"truncated {op} line: {len(fields)} of {len(names)} fields before the time"
        )
    values = dict(zip(names, fields, strict=False))
    extra = ",".join(fields[len(names) :])
    if "engine" in values and not _ENGINE.fullmatch(values["engine"]):
        raise MalformedLine(f"unknown engine {values['engine'][:40]!r}")
    if not _NAME.fullmatch(values["kind"]):
        raise MalformedLine(f"primitive kind {values['kind'][:40]!r} is not a name")
    return LineRecord(LINE_EVENT, family, op, state, component, extra=extra, **values)


def _looks_like_graph(fields: list[str]) -> bool:
    """A graph partition line printed under the ``primitive`` component (seen in 2026 dev
    builds, oneDNN PR #5516): a numeric partition id and an ``fpm:`` field."""
    return len(fields) >= 8 and fields[1].isdigit() and fields[6].startswith("fpm:")


def _graph_event(family: str, op: str, state: str, fields: list[str]) -> LineRecord:
    """Graph partition compile/exec (format doc §5).

    ``engine,partition_id,partition_kind,op_names,data_formats,logical_tensors,fpm:<mode>,
    [scratchpad:<n>,][<impl>,]<backend>``
    """
    if len(fields) < 8:
        raise MalformedLine(f"truncated graph {op} line: {len(fields)} of 8+ fields")
    engine, _pid, pkind, ops, formats, tensors, fpmath, *tail = fields
    if not _ENGINE.fullmatch(engine):
        raise MalformedLine(f"unknown engine {engine[:40]!r}")
    attrs = [fpmath] + [t for t in tail if t.startswith("scratchpad:")]
    tail = [t for t in tail if not t.startswith("scratchpad:")]
    return LineRecord(
        LINE_EVENT,
        family,
        op,
        state,
        "graph",
        engine=engine,
        kind="graph_partition",
        impl=":".join(tail),
        prop_kind=pkind,
        mds=tensors,
        attrs=" ".join(attrs),
        aux=formats,
        problem=ops,
    )


@lru_cache(maxsize=1)
def line_parser() -> Lark:
    """The LALR parser for one line, made once, with the transformer passed in."""
    return lalr_parser("onednn_line.lark", _LineTransformer())


@lru_cache(maxsize=4096)
def parse_line(text: str) -> LineRecord:
    """Parse ``text`` (from the marker on, without the trailing time field).

    Raises :class:`MalformedLine` with a one-line reason when the text does not parse.
    Remembered for the process (a record is immutable): a notebook, a fleet build or a
    test session that reads the same program's lines again does not parse them again
    (lark's parse is most of a small log's reading); what does not parse is not kept.
    """
    try:
        return dataclasses.replace(line_parser().parse(text), raw=text)
    except MalformedLine:
        raise
    except VisitError as exc:
        if isinstance(exc.orig_exc, MalformedLine):
            raise exc.orig_exc from None
        raise MalformedLine(f"cannot be read: {exc.orig_exc}") from None
    except LarkError as exc:
        raise MalformedLine(_lark_reason(exc, text)) from None


def _lark_reason(exc: LarkError, text: str) -> str:
    column = getattr(exc, "column", None)
    if isinstance(column, int) and column > 0:
        near = text[max(0, column - 1) : column + 19]
        return f"unexpected text at column {column}: {near!r}"
    return "does not follow the verbose line grammar"
