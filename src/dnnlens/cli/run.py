"""``dnnlens run -- CMD ...``: run a program with oneDNN verbose on, watch it, analyse it.

It is ``CMD 2>&1 | dnnlens analyze - --tee`` with the program started for you: the same
reading, live view, analysis options and report (:mod:`dnnlens.cli.pipeline`). Besides:

* the program's output (standard output and error, merged; ``PYTHONUNBUFFERED=1`` unless
  set, so that a Python program's lines come as they are printed) is shown unchanged and
  kept in a log: ``dnnlens-runs/run-<date>-<time>-<pid>.log`` under the current directory (a new
  file for every run, never one another run writes), or ``--log FILE``; where it is kept is
  said when the program starts and again at the end;
* the report goes to standard error, or to ``-o``; ``-f json`` and ``-f html`` are written
  to ``-o``, or beside the log (``<log>.json``, ``<log>.html``), never into the program's
  output;
* the options, rule files, configuration and the paths of the log and the report are
  checked before the program starts;
* SIGINT and SIGTERM are passed on to the program (SIGINT only when the terminal did not
  send it to the program itself); its output is read until it exits; if it is still
  running ``--grace`` seconds later it gets SIGTERM, then SIGKILL: it is never left running;
* the exit code is the program's (128 + N when signal N ended it, as shells report it);
  when the program succeeded, dnnlens's own gate decides (1 for ``--fail-on``, 2 for
  ``--strict``); 2 when the program could not be started.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from dnnlens.cli import FailOn, OutputFormat, program_environment
from dnnlens.cli import pipeline as p
from dnnlens.cli.child import LEVEL_HELP, ChildError, ChildWatch, check_level, start
from dnnlens.cli.child import verbose_environment as verbose_env
from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.errors import fail, say

#: Where run logs are kept (under the current directory) unless ``--log`` names one.
RUNS_DIR = "dnnlens-runs"
#: The file a report format is written to beside the kept log, when -o is not given.
SUFFIXES = {"json": ".json", "html": ".html", "sarif": ".sarif", "junit": ".xml"}


def _new_log(directory: Path) -> tuple[Path, BinaryIO]:
    """A log file of its own for this run in ``directory`` (created exclusively)."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    for n in range(1000):
        path = directory / (f"{stem}.log" if n == 0 else f"{stem}-{n}.log")
        try:
            return path, path.open("xb", buffering=0)  # written as it comes
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: no free name for a run log")


def _open_log(log: Path | None) -> tuple[Path, BinaryIO, bool]:
    """The log's path, the open file, and whether this run created the name."""
    try:
        if log is None:
            return (*_new_log(Path(RUNS_DIR)), True)
        return log, log.open("wb", buffering=0), False
    except OSError as exc:
        where = log if log is not None else Path(RUNS_DIR)
        raise fail(f"{where}: cannot write the run log ({exc.strerror or exc})") from None


def register(app: typer.Typer) -> None:
    """Add ``run`` to the command line."""

    @app.command(context_settings={"allow_interspersed_args": False})
    def run(
        command: Annotated[
            list[str], typer.Argument(help="The program and its arguments.", metavar="CMD...")
        ],
        log: Annotated[
            Path | None,
            typer.Option(
                "--log",
                help=f"Keep the program's output here (default: a new file in {RUNS_DIR}/).",
            ),
        ] = None,
        level: Annotated[
            str | None, typer.Option("--level", callback=check_level, help=LEVEL_HELP)
        ] = None,
        timestamps: Annotated[
            bool, typer.Option("--timestamps/--no-timestamps", help="Ask oneDNN for timestamps.")
        ] = True,
        live: Annotated[
            bool, typer.Option("--live/--no-live", help="A live view below the program's output.")
        ] = True,
        grace: Annotated[
            float,
            typer.Option(
                "--grace",
                min=0.0,
                help="Seconds the program gets to end after Ctrl-C or SIGTERM, before SIGTERM "
                "(then as long again before SIGKILL).",
            ),
        ] = 10.0,
        fmt: p.FormatOption = OutputFormat.terminal,
        output: p.OutputOption = None,
        top: p.TopOption = 10,
        details: p.DetailsOption = False,
        width: p.WidthOption = None,
        strict: p.StrictOption = False,
        fail_on: p.FailOnOption = FailOn.never,
        rules: p.RulesOption = [],  # noqa: B006 - typer copies its defaults
        select: p.SelectOption = [],  # noqa: B006
        ignore: p.IgnoreOption = [],  # noqa: B006
        config: p.ConfigOption = None,
        window: p.WindowOption = DEFAULT_WINDOW_EVENTS,
        skip: p.SkipOption = 0,
        iteration_marker: p.MarkerOption = None,
        machine: p.MachineOption = None,
        quiet: p.QuietOption = False,
        exit_zero: p.ExitZeroOption = False,
        baseline: p.BaselineOption = None,
        write_baseline: p.WriteBaselineOption = None,
    ) -> None:
        """Run CMD with oneDNN verbose on, show its output, then report: dnnlens run -- CMD."""
        command = list(command)
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            raise fail("no command given: dnnlens run -- python train.py")
        settings = p.analysis_settings(
            rules=rules,
            select=select,
            ignore=ignore,
            config=config,
            window=window,
            skip=skip,
            iteration_marker=iteration_marker,
            machine=machine,
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
            report_to_stderr=True,
            input_errors_fail=False,
            exit_zero=exit_zero,
            baseline=baseline,
            write_baseline=write_baseline,
        )
        log_path, kept, created = _open_log(log)

        def give_up(message: str) -> typer.Exit:
            kept.close()
            if created:
                log_path.unlink(missing_ok=True)
            return fail(message)

        # a file beside the log; the terminal report and workflow annotations (read by the
        # CI from the job's output) go to standard error
        if fmt not in (OutputFormat.terminal, OutputFormat.github) and output is None:
            options.output = log_path.with_suffix(SUFFIXES.get(fmt.value, f".{fmt.value}"))
        problem = p.check_options(options)
        if problem is not None:
            raise give_up(problem)
        env = verbose_env(program_environment(), level, timestamps)
        try:
            proc = start(command, env, merge_stderr=True)
        except ChildError as exc:
            raise give_up(str(exc)) from None
        assert proc.stdout is not None
        if not quiet:
            say("note", f"keeping the program's output in {log_path}")
        watch = ChildWatch(proc, grace)

        def program_ended(opts: p.ReportOptions) -> None:
            opts.settings.run_info = {
                "command": command,
                "exit_code": watch.wait(),
                "log": str(log_path),
            }

        from dnnlens.io.signals import StopRequest

        try:
            with StopRequest(on_signal=watch.on_signal), kept:
                code = p.read_and_report(
                    ["-"],
                    options,
                    live=live,
                    tee=True,
                    stop=watch,
                    stdin=proc.stdout,
                    stdin_name=str(log_path),
                    copy_to=kept,
                    before_report=program_ended,
                )
        finally:
            watch.kill()
            proc.stdout.close()
        exit_code = watch.wait()
        if options.output is not None and not output:
            say("note", f"report written to {options.output}")
        say("note", f"log kept in {log_path}; the program exited with {exit_code}")
        raise typer.Exit(exit_code or code)
