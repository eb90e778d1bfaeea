"""What ``analyze`` and ``run`` share: the analysis options, reading, and the report step.

``dnnlens run -- CMD`` is ``CMD | dnnlens analyze - --tee`` with the program started for
you: both commands read through :func:`dnnlens.reading.read` (:func:`read_and_report`) and
end in :func:`report_parsed`, which analyses the ParsedLog, runs the rules, renders the
report and says what the exit code is. The options they share are defined once here
(``Annotated`` aliases for typer) and carried by :class:`ReportOptions`.

Signals: while reading, SIGINT and SIGTERM only ask reading to stop
(:class:`~dnnlens.io.signals.StopRequest`); the report of what was read is then printed and
the exit code is 130 or 143. With ``--tee`` the report never goes into the program's own
output stream: it goes to ``-o``, else to standard error.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from dnnlens.errors import EXIT_BROKEN_PIPE, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, say

if TYPE_CHECKING:
    from dnnlens.app.session import Settings
    from dnnlens.model import ParsedLog


# -- the options both commands take -----------------------------------------------------------


class OutputFormat(StrEnum):
    """Report formats of ``analyze`` and ``run``."""

    terminal = "terminal"
    json = "json"
    html = "html"
    sarif = "sarif"
    github = "github"
    junit = "junit"


class FailOn(StrEnum):
    """Severities for ``--fail-on``."""

    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Report format.", case_sensitive=False)
]
OutputOption = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here.")]
TopOption = Annotated[
    int, typer.Option("--top", min=1, help="Rows per table in the terminal report.")
]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Exit 2 if any line with a verbose marker is malformed."),
]
FailOnOption = Annotated[
    FailOn,
    typer.Option("--fail-on", help="Exit 1 if a finding at or above this severity exists."),
]
RulesOption = Annotated[
    list[str],
    typer.Option(
        "--rules", help="A rule file (YAML/TOML) or Python plugin to run too; repeatable."
    ),
]
SelectOption = Annotated[list[str], typer.Option("--select", help="Run only these rules.")]
IgnoreOption = Annotated[list[str], typer.Option("--ignore", help="Do not run these rules.")]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="dnnlens.toml or pyproject.toml with [tool.dnnlens] thresholds."),
]
WindowOption = Annotated[
    int,
    typer.Option(
        "--window",
        min=0,
        help="Events (the last ones) that iterations, graph, rules and charts look at; "
        "0 for all. Totals are always exact.",
    ),
]
SkipOption = Annotated[
    int,
    typer.Option(
        "--skip-iterations",
        min=0,
        help="Leave out the first N iterations (warm-up), found in the exec stream.",
    ),
]
MarkerOption = Annotated[
    str | None,
    typer.Option(
        "--iteration-marker",
        help="Regex of the program's own line that separates iterations (by default the "
        "program's step lines are found, else the repeating exec sequence).",
    ),
]
QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress bar, no live view, no notes on stderr."),
]
DetailsOption = Annotated[
    bool,
    typer.Option("--details", help="Terminal: every table, not only the verdict and breakdown."),
]
WidthOption = Annotated[
    int | None,
    typer.Option(
        "--width", min=40, help="Terminal: line width (default COLUMNS or the terminal's)."
    ),
]
MachineOption = Annotated[
    Path | None,
    typer.Option(
        "--machine",
        help="A machine profile (.toml or .json; dnnlens machine probe -o FILE): peaks and "
        "efficiencies against it instead of the log header's machine.",
    ),
]
ExitZeroOption = Annotated[
    bool,
    typer.Option(
        "--exit-zero", help="Exit 0 even with findings at --fail-on (input errors still exit 2)."
    ),
]
StatisticsOption = Annotated[
    bool,
    typer.Option(
        "--statistics", help="Print how many findings each rule made instead of the report."
    ),
]
BaselineOption = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="Leave out the findings recorded in this file (--write-baseline): a gate "
        "fails only on new ones.",
    ),
]
WriteBaselineOption = Annotated[
    Path | None,
    typer.Option("--write-baseline", help="Record this run's findings as accepted, in FILE."),
]
CombineOption = Annotated[
    bool,
    typer.Option(
        "--combine",
        help="Analyse all inputs as one run (by default each input is a run of its own, "
        "unless it is a rank or a rotation of another, or the trace or table of a log's run).",
    ),
]


@dataclass
class ReportOptions:
    """The options of ``analyze`` and ``run``: what to analyse (one
    :class:`~dnnlens.app.session.Settings`, the same object :func:`dnnlens.analyze` builds)
    and how to report it."""

    settings: Settings
    fmt: OutputFormat = OutputFormat.terminal
    output: Path | None = None
    top: int = 10
    strict: bool = False
    fail_on: FailOn = FailOn.never
    quiet: bool = False
    #: terminal: every table, and the line width (None: COLUMNS or the terminal's)
    details: bool = False
    width: int | None = None
    #: the report goes to standard error unless ``output`` is given: standard output
    #: carries the program's own lines (``--tee``, ``dnnlens run``)
    report_to_stderr: bool = False
    #: input errors make the exit code 2 (``run`` exits with its program's code instead)
    input_errors_fail: bool = True
    #: findings at ``--fail-on`` do not make the exit code 1 (input errors still do)
    exit_zero: bool = False
    #: the count of findings per rule instead of the report
    statistics: bool = False
    #: a baseline of accepted findings to leave out, and a file to write one to
    baseline: Path | None = None
    write_baseline: Path | None = None

    def rule_options(self) -> Any:
        """The options of the rule engine."""
        return self.settings.rule_options()


def analysis_settings(
    *,
    rules: list[str],
    select: list[str],
    ignore: list[str],
    config: Path | None,
    window: int,
    skip: int,
    iteration_marker: str | None,
    machine: Path | None,
    combine: bool = False,
) -> Settings:
    """The :class:`~dnnlens.app.session.Settings` of the command-line options (the machine
    profile read now: a bad one is a usage error before anything runs)."""
    from dnnlens.app.session import Settings

    return Settings(
        skip_iterations=skip,
        window=window,
        iteration_marker=iteration_marker,
        combine=combine,
        machine=machine_profile(machine),
        rules=list(rules),
        select=list(select),
        ignore=list(ignore),
        config=str(config) if config else None,
    )


def machine_profile(path: Path | None) -> Any:
    """The machine profile of ``--machine``, read before anything runs (None without one);
    an unreadable or invalid file is a usage error (exit 2)."""
    if path is None:
        return None
    from dnnlens.analysis.machine import load_machine
    from dnnlens.errors import fail

    try:
        return load_machine(path)
    except ValueError as exc:
        raise fail(str(exc)) from None


def marker_problem(options: ReportOptions) -> str | None:
    """What is wrong with ``--iteration-marker``, as one line (None: nothing)."""
    from dnnlens.app.session import marker_problem as problem

    return problem(options.settings.iteration_marker)


def check_options(options: ReportOptions) -> str | None:
    """What is wrong with ``options`` before anything runs (rule files, config, selection,
    the report's directory), as one line; None when nothing is."""
    from dnnlens.rules.config import load_config
    from dnnlens.rules.engine import RuleSetupError, build_registry, selected_rules

    if options.fmt is OutputFormat.html and options.output is None:
        return "--format html needs --output FILE"
    marker = marker_problem(options)
    if marker is not None:
        return marker
    if options.output is not None and not options.output.parent.is_dir():
        return f"{options.output}: the directory {options.output.parent} does not exist"
    if options.baseline is not None:
        from dnnlens.app.baseline import load_baseline
        from dnnlens.app.session import SessionError

        try:
            load_baseline(options.baseline)
        except SessionError as exc:
            return str(exc)
    rule_options = options.rule_options()
    try:
        config = load_config(rule_options.config_path, rule_options.search_config)
        selected_rules(build_registry(rule_options, config), rule_options, config)
    except RuleSetupError as exc:
        return str(exc)
    return None


# -- the report ---------------------------------------------------------------------------


def report_parsed(log: ParsedLog, options: ReportOptions) -> int:
    """Analyse ``log`` (each run apart), run the rules, render the report, tell about the
    inputs; the exit code (0, 1 for findings at ``--fail-on``, 2 for input errors and
    ``--strict``)."""
    from dnnlens.app.session import SessionError, analyse, reaches
    from dnnlens.errors import UsageError
    from dnnlens.io.problems import input_problems, strict_problem
    from dnnlens.report.renderers import render_analysis, render_runs

    if not log.scans and log.framework is None:  # a trace alone is an input
        say("error", "; ".join(log.input_errors) or "no input")
        return EXIT_USAGE
    try:
        outcome = analyse(log, options.settings)
        _baselines(outcome, options)
    except SessionError as exc:
        say("error", str(exc))
        return EXIT_USAGE
    analyses, runs = outcome.analyses, outcome.runs
    redirect = options.report_to_stderr and options.output is None
    # JUnit: a finding at --fail-on is a failed test case (warning when it is not given)
    fail_on = "warning" if options.fail_on is FailOn.never else options.fail_on.value
    layout = {
        "top": options.top,
        "details": options.details,
        "width": options.width,
        "fail_on": fail_on,
    }
    with contextlib.redirect_stdout(sys.stderr) if redirect else contextlib.nullcontext():
        try:
            if options.statistics:
                _statistics(outcome, options)
            elif len(analyses) > 1:
                render_runs(analyses, runs, options.fmt.value, options.output, log, **layout)
            else:
                render_analysis(analyses[0], options.fmt.value, options.output, **layout)
        except UsageError as exc:
            say("error", str(exc))
            return EXIT_USAGE
    problems = input_problems(log)
    for message in problems.notes if not options.quiet else []:
        say("note", message)
    for message in problems.errors:
        say("error", message)
    if problems.errors and options.input_errors_fail:
        return EXIT_USAGE
    strict = strict_problem(log) if options.strict else None
    if strict:
        say("error", strict)
        return EXIT_USAGE
    if options.fail_on is not FailOn.never and reaches(outcome.findings, options.fail_on.value):
        return EXIT_OK if options.exit_zero else EXIT_FINDINGS
    return EXIT_OK


def _baselines(outcome: Any, options: ReportOptions) -> None:
    """``--write-baseline``: every finding to the file; ``--baseline``: the known ones out
    of every run (:mod:`dnnlens.app.baseline`)."""
    if options.write_baseline is None and options.baseline is None:
        return
    from dnnlens.app.baseline import leave_out_known, load_baseline, write_baseline

    if options.write_baseline is not None:
        try:
            count = write_baseline(options.write_baseline, outcome)
        except OSError as exc:
            from dnnlens.app.session import SessionError

            raise SessionError(
                f"--write-baseline {options.write_baseline}: cannot write ({exc.strerror or exc})"
            ) from None
        if not options.quiet:
            say("note", f"wrote {count} finding(s) to the baseline {options.write_baseline}")
    if options.baseline is not None:
        leave_out_known(outcome, load_baseline(options.baseline), options.baseline)


def _statistics(outcome: Any, options: ReportOptions) -> None:
    """``--statistics``: how many findings each rule made, most first (ruff's
    ``--statistics``), as text or, with ``--format json``, a JSON list."""
    from dnnlens.report.output import emit_text
    from dnnlens.textsafe import safe

    counts: dict[tuple[str, str, str], int] = {}
    for f in outcome.findings:
        key = (f.code, f.rule, f.severity)
        counts[key] = counts.get(key, 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
    if options.fmt is OutputFormat.json:
        import json

        doc = [{"code": c, "rule": r, "severity": s, "count": n} for (c, r, s), n in rows]
        text = json.dumps(doc, indent=2) + "\n"
    else:
        width = max((len(str(n)) for _, n in rows), default=1)
        text = "".join(f"{n:>{width}}  {safe(c):<8} {safe(r)} ({s})\n" for (c, r, s), n in rows)
    emit_text(text, options.output)


# -- reading, live --------------------------------------------------------------------------


class _Tee:
    """Standard output as ``--tee`` writes it: remembers that its reader went away."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.closed_by_reader = False

    def write(self, data: bytes) -> int:
        try:
            return self._out.write(data)
        except (OSError, ValueError):
            self.closed_by_reader = True
            raise

    def flush(self) -> None:
        try:
            self._out.flush()
        except (OSError, ValueError):
            self.closed_by_reader = True
            raise


class _Output:
    """Where the program's bytes go while reading, and the live view when it is shown."""

    def __init__(self, show: bool, tee: bool, settings: Settings) -> None:
        self.settings = settings
        self.view: Any = None
        self.tee: Any = _Tee(sys.stdout.buffer) if tee else None
        self.on_snapshot: Callable[[Any], None] | None = None
        if show:
            from dnnlens.cli.live_view import LiveView

            self.view = LiveView(sys.stdout.buffer, sys.stderr)
            self.tee = self.view.program if tee else None
            self.on_snapshot = self._show

    def _show(self, snapshot: Any) -> None:
        from dnnlens.app.session import snapshot_summary
        from dnnlens.cli.live_view import live_panel

        # the summary the session makes of what was read so far (the report's own totals)
        self.view.show(live_panel(snapshot, snapshot_summary(snapshot, self.settings)))

    def close(self) -> None:
        """Erase the live view (the report comes next)."""
        if self.view is not None:
            self.view.close()

    @property
    def closed_by_reader(self) -> bool:
        """Standard output's reader went away while the program's bytes were copied."""
        if self.view is not None:
            return bool(self.view.out_closed)
        return bool(self.tee is not None and self.tee.closed_by_reader)


def _live_view_possible() -> bool:
    from dnnlens.cli.live_view import live_view_possible  # rich: only for a live view

    return live_view_possible()


def _import_report() -> None:
    """Import what :func:`report_parsed` needs (pandas, the analysis, the rules, the
    renderers): called while worker processes scan, on the core they leave this process.
    Plugins are not imported here: they are loaded, and their errors reported, where the
    rules are set up."""
    import dnnlens.analysis.analysis
    import dnnlens.analysis.runs
    import dnnlens.report.renderers
    import dnnlens.rules.verdict  # noqa: F401
    from dnnlens.rules.registry import import_builtin_modules

    import_builtin_modules()


def read_and_report(
    specs: list[str],
    options: ReportOptions,
    *,
    jobs: int | None = 1,
    live: bool = True,
    tee: bool = False,
    stop: Any = None,
    stdin: BinaryIO | None = None,
    stdin_name: str = "-",
    copy_to: BinaryIO | None = None,
    before_report: Callable[[ReportOptions], None] | None = None,
) -> int:
    """Read ``specs`` through the front door, then :func:`report_parsed`; the exit code.

    The live view is on for standard input when ``live``, not ``--quiet``, and both standard
    output and standard error are terminals. ``stop`` is what reading looks at to stop early
    (by default SIGINT and SIGTERM, see :class:`~dnnlens.io.signals.StopRequest`); after an
    interruption the exit code is the signal's (130, 143), after standard output was closed
    under ``--tee`` it is 141, once the report of what was read is out. ``before_report`` is
    called between reading and the report (``run`` waits for its program there).
    ``jobs`` None: as many processes as pay for the size of the inputs, with a note when
    that is more than one (:func:`dnnlens.reading.parallel.choose_jobs`).
    """
    from dnnlens.errors import fail
    from dnnlens.io.inputs import expand
    from dnnlens.io.signals import StopRequest
    from dnnlens.reading import read

    problem = marker_problem(options)
    if problem is not None:
        raise fail(problem)
    from dnnlens.app.reading_progress import InputProgress
    from dnnlens.report.console import progress_enabled

    piped = "-" in specs
    show = live and piped and not options.quiet and _live_view_possible()
    options.report_to_stderr = options.report_to_stderr or tee
    window = options.settings.reading_window()
    bar = progress_enabled(options.quiet) and not piped
    expansion = expand(specs)  # once: a directory's files are looked into
    sources = expansion.sources
    if jobs is None:  # chosen by the size of the inputs
        from dnnlens.reading.parallel import choose_jobs

        jobs = choose_jobs(sources)
        if jobs > 1 and not options.quiet:
            say("note", f"reading with {jobs} processes: the inputs are large (-j 1: one)")
    if not bar:
        sources = []
    own = StopRequest() if stop is None else None
    signals: Any = own if own is not None else contextlib.nullcontext()
    with signals, InputProgress(sources, bar) as progress:
        stop = own if own is not None else stop
        output = _Output(show, tee, options.settings)
        try:
            log = read(
                expansion,
                jobs=jobs,
                window_events=window,
                progress=progress,
                stop=stop,
                tee=output.tee,
                copy_to=copy_to,
                on_snapshot=output.on_snapshot,
                stdin=stdin,
                stdin_name=stdin_name,
                meanwhile=_import_report,
                marker=options.settings.iteration_marker,
            )
        finally:
            output.close()
        if before_report is not None:
            before_report(options)
        code = report_parsed(log, options)
        if getattr(stop, "signum", None):
            read_lines = sum(s.lines for s in log.scans)
            say(
                "note",
                f"interrupted by {stop.name}: the report covers the {read_lines:,} lines read",
            )
            return int(stop.exit_code)
    if output.closed_by_reader:
        say("note", "standard output was closed; the input was still read to its end")
        return EXIT_BROKEN_PIPE
    return code
