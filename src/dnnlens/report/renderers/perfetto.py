"""``export perfetto``: the Chrome trace-event JSON of one analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.errors import UsageError
from dnnlens.report.renderers.base import Renderer, RenderOptions


class PerfettoRenderer(Renderer[Analysis]):
    """The Chrome trace-event JSON for ui.perfetto.dev (:mod:`dnnlens.report.perfetto`);
    ``write`` streams it (gzip for ``.gz``) and returns its
    :class:`~dnnlens.report.perfetto.TraceStats`."""

    name, extension, to_terminal = "perfetto", ".json", False

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        import json

        from dnnlens.report.perfetto import build_trace

        return json.dumps(build_trace(analysis, options.trace)) + "\n"

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> Any:
        from dnnlens.report.perfetto import write_trace

        if output is None:
            raise UsageError("a Perfetto trace needs --output FILE")
        output.parent.mkdir(parents=True, exist_ok=True)
        return write_trace(analysis, output, options.trace)
