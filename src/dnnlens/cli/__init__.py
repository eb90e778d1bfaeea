"""The ``dnnlens`` command line: wiring only, no analysis of its own.

Exit codes: 0 analysed; 1 findings at or above ``--fail-on``; 2 usage or input error; 3 an
internal error of dnnlens (a bug; ``analyze``); 4 the output could not be written (disk
full, I/O error, standard output closed); 141 standard output closed early (``| head``).
See ``docs/input-policy.md``.
"""

from __future__ import annotations

# isort: off
import dnnlens.cli.started  # noqa: F401 - first: the CPU times before the imports below
# isort: on

import errno
import functools
import os
import sys
from collections.abc import Callable
from typing import NoReturn

import typer

from dnnlens._version import __version__
from dnnlens.cli import pipeline as p
from dnnlens.cli.pipeline import FailOn as FailOn
from dnnlens.cli.pipeline import OutputFormat as OutputFormat
from dnnlens.cli.usage import UsageGroup
from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    OutputError,
)
from dnnlens.errors import EXIT_USAGE as EXIT_USAGE  # the exit codes, for callers
from dnnlens.errors import fail as _fail
from dnnlens.errors import say as _say

#: Set for this process by :func:`main` unless the user set it: Arrow's default allocator
#: (mimalloc) keeps the pages it freed, a higher peak than the system's for the same time
#: (``docs/speed.md``). Never passed on to a program dnnlens runs.
OWN_ENVIRONMENT = {"ARROW_DEFAULT_MEMORY_POOL": "system"}
_set_by_main: set[str] = set()


def program_environment() -> dict[str, str]:
    """The environment of a program dnnlens runs (``run``, ``capture``): the user's, without
    what :func:`main` set for dnnlens itself."""
    env = dict(os.environ)
    for name in _set_by_main:
        env.pop(name, None)
    return env


app = typer.Typer(
    name="dnnlens",
    cls=UsageGroup,  # a usage error is one line, help never breaks a token
    help="Why is a deep-learning workload slow on a CPU? Analyse oneDNN verbose logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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
            except typer.Exit as exc:  # 0 or "findings" (1): no verdict the reader has not seen
                if exc.exit_code in (EXIT_OK, EXIT_FINDINGS):
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
        False,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """dnnlens: where did the time go in oneDNN?"""


@app.command()
@_last_resort
def analyze(
    paths: list[str] = typer.Argument(
        ..., help="Log files, globs, directories, or - for standard input (.gz is read too)."
    ),
    fmt: p.FormatOption = OutputFormat.terminal,
    output: p.OutputOption = None,
    top: p.TopOption = 10,
    details: p.DetailsOption = False,
    width: p.WidthOption = None,
    strict: p.StrictOption = False,
    fail_on: p.FailOnOption = FailOn.never,
    rules: p.RulesOption = [],  # noqa: B006 - typer's list default, never mutated
    select: p.SelectOption = [],  # noqa: B006
    ignore: p.IgnoreOption = [],  # noqa: B006
    config: p.ConfigOption = None,
    tee: bool = typer.Option(
        False,
        "--tee",
        help="With -: pass every input line through to stdout unchanged (the report then "
        "goes to stderr or -o).",
    ),
    live: bool = typer.Option(
        True, "--live/--no-live", help="With -: a live view below the program's lines."
    ),
    window: p.WindowOption = DEFAULT_WINDOW_EVENTS,
    skip: p.SkipOption = 0,
    iteration_marker: p.MarkerOption = None,
    machine: p.MachineOption = None,
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=0,
        help="Processes scanning log files (0: one per CPU; by default one per idle CPU "
        "when the plain files add up to 32 MiB or more, and a note says so).",
    ),
    quiet: p.QuietOption = False,
    combine: p.CombineOption = False,
    exit_zero: p.ExitZeroOption = False,
    statistics: p.StatisticsOption = False,
    baseline: p.BaselineOption = None,
    write_baseline: p.WriteBaselineOption = None,
    show_settings: bool = typer.Option(
        False,
        "--show-settings",
        help="Print the settings this command would use, and the files they come from; "
        "read nothing.",
    ),
) -> None:
    """Parse oneDNN verbose logs and show where the time went."""
    settings = p.analysis_settings(
        rules=rules,
        select=select,
        ignore=ignore,
        config=config,
        window=window,
        skip=skip,
        iteration_marker=iteration_marker,
        machine=machine,
        combine=combine,
    )
    options = p.ReportOptions(
        settings,
        fmt=fmt,
        output=output,
        top=top,
        strict=strict,
        fail_on=fail_on,
        quiet=quiet,
        details=details,
        width=width,
        exit_zero=exit_zero,
        statistics=statistics,
        baseline=baseline,
        write_baseline=write_baseline,
    )
    if show_settings:
        from dnnlens.cli.settings_view import show_settings as show

        raise typer.Exit(show(paths, options))
    raise typer.Exit(p.read_and_report(paths, options, jobs=jobs, live=live, tee=tee))


def _register_commands() -> None:
    import importlib

    from dnnlens.cli.commands import COMMAND_MODULES

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_commands()


def main() -> None:
    """Console-script entry point: the command, then :func:`_end_process`."""
    for name, value in OWN_ENVIRONMENT.items():
        if name not in os.environ:
            os.environ[name] = value  # read by Arrow when it is first used, after this
            _set_by_main.add(name)
    from dnnlens.io.pages import allow

    allow()  # the reading's memory pages (dnnlens.io.pages): the command's process only
    try:
        app()
        code: object = EXIT_OK
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    _end_process(code)


def _end_process(code: object) -> NoReturn:
    """End the process once the command is done, without the interpreter's teardown.

    Freeing every module and object of pandas, numpy and pyarrow at exit takes longer than
    analysing a small log (``docs/speed.md``), and nothing a finished command needs
    happens in it. What a normal exit does that matters still happens, in order: threads
    that are not daemons are waited for, exit handlers run (worker pools, clusters,
    temporary files), standard output and error are flushed. ``code`` is what
    :class:`SystemExit` carries: None is 0, a message is printed and is 1. Under a profiler
    or a tracer (cProfile, coverage) the exit is a normal one, so that they write their
    results.
    """
    import atexit
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    if code is None:
        code = EXIT_OK
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that went away, a stream already closed
            pass
    os._exit(code)


if __name__ == "__main__":
    main()
