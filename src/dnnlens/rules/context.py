"""What rules share: the analysis plus facts computed once per run, lazily.

A rule asks the context for the exec table, per-primitive timing statistics, iterations,
the reorders of the op graph or parsed descriptors; each is computed on first use and
cached, so twelve rules do not parse or group the same table twelve times.

Timing: the machines that produce verbose logs are noisy (a 0.01 ms reorder sometimes
prints 8 ms). Every per-primitive statistic therefore comes with its median, and
``typical_ms`` = executions x median (x fastest run below 3 runs): a total that a
scheduler spike cannot inflate. Rules
that put a share of time on a cause use it, so noise is not blamed on layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.analysis.findings import Evidence
from dnnlens.analysis.result import Analysis
from dnnlens.analysis.summary import primitive_execs
from dnnlens.model import ParsedLog
from dnnlens.model.stats import first_rows
from dnnlens.parsers.fields import Attrs, MdList, Problem, parse_attrs, parse_mds, parse_problem
from dnnlens.parsers.fields import isa_from_header as _isa_from_header

#: Reorder-table columns every source provides (the issue-4 graph or the fallback).
#: ``count``/``time_ms`` cover the whole log (warm-up too); ``p50_ms`` is the median time;
#: ``typical_ms`` = count x p50; ``per_iteration`` executions per steady iteration (1 for a
#: reorder of every steady iteration, 0 for a one-time one) and ``iter_ms`` its typical cost
#: per steady iteration; ``steady`` whether it runs in every steady iteration.
REORDER_COLUMNS = (
    "node",
    "record",
    "steady",
    "tensor",
    "converts",
    "round_trip",
    "count",
    "time_ms",
    "p50_ms",
    "typical_ms",
    "per_iteration",
    "iter_ms",
    "dims",
    "src_layout",
    "dst_layout",
    "src_dtype",
    "dst_dtype",
    "producer",
    "consumer",
    "consumer_kind",
    "round_trip_with",
    "impl",
    "path",
    "line",
)


#: Below this many runs a primitive's typical run is its fastest, not its median.
MIN_RUNS_FOR_MEDIAN = 3


@dataclass
class IterationView:
    """Iterations as the rules read them, whichever module found them.

    ``count`` counts every pass (warm-up included), ``warmup`` the leading warm-up passes;
    ``iteration`` and ``steady`` are aligned with the event table. With fewer than two
    steady passes every event counts as steady state.
    """

    count: int
    warmup: int
    period_exec: int
    iteration: np.ndarray
    steady: np.ndarray
    source: str

    @property
    def steady_count(self) -> int:
        """Steady-state passes."""
        return max(self.count - self.warmup, 0)

    @property
    def found(self) -> bool:
        """Whether a repeating period was found (two steady iterations at least)."""
        return self.steady_count >= 2 and self.period_exec > 0


class RuleContext:
    """The analysis a rule looks at, with shared derived data cached on first use."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.log: ParsedLog = analysis.log
        self.events: pd.DataFrame = analysis.log.events
        self.notes: list[str] = []

    # -- tables ---------------------------------------------------------------------------
    @cached_property
    def execs(self) -> pd.DataFrame:
        """Primitive exec rows (no creations, no graph partitions)."""
        return primitive_execs(self.events)

    @cached_property
    def total_ms(self) -> float:
        """Sum of the time field of all primitive exec lines."""
        return float(self.execs["time_ms"].sum())

    @cached_property
    def stats(self) -> pd.DataFrame:
        """Per-record timing of all execs (see :func:`record_stats`)."""
        return record_stats(self.execs, self.log)

    @cached_property
    def steady_execs(self) -> pd.DataFrame:
        """Primitive exec rows in steady state (all of them when no iteration was found)."""
        mask = pd.Series(self.iterations.steady, index=self.events.index)
        keep = mask.reindex(self.execs.index).to_numpy()
        return self.execs if keep.all() else self.execs[keep]

    @cached_property
    def steady_stats(self) -> pd.DataFrame:
        """Per-record timing of the steady-state execs."""
        if self.steady_execs is self.execs:  # every exec is in steady state
            return self.stats.copy()
        return record_stats(self.steady_execs, self.log)

    @cached_property
    def typical_total_ms(self) -> float:
        """Sum over primitives of executions x median time (all execs)."""
        return float(self.stats["typical_ms"].sum()) if len(self.stats) else 0.0

    @cached_property
    def framework(self):  # the framework view, or None without a trace or table
        from dnnlens.analysis.framework import analyze_framework

        data = self.log.framework
        return analyze_framework(data, self.events, self.log.records) if data is not None else None

    @cached_property
    def is_training(self) -> bool:
        """Whether any primitive ran a backward pass."""
        return bool((self.execs["direction"] == "backward").any())

    # -- iterations and graph (issue 4), with a marked fallback ---------------------------
    @cached_property
    def iterations(self) -> IterationView:
        """Iterations of the exec stream (issue-4 module, else the minimal fallback)."""
        from dnnlens.rules import _adapters

        return _adapters.iterations(self)

    @cached_property
    def iteration_times(self) -> pd.Series:
        """Total exec time of each steady-state iteration (index: iteration number)."""
        it = self.iterations
        if not it.found:
            return pd.Series(dtype="float64")
        ex = self.steady_execs
        iters = pd.Series(it.iteration, index=self.events.index).reindex(ex.index)
        return ex["time_ms"].groupby(iters.to_numpy()).sum()

    @cached_property
    def steady_iterations(self) -> int:
        """Steady passes to divide by (1 when no iteration was found)."""
        return self.iterations.steady_count if self.iterations.found else 1

    @cached_property
    def typical_iteration_ms(self) -> float:
        """A typical steady iteration: sum over primitives of per-iteration runs x median."""
        st = self.steady_stats
        return float(st["typical_ms"].sum()) / self.steady_iterations if len(st) else 0.0

    def per_iteration_ms(self, records: Any) -> float:
        """Typical time per steady iteration of some records (runs per iteration x median)."""
        pos = self._steady_positions
        at = [pos[int(r)] for r in records if int(r) in pos]
        if not at:
            return 0.0
        typical = self.steady_stats["typical_ms"].to_numpy()[at]
        return float(np.nansum(typical)) / self.steady_iterations  # = the Series sum

    @cached_property
    def _steady_positions(self) -> dict[int, int]:
        return {int(r): i for i, r in enumerate(self.steady_stats.index)}

    @cached_property
    def reorders(self) -> pd.DataFrame:
        """Reorders from the op graph, one row per reorder node (columns REORDER_COLUMNS)."""
        from dnnlens.rules import _adapters

        return _adapters.reorders(self)

    @cached_property
    def graph_source(self) -> str:
        """Which module classified the reorders (``graph`` or ``fallback``)."""
        _ = self.reorders
        return getattr(self, "_graph_source", "fallback")

    # -- descriptors ----------------------------------------------------------------------
    def mds(self, record: int) -> MdList:
        """Parsed memory descriptors of a record (memoised by the parser)."""
        return parse_mds(self.log.records[int(record)].mds)

    def attrs(self, record: int) -> Attrs:
        """Parsed attributes of a record."""
        return parse_attrs(self.log.records[int(record)].attrs)

    def problem(self, record: int) -> Problem:
        """Parsed problem descriptor of a record."""
        r = self.log.records[int(record)]
        return parse_problem(r.kind, r.problem)

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


def record_stats(execs: pd.DataFrame, log: ParsedLog) -> pd.DataFrame:
    """Per-record timing: kind, impl, count, time_ms, mean/median/p95/max ms, typical_ms.

    ``run_ms`` is a typical run: the median, or the fastest run when there are fewer than
    :data:`MIN_RUNS_FOR_MEDIAN`; ``typical_ms`` is count x run_ms; ``path``/``line``
    locate the first exec. Sorted by ``time_ms``, largest first.
    """
    cols = [
        "kind",
        "impl",
        "count",
        "time_ms",
        "mean_ms",
        "median_ms",
        "p95_ms",
        "max_ms",
        "run_ms",
        "typical_ms",
        "path",
        "line",
    ]
    if execs.empty:
        return pd.DataFrame(columns=cols)
    g = execs["time_ms"].groupby(execs["record"], sort=False)
    size = g.size()
    count, median = size.to_numpy(), g.median().to_numpy()
    # with fewer than 3 runs a median is a mean: one spike decides it; take the fastest run
    run = np.where(count >= MIN_RUNS_FOR_MEDIAN, median, g.min().to_numpy())
    rows = first_rows(execs["record"].to_numpy(), size.index.to_numpy())
    recs = [log.records[int(r)] for r in size.index]
    frame = pd.DataFrame(
        {
            "kind": [r.kind for r in recs],
            "impl": [r.impl for r in recs],
            "count": count,
            "time_ms": g.sum().to_numpy(),
            "mean_ms": g.mean().to_numpy(),
            "median_ms": median,
            "p95_ms": g.quantile(0.95).to_numpy(),
            "max_ms": g.max().to_numpy(),
            "run_ms": run,
            "typical_ms": count * np.where(np.isnan(run), 0.0, run),
            "path": execs["input"].iloc[rows].astype(str).to_numpy(),
            "line": execs["line"].to_numpy()[rows].astype(np.int64),
        },
        index=size.index,
        columns=cols,
    )
    return frame.sort_values("time_ms", ascending=False, kind="stable")
