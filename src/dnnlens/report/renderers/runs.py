"""Several runs in one format (JSON, HTML or terminal): a :class:`RunSet`."""

from __future__ import annotations

from pathlib import Path

from dnnlens.report.renderers.base import Renderer, RenderOptions, RunSet


class RunsRenderer(Renderer[RunSet]):
    """Several runs in one format: one document (JSON), page (HTML) or report (terminal).
    It renders a :class:`RunSet`, not one analysis; one instance per format
    (:data:`~dnnlens.report.renderers.base.RUNS`)."""

    def __init__(self, fmt: str) -> None:
        self.name = fmt

    def render(self, analysis: RunSet, options: RenderOptions) -> str:
        """The runs report as text."""
        a = analysis
        if self.name == "json":
            import json

            from dnnlens.report.json_report import runs_doc
            from dnnlens.report.schema import to_plain

            return json.dumps(to_plain(runs_doc(a.analyses, a.runs, a.log)), indent=2) + "\n"
        if self.name == "html":
            from dnnlens.report.html import render_runs

            return render_runs(a.analyses, a.runs)
        import io

        from dnnlens.report.console import make_console
        from dnnlens.report.terminal import render_runs as terminal_runs

        buf = io.StringIO()
        terminal_runs(a.analyses, a.runs, make_console(file=buf, width=options.width),
                      options.top, options.details)  # fmt: skip
        return buf.getvalue()

    def write(self, analysis: RunSet, output: Path | None, options: RenderOptions) -> None:
        """The runs report to ``output``, or to standard output (a terminal: in colour)."""
        from dnnlens.report.output import FILE_WIDTH, emit_text, open_output

        if self.name != "terminal":
            emit_text(self.render(analysis, options), output)
            return
        from dnnlens.report.console import make_console
        from dnnlens.report.terminal import render_runs as terminal_runs

        a = analysis
        if output is None:
            terminal_runs(a.analyses, a.runs, make_console(width=options.width), options.top,
                          options.details)  # fmt: skip
            return
        with open_output(output) as fh:
            console = make_console(file=fh, width=options.width or FILE_WIDTH)
            terminal_runs(a.analyses, a.runs, console, options.top, options.details)
