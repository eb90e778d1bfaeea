"""Fuzzing rule files: mutated YAML and TOML rules load as rules or fail as one
:class:`RuleSetupError`, and whatever loads runs to findings within its budget, never a
traceback, a hang or output a report cannot hold (docs/input-policy.md, "Fuzzing").

The seeds are ``tests/rules/team_rules.yaml`` and the rules below (the worked examples of
docs/rules.md in short); the mutations add what a hostile file holds: aliases, huge
numbers and widths, deep nesting, catastrophic patterns, other scripts' digits, tags.
``DNNLENS_FUZZ_EXAMPLES`` raises the number of examples, as for the line fuzzer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dnnlens.analysis.analysis import Analysis
from dnnlens.reading import load
from dnnlens.report.json_safe import json_safe
from dnnlens.rules.budget import RuleBudget
from dnnlens.rules.declarative import DeclarativeRule, load_rule_file
from dnnlens.rules.engine import run_selected
from dnnlens.rules.errors import RuleSetupError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("DNNLENS_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SEEDS_YAML = [
    (ROOT / "tests" / "rules" / "team_rules.yaml").read_text(),
    """\
name: slow-reorders
severity: info
where: kind == "reorder" and time_ms > 0.01
group_by: [impl]
metrics: {n: count(), ms: sum(time_ms), p: p95(time_ms)}
when: n > 0 and ms > 0
message: "{impl}: {n} reorders, {ms:.3f} ms (p95 {p:.3f})"
""",
    """\
rules:
  - name: matches-ref
    where: matches(impl, "^(ref|gemm:ref)") or contains(impl, "simple")
    when: share() > 0.0
    message: "{total_ms:.2f}"
""",
]
SEED_TOML = """\
[[rules]]
name = "steady-weight-reorders"
table = "reorders"
where = 'tensor == "weight" and steady'
group_by = "dims"
metrics = { n = "count()", per_iteration_ms = "sum(iter_ms)" }
when = "n > 0"
message = "weights {dims} reordered {n} time(s) ({per_iteration_ms:.3f} ms)"
"""
HOSTILE = [
    "&a [1, 2, 3]",
    " *a",
    "<<: *a",
    "{total_ms:>999999999}",
    "{total_ms:.99999f}",
    "{n:,}",
    'matches(impl, "(a+)+$")',
    'matches(impl, "(a)\\\\1")',
    "- " * 200,
    "not " * 200,
    "abs(" * 150,
    "[" * 300,
    "9" * 5000,
    "1e999",
    "\u0661\u0662",
    "\uff11",
    "!!python/object/apply:os.system ['true']",
    "!!binary aGVsbG8=",
    "\t",
    "\x1b[2J",
    "\u202e",
    ": :",
    "{{",
    "}",
    "'",
    '"',
    "m0 * m0 * m0 * m0",
    "count() / 0",
    "percentile(time_ms, 1e300)",
    "round(total_ms, 999999999999)",
    "least(" + "1, " * 60 + "1)",
]


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "replace", "drop", "repeat", "cut", "swap"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "insert" and lines:
            line = lines[i]
            pos = draw(st.integers(0, len(line)))
            lines[i] = line[:pos] + draw(st.sampled_from(HOSTILE)) + line[pos:]
        elif kind == "replace" and lines and ":" in lines[i]:
            key, _, _ = lines[i].partition(":")
            lines[i] = f"{key}: {draw(st.sampled_from(HOSTILE))}"
        elif kind == "drop" and lines:
            del lines[i]
        elif kind == "repeat" and lines:
            lines[i:i] = [lines[i]] * draw(st.sampled_from([2, 50]))
        elif kind == "cut":
            text = "\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].splitlines()
        elif kind == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


@st.composite
def rule_file(draw: st.DrawFn) -> tuple[str, str]:
    if draw(st.booleans()):
        return ".toml", draw(mutated(SEED_TOML))
    return ".yaml", draw(mutated(draw(st.sampled_from(SEEDS_YAML))))


ANALYSIS = Analysis(load([str(ROOT / "sample_logs" / "convnet_nchw_infer.log")]))


@FUZZ
@given(rule_file())
def test_a_mutated_rule_file_loads_or_is_one_setup_error(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]
) -> None:
    suffix, text = case
    path = tmp_path_factory.mktemp("fuzz") / f"rules{suffix}"
    path.write_text(text, encoding="utf-8")
    try:
        specs, _tests = load_rule_file(str(path))
    except RuleSetupError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message.strip()
        return
    rules = [DeclarativeRule(spec) for spec in specs]
    for rule in rules:
        rule.source = str(path)
    findings = run_selected(ANALYSIS, rules, RuleBudget(seconds=5, max_findings=100))
    for f in findings:
        assert isinstance(f.message, str) and len(f.message) <= 20_000
        json.dumps(json_safe(f.to_json()), allow_nan=False)
