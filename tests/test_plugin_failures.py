"""Python plugins that break: each failure is one error finding of that rule, the run goes
on and the report is still written (docs/rules.md, "Limits"; docs/input-policy.md).

Every plugin below is written by the test itself into a temporary directory.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.rules.budget import RuleBudget
from dnnlens.rules.engine import RuleOptions, run_rules

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"

HEADER = """
import sys
import numpy as np
from dnnlens.rules import Rule, Finding


class Plugin(Rule):
    \"\"\"A test plugin.\"\"\"

    name = "test-plugin"
    code = "T001"
    severity = "info"

    def check(self, ctx):
"""

BODIES = {
    "returns a list of strings": 'return ["not a finding"]',
    "returns a string": 'return "oops"',
    "returns a number": "return 42",
    "a finding without a rule": 'yield Finding(None, "T001", "info", "m")',
    "a finding with a bad severity": 'yield Finding("test-plugin", "T001", "fatal", "m")',
    "a finding with bad evidence": 'yield self.finding("m", evidence=["run.log:3"])',
    "data holding an object": 'yield self.finding("m", data={"x": object()})',
    "data nested deeply": (
        "d = {}\nfor _ in range(100):\n    d = {'x': d}\nyield self.finding('m', data=d)"
    ),
    "raises a BaseException": "class Stop(BaseException):\n    pass\nraise Stop('out')",
    "calls sys.exit": "sys.exit(3)",
    "calls sys.exit(0)": "sys.exit(0)",
    "raises KeyError": "raise KeyError('k')",
}


def plugin(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "plugin.py"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(body), " " * 8) + "\n")
    return path


def analyze_json(*args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(app, ["analyze", "-f", "json", str(NCHW), *args])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_broken_plugin_is_one_error_finding(tmp_path: Path, case: str) -> None:
    code, doc, err = analyze_json("--rules", str(plugin(tmp_path, BODIES[case])))
    assert code == 0
    mine = [f for f in doc["findings"] if f["rule"] == "test-plugin"]
    assert len(mine) == 1, mine
    assert mine[0]["severity"] == "error"
    assert mine[0]["data"]["rule_error"] is True
    assert "failed while running" in mine[0]["message"]
    # the built-in rules still ran: this log has its reorder findings (tests/test_rules_cli.py)
    assert any(f["rule"] == "layout-round-trip" for f in doc["findings"])
    assert "running the Python rule file" in err


def test_numpy_values_in_data_are_plain_json(tmp_path: Path) -> None:
    body = (
        'yield self.finding("m", data={"n": np.int64(3), "x": np.float32(0.5), '
        '"ok": np.bool_(True), "v": np.arange(3), "line": ctx.execs["line"].max()})'
    )
    code, doc, _ = analyze_json("--rules", str(plugin(tmp_path, body)))
    assert code == 0
    (mine,) = [f for f in doc["findings"] if f["rule"] == "test-plugin"]
    assert mine["severity"] == "info"
    assert mine["data"]["n"] == 3 and mine["data"]["x"] == 0.5 and mine["data"]["ok"] is True
    assert mine["data"]["v"] == [0, 1, 2]
    assert isinstance(mine["data"]["line"], int)


@pytest.fixture(scope="module")
def analysis():  # noqa: ANN201 - an Analysis
    return Analysis(load([str(NCHW)]))


def only_plugin(analysis, path: Path, budget: RuleBudget) -> dict:  # noqa: ANN001
    findings = run_rules(analysis, RuleOptions(rule_paths=[str(path)], budget=budget))
    mine = [f for f in findings if f.rule == "test-plugin"]
    assert len(mine) == 1, mine
    assert any(f.rule == "reorder-overhead" for f in findings)
    return mine[0].to_json()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGALRM")
@pytest.mark.parametrize(
    "body",
    [
        "while True:\n    pass",
        "while True:\n    try:\n        sum(range(1000))\n    except Exception:\n        pass",
        "import time\ntime.sleep(60)",
    ],
)
def test_a_plugin_that_never_ends_is_stopped(tmp_path: Path, analysis, body: str) -> None:  # noqa: ANN001
    f = only_plugin(analysis, plugin(tmp_path, body), RuleBudget(seconds=0.2))
    assert f["severity"] == "error"
    assert "ran longer than its limit of 0.2 s" in f["message"]


def test_a_plugin_yielding_forever_is_cut(tmp_path: Path, analysis) -> None:  # noqa: ANN001
    body = 'while True:\n    yield self.finding("again")'
    f = only_plugin(analysis, plugin(tmp_path, body), RuleBudget(max_findings=50))
    assert "produced more than 50 findings" in f["message"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS")
def test_a_plugin_that_eats_memory_is_stopped(tmp_path: Path, analysis) -> None:  # noqa: ANN001
    body = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))"
    f = only_plugin(analysis, plugin(tmp_path, body), RuleBudget(memory_bytes=256 << 20))
    assert "memory limit of 256 MiB" in f["message"]
    big = bytearray(512 << 20)  # the limit is lifted once the rule is done
    assert len(big) == 512 << 20
