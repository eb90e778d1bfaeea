"""The CI formats: SARIF 2.1.0 (validated against OASIS's schema, offline), workflow
annotations (escaped as the workflow-command rules require, hostile rule text included) and
JUnit XML (parsed), for one run and for several.

Hand counts: ``convnet_nchw_infer.log`` gives DL002 layout-round-trip (a warning, holding
96% of the reorder time, so DL001 is folded into it) and DL003 weight-reorder-per-iteration
(info), the first evidence of DL002 being line 133 (a ``reorder`` exec line); the 20
built-in rules run on it. The producers directory is 9 runs.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.report.annotations import command, escape_data, escape_property
from dnnlens.report.sarif import artifact_uri

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_logs"
NCHW = str(S / "convnet_nchw_infer.log")
# OASIS sarif-spec, sarif-2.1/schema/sarif-schema-2.1.0.json (commit e058381)
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
BUILTIN_RULES = 20


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def _json(path: str) -> dict:
    code, out, _ = _run("analyze", path, "-f", "json", "-q")
    assert code == 0
    return json.loads(out)


def _valid(doc: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def test_sarif_of_one_run_is_valid_and_holds_every_finding():
    code, out, _ = _run("analyze", NCHW, "-f", "sarif", "-q")
    assert code == 0
    doc = json.loads(out)
    _valid(doc)
    (run,) = doc["runs"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["DL002", "DL003"]
    assert [r["level"] for r in results] == ["warning", "note"]
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "sample_logs/convnet_nchw_infer.log" or first[
        "artifactLocation"
    ]["uri"].endswith("/sample_logs/convnet_nchw_infer.log")
    assert first["region"]["startLine"] == 133
    line = Path(NCHW).read_text().splitlines()[132]
    assert ",exec," in line and ",reorder," in line
    rules = run["tool"]["driver"]["rules"]
    assert len(rules) == BUILTIN_RULES
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    # the figures are the JSON report's own
    findings = _json(NCHW)["findings"]
    assert [r["properties"]["share_of_basis"] for r in results] == [
        f["share_of_basis"] for f in findings
    ]
    assert "Fix: " in results[0]["message"]["text"]


def test_sarif_of_several_runs_is_one_tool_run_with_each_result_named_by_its_run():
    code, out, _ = _run("analyze", str(S / "producers"), "-f", "sarif", "-q")
    assert code == 0
    doc = json.loads(out)
    _valid(doc)
    assert len(doc["runs"]) == 1
    runs = _json(str(S / "producers"))["runs"]
    assert len(runs) == 9
    results = doc["runs"][0]["results"]
    assert len(results) == sum(len(r["findings"]) for r in runs)
    assert {r["properties"]["run"] for r in results} <= {r["run_name"] for r in runs}


def test_artifact_uris():
    assert artifact_uri("logs/a b.log") == "logs/a%20b.log"
    assert artifact_uri("/abs/x#1.log") == "file:///abs/x%231.log"
    # a file name that is not UTF-8: its bytes, percent-encoded
    assert artifact_uri("bad\udcff.log") == "bad%FF.log"


HOSTILE_RULE = """\
rules:
  - name: hostile
    code: EVIL1
    severity: error
    summary: "title, with: colon\\n::error::injected"
    fix: "100% sure\\r\\n::warning file=x::also injected \\u001b[2J"
    where: kind == "reorder"
    metrics:
      n: count()
    when: n > 0
    message: "50% of it\\n::error title=x::injected {n:.0f}"
"""


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[str, str]:
    rules = tmp_path / "hostile.yaml"
    rules.write_text(HOSTILE_RULE)
    log = tmp_path / "odd, name: 100%.log"
    shutil.copy(NCHW, log)
    return str(rules), str(log)


def test_annotations_escape_what_would_end_or_start_a_command(hostile):
    rules, log = hostile
    code, out, _ = _run(
        "analyze", log, "--rules", rules, "--select", "hostile,DL001", "-f", "github", "-q"
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2  # one finding each: no injected command made a line of its own
    assert all(line.startswith(("::error ", "::warning ")) for line in lines)
    evil = next(line for line in lines if "EVIL1" in line)
    head, message = evil.split("::", 2)[1:]
    assert head.startswith("error file=")
    assert "odd%2C name%3A 100%25.log" in head  # property: , : % escaped
    # the title is the summary's first line; the rest of it never reaches the command
    assert head.endswith("title=EVIL1 hostile%3A title%2C with%3A colon")
    assert message.startswith("50%25 of it%0A::error title=x::injected")
    assert "\x1b" not in evil and "\\x1b[2J" in evil
    assert "\n" not in evil and "\r" not in evil


def test_escaping_rules():
    assert escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert command("notice", "m", file="f", line=None, title="") == "::notice file=f::m"
    assert command("error", "x") == "::error::x"


def test_junit_is_one_case_per_rule_and_a_failure_per_rule_at_fail_on(hostile):
    code, out, _ = _run("analyze", NCHW, "-f", "junit", "-q")
    assert code == 0
    root = ET.fromstring(out)
    (suite,) = root
    cases = suite.findall("testcase")
    assert len(cases) == BUILTIN_RULES == int(suite.get("tests"))
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["DL002 layout-round-trip"]  # the warning
    info = next(c for c in cases if c.get("name") == "DL003 weight-reorder-per-iteration")
    assert info.find("failure") is None and "[info]" in info.find("system-out").text
    code, out, _ = _run("analyze", NCHW, "-f", "junit", "--fail-on", "info", "-q")
    assert code == 1
    assert ET.fromstring(out).get("failures") == "2"
    code, out, _ = _run("analyze", NCHW, "-f", "junit", "--fail-on", "error", "-q")
    assert code == 0 and ET.fromstring(out).get("failures") == "0"
    rules, log = hostile
    code, out, _ = _run("analyze", log, "--rules", rules, "--select", "hostile", "-f", "junit")
    root = ET.fromstring(out)  # parses: control characters were made visible
    failure = root.find(".//failure")
    assert failure is not None and "\\x1b[2J" in failure.text


def test_junit_of_several_runs_is_a_suite_per_run():
    code, out, _ = _run("analyze", str(S / "producers"), "-f", "junit", "-q")
    assert code == 0
    root = ET.fromstring(out)
    suites = root.findall("testsuite")
    assert len(suites) == 9
    assert all(len(s.findall("testcase")) >= BUILTIN_RULES for s in suites)
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    names = [s.get("name") for s in suites]
    assert len(set(names)) == 9 and not any(re.search(r"[\x00-\x1f]", n) for n in names)
