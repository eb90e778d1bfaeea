"""What every renderer shares: the :class:`Renderer` base, :class:`RenderOptions`,
:class:`RunSet`, the registry of formats by name, and the one way a command renders an
analysis (:func:`render_analysis`, :func:`render_runs`).

A renderer has a ``name`` (what ``--format`` or ``export`` takes), a file ``extension``,
``render(analysis, options)`` (the output as text) and ``write(analysis, output, options)``
(the output to a file, a directory or standard output; it returns what was written when
the command reports it). It only reads what it renders: an analysis, a :class:`RunSet`, a
diff or a projection. Each format is one module of this package; the package fills
:data:`ALL_RENDERERS`, :data:`RENDERERS` (what ``analyze --format`` takes) and :data:`RUNS`
when it is imported, and this module imports none of them (the formats do not import each
other). Where the bytes go (a file, standard output, an input refused) is
:mod:`dnnlens.report.output`, which renderers call and which imports no renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from dnnlens.analysis.analysis import Analysis
from dnnlens.errors import UsageError
from dnnlens.report.output import emit_text, input_paths, is_stdout, refuse_input


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
    #: ``diff``: the gate (a fraction) its JSON document states.
    fail_if_slower: float | None = None


@dataclass
class RunSet:
    """Several runs of one set of inputs (:mod:`dnnlens.analysis.runs`), one analysis each:
    what a runs report renders. ``log`` (all the inputs) lists those that are in no run."""

    analyses: list[Analysis]
    runs: list[Any]
    log: Any = None


#: What a renderer renders: an :class:`Analysis`, a :class:`RunSet`, a diff, a projection.
S = TypeVar("S")


class Renderer(Generic[S]):
    """One report format of one kind of report (``Renderer[Analysis]``: ``analyze``)."""

    name: ClassVar[str] = ""
    extension: ClassVar[str] = ""
    #: Whether the format can go to a terminal (HTML needs a file).
    to_terminal: ClassVar[bool] = True

    def render(self, analysis: S, options: RenderOptions) -> str:
        """The report as text."""
        raise NotImplementedError

    def write(self, analysis: S, output: Path | None, options: RenderOptions) -> Any:
        """The report to ``output``, or to standard output; what was written, for the
        formats whose command reports it (else ``None``)."""
        emit_text(self.render(analysis, options), output)


#: Every format's renderer of one analysis: ``analyze --format`` ones, ``export`` ones and
#: ``graph`` (filled by the package, in the order of :mod:`dnnlens.report.renderers`).
ALL_RENDERERS: dict[str, Renderer[Analysis]] = {}

#: The formats ``analyze --format`` takes.
ANALYZE_FORMATS = ("terminal", "json", "html", "sarif", "github", "junit")

#: The formats ``analyze --format`` takes, by name.
RENDERERS: dict[str, Renderer[Analysis]] = {}

#: The renderers of several runs, by format (those of :data:`RENDERERS`; the CI formats
#: render a :class:`RunSet` themselves).
RUNS: dict[str, Renderer[RunSet]] = {}


def renderer(name: str, among: dict[str, Any] = RENDERERS) -> Any:
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
    """Several runs in one format (:data:`~dnnlens.report.renderers.base.RUNS`)."""
    RUNS[fmt].write(RunSet(analyses, runs, log), output, options)


def _renderer_for(fmt: str, output: Path | None, analyses: list[Any]) -> Any:
    """The renderer of ``fmt``, once the output is known to be allowed (not an input, a
    file for a page)."""
    for a in analyses:
        refuse_input(output, input_paths(a.log))
    try:
        chosen = renderer(fmt)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not chosen.to_terminal and output is None:
        raise UsageError(f"--format {fmt} needs --output FILE")
    return chosen


def render_analysis(
    analysis: Any,
    fmt: str,
    output: Path | None,
    top: int = 10,
    details: bool = False,
    width: int | None = None,
    fail_on: str = "warning",
) -> None:
    """An :class:`~dnnlens.analysis.analysis.Analysis` in a registered format
    (:data:`RENDERERS`).

    Raises :class:`~dnnlens.errors.UsageError` for an unknown format, for ``html`` without
    ``output`` (a page is not for a terminal) and for an ``output`` that is one of the inputs.
    """
    chosen = _renderer_for(fmt, output, [analysis])
    if is_stdout(output) and chosen.to_terminal:
        output = None  # the report as it is on standard output without -o
    options = RenderOptions(top=top, details=details, width=width, fail_on=fail_on)
    chosen.write(analysis, output, options)


def render_runs(
    analyses: list[Any],
    runs: list[Any],
    fmt: str,
    output: Path | None,
    log: Any = None,
    top: int = 10,
    details: bool = False,
    width: int | None = None,
    fail_on: str = "warning",
) -> None:
    """Several runs (:mod:`dnnlens.analysis.runs`) in one report, like
    :func:`render_analysis` for one."""
    if _renderer_for(fmt, output, analyses).to_terminal and is_stdout(output):
        output = None  # the report as it is on standard output without -o
    options = RenderOptions(top=top, details=details, width=width, fail_on=fail_on)
    write_runs(analyses, runs, fmt, output, options, log)
