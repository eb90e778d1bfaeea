"""``dnnlens capture [-o PREFIX] -- python train.py ...``: run a program with verbose on.

The child gets ``ONEDNN_VERBOSE`` (and the older ``DNNL_VERBOSE``) plus
``ONEDNN_VERBOSE_TIMESTAMP=1``; its standard output is shown and copied into
``PREFIX.log``; its exit code is passed through (128 + N when a signal N ended it, 127 when
the program cannot be started).

What it cannot do: start the PyTorch profiler inside another process. For a trace to link
against, wrap the interesting part of the program in ``with dnnlens.capture():`` -- under
this command that only runs the profiler and writes ``PREFIX.trace.json`` (it finds PREFIX
in ``DNNLENS_CAPTURE_PREFIX``), then ``dnnlens analyze PREFIX.log PREFIX.trace.json``.
"""

from __future__ import annotations

import typer

from dnnlens.cli import program_environment
from dnnlens.cli.run import check_level
from dnnlens.errors import say

ENV_ACTIVE = "DNNLENS_CAPTURE_ACTIVE"
ENV_PREFIX = "DNNLENS_CAPTURE_PREFIX"
EXIT_NOT_FOUND = 127


def child_env(base: dict[str, str], prefix: str, level: str) -> dict[str, str]:
    """The child's environment: verbose with timestamps, unbuffered Python, our markers."""
    env = dict(base)
    env.update(
        {
            "ONEDNN_VERBOSE": level,
            "DNNL_VERBOSE": level,
            "ONEDNN_VERBOSE_TIMESTAMP": "1",
            "DNNL_VERBOSE_TIMESTAMP": "1",
            "PYTHONUNBUFFERED": "1",
            ENV_ACTIVE: "1",
            ENV_PREFIX: prefix,
        }
    )
    return env


def run_captured(command: list[str], prefix: str, level: str = "1") -> int:
    """Run ``command``, tee its stdout into ``PREFIX.log``; return its exit code."""
    import os
    import subprocess
    import sys

    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    env = child_env(program_environment(), prefix, level)
    with open(prefix + ".log", "wb") as log:
        try:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
        except OSError as exc:
            say("error", f"cannot run {command[0]!r}: {exc.strerror or exc}")
            return EXIT_NOT_FOUND
        assert proc.stdout is not None
        out = sys.stdout.buffer
        fd = proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except KeyboardInterrupt:  # the child got the SIGINT too: keep reading its end
                continue
            if not data:
                break
            log.write(data)
            out.write(data)
            out.flush()
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                continue
    return 128 - code if code < 0 else code


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
        level: str = typer.Option(
            "1",
            "--level",
            callback=check_level,
            help="ONEDNN_VERBOSE value: 1 executions, 2 creations too, or a v3.2+ name "
            "(profile_exec, all, ...).",
        ),
    ) -> None:
        """Run a program with oneDNN verbose (and timestamps) on; its stdout -> PREFIX.log.

        The profiler trace comes from `with dnnlens.capture():` inside the program, which
        under this command writes PREFIX.trace.json. Then: dnnlens analyze PREFIX.log
        PREFIX.trace.json
        """
        raise typer.Exit(run_captured(list(command), output, level))
