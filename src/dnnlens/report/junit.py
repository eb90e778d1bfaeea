"""JUnit XML, the test report every CI reads (GitLab's test reports, Jenkins, Azure).

One ``testsuite`` per run of the inputs; in it one ``testcase`` per rule that ran
(``classname`` ``dnnlens.<run>``, ``name`` ``<code> <rule>``). A rule with findings at or
above the threshold (``--fail-on``; ``warning`` when it is not given, as a test report is
read for what fails) has one ``failure`` element: its message the first such finding's
title and how many there are, its text every such finding (message, fix, evidence file:line),
one paragraph each (JUnit readers show one failure per test case). Findings below the
threshold go to the test case's ``system-out``; a rule without findings passes.

``diff`` is one test case, ``dnnlens.diff``, failed when ``--fail-if-slower`` fails.

Text from logs is XML-escaped by the writer; characters XML 1.0 cannot hold at all (most
control characters, lone surrogates of a file name) are shown as escapes first
(:func:`dnnlens.textsafe.safe`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from dnnlens.report.ci_runs import CiRun, at_or_above
from dnnlens.textsafe import safe_lines


def _finding_text(f: dict[str, Any]) -> str:
    lines = [f"[{f.get('severity')}] {f.get('message') or f.get('title')}"]
    if f.get("fix"):
        lines.append(f"Fix: {f['fix']}")
    for e in f.get("evidence") or []:
        lines.append(f"  at {e.get('path')}:{e.get('line')}")
    return safe_lines("\n".join(lines))


def _suite(run: CiRun, threshold: str) -> ET.Element:
    name = run.name or ", ".join(run.inputs) or "dnnlens"
    suite = ET.Element("testsuite", name=safe_lines(name))
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for f in run.findings:
        by_rule.setdefault(str(f.get("rule")), []).append(f)
    cases = [(r.name, r.code) for r in run.rules]
    known = {n for n, _ in cases}
    cases += [(n, str(fs[0].get("code") or "")) for n, fs in by_rule.items() if n not in known]
    failures = 0
    for rule, code in cases:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=safe_lines(f"dnnlens.{run.name}" if run.name else "dnnlens"),
            name=safe_lines(f"{code} {rule}".strip()),
        )
        found = by_rule.get(rule, [])
        failing = [f for f in found if at_or_above(str(f.get("severity")), threshold)]
        if failing:
            failures += 1
            more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
            failure = ET.SubElement(
                case,
                "failure",
                message=safe_lines(f"{failing[0].get('title') or failing[0].get('message')}{more}"),
                type=str(failing[0].get("severity")),
            )
            failure.text = "\n\n".join(_finding_text(f) for f in failing)
        rest = [f for f in found if f not in failing]
        if rest:
            ET.SubElement(case, "system-out").text = "\n\n".join(map(_finding_text, rest))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    return suite


def junit_tree(runs: Sequence[CiRun], threshold: str) -> ET.Element:
    """The ``testsuites`` element of ``runs`` (module docstring)."""
    root = ET.Element("testsuites", name="dnnlens")
    for run in runs:
        root.append(_suite(run, threshold))
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in root)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    return root


def render_junit(runs: Sequence[CiRun], threshold: str) -> str:
    """The JUnit XML document of ``runs``."""
    tree = junit_tree(runs, threshold)
    ET.indent(tree)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(tree, "unicode") + "\n"


def diff_junit(verdict: str, failed: bool, details: str, skipped: bool = False) -> str:
    """``diff``'s test report: one test case, failed when the gate failed, skipped when it
    was not applied (the measurement cannot answer: ``Diff.gate``)."""
    root = ET.Element("testsuites", name="dnnlens", tests="1", failures=str(int(failed)))
    suite = ET.SubElement(
        root, "testsuite", name="dnnlens diff", tests="1", failures=str(int(failed))
    )
    case = ET.SubElement(suite, "testcase", classname="dnnlens.diff", name="diff")
    if skipped:
        ET.SubElement(case, "skipped", message=safe_lines(details))
    elif failed:
        ET.SubElement(
            case, "failure", message=safe_lines(verdict), type="slower"
        ).text = safe_lines(details)
    else:
        ET.SubElement(case, "system-out").text = safe_lines(f"{verdict}\n{details}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
