"""What an iteration would cost without a cause (``dnnlens project``,
:func:`dnnlens.project`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dnnlens.app.session import SessionError


def projection(
    log: str,
    changes: Sequence[str] = (),
    machine: Any = None,
    measured: Sequence[str] = (),
) -> tuple[Any, Any]:
    """The :class:`~dnnlens.analysis.projection.Projection` of ``log`` and the log read
    (``changes``: change ids, see ``CHANGES``; empty: every change); :class:`SessionError`
    when a change is unknown or an input cannot be read."""
    from dnnlens.analysis.analysis import Analysis, AnalysisOptions
    from dnnlens.analysis.projection import CHANGES
    from dnnlens.analysis.projection import project as run_projection
    from dnnlens.reading import load

    unknown = [c for c in changes if c not in CHANGES]
    if unknown:
        raise SessionError(f"unknown change {unknown[0]!r}: one of {', '.join(CHANGES)}")
    parsed = load([log])
    others = [load([m]) for m in measured]
    errors = [e for p in (parsed, *others) for e in p.input_errors] + [
        s.read_error for p in (parsed, *others) for s in p.scans if s.read_error
    ]
    if errors or not parsed.scans:
        raise SessionError("; ".join(errors) or f"cannot read {log}")
    analysis = Analysis(parsed, AnalysisOptions(machine=machine)).prepare()
    result = run_projection(analysis, list(changes) or list(CHANGES), [Analysis(o) for o in others])
    return result, parsed
