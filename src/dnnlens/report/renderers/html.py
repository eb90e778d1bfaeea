"""``--format html``: the self-contained HTML page of one analysis."""

from __future__ import annotations

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.renderers.base import Renderer, RenderOptions


class HtmlRenderer(Renderer[Analysis]):
    """The self-contained HTML page (:mod:`dnnlens.report.html`)."""

    name, extension, to_terminal = "html", ".html", False

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.html import render_html

        return render_html(analysis)
