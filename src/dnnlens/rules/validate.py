"""What a rule returns, checked before any report sees it.

A finding must be a :class:`~dnnlens.analysis.findings.Finding` with text where text goes,
a known severity, evidence of ``(path, line)`` and ``data`` that JSON can hold. NumPy
scalars and small arrays in ``data`` (what pandas hands a plugin) become plain numbers and
lists. Anything else is :class:`~dnnlens.rules.budget.RuleFailure`, which the engine turns
into one error finding of that rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dnnlens.analysis.findings import BASES, SAVING_BASES, SEVERITIES, Evidence, Finding
from dnnlens.rules.budget import RuleFailure

#: Bounds of ``data``: nesting, items in all, and characters of one message.
MAX_DATA_DEPTH = 16
MAX_DATA_ITEMS = 100_000
MAX_TEXT_CHARS = 10_000


def checked_finding(item: Any) -> Finding:
    """``item`` as a valid finding (``data`` made plain), or :class:`RuleFailure`."""
    if not isinstance(item, Finding):
        raise RuleFailure(f"produced a {type(item).__name__}, not a Finding (use self.finding)")
    for name in ("rule", "code", "message", "fix"):
        value = getattr(item, name)
        if not isinstance(value, str):
            raise RuleFailure(f"a finding's {name} is a {type(value).__name__}, not text")
    if not item.rule:
        raise RuleFailure("a finding has an empty rule name")
    if item.severity not in SEVERITIES:
        raise RuleFailure(
            f"a finding's severity {item.severity!r} is not one of {', '.join(SEVERITIES)}"
        )
    impact = item.impact_ms_per_iteration
    if isinstance(impact, np.generic):
        impact = impact.item()
    if impact is not None and (
        not isinstance(impact, int | float) or isinstance(impact, bool) or not impact == impact
    ):
        raise RuleFailure(f"a finding's impact_ms_per_iteration is not a number: {impact!r}")
    title = item.title if isinstance(item.title, str) else ""
    return Finding(
        rule=item.rule,
        code=item.code,
        severity=item.severity,
        message=item.message[:MAX_TEXT_CHARS],
        evidence=_evidence(item.evidence),
        data=_data(item.data),
        fix=item.fix[:MAX_TEXT_CHARS],
        impact_ms_per_iteration=None if impact is None else float(impact),
        title=title[:MAX_TEXT_CHARS],
        basis=item.basis if item.basis in BASES else "iteration",
        **_saving(item, None if impact is None else float(impact)),
    )


def _saving(item: Finding, impact: float | None) -> dict[str, Any]:
    """A plugin's saving when it is a number within its impact on a known basis; else
    ``unknown`` (the default of a plugin that states none)."""
    ms = item.saving_ms_per_iteration
    if isinstance(ms, np.generic):
        ms = ms.item()
    note = item.saving_note if isinstance(item.saving_note, str) else ""
    ok = (
        impact is not None
        and isinstance(ms, int | float)
        and not isinstance(ms, bool)
        and ms == ms
        and 0 <= ms <= impact * (1 + 1e-9)
        and item.saving_basis in SAVING_BASES
        and item.saving_basis != "unknown"
    )
    if not ok:
        return {"saving_basis": "unknown", "saving_note": note[:MAX_TEXT_CHARS]}
    return {
        "saving_ms_per_iteration": min(float(ms), impact),
        "saving_basis": item.saving_basis,
        "saving_note": note[:MAX_TEXT_CHARS],
    }


def _evidence(evidence: Any) -> list[Evidence]:
    if not isinstance(evidence, list | tuple):
        raise RuleFailure(f"a finding's evidence is a {type(evidence).__name__}, not a list")
    out = []
    for e in evidence:
        line = getattr(e, "line", None)
        if isinstance(line, np.integer):
            line = int(line)
        if (
            not isinstance(e, Evidence)
            or not isinstance(e.path, str)
            or not isinstance(line, int)
            or isinstance(line, bool)
            or line < 0
        ):
            raise RuleFailure("a finding's evidence is not a list of Evidence(path, line)")
        op, step, ts = getattr(e, "op", None), getattr(e, "step", None), getattr(e, "ts_us", None)
        if isinstance(ts, np.generic):
            ts = ts.item()
        if not all(v is None or isinstance(v, str) for v in (op, step)) or not (
            ts is None or (isinstance(ts, int | float) and not isinstance(ts, bool))
        ):
            raise RuleFailure("a finding's evidence has an op, step or ts_us of the wrong type")
        out.append(Evidence(e.path, line, op=op, step=step, ts_us=ts))
    return out


def _data(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise RuleFailure(f"a finding's data is a {type(data).__name__}, not a mapping")
    budget = [MAX_DATA_ITEMS]
    return _plain(data, "data", 0, budget)


def _plain(value: Any, where: str, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise RuleFailure(f"a finding's data holds more than {MAX_DATA_ITEMS:,} values")
    if depth > MAX_DATA_DEPTH:
        raise RuleFailure(f"a finding's data is nested deeper than {MAX_DATA_DEPTH} levels")
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        if -(1 << 63) <= value < 1 << 64:
            return value
        raise RuleFailure(f"{where} is an integer of more than 64 bits")
    if isinstance(value, str):
        return value[:MAX_TEXT_CHARS]
    if isinstance(value, np.generic):
        return _plain(value.item(), where, depth, budget)
    if isinstance(value, np.ndarray):
        if value.size > MAX_DATA_ITEMS:
            raise RuleFailure(f"{where} is an array of {value.size:,} values")
        return _plain(value.tolist(), where, depth, budget)
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{i}]", depth + 1, budget) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise RuleFailure(f"{where} has a key {type(k).__name__} {k!r:.40}, not text")
            out[k] = _plain(v, f"{where}[{k!r:.40}]", depth + 1, budget)
        return out
    raise RuleFailure(
        f"{where} is a {type(value).__name__}: data holds numbers, text, true/false, "
        "lists and mappings"
    )
