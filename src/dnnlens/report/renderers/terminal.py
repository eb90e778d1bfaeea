"""``--format terminal``: the terminal report of one analysis."""

from __future__ import annotations

from pathlib import Path

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.renderers.base import Renderer, RenderOptions


class TerminalRenderer(Renderer[Analysis]):
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
