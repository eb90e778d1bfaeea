"""``dnnlens export perfetto|benchdnn|parquet|csv LOG... -o ...``: files for other tools.

Exit codes: 0 written; 2 usage or input error (nothing parsed, an output that cannot be
opened or is one of the inputs, a missing optional dependency, an input that could not be
read: the others are exported first, as ``analyze`` reports them); 3 internal error; 4 the
output could not be written once open (disk full, I/O error); 141 standard output closed.
"""

from __future__ import annotations

from pathlib import Path

import typer

from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.errors import EXIT_USAGE, OutputError, UsageError, say

export_app = typer.Typer(
    name="export",
    help="Write the parsed log for other tools: Perfetto, benchdnn, Parquet, CSV.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

_PATHS = typer.Argument(
    ..., help="Log files, globs, directories, or - for standard input (.gz is read too)."
)
_QUIET = typer.Option(False, "--quiet", "-q", help="No progress bar, no notes on stderr.")


def _fail(message: str) -> typer.Exit:
    from dnnlens.report.console import error

    error(message)
    return typer.Exit(EXIT_USAGE)


def _run(paths: list[str], quiet: bool, window: int = DEFAULT_WINDOW_EVENTS):  # -> Analysis
    """The one run of ``paths`` as ``analyze`` reports it (its findings included), opened by
    :func:`~dnnlens.app.session.open_inputs`; several runs or no input: one line, exit 2."""
    from dnnlens.app.session import SessionError, Settings, open_inputs

    try:
        outcome = open_inputs(paths, Settings(window=window), quiet=quiet)
        if not outcome.log.scans:
            raise SessionError("; ".join(outcome.log.input_errors) or "no input")
        return outcome.single("INPUTS", combine=False)
    except SessionError as exc:
        raise _fail(str(exc)) from None


def _refuse_input(output: Path | str | None, log) -> None:  # noqa: ANN001 - ParsedLog
    from dnnlens.report.output import input_paths, refuse_input

    try:
        refuse_input(output, input_paths(log))
    except UsageError as exc:
        raise _fail(str(exc)) from None


def _write_failed(output: object, exc: OSError) -> Exception:
    """An output that cannot be opened is a usage error (2); one that fails once open, an
    output error (4)."""
    if exc.filename is not None:
        return _fail(f"{output}: cannot write ({exc.strerror or exc})")
    return OutputError(f"{output}: cannot write ({exc.strerror or exc})")


def _finish(log, quiet: bool) -> None:  # noqa: ANN001 - ParsedLog
    """After the export: notes about the inputs, then their errors (exit 2), as analyze."""
    from dnnlens.io.problems import input_problems

    problems = input_problems(log)
    for message in problems.notes if not quiet else []:
        say("note", message)
    for message in problems.errors:
        say("error", message)
    if problems.errors:
        raise typer.Exit(EXIT_USAGE)


def _command(name: str):  # noqa: ANN202 - a decorator
    """``export_app.command(name)`` under the command line's last-resort handler."""
    from dnnlens.cli import _last_resort

    def wrap(function):  # noqa: ANN001, ANN202
        return export_app.command(name)(_last_resort(function))

    return wrap


@_command("perfetto")
def perfetto(
    paths: list[str] = _PATHS,
    output: Path = typer.Option(
        ..., "--output", "-o", help="trace.json, or trace.json.gz to compress."
    ),
    iterations: str | None = typer.Option(
        None, "--iterations", help="Only iterations A:B (0-based, B excluded; A: and :B too)."
    ),
    max_events: int = typer.Option(
        1_000_000,
        "--max-events",
        min=1,
        help="Cut the trace at the iteration boundary before this many primitive events.",
    ),
    no_creates: bool = typer.Option(
        False, "--no-creates", help="Leave primitive creation events out."
    ),
    analysis_window: int = typer.Option(
        DEFAULT_WINDOW_EVENTS,
        "--window",
        min=0,
        help="Events (the last ones) the analysis looks at, as analyze's --window; 0 for all.",
    ),
    quiet: bool = _QUIET,
) -> None:
    """Chrome trace-event JSON for ui.perfetto.dev: one slice per primitive execution."""
    from dnnlens.report.console import note
    from dnnlens.report.output import output_name
    from dnnlens.report.perfetto import TraceOptions, parse_window
    from dnnlens.report.renderers import ALL_RENDERERS, RenderOptions

    try:
        window = parse_window(iterations) if iterations else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    analysis = _run(
        paths, quiet, analysis_window
    )  # the run analyze reports, its findings annotated
    log = analysis.log
    _refuse_input(output, log)
    options = TraceOptions(window=window, include_creates=not no_creates, max_events=max_events)
    try:
        stats = ALL_RENDERERS["perfetto"].write(analysis, output, RenderOptions(trace=options))
    except OSError as exc:
        raise _write_failed(output, exc) from None
    where = f", iterations {stats.window[0]}:{stats.window[1]}" if stats.window else ""
    note(
        f"wrote {output_name(output)}: {stats.executions:,} executions, {stats.events:,} events"
        f"{where} ({', '.join(sorted(set(stats.timing.values()))) or 'no events'})",
        quiet,
    )
    if stats.truncated:
        note(f"cut at {max_events:,} events; use --iterations to choose the window", quiet)
    if stats.left_out:
        note(
            f"{stats.left_out:,} event(s) left out: their time or start in µs is not a finite "
            "number (JSON has no infinity)",
            quiet,
        )
    _finish(log, quiet)


@_command("benchdnn")
def benchdnn(
    paths: list[str] = _PATHS,
    top: int = typer.Option(10, "--top", min=1, help="How many primitives (by total time)."),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="A file for the whole text, or a directory (ends with / or exists) for one "
        "<driver>.batch file per driver. Default: standard output.",
    ),
    quiet: bool = _QUIET,
) -> None:
    """benchdnn batch lines reproducing the primitives that cost the most time."""
    from dnnlens.report.console import note
    from dnnlens.report.output import output_name
    from dnnlens.report.renderers import ALL_RENDERERS, RenderOptions

    analysis = _run(paths, quiet)  # the ranking analyze reports: the same primitives, same order
    log = analysis.log
    chosen, options = ALL_RENDERERS["benchdnn"], RenderOptions(top=top)
    try:
        if output is None:
            chosen.write(analysis, None, options)
        elif Path(output).is_dir() or output.endswith(("/", "\\")):
            target = Path(output)
            target.mkdir(parents=True, exist_ok=True)
            try:
                files = chosen.write(analysis, target, options)
            except UsageError as exc:  # a batch file would overwrite an input
                raise _fail(str(exc)) from None
            note(
                f"wrote {len(files)} batch file(s) to {target}: "
                + ", ".join(f.name for f in files),
                quiet,
            )
        else:
            _refuse_input(output, log)
            chosen.write(analysis, Path(output), options)
            note(f"wrote {output_name(output)}", quiet)
    except OSError as exc:
        raise _write_failed(output, exc) from None
    _finish(log, quiet)


def _tables(fmt: str, paths: list[str], output: Path, quiet: bool) -> None:
    from dnnlens.app.session import SessionError, Settings, open_inputs
    from dnnlens.report.console import note
    from dnnlens.report.output import refuse_stdout
    from dnnlens.report.renderers import ALL_RENDERERS, RenderOptions, RunSet
    from dnnlens.report.tables_export import ExportError

    # the runs analyze makes of the same inputs, each over all of its events (window 0);
    # no rules: the tables hold no finding
    try:
        outcome = open_inputs(paths, Settings(window=0), quiet=quiet, rules=False)
    except SessionError as exc:
        raise _fail(str(exc)) from None
    log = outcome.log
    if not log.scans:
        raise _fail("; ".join(log.input_errors) or "no input")
    runs = RunSet(outcome.analyses, outcome.runs, log)
    try:
        refuse_stdout(output, f"a {fmt} dataset is a directory of files")
        result = ALL_RENDERERS[fmt].write(runs, output, RenderOptions())
    except (ExportError, UsageError) as exc:
        raise _fail(str(exc)) from None
    for message in result.notes:
        note(message, quiet)
    note(
        f"wrote {result.rows:,} events of {len(result.runs)} run(s) to {output}/events "
        f"({len(result.files)} {fmt} file(s))",
        quiet,
    )
    _finish(log, quiet)


_DIR = typer.Option(..., "--output", "-o", help="Directory of the dataset (created).")


@_command("parquet")
def parquet(paths: list[str] = _PATHS, output: Path = _DIR, quiet: bool = _QUIET) -> None:
    """The event table as a Parquet dataset partitioned by run and rank (needs pyarrow)."""
    _tables("parquet", paths, output, quiet)


@_command("csv")
def csv(paths: list[str] = _PATHS, output: Path = _DIR, quiet: bool = _QUIET) -> None:
    """The event table as CSV files partitioned by run and rank."""
    _tables("csv", paths, output, quiet)


def register(app: typer.Typer) -> None:
    """Add ``dnnlens export ...`` to the command line."""
    app.add_typer(export_app, name="export")
