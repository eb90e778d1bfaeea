"""The result of one analysis: what every reporter takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.summary import Summary, summarize
from dnnlens.model import ParsedLog
from dnnlens.model.stats import stats_from_events


@dataclass
class Analysis:
    """Parsed inputs, their time breakdown and the findings of the rules."""

    log: ParsedLog
    summary: Summary
    findings: list[Finding] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


#: Events the sequence analyses (iterations, op graph, rules, charts) look at by default.
DEFAULT_WINDOW_EVENTS = 200_000


def skip_iterations(log: ParsedLog, count: int) -> dict[str, Any]:
    """Drop the events before the ``count``-th iteration (warm-up) from ``log.events``.

    Iterations are found in the exec stream (:mod:`dnnlens.analysis.iterations`); every
    event from the first row of iteration ``count`` on is kept. Returns what was dropped.
    """
    from dnnlens.analysis.iterations import find_iterations

    events = log.events
    it = find_iterations(events)
    later = (it.iteration >= count).nonzero()[0]
    first = int(later[0]) if len(later) else len(events)
    log.events = events.iloc[first:].reset_index(drop=True)
    return {
        "iterations": count,
        "found": it.count,
        "events_dropped": first,
        "first_line": int(events["line"].iloc[first]) if first < len(events) else None,
    }


def analyze_log(
    log: ParsedLog, window_events: int | None = DEFAULT_WINDOW_EVENTS, skip: int = 0
) -> Analysis:
    """Summarise ``log``; rules are run by the caller (see ``dnnlens.rules``).

    The summary, the framework links and ``primitives`` use every event. When the log has
    more than ``window_events`` events, the event table is then cut to its last
    ``window_events`` rows, so that iterations, the op graph, the rules and the charts cost
    the same on a log of any length: a steady-state window (``extras["window"]`` says which).
    ``None`` or 0 keeps every event. ``skip`` drops the first ``skip`` iterations (warm-up)
    before anything is computed, the summary included.
    """
    skipped = skip_iterations(log, skip) if skip > 0 and len(log.events) else None
    stats = stats_from_events(log.events)  # once, for the summary and the primitives
    analysis = Analysis(log=log, summary=summarize(log, stats))
    if skipped is not None:
        analysis.extras["skipped"] = skipped
    if log.framework is not None:  # issue 3: framework ops linked to their primitives
        from dnnlens.analysis.linking import framework_extras

        analysis.extras.update(framework_extras(log))
    add_primitives(analysis, stats=stats)
    total = len(log.events)
    if window_events and total > window_events:
        log.events = log.events.iloc[total - window_events :].reset_index(drop=True)
        analysis.extras["window"] = {
            "events_total": total,
            "events_analysed": window_events,
            "first_line": int(log.events["line"].iloc[0]),
            "note": "iterations, graph, rules and charts use the last events only; "
            "the summary and primitives use all of them",
        }
    return analysis


def add_primitives(analysis: Analysis, stats: Any = None) -> None:
    """``primitives`` in the JSON: each distinct primitive on the roofline (issue 9).

    ``stats`` are per-record statistics when the event table holds only a window of the
    events (streaming); by default they are computed from the event table.
    """
    from dnnlens.analysis.roofline import primitives_json

    analysis.extras["primitives"] = primitives_json(analysis, stats=stats)
