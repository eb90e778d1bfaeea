"""``dnnlens run -- CMD ...``: run a program with oneDNN verbose on, watch it, analyse it.

The program's output is shown unchanged while a live view runs on stderr; everything it
prints is kept in a log file; at the end the report is printed and dnnlens exits with the
program's own exit code (2 if it could not be started).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import typer

from dnnlens.errors import fail, say

#: Variables set for the program unless the user already set them: every release family's
#: switch (MKLDNN_* for 0.x/1.0, DNNL_* for 1.1+, ONEDNN_* for 2.5+) and timestamps.
VERBOSE_ENV = {
    "ONEDNN_VERBOSE": "1",
    "DNNL_VERBOSE": "1",
    "MKLDNN_VERBOSE": "1",
    "ONEDNN_VERBOSE_TIMESTAMP": "1",
    "DNNL_VERBOSE_TIMESTAMP": "1",
}


def verbose_environment(base: dict[str, str], level: str, timestamps: bool) -> dict[str, str]:
    """``base`` plus the verbose switches the user has not set themselves."""
    env = dict(base)
    for name, value in VERBOSE_ENV.items():
        if name.endswith("_TIMESTAMP") and not timestamps:
            continue
        env.setdefault(name, value if name.endswith("_TIMESTAMP") else level)
    return env


def register(app: typer.Typer) -> None:
    """Add ``run`` to the command line."""

    @app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def run(
        ctx: typer.Context,
        log: Path | None = typer.Option(
            None, "--log", help="Keep the program's output here (default dnnlens-run-<time>.log)."
        ),
        level: str = typer.Option(
            "1", "--level", help="Verbose level for the program (1: exec lines; 2: create too)."
        ),
        timestamps: bool = typer.Option(
            True, "--timestamps/--no-timestamps", help="Ask oneDNN for line timestamps."
        ),
        live: bool = typer.Option(True, "--live/--no-live", help="Live view on stderr."),
        fmt: str = typer.Option("terminal", "--format", "-f", help="terminal or json."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    ) -> None:
        """Run CMD with oneDNN verbose on, show its output, then report: dnnlens run -- CMD."""
        from rich.console import Console

        from dnnlens.reading.live import analyze_stream
        from dnnlens.report.output import render_analysis
        from dnnlens.rules.engine import RuleOptions, RuleSetupError
        from dnnlens.rules.verdict import apply_rules

        command = list(ctx.args)
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            raise fail("no command given: dnnlens run -- python train.py")
        log_path = log or Path(f"dnnlens-run-{time.strftime('%Y%m%d-%H%M%S')}.log")
        env = verbose_environment(dict(os.environ), level, timestamps)
        try:
            proc = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
            )
        except OSError as exc:
            raise fail(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
        assert proc.stdout is not None
        live_console = Console(stderr=True) if live and sys.stderr.isatty() else None
        with log_path.open("wb") as kept:
            analysis, _ = analyze_stream(
                proc.stdout,
                name=str(log_path),
                tee=sys.stdout.buffer,
                copy_to=kept,
                live_console=live_console,
            )
        code = proc.wait()
        try:
            apply_rules(analysis.prepare(), RuleOptions())
        except RuleSetupError as exc:  # a bad configuration: the program's run is kept
            say("error", f"{exc}; log kept in {log_path}")
            raise typer.Exit(2) from None
        analysis.run_info = {"command": command, "exit_code": code, "log": str(log_path)}
        render_analysis(analysis, fmt, output)
        say("note", f"log kept in {log_path}; the program exited with {code}")
        raise typer.Exit(code)
