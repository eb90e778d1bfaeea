"""``dnnlens project --format terminal|json``: the projected iteration time.

The layout of each format is :mod:`dnnlens.report.projection_report`; these renderers choose
it by name and send it where it goes. What they render is a :class:`ProjectionSet`: the
projection and, when benchdnn was run, its isolated times.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnnlens.analysis.projection import Projection
from dnnlens.report.renderers.base import Renderer, RenderOptions


@dataclass
class ProjectionSet:
    """A projection and the benchdnn results of its top primitives (``None``: benchdnn was
    not run, which the document and the report tell apart from no result)."""

    projection: Projection
    bench: list[Any] | None = None


class ProjectionJsonRenderer(Renderer[ProjectionSet]):
    """The projection as a JSON document (:class:`~dnnlens.report.schema.ProjectionDoc`)."""

    name, extension = "json", ".json"

    def render(self, analysis: ProjectionSet, options: RenderOptions) -> str:
        from dnnlens.report import projection_report

        return projection_report.render_json(analysis.projection, analysis.bench)


class ProjectionTerminalRenderer(Renderer[ProjectionSet]):
    """The projection for a terminal, then the benchdnn times when benchdnn was run."""

    name, extension = "terminal", ".txt"

    def render(self, analysis: ProjectionSet, options: RenderOptions) -> str:
        import io

        from dnnlens.report.console import make_console

        buf = io.StringIO()
        self._print(analysis, make_console(file=buf, width=options.width))
        return buf.getvalue()

    def write(self, analysis: ProjectionSet, output: Path | None, options: RenderOptions) -> None:
        from dnnlens.report.output import report_console

        self._print(analysis, report_console(output, options.width))

    @staticmethod
    def _print(analysis: ProjectionSet, console: Any) -> None:
        from dnnlens.report import projection_report

        projection_report.render_terminal(analysis.projection, console)
        if analysis.bench is not None:
            projection_report.render_bench(analysis.bench, console)


#: The formats ``project --format`` takes, by name.
PROJECTION_RENDERERS: dict[str, Renderer[ProjectionSet]] = {
    r.name: r for r in (ProjectionTerminalRenderer(), ProjectionJsonRenderer())
}
