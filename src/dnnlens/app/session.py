"""One log, analysed: its runs, one :class:`~dnnlens.analysis.analysis.Analysis` each, with
the rules applied. The command line and :func:`dnnlens.analyze` both go through here, so a
finding the terminal shows is the finding a notebook gets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.model import ParsedLog
from dnnlens.textsafe import safe


@dataclass
class Settings:
    """What an analysis is asked for, the options of ``dnnlens analyze`` that are not about
    the output."""

    skip_iterations: int = 0
    window: int = DEFAULT_WINDOW_EVENTS
    iteration_marker: str | None = None
    combine: bool = False
    #: a machine profile (:func:`dnnlens.analysis.machine.load_machine`), None: the log's
    machine: Any = None
    rules: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: str | None = None
    #: JSON ``run`` key (``dnnlens run``: its command and exit code)
    run_info: dict[str, Any] | None = None
    #: look for dnnlens.toml / pyproject.toml when ``config`` is not given (a fleet
    #: worker's current directory is not the user's: it never looks)
    search_config: bool = True
    #: say on stderr when a Python rule file is run
    announce_python: bool = True

    def reading_window(self) -> int | None:
        """The events reading keeps: every one under ``--skip-iterations`` (the warm-up is
        found in the whole exec stream), else the window (``--window 0``: the default)."""
        return None if self.skip_iterations else (self.window or DEFAULT_WINDOW_EVENTS)

    def analysis_options(self, marker_lines: Any = None) -> Any:
        """The options of every :class:`~dnnlens.analysis.analysis.Analysis` made for these
        settings (``--window 0``: all events), with the program's marker lines when the
        iteration marker found some."""
        from dnnlens.analysis.analysis import AnalysisOptions

        return AnalysisOptions(
            window_events=self.window or None,
            skip_iterations=self.skip_iterations,
            marker_lines=marker_lines,
            machine=self.machine,
        )

    def rule_options(self) -> Any:
        """The options of the rule engine."""
        from dnnlens.rules.engine import RuleOptions

        return RuleOptions(
            rule_paths=list(self.rules),
            select=list(self.select),
            ignore=list(self.ignore),
            config_path=self.config,
            search_config=self.search_config,
            announce_python=self.announce_python,
        )


class SessionError(ValueError):
    """What stops an analysis after reading (nothing left after ``--skip-iterations``, a
    rule that cannot be set up): one line, an input or usage error."""


@dataclass
class Outcome:
    """The analyses of a log's runs (rules applied) and the runs they are."""

    log: ParsedLog
    analyses: list[Any]
    runs: list[Any]

    @property
    def findings(self) -> list[Any]:
        """Every run's findings, in report order within each run."""
        return [f for a in self.analyses for f in a.findings]

    def single(self, what: str, combine: bool = True) -> Any:
        """The analysis of the one run a command compares or exports (``what`` names the
        input, e.g. ``BASE logs/``); :class:`SessionError` when the inputs are several runs
        (as ``analyze`` shows them), never a blend of them; ``combine``: the command has
        ``--combine`` to offer."""
        if len(self.analyses) == 1:
            return self.analyses[0]
        names = ", ".join(safe(r.name) for r in self.runs[:4])
        more = f" and {len(self.runs) - 4} more" if len(self.runs) > 4 else ""
        raise SessionError(
            f"{what} holds {len(self.runs)} runs ({names}{more}), as `dnnlens analyze` shows "
            "them: name one run" + (", or give --combine to make them one" if combine else "")
        )


def open_inputs(
    specs: Sequence[str],
    settings: Settings,
    *,
    quiet: bool = True,
    what: str = "",
    rules: bool = True,
) -> Outcome:
    """Read ``specs`` and analyse each of their runs, rules applied: what every command
    that reports on runs (analyze's API, diff, project, graph, the exports, benchdnn's
    runner) starts from, so a run gets one verdict whatever the command.

    Every event is kept (the exports and the graph use all of them); the analyses look at
    ``settings.window`` events, as ``analyze`` does (0: all of them, as the table exports
    do). ``rules``: False for a command that shows no finding (the table exports), which
    still gets the same runs, passes and warm-up. :class:`SessionError` (one line, the
    input named as ``what``) when nothing can be read."""
    from dnnlens.app.reading_progress import load_inputs

    log = load_inputs(list(specs), quiet, marker=settings.iteration_marker)
    problems = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    if not log.scans and log.framework is None:
        raise SessionError(
            (f"{what} " if what else "") + safe("; ".join(p for p in problems if p) or "no input")
        )
    if not rules:
        analyses, runs = run_analyses(log, settings)
        return Outcome(log, analyses, runs)
    return analyse(log, settings)


def analyse(log: ParsedLog, settings: Settings) -> Outcome:
    """Analyse each run of ``log`` and apply the rules to it.

    Raises :class:`SessionError` when ``--skip-iterations`` leaves nothing or a rule cannot
    be set up (the command line prints it as one line, exit 2)."""
    from dnnlens.rules.engine import RuleSetupError
    from dnnlens.rules.verdict import apply_rules

    analyses, runs = run_analyses(log, settings)
    for analysis in analyses:
        skipped = analysis.skipped
        if skipped is not None and skipped.events_dropped >= len(analysis.log.events):
            raise SessionError(
                f"--skip-iterations {settings.skip_iterations}: the log has {skipped.found} "
                "passes, so nothing is left to analyse"
            )
        if settings.run_info is not None:
            analysis.run_info = dict(settings.run_info)
            note = (settings.run_info.get("load") or {}).get("note")
            if note and note not in analysis.notes:  # dnnlens run saw a busy machine
                analysis.notes.append(note)
        try:
            apply_rules(analysis.prepare(), settings.rule_options())
        except RuleSetupError as exc:
            raise SessionError(str(exc)) from None
    return Outcome(log, analyses, runs)


def run_analyses(log: ParsedLog, settings: Settings) -> tuple[list[Any], list[Any]]:
    """One analysis per run of ``log`` (:mod:`dnnlens.analysis.runs`), and the runs."""
    from dnnlens.analysis.analysis import Analysis
    from dnnlens.analysis.runs import find_runs, split_log

    # an input without any verbose line (empty, program output only) that is no profiler
    # file is a note beside the real inputs (listed with them), not a run of its own
    runs = find_runs(log, combine=settings.combine)
    # a reader's window holds statistics of all inputs together: they can only be one run
    merged = log.window is not None and len(runs) > 1
    if merged:
        runs = find_runs(log, combine=True)
    if len(runs) > 1:
        parts = split_log(log, runs)
    else:
        runs, parts = runs or [], [log]
    markers = marker_lines_of(log, settings.iteration_marker)
    analyses = [Analysis(part, settings.analysis_options(markers)) for part in parts]
    for analysis in analyses:
        note = unmatched_marker_note(analysis.log, settings.iteration_marker)
        if note is not None:
            analysis.notes.append(note)
    if merged:
        analyses[0].notes.append(
            f"{len(runs[0].paths)} inputs were read together as one stream (too large to keep "
            "every event): they are one run here, its iterations and findings from the last "
            "events; give each input on its own to see each run"
        )
    return analyses, runs


def snapshot_summary(snapshot: ParsedLog, settings: Settings) -> Any:
    """The totals of what a live read has seen so far (the live view's panel): the
    summary of the analysis the session makes of it, so the panel's figures are those the
    report prints once the input ends (every event read so far, all inputs together)."""
    from dnnlens.analysis.analysis import Analysis

    return Analysis(snapshot, settings.analysis_options()).summary


def marker_problem(regex: str | None, name: str = "--iteration-marker") -> str | None:
    """What is wrong with an iteration marker, as one line naming it as ``name``; None
    when nothing is (checked before anything is read)."""
    if regex is None:
        return None
    from dnnlens.parsers.linear_regex import PatternError, compile_linear

    try:
        compile_linear(regex)
    except PatternError as exc:
        return f"{name} {regex!r}: {exc}"
    return None


def marker_lines_of(log: ParsedLog, regex: str | None) -> dict[str, Any] | None:
    """The line numbers of ``--iteration-marker`` in each input, as the reader kept them
    (``InputScan.marker_line``: the program's own lines that match, standard input
    included); ``ValueError`` for a log read without looking for that marker."""
    if regex is None:
        return None
    if log.marker != regex:
        raise ValueError(
            f"--iteration-marker {regex!r}: the log was read "
            + ("without a marker" if log.marker is None else f"looking for {log.marker!r}")
            + "; read it with read(..., marker=...)"
        )
    import numpy as np

    return {
        s.path: np.frombuffer(s.marker_line, dtype=np.int64).copy()
        for s in log.scans
        if len(s.marker_line)  # no match: its passes are found as without a marker
    }


def unmatched_marker_note(log: ParsedLog, regex: str | None) -> str | None:
    """The note for the inputs with verbose lines in which ``--iteration-marker`` matched no
    line: their passes are found as without it (step lines, else the repeating sequence)."""
    if regex is None:
        return None
    missed = [s.path for s in log.scans if s.parsed and not len(s.marker_line)]
    if not missed:
        return None
    return (
        f"--iteration-marker {regex!r} matches no line of {', '.join(map(safe, missed))}: "
        "its passes are found as without it (the program's step lines, else the repeating "
        "exec sequence)"
    )


def reaches(findings: list[Any], severity: str) -> bool:
    """Whether any finding is at or above ``severity`` (``--fail-on``)."""
    from dnnlens.analysis.findings import severity_rank

    threshold = severity_rank(severity)
    return any(severity_rank(f.severity) >= threshold for f in findings)
