"""``export csv`` and ``export parquet``: the event table as a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.errors import UsageError
from dnnlens.report.renderers.base import Renderer, RenderOptions, RunSet


class TablesRenderer(Renderer[Analysis]):
    """The event table (and a trace's ops) as a dataset partitioned by run and rank
    (:mod:`dnnlens.report.tables_export`): a directory of files, so it has no one text;
    ``write`` takes the :class:`RunSet` of the inputs (every run, as ``analyze`` makes them;
    ``export`` gives it) or one analysis (one run) and returns the
    :class:`~dnnlens.report.tables_export.ExportResult`."""

    to_terminal = False

    def __init__(self, fmt: str) -> None:
        self.name = fmt  # type: ignore[misc]  # csv or parquet: one class, two names
        self.extension = ""  # type: ignore[misc]

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        raise UsageError(f"{self.name} tables are a directory of files: give --output DIR")

    def write(self, analysis: Any, output: Path | None, options: RenderOptions) -> Any:
        from dnnlens.report.tables_export import export_tables

        if output is None:
            raise UsageError(f"{self.name} tables need --output DIR")
        if isinstance(analysis, RunSet):
            return export_tables(analysis.analyses, analysis.runs, output, self.name)
        from dnnlens.analysis.runs import find_runs

        # one analysis is one run: its inputs, named as analyze names a run of them
        return export_tables([analysis], find_runs(analysis.log, combine=True), output, self.name)
