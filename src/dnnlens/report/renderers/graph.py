"""``dnnlens graph``: the op graph of one steady iteration."""

from __future__ import annotations

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.renderers.base import Renderer, RenderOptions


class GraphRenderer(Renderer[Analysis]):
    """The op graph of one steady iteration (:mod:`dnnlens.report.graph_export`) in
    ``options.graph_format``: json, graphml, dot or mermaid."""

    name, extension = "graph", ".json"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.graph_export import render

        return render(analysis.graph, options.graph_format, analysis.steady)
