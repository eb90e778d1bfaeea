"""Two runs side by side (``dnnlens diff``, :func:`dnnlens.diff`): each side read and
analysed the same way, refused with one line when there is nothing to compare."""

from __future__ import annotations

from typing import Any

from dnnlens.app.session import SessionError, Settings, open_inputs
from dnnlens.textsafe import safe


def side(name: str, spec: str, quiet: bool = True, combine: bool = False) -> Any:
    """The prepared analysis of one side (``name``: BASE or NEW, for the message): the one
    run ``dnnlens analyze SPEC`` reports, opened by :func:`~dnnlens.app.session.open_inputs`
    with analyze's default settings, so its figures and findings are analyze's."""
    outcome = open_inputs([spec], Settings(combine=combine), quiet=quiet, what=name)
    log = outcome.log
    problems = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    if problems:
        raise SessionError(f"{name} " + safe("; ".join(p for p in problems if p)))
    analysis = outcome.single(f"{name} {safe(spec)}")
    if analysis.summary.exec_count == 0 and analysis.report_basis.unit != "step":
        raise SessionError(
            f"{name} {safe(spec)}: no primitive executions and no profiler trace or table "
            "with steps to compare"
        )
    return analysis


def compare(
    base: str, new: str, basis: str = "typical", quiet: bool = True, combine: bool = False
) -> Any:
    """The :class:`~dnnlens.analysis.diff.Diff` of two inputs; :class:`SessionError` when
    they cannot be compared."""
    from dnnlens.analysis.diff import BASES, diff_analyses

    if basis not in BASES:
        raise SessionError(f"--basis {basis!r}: typical or mean")
    if base == "-" and new == "-":
        raise SessionError("BASE and NEW cannot both be standard input")
    d = diff_analyses(side("BASE", base, quiet, combine), side("NEW", new, quiet, combine), basis)
    if d.unit != "step" and not (d.base.exec_count and d.new.exec_count):
        with_trace = "BASE" if d.base.step is not None else "NEW"
        other = "NEW" if with_trace == "BASE" else "BASE"
        raise SessionError(
            f"nothing to compare: {with_trace} is a profiler trace without primitive "
            f"executions, {other} has no profiler trace or table with steps"
        )
    return d
