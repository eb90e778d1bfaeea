"""``dnnlens graph LOG``: the primitive-level op graph of one steady iteration.

Formats: ``json`` (the contract of :mod:`dnnlens.report.graph_export`), ``graphml``,
``dot`` (Graphviz) and ``mermaid``. ``--marker REGEX`` makes the program's own marker lines
(``step 3 done``) separate the iterations instead of detecting them. ``--window`` and
``--skip-iterations`` mean what they mean to ``analyze`` (same defaults), so both commands
read one set of passes, warm-up and steady state off one log.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from dnnlens.cli.pipeline import SkipOption, WindowOption
from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.errors import EXIT_USAGE, UsageError, say
from dnnlens.errors import fail as _fail


class GraphFormat(StrEnum):
    """Output formats of ``dnnlens graph``."""

    json = "json"
    graphml = "graphml"
    dot = "dot"
    mermaid = "mermaid"


def register(app: typer.Typer) -> None:
    """Add ``graph`` to the command line."""
    from dnnlens.cli import _last_resort

    @app.command()
    @_last_resort
    def graph(
        paths: list[str] = typer.Argument(
            ..., help="Log files, globs or directories (.gz is read too); - for standard input."
        ),
        fmt: GraphFormat = typer.Option(GraphFormat.json, "--format", "-f", help="Output format."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Write it here."),
        marker: str | None = typer.Option(
            None, "--marker", help="Regex of the program's own lines that separate iterations."
        ),
        window: WindowOption = DEFAULT_WINDOW_EVENTS,
        skip: SkipOption = 0,
    ) -> None:
        """The op graph of one steady iteration, with stats from all of them."""
        from dnnlens.app.session import SessionError, Settings, marker_problem, open_inputs

        problem = marker_problem(marker, "--marker")
        if problem is not None:
            raise _fail(problem)
        settings = Settings(window=window, skip_iterations=skip, iteration_marker=marker)
        try:  # the run analyze reports, with its warm-up and iterations
            outcome = open_inputs(paths, settings, quiet=True)
            if not outcome.log.scans:
                raise SessionError("; ".join(outcome.log.input_errors) or "no input")
            analysis = outcome.single("INPUTS", combine=False)
        except SessionError as exc:
            raise _fail(str(exc)) from None
        log = outcome.log

        from dnnlens.io.problems import input_problems
        from dnnlens.report.output import input_paths, refuse_input
        from dnnlens.report.renderers import ALL_RENDERERS, RenderOptions

        try:
            refuse_input(output, input_paths(log))
        except UsageError as exc:
            raise _fail(str(exc)) from None
        try:
            ALL_RENDERERS["graph"].write(analysis, output, RenderOptions(graph_format=fmt.value))
        except OSError as exc:
            if exc.filename is None:
                raise
            raise _fail(f"cannot write {output}: {exc.strerror or exc}") from None
        # a bad input beside good ones: the graph of the good ones, then the errors (exit 2)
        problems = input_problems(log)
        for message in problems.errors:
            say("error", message)
        if problems.errors:
            raise typer.Exit(EXIT_USAGE)
