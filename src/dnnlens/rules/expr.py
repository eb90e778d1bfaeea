"""The expression language of rule files: parsed by lark, checked, evaluated without ``eval``.

Grammar (lowest precedence first)::

    expr  := expr "or" expr | expr "and" expr | "not" expr
           | sum (== != < <= > >=) sum | sum "in" sum | sum "not" "in" sum | sum
    sum   := sum (+ -) term | term          term := term (* / %) factor | factor
    factor:= "-" factor | NUMBER | "string" | 'string' | true | false | NAME
           | NAME "(" args ")" | "[" args "]" | "(" expr ")"

Two evaluation modes share that grammar:

* **row** expressions (``where``, arguments of aggregates) are vectorised over a table:
  a name is a column (or a scalar variable), ``and``/``or``/``not`` combine masks, and the
  row functions are ``contains startswith endswith matches lower abs isnan``.
* **scalar** expressions (``metrics``, ``when``) see variables, options and earlier metrics;
  aggregates reduce the table selected by ``where``: ``count([cond])``, ``sum mean median
  min max p50 p90 p95 p99 distinct (x[, cond])``, ``percentile(x, q[, cond])`` and
  ``share([cond])`` (time of the selected rows, ``and cond``, over the time of the whole
  table); scalar helpers are ``abs round least greatest``.

Names are checked against the table's columns before anything runs, so a typo is a setup
error with file and line, not a crash. Division by zero gives NaN and NaN never fires.

Limits, so a rule file cannot exhaust the machine (each breach is an :class:`ExprError`
at load): an expression has at most :data:`MAX_EXPR_CHARS` characters and
:data:`MAX_DEPTH` levels of nesting; a number literal has at most :data:`MAX_NUMBER_CHARS`
characters and an integer literal fits 64 bits; ``matches`` patterns are compiled by RE2,
whose matching time is linear in the text (no backreferences or lookaround). While a rule
runs, an integer result beyond 64 bits becomes a float, so repeated squaring ends in
``inf``, not in a number of a billion digits.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from dnnlens.parsers.linear_regex import MAX_PATTERN_CHARS as LINEAR_MAX_CHARS
from dnnlens.parsers.linear_regex import PatternError, compile_linear

NUM, STR, BOOL, LIST, ANY = "number", "string", "bool", "list", "any"

_GRAMMAR = r"""
?start: expr
?expr: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> not_op
         | comparison
?comparison: arith (COMP_OP arith)?
           | arith _IN arith -> in_op
           | arith _NOT _IN arith -> not_in_op
?arith: term ((PLUS | MINUS) term)*
?term: factor (MUL_OP factor)*
?factor: MINUS factor -> neg
       | atom
?atom: NUMBER -> number
     | STRING -> string
     | "true" -> true
     | "True" -> true
     | "false" -> false
     | "False" -> false
     | NAME "(" [arglist] ")" -> call
     | NAME -> name
     | "[" [arglist] "]" -> list
     | "(" expr ")"
arglist: expr ("," expr)*
_OR: "or"
_AND: "and"
_NOT: "not"
_IN: "in"
COMP_OP: "==" | "!=" | "<=" | ">=" | "<" | ">"
PLUS: "+"
MINUS: "-"
MUL_OP: "*" | "/" | "%"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?/
STRING: /"(?:[^"\\]|\\.)*"/ | /'(?:[^'\\]|\\.)*'/
%ignore /[ \t\r\n]+/
"""

ROW_FUNCS = ("contains", "startswith", "endswith", "matches", "lower", "abs", "isnan")
AGGREGATES = (
    "count",
    "sum",
    "mean",
    "median",
    "min",
    "max",
    "p50",
    "p90",
    "p95",
    "p99",
    "percentile",
    "share",
    "distinct",
)
SCALAR_FUNCS = ("abs", "round", "least", "greatest")
_QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "median": 0.5}

#: Limits of an expression (see the module docstring).
MAX_EXPR_CHARS = 10_000
MAX_DEPTH = 100
MAX_NUMBER_CHARS = 40
MAX_PATTERN_CHARS = LINEAR_MAX_CHARS
#: Integers beyond this become floats while a rule runs.
_INT_LIMIT = 1 << 63


class ExprError(Exception):
    """A parse, check or evaluation error; ``column`` is 1-based within the expression."""

    def __init__(self, message: str, column: int | None = None) -> None:
        super().__init__(message)
        self.column = column


# ---------------------------------------------------------------------------------------
# AST


@dataclass(frozen=True)
class Node:
    """An expression node; ``col`` is its 1-based column in the source text."""

    col: int


@dataclass(frozen=True)
class Lit(Node):
    value: Any


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Unary(Node):
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Chain(Node):
    """``a + b - c``: three operands or more of one precedence level, applied left to right
    in a loop, so that a chain of 500 terms is as deep as one (a left-deep tree of
    :class:`Binary` nodes made checking and evaluating it recurse 500 levels)."""

    first: Node
    rest: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class BoolOp(Node):
    op: str
    items: tuple[Node, ...]


@dataclass(frozen=True)
class ListLit(Node):
    items: tuple[Node, ...]


def _col(meta: Any, children: list[Any]) -> int:
    if getattr(meta, "empty", True):
        for c in children:
            if isinstance(c, Node):
                return c.col
            if isinstance(c, Token) and c.column is not None:
                return c.column
        return 1
    return meta.column


def _unescape(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


@v_args(meta=True)
class _ToAst(Transformer):
    def number(self, meta: Any, c: list[Token]) -> Lit:
        text = str(c[0])
        col = c[0].column or 1
        if len(text) > MAX_NUMBER_CHARS:
            raise ExprError(f"number literal longer than {MAX_NUMBER_CHARS} characters", col)
        value: float | int = float(text) if any(ch in text for ch in ".eE") else int(text)
        if isinstance(value, int) and value >= _INT_LIMIT:
            raise ExprError("integer literal beyond 64 bits (write it as a float: 1e30)", col)
        return Lit(col, value)

    def string(self, meta: Any, c: list[Token]) -> Lit:
        return Lit(c[0].column or 1, _unescape(str(c[0])))

    def true(self, meta: Any, c: list[Any]) -> Lit:
        return Lit(_col(meta, c), True)

    def false(self, meta: Any, c: list[Any]) -> Lit:
        return Lit(_col(meta, c), False)

    def name(self, meta: Any, c: list[Token]) -> Name:
        return Name(c[0].column or 1, str(c[0]))

    def arglist(self, meta: Any, c: list[Node]) -> tuple[Node, ...]:
        return tuple(c)

    def call(self, meta: Any, c: list[Any]) -> Call:
        args = c[1] if len(c) > 1 and c[1] is not None else ()
        return Call(c[0].column or 1, str(c[0]), tuple(args))

    def list(self, meta: Any, c: list[Any]) -> ListLit:
        items = c[0] if c and c[0] is not None else ()
        return ListLit(_col(meta, c), tuple(items))

    def neg(self, meta: Any, c: list[Any]) -> Unary:
        return Unary(_col(meta, c), "-", c[1])

    def not_op(self, meta: Any, c: list[Any]) -> Unary:
        return Unary(_col(meta, c), "not", c[0])

    def _chain(self, meta: Any, c: list[Any]) -> Node:
        rest = tuple((str(op), right) for op, right in zip(c[1::2], c[2::2], strict=True))
        if len(rest) <= 1:
            return Binary(c[0].col, rest[0][0], c[0], rest[0][1]) if rest else c[0]
        return Chain(c[0].col, c[0], rest)

    arith = _chain
    term = _chain

    def comparison(self, meta: Any, c: list[Any]) -> Binary:
        return Binary(c[0].col, str(c[1]), c[0], c[2])

    def in_op(self, meta: Any, c: list[Any]) -> Binary:
        return Binary(c[0].col, "in", c[0], c[1])

    def not_in_op(self, meta: Any, c: list[Any]) -> Binary:
        return Binary(c[0].col, "not in", c[0], c[1])

    def or_expr(self, meta: Any, c: list[Any]) -> BoolOp:
        return BoolOp(c[0].col, "or", tuple(c))

    def and_expr(self, meta: Any, c: list[Any]) -> BoolOp:
        return BoolOp(c[0].col, "and", tuple(c))


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", propagate_positions=True)


def _depth(tree: Tree) -> int:
    """Nesting depth of a parse tree, without recursion (the tree may be very deep)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))
    return deepest


@cache
def parse(text: str) -> Node:
    """The AST of ``text``; raises :class:`ExprError` with a column on a syntax error."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty expression", 1)
    if len(text) > MAX_EXPR_CHARS:
        raise ExprError(f"expression longer than {MAX_EXPR_CHARS:,} characters", 1)
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as exc:
        raise ExprError(f"unexpected character {exc.char!r}", exc.column) from None
    except UnexpectedEOF:
        raise ExprError("expression ends too early", len(text)) from None
    except UnexpectedToken as exc:
        tok = "end of expression" if exc.token.type == "$END" else repr(str(exc.token))
        raise ExprError(f"unexpected {tok}", exc.column) from None
    except UnexpectedInput as exc:
        raise ExprError("syntax error", getattr(exc, "column", None)) from None
    if _depth(tree) > MAX_DEPTH:
        raise ExprError(f"expression nested more than {MAX_DEPTH} levels deep", 1)
    try:
        return _ToAst().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, ExprError):
            raise exc.orig_exc from None
        raise ExprError(f"cannot be read: {exc.orig_exc}", 1) from None


# ---------------------------------------------------------------------------------------
# static check


@dataclass
class Scope:
    """What names mean: table columns (row mode) and scalar variables, with their types."""

    columns: Mapping[str, str] = field(default_factory=dict)
    scalars: Mapping[str, str] = field(default_factory=dict)


def check(node: Node, scope: Scope, mode: str) -> str:
    """The type of ``node`` in ``mode`` (``row`` or ``scalar``); raises ExprError."""
    if isinstance(node, Lit):
        if isinstance(node.value, bool):
            return BOOL
        return STR if isinstance(node.value, str) else NUM
    if isinstance(node, Name):
        return _check_name(node, scope, mode)
    if isinstance(node, ListLit):
        for item in node.items:
            check(item, scope, mode)
        return LIST
    if isinstance(node, Unary):
        t = check(node.operand, scope, mode)
        if node.op == "-" and t not in (NUM, ANY):
            raise ExprError(f"'-' needs a number, got a {t}", node.col)
        return BOOL if node.op == "not" else NUM
    if isinstance(node, BoolOp):
        for item in node.items:
            check(item, scope, mode)
        return BOOL
    if isinstance(node, Binary):
        return _check_binary(node, scope, mode)
    if isinstance(node, Chain):
        for op, operand in ((node.rest[0][0], node.first), *node.rest):
            t = check(operand, scope, mode)
            if t not in (NUM, ANY, BOOL):
                raise ExprError(f"'{op}' needs numbers, got a {t}", node.col)
        return NUM
    if isinstance(node, Call):
        return _check_call(node, scope, mode)
    raise ExprError("unknown expression", node.col)


def _check_name(node: Name, scope: Scope, mode: str) -> str:
    if mode == "row" and node.id in scope.columns:
        return scope.columns[node.id]
    if node.id in scope.scalars:
        return scope.scalars[node.id]
    if mode == "scalar" and node.id in scope.columns:
        raise ExprError(
            f"{node.id!r} is a column: use it inside an aggregate, e.g. sum({node.id})",
            node.col,
        )
    known = sorted(set(scope.columns if mode == "row" else ()) | set(scope.scalars))
    raise ExprError(f"unknown name {node.id!r}{suggest(node.id, known)}", node.col)


def suggest(word: str, known: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` for the closest known names, else a pointer to the docs."""
    close = difflib.get_close_matches(word, list(known), n=3, cutoff=0.6)
    if close:
        return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
    return " (see docs/rules.md for the names)"


def _check_binary(node: Binary, scope: Scope, mode: str) -> str:
    lt, rt = check(node.left, scope, mode), check(node.right, scope, mode)
    if node.op in ("in", "not in"):
        if rt not in (LIST, ANY):
            raise ExprError(f'\'{node.op}\' needs a list on its right, e.g. ["a", "b"]', node.col)
        return BOOL
    if node.op in ("+", "-", "*", "/", "%"):
        for t in (lt, rt):
            if t not in (NUM, ANY, BOOL):
                raise ExprError(f"'{node.op}' needs numbers, got a {t}", node.col)
        return NUM
    # comparison
    if ANY not in (lt, rt) and {lt, rt} != {NUM, BOOL} and lt != rt:
        raise ExprError(f"cannot compare a {lt} with a {rt}", node.col)
    if node.op not in ("==", "!=") and STR in (lt, rt) and mode == "row":
        raise ExprError(f"'{node.op}' compares numbers; use == or != for strings", node.col)
    return BOOL


def _check_call(node: Call, scope: Scope, mode: str) -> str:
    f = node.func
    if mode == "scalar" and f in AGGREGATES:
        return _check_aggregate(node, scope)
    if mode == "scalar" and f in SCALAR_FUNCS:
        for a in node.args:
            check(a, scope, mode)
        limits = {"abs": (1, 1), "round": (1, 2), "least": (2, 99), "greatest": (2, 99)}[f]
        _arity(node, *limits)
        return NUM
    if mode == "row" and f in ROW_FUNCS:
        _arity(
            node,
            1 if f in ("lower", "abs", "isnan") else 2,
            1 if f in ("lower", "abs", "isnan") else 2,
        )
        for a in node.args:
            check(a, scope, mode)
        if f == "matches":
            pattern = node.args[1]
            if not isinstance(pattern, Lit) or not isinstance(pattern.value, str):
                raise ExprError('matches(x, "regex") needs a string literal', node.col)
            compile_pattern(pattern.value, pattern.col)
        return {"lower": STR, "abs": NUM}.get(f, BOOL)
    allowed = (AGGREGATES + SCALAR_FUNCS) if mode == "scalar" else ROW_FUNCS
    where = "here" if mode == "scalar" else "in a row filter"
    raise ExprError(f"unknown function {f!r} {where}{suggest(f, allowed)}", node.col)


def compile_pattern(pattern: str, col: int = 1) -> Any:
    """``pattern`` compiled by RE2 (linear-time matching,
    :func:`dnnlens.parsers.linear_regex.compile_linear`, as ``--iteration-marker``);
    ExprError if RE2 cannot take it."""
    try:
        return compile_linear(pattern)
    except PatternError as exc:
        raise ExprError(str(exc), col) from None


def _arity(node: Call, low: int, high: int) -> None:
    if not low <= len(node.args) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        raise ExprError(f"{node.func}() takes {want} arguments, got {len(node.args)}", node.col)


def _check_aggregate(node: Call, scope: Scope) -> str:
    f = node.func
    if f in ("count", "share"):
        _arity(node, 0, 1)
        cond_at = 0
    elif f == "percentile":
        _arity(node, 2, 3)
        cond_at = 2
        check(node.args[1], scope, "scalar")
    else:
        _arity(node, 1, 2)
        cond_at = 1
    for i, a in enumerate(node.args):
        if f == "percentile" and i == 1:
            continue
        t = check(a, scope, "row")
        if i == cond_at and t not in (BOOL, ANY):
            raise ExprError(f"the condition of {f}() must be true/false, got a {t}", a.col)
        if i < cond_at and f not in ("distinct", "min", "max") and t not in (NUM, BOOL, ANY):
            raise ExprError(f"{f}() needs a number column, got a {t}", a.col)
    return NUM


# ---------------------------------------------------------------------------------------
# evaluation


def _mask(value: Any, index: pd.Index) -> pd.Series:
    if isinstance(value, pd.Series):
        return value.fillna(False).astype(bool)
    return pd.Series(bool(value), index=index)


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    col = frame[name]
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.astype(object)
    return col


def eval_rows(node: Node, frame: pd.DataFrame, scalars: Mapping[str, Any]) -> Any:
    """Evaluate a row expression over ``frame``: a Series (or a scalar for constants)."""
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Name):
        if node.id in frame.columns:
            return _column(frame, node.id)
        return scalars[node.id]
    if isinstance(node, ListLit):
        return [eval_rows(i, frame, scalars) for i in node.items]
    if isinstance(node, Unary):
        v = eval_rows(node.operand, frame, scalars)
        if node.op == "not":
            return ~_mask(v, frame.index) if isinstance(v, pd.Series) else not v
        return -v
    if isinstance(node, BoolOp):
        masks = [_mask(eval_rows(i, frame, scalars), frame.index) for i in node.items]
        out = masks[0]
        for m in masks[1:]:
            out = (out & m) if node.op == "and" else (out | m)
        return out
    if isinstance(node, Binary):
        return _binary(
            node.op, eval_rows(node.left, frame, scalars), eval_rows(node.right, frame, scalars)
        )
    if isinstance(node, Chain):
        value = eval_rows(node.first, frame, scalars)
        for op, operand in node.rest:
            value = _binary(op, value, eval_rows(operand, frame, scalars))
        return value
    if isinstance(node, Call):
        return _row_call(node, [eval_rows(a, frame, scalars) for a in node.args])
    raise ExprError("unknown expression", node.col)


def _binary(op: str, a: Any, b: Any) -> Any:
    if op in ("in", "not in"):
        items = list(b)
        hit = a.isin(items) if isinstance(a, pd.Series) else a in items
        if op == "in":
            return hit
        return ~hit if isinstance(hit, pd.Series) else not hit
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "/": _div,
        "%": _mod,
        "==": lambda x, y: x == y,
        "!=": lambda x, y: x != y,
        "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y,
        ">": lambda x, y: x > y,
        ">=": lambda x, y: x >= y,
    }
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _bounded(ops[op](a, b))


def _bounded(value: Any) -> Any:
    """A Python integer beyond 64 bits as a float (``inf`` when even that overflows)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, pd.Series) or isinstance(b, pd.Series):
        return a / b
    return float(a) / float(b) if float(b) != 0 else math.nan


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, pd.Series) or isinstance(b, pd.Series):
        return a % b
    return float(a) % float(b) if float(b) != 0 else math.nan


def _row_call(node: Call, args: list[Any]) -> Any:
    f = node.func
    x = args[0]
    if f in ("contains", "startswith", "endswith", "matches"):
        needle = str(args[1])
        if not isinstance(x, pd.Series):
            x = pd.Series([x])
        s = x.astype(str).str
        if f == "contains":
            return s.contains(needle, regex=False)
        if f == "matches":
            search = compile_pattern(needle, node.col).search
            return x.astype(str).map(lambda v: search(v) is not None).astype(bool)
        return s.startswith(needle) if f == "startswith" else s.endswith(needle)
    if f == "lower":
        return x.astype(str).str.lower() if isinstance(x, pd.Series) else str(x).lower()
    if f == "abs":
        return x.abs() if isinstance(x, pd.Series) else abs(x)
    if f == "isnan":
        return x.isna() if isinstance(x, pd.Series) else (x is None or x != x)
    raise ExprError(f"unknown function {f!r}", node.col)


@dataclass
class AggregateInput:
    """What aggregates reduce: the selected rows and the time of the whole table."""

    rows: pd.DataFrame
    table_time_ms: float
    time_column: str = "time_ms"


def eval_scalar(node: Node, env: Mapping[str, Any], agg: AggregateInput) -> Any:
    """Evaluate a scalar expression (metrics, ``when``)."""
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Name):
        return env[node.id]
    if isinstance(node, ListLit):
        return [eval_scalar(i, env, agg) for i in node.items]
    if isinstance(node, Unary):
        v = eval_scalar(node.operand, env, agg)
        return (not _truthy(v)) if node.op == "not" else -v
    if isinstance(node, BoolOp):
        if node.op == "and":
            return all(_truthy(eval_scalar(i, env, agg)) for i in node.items)
        return any(_truthy(eval_scalar(i, env, agg)) for i in node.items)
    if isinstance(node, Binary):
        return _binary(node.op, eval_scalar(node.left, env, agg), eval_scalar(node.right, env, agg))
    if isinstance(node, Chain):
        value = eval_scalar(node.first, env, agg)
        for op, operand in node.rest:
            value = _binary(op, value, eval_scalar(operand, env, agg))
        return value
    if isinstance(node, Call):
        if node.func in AGGREGATES:
            return _aggregate(node, env, agg)
        args = [eval_scalar(a, env, agg) for a in node.args]
        return _scalar_call(node.func, args)
    raise ExprError("unknown expression", node.col)


def _truthy(v: Any) -> bool:
    if isinstance(v, float) and math.isnan(v):
        return False
    return bool(v)


def _scalar_call(f: str, args: list[Any]) -> Any:
    if f == "abs":
        return abs(args[0])
    if f == "round":
        return round(float(args[0]), int(args[1]) if len(args) > 1 else 0)
    values = [float(a) for a in args]
    return min(values) if f == "least" else max(values)


def _aggregate(node: Call, env: Mapping[str, Any], agg: AggregateInput) -> Any:
    f = node.func
    rows = agg.rows
    cond_at = {"count": 0, "share": 0, "percentile": 2}.get(f, 1)
    if len(node.args) > cond_at:
        cond = eval_rows(node.args[cond_at], rows, env)
        rows = rows[_mask(cond, rows.index).to_numpy()]
    if f == "count":
        return int(len(rows))
    if f == "share":
        part = float(rows[agg.time_column].sum()) if len(rows) else 0.0
        return part / agg.table_time_ms if agg.table_time_ms > 0 else math.nan
    values = eval_rows(node.args[0], rows, env)
    if not isinstance(values, pd.Series):
        values = pd.Series([values] * len(rows), index=rows.index, dtype=object)
    if f == "distinct":
        return int(values.nunique())
    values = pd.to_numeric(values, errors="coerce") if f not in ("min", "max") else values
    if len(values) == 0:
        return 0 if f == "sum" else math.nan
    if f == "sum":
        return _plain(values.sum())
    if f == "mean":
        return _plain(values.mean())
    if f in ("min", "max"):
        return _plain(values.min() if f == "min" else values.max())
    q = _QUANTILES.get(f)
    if f == "percentile":
        q = float(eval_scalar(node.args[1], env, agg))
        q = q / 100.0 if q > 1 else q
    return _plain(values.quantile(q))


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value
