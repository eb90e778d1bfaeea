"""The ``dnnlens`` command line: wiring only, no analysis of its own.

Exit codes: 0 analysed; 1 findings at or above ``--fail-on``; 2 usage or input error; 3 an
internal error of dnnlens (a bug; ``analyze``); 4 the output could not be written (disk
full, I/O error, standard output closed); 141 standard output closed early (``| head``).
See ``docs/input-policy.md``.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console

from dnnlens._version import __version__
from dnnlens.errors import (
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    OutputError,
    UsageError,
)
from dnnlens.errors import fail as _fail
from dnnlens.errors import say as _say

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a reader that went away

app = typer.Typer(
    name="dnnlens",
    help="Why is a deep-learning workload slow on a CPU? Analyse oneDNN verbose logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    """Report formats of ``analyze``."""

    terminal = "terminal"
    json = "json"
    html = "html"


class FailOn(StrEnum):
    """Severities for ``--fail-on``."""

    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


def _last_resort(command: Callable[..., None]) -> Callable[..., None]:
    """No traceback ever: an unexpected exception becomes one line and exit code 3.

    Exit 3, not 2: 2 says "fix your input or command line", 3 says "dnnlens failed; please
    report it" (``DNNLENS_TRACEBACK=1`` shows the traceback). A reader that closes standard
    output early (``| head``, also after the last write: see
    :func:`~dnnlens.report.output.reader_took_everything`) ends the run quietly with 141.
    An ``OSError`` naming a file (an unwritable ``--output``) is a usage error: 2. A write
    that fails once the output is open (a full disk, an I/O error, a closed standard
    output) is an output error: one line, exit 4.
    """

    @functools.wraps(command)
    def run(*args: object, **kwargs: object) -> None:
        if sys.stdout is None:  # the shell closed it (>&-): writing to it is an output error
            from dnnlens.report.output import ClosedStdout

            sys.stdout = ClosedStdout()
        try:
            try:
                command(*args, **kwargs)
            except typer.Exit as exc:  # "findings" (1) is no verdict the reader has seen
                if exc.exit_code == EXIT_FINDINGS:
                    _end_of_output()
                raise
            finally:
                sys.stdout.flush()
            _end_of_output()
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except SystemExit as exc:
            # rich ends the program with SystemExit(1) when standard output's reader goes
            # away (Console.on_broken_pipe); nothing in dnnlens calls sys.exit, and 1 would
            # read as "findings"
            if exc.code == EXIT_FINDINGS:
                raise typer.Exit(EXIT_BROKEN_PIPE) from None
            raise
        except OutputError as exc:  # a file named with -o: standard output is fine
            raise _fail(str(exc), EXIT_OUTPUT) from None
        except Exception as exc:  # noqa: BLE001 - the last resort
            # exits, aborts and usage errors of typer and click are how commands end
            if type(exc).__module__.split(".")[0] in ("typer", "click"):
                raise
            if os.environ.get("DNNLENS_TRACEBACK"):
                raise
            if isinstance(exc, OSError) and exc.filename is not None:
                raise _fail(f"{exc.filename}: {exc.strerror or exc}") from None
            if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
                _quiet_stdout()  # a failed write to standard output (> /dev/full, >&-)
                raise _fail(
                    f"standard output: cannot write ({exc.strerror or exc})", EXIT_OUTPUT
                ) from None
            detail = (str(exc).strip().splitlines() or [""])[0][:300]
            _say(
                "internal error",
                f"{type(exc).__name__}: {detail} (please report this at "
                "the dnnlens issue tracker; DNNLENS_TRACEBACK=1 shows where it happened)",
            )
            raise typer.Exit(EXIT_INTERNAL) from None

    return run


#: errno values of a write that failed (full disk, quota, I/O error, closed descriptor).
_OUTPUT_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EIO,
    errno.EFBIG,
    errno.EBADF,
    errno.EROFS,
    errno.ENXIO,
}


def _end_of_output() -> None:
    """141 when standard output is a pipe whose reader left part of the output unread."""
    from dnnlens.report.output import reader_took_everything

    sys.stdout.flush()
    if not reader_took_everything():
        _quiet_stdout()
        raise typer.Exit(EXIT_BROKEN_PIPE)


def _quiet_stdout() -> None:
    """Point standard output at the null device: Python's flush at exit must not fail again."""
    from dnnlens.report.output import ClosedStdout

    if isinstance(sys.stdout, ClosedStdout):
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file descriptor (tests)
        pass


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dnnlens {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """dnnlens: where did the time go in oneDNN?"""


@app.command()
@_last_resort
def analyze(
    paths: list[str] = typer.Argument(
        ..., help="Log files, globs, directories, or - for standard input (.gz is read too)."
    ),
    fmt: OutputFormat = typer.Option(
        OutputFormat.terminal, "--format", "-f", help="Report format."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    top: int = typer.Option(10, "--top", min=1, help="Rows per table in the terminal report."),
    details: bool = typer.Option(
        False, "--details", help="Terminal: every table, not only the verdict and breakdown."
    ),
    width: int | None = typer.Option(
        None, "--width", min=40, help="Terminal: line width (default COLUMNS or the terminal's)."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 2 if any line with a verbose marker is malformed."
    ),
    fail_on: FailOn = typer.Option(
        FailOn.never, "--fail-on", help="Exit 1 if a finding at or above this severity exists."
    ),
    rules: list[str] = typer.Option(
        [], "--rules", help="A rule file (YAML/TOML) or Python plugin to run too; repeatable."
    ),
    select: list[str] = typer.Option([], "--select", help="Run only these rules (names)."),
    ignore: list[str] = typer.Option([], "--ignore", help="Do not run these rules (names)."),
    config: Path | None = typer.Option(
        None, "--config", help="dnnlens.toml or pyproject.toml with [tool.dnnlens] thresholds."
    ),
    tee: bool = typer.Option(
        False, "--tee", help="With -: pass every input line through to stdout unchanged."
    ),
    live: bool = typer.Option(
        True, "--live/--no-live", help="With -: a live view on stderr while lines arrive."
    ),
    window: int = typer.Option(
        200_000,
        "--window",
        min=0,
        help="Events (the last ones) that iterations, graph, rules and charts look at; "
        "0 for all. Totals are always exact.",
    ),
    skip: int = typer.Option(
        0,
        "--skip-iterations",
        min=0,
        help="Leave out the first N iterations (warm-up), found in the exec stream.",
    ),
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=0, help="Processes scanning log files (0: one per CPU)."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar, no live view, no notes on stderr."
    ),
) -> None:
    """Parse oneDNN verbose logs and show where the time went."""
    from dnnlens.analysis.analysis import Analysis, AnalysisOptions
    from dnnlens.analysis.findings import severity_rank
    from dnnlens.rules.engine import RuleOptions, RuleSetupError
    from dnnlens.rules.verdict import apply_rules

    if paths == ["-"]:
        from dnnlens.reading.live import analyze_stream

        show_live = live and not quiet and sys.stderr.isatty()
        live_console = Console(stderr=True) if show_live else None
        analysis, _ = analyze_stream(
            sys.stdin.buffer,
            tee=sys.stdout.buffer if tee else None,
            window_events=window or None,
            live_console=live_console,
        )
        log = analysis.log
    elif _stream_file(paths, jobs, skip):
        from dnnlens.io.inputs import InputError
        from dnnlens.reading.stream import analyze_file_streaming

        try:
            analysis = analyze_file_streaming(paths[0], window_events=window or None)
        except InputError as exc:  # a large file that is not a text log
            raise _fail(str(exc)) from None
        log = analysis.log
    else:
        from dnnlens.reading.parallel import default_jobs
        from dnnlens.report.console import load_inputs

        log = load_inputs(paths, quiet, jobs=jobs or default_jobs())
        if not log.scans and log.framework is None:  # a trace alone is an input
            raise _fail("; ".join(log.input_errors) or "no input")
        analysis = Analysis(
            log, AnalysisOptions(window_events=window or None, skip_iterations=skip)
        )
        skipped = analysis.skipped
        if skipped is not None and skipped.events_dropped >= len(log.events):
            raise _fail(
                f"--skip-iterations {skip}: the log has {skipped.found} passes, so nothing "
                "is left to analyse"
            )
    options = RuleOptions(
        rule_paths=list(rules),
        select=list(select),
        ignore=list(ignore),
        config_path=str(config) if config else None,
    )
    try:
        apply_rules(analysis.prepare(), options)
    except RuleSetupError as exc:
        raise _fail(str(exc)) from None
    from dnnlens.report.output import render_analysis

    try:
        render_analysis(analysis, fmt.value, output, top=top, details=details, width=width)
    except UsageError as exc:
        raise _fail(str(exc)) from None
    from dnnlens.io.problems import input_problems, strict_problem

    problems = input_problems(log)
    for message in problems.notes if not quiet else []:
        _say("note", message)
    for message in problems.errors:
        _say("error", message)
    if problems.errors:
        raise typer.Exit(EXIT_USAGE)
    if strict and strict_problem(log):
        raise _fail(strict_problem(log))
    if fail_on is not FailOn.never:
        threshold = severity_rank(fail_on.value)
        if any(severity_rank(f.severity) >= threshold for f in analysis.findings):
            raise typer.Exit(EXIT_FINDINGS)


def _stream_file(paths: list[str], jobs: int, skip: int) -> bool:
    """One large plain log file, read serially: analyse it by streaming (bounded memory)."""
    from dnnlens.reading.stream import STREAM_FILE_MIN_BYTES

    if len(paths) != 1 or jobs != 1 or skip or not os.path.isfile(paths[0]):
        return False
    try:
        return os.path.getsize(paths[0]) >= STREAM_FILE_MIN_BYTES
    except OSError:
        return False


def _register_commands() -> None:
    import importlib

    from dnnlens.cli.commands import COMMAND_MODULES

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
