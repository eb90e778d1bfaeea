"""What rules read: a view over the one :class:`~dnnlens.analysis.analysis.Analysis`.

Every fact a rule asks for (the exec table, per-primitive statistics, iterations, the
steady state, the typical iteration, the reorders of the op graph) is the analysis's own,
computed once per run and shared with the reports; the context adds only what is about
reading it (parsed descriptors by record, evidence lines, header values). A rule never
computes a time share of its own: it takes parts of the typical iteration
(:meth:`RuleContext.per_iteration_ms`, ``reorders["iter_ms"]``), and a message that states
a share states the report's one (:meth:`RuleContext.share_text`, the headline's figure;
oneDNN's own iteration only as a second basis named as such,
:meth:`RuleContext.onednn_share_text`), so its figures are the figures every report shows.

Timing (:mod:`dnnlens.analysis.timing`): every per-primitive statistic comes with its
median and a typical run (``run_ms``); ``typical_ms`` = executions x typical run, a total
that a scheduler spike cannot inflate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.analysis.analysis import REORDER_COLUMNS, Analysis
from dnnlens.analysis.findings import Evidence
from dnnlens.analysis.producer import Producer
from dnnlens.analysis.shares import share
from dnnlens.analysis.timing import MIN_RUNS_FOR_MEDIAN, TypicalIteration, record_stats
from dnnlens.fmt import ms, pct
from dnnlens.model import Attrs, MdList, ParsedLog, Problem
from dnnlens.model.stats import first_rows
from dnnlens.parsers.isa import isa_from_header as _isa_from_header

__all__ = [
    "MIN_RUNS_FOR_MEDIAN",
    "REORDER_COLUMNS",
    "IterationView",
    "RuleContext",
    "record_stats",
]


@dataclass(frozen=True)
class IterationView:
    """The steady state as rules read it (:mod:`dnnlens.analysis.steady`).

    ``count`` counts every pass (warm-up included), ``warmup`` the leading warm-up passes;
    ``iteration`` and ``steady`` are aligned with the context's event table. Without two
    steady passes every event counts as steady state.
    """

    count: int
    warmup: int
    period_exec: int
    iteration: np.ndarray
    steady: np.ndarray

    @property
    def steady_count(self) -> int:
        """Steady-state passes."""
        return max(self.count - self.warmup, 0)

    @property
    def found(self) -> bool:
        """Whether a repeating period was found (two steady iterations at least)."""
        return self.steady_count >= 2 and self.period_exec > 0


class RuleContext:
    """The analysis a rule looks at (``ctx.analysis``), and helpers to read it."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.log: ParsedLog = analysis.log
        self.events: pd.DataFrame = analysis.events

    # -- tables and timing: the analysis's own facts ---------------------------------------
    @property
    def execs(self) -> pd.DataFrame:
        """Primitive exec rows (no creations, no graph partitions)."""
        return self.analysis.execs

    @cached_property
    def total_ms(self) -> float:
        """Sum of the time field of the window's primitive exec lines."""
        return float(self.execs["time_ms"].sum())

    @property
    def stats(self) -> pd.DataFrame:
        """Per-record timing of all execs of the window."""
        return self.analysis.stats

    @property
    def steady_execs(self) -> pd.DataFrame:
        """Primitive exec rows in steady state (all of them when no iteration was found)."""
        return self.analysis.steady_execs

    @property
    def steady_stats(self) -> pd.DataFrame:
        """Per-record timing of the steady-state execs."""
        return self.analysis.steady_stats

    @cached_property
    def typical_total_ms(self) -> float:
        """Sum over primitives of executions x typical run (all execs of the window)."""
        return float(self.stats["typical_ms"].sum()) if len(self.stats) else 0.0

    @property
    def framework(self) -> Any:
        """The framework view of a profiler trace or table (``None`` without one)."""
        return self.analysis.framework

    @property
    def producer(self) -> Producer:
        """The program that made the log (:mod:`dnnlens.analysis.producer`)."""
        return self.analysis.producer

    @property
    def is_training(self) -> bool:
        """Whether any primitive ran a backward pass."""
        return self.analysis.is_training

    @cached_property
    def iterations(self) -> IterationView:
        """Passes, warm-up and the steady mask of the event table."""
        st = self.analysis.steady
        return IterationView(st.passes, st.warmup, st.period_exec, st.iteration, st.steady)

    @cached_property
    def iteration_times(self) -> pd.Series:
        """Total exec time of each steady-state pass (index: pass number)."""
        if not self.iterations.found:
            return pd.Series(dtype="float64")
        ex = self.steady_execs
        return ex["time_ms"].groupby(ex["iteration"].to_numpy()).sum()

    @property
    def steady_iterations(self) -> int:
        """Steady passes to divide by (1 when no iteration was found)."""
        return self.analysis.steady.divisor

    @property
    def typical(self) -> TypicalIteration:
        """The typical iteration and its terms (:mod:`dnnlens.analysis.timing`)."""
        return self.analysis.typical

    @property
    def typical_iteration_ms(self) -> float:
        """The typical steady iteration, ms: the figure every report uses."""
        return self.analysis.typical_iteration_ms

    def per_iteration_ms(self, records: Any) -> float:
        """The part of the typical iteration spent in some records (runs per pass x run)."""
        return self.analysis.typical.part_ms(records)

    # -- shares: the report's one basis ----------------------------------------------------
    def share(self, impact_ms: float | None, basis: str = "iteration") -> float | None:
        """What a finding of this impact (ms per ``basis`` unit) will show as its one share:
        a part of the report's basis (:meth:`Analysis.share_of_impact`), the step in a
        report on a profiler trace, else the typical iteration."""
        return self.analysis.share_of_impact(impact_ms, basis)

    def share_text(self, impact_ms: float | None, basis: str = "iteration") -> str:
        """The one share in words, as the headline says it: ``14% of the typical 4.81 ms
        step`` ('' without a basis to be a part of)."""
        value = self.share(impact_ms, basis)
        if value is None:
            return ""
        return f"{pct(value)} of {self.analysis.basis_words(impact_ms, basis)}"

    def cost_text(self, impact_ms: float, basis: str = "iteration") -> str:
        """A finding's cost as the headline says it: ``0.69 ms per step, 14% of the typical
        4.81 ms step`` (in a report on an iteration, ``... per iteration, 32% of the typical
        2.09 ms``); the time is per unit of the report's basis."""
        b = self.analysis.report_basis
        text = f"{ms(b.per_unit(impact_ms, basis))} per {b.unit}"
        shared = self.share_text(impact_ms, basis)
        return f"{text}, {shared}" if shared else text

    def onednn_share_text(self, impact_ms: float) -> str:
        """The second basis, named: ``50% of oneDNN's 1.40 ms per iteration``, in a report on
        a step with a verbose log ('' otherwise: there the one share is of that already)."""
        b = self.analysis.report_basis
        if b.unit != "step" or not b.has_onednn:
            return ""
        value = share(impact_ms, b.onednn_iteration_ms)
        if value is None:
            return ""
        return f"{pct(value)} of oneDNN's {ms(b.onednn_iteration_ms)} per iteration"

    @property
    def reorders(self) -> pd.DataFrame:
        """Reorders of the op graph, one row per node, with their cost (REORDER_COLUMNS)."""
        return self.analysis.reorders

    # -- descriptors ----------------------------------------------------------------------
    def mds(self, record: int) -> MdList:
        """Parsed memory descriptors of a record (parsed once, on the record)."""
        return self.log.records[int(record)].parsed_mds

    def attrs(self, record: int) -> Attrs:
        """Parsed attributes of a record."""
        return self.log.records[int(record)].parsed_attrs

    def problem(self, record: int) -> Problem:
        """Parsed problem descriptor of a record."""
        return self.log.records[int(record)].parsed_problem

    # -- header ---------------------------------------------------------------------------
    @cached_property
    def headers(self) -> list[dict[str, Any]]:
        """Per input: path, header ISA text, ISA name (``avx2``), threads, version."""
        out = []
        for scan in self.log.scans:
            h = scan.header
            out.append(
                {
                    "path": scan.path,
                    "isa_text": h.isa or "",
                    "isa": _isa_from_header(h.isa or ""),
                    "threads": h.threads,
                    "version": h.version,
                }
            )
        return out

    @cached_property
    def threads(self) -> int | None:
        """Thread count from the header (the largest if inputs differ), else ``None``."""
        values = [h["threads"] for h in self.headers if h["threads"]]
        return max(values) if values else None

    # -- evidence -------------------------------------------------------------------------
    def evidence(self, rows: pd.DataFrame, limit: int = 3) -> list[Evidence]:
        """file:line of up to ``limit`` rows, first one per distinct record."""
        if rows.empty:
            return []
        first = rows.drop_duplicates("record").head(limit)
        return [
            Evidence(str(p), int(n)) for p, n in zip(first["input"], first["line"], strict=True)
        ]

    def record_evidence(self, records: list[int], limit: int = 3) -> list[Evidence]:
        """file:line of the first steady-state exec of each record (any exec if none)."""
        out: list[Evidence] = []
        for rid in records[:limit]:
            for first in (self._first_steady_exec, self._first_exec):
                hit = first.get(int(rid))
                if hit is not None:
                    out.append(hit)
                    break
        return out

    @cached_property
    def _first_exec(self) -> dict[int, Evidence]:
        return _first_by_record(self.execs)

    @cached_property
    def _first_steady_exec(self) -> dict[int, Evidence]:
        return _first_by_record(self.steady_execs)


def _first_by_record(rows: pd.DataFrame) -> dict[int, Evidence]:
    """file:line of the first row of each record."""
    if rows.empty:
        return {}
    rec = rows["record"].to_numpy()
    first = np.sort(first_rows(rec, np.flatnonzero(np.bincount(rec))))
    return {
        int(r): Evidence(str(p), int(n))
        for r, p, n in zip(
            rec[first].tolist(),
            rows["input"].iloc[first].tolist(),
            rows["line"].to_numpy()[first].tolist(),
            strict=True,
        )
    }
