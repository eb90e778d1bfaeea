"""The ``dnnlens`` command line: wiring only, no analysis of its own.

Exit codes: 0 analysed; 1 findings at or above ``--fail-on``; 2 usage or input error.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from dnnlens import __version__

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="dnnlens",
    help="Why is a deep-learning workload slow on a CPU? Analyse oneDNN verbose logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(str, Enum):
    """Report formats of ``analyze``."""

    terminal = "terminal"
    json = "json"
    html = "html"


class FailOn(str, Enum):
    """Severities for ``--fail-on``."""

    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


def _console(output: Path | None) -> Console:
    no_color = bool(os.environ.get("NO_COLOR"))
    if output is not None:
        return Console(file=output.open("w", encoding="utf-8"), no_color=True, width=160)
    console = Console(no_color=no_color)
    if not console.is_terminal:
        console = Console(no_color=True, width=140)
    return console


def _say(kind: str, message: str) -> None:
    """One line on stderr: never wrapped, never read as markup, no control characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
    color = "red" if kind != "note" else "yellow"
    typer.echo(typer.style(f"dnnlens: {kind}:", fg=color) + f" {text}", err=True)


def _fail(message: str) -> typer.Exit:
    _say("error", message)
    return typer.Exit(EXIT_USAGE)


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
def analyze(
    paths: list[str] = typer.Argument(
        ..., help="Log files, globs, directories, or - for standard input (.gz is read too)."
    ),
    fmt: OutputFormat = typer.Option(
        OutputFormat.terminal, "--format", "-f", help="Report format."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    top: int = typer.Option(10, "--top", min=1, help="Rows per table in the terminal report."),
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
    window: int | None = typer.Option(
        None, "--window", min=0,
        help="With -: raw events kept for sequence rules (totals are always exact).",
    ),
) -> None:
    """Parse oneDNN verbose logs and show where the time went."""
    from dnnlens.analysis.findings import severity_rank
    from dnnlens.analysis.result import analyze_log
    from dnnlens.analysis.rules.engine import RuleOptions, RuleSetupError, run_rules
    from dnnlens.load import load

    if paths == ["-"]:
        from dnnlens.live import analyze_stream

        live_console = Console(stderr=True) if live and sys.stderr.isatty() else None
        analysis, _ = analyze_stream(
            sys.stdin.buffer, tee=sys.stdout.buffer if tee else None,
            window_events=window, live_console=live_console,
        )
        log = analysis.log
    else:
        log = load(paths)
        if not log.scans and log.framework is None:  # issue 3: a trace alone is an input
            raise _fail("; ".join(log.input_errors) or "no input")
        analysis = analyze_log(log)
    options = RuleOptions(
        rule_paths=list(rules), select=list(select), ignore=list(ignore),
        config_path=str(config) if config else None,
    )
    try:
        analysis.findings = run_rules(analysis, options)
    except RuleSetupError as exc:
        raise _fail(str(exc)) from None
    if fmt is OutputFormat.html:
        from dnnlens.report.html import render_html

        text = render_html(analysis)
        if output is None:
            raise _fail("--format html needs --output FILE")
        output.write_text(text, encoding="utf-8")
    elif fmt is OutputFormat.json:
        from dnnlens.report.json_report import render_json

        text = render_json(analysis)
        if output is not None:
            output.write_text(text + "\n", encoding="utf-8")
        else:
            sys.stdout.write(text + "\n")
    else:
        from dnnlens.report.terminal import render_terminal

        render_terminal(analysis, _console(output), top=top)
    errors = list(log.input_errors) + [s.read_error for s in log.scans if s.read_error]
    err = Console(stderr=True)
    for message in errors:
        err.print(f"[red]dnnlens: error:[/red] {message}", highlight=False)
    if errors:
        raise typer.Exit(EXIT_USAGE)
    malformed = sum(s.malformed for s in log.scans)
    if strict and malformed:
        raise _fail(f"{malformed} malformed verbose lines (--strict)")
    if fail_on is not FailOn.never:
        threshold = severity_rank(fail_on.value)
        if any(severity_rank(f.severity) >= threshold for f in analysis.findings):
            raise typer.Exit(EXIT_FINDINGS)


def _register_commands() -> None:
    import importlib

    from dnnlens.commands import COMMAND_MODULES

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
