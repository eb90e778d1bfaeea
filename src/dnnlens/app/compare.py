"""Two runs side by side (``dnnlens diff``, :func:`dnnlens.diff`): each side read and
analysed the same way, refused with one line when there is nothing to compare."""

from __future__ import annotations

from typing import Any

from dnnlens.app.session import SessionError
from dnnlens.textsafe import safe


def side(name: str, spec: str, quiet: bool = True) -> Any:
    """The prepared analysis of one side (``name``: BASE or NEW, for the message)."""
    from dnnlens.analysis.analysis import Analysis
    from dnnlens.report.console import load_inputs

    log = load_inputs([spec], quiet)
    problems = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    if (not log.scans and log.framework is None) or problems:
        raise SessionError(
            f"{name} " + safe("; ".join(p for p in problems if p) or f"{spec}: no input")
        )
    analysis = Analysis(log).prepare()
    if analysis.summary.exec_count == 0 and analysis.report_basis.unit != "step":
        raise SessionError(
            f"{name} {safe(spec)}: no primitive executions and no profiler trace or table "
            "with steps to compare"
        )
    return analysis


def compare(base: str, new: str, basis: str = "typical", quiet: bool = True) -> Any:
    """The :class:`~dnnlens.analysis.diff.Diff` of two inputs; :class:`SessionError` when
    they cannot be compared."""
    from dnnlens.analysis.diff import BASES, diff_analyses

    if basis not in BASES:
        raise SessionError(f"--basis {basis!r}: typical or mean")
    if base == "-" and new == "-":
        raise SessionError("BASE and NEW cannot both be standard input")
    d = diff_analyses(side("BASE", base, quiet), side("NEW", new, quiet), basis)
    if d.unit != "step" and not (d.base.exec_count and d.new.exec_count):
        with_trace = "BASE" if d.base.step is not None else "NEW"
        other = "NEW" if with_trace == "BASE" else "BASE"
        raise SessionError(
            f"nothing to compare: {with_trace} is a profiler trace without primitive "
            f"executions, {other} has no profiler trace or table with steps"
        )
    return d
