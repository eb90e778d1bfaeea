"""``dnnlens capture [-o PREFIX] -- python train.py ...``: run a program with verbose on.

The child's environment and life are those of every program dnnlens starts
(:mod:`dnnlens.cli.child`: verbose on for every release family, timestamps, signals passed
on); its standard output is shown and copied into ``PREFIX.log``; its exit code is passed
through (128 + N when a signal N ended it, 127 when the program cannot be started).

What it cannot do: start the PyTorch profiler inside another process. For a trace to link
against, wrap the interesting part of the program in ``with dnnlens.capture():`` -- under
this command that only runs the profiler and writes ``PREFIX.trace.json`` (it finds PREFIX
in ``DNNLENS_CAPTURE_PREFIX``), then ``dnnlens analyze PREFIX.log PREFIX.trace.json``.
"""

from __future__ import annotations

import typer

from dnnlens.cli import program_environment
from dnnlens.cli.child import (
    LEVEL_HELP,
    ChildError,
    ChildWatch,
    check_level,
    start,
    verbose_environment,
)
from dnnlens.errors import say

ENV_ACTIVE = "DNNLENS_CAPTURE_ACTIVE"
ENV_PREFIX = "DNNLENS_CAPTURE_PREFIX"
EXIT_NOT_FOUND = 127
#: Seconds the program gets to end after Ctrl-C or SIGTERM before SIGTERM, then SIGKILL.
GRACE_SECONDS = 10.0


def child_env(base: dict[str, str], prefix: str, level: str | None) -> dict[str, str]:
    """The child's environment: the policy of :mod:`dnnlens.cli.child`, plus the markers
    that tell ``dnnlens.capture()`` inside it where to write its trace."""
    return verbose_environment(base, level, True, {ENV_ACTIVE: "1", ENV_PREFIX: prefix})


def run_captured(command: list[str], prefix: str, level: str | None = None) -> int:
    """Run ``command``, tee its stdout into ``PREFIX.log``; return its exit code."""
    import os
    import select
    import sys

    from dnnlens.io.signals import StopRequest

    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    env = child_env(program_environment(), prefix, level)
    with open(prefix + ".log", "wb") as log:
        try:
            proc = start(command, env, merge_stderr=False)
        except ChildError as exc:
            say("error", str(exc))
            return EXIT_NOT_FOUND
        assert proc.stdout is not None
        watch = ChildWatch(proc, GRACE_SECONDS)
        out = sys.stdout.buffer
        fd = proc.stdout.fileno()
        try:
            with StopRequest(on_signal=watch.on_signal):
                while True:
                    # signals are passed on; the output is read to its end
                    ready, _, _ = select.select([fd], [], [], 0.1)
                    watch.tick()
                    if not ready:
                        continue
                    data = os.read(fd, 1 << 16)
                    if not data:
                        break
                    log.write(data)
                    out.write(data)
                    out.flush()
                return watch.wait()
        finally:
            watch.kill()
            proc.stdout.close()


def register(app: typer.Typer) -> None:
    """Add ``capture`` to the command line."""

    @app.command(
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )
    def capture(
        command: list[str] = typer.Argument(..., help="The program and its arguments."),
        output: str = typer.Option(
            "dnnlens_run", "--output", "-o", help="Output prefix: writes PREFIX.log."
        ),
        level: str | None = typer.Option(None, "--level", callback=check_level, help=LEVEL_HELP),
    ) -> None:
        """Run a program with oneDNN verbose (and timestamps) on; its stdout -> PREFIX.log.

        The profiler trace comes from `with dnnlens.capture():` inside the program, which
        under this command writes PREFIX.trace.json. Then: dnnlens analyze PREFIX.log
        PREFIX.trace.json
        """
        if output == "-":
            from dnnlens.errors import fail

            raise fail("-o -: the output is a prefix of files (PREFIX.log), not standard output")
        raise typer.Exit(run_captured(list(command), output, level))
