"""The Python entry point: ``dnnlens.analyze``, ``dnnlens.diff``, ``dnnlens.project``.

Each reads its inputs and analyses them through the same code as the command of the same
name (:mod:`dnnlens.app.session`, :mod:`dnnlens.app.compare`, :mod:`dnnlens.app.projecting`),
so ``analyze(paths).to_dict()`` is what ``dnnlens analyze PATHS --format json`` prints.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dnnlens.app.session import (
    DEFAULT_WINDOW_EVENTS,
    Outcome,
    SessionError,
    Settings,
    analyse,
    marker_problem,
)

if TYPE_CHECKING:
    import pandas as pd

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


class DnnlensError(Exception):
    """Base of the errors ``dnnlens.analyze``, ``diff`` and ``project`` raise."""


class InputError(DnnlensError, ValueError):
    """The inputs could not be analysed; the message is the one line the command prints."""


@dataclass(frozen=True)
class Evidence:
    """Where a finding's evidence is: an input and a line number in it."""

    path: str
    line: int


@dataclass(frozen=True)
class Finding:
    """One ranked finding, as ``findings`` of the JSON report holds it."""

    rule: str
    code: str
    severity: str
    title: str
    message: str
    fix: str
    #: the steady time per typical iteration it accounts for (None: not about time)
    impact_ms_per_iteration: float | None
    #: its one share, of the report's basis (the step beside a profiler trace), as printed
    share_of_iteration: float | None
    evidence: tuple[Evidence, ...]
    data: dict[str, Any]
    basis: str
    #: what fixing it would save, per unit of ``basis`` (None: unknown, or not about time)
    saving_ms_per_iteration: float | None = None
    #: what the saving rests on: measured, same_shape, roofline, removal or unknown
    saving_basis: str = "unknown"
    #: how the saving was had, in a few words
    saving_note: str = ""


def _path(value: Any, name: str) -> str:
    """One path argument as text; :class:`InputError` for anything else (bytes included:
    a name that is not text is shown as Python shows it, never decoded by guess)."""
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str) and path:
            return path
    raise InputError(f"{name}={value!r}: expected a path (str or os.PathLike)")


def _specs(paths: Paths, name: str = "paths") -> list[str]:
    """The paths of ``paths``: one path or a sequence of them, at least one."""
    if isinstance(paths, str | os.PathLike):
        return [_path(paths, name)]
    if not isinstance(paths, Sequence) or isinstance(paths, bytes | bytearray):
        raise InputError(f"{name}={paths!r}: expected a path or a list of paths")
    if not paths:
        raise InputError(f"{name}: no input (an empty list)")
    return [_path(p, name) for p in paths]


def _names_or_paths(value: Any, name: str) -> list[Any]:
    """``rules``: one rule file or a sequence of them."""
    if isinstance(value, str | os.PathLike):
        return [value]
    if not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
        raise InputError(f"{name}={value!r}: expected a path or a list of paths")
    return list(value)


def _count(value: Any, name: str, option: str, low: int = 0) -> int:
    """An integer option as the command line takes it (``--window``: >= 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name}={value!r}: expected an integer >= {low} (as {option})")
    if value < low:
        raise InputError(f"{name}={value}: expected an integer >= {low} (as {option})")
    return value


def _names(value: Any, name: str) -> list[str]:
    """A repeatable option (``--select``): one name or a sequence of names."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{name}={value!r}: expected a name or a list of names")
    return list(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{name}={value!r}: expected True or False")
    return value


def _machine(path: str | os.PathLike[str] | None) -> Any:
    """The machine profile of ``machine=`` (None: the log's own), as ``--machine`` reads it."""
    if path is None:
        return None
    from dnnlens.analysis.machine import load_machine

    try:
        return load_machine(Path(path))
    except ValueError as exc:
        raise InputError(str(exc)) from None


#: The columns of :attr:`Report.framework_ops` (also when there is no trace or table: an
#: empty frame that still has them, so that code written against a trace runs on a log).
FRAMEWORK_OP_COLUMNS = (
    "name", "calls", "time_ms", "self_ms", "onednn", "link", "onednn_time_ms",
    "onednn_share", "calls_with_onednn", "primitive_count", "reorder_count",
    "reorder_time_ms", "links", "source",
)  # fmt: skip


class Report:
    """What ``dnnlens analyze`` reports on some inputs: findings first, then the tables.

    ``runs`` holds one :class:`Report` per run when the inputs are several runs (each input
    is a run unless it is a rank or rotation of another); a single run's report is its own
    only run.
    """

    def __init__(self, outcome: Outcome, index: int | None = None) -> None:
        self._outcome = outcome
        self._index = index

    @property
    def _analyses(self) -> list[Any]:
        every = self._outcome.analyses
        return every if self._index is None else [every[self._index]]

    @cached_property
    def _doc(self) -> dict[str, Any]:
        from dnnlens.report.json_report import report_doc, runs_doc
        from dnnlens.report.schema import to_plain

        o = self._outcome
        if self._index is None and len(o.analyses) > 1:
            return to_plain(runs_doc(o.analyses, o.runs, o.log))
        doc = report_doc(self._analyses[0])
        if self._index is not None and len(o.analyses) > 1:
            run = o.runs[self._index]
            doc.run_name, doc.run_inputs = run.name, run.how
            doc.run_paths, doc.run_paired = list(run.paths), getattr(run, "paired", "")
        return to_plain(doc)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as plain data (equal to ``dnnlens analyze --format json``): a
        copy each time, so a caller's edits never reach the report or a later call."""
        import copy

        return copy.deepcopy(self._doc)

    @property
    def runs(self) -> list[Report]:
        """One report per run (a single run: ``[self]``)."""
        if self._index is not None or len(self._outcome.analyses) == 1:
            return [self]
        return [Report(self._outcome, i) for i in range(len(self._outcome.analyses))]

    def _run_docs(self) -> list[dict[str, Any]]:
        doc = self._doc
        return doc["runs"] if "runs" in doc and "findings" not in doc else [doc]

    @property
    def findings(self) -> list[Finding]:
        """The ranked findings (largest known saving first, then time with an unknown
        saving), run after run."""
        out = []
        for doc in self._run_docs():
            for f in doc["findings"]:
                out.append(
                    Finding(
                        rule=f["rule"],
                        code=f["code"],
                        severity=f["severity"],
                        title=f.get("title", ""),
                        message=f["message"],
                        fix=f.get("fix", ""),
                        impact_ms_per_iteration=f.get("impact_ms_per_iteration"),
                        share_of_iteration=f.get("share_of_iteration"),
                        evidence=tuple(Evidence(e["path"], e["line"]) for e in f["evidence"]),
                        data=dict(f.get("data") or {}),
                        basis=f.get("basis", "iteration"),
                        saving_ms_per_iteration=f.get("saving_ms_per_iteration"),
                        saving_basis=f.get("saving_basis", "unknown"),
                        saving_note=f.get("saving_note", ""),
                    )
                )
        return out

    @property
    def notes(self) -> list[str]:
        """The notes the report carries (what was left out, and why)."""
        return [n for doc in self._run_docs() for n in doc.get("notes", [])]

    def _table(self, rows_of: Any) -> pd.DataFrame:
        import pandas as pd

        frames = []
        several = len(self._analyses) > 1
        for i, (analysis, doc) in enumerate(zip(self._analyses, self._run_docs(), strict=True)):
            frame = rows_of(analysis, doc)
            if several:
                frame = frame.assign(run=doc.get("run_name") or str(i))
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    @property
    def events(self) -> pd.DataFrame:
        """Every event the analysis looked at (one row per verbose line: create, exec)."""
        return self._table(lambda a, _doc: a.events.copy())

    @property
    def primitives(self) -> pd.DataFrame:
        """The primitives table of the report (one row per distinct primitive)."""
        import pandas as pd

        return self._table(lambda _a, doc: pd.DataFrame(doc.get("primitives") or []))

    @property
    def framework_ops(self) -> pd.DataFrame:
        """Framework ops of a profiler trace or table, linked to their primitives (no
        rows without one)."""
        import pandas as pd

        return self._table(
            lambda _a, doc: pd.DataFrame(
                doc.get("framework_ops") or [], columns=list(FRAMEWORK_OP_COLUMNS)
            )
        )

    def html(self) -> str:
        """The self-contained HTML report (what ``--format html`` writes)."""
        from dnnlens.report import html

        if len(self._analyses) > 1:
            return html.render_runs(self._outcome.analyses, self._outcome.runs)
        return html.render_html(self._analyses[0])

    def _repr_html_(self) -> str:
        import html as escape

        page = self.html()
        # the page in its own frame: its styles stay inside, the notebook's stay outside
        return (
            f'<iframe srcdoc="{escape.escape(page, quote=True)}" '
            'style="width:100%;height:600px;border:0"></iframe>'
        )

    def exit_code(self, fail_on: str = "never") -> int:
        """The command's exit code for these findings: 1 at or above ``fail_on``, else 0."""
        from dnnlens.app.session import reaches

        if fail_on == "never":
            return 0
        findings = [f for a in self._analyses for f in a.findings]
        return 1 if reaches(findings, fail_on) else 0

    def __repr__(self) -> str:
        first = self.findings[0].message if self.findings else "no findings"
        return f"<dnnlens.Report: {len(self.findings)} findings; first: {first}>"


def analyze(
    paths: Paths,
    *,
    skip_iterations: int = 0,
    window: int = DEFAULT_WINDOW_EVENTS,
    iteration_marker: str | None = None,
    combine: bool = False,
    machine: str | os.PathLike[str] | None = None,
    rules: Sequence[str] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    config: str | os.PathLike[str] | None = None,
    jobs: int = 1,
) -> Report:
    """Analyse oneDNN verbose logs, PyTorch profiler traces and tables, as
    ``dnnlens analyze`` does with the same options (``--skip-iterations``, ``--window``,
    ``--iteration-marker``, ``--combine``, ``--machine``, ``--rules``, ``--select``,
    ``--ignore``, ``--config``, ``-j``).

    Raises :class:`InputError` with the command's one-line message when the inputs cannot be
    analysed; inputs that could be read are analysed and the others named in the report's
    ``inputs`` and notes, as on the command line.
    """
    from dnnlens.reading import read

    specs = _specs(paths)
    if "-" in specs:
        raise InputError("standard input ('-') is for the command line; pass file paths")
    if iteration_marker is not None and not isinstance(iteration_marker, str):
        raise InputError(f"iteration_marker={iteration_marker!r}: expected a regex (str)")
    jobs = _count(jobs, "jobs", "-j")
    profile = _machine(None if machine is None else _path(machine, "machine"))
    settings = Settings(
        skip_iterations=_count(skip_iterations, "skip_iterations", "--skip-iterations"),
        window=_count(window, "window", "--window"),
        iteration_marker=iteration_marker,
        combine=_flag(combine, "combine"),
        machine=profile,
        rules=[_path(r, "rules") for r in _names_or_paths(rules, "rules")],
        select=_names(select, "select"),
        ignore=_names(ignore, "ignore"),
        config=_path(config, "config") if config is not None else None,
    )
    problem = marker_problem(iteration_marker, "iteration_marker")
    if problem is not None:
        raise InputError(problem)
    log = read(specs, jobs=jobs, window_events=settings.reading_window(), marker=iteration_marker)
    if not log.scans and log.framework is None:
        raise InputError("; ".join(log.input_errors) or "no input")
    try:
        return Report(analyse(log, settings))
    except SessionError as exc:
        raise InputError(str(exc)) from None


class DiffReport:
    """What ``dnnlens diff`` reports: the typical step or iteration of two runs compared."""

    def __init__(self, diff: Any) -> None:
        #: the :class:`dnnlens.analysis.diff.Diff` behind the report
        self.diff = diff

    def to_dict(self, fail_if_slower: float | None = None) -> dict[str, Any]:
        """The JSON report as plain data (equal to ``dnnlens diff --format json``)."""
        from dnnlens.report.diff_report import diff_doc
        from dnnlens.report.schema import to_plain

        return to_plain(diff_doc(self.diff, fail_if_slower))

    @property
    def slower_fraction(self) -> float | None:
        """How much slower NEW is than BASE (0.05: 5% slower; negative: faster)."""
        return self.diff.slower_fraction

    def _repr_markdown_(self) -> str:
        from dnnlens.report.diff_report import render_markdown

        return render_markdown(self.diff)


def diff(
    base: str | os.PathLike[str], new: str | os.PathLike[str], *, basis: str = "typical"
) -> DiffReport:
    """Compare two runs as ``dnnlens diff BASE NEW`` does (``basis``: typical or mean)."""
    from dnnlens.app.compare import compare

    try:
        if not isinstance(basis, str):
            raise InputError(f"basis={basis!r}: typical or mean")
        return DiffReport(compare(_path(base, "base"), _path(new, "new"), basis))
    except SessionError as exc:
        raise InputError(str(exc)) from None


class ProjectionReport:
    """What ``dnnlens project`` reports: the iteration without each cause, then all."""

    def __init__(self, projection: Any) -> None:
        #: the :class:`dnnlens.analysis.projection.Projection` behind the report
        self.projection = projection

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as plain data (equal to ``dnnlens project --format json``)."""
        from dnnlens.report.projection_report import projection_doc
        from dnnlens.report.schema import to_plain

        return to_plain(projection_doc(self.projection))


def project(
    log: str | os.PathLike[str],
    *,
    changes: Sequence[str] = (),
    machine: str | os.PathLike[str] | None = None,
    measured: Sequence[str | os.PathLike[str]] = (),
) -> ProjectionReport:
    """Project the iteration time of ``log`` as ``dnnlens project`` does (``changes``:
    names of ``--remove``/``--replace``/``--fuse``/``--dtype`` changes; empty: all)."""
    from dnnlens.app.projecting import projection

    profile = _machine(None if machine is None else _path(machine, "machine"))
    names = _names(changes, "changes")
    others = [_path(m, "measured") for m in _names_or_paths(measured, "measured")]
    try:
        result, _ = projection(_path(log, "log"), names, profile, others)
    except SessionError as exc:
        raise InputError(str(exc)) from None
    return ProjectionReport(result)
