"""``dnnlens project LOG``: what a change would buy, projected per change and combined.

Every projected time names its source (``log``, ``measured``, ``scaled``, ``roofline``,
``assumed``) and the assumptions behind it; what the log measured comes first, the
estimates after it (see :mod:`dnnlens.analysis.projection`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dnnlens.errors import fail


def register(app: typer.Typer) -> None:
    """Add ``project`` to the command line."""

    from dnnlens.cli import _last_resort

    @app.command()
    @_last_resort
    def project(
        log: str = typer.Argument(..., help="The oneDNN verbose log to project from."),
        remove: list[str] = typer.Option(
            [],
            "--remove",
            help="reorders, activation-reorders, weight-reorders or cache-misses (repeatable).",
        ),
        replace: list[str] = typer.Option(
            [],
            "--replace",
            help="reference-kernels: run them as fast as an optimised kernel measured for "
            "the same primitive.",
        ),
        fuse: list[str] = typer.Option([], "--fuse", help="eltwise: fuse into the producer."),
        dtype: str | None = typer.Option(None, "--dtype", help="bf16: run f32 work in bf16."),
        machine: Path | None = typer.Option(
            None, "--machine", help="Machine profile (dnnlens machine probe -o FILE)."
        ),
        measured: list[str] = typer.Option(
            [],
            "--measured",
            help="Another log of the same model (other layout or dtype) to take times from.",
        ),
        benchdnn: Path | None = typer.Option(
            None,
            "--benchdnn",
            help="A benchdnn binary: run the top primitives alone and "
            "show isolated beside in-workload times.",
        ),
        benchdnn_top: int = typer.Option(
            5, "--benchdnn-top", min=1, help="How many top primitives to run in benchdnn."
        ),
        fmt: str = typer.Option("terminal", "--format", "-f", help="terminal or json."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Write here."),
    ) -> None:
        """Project the iteration time: first what the log measured (reorders, reference
        kernels, cache misses), then roofline estimates (fused eltwise, bf16).

        Without a change option every change is projected. Each change is shown alone,
        then all of them together.
        """

        from dnnlens.analysis.machine import load_machine
        from dnnlens.analysis.projection import CHANGES, normalize_changes
        from dnnlens.app.projecting import projection
        from dnnlens.app.session import SessionError
        from dnnlens.report.renderers.base import RenderOptions, renderer
        from dnnlens.report.renderers.projection import PROJECTION_RENDERERS, ProjectionSet

        try:
            chosen = renderer(fmt, PROJECTION_RENDERERS)
        except ValueError:
            raise fail(f"--format {fmt}: expected terminal or json") from None
        try:
            changes = normalize_changes(remove, fuse, dtype, replace) or list(CHANGES)
            model = load_machine(machine) if machine else None
        except ValueError as exc:
            raise fail(str(exc)) from None
        try:
            result, analysis = projection(log, changes, model, measured)
        except SessionError as exc:
            raise fail(str(exc)) from None
        bench: list[Any] = []
        if benchdnn is not None:
            from dnnlens.tools.benchdnn_run import run_benchdnn

            try:
                bench = run_benchdnn(str(benchdnn), analysis, top=benchdnn_top)
            except OSError as exc:
                raise fail(f"cannot run benchdnn {benchdnn}: {exc.strerror or exc}") from None
        shown = ProjectionSet(result, bench if benchdnn is not None else None)
        chosen.write(shown, output, RenderOptions())
