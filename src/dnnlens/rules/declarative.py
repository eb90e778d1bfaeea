"""Rules written as data (YAML or TOML): loaded, checked up front, evaluated safely.

A rule file holds one rule, a list of rules, or ``rules:`` (YAML) / ``[[rules]]`` (TOML),
plus optional ``tests:`` (see ``testing.py``). Keys of one rule::

    name: reorders-between-convs      # kebab-case, required
    code: TEAM001                     # optional (default USR)
    severity: warning                 # info | warning | error
    summary / description / fix       # text shown by `dnnlens rules explain`
    table: events                     # events | creates | reorders | primitives
    where: 'kind == "reorder"'        # row filter (optional)
    group_by: [kind, impl]            # one finding per group (optional)
    options: {threshold: 0.1}         # configurable thresholds, usable as names
    metrics: {share: 'share()'}       # named scalar expressions, in order
    when: share > threshold           # fire when true (required)
    message: 'reorders take {share:.1%}'   # template over metrics, options, variables
    evidence: 3                       # example lines (top rows by time)
    max_findings: 5                   # per rule, with group_by

Everything is parsed and name-checked when the file loads, so a mistake is one
``RuleSetupError`` naming the file and line; nothing is passed to Python ``eval``.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dnnlens.analysis.findings import SEVERITIES, Evidence, Finding
from dnnlens.rules import expr, tables
from dnnlens.rules.base import NAME_RE, Rule
from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.yamlsrc import LocDict, LocList, load_document

if TYPE_CHECKING:
    from dnnlens.rules.context import RuleContext

RULE_KEYS = {
    "name",
    "code",
    "severity",
    "summary",
    "description",
    "fix",
    "table",
    "where",
    "group_by",
    "options",
    "metrics",
    "when",
    "message",
    "evidence",
    "max_findings",
}
#: Keys of a test file (testing.py) that may sit beside the rules in a rule file.
TEST_KEYS = {"tests", "cases", "select", "config", "rule_file", "tolerance"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: A format spec of a message field (Python's mini-language), and the bounds of its width
#: and precision: ``{x:>999999999}`` would make a string of a gigabyte.
_SPEC = re.compile(
    r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>[0-9]*)[,_]?(?:\.(?P<precision>[0-9]+))?"
    r"[bcdeEfFgGnosxX%]?",
    re.ASCII | re.DOTALL,
)
MAX_FORMAT_WIDTH = 200
MAX_FORMAT_PRECISION = 50
MAX_MESSAGE_CHARS = 2_000


@dataclass
class RuleSpec:
    """A checked rule definition."""

    name: str
    code: str
    severity: str
    summary: str
    description: str
    fix: str
    table: str
    where: expr.Node | None
    group_by: list[str]
    options: dict[str, Any]
    metrics: list[tuple[str, expr.Node]]
    when: expr.Node
    message: str
    evidence: int
    max_findings: int
    source: str
    line: int
    texts: dict[str, str] = field(default_factory=dict)


class DeclarativeRule(Rule):
    """A rule defined in a YAML/TOML file (see the module docstring)."""

    def __init__(
        self,
        spec: RuleSpec,
        options: Mapping[str, Any] | None = None,
        severity: str | None = None,
    ) -> None:
        self.spec = spec
        self.defaults = spec.options  # type: ignore[misc]
        self.source = spec.source
        super().__init__(options, severity or spec.severity)

    @property
    def rule_name(self) -> str:
        return self.spec.name

    @property
    def rule_code(self) -> str:
        return self.spec.code

    def describe(self) -> str:
        s = self.spec
        parts = [s.summary or s.name]
        if s.description:
            parts.append(s.description.strip())
        if s.fix:
            parts.append(f"Fix: {s.fix.strip()}")
        rule = [f"table: {s.table}"] + [f"{k}: {v}" for k, v in s.texts.items()]
        parts.append("Definition (" + f"{s.source}:{s.line}" + "):\n  " + "\n  ".join(rule))
        return "\n\n".join(parts)

    def fix_text(self) -> str:
        return " ".join(self.spec.fix.split())

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        s = self.spec
        frame, base = tables.table(ctx, s.table)
        env: dict[str, Any] = tables.variables(ctx)
        env.update(self.options)
        if s.where is not None and len(frame):
            mask = expr._mask(expr.eval_rows(s.where, frame, env), frame.index)
            frame = frame[mask.to_numpy()]
        if s.group_by and len(frame):
            groups = list(frame.groupby(s.group_by, observed=True, sort=False))
        else:
            groups = [((), frame)]
        findings: list[Finding] = []
        for key, rows in groups:
            genv = dict(env)
            keys = key if isinstance(key, tuple) else (key,)
            genv.update({c: _plain(v) for c, v in zip(s.group_by, keys, strict=False)})
            agg = expr.AggregateInput(rows, base)
            for name, node in s.metrics:
                genv[name] = expr.eval_scalar(node, genv, agg)
            if not expr._truthy(expr.eval_scalar(s.when, genv, agg)):
                continue
            data = {n: _plain(genv[n]) for n, _ in s.metrics}
            data.update({c: genv[c] for c in s.group_by})
            findings.append(
                self.finding(render(s.message, genv), _evidence(rows, s.evidence), data=data)
            )
            if len(findings) >= s.max_findings:
                break
        return findings


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _evidence(rows: Any, limit: int) -> list[Evidence]:
    if limit <= 0 or not len(rows) or "line" not in rows.columns:
        return []
    path_col = "path" if "path" in rows.columns else "input"
    ordered = (
        rows.sort_values("time_ms", ascending=False, kind="stable")
        if ("time_ms" in rows.columns)
        else rows
    )
    if "record" in ordered.columns:
        ordered = ordered.drop_duplicates("record")
    out = []
    for p, n in zip(ordered[path_col].head(limit), ordered["line"].head(limit), strict=True):
        if isinstance(n, int | float) and not (isinstance(n, float) and math.isnan(n)):
            out.append(Evidence(str(p), int(n)))
    return out


def render(template: str, env: Mapping[str, Any]) -> str:
    """Fill ``{name:spec}`` fields of a message template from ``env`` (nothing else)."""
    out = []
    for literal, name, spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        value = env.get(name)
        if value is None:
            value = math.nan if spec and spec[-1:] in "eEfFgG%" else ""
        try:
            out.append(format(value, spec or ""))
        except (TypeError, ValueError):
            out.append(str(value))
    return "".join(out)


# ---------------------------------------------------------------------------------------
# loading


def load_rule_file(path: str) -> tuple[list[RuleSpec], Any]:
    """The rules of a YAML/TOML file and its raw ``tests`` (or ``None``)."""
    doc = load_document(path)
    tests = None
    if isinstance(doc, dict) and "name" not in doc:
        unknown = set(doc) - {"rules"} - TEST_KEYS
        if unknown:
            key = sorted(unknown)[0]
            raise RuleSetupError(
                f"{path}:{doc.line_of(key)}: unknown top-level key {key!r} "
                "(a rule file has 'rules' and 'tests', or is one rule with a 'name')"
            )
        tests = doc.get("tests", doc.get("cases"))
        items = doc.get("rules", [])
    elif isinstance(doc, dict):
        tests = doc.get("tests", doc.get("cases"))
        one = LocDict({k: v for k, v in doc.items() if k not in TEST_KEYS})
        one.line, one.lines = getattr(doc, "line", 0), dict(getattr(doc, "lines", {}))
        items = [one]
    elif isinstance(doc, list):
        items = doc
    elif doc is None:
        items = []
    else:
        raise RuleSetupError(f"{path}:1: a rule file holds a mapping or a list of rules")
    if not isinstance(items, list):
        raise RuleSetupError(f"{path}:{doc.line_of('rules')}: 'rules' must be a list")
    specs = []
    lines = getattr(items, "lines", [])
    for i, item in enumerate(items):
        line = lines[i] if i < len(lines) else getattr(item, "line", 0)
        if not isinstance(item, dict):
            raise RuleSetupError(f"{path}:{line}: each rule is a mapping with a 'name'")
        specs.append(parse_rule(item, path))
    return specs, tests


def _text(item: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise RuleSetupError(f"{where}: '{key}' must be text")
    return value


def parse_rule(item: Mapping[str, Any], path: str) -> RuleSpec:
    """Check one rule mapping; every problem is a RuleSetupError with file and line."""
    line_of = item.line_of if isinstance(item, LocDict) else (lambda k: 0)

    def at(key: str) -> str:
        return f"{path}:{line_of(key)}"

    name = item.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise RuleSetupError(f"{at('name')}: rule name {name!r} must be kebab-case text")
    for key in item:
        if key not in RULE_KEYS:
            raise RuleSetupError(
                f"{at(key)}: rule {name!r}: unknown key {key!r}"
                f"{expr.suggest(key, sorted(RULE_KEYS))}"
            )
    severity = _text(item, "severity", at("severity"), "warning")
    if severity not in SEVERITIES:
        raise RuleSetupError(
            f"{at('severity')}: rule {name!r}: severity must be one of {', '.join(SEVERITIES)}"
        )
    table = _text(item, "table", at("table"), "events")
    if table not in tables.TABLES:
        raise RuleSetupError(
            f"{at('table')}: rule {name!r}: unknown table {table!r} "
            f"(tables: {', '.join(tables.TABLES)})"
        )
    columns = tables.TABLES[table]
    options = _options(item, name, at)
    group_by = item.get("group_by", [])
    group_by = [group_by] if isinstance(group_by, str) else group_by
    if not isinstance(group_by, list):
        raise RuleSetupError(
            f"{at('group_by')}: rule {name!r}: group_by must be a column name or a list of "
            f"them, not {type(group_by).__name__}"
        )
    if any(not isinstance(g, str) or g not in columns for g in group_by):
        bad = next(g for g in group_by if not isinstance(g, str) or g not in columns)
        raise RuleSetupError(
            f"{at('group_by')}: rule {name!r}: group_by: {bad!r} is not a "
            f"column of {table}{expr.suggest(str(bad), list(columns))}"
        )
    scalars = {**tables.VARIABLES, **{k: _type_of(v) for k, v in options.items()}}
    scalars.update({g: columns[g] for g in group_by})
    scope = expr.Scope(columns=columns, scalars=scalars)
    texts: dict[str, str] = {}

    def compile_expr(key: str, text: Any, mode: str, want_bool: bool = False) -> expr.Node:
        if not isinstance(text, str | int | float | bool):
            raise RuleSetupError(f"{at(key)}: rule {name!r}: {key} must be an expression")
        src = str(text).lower() if isinstance(text, bool) else str(text)
        try:
            node = expr.parse(src)
            kind = expr.check(node, scope, mode)
        except expr.ExprError as exc:
            col = f" (column {exc.column})" if exc.column else ""
            raise RuleSetupError(f"{at(key)}: rule {name!r}: {key}: {exc}{col}") from None
        if want_bool and kind not in (expr.BOOL, expr.ANY):
            raise RuleSetupError(
                f"{at(key)}: rule {name!r}: {key} must be true/false, not a {kind}"
            )
        texts[key] = src
        return node

    where = compile_expr("where", item["where"], "row", True) if "where" in item else None
    metrics = []
    raw_metrics = item.get("metrics", {})
    if not isinstance(raw_metrics, dict):
        raise RuleSetupError(
            f"{at('metrics')}: rule {name!r}: metrics is a mapping name: expression"
        )
    for mname, mtext in raw_metrics.items():
        if not _IDENT.match(str(mname)) or mname in scope.scalars:
            raise RuleSetupError(f"{at('metrics')}: rule {name!r}: bad metric name {mname!r}")
        node = compile_expr("metrics", mtext, "scalar")
        texts[f"metrics.{mname}"] = texts.pop("metrics")
        metrics.append((str(mname), node))
        scope.scalars = {**scope.scalars, str(mname): expr.check(node, scope, "scalar")}
    if "when" not in item:
        raise RuleSetupError(
            f"{at('name')}: rule {name!r}: 'when' (the firing condition) is required"
        )
    when = compile_expr("when", item["when"], "scalar", True)
    message = _text(item, "message", at("message"), "")
    if not message:
        raise RuleSetupError(f"{at('name')}: rule {name!r}: 'message' is required")
    _check_template(message, scope.scalars, f"{at('message')}: rule {name!r}")
    texts["message"] = message
    return RuleSpec(
        name=name,
        code=_text(item, "code", at("code"), "USR"),
        severity=severity,
        summary=_text(item, "summary", at("summary")),
        description=_text(item, "description", at("description")),
        fix=_text(item, "fix", at("fix")),
        table=table,
        where=where,
        group_by=group_by,
        options=options,
        metrics=metrics,
        when=when,
        message=message,
        evidence=_int(item, "evidence", 3, at),
        max_findings=_int(item, "max_findings", 5, at),
        source=path,
        line=getattr(item, "line", 0),
        texts=texts,
    )


def _int(item: Mapping[str, Any], key: str, default: int, at: Any) -> int:
    value = item.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RuleSetupError(f"{at(key)}: '{key}' must be a whole number >= 0")
    return value


def _options(item: Mapping[str, Any], name: str, at: Any) -> dict[str, Any]:
    options = item.get("options", {})
    if not isinstance(options, dict):
        raise RuleSetupError(f"{at('options')}: rule {name!r}: options is a mapping")
    for key, value in options.items():
        if not _IDENT.match(str(key)) or key in tables.VARIABLES:
            raise RuleSetupError(f"{at('options')}: rule {name!r}: bad option name {key!r}")
        if not isinstance(value, int | float | str | bool):
            raise RuleSetupError(
                f"{at('options')}: rule {name!r}: option {key!r} must be a "
                "number, text or true/false"
            )
        if isinstance(value, int) and not -(1 << 63) <= value < 1 << 63:
            raise RuleSetupError(
                f"{at('options')}: rule {name!r}: option {key!r} is an integer beyond 64 bits"
            )
    return dict(options)


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return expr.BOOL
    return expr.STR if isinstance(value, str) else expr.NUM


def _check_spec(spec: str, fname: str, where: str) -> None:
    m = _SPEC.fullmatch(spec)
    if m is None:
        return  # format() below says what is wrong with it
    width, precision = m.group("width"), m.group("precision")
    if (width and len(width) > 3) or int(width or 0) > MAX_FORMAT_WIDTH:
        raise RuleSetupError(f"{where}: message: {{{fname}:{spec}}}: width over {MAX_FORMAT_WIDTH}")
    if precision and (len(precision) > 3 or int(precision) > MAX_FORMAT_PRECISION):
        raise RuleSetupError(
            f"{where}: message: {{{fname}:{spec}}}: precision over {MAX_FORMAT_PRECISION}"
        )


_SAMPLE = {expr.NUM: 1.5, expr.STR: "x", expr.BOOL: True, expr.ANY: 1.5, expr.LIST: []}


def _check_template(template: str, names: Mapping[str, str], where: str) -> None:
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise RuleSetupError(f"{where}: message: {exc} (write {{{{ for a brace)") from None
    if len(template) > MAX_MESSAGE_CHARS:
        raise RuleSetupError(f"{where}: message: longer than {MAX_MESSAGE_CHARS:,} characters")
    for _lit, fname, spec, conv in fields:
        if fname is None:
            continue
        _check_spec(spec or "", fname, where)
        if not _IDENT.match(fname) or conv is not None or "{" in (spec or ""):
            raise RuleSetupError(
                f"{where}: message: {{{fname}}}: only {{name}} or "
                "{name:format} fields are allowed"
            )
        if fname not in names:
            raise RuleSetupError(
                f"{where}: message: unknown field {{{fname}}}{expr.suggest(fname, sorted(names))}"
            )
        try:
            format(_SAMPLE[names[fname]], spec or "")
        except (TypeError, ValueError) as exc:
            raise RuleSetupError(f"{where}: message: {{{fname}:{spec}}}: {exc}") from None


__all__ = ["DeclarativeRule", "LocList", "RuleSpec", "load_rule_file", "parse_rule", "render"]
