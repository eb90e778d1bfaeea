"""A Python plugin cannot reach past its findings: what it prints is said escaped on stderr
after its name (``-f json`` stays JSON), what it changes in place is not seen by the rules
after it nor by the report, and an impact that is no part of its basis is refused like a
NaN one: one error finding of that rule, the rule's other findings kept (docs/rules.md,
"Limits").

Hand counts: ``sample_logs/convnet_nchw_infer.log`` has 165 exec lines whose times add up
to 356.0847 ms (``awk -F, '$4=="exec" {s+=$NF} END {print s}'``); its first three creation
lines (lines 8, 9, 12) make a log with no exec line, whose typical iteration is 0 ms.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_EXECS, NCHW_EXEC_MS = 165, 356.0847

HEADER = '''
import os
import sys
from dnnlens.rules import Rule


class Plugin(Rule):
    """A test plugin."""

    name = "test-plugin"
    code = "T001"
    severity = "info"

    def check(self, ctx):
'''


def plugin(tmp_path: Path, body: str, name: str = "plugin.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(body), " " * 8) + "\n")
    return path


def analyze_json(log: Path, *args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(app, ["analyze", "-f", "json", str(log), *args])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_what_a_plugin_prints_is_said_escaped_on_stderr_after_its_name(tmp_path: Path) -> None:
    body = """
    print("hi \\x1b]52;c;aGk=\\x07 there")
    sys.stderr.write("to stderr \\u202e\\n")
    os.write(1, b"from C \\x1b[2J\\n")
    for i in range(100):
        print(i)
    yield self.finding("done")
    """
    code, doc, err = analyze_json(NCHW, "--rules", str(plugin(tmp_path, body)))
    assert code == 0
    assert [f["message"] for f in doc["findings"] if f["rule"] == "test-plugin"] == ["done"]
    said = [line for line in err.splitlines() if "rule test-plugin" in line]
    assert said[:4] == [
        "dnnlens: note: rule test-plugin printed: hi \\x1b]52;c;aGk=\\x07 there",
        "dnnlens: note: rule test-plugin printed: to stderr \\u202e",
        "dnnlens: note: rule test-plugin printed: from C \\x1b[2J",
        "dnnlens: note: rule test-plugin printed: 0",
    ]
    assert len(said) == 21
    assert said[-1] == "dnnlens: note: rule test-plugin printed more (83 lines, 0 bytes) not shown"
    assert "\x1b" not in err and "\u202e" not in err


MUTATOR = '''
from dnnlens.rules import Rule


class Mutator(Rule):
    """Changes what it reads, in place."""

    name = "a-mutator"

    def check(self, ctx):
        ctx.execs["time_ms"] *= 1000
        ctx.stats.loc[:, "typical_ms"] = 0.0
        ctx.steady_execs["time_ms"] *= 1000
        ctx.analysis.events.drop(ctx.analysis.events.index, inplace=True)
        return []


class Reader(Rule):
    """Says what it reads."""

    name = "b-reader"

    def check(self, ctx):
        yield self.finding("read", data={
            "execs": len(ctx.execs),
            "exec_ms": float(ctx.execs["time_ms"].sum()),
            "typical_ms": float(ctx.stats["typical_ms"].sum()),
            "events": len(ctx.analysis.events),
        })
'''


def test_a_plugin_that_changes_what_it_reads_changes_nothing_after_it(tmp_path: Path) -> None:
    path = tmp_path / "mutator.py"
    path.write_text(MUTATOR)
    _, plain, _ = analyze_json(NCHW)
    code, doc, _ = analyze_json(NCHW, "--rules", str(path))
    assert code == 0
    (read,) = [f["data"] for f in doc["findings"] if f["rule"] == "b-reader"]
    assert read["execs"] == NCHW_EXECS
    assert read["exec_ms"] == pytest.approx(NCHW_EXEC_MS)
    assert read["typical_ms"] > 0 and read["events"] > NCHW_EXECS
    for key in ("summary", "primitives", "iterations"):
        assert doc[key] == plain[key], key


@pytest.fixture
def no_execs(tmp_path: Path) -> Path:
    lines = NCHW.read_text().splitlines(keepends=True)
    log = tmp_path / "creations.log"
    log.write_text("".join(lines[i - 1] for i in (8, 9, 12)))
    return log


@pytest.mark.parametrize(
    ("which", "impact", "basis"),
    [
        ("nchw", "-5", "iteration"),
        ("nchw", "-1e-3", "step"),
        ("nchw", "1e12", "iteration"),
        ("nchw", "float('inf')", "mean_pass"),
        ("nchw", "float('-inf')", "with_creations"),
        ("no_execs", "1e12", "iteration"),
        ("no_execs", "5", "step"),
        ("no_execs", "1e-9", "iteration"),
    ],
)
def test_an_impact_outside_its_basis_is_refused_like_a_nan_one(
    tmp_path: Path, no_execs: Path, which: str, impact: str, basis: str
) -> None:
    log = NCHW if which == "nchw" else no_execs
    body = f"""
    yield self.finding("odd", impact_ms={impact}, basis={basis!r})
    yield self.finding("none")
    """
    code, doc, _ = analyze_json(log, "--rules", str(plugin(tmp_path, body)))
    assert code == 0
    mine = [f for f in doc["findings"] if f["rule"] == "test-plugin"]
    assert [f["message"] for f in mine if f["severity"] != "error"] == ["none"]
    (refused,) = [f for f in mine if f["severity"] == "error"]
    assert refused["data"] == {"rule_error": True, "exception": "ImpactOutsideBasis"}
    assert "is not a part of its basis" in refused["message"]
    assert refused["impact_ms_per_iteration"] is None


def test_no_time_is_a_part_of_any_basis(tmp_path: Path, no_execs: Path) -> None:
    body = 'yield self.finding("zero", impact_ms=0.0)\nyield self.finding("neg", impact_ms=-0.0)'
    for log in (NCHW, no_execs):
        _, doc, _ = analyze_json(log, "--rules", str(plugin(tmp_path, body)))
        mine = [f for f in doc["findings"] if f["rule"] == "test-plugin"]
        assert [(f["message"], f["impact_ms_per_iteration"]) for f in mine] == [
            ("zero", 0.0),
            ("neg", 0.0),
        ]
