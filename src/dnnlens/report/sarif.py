"""SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), for code-scanning UIs.

One SARIF run (dnnlens, one tool invocation) holds every dnnlens run of the inputs: a
code-scanning service takes one run per tool and category. Its ``tool.driver.rules`` are
the rules that ran, each with its summary and its docstring (rationale and fix) as help;
each finding is one result:

* ``ruleId``: the rule's code (``DL001``), ``ruleIndex`` its place in the driver's rules;
* ``level``: ``error``, ``warning``, ``note`` for error, warning, info;
* ``message.text``: the finding's message, then ``Fix:`` and its fix;
* ``locations``: its first evidence line (``artifactLocation.uri`` the input as given:
  a relative path as a relative URI, an absolute one as a ``file://`` URI, bytes that are
  not UTF-8 percent-encoded as they are on disk; ``region.startLine``), the rest of its
  evidence as ``relatedLocations``; a finding without evidence is located at its run's
  first input;
* ``properties``: the rule name, the dnnlens run, the time per iteration, the one share
  and its basis (the JSON report's own figures).

Text is copied as the JSON report holds it: JSON escapes it, and a SARIF viewer shows it as
text (``message.text``, never ``markdown``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from dnnlens.report.ci_runs import CiRun, every_rule, rule_id

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def artifact_uri(path: str) -> str:
    """``path`` as a SARIF artifact URI (RFC 3986): relative paths stay relative, absolute
    ones become ``file://`` URIs; every byte that is not safe in a URI is percent-encoded,
    a file name's non-UTF-8 bytes included (``os.fsencode`` gives them back)."""
    raw = os.fsencode(path)
    if os.path.isabs(path):
        return "file://" + quote(raw, safe="/")
    return quote(raw.replace(b"\\", b"/"), safe="/")


def _location(path: str, line: int | None, index: int | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path)}}
    if line and line > 0:
        physical["region"] = {"startLine": int(line)}
    out: dict[str, Any] = {"physicalLocation": physical}
    if index is not None:
        out["id"] = index
    return out


def _descriptor(rule: Any) -> dict[str, Any]:
    return {
        "id": rule.code or rule.name,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": rule.description or rule.summary or rule.name},
        "help": {"text": rule.description or rule.summary or rule.name},
        "defaultConfiguration": {"level": LEVELS.get(rule.severity, "warning")},
    }


def _result(finding: dict[str, Any], run: CiRun, index: int | None) -> dict[str, Any]:
    evidence = [e for e in finding.get("evidence") or [] if e.get("path")]
    text = str(finding.get("message") or finding.get("title") or finding.get("rule"))
    if finding.get("fix"):
        text += f"\n\nFix: {finding['fix']}"
    result: dict[str, Any] = {
        "ruleId": rule_id(finding),
        "level": LEVELS.get(str(finding.get("severity")), "warning"),
        "message": {"text": text},
    }
    if index is not None:
        result["ruleIndex"] = index
    if evidence:
        first = evidence[0]
        result["locations"] = [_location(first["path"], first.get("line"))]
        if len(evidence) > 1:
            result["relatedLocations"] = [
                _location(e["path"], e.get("line"), i) for i, e in enumerate(evidence[1:])
            ]
    elif run.inputs:
        result["locations"] = [_location(run.inputs[0], None)]
    properties = {
        "rule": finding.get("rule"),
        "severity": finding.get("severity"),
        "impact_ms_per_iteration": finding.get("impact_ms_per_iteration"),
        "share_of_basis": finding.get("share_of_basis"),
        "basis": finding.get("basis"),
    }
    if run.name:
        properties["run"] = run.name
    result["properties"] = {k: v for k, v in properties.items() if v is not None}
    return result


def sarif_doc(runs: Sequence[CiRun], version: str) -> dict[str, Any]:
    """The SARIF log of ``runs`` (module docstring)."""
    rules = every_rule(runs)
    descriptors = [_descriptor(r) for r in rules]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    results = [_result(f, run, index.get(rule_id(f))) for run in runs for f in run.findings]
    artifacts = sorted({p for run in runs for p in run.inputs})
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dnnlens",
                        "version": version,
                        "rules": descriptors,
                    }
                },
                "artifacts": [{"location": {"uri": artifact_uri(p)}} for p in artifacts],
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def render_sarif(runs: Sequence[CiRun], version: str) -> str:
    """The SARIF log as JSON text (numbers that are not finite are left out: SARIF
    property bags are JSON)."""
    return json.dumps(_finite(sarif_doc(runs, version)), indent=2, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), -float("inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items() if _finite(v) is not None}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
