"""Rule files that would exhaust the machine: each is one line naming the file, exit 2, at
load; or, for what only running can show, a rule that still ends (docs/rules.md, "Limits").

Every file is written by the test itself (a few lines each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
name: laughs
when: "true"
message: "x"
"""


def rule(**keys: str) -> str:
    """A YAML rule with ``keys`` over a minimal valid one."""
    base = {"name": "r", "severity": "info", "when": "true", "message": "fired"}
    base.update(keys)
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in base.items())


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def setup_error(path: Path, *command: str) -> str:
    """The one error line of ``command`` on the rule file ``path``; exit code 2."""
    result = invoke(*command)
    assert result.exit_code == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"dnnlens: error: {path}")
    return line


BROKEN = {
    "billion laughs": (BILLION_LAUGHS, "aliases"),
    "nested lists": ("x: " + "[" * 5_000 + "]" * 5_000 + "\n", "nested"),
    "a key that is a list": ("? [a, b]\n: 1\n", "a key must be text"),
    "an integer of 5000 digits": ("name: r\nwhen: 'true'\nmessage: m\nevidence: " + "9" * 5000, ""),
    "a message width of a gigabyte": (rule(message="{total_ms:>999999999}"), "width over 200"),
    "a message precision of a gigabyte": (rule(message="{total_ms:.999999999f}"), "precision"),
    "20,000 nested unary operators": (rule(when="- " * 20_000 + "1 > 0"), "when"),
    "120 nested calls": (rule(when="abs(" * 120 + "1" + ")" * 120 + " > 0"), "nested"),
    "an integer literal beyond 64 bits": (rule(when="9" * 30 + " > 0"), "64 bits"),
    "a number literal of 5000 digits": (rule(when="1." + "0" * 5000 + " > 0"), "longer"),
    "Arabic-Indic digits in an expression": (rule(when="\u0661 > 0"), "unexpected character"),
    "a backreference (not linear-time)": (
        rule(where='matches(impl, "(a)\\\\1")'),
        "RE2",
    ),
    "a control character (found by the rule-file fuzzer)": (
        rule(summary="x") + "fix: \x1b[2J\n",
        "not valid YAML",
    ),
    "an option of 100 digits": ("options: {t: " + "9" * 100 + "}\n" + rule(), "64 bits"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("command", ["analyze", "rules list", "rules test"])
def test_a_hostile_rule_file_is_one_line(tmp_path: Path, case: str, command: str) -> None:
    text, words = BROKEN[case]
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    if command == "analyze":
        line = setup_error(path, "analyze", str(NCHW), "--rules", str(path))
    elif command == "rules list":
        line = setup_error(path, "rules", "list", "--rules", str(path))
    else:
        path.write_text(text + "tests:\n  - log: x\n    expect: []\n", encoding="utf-8")
        line = setup_error(path, "rules", "test", str(path))
    assert words in line


def test_billion_laughs_through_a_found_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "laughs.yaml").write_text(BILLION_LAUGHS)
    (tmp_path / "dnnlens.toml").write_text('rule-files = ["laughs.yaml"]\n')
    monkeypatch.chdir(tmp_path)
    line = setup_error(tmp_path / "laughs.yaml", "analyze", str(NCHW))
    assert "aliases" in line


def test_a_deep_toml_configuration_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "dnnlens.toml"
    path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "nested" in setup_error(path, "analyze", str(NCHW), "--config", str(path))


def findings_of(path: Path, log: Path = NCHW) -> list[dict]:
    result = invoke("analyze", "-f", "json", str(log), "--rules", str(path))
    assert result.exit_code == 0, result.stderr
    return [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "r"]


def test_integer_squaring_across_metrics_ends_in_a_float(tmp_path: Path) -> None:
    """``count() + 10`` squared 40 times would be a number of 10^12 digits."""
    metrics = "".join(f"  m{i}: m{i - 1} * m{i - 1}\n" for i in range(1, 41))
    text = (
        "name: r\nseverity: info\nmetrics:\n  m0: count() + 10\n"
        + metrics
        + "when: m40 > 0\nmessage: '{m40}'\n"
    )
    path = tmp_path / "r.yaml"
    path.write_text(text)
    (f,) = findings_of(path)
    assert f["message"] == "inf" and f["data"]["m40"] is None  # JSON: inf is null


def test_catastrophic_backtracking_pattern_is_linear(tmp_path: Path) -> None:
    """``(x+x+)+y`` on an implementation name of 5,000 ``x``: exponential for Python's
    ``re``, linear for RE2. The line is the sample log's reorder line with that impl."""
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,reorder," + "x" * 5000 + ",undef,"
        "src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,16x3x3x3,"
        "0.25\n"
    )
    log = tmp_path / "x.log"
    log.write_text(line * 3)
    path = tmp_path / "r.yaml"
    path.write_text(rule(where='matches(impl, "(x+x+)+y")', when="count() > 0"))
    assert findings_of(path, log) == []
    path.write_text(rule(where='matches(impl, "^(x+x+)+$")', when="count() > 0"))
    assert len(findings_of(path, log)) == 1


@pytest.mark.parametrize(
    "case",
    [
        "  - log: x\n    expect: []\n    tolerance: lots\n",
        "  - log: x\n    expect: [{rule: r, count: many}]\n",
        "  - log: x\n    expect: [{rule: r, count: 1000000000}]\n",
        "  - log: x\n    expect: [{rule: r, data: [1, 2]}]\n",
        "  - log: x\n    expect: []\n    config: [1, 2]\n",
        "  - log: x\n    expect: []\n    config: {r: 5}\n",
    ],
)
def test_rules_test_on_bad_cases_is_one_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(rule() + "tests:\n" + case)
    setup_error(path, "rules", "test", str(path))


def test_flow_nesting_is_counted_before_yaml_reads_it() -> None:
    """5,000 ``[`` made PyYAML's scanner work for seconds before the depth limit: the
    brackets are counted first and the line named; brackets in quotes and comments are
    text, and 64 levels are still a document."""
    from dnnlens.rules.errors import RuleSetupError
    from dnnlens.rules.yamlsrc import MAX_DEPTH, load_yaml

    with pytest.raises(RuleSetupError, match=r"^deep\.yaml:3: nested more than 64 levels"):
        load_yaml("a: 1\nb: 2\nx: " + "[" * 5_000 + "]" * 5_000 + "\n", "deep.yaml")
    quoted = 'a: "' + "[" * 100 + '"  # ' + "{" * 100 + "\nb: '" + "[" * 100 + "'\n"
    assert load_yaml(quoted, "q.yaml") == {"a": "[" * 100, "b": "[" * 100}
    deepest = load_yaml("x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n", "ok.yaml")
    assert isinstance(deepest["x"], list)
