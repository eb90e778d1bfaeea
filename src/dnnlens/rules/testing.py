"""Rule test cases (``dnnlens rules test FILE``): a log snippet in, the expected findings out.

A test file is YAML (or TOML); a rule file may carry its own ``tests:``::

    rule_file: team_rules.yaml       # optional: rules to load (.yaml/.toml/.py), relative
    select: [reorders-between-convs] # optional: whose findings count (default: the rules
                                     # this file brings; without any, all built-ins)
    config: {reorders-between-convs: {threshold: 0.2}}   # optional options, every case
    cases:                           # (or `tests:`)
      - name: fires on NCHW inference
        log: |                       # the snippet; or log_file: path relative to this file
          onednn_verbose,v1,primitive,exec,cpu,reorder,...
        config: {...}                # optional, this case only
        expect:                      # every finding of the selected rules, no more, no less
          - rule: reorders-between-convs
            severity: warning        # optional
            message_contains: "of each iteration"   # optional
            data: {reorders: 4}      # optional; numbers match within `tolerance` (0.01)
      - name: quiet on channels_last
        log_file: ../../sample_logs/convnet_cl_infer.log
        expect: []
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.reading import load, load_text
from dnnlens.rules.config import RuleConfig
from dnnlens.rules.engine import RuleOptions, run_selected, selected_rules
from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.registry import Registry, add_entry_points, add_path
from dnnlens.rules.verdict import report_order
from dnnlens.rules.yamlsrc import load_document

_CASE_KEYS = {"name", "log", "log_file", "config", "expect", "tolerance"}
_EXPECT_KEYS = {"rule", "severity", "message_contains", "data", "count"}


@dataclass
class CaseResult:
    """The outcome of one case."""

    name: str
    passed: bool
    problems: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def run_test_file(path: str) -> list[CaseResult]:
    """Run every case of ``path``; setup mistakes raise RuleSetupError (file and line)."""
    doc = load_document(path)
    if not isinstance(doc, dict):
        raise RuleSetupError(f"{path}:1: a test file is a mapping with 'cases' (or 'tests')")
    base = Path(path).parent
    registry = Registry()
    add_entry_points(registry)
    builtin = set(registry.entries)
    own: list[str] = []
    if "name" in doc or "rules" in doc:  # the file is itself a rule file
        before = set(registry.entries)
        add_path(registry, path, "the command line")
        own += [n for n in registry.entries if n not in before]
    if "rule_file" in doc:
        before = set(registry.entries)
        add_path(registry, str(base / str(doc["rule_file"])), f"rule_file of {path}")
        own += [n for n in registry.entries if n not in before]
    select = doc.get("select") or own or sorted(builtin)
    if isinstance(select, str):
        select = [select]
    if not isinstance(select, list):
        raise RuleSetupError(f"{path}:{doc.line_of('select')}: 'select' is a list of rule names")
    select = registry.resolve([str(s) for s in select], f"{path}:{doc.line_of('select')}")
    cases = doc.get("cases", doc.get("tests"))
    if not isinstance(cases, list) or not cases:
        raise RuleSetupError(f"{path}:{doc.line}: no test cases ('cases:' or 'tests:' list)")
    results = []
    for i, case in enumerate(cases):
        line = cases.lines[i] if hasattr(cases, "lines") else 0
        results.append(_run_case(case, f"{path}:{line}", base, registry, select, doc))
    return results


def _run_case(
    case: Any, where: str, base: Path, registry: Registry, select: list[str], doc: Any
) -> CaseResult:
    if not isinstance(case, dict):
        raise RuleSetupError(f"{where}: a case is a mapping with 'log' and 'expect'")
    unknown = set(case) - _CASE_KEYS
    if unknown:
        raise RuleSetupError(
            f"{where}: unknown case key {sorted(unknown)[0]!r} "
            f"(known: {', '.join(sorted(_CASE_KEYS))})"
        )
    name = str(case.get("name", where))
    if "log" in case:
        log = load_text(str(case["log"]), name=f"<{name}>")
    elif "log_file" in case:
        file = base / str(case["log_file"])
        if not file.is_file():
            raise RuleSetupError(f"{where}: log_file {case['log_file']!r} not found")
        log = load([str(file)])
    else:
        raise RuleSetupError(f"{where}: case {name!r} needs 'log' or 'log_file'")
    expect = case.get("expect")
    if not isinstance(expect, list):
        raise RuleSetupError(f"{where}: case {name!r}: 'expect' must be a list ([] for none)")
    cfg = RuleConfig(path=where, rules=_merge(where, doc.get("config"), case.get("config")))
    options = RuleOptions(select=select, search_config=False)
    analysis = Analysis(log)
    found = run_selected(analysis, selected_rules(registry, options, cfg))
    findings = report_order(found, analysis.impact_per_basis, analysis.saving_per_basis)
    tolerance = case.get("tolerance", doc.get("tolerance", 0.01))
    if not isinstance(tolerance, int | float) or isinstance(tolerance, bool) or tolerance < 0:
        raise RuleSetupError(f"{where}: 'tolerance' must be a number >= 0")
    problems = _compare(expect, findings, tolerance, where)
    return CaseResult(name, not problems, problems, findings)


def _merge(where: str, *tables: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for table in tables:
        if not isinstance(table or {}, dict) or not all(
            isinstance(v or {}, dict) for v in (table or {}).values()
        ):
            raise RuleSetupError(f"{where}: 'config' maps rule names to their options")
        for rule, opts in (table or {}).items():
            out.setdefault(str(rule), {}).update(dict(opts or {}))
    return out


def _compare(expect: list, findings: list[Finding], tol: float, where: str) -> list[str]:
    left = list(findings)
    problems = []
    for item in expect:
        if isinstance(item, str):
            item = {"rule": item}
        if (
            not isinstance(item, dict)
            or "rule" not in item
            or set(item) - _EXPECT_KEYS
            or not isinstance(item.get("data") or {}, dict)
        ):
            raise RuleSetupError(
                f"{where}: each expected finding is a mapping with 'rule' "
                f"(and {', '.join(sorted(_EXPECT_KEYS - {'rule'}))})"
            )
        count = item.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 10_000:
            raise RuleSetupError(f"{where}: 'count' must be a whole number from 0 to 10,000")
        for _ in range(count):
            hit = next((f for f in left if _matches(item, f, tol)), None)
            if hit is None:
                problems.append(
                    f"expected {_describe(item)}; got {_summary(left) or 'no other finding'}"
                )
                break
            left.remove(hit)
    for f in left:
        problems.append(f"unexpected finding {f.rule} ({f.severity}): {f.message}")
    return problems


def _matches(item: dict, f: Finding, tol: float) -> bool:
    if f.rule != item["rule"] and f.code != item["rule"]:
        return False
    if "severity" in item and f.severity != item["severity"]:
        return False
    if "message_contains" in item and str(item["message_contains"]) not in f.message:
        return False
    return all(_close(f.data.get(k), v, tol) for k, v in (item.get("data") or {}).items())


def _close(got: Any, want: Any, tol: float) -> bool:
    if isinstance(want, bool) or not isinstance(want, int | float):
        return got == want
    if not isinstance(got, int | float) or isinstance(got, bool):
        return False
    return math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol * 1e-3)


def _describe(item: dict) -> str:
    extra = ", ".join(f"{k}={v!r}" for k, v in item.items() if k != "rule")
    return f"{item['rule']}" + (f" ({extra})" if extra else "")


def _summary(findings: list[Finding]) -> str:
    return "; ".join(f"{f.rule} ({f.severity}, data {f.data})" for f in findings)[:600]
