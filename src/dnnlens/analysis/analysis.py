"""The one analysis of a set of parsed inputs: every derived fact, computed once, on first use.

An :class:`Analysis` is built from a :class:`~dnnlens.model.ParsedLog`, which it never
changes, and from :class:`AnalysisOptions` (the window, the passes to skip, marker lines),
which are applied when it is built. Each fact is a property computed on first use and kept:
the summary, the iterations and the steady state (written once into :attr:`Analysis.events`
as the ``iteration`` and ``steady`` columns), per-primitive statistics, the one typical
iteration, the op graph, the reorders with their cost, the framework links, the roofline
points and the findings. Rules read it through their context, renderers only read it, and
``diff`` and ``project`` build one or two and compare them, so one log can never give two
different numbers.

Two scopes of events, both documented in every report:

* **all events** (after ``skip_iterations``): the summary, its totals and breakdowns, and
  ``primitives``: exact sums that a reader reproduces with grep and awk;
* **the window**: the last ``window_events`` events of those, which the sequence analyses
  (iterations, steady state, the typical iteration, the op graph, the rules, the charts)
  look at, so that they cost the same on a log of any length.

A fact that fails to compute raises :class:`AnalysisError`: a bug of dnnlens, reported as
such (exit 3), never replaced by a second way of computing the same number.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import category_mask, str_values
from dnnlens.analysis.findings import BASES, Finding
from dnnlens.analysis.iterations import Iterations, find_iterations
from dnnlens.analysis.shares import share
from dnnlens.analysis.steady import SteadyState, steady_state
from dnnlens.analysis.summary import Summary, overflow_note, primitive_execs, summarize_stats
from dnnlens.analysis.timing import TypicalIteration, record_stats, typical_iteration
from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.model import ParsedLog
from dnnlens.model.stats import stats_from_events

if TYPE_CHECKING:
    from dnnlens.analysis.basis import ReportBasis
    from dnnlens.analysis.creations import Creations
    from dnnlens.analysis.dispatch import DispatchReason
    from dnnlens.analysis.framework import FrameworkAnalysis
    from dnnlens.analysis.graph import OpGraph
    from dnnlens.analysis.linking import LinkResult
    from dnnlens.analysis.machine import Machine
    from dnnlens.analysis.model_name import ModelName
    from dnnlens.analysis.producer import Producer
    from dnnlens.analysis.timing_trust import TimingTrust
    from dnnlens.analysis.training import TrainingStep

__all__ = [
    "DEFAULT_WINDOW_EVENTS",
    "REORDER_COLUMNS",
    "Analysis",
    "AnalysisError",
    "AnalysisOptions",
]

#: Lines a printed profiler table has beyond its rows (rules, head, totals, blank lines).
TABLE_FRAME_LINES = 8

#: Columns of :attr:`Analysis.reorders`: the op graph's reorder table plus its cost.
#: ``count``/``time_ms`` cover the window (warm-up too); ``p50_ms`` is the node's median;
#: ``steady_count`` its executions in steady passes; ``typical_ms`` = steady_count x the
#: typical run of its line; ``per_iteration`` = steady_count / steady passes; ``iter_ms``
#: its part of the typical iteration; ``steady`` whether it runs in every steady pass.
REORDER_COLUMNS = (
    "node", "record", "steady", "tensor", "role", "converts", "round_trip", "count", "time_ms",
    "p50_ms", "steady_count", "typical_ms", "per_iteration", "iter_ms", "dims",
    "src_layout", "dst_layout", "src_dtype", "dst_dtype", "producer", "consumer",
    "consumer_kind", "round_trip_with", "impl", "path", "line",
)  # fmt: skip

T = TypeVar("T")


class AnalysisError(Exception):
    """A derived fact could not be computed: a bug of dnnlens, not of the input."""


def fact(compute: Callable[[Any], T]) -> cached_property[T]:
    """A derived fact: computed once on first use; a failure is an :class:`AnalysisError`."""

    @functools.wraps(compute)
    def run(self: Any) -> T:
        try:
            with np.errstate(all="ignore"):  # an inf from 1e308 ms times is a value, not noise
                return compute(self)
        except AnalysisError:
            raise
        except Exception as exc:
            detail = (str(exc).strip().splitlines() or [""])[0][:200]
            raise AnalysisError(
                f"computing {compute.__name__} failed: {type(exc).__name__}: {detail}"
            ) from exc

    return cached_property(run)


@dataclass(frozen=True)
class AnalysisOptions:
    """What the user chose about the scope of an analysis.

    ``window_events``: events the sequence analyses look at (the last ones; ``None`` or 0:
    all). ``skip_iterations``: leading passes left out of everything, the summary included.
    ``marker_lines``: per input path, the line numbers of the program's own marker lines
    that separate passes (see :func:`dnnlens.analysis.iterations.marker_lines`).
    ``machine``: the machine profile the user gave (``--machine FILE``): every peak and
    efficiency is measured against it instead of the log's header.
    """

    window_events: int | None = DEFAULT_WINDOW_EVENTS
    skip_iterations: int = 0
    marker_lines: Mapping[str, np.ndarray] | None = None
    machine: Machine | None = field(default=None, compare=False)


@dataclass
class Skipped:
    """What ``skip_iterations`` left out."""

    iterations: int
    found: int
    events_dropped: int
    first_line: int | None


@dataclass
class Window:
    """The window of events the sequence analyses look at, when it is not all of them."""

    events_total: int
    events_analysed: int
    first_line: int
    #: the input of the window's first event (with several inputs, the line alone is not enough)
    first_input: str = ""
    note: str = (
        "iterations, graph, rules and charts use the last events only; "
        "the summary and primitives use all of them"
    )


def _first_event(events: pd.DataFrame) -> tuple[int, str]:
    """The line and input of the first event (0 and "" when there is none)."""
    if not len(events):
        return 0, ""
    return int(events["line"].iloc[0]), str(events["input"].iloc[0])


class Analysis:
    """Every derived fact of one set of parsed inputs (see the module docstring)."""

    def __init__(self, log: ParsedLog, options: AnalysisOptions | None = None) -> None:
        self.log = log
        self.options = options or AnalysisOptions()
        #: The rules' verdicts in report order (largest known saving first, ``rules.verdict``);
        #: set once by the rules engine's caller.
        self.findings: list[Finding] = []
        #: The rules that looked at it (``dnnlens.rules.engine.RuleRun``), set with them.
        self.rules_run: list[Any] = []
        #: Notes for the reader that are facts of this analysis (not of one input).
        self.notes: list[str] = []
        #: Facts about how the analysis was run (``dnnlens run``: the command and its code).
        self.run_info: dict[str, Any] | None = None

    # -- scopes ----------------------------------------------------------------------------
    @fact
    def _skip(self) -> tuple[pd.DataFrame, Skipped | None]:
        events = self.log.events
        count = self.options.skip_iterations
        if count <= 0 or not len(events):
            return events, None
        it = self._find_iterations(events)
        later = (it.iteration >= count).nonzero()[0]
        first = int(later[0]) if len(later) else len(events)
        line = int(events["line"].iloc[first]) if first < len(events) else None
        kept = events.iloc[first:].reset_index(drop=True)
        return kept, Skipped(count, it.count, first, line)

    @property
    def all_events(self) -> pd.DataFrame:
        """Every event after the skipped passes: what the summary counts."""
        return self._skip[0]

    @property
    def skipped(self) -> Skipped | None:
        """What ``skip_iterations`` left out, or ``None``."""
        return self._skip[1]

    @fact
    def _windowed(self) -> tuple[pd.DataFrame, Window | None]:
        events = self.all_events
        size = self.options.window_events
        total = len(events)
        if self.log.window is not None:  # the reader kept only the last events
            w = self.log.window
            return events, Window(w.events_total, total, *_first_event(events))
        if size and total > size:
            cut = events.iloc[total - size :].reset_index(drop=True)
            return cut, Window(total, size, *_first_event(cut))
        return events, None

    @property
    def window(self) -> Window | None:
        """The window of events the sequence analyses look at, or ``None`` for all."""
        return self._windowed[1]

    @fact
    def events(self) -> pd.DataFrame:
        """The window's events, with ``iteration`` and ``steady`` columns added once."""
        base = self._windowed[0]
        st = self.steady
        return base.assign(iteration=st.iteration, steady=st.steady)

    # -- exact totals ----------------------------------------------------------------------
    @fact
    def record_totals(self) -> pd.DataFrame:
        """Per-record counts and sums over all events (:mod:`dnnlens.model.stats`)."""
        if self.log.record_stats is not None and self.skipped is None:
            return self.log.record_stats
        return stats_from_events(self.all_events)

    @fact
    def summary(self) -> Summary:
        """Totals and breakdowns over all events (:mod:`dnnlens.analysis.summary`)."""
        return summarize_stats(self.record_totals, self.log.records, self._diagnostic_counts())

    def _diagnostic_counts(self) -> dict[str, int]:
        if self.log.diagnostic_counts is not None:
            return dict(self.log.diagnostic_counts)
        diag = self.log.diagnostics
        if diag.empty:
            return {}
        sizes = diag.groupby("operation", observed=True).size()
        return {str(k): int(v) for k, v in sizes.items() if v}

    # -- iterations and steady state -------------------------------------------------------
    @fact
    def iterations(self) -> Iterations:
        """The passes of the window's exec stream (:mod:`dnnlens.analysis.iterations`)."""
        return self._find_iterations(self._windowed[0])

    def _find_iterations(self, events: pd.DataFrame) -> Iterations:
        """Iterations of some events: the user's marker lines, else the program's step
        lines, else the period of the exec stream (one way, for the skip and the window)."""
        program = {scan.path: scan.program_lines for scan in self.log.scans}
        tables: dict[str, list[tuple[int, int]]] = {}
        if self.log.framework is not None:
            for table in self.log.framework.tables:
                # the rule, head and total lines around the rows
                span = (table.line, table.line + table.size + TABLE_FRAME_LINES)
                tables.setdefault(table.source, []).append(span)
        return find_iterations(events, self.options.marker_lines, program, tables)

    @fact
    def steady(self) -> SteadyState:
        """Warm-up and steady passes (:mod:`dnnlens.analysis.steady`)."""
        return steady_state(self.iterations)

    # -- per-primitive timing and the typical iteration ------------------------------------
    @fact
    def execs(self) -> pd.DataFrame:
        """Primitive exec rows of the window (no creations, no graph partitions)."""
        return primitive_execs(self.events)

    @fact
    def steady_execs(self) -> pd.DataFrame:
        """Primitive exec rows of the steady passes (all of them without iterations)."""
        ex = self.execs
        keep = ex["steady"].to_numpy(dtype=bool)
        return ex if keep.all() else ex[keep]

    @fact
    def stats(self) -> pd.DataFrame:
        """Per-record timing of the window's execs (:func:`.timing.record_stats`)."""
        return record_stats(self.execs, self.log)

    @fact
    def steady_stats(self) -> pd.DataFrame:
        """Per-record timing of the steady execs; ``typical_ms`` is the record's part of the
        typical iteration times the steady passes (so ``typical_ms / passes`` adds up to it)."""
        stats = record_stats(self.steady_execs, self.log)
        part = self.typical.by_record.reindex(stats.index).fillna(0.0)
        stats["typical_ms"] = part.to_numpy() * self.steady.divisor
        return stats

    @fact
    def typical(self) -> TypicalIteration:
        """The one typical iteration (:mod:`dnnlens.analysis.timing`): per graph node."""
        g = self.graph
        events = self._windowed[0]
        partition = category_mask(events["kind"], lambda k: k == "graph_partition")
        primitive = ~partition[g.exec_rows]
        rows = g.exec_rows[primitive]
        nodes = g.nodes
        return typical_iteration(
            node_names=nodes["node"].tolist(),
            node_kind=[str(k) for k in nodes["kind"]],
            node_impl=[str(i) for i in nodes["impl"]],
            node_record=nodes["record"].to_numpy(dtype=np.int64),
            exec_node=g.exec_node[primitive],
            exec_time=events["time_ms"].to_numpy(dtype=np.float64)[rows],
            exec_steady=self.steady.steady[rows],
            passes=self.steady.divisor,
            exec_pass=self.steady.iteration[rows],
            sizes_vary=self.iterations.sizes_vary,
        )

    @property
    def typical_iteration_ms(self) -> float:
        """The typical iteration in ms: the figure every view uses."""
        return self.typical.ms

    @fact
    def creations(self) -> Creations:
        """Primitive cache misses where the iteration repeats (:mod:`.creations`)."""
        from dnnlens.analysis.creations import steady_creations

        return steady_creations(self.events, self.steady, self.iterations)

    @property
    def is_training(self) -> bool:
        """Whether any primitive ran a backward pass."""
        return bool((self.execs["direction"] == "backward").any())

    # -- op graph and reorders -------------------------------------------------------------
    @fact
    def graph(self) -> OpGraph:
        """The op graph of one steady iteration (:mod:`dnnlens.analysis.graph`)."""
        from dnnlens.analysis.graph import build_graph

        return build_graph(self._windowed[0], self.iterations, self.steady.steady, self.log.records)

    @fact
    def reorders(self) -> pd.DataFrame:
        """One row per reorder node of the graph with its cost (:data:`REORDER_COLUMNS`)."""
        g = self.graph.reorders
        if g.empty:
            return pd.DataFrame(columns=list(REORDER_COLUMNS))
        frame = g.copy()
        where = [str(e).rpartition(":") for e in frame["example"]]
        frame["path"] = [w[0] for w in where]
        frame["line"] = [int(w[2]) if w[2].isdigit() else 0 for w in where]
        # the evidence of a node: its first execution in a steady pass (a warm-up run of
        # the same line printed other times), else its first execution
        events = self._windowed[0]
        rows, nodes = self.graph.exec_rows, self.graph.exec_node
        in_steady = self.steady.steady[rows]
        first = pd.Series(rows[in_steady]).groupby(nodes[in_steady]).min()
        names = self.graph.nodes["node"].to_numpy()
        at = {str(names[n]): int(r) for n, r in first.items()}
        lines = events["line"].to_numpy()
        inputs = str_values(events["input"])  # each input name converted once, not per row
        steady_rows = [at.get(str(n)) for n in frame["node"]]
        frame["path"] = [
            inputs[r] if r is not None else p
            for r, p in zip(steady_rows, frame["path"], strict=True)
        ]
        frame["line"] = [
            int(lines[r]) if r is not None else ln
            for r, ln in zip(steady_rows, frame["line"], strict=True)
        ]
        terms = self.typical.terms.set_index("node")
        run = terms["run_ms"].reindex(frame["node"].to_numpy()).to_numpy(dtype=np.float64)
        run = np.nan_to_num(run)
        steady = frame["steady_count"].to_numpy(dtype=np.float64)
        frame["typical_ms"] = steady * run
        frame["per_iteration"] = steady / max(self.steady.divisor, 1)
        frame["iter_ms"] = frame["per_iteration"] * run
        frame = frame[list(REORDER_COLUMNS)]
        return frame.sort_values("iter_ms", ascending=False, kind="stable").reset_index(drop=True)

    # -- framework, costs, machine ---------------------------------------------------------
    @fact
    def link_results(self) -> list[LinkResult]:
        """The one linking of framework ops to primitives, per trace (else per plain
        table), made over :attr:`all_events`: the summary's scope (after
        ``skip_iterations``, not cut to the window), which ``framework_link`` and the
        framework view both show (:func:`dnnlens.analysis.linking.link_framework`)."""
        if self.log.framework is None:
            return []
        from dnnlens.analysis.linking import link_framework

        results = link_framework(self.log, self.all_events)
        if self.log.window is not None:  # executions that left the reader's window
            kept = int((self.all_events["operation"] == "exec").sum())
            gone = self.summary.exec_count - kept
            for result in results:
                if "outside_window" in result.info:
                    result.info["outside_window"] += gone
        return results

    @fact
    def framework_links(self) -> dict[str, Any]:
        """Framework ops linked to their primitives, as the report's ``framework_ops`` and
        ``framework_link`` (:attr:`link_results`)."""
        notes = list(self.log.window.notes) if self.log.window is not None else []
        if self.log.framework is None:  # no table left to link, maybe a note why
            return {"framework_link": {"runs": [], "notes": notes}} if notes else {}
        from dnnlens.analysis.linking import framework_extras

        links = framework_extras(self.log, self.link_results)
        if not links and (self.log.framework.errors or notes):  # nothing linked: say why
            links = {"framework_link": {"runs": [], "notes": list(self.log.framework.errors)}}
        if notes:  # tables whose profiled region left the reader's window
            links["framework_link"]["notes"] = notes + links["framework_link"]["notes"]
        return links

    @fact
    def model(self) -> ModelName | None:
        """The model the inputs name, or ``None`` (:mod:`dnnlens.analysis.model_name`)."""
        from dnnlens.analysis.model_name import model_name  # the framework view's imports

        return model_name(self.log)

    @fact
    def framework(self) -> FrameworkAnalysis | None:
        """The framework view of a profiler trace or table, joined with every event
        (:mod:`dnnlens.analysis.framework`) through :attr:`link_results`; ``None``
        without one."""
        if self.log.framework is None:
            return None
        from dnnlens.analysis.framework import analyze_framework

        return analyze_framework(
            self.log.framework, self.all_events, self.log.records, links=self.link_results
        )

    @fact
    def machine(self) -> Machine:
        """The one machine every peak and efficiency is measured against: the user's
        profile, else the log's header with a clock from its CPU name, from this machine
        or assumed, and labelled so (:func:`dnnlens.analysis.machine.resolve_machine`)."""
        from dnnlens.analysis.machine import resolve_machine

        return resolve_machine(self.log, self.options.machine)

    @fact
    def producer(self) -> Producer:
        """The program that made the inputs, with the line that said so
        (:mod:`dnnlens.analysis.producer`): the terms rules say their fixes in."""
        from dnnlens.analysis.producer import detect_producer

        return detect_producer(self.log)

    @fact
    def primitives(self) -> list[dict[str, Any]]:
        """Each distinct executed primitive on the roofline, with its steady timing: the
        one rate and efficiency per primitive (its typical run against :attr:`machine`)."""
        from dnnlens.analysis.roofline import roofline_points

        stats = self.steady_stats
        points = roofline_points(self.log, self.machine, self.record_totals, stats)
        part = self.typical.by_record
        rows = []
        for point in points:
            p = point.to_json()
            rid = p["record"]
            row = stats.loc[rid] if rid in stats.index else None
            p["median_ms"] = float(row["median_ms"]) if row is not None else None
            p["p95_ms"] = float(row["p95_ms"]) if row is not None else None
            p["run_ms"] = point.run_ms
            p["steady_count"] = point.steady_count
            p["iter_ms"] = float(part.get(rid, 0.0))
            rows.append(p)
        self.notes.extend(_no_cost_notes(self.log, points))
        return rows

    @fact
    def timing_trust(self) -> TimingTrust:
        """Whether the run's times can be trusted: how much of the typical iteration runs
        impossibly slowly against :attr:`machine` (:mod:`dnnlens.analysis.timing_trust`);
        a run whose times cannot be trusted gets a note that says so."""
        from dnnlens.analysis.timing_trust import timing_trust

        trust = timing_trust(self.primitives, self.typical_iteration_ms)
        if not trust.trustworthy:
            note = (
                f"timings are not trustworthy: {trust.reason}; every time and share in "
                "this report is inflated by it"
            )
            if note not in self.notes:
                self.notes.append(note)
        return trust

    # -- parts of the typical iteration that several views show ----------------------------
    @fact
    def reorder_part(self) -> ReorderPart:
        """Reorders in the typical iteration, by tensor, beside their raw sums."""
        terms = self.typical.terms
        reo = terms[terms["kind"] == "reorder"] if len(terms) else terms
        by_tensor: dict[str, float] = {}
        by_role: dict[str, float] = {}
        count_by_role: dict[str, float] = {}
        r = self.reorders
        if len(r):
            by_tensor = {str(k): float(v) for k, v in r.groupby("tensor")["iter_ms"].sum().items()}
            roles = r.groupby("role")[["iter_ms", "per_iteration"]].sum()
            by_role = {str(k): float(v) for k, v in roles["iter_ms"].items()}
            count_by_role = {str(k): float(v) for k, v in roles["per_iteration"].items()}
        raw = next((k for k in self.summary.by_kind if k["kind"] == "reorder"), None)
        return ReorderPart(
            ms=float(reo["iter_ms"].sum()) if len(reo) else 0.0,
            per_iteration=float(reo["per_iteration"].sum()) if len(reo) else 0.0,
            iteration_ms=self.typical.ms,
            by_tensor=by_tensor,
            by_role=by_role,
            count_by_role=count_by_role,
            raw_ms=float(raw["time_ms"]) if raw else 0.0,
            raw_count=int(raw["count"]) if raw else 0,
            total_ms=self.summary.total_time_ms,
        )

    @fact
    def training(self) -> TrainingStep | None:
        """The typical step by pass and reorder role (:mod:`dnnlens.analysis.training`);
        ``None`` for a log without a backward pass."""
        if not self.is_training:
            return None
        from dnnlens.analysis.training import training_step

        nodes = self.graph.nodes
        part = self.reorder_part
        return training_step(
            terms=self.typical.terms,
            prop_of_node=dict(zip(nodes["node"], nodes["prop_kind"].astype(str), strict=True)),
            reorder_ms_by_role=part.by_role,
            reorder_count_by_role=part.count_by_role,
            step_ms=self.typical_iteration_ms,
            steady_steps=self.steady.divisor,
        )

    @fact
    def report_basis(self) -> ReportBasis:
        """The one basis of every share in this analysis's report: the framework view's
        typical step when it has steps (a trace, a table with step rows) or there is no
        oneDNN execution, its oneDNN part the typical iteration(s) of a step; else the
        typical iteration (:class:`~dnnlens.analysis.basis.ReportBasis`)."""
        from dnnlens.analysis.basis import report_basis

        fw = self.framework
        terms = self.typical.terms
        execs = float(terms["per_iteration"].sum()) if len(terms) else 0.0
        return report_basis(
            fw.typical_step_ms if fw is not None else None,
            fw is not None and fw.step_method != "table_window",
            fw.primitives if fw is not None else None,
            self.typical_iteration_ms,
            execs,
        )

    @fact
    def dispatch(self) -> dict[str, list[DispatchReason]]:
        """Per input with ``create:dispatch`` lines: why oneDNN skipped implementations,
        counted (:mod:`dnnlens.analysis.dispatch`)."""
        from dnnlens.analysis.dispatch import dispatch_reasons

        return dispatch_reasons(self.log)

    def impact_per_basis(self, finding: Finding) -> float | None:
        """A finding's impact in ms per basis unit (a oneDNN finding's per-iteration
        impact times the iterations of a step, in a report on a step)."""
        impact = finding.impact_ms_per_iteration
        return None if impact is None else self.report_basis.per_unit(impact, finding.basis)

    def saving_per_basis(self, finding: Finding) -> float | None:
        """A finding's saving in ms per basis unit, as :meth:`impact_per_basis` counts its
        impact (None: unknown, or not about time)."""
        saving = finding.saving_ms_per_iteration
        return None if saving is None else self.report_basis.per_unit(saving, finding.basis)

    def share_basis_ms(self, finding: Finding) -> float:
        """The figure a finding's share is of (:meth:`basis_ms_of`)."""
        return self.basis_ms_of(finding.impact_ms_per_iteration, finding.basis)

    def basis_ms_of(self, impact_ms: float | None, basis: str = "iteration") -> float:
        """The figure an impact's share is of: the report's basis, except for the two kinds
        of time a typical iteration does not hold (``Finding.basis``): noise is a part of
        the mean steady pass, primitive creations of the iteration with them. A step holds
        both (its wall time includes them)."""
        b = self.report_basis
        if b.unit == "step":
            return b.ms
        fw = self.framework
        if basis == "step" and fw is not None:
            # a table's profiled window of several iterations: a framework finding is a
            # part of the wall time of one iteration there, not of oneDNN's typical one
            return float(fw.typical_step_ms) / max(b.iterations_per_step, 1)
        if basis == "mean_pass":
            return self.mean_steady_pass_ms
        if basis == "with_creations":
            return b.ms + (b.per_unit(impact_ms, basis) if impact_ms is not None else 0.0)
        return b.ms

    def own_share(self, finding: Finding) -> float | None:
        """A finding's impact as a share of its own basis (``Finding.basis``): of the
        typical iteration, the step, the mean steady pass or the iteration with its
        creations. Only to check that a rule's impact is a part of its basis (the rule
        engine); every report shows :meth:`share_of`."""
        impact = finding.impact_ms_per_iteration
        if impact is None:
            return None
        if finding.basis == "mean_pass":
            whole = self.mean_steady_pass_ms
        elif finding.basis == "with_creations":
            whole = self.typical_iteration_ms + impact
        else:
            return self.report_basis.own_share(impact, finding.basis)
        return share(impact, whole)

    def basis_label(self, finding: Finding) -> str:
        """The figure a finding's share is of, in words: ``the typical 2.09 ms``."""
        return self.basis_words(finding.impact_ms_per_iteration, finding.basis)

    def basis_words(self, impact_ms: float | None, basis: str = "iteration") -> str:
        """The figure an impact's share is of, in words: ``the typical 4.81 ms step``."""
        from dnnlens.fmt import ms

        unit = self.report_basis.unit
        own = basis in ("mean_pass", "with_creations", "step") and unit != "step"
        key = ("window_iteration" if basis == "step" else basis) if own else unit
        return BASES[key].format(ms=ms(self.basis_ms_of(impact_ms, basis)))

    @property
    def mean_steady_pass_ms(self) -> float:
        """The steady passes' exec times summed, per steady pass (the raw mean pass)."""
        ex = self.steady_execs
        total = float(np.nansum(ex["time_ms"].to_numpy(dtype=np.float64)))
        return total / max(self.steady.divisor, 1)

    def share_of(self, finding: Finding) -> float | None:
        """A finding's one share: its impact over the report's basis, the figure the
        headline, the message, the JSON (``share_of_basis``, ``share_of_iteration``) and the
        dataset show (``None``: not about time)."""
        return self.share_of_impact(finding.impact_ms_per_iteration, finding.basis)

    def share_of_impact(self, impact_ms: float | None, basis: str = "iteration") -> float | None:
        """An impact (ms per unit of ``basis``, as a finding has it) as a share of the
        report's basis: what :meth:`share_of` says of a finding with that impact, for a rule
        to print before its finding exists."""
        if impact_ms is None:
            return None
        b = self.report_basis
        return share(b.per_unit(impact_ms, basis), self.basis_ms_of(impact_ms, basis))

    def onednn_iteration_share(self, finding: Finding) -> float | None:
        """A oneDNN finding's impact over oneDNN's typical iteration, in a report on a step
        (JSON ``share_of_onednn_iteration``): the second basis, named wherever it is shown;
        ``None`` in a report on an iteration (the one share is that already) and for other
        findings."""
        b = self.report_basis
        impact = finding.impact_ms_per_iteration
        if b.unit != "step" or not b.has_onednn or finding.basis != "iteration":
            return None
        return None if impact is None else share(impact, b.onednn_iteration_ms)

    def line_texts(self, wanted: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """What each wanted ``(input, line)`` said, from what the reader kept (its parsed
        fields and time; :mod:`dnnlens.analysis.line_texts`): inputs are never re-read."""
        from dnnlens.analysis.line_texts import line_texts

        return line_texts(self.log, wanted)

    # -- everything at once ----------------------------------------------------------------
    def prepare(self) -> Analysis:
        """Compute the facts every report shows, so that a failure surfaces before rules run."""
        _ = self.summary, self.typical, self.primitives, self.framework_links
        if len(self.execs):
            _ = self.reorders
        for note in (
            overflow_note(self.summary, self.typical.ms),
            self.report_basis.mismatch_note(),
        ):
            if note is not None and note not in self.notes:
                self.notes.append(note)
        return self


@dataclass(frozen=True)
class ReorderPart:
    """Reorders as part of the typical iteration, and as raw sums over all events."""

    ms: float
    per_iteration: float
    iteration_ms: float
    by_tensor: dict[str, float] = field(default_factory=dict)
    #: ms and executions per typical iteration by the op graph's reorder ``role``.
    by_role: dict[str, float] = field(default_factory=dict)
    count_by_role: dict[str, float] = field(default_factory=dict)
    raw_ms: float = 0.0
    raw_count: int = 0
    total_ms: float = 0.0

    @property
    def share(self) -> float | None:
        """Reorders' share of the typical iteration (``None`` without one)."""
        return share(self.ms, self.iteration_ms)

    @property
    def raw_share(self) -> float | None:
        """Reorders' share of the summed raw exec times (``None`` when nothing is timed)."""
        return share(self.raw_ms, self.total_ms)


def _no_cost_notes(log: ParsedLog, points: list[Any]) -> list[str]:
    """One note per reason some executed primitives have no cost (impossible sizes)."""
    from dnnlens.analysis.costmodel import record_no_cost_reason

    counts: dict[str, int] = {}
    for point in points:
        rec = log.records[point.record]
        why = record_no_cost_reason(rec)
        if why is not None:
            counts[why] = counts.get(why, 0) + 1
    return [f"no cost for {n} primitives: {why}" for why, n in sorted(counts.items())]
