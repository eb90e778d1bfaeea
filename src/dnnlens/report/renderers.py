"""Every output format of dnnlens: one renderer class each, chosen by name.

A renderer has a ``name`` (what ``--format`` or ``export`` takes), a file ``extension``,
``render(analysis, options)`` (the output as text) and ``write(analysis, output, options)``
(the output to a file, a directory or standard output; it returns what was written when
the command reports it). It only reads the analysis. ``analyze --format`` takes the
:data:`RENDERERS`; ``export``, ``graph`` and several runs use the others of
:data:`ALL_RENDERERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dnnlens.analysis.analysis import Analysis
from dnnlens.errors import UsageError


@dataclass(frozen=True)
class RenderOptions:
    """What the user chose about the output: rows per table (primitives of a benchdnn
    batch), details, line width; a graph's format; a Perfetto trace's window and events
    (``trace``: a :class:`~dnnlens.report.perfetto.TraceOptions`)."""

    top: int = 10
    details: bool = False
    width: int | None = None
    graph_format: str = "json"
    trace: Any = None
    #: JUnit: findings at or above this severity are failures (``--fail-on``)
    fail_on: str = "warning"


@dataclass
class RunSet:
    """Several runs of one set of inputs (:mod:`dnnlens.analysis.runs`), one analysis each:
    what a runs report renders. ``log`` (all the inputs) lists those that are in no run."""

    analyses: list[Analysis]
    runs: list[Any]
    log: Any = None


class Renderer:
    """One report format."""

    name: ClassVar[str] = ""
    extension: ClassVar[str] = ""
    #: Whether the format can go to a terminal (HTML needs a file).
    to_terminal: ClassVar[bool] = True

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        """The report as text."""
        raise NotImplementedError

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> Any:
        """The report to ``output``, or to standard output; what was written, for the
        formats whose command reports it (else ``None``)."""
        from dnnlens.report.output import emit_text

        emit_text(self.render(analysis, options), output)


class JsonRenderer(Renderer):
    """The typed JSON document (:mod:`dnnlens.report.schema`)."""

    name, extension = "json", ".json"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.json_report import render_json

        return render_json(analysis) + "\n"


class HtmlRenderer(Renderer):
    """The self-contained HTML page (:mod:`dnnlens.report.html`)."""

    name, extension, to_terminal = "html", ".html", False

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.html import render_html

        return render_html(analysis)


class TerminalRenderer(Renderer):
    """The terminal report (:mod:`dnnlens.report.terminal`): colour on a terminal only."""

    name, extension = "terminal", ".txt"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        import io

        from dnnlens.report.console import make_console
        from dnnlens.report.terminal import render_terminal

        buf = io.StringIO()
        render_terminal(analysis, make_console(file=buf, width=options.width), options.top,
                        options.details)  # fmt: skip
        return buf.getvalue()

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> None:
        from dnnlens.report.console import make_console
        from dnnlens.report.output import FILE_WIDTH, open_output
        from dnnlens.report.terminal import render_terminal

        if output is None:
            console = make_console(width=options.width)
            render_terminal(analysis, console, options.top, options.details)
            return
        with open_output(output) as fh:
            console = make_console(file=fh, width=options.width or FILE_WIDTH)
            render_terminal(analysis, console, options.top, options.details)


class PerfettoRenderer(Renderer):
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


class GraphRenderer(Renderer):
    """The op graph of one steady iteration (:mod:`dnnlens.report.graph_export`) in
    ``options.graph_format``: json, graphml, dot or mermaid."""

    name, extension = "graph", ".json"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.graph_export import render

        return render(analysis.graph, options.graph_format, analysis.steady)


class BenchdnnRenderer(Renderer):
    """benchdnn reproducers of the ``options.top`` costliest primitives
    (:mod:`dnnlens.report.benchdnn`): one text, or one ``<driver>.batch`` file per driver
    when the output is a directory; ``write`` returns the files it wrote."""

    name, extension = "benchdnn", ".txt"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.benchdnn import render_batch

        return render_batch(analysis, options.top)

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> Any:
        from dnnlens.report.benchdnn import batches
        from dnnlens.report.output import emit_text, input_paths, refuse_input

        if output is None or not _is_directory(output):
            emit_text(self.render(analysis, options), output)
            return [output] if output is not None else []
        output.mkdir(parents=True, exist_ok=True)
        written = []
        for driver, text in batches(analysis, options.top).items():
            target = output / f"{driver}.batch"
            refuse_input(target, input_paths(analysis.log))
            emit_text(text, target)
            written.append(target)
        return written


def _is_directory(output: Path) -> bool:
    """A directory given as the output (the command line makes one named ``DIR/``)."""
    return output.is_dir()


class TablesRenderer(Renderer):
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


class RunsRenderer:
    """Several runs in one format: one document (JSON), page (HTML) or report (terminal).
    It renders a :class:`RunSet`, not one analysis; one instance per format (:data:`RUNS`)."""

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


class CiRenderer(Renderer):
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
    from dnnlens.report.output import input_paths
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


#: Every format's renderer: ``analyze --format`` ones, ``export`` ones and ``graph``.
ALL_RENDERERS: dict[str, Renderer] = {
    r.name: r
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
}

#: The formats ``analyze --format`` takes.
RENDERERS: dict[str, Renderer] = {
    name: ALL_RENDERERS[name] for name in ("terminal", "json", "html", "sarif", "github", "junit")
}

#: The renderers of several runs, by format (those of :data:`RENDERERS`; the CI formats
#: render a :class:`RunSet` themselves).
RUNS: dict[str, Any] = {
    name: ALL_RENDERERS[name] if isinstance(ALL_RENDERERS[name], CiRenderer) else RunsRenderer(name)
    for name in RENDERERS
}


def renderer(name: str, among: dict[str, Renderer] = RENDERERS) -> Renderer:
    """The renderer of a format name (``--format`` ones by default); ``ValueError`` for an
    unknown one."""
    try:
        return among[name]
    except KeyError:
        known = ", ".join(among)
        raise ValueError(f"--format {name}: expected one of {known}") from None


def write_runs(
    analyses: list[Analysis],
    runs: list,
    fmt: str,
    output: Path | None,
    options: RenderOptions,
    log: object = None,
) -> None:
    """Several runs in one format (:class:`RunsRenderer`)."""
    RUNS[fmt].write(RunSet(analyses, runs, log), output, options)
