"""The report formats of ``analyze``: one small renderer class each, chosen by name.

A renderer has a ``name`` (what ``--format`` takes), a file ``extension`` and
``render(analysis, options)``; it only reads the analysis. New formats register here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from dnnlens.analysis.analysis import Analysis


@dataclass(frozen=True)
class RenderOptions:
    """What the user chose about the layout: rows per table, details, line width."""

    top: int = 10
    details: bool = False
    width: int | None = None


class Renderer:
    """One report format."""

    name: ClassVar[str] = ""
    extension: ClassVar[str] = ""
    #: Whether the format can go to a terminal (HTML needs a file).
    to_terminal: ClassVar[bool] = True

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        """The report as text."""
        raise NotImplementedError

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> None:
        """The report to ``output``, or to standard output."""
        from dnnlens.report.output import emit_text

        emit_text(self.render(analysis, options), output)


class JsonRenderer(Renderer):
    """The typed JSON document (:mod:`dnnlens.report.schema`)."""

    name, extension = "json", ".json"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.json_report import render_json

        return render_json(analysis) + "\n"


class HtmlRenderer(Renderer):
    """The self-contained HTML page (:mod:`dnnlens.report.html`)."""

    name, extension, to_terminal = "html", ".html", False

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.html import render_html

        return render_html(analysis)


class TerminalRenderer(Renderer):
    """The terminal report (:mod:`dnnlens.report.terminal`): colour on a terminal only."""

    name, extension = "terminal", ".txt"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        import io

        from dnnlens.report.console import make_console
        from dnnlens.report.terminal import render_terminal

        buf = io.StringIO()
        render_terminal(analysis, make_console(file=buf, width=options.width), options.top,
                        options.details)  # fmt: skip
        return buf.getvalue()

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> None:
        from dnnlens.report.console import make_console
        from dnnlens.report.output import FILE_WIDTH, open_output
        from dnnlens.report.terminal import render_terminal

        if output is None:
            console = make_console(width=options.width)
            render_terminal(analysis, console, options.top, options.details)
            return
        with open_output(output) as fh:
            console = make_console(file=fh, width=options.width or FILE_WIDTH)
            render_terminal(analysis, console, options.top, options.details)


RENDERERS: dict[str, Renderer] = {
    r.name: r for r in (TerminalRenderer(), JsonRenderer(), HtmlRenderer())
}


def renderer(name: str) -> Renderer:
    """The renderer of a format name; ``ValueError`` for an unknown one."""
    try:
        return RENDERERS[name]
    except KeyError:
        known = ", ".join(RENDERERS)
        raise ValueError(f"--format {name}: expected one of {known}") from None


def write_runs(
    analyses: list[Analysis],
    runs: list,
    fmt: str,
    output: Path | None,
    options: RenderOptions,
    log: object = None,
) -> None:
    """Several runs in one format: one document (JSON), page (HTML) or report (terminal);
    ``log`` (all the inputs) lists the inputs that are in no run (no verbose line)."""
    import json

    from dnnlens.report.output import FILE_WIDTH, emit_text, open_output

    if fmt == "json":
        from dnnlens.report.json_report import runs_doc
        from dnnlens.report.schema import to_plain

        emit_text(json.dumps(to_plain(runs_doc(analyses, runs, log)), indent=2) + "\n", output)
    elif fmt == "html":
        from dnnlens.report.html import render_runs

        emit_text(render_runs(analyses, runs), output)
    else:
        from dnnlens.report.console import make_console
        from dnnlens.report.terminal import render_runs as terminal_runs

        if output is None:
            terminal_runs(analyses, runs, make_console(width=options.width), options.top,
                          options.details)  # fmt: skip
            return
        with open_output(output) as fh:
            console = make_console(file=fh, width=options.width or FILE_WIDTH)
            terminal_runs(analyses, runs, console, options.top, options.details)
