"""GitHub Actions workflow annotations: one ``::warning file=…,line=…,title=…::…`` line
per finding, so a pull request's diff view shows it at the evidence line.

Level: ``error``, ``warning``, ``notice`` for error, warning, info. ``file`` and ``line``:
the finding's first evidence line (a finding without evidence is put on its run's first
input, without a line). ``title``: the code, the rule and its title; the message: the
finding's message, then ``Fix:`` and its fix.

Escaping follows the workflow-command rules (GitHub's ``@actions/core`` ``escapeData`` and
``escapeProperty``): in the message ``%``, ``\\r`` and ``\\n`` become ``%25``, ``%0D``,
``%0A``; in a property also ``:`` and ``,`` (``%3A``, ``%2C``), so no text from a log can end
the command early or start another one (a rule's message with ``\\n::error::`` stays one
annotation). Every other character that is not printable is shown as an escape first
(:func:`dnnlens.textsafe.safe`), as everywhere else: a CI log is a terminal too.

``diff`` gives one annotation: the verdict, an error when ``--fail-if-slower`` fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dnnlens.report.ci_runs import CiRun, rule_id
from dnnlens.textsafe import safe_lines

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """A command's message, escaped (module docstring)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value, escaped (module docstring)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: Any) -> str:
    """One workflow command line: ``::level prop=value,...::message``."""
    props = ",".join(
        f"{key}={escape_property(safe_lines(value))}"
        for key, value in properties.items()
        if value not in (None, "")
    )
    head = f"::{level} {props}" if props else f"::{level}"
    return f"{head}::{escape_data(safe_lines(message))}"


def _finding_line(finding: dict[str, Any], run: CiRun) -> str:
    evidence = [e for e in finding.get("evidence") or [] if e.get("path")]
    path = evidence[0]["path"] if evidence else (run.inputs[0] if run.inputs else None)
    line = evidence[0].get("line") if evidence else None
    title = f"{rule_id(finding)} {finding.get('rule', '')}: {finding.get('title', '')}".strip()
    if run.name:
        title += f" [{run.name}]"
    message = str(finding.get("message") or finding.get("title") or "")
    if finding.get("fix"):
        message += f"\nFix: {finding['fix']}"
    return command(
        LEVELS.get(str(finding.get("severity")), "warning"),
        message,
        file=path,
        line=line if line and line > 0 else None,
        title=title,
    )


def render_annotations(runs: Sequence[CiRun]) -> str:
    """Every finding of ``runs`` as one annotation line each, in report order."""
    lines = [_finding_line(f, run) for run in runs for f in run.findings]
    return "".join(line + "\n" for line in lines)
