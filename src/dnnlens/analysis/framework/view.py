"""The framework view: steps, phases, ops, modules and threads of a PyTorch profile.

:func:`analyze_framework` is a pure function of the framework data (a chrome trace, else a
``key_averages`` table) and, optionally, the oneDNN event table of the same run; its
result, :class:`FrameworkAnalysis`, owns every framework figure. See ``docs/framework.md``
for the definitions (steps, warm-up, phases, the typical statistic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.analysis.findings import Evidence
from dnnlens.analysis.framework import convs, keyaverages, norms, views
from dnnlens.analysis.framework.joined import Joined, join
from dnnlens.analysis.framework.names import NATIVE_NORMALIZATION, PHASES
from dnnlens.analysis.framework.rows import OpRows, op_rows
from dnnlens.analysis.framework.steps import WARMUP_SLOWER, Steps, find_steps
from dnnlens.analysis.framework.typical import typical_ms
from dnnlens.analysis.linking import ANCHORS, LinkResult
from dnnlens.analysis.shares import share
from dnnlens.parsers.torch_table import ProfilerTable
from dnnlens.parsers.torch_trace import FrameworkData, TraceData

STEP_COLUMNS = ("index", "name", "start_us", "dur_ms", "warmup", "partial", "reason", "line")
STATISTIC = (
    "typical step = sum over the step's segments (outermost framework ops and phase "
    "annotations, by phase, name and input shapes) of calls per steady step x median "
    "duration, plus the median untracked time between segments; robust to scheduler "
    "spikes, and its parts (phases, segments) add up to it"
)
WARMUP_RULE = (
    "leading steps whose ops (name and input shapes, counted) differ from the most common "
    f"set, then leading steps longer than {WARMUP_SLOWER:g}x the median step; trailing "
    "steps whose ops differ are partial; at least one step is steady"
)
#: Every oneDNN-calling op name pattern of the linking, as one test.
_ONEDNN_OPS = [p for p in ANCHORS.values()]


def _calls_onednn(name: str) -> bool:
    return any(p.search(name) for p in _ONEDNN_OPS)


@dataclass
class FrameworkAnalysis:
    """Every framework figure of one profile, computed once.

    Tables (DataFrames; times are typical ms per steady step, shares of the typical step):
    ``steps`` (one row per step: ``STEP_COLUMNS``), ``phases`` (``phase``, ``ms_per_step``,
    ``share``, with a verbose log ``onednn_ms_per_step`` and ``onednn_share``), ``ops``
    (by op name: calls, self and total time per step, share, main phase; with a verbose
    log ``onednn_ms_per_step``, ``onednn_share``, ``primitives``), ``segments`` (the
    step's outermost ops by phase, name and shapes: what the step adds up from),
    ``modules`` and ``threads`` (traces only), ``aten_outside_onednn`` (ATen ops by self
    time not spent in oneDNN), ``primitives`` (with a verbose log: per op name, phase and
    primitive kind). ``rows`` and ``step_info`` hold the per-op arrays of a trace (None for
    a table) for rules that need single ops.

    Facts found once, on first use, for the rules and the reports alike: ``norms`` (the
    norms of a trace by kind, :mod:`.norms`), ``normalization`` (a line per kind of norm:
    trained, eval mode, frozen as elementwise ops), ``slow_convolutions`` (convolutions run
    in ATen's own kernels, with the arguments that say why, :mod:`.convs`).
    """

    source: str
    path: str
    step_method: str
    steps: pd.DataFrame
    steady_count: int
    typical_step_ms: float
    median_step_ms: float
    untracked_ms_per_step: float
    phases: pd.DataFrame
    ops: pd.DataFrame
    segments: pd.DataFrame = field(default_factory=pd.DataFrame)
    modules: pd.DataFrame = field(default_factory=pd.DataFrame)
    threads: pd.DataFrame = field(default_factory=pd.DataFrame)
    aten_outside_onednn: pd.DataFrame = field(default_factory=pd.DataFrame)
    primitives: pd.DataFrame | None = None
    link: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    rows: OpRows | None = None
    step_info: Steps | None = None
    steady: np.ndarray | None = None
    table: ProfilerTable | None = None

    # -- facts found on first use ----------------------------------------------------------
    @cached_property
    def norms(self) -> norms.Normalization | None:
        """The norms of a trace by kind (None for a table)."""
        return norms.normalization(self) if self.rows is not None and self.steady_count else None

    @cached_property
    def normalization(self) -> pd.DataFrame:
        """One line per kind of norm (``norms.NORMALIZATION_COLUMNS``): a trace's by mode;
        a table's ATen batch-norm kernels by self time, their mode unknown."""
        if self.norms is not None:
            return norms.normalization_table(self, self.norms)
        ops = self.ops[self.ops["name"].isin(NATIVE_NORMALIZATION)] if len(self.ops) else None
        if ops is None or ops.empty:
            return pd.DataFrame(columns=list(norms.NORMALIZATION_COLUMNS))
        ms = float(ops["self_ms_per_step"].sum())
        forward = ops[~ops["name"].str.contains("backward")]
        row = {
            "kind": "batch norm, mode not recorded (ATen kernels)",
            "foldable": not self.is_training,
            "calls_per_step": float(forward["calls_per_step"].sum()),
            "ms_per_step": ms,
            "share": self.share(ms),
        }
        return pd.DataFrame([row], columns=list(norms.NORMALIZATION_COLUMNS))

    @cached_property
    def _slow_convolutions(self) -> tuple[pd.DataFrame, np.ndarray | None]:
        if self.rows is not None:
            return convs.slow_convolutions(self)
        names = self.ops["name"] if len(self.ops) else pd.Series([], dtype=object)
        ops = self.ops[names.str.match(convs.SLOW_CONVOLUTION)] if len(names) else None
        if ops is None or ops.empty:
            return pd.DataFrame(columns=list(convs.COLUMNS)), None
        table = pd.DataFrame(
            {
                "op": ops["name"],
                "phase": ops["phase"],
                "calls_per_step": ops["calls_per_step"],
                "ms_per_step": ops["self_ms_per_step"],
                "share": ops["self_share"],
                "reason": "a key_averages table holds no shapes or dtypes",
            },
            columns=list(convs.COLUMNS),
        )
        return table.reset_index(drop=True), None

    @property
    def slow_convolutions(self) -> pd.DataFrame:
        """Convolutions in ATen's own kernels (``convs.COLUMNS``), most costly first."""
        return self._slow_convolutions[0]

    @property
    def slow_convolution_rows(self) -> np.ndarray | None:
        """The rows of those kernels (steady, main thread, outermost), None for a table."""
        return self._slow_convolutions[1]

    # -- questions rules ask ------------------------------------------------------------
    @property
    def is_training(self) -> bool:
        """Whether the steps run a backward pass."""
        back = self.phases.loc[self.phases["phase"] == "backward", "ms_per_step"]
        return bool(len(back) and float(back.iloc[0]) > 0)

    def phase_ms(self, phase: str) -> float:
        """Typical ms per step of a phase."""
        hit = self.phases.loc[self.phases["phase"] == phase, "ms_per_step"]
        return float(hit.iloc[0]) if len(hit) else 0.0

    def share(self, ms: float) -> float | None:
        """``ms`` as a share of the typical step (``None`` without one: :mod:`.shares`)."""
        return share(ms, self.typical_step_ms)

    def steady_rows(self, mask: np.ndarray) -> np.ndarray:
        """``mask`` limited to main-thread rows of steady steps."""
        assert self.rows is not None and self.steady is not None
        return mask & self.steady & self.rows.main

    def typical_ms(self, mask: np.ndarray, value: str = "dur") -> float:
        """Typical ms per step of the rows in ``mask`` (steady, main thread): per op name
        and input shapes, calls per step x median duration (``value="self"``: self time)."""
        rows = self.rows
        if rows is None or not self.steady_count:
            return 0.0
        at = np.flatnonzero(self.steady_rows(mask))
        values = rows.self_us[at] if value == "self" else rows.dur[at]
        return typical_ms(rows.key(at), values, self.steady_count)

    def calls_per_step(self, mask: np.ndarray) -> float:
        """Steady calls per step of the rows in ``mask``."""
        if self.rows is None or not self.steady_count:
            return 0.0
        return float(self.steady_rows(mask).sum()) / self.steady_count

    def calls_by_name(self, mask: np.ndarray) -> dict[str, float]:
        """Steady calls per step of the rows in ``mask``, by op name, most called first."""
        rows = self.rows
        if rows is None or not self.steady_count:
            return {}
        at = np.flatnonzero(self.steady_rows(mask))
        counts = np.bincount(rows.name[at], minlength=len(rows.names))
        order = np.argsort(-counts, kind="stable")
        return {
            str(rows.names[i]): float(counts[i]) / self.steady_count for i in order if counts[i]
        }

    def first_steady_step(self) -> int:
        """Index of the first steady step (-1 without one)."""
        steady = self.steps.index[~self.steps["warmup"] & ~self.steps["partial"]]
        return int(steady[0]) if len(steady) else -1

    def evidence(self, mask: np.ndarray, limit: int = 3) -> list[Evidence]:
        """The first rows of ``mask`` in the first steady step (any steady step if none
        there), one per op name: trace path, line of the event, op, step, timestamp."""
        rows = self.rows
        if rows is None:
            return []
        at = np.flatnonzero(self.steady_rows(mask))
        if not len(at):
            return []
        first = self.first_steady_step()
        in_first = at[rows.step[at] == first]
        at = in_first if len(in_first) else at
        at = at[np.argsort(rows.ts[at], kind="stable")]
        out: list[Evidence] = []
        seen: set[str] = set()
        lines = rows.trace.ops["line"].to_numpy()
        for r in at.tolist():
            name = str(rows.name_of(r))
            if name in seen:
                continue
            seen.add(name)
            out.append(
                Evidence(
                    rows.trace.path,
                    int(lines[r]),
                    op=name,
                    step=str(self.steps.at[int(rows.step[r]), "name"]),
                    ts_us=float(rows.ts[r]),
                )
            )
            if len(out) >= limit:
                break
        return out

    def first_line(self, name: str) -> int:
        """Line of the first event named ``name`` in the first steady step (in any step
        without one there; the table's line for a key_averages table; 0 if none)."""
        if self.rows is None:
            return self.table.line if self.table is not None else 0
        codes = np.flatnonzero(self.rows.names == name)
        if not len(codes):
            return 0
        hits = np.flatnonzero(self.rows.name == codes[0])
        first = hits[self.rows.step[hits] == self.first_steady_step()]
        at = first if len(first) else hits
        return int(self.rows.trace.ops["line"].to_numpy()[at[np.argmin(self.rows.ts[at])]])

    def table_evidence(self, names: list[str], limit: int = 3) -> list[Evidence]:
        """file:line of a key_averages table for its rows named ``names``."""
        if self.table is None:
            return []
        return [Evidence(self.table.source, self.table.line, op=n) for n in names[:limit]]

    # -- JSON -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Plain data for the JSON report: ``steps``, ``phases``, ``ops`` and the rest."""
        steps = self.steps
        out: dict[str, Any] = {
            "source": {"kind": self.source, "path": self.path},
            "steps": {
                "method": self.step_method,
                "count": int(len(steps)),
                "warmup": int(steps["warmup"].sum()) if len(steps) else 0,
                "partial": int(steps["partial"].sum()) if len(steps) else 0,
                "steady": int(self.steady_count),
                "typical_step_ms": self.typical_step_ms,
                "median_step_ms": self.median_step_ms,
                "untracked_ms_per_step": self.untracked_ms_per_step,
                "statistic": STATISTIC if self.source == "trace" else "totals / steps",
                "warmup_rule": WARMUP_RULE if self.source == "trace" else None,
                "steps": _records(steps),
            },
            "phases": _records(self.phases),
            "ops": _records(self.ops),
            "segments": _records(self.segments),
            "modules": _records(self.modules),
            "threads": _records(self.threads),
            "aten_outside_onednn": _records(self.aten_outside_onednn),
            "normalization": _records(self.normalization),
            "convolutions_outside_onednn": _records(self.slow_convolutions),
            "notes": list(self.notes),
        }
        if self.primitives is not None:
            out["primitives"] = _records(self.primitives)
            out["link"] = self.link
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None or frame.empty:
        return []
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


# --------------------------------------------------------------------------------------------


def analyze_framework(
    data: FrameworkData,
    events: pd.DataFrame | None = None,
    records: list[Any] | None = None,
    markers: dict[str, list[tuple[int, str]]] | None = None,
    links: list[LinkResult] | None = None,
) -> FrameworkAnalysis:
    """The framework view of ``data``: its first trace, else its last key_averages table.

    ``events`` is the oneDNN event table of a verbose log of the same run (for the joined
    view: per op and per phase its oneDNN share); ``records`` the log's records (unused by
    the view itself: accepted so callers pass what they have); ``markers`` the
    profiler_start/stop lines per log (``data.markers`` by default). ``links`` is the
    linking of ``events`` already made (:func:`dnnlens.analysis.linking.link_framework`:
    one per trace, else one per plain table), so that the view and the report's
    ``framework_link`` are one linking; without it the view links ``events`` itself.
    """
    del records  # the event table carries what the join needs
    marks = data.markers if markers is None else markers
    have_execs = events is not None and bool((events["operation"] == "exec").any())
    if data.traces:
        trace = data.traces[0]
        notes = list(data.errors)
        if len(data.traces) > 1:
            notes.append(
                f"{len(data.traces)} traces among the inputs; the framework view is made of "
                f"the first ({trace.path})"
            )
        link = links[0] if links else None
        return _from_trace(trace, events if have_execs else None, marks, notes, link)
    if data.tables:
        table, notes = keyaverages.pick_table(data.tables)
        # link_framework links the same plain tables in order: the picked one is the last
        link = links[-1] if links else None
        return _from_table(table, events if have_execs else None, data, notes, link)
    raise ValueError("no framework data: neither a trace nor a key_averages table")


def _from_trace(
    trace: TraceData,
    events: pd.DataFrame | None,
    markers: dict[str, list[tuple[int, str]]],
    notes: list[str],
    link_made: LinkResult | None = None,
) -> FrameworkAnalysis:
    rows = op_rows(trace)
    steps = find_steps(rows)
    notes += steps.notes
    steady = views.steady_mask(rows, steps)
    count = len(steps.steady)
    seg_table, untracked = views.segments(rows, steps, steady)
    untracked_ms = float(np.median(untracked)) / 1e3 if len(untracked) else 0.0
    step_ms = float(seg_table["ms_per_step"].sum()) + untracked_ms
    phases = views.phases(seg_table, untracked_ms, step_ms)
    atoms = views.op_atoms(rows, steps, steady)
    ops = views.ops_by_name(atoms, step_ms)
    durations = steps.duration_us[steps.steady] / 1e3
    primitives = None
    link = None
    joined: Joined | None = None
    if events is not None:
        joined = join(rows, steady, count, events, markers, link_made)
        primitives, link = joined.primitives, joined.link.info
        notes += joined.notes
        _add_onednn(ops, phases, joined)
    other = [t for t in range(len(rows.threads)) if t != rows.main_thread]
    if other:
        notes.append(
            f"{len(other)} other thread(s) ran ops; the steps are the main thread's (see threads)"
        )
    analysis = FrameworkAnalysis(
        source="trace",
        path=trace.path,
        step_method=steps.method,
        steps=_steps_frame(rows, steps),
        steady_count=count,
        typical_step_ms=step_ms,
        median_step_ms=float(np.median(durations)) if len(durations) else 0.0,
        untracked_ms_per_step=untracked_ms,
        phases=phases,
        ops=ops,
        segments=seg_table,
        modules=views.modules(rows, steps, steady, step_ms),
        threads=views.threads(rows, steps),
        aten_outside_onednn=_aten_outside(ops, joined is not None),
        primitives=primitives,
        link=link,
        notes=notes,
        rows=rows,
        step_info=steps,
        steady=steady,
    )
    return analysis


def _steps_frame(rows: OpRows, steps: Steps) -> pd.DataFrame:
    lines = rows.trace.ops["line"].to_numpy()
    return pd.DataFrame(
        {
            "index": np.arange(len(steps)),
            "name": steps.names,
            "start_us": steps.start,
            "dur_ms": steps.duration_us / 1e3,
            "warmup": steps.warmup,
            "partial": steps.partial,
            "reason": steps.reasons,
            "line": lines[steps.row] if len(steps) else np.zeros(0, dtype=np.int64),
        },
        columns=list(STEP_COLUMNS),
    )


def _add_onednn(ops: pd.DataFrame, phases: pd.DataFrame, joined: Joined) -> None:
    """Per op and per phase, the oneDNN time per step and its share."""
    by_name = joined.by_name()
    by_phase = joined.by_phase()
    onednn = np.array([float(by_name.get(n, 0.0)) for n in ops["name"]])
    ops["onednn_ms_per_step"] = onednn
    total = ops["total_ms_per_step"].to_numpy()
    ops["onednn_share"] = np.where(total > 0, onednn / np.where(total > 0, total, 1.0), 0.0)
    ops["primitives"] = [joined.kinds_of(n) if by_name.get(n, 0.0) > 0 else [] for n in ops["name"]]
    phase_onednn = np.array([float(by_phase.get(p, 0.0)) for p in phases["phase"]])
    phases["onednn_ms_per_step"] = phase_onednn
    ms = phases["ms_per_step"].to_numpy()
    phases["onednn_share"] = np.where(ms > 0, phase_onednn / np.where(ms > 0, ms, 1.0), 0.0)


def _aten_outside(ops: pd.DataFrame, joined: bool) -> pd.DataFrame:
    """ATen ops ranked by the self time they spend outside oneDNN.

    With a verbose log, an op's oneDNN time (linked primitives) is taken off its self
    time; without, the ops known to call oneDNN (the linking's anchors) are left out.
    """
    aten = ops[ops["name"].str.startswith("aten::")].copy()
    if joined:
        aten["outside_ms_per_step"] = np.maximum(
            aten["self_ms_per_step"] - aten["onednn_ms_per_step"], 0.0
        )
    else:
        aten = aten[np.array([not _calls_onednn(n) for n in aten["name"]], dtype=bool)]
        aten["outside_ms_per_step"] = aten["self_ms_per_step"]
    aten["outside_share"] = aten["self_share"] * np.where(
        aten["self_ms_per_step"] > 0,
        aten["outside_ms_per_step"]
        / aten["self_ms_per_step"].where(aten["self_ms_per_step"] > 0, 1.0),
        0.0,
    )
    cols = ["name", "calls_per_step", "outside_ms_per_step", "outside_share", "phase"]
    aten = aten[aten["outside_ms_per_step"] > 0][cols]
    return aten.sort_values("outside_ms_per_step", ascending=False, kind="stable").reset_index(
        drop=True
    )


def _from_table(
    table: ProfilerTable,
    events: pd.DataFrame | None,
    data: FrameworkData,
    notes: list[str],
    link_made: LinkResult | None = None,
) -> FrameworkAnalysis:
    parts = keyaverages.table_view(table)
    ops = parts["ops"]
    phases = parts["phases"]
    primitives = None
    link = None
    if events is not None:
        from dnnlens.analysis.linking import link_table_events

        result = link_made or link_table_events(events, table, data.markers)
        count = parts["steady_count"]
        rows = [
            {
                "name": r["name"],
                "phase": "",
                "kind": k["kind"],
                "calls_per_step": k["count"] / count,
                "ms_per_step": k["time_ms"] / count,
            }
            for r in result.ops
            for k in r["onednn"]
        ]
        primitives = pd.DataFrame(
            rows, columns=["name", "phase", "kind", "calls_per_step", "ms_per_step"]
        )
        link = result.info
        notes += result.notes
        by_name = primitives.groupby("name")["ms_per_step"].sum()
        ops["onednn_ms_per_step"] = [float(by_name.get(n, 0.0)) for n in ops["name"]]
        total = ops["total_ms_per_step"].to_numpy()
        ops["onednn_share"] = np.where(
            total > 0, ops["onednn_ms_per_step"] / np.where(total > 0, total, 1.0), 0.0
        )
    return FrameworkAnalysis(
        source="table",
        path=f"{table.source}:{table.line}",
        step_method=parts["step_method"],
        steps=parts["steps"],
        steady_count=parts["steady_count"],
        typical_step_ms=parts["typical_step_ms"],
        median_step_ms=parts["median_step_ms"],
        untracked_ms_per_step=parts["untracked_ms_per_step"],
        phases=phases,
        ops=ops,
        aten_outside_onednn=_aten_outside(ops, events is not None),
        primitives=primitives,
        link=link,
        notes=notes + parts["notes"],
        table=table,
    )


__all__ = ["PHASES", "FrameworkAnalysis", "analyze_framework"]
