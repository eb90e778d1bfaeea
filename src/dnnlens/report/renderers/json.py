"""``--format json``: the typed JSON document of one analysis."""

from __future__ import annotations

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.renderers.base import Renderer, RenderOptions


class JsonRenderer(Renderer[Analysis]):
    """The typed JSON document (:mod:`dnnlens.report.schema`)."""

    name, extension = "json", ".json"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.json_report import render_json

        return render_json(analysis) + "\n"
