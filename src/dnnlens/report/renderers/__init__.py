"""Every output format of dnnlens: one renderer class each, chosen by name.

One module per format (``terminal``, ``json``, ``html``, ``ci`` for sarif, github and
junit, ``perfetto``, ``graph``, ``benchdnn``, ``tables`` for csv and parquet, ``runs`` for
several runs, ``diff`` and ``projection``), each a
:class:`~dnnlens.report.renderers.base.Renderer`; what they share, and the lookup by name,
is :mod:`dnnlens.report.renderers.base`. ``analyze --format`` takes the :data:`RENDERERS`;
``export``, ``graph`` and several runs use the others of :data:`ALL_RENDERERS`. Importing
this package registers the formats of one analysis and of several runs; each format's
module imports only the code of its own format, when it renders.
"""

from __future__ import annotations

from dnnlens.report.renderers.base import (
    ALL_RENDERERS,
    ANALYZE_FORMATS,
    RENDERERS,
    RUNS,
    Renderer,
    RenderOptions,
    RunSet,
    render_analysis,
    render_runs,
    renderer,
    write_runs,
)
from dnnlens.report.renderers.benchdnn import BenchdnnRenderer
from dnnlens.report.renderers.ci import CiRenderer
from dnnlens.report.renderers.graph import GraphRenderer
from dnnlens.report.renderers.html import HtmlRenderer
from dnnlens.report.renderers.json import JsonRenderer
from dnnlens.report.renderers.perfetto import PerfettoRenderer
from dnnlens.report.renderers.runs import RunsRenderer
from dnnlens.report.renderers.tables import TablesRenderer
from dnnlens.report.renderers.terminal import TerminalRenderer

ALL_RENDERERS.update(
    (r.name, r)
    for r in (
        TerminalRenderer(),
        JsonRenderer(),
        HtmlRenderer(),
        PerfettoRenderer(),
        GraphRenderer(),
        BenchdnnRenderer(),
        TablesRenderer("csv"),
        TablesRenderer("parquet"),
        CiRenderer("sarif", ".sarif"),
        CiRenderer("github", ".txt"),
        CiRenderer("junit", ".xml"),
    )
)
RENDERERS.update((name, ALL_RENDERERS[name]) for name in ANALYZE_FORMATS)
RUNS.update(
    (name, r if isinstance(r, CiRenderer) else RunsRenderer(name)) for name, r in RENDERERS.items()
)

__all__ = [
    "ALL_RENDERERS",
    "RENDERERS",
    "RUNS",
    "BenchdnnRenderer",
    "CiRenderer",
    "GraphRenderer",
    "HtmlRenderer",
    "JsonRenderer",
    "PerfettoRenderer",
    "Renderer",
    "RenderOptions",
    "RunSet",
    "RunsRenderer",
    "TablesRenderer",
    "TerminalRenderer",
    "render_analysis",
    "render_runs",
    "renderer",
    "write_runs",
]
