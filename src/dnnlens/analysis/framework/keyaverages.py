"""The framework view of a ``key_averages()`` table alone (no trace).

A table holds totals over the profiled window, not calls, so: the steps are its
``ProfilerStep#N`` rows (one row each; without them the window is one step), a time per
step is a total divided by the steps (a mean: the table has nothing else), warm-up cannot
be told apart, and the phases are the CPU totals of the phase annotations and autograd
nodes (:data:`.names.PHASE_MARKERS`) with forward the rest of the step's CPU time, "other"
the self time of the other annotations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import PHASES, STEP_PREFIX, marker_phase
from dnnlens.analysis.framework.views import OP_COLUMNS, PHASE_COLUMNS
from dnnlens.parsers.torch_table import ProfilerTable


def pick_table(tables: list[ProfilerTable]) -> tuple[ProfilerTable, list[str]]:
    """The table the view is made of: the last one without input shapes, else the last."""
    plain = [t for t in tables if not t.by_input_shape] or tables
    notes = []
    if len(tables) > 1:
        chosen = plain[-1]
        notes.append(
            f"{len(tables)} profiler tables among the inputs; the framework view is made "
            f"of the last one ({chosen.source}:{chosen.line})"
        )
    return plain[-1], notes


def _grouped(rows: pd.DataFrame) -> pd.DataFrame:
    """Calls, self and total CPU ms by op name (a name can have several rows)."""
    sums = rows.groupby("name", sort=False)[["calls", "self_cpu_ms", "cpu_total_ms"]].sum()
    return sums.rename(columns={"self_cpu_ms": "own", "cpu_total_ms": "total"})


def table_view(table: ProfilerTable) -> dict:
    """Steps, phases and ops of a table, as the parts of a FrameworkAnalysis."""
    rows = table.rows
    needed = {"name", "calls", "self_cpu_ms", "cpu_total_ms"}
    notes: list[str] = []
    if not needed <= set(rows.columns):
        notes.append(
            f"{table.source}:{table.line}: the table lacks the columns "
            f"{sorted(needed - set(rows.columns))}: no framework view"
        )
        rows = pd.DataFrame({c: [] for c in sorted(needed)})
    g = _grouped(rows)
    names = [str(n) for n in g.index]
    step_names = [n for n in names if n.startswith(STEP_PREFIX)]
    count = max(len(step_names), 1)
    step_ms = [float(g.at[n, "total"]) for n in step_names]
    busy = float(table.totals_ms.get("self_cpu_time_total_ms", g["own"].sum()))
    typical_step = (sum(step_ms) if step_names else busy) / count
    phase_ms = dict.fromkeys(PHASES, 0.0)
    for n in names:
        phase = marker_phase(n)
        if phase is not None:
            phase_ms[phase] += float(g.at[n, "total"]) / count
    # the steps' own self time (untracked) and other annotations' ("name#...") self time
    annotations = [n for n in names if marker_phase(n) is None and "#" in n]
    phase_ms["other"] = sum(float(g.at[n, "own"]) for n in annotations) / count
    known = sum(v for k, v in phase_ms.items() if k != "forward")
    phase_ms["forward"] = max(typical_step - known, 0.0)
    phases = pd.DataFrame(
        {
            "phase": list(PHASES),
            "ms_per_step": [phase_ms[p] for p in PHASES],
            "share": [phase_ms[p] / typical_step if typical_step > 0 else 0.0 for p in PHASES],
        },
        columns=list(PHASE_COLUMNS),
    )
    ops_names = [n for n in names if not n.startswith(STEP_PREFIX)]
    ops = pd.DataFrame(
        {
            "name": ops_names,
            "calls_per_step": [float(g.at[n, "calls"]) / count for n in ops_names],
            "self_ms_per_step": [float(g.at[n, "own"]) / count for n in ops_names],
            "total_ms_per_step": [float(g.at[n, "total"]) / count for n in ops_names],
        }
    )
    ops["self_share"] = ops["self_ms_per_step"] / typical_step if typical_step > 0 else 0.0
    ops["phase"] = [marker_phase(n) or ("other" if "#" in n else "forward") for n in ops_names]
    ops["phases"] = [{p: s} for p, s in zip(ops["phase"], ops["self_ms_per_step"], strict=True)]
    ops = ops[list(OP_COLUMNS)].sort_values("self_ms_per_step", ascending=False, kind="stable")
    steps = pd.DataFrame(
        {
            "index": np.arange(len(step_names)),
            "name": step_names,
            "start_us": np.full(len(step_names), np.nan),
            "dur_ms": step_ms,
            "warmup": False,
            "partial": False,
            "reason": "",
            "line": table.line,
        }
    )
    if not step_names:
        notes.append(
            "the table has no ProfilerStep# rows: its whole profiled window is taken as one step"
        )
    notes.append(
        "from a key_averages table: times per step are totals / steps (means), "
        "warm-up cannot be separated"
    )
    return {
        "steps": steps,
        "step_method": "table_steps" if step_names else "table_window",
        "steady_count": count,
        "typical_step_ms": typical_step,
        "median_step_ms": float(np.median(step_ms)) if step_ms else typical_step,
        "untracked_ms_per_step": 0.0,
        "phases": phases,
        "ops": ops.reset_index(drop=True),
        "notes": notes,
    }
