"""What an iteration would cost without a cause (``dnnlens project``,
:func:`dnnlens.project`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dnnlens.app.session import SessionError, Settings, open_inputs
from dnnlens.textsafe import safe


def projection(
    log: str,
    changes: Sequence[str] = (),
    machine: Any = None,
    measured: Sequence[str] = (),
) -> tuple[Any, Any]:
    """The :class:`~dnnlens.analysis.projection.Projection` of ``log`` and the analysis of
    its run (the one ``analyze`` reports: every input is opened as analyze opens it)
    (``changes``: change ids, see ``CHANGES``; empty: every change); :class:`SessionError`
    when a change is unknown or an input cannot be read."""
    from dnnlens.analysis.projection import CHANGES
    from dnnlens.analysis.projection import project as run_projection

    unknown = [c for c in changes if c not in CHANGES]
    if unknown:
        raise SessionError(f"unknown change {unknown[0]!r}: one of {', '.join(CHANGES)}")
    outcome = open_inputs([log], Settings(machine=machine), what="LOG")
    others = [open_inputs([m], Settings(), what="--measured") for m in measured]
    errors = [e for o in (outcome, *others) for e in o.log.input_errors] + [
        s.read_error for o in (outcome, *others) for s in o.log.scans if s.read_error
    ]
    if errors or not outcome.log.scans:
        raise SessionError("; ".join(errors) or f"cannot read {log}")
    analysis = outcome.single(f"LOG {safe(log)}", combine=False)
    measured_runs = [
        o.single(f"--measured {safe(m)}", combine=False)
        for o, m in zip(others, measured, strict=True)
    ]
    result = run_projection(analysis, list(changes) or list(CHANGES), measured_runs)
    return result, analysis
