"""``dnnlens diff --format terminal|markdown|json|github|junit``: what changed between two
runs.

The layout of each format is :mod:`dnnlens.report.diff_report`; these renderers choose it by
name and send it where it goes. ``options.top`` is the rows per table (terminal, markdown),
``options.fail_if_slower`` the gate the JSON document and the CI formats state.
"""

from __future__ import annotations

from pathlib import Path

from dnnlens.analysis.diff import Diff
from dnnlens.report.renderers.base import Renderer, RenderOptions


class DiffJsonRenderer(Renderer[Diff]):
    """The diff as a JSON document (:class:`~dnnlens.report.schema.DiffDoc`)."""

    name, extension = "json", ".json"

    def render(self, analysis: Diff, options: RenderOptions) -> str:
        from dnnlens.report import diff_report

        return diff_report.render_json(analysis, options.fail_if_slower)


class DiffMarkdownRenderer(Renderer[Diff]):
    """The diff as GitHub-flavoured markdown (a PR comment)."""

    name, extension = "markdown", ".md"

    def render(self, analysis: Diff, options: RenderOptions) -> str:
        from dnnlens.report import diff_report

        return diff_report.render_markdown(analysis, options.top) + "\n"


class DiffTerminalRenderer(Renderer[Diff]):
    """The diff for a terminal: colour on a terminal only."""

    name, extension = "terminal", ".txt"

    def render(self, analysis: Diff, options: RenderOptions) -> str:
        import io

        from dnnlens.report import diff_report
        from dnnlens.report.console import make_console

        buf = io.StringIO()
        diff_report.render_terminal(analysis, make_console(file=buf, width=options.width),
                                    options.top)  # fmt: skip
        return buf.getvalue()

    def write(self, analysis: Diff, output: Path | None, options: RenderOptions) -> None:
        from dnnlens.report import diff_report
        from dnnlens.report.console import make_console
        from dnnlens.report.output import FILE_WIDTH, open_output

        if output is None:
            diff_report.render_terminal(analysis, make_console(width=options.width), options.top)
            return
        with open_output(output) as fh:
            console = make_console(file=fh, width=options.width or FILE_WIDTH)
            diff_report.render_terminal(analysis, console, options.top)


class DiffCiRenderer(Renderer[Diff]):
    """The diff's verdict for a CI service: one workflow annotation (``github``: an error
    when the gate fails, a warning when it is not applied (:meth:`Diff.gate`: the measurement
    cannot answer), else a notice) or a JUnit report of one test case (``junit``: failed with the
    gate, skipped when it is not applied)."""

    def __init__(self, fmt: str, extension: str) -> None:
        self.name = fmt  # type: ignore[misc]  # one class, two names
        self.extension = extension  # type: ignore[misc]

    def render(self, analysis: Diff, options: RenderOptions) -> str:
        from dnnlens.report import diff_report

        d, limit = analysis, options.fail_if_slower
        verdict = diff_report.verdict(d)
        decided = d.gate(limit)  # the decision the exit code takes
        refused, failed = decided.outcome == "refused", decided.outcome == "fail"
        gate = f" (--fail-if-slower {100 * limit:g}%)" if limit is not None else ""
        if refused and limit is not None:
            gate = f" (--fail-if-slower {100 * limit:g}% not applied)"
        details = f"{verdict}{gate} {diff_report.confidence_line(d)}"
        if self.name == "github":
            from dnnlens.report.annotations import command

            level = "error" if failed else "warning" if refused else "notice"
            return command(level, details, title="dnnlens diff") + "\n"
        from dnnlens.report.junit import diff_junit

        return diff_junit(verdict, failed, details, skipped=refused)


#: The formats ``diff --format`` takes, by name.
DIFF_RENDERERS: dict[str, Renderer[Diff]] = {
    r.name: r
    for r in (
        DiffTerminalRenderer(),
        DiffMarkdownRenderer(),
        DiffJsonRenderer(),
        DiffCiRenderer("github", ".txt"),
        DiffCiRenderer("junit", ".xml"),
    )
}
