"""Rule files: the expression language, loading with line numbers, evaluation, templates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.reading import load
from dnnlens.rules import RuleOptions, RuleSetupError, expr, run_rules
from dnnlens.rules.declarative import load_rule_file, render

ROOT = Path(__file__).resolve().parent.parent
NCHW = str(ROOT / "sample_logs" / "convnet_nchw_infer.log")


@pytest.fixture(scope="module")
def nchw():
    return Analysis(load([NCHW]))


FRAME = pd.DataFrame(
    {
        "kind": pd.Categorical(["reorder", "convolution", "reorder", "eltwise"]),
        "impl": ["jit:uni", "jit:avx2", "simple:any", "ref:any"],
        "time_ms": [0.5, 2.0, 0.001, float("nan")],
        "steady": [True, True, False, True],
    }
)
SCOPE = expr.Scope(
    columns={"kind": expr.STR, "impl": expr.STR, "time_ms": expr.NUM, "steady": expr.BOOL},
    scalars={"total_ms": expr.NUM, "threshold": expr.NUM},
)


def rows(text: str) -> list[bool]:
    node = expr.parse(text)
    assert expr.check(node, SCOPE, "row") == expr.BOOL
    return expr._mask(expr.eval_rows(node, FRAME, {"threshold": 0.1}), FRAME.index).tolist()


def scalar(text: str):
    node = expr.parse(text)
    expr.check(node, SCOPE, "scalar")
    return expr.eval_scalar(
        node, {"total_ms": 2.501, "threshold": 0.1}, expr.AggregateInput(FRAME, 2.501)
    )


def test_row_filters() -> None:
    assert rows('kind == "reorder" and time_ms > 0.01') == [True, False, False, False]
    assert rows("kind in ['eltwise', 'convolution'] or not steady") == [False, True, True, True]
    assert rows('startswith(impl, "jit") and not (time_ms >= threshold * 10)') == [
        True,
        False,
        False,
        False,
    ]
    assert rows('matches(impl, "^(ref|simple)") and kind != "reorder"') == [
        False,
        False,
        False,
        True,
    ]
    assert rows("isnan(time_ms)") == [False, False, False, True]
    assert rows('contains(lower(kind), "ORDER") == false') == [True, True, True, True]


def test_aggregates_and_arithmetic() -> None:
    assert scalar("count()") == 4
    assert scalar('count(kind == "reorder")') == 2
    assert scalar("sum(time_ms) / total_ms") == pytest.approx(2.501 / 2.501)
    assert scalar('share(kind == "convolution")') == pytest.approx(2.0 / 2.501)
    assert scalar("max(time_ms)") == 2.0 and scalar("min(time_ms, steady)") == 0.5
    assert scalar("p50(time_ms)") == pytest.approx(0.5)
    assert scalar("percentile(time_ms, 100)") == pytest.approx(2.0)
    assert scalar("distinct(kind)") == 3
    assert scalar("round(least(3, 2.5, 4) * 2 % 4, 1) + abs(-1)") == pytest.approx(2.0)
    assert scalar("-1 + 2 * 3 - 4 / 2") == pytest.approx(3.0)
    assert scalar("1 / 0 > 0") is False  # NaN never fires


@pytest.mark.parametrize(
    "text, mode, message",
    [
        ("time_ms >", "row", "unexpected end of expression"),
        ("time_ms > > 1", "row", "unexpected '>'"),
        ("kind == 'a' $", "row", "unexpected character '$'"),
        ("tim_ms > 1", "row", "did you mean 'time_ms'"),
        ("time_ms > 1", "scalar", "is a column"),
        ("kind > 1", "row", "cannot compare"),
        ('kind < "b"', "row", "use == or !="),
        ("sum(kind)", "scalar", "needs a number column"),
        ("count(time_ms)", "scalar", "must be true/false"),
        ("sum()", "scalar", "takes 1 to 2 arguments"),
        ("eval('1')", "scalar", "unknown function 'eval'"),
        ("__import__('os')", "row", "unknown function"),
        ("kind.__class__", "row", "unexpected character '.'"),
        ("kind in 3", "row", "needs a list"),
        ('matches(kind, "(")', "row", "bad regular expression"),
    ],
)
def test_mistakes_are_caught_before_running(text: str, mode: str, message: str) -> None:
    with pytest.raises(expr.ExprError, match=message.replace("(", r"\(").replace("$", r"\$")):
        expr.check(expr.parse(text), SCOPE, mode)


def test_templates_only_format_names() -> None:
    env = {"share": 0.3456, "n": 3, "what": "reorder", "gone": None}
    assert render("{what}: {share:.1%} of {n} ({gone:.2f})", env) == "reorder: 34.6% of 3 (nan)"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


GOOD = """\
rules:
  - name: reorder-share
    code: T001
    severity: info
    where: kind == "reorder"
    options: {threshold: 0.5}
    metrics:
      share: share()
      n: count()
    when: share > threshold
    message: "reorders take {share:.0%} ({n} calls)"
  - name: per-kind
    table: primitives
    group_by: kind
    metrics: {ms: sum(time_ms)}
    when: ms > 100
    message: "{kind}: {ms:.0f} ms"
"""


def test_a_yaml_rule_file_runs(nchw, tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", GOOD)
    found = run_rules(
        nchw, RuleOptions(rule_paths=[path], select=["T001", "per-kind"], search_config=False)
    )
    by = {(f.rule, f.message) for f in found}
    assert ("reorder-share", "reorders take 69% (121 calls)") in by
    assert ("per-kind", "reorder: 246 ms") in by and ("per-kind", "convolution: 110 ms") in by
    share = next(f for f in found if f.rule == "reorder-share")
    assert share.severity == "info" and share.data["n"] == 121 and len(share.evidence) == 3
    # thresholds are configurable like a built-in's
    cfg = write(tmp_path, "dnnlens.toml", "[rules.reorder-share]\nthreshold = 0.8\n")
    found = run_rules(
        nchw, RuleOptions(rule_paths=[path], select=["reorder-share"], config_path=cfg)
    )
    assert found == []


def test_a_toml_rule_file_runs(nchw, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.toml",
        """\
[[rules]]
name = "weights"
table = "reorders"
where = 'tensor == "weight" and steady'
metrics = { n = "count()" }
when = "n >= 4"
message = "{n} weight reorders"
""",
    )
    found = run_rules(nchw, RuleOptions(rule_paths=[path], select=["weights"], search_config=False))
    assert [f.message for f in found] == ["4 weight reorders"]


@pytest.mark.parametrize(
    "text, where",
    [
        ("rules:\n  - name: x\n    when: count( > 1\n    message: m\n", "r.yaml:3: rule 'x': when"),
        (
            "rules:\n  - name: x\n    where: kund == 1\n    when: true\n    message: m\n",
            "r.yaml:3: rule 'x': where: unknown name 'kund'",
        ),
        (
            "rules:\n  - name: x\n    when: true\n    message: '{nope}'\n",
            "r.yaml:4: rule 'x': message",
        ),
        ("rules:\n  - name: x\n    when: true\n    message: '{total_ms:d}'\n", "r.yaml:4"),
        ("rules:\n  - name: x\n    when: true\n    mesage: m\n", "r.yaml:4: rule 'x': unknown key"),
        ("rules:\n  - name: X Y\n    when: true\n    message: m\n", "r.yaml:2: rule name"),
        (
            "rules:\n  - name: x\n    table: nodes\n    when: true\n    message: m\n",
            "r.yaml:3: rule 'x': unknown table",
        ),
        ("rules:\n  - name: x\n    message: m\n", "r.yaml:2: rule 'x': 'when'"),
        ("rules:\n  - name: x\n    when: sum(time_ms)\n    message: m\n", "must be true/false"),
        ("rules:\n  - name: x\n   when: [\n", "r.yaml:3: not valid YAML"),
        ("rulez: []\n", "r.yaml:1: unknown top-level key 'rulez'"),
    ],
)
def test_broken_rule_files_name_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, "r.yaml", text)
    with pytest.raises(RuleSetupError) as info:
        load_rule_file(path)
    assert where in str(info.value)
    assert "\n" not in str(info.value)


def test_toml_errors_name_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.toml",
        '[[rules]]\nname = "a"\nwhen = "true"\nmessage = "m"\n\n'
        '[[rules]]\nname = "b"\nwhen = "count( > 1"\nmessage = "m"\n',
    )
    with pytest.raises(RuleSetupError, match=r"r.toml:8: rule 'b': when"):
        load_rule_file(path)


def test_a_runtime_failure_is_an_error_finding_and_others_run(nchw, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.yaml",
        """\
name: bad-percentile
metrics: {q: "percentile(time_ms, 'high')"}
when: q > 1
message: "{q}"
""",
    )
    found = run_rules(nchw, RuleOptions(rule_paths=[path], search_config=False))
    err = [f for f in found if f.rule == "bad-percentile"]
    assert err and err[0].severity == "error" and "failed while running" in err[0].message
    assert str(path) in err[0].message
    assert "layout-round-trip" in [f.rule for f in found]


def test_group_by_without_a_value_is_a_setup_error(tmp_path) -> None:
    """Found by the rule-file fuzzer: ``group_by:`` with nothing after it."""
    from dnnlens.rules.declarative import load_rule_file
    from dnnlens.rules.errors import RuleSetupError

    path = tmp_path / "r.yaml"
    path.write_text("name: slow-reorders\nseverity: info\ngroup_by:\n")
    with pytest.raises(RuleSetupError, match="group_by must be a column name"):
        load_rule_file(str(path))
