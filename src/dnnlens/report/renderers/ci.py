"""``analyze --format sarif|github|junit``: the formats CI services read, of one run or of
several (a :class:`~dnnlens.report.renderers.base.RunSet`)."""

from __future__ import annotations

from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.output import input_paths
from dnnlens.report.renderers.base import Renderer, RenderOptions, RunSet


class CiRenderer(Renderer[Any]):
    """A format CI services read (SARIF, workflow annotations, JUnit XML), of one run or
    of a :class:`RunSet`, from the JSON report's finding documents
    (:mod:`dnnlens.report.ci_runs`)."""

    def __init__(self, fmt: str, extension: str) -> None:
        self.name = fmt  # type: ignore[misc]  # one class, three names
        self.extension = extension  # type: ignore[misc]

    def render(self, analysis: Any, options: RenderOptions) -> str:
        from dnnlens._version import __version__

        runs = ci_runs(analysis)
        if self.name == "sarif":
            from dnnlens.report.sarif import render_sarif

            return render_sarif(runs, __version__)
        if self.name == "github":
            from dnnlens.report.annotations import render_annotations

            return render_annotations(runs)
        from dnnlens.report.junit import render_junit

        return render_junit(runs, options.fail_on)


def ci_runs(analysis: Analysis | RunSet) -> list[Any]:
    """The :class:`~dnnlens.report.ci_runs.CiRun` of each run: one analysis is one run named
    after nothing (its inputs), a :class:`RunSet` one per run."""
    from dnnlens.report.ci_runs import CiRun
    from dnnlens.report.json_report import finding_doc
    from dnnlens.report.schema import to_plain

    def one(a: Analysis, name: str, inputs: tuple[str, ...]) -> CiRun:
        docs = tuple(to_plain(finding_doc(f, a)) for f in a.findings)
        return CiRun(name, inputs, tuple(a.rules_run), docs)

    if isinstance(analysis, RunSet):
        return [
            one(a, run.name, tuple(run.paths))
            for a, run in zip(analysis.analyses, analysis.runs, strict=True)
        ]
    return [one(analysis, "", tuple(input_paths(analysis.log)))]
