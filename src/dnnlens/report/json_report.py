"""The JSON report. Keys named in the project's issues are contracts: add, never rename."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from dnnlens._version import __version__
from dnnlens.analysis.result import Analysis
from dnnlens.parsers.scanner import InputScan
from dnnlens.report.json_safe import json_safe

MALFORMED_LISTED = 100


def input_json(scan: InputScan, reasons: list[str]) -> dict[str, Any]:
    """One entry of ``inputs``: the line accounting and header of one input."""
    h = scan.header
    malformed = [
        {"line": int(line), "reason": reasons[int(r)], "text": scan.malformed_text.get(line)}
        for line, r in zip(
            scan.malformed_line[:MALFORMED_LISTED],
            scan.malformed_reason[:MALFORMED_LISTED],
            strict=True,
        )
    ]
    return {
        "path": scan.path,
        "lines": scan.lines,
        "parsed_lines": scan.parsed,
        "foreign_lines": scan.foreign,
        "malformed_lines": scan.malformed,
        "families": scan.family_names,
        "onednn_version": h.version,
        "commit": h.commit,
        "runtime": h.runtime,
        "threads": h.threads,
        "isa": h.isa,
        "gpu_runtime": h.gpu_runtime,
        "header_count": h.header_count,
        "prefixed_lines": scan.prefixed,
        "gzip": scan.gzip,
        "invalid_utf8_bytes": scan.invalid_utf8_bytes,
        "nul_lines": scan.nul_lines,
        "read_notes": list(scan.read_notes),
        "read_error": scan.read_error,
        "malformed": malformed,
    }


def to_json_dict(analysis: Analysis) -> dict[str, Any]:
    """The whole report as plain data."""
    log = analysis.log
    summary = asdict(analysis.summary)
    doc: dict[str, Any] = {
        "dnnlens_version": __version__,
        "inputs": [input_json(s, log.reasons) for s in log.scans],
        "input_errors": list(log.input_errors),
        "summary": summary,
        "findings": [f.to_json() for f in analysis.findings],
    }
    doc.update(analysis.extras)
    return json_safe(doc)


def render_json(analysis: Analysis) -> str:
    """The JSON report as text."""
    return json.dumps(to_json_dict(analysis), indent=2)
