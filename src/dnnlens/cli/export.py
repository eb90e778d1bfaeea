"""``dnnlens export perfetto|benchdnn|parquet|csv LOG... -o ...``: files for other tools.

Exit codes: 0 written; 2 usage or input error (nothing parsed, unwritable output, a
missing optional dependency).
"""

from __future__ import annotations

from pathlib import Path

import typer

EXIT_USAGE = 2

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


def _load(paths: list[str], quiet: bool):  # -> ParsedLog (imported lazily)
    from dnnlens.report.console import load_inputs

    log = load_inputs(paths, quiet)
    if not log.scans:
        raise _fail("; ".join(log.input_errors) or "no input")
    errors = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    if errors:
        raise _fail("; ".join(e for e in errors if e))
    return log


@export_app.command("perfetto")
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
    quiet: bool = _QUIET,
) -> None:
    """Chrome trace-event JSON for ui.perfetto.dev: one slice per primitive execution."""
    from dnnlens.analysis.analysis import Analysis, AnalysisOptions
    from dnnlens.report.console import note
    from dnnlens.report.perfetto import TraceOptions, parse_window, write_trace

    try:
        window = parse_window(iterations) if iterations else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    analysis = Analysis(_load(paths, quiet), AnalysisOptions(window_events=None))
    analysis.findings = _findings(analysis)
    options = TraceOptions(window=window, include_creates=not no_creates, max_events=max_events)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        stats = write_trace(analysis, output, options)
    except OSError as exc:
        raise _fail(f"{output}: cannot write ({exc.strerror or exc})") from None
    where = f", iterations {stats.window[0]}:{stats.window[1]}" if stats.window else ""
    note(
        f"wrote {output}: {stats.executions:,} executions, {stats.events:,} events"
        f"{where} ({', '.join(sorted(set(stats.timing.values()))) or 'no events'})",
        quiet,
    )
    if stats.truncated:
        note(f"cut at {max_events:,} events; use --iterations to choose the window", quiet)


def _findings(analysis) -> list:  # noqa: ANN001 - Analysis, imported lazily
    """Findings of the built-in rules; a rule setup problem only means no annotations."""
    try:
        from dnnlens.rules.engine import RuleOptions, run_rules

        return run_rules(analysis, RuleOptions())
    except Exception:  # noqa: BLE001 - annotations are optional in a trace
        return []


@export_app.command("benchdnn")
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
    from dnnlens.report.benchdnn import batches, render_batch
    from dnnlens.report.console import note

    log = _load(paths, quiet)
    try:
        if output is None:
            typer.echo(render_batch(log, top), nl=False)
            return
        target = Path(output)
        if target.is_dir() or output.endswith(("/", "\\")):
            target.mkdir(parents=True, exist_ok=True)
            files = batches(log, top)
            for driver, text in files.items():
                (target / f"{driver}.batch").write_text(text, encoding="utf-8")
            note(
                f"wrote {len(files)} batch file(s) to {target}: "
                + ", ".join(f"{d}.batch" for d in files),
                quiet,
            )
            return
        target.write_text(render_batch(log, top), encoding="utf-8")
        note(f"wrote {output}", quiet)
    except OSError as exc:
        raise _fail(f"{output}: cannot write ({exc.strerror or exc})") from None


def _tables(fmt: str, paths: list[str], output: Path, quiet: bool) -> None:
    from dnnlens.report.console import note
    from dnnlens.report.tables_export import ExportError, export_tables

    log = _load(paths, quiet)
    try:
        result = export_tables(log, output, fmt)
    except ExportError as exc:
        raise _fail(str(exc)) from None
    for message in result.notes:
        note(message, quiet)
    note(
        f"wrote {result.rows:,} events of {len(result.runs)} run(s) to {output}/events "
        f"({len(result.files)} {fmt} file(s))",
        quiet,
    )


_DIR = typer.Option(..., "--output", "-o", help="Directory of the dataset (created).")


@export_app.command("parquet")
def parquet(paths: list[str] = _PATHS, output: Path = _DIR, quiet: bool = _QUIET) -> None:
    """The event table as a Parquet dataset partitioned by run and rank (needs pyarrow)."""
    _tables("parquet", paths, output, quiet)


@export_app.command("csv")
def csv(paths: list[str] = _PATHS, output: Path = _DIR, quiet: bool = _QUIET) -> None:
    """The event table as CSV files partitioned by run and rank."""
    _tables("csv", paths, output, quiet)


def register(app: typer.Typer) -> None:
    """Add ``dnnlens export ...`` to the command line."""
    app.add_typer(export_app, name="export")
