"""The framework view of a ``key_averages()`` table alone (no trace).

A table holds totals over the profiled window, one row per op name (per name and input
shapes with ``group_by_input_shape=True``), without order or nesting. What it can tell:

**Steps.** ``key_averages`` puts every ``ProfilerStep#N`` span into one row
``ProfilerStep*`` whose ``# of Calls`` is the number of steps and whose CPU total is their
sum, so a step is that total / calls (a mean: a table has nothing else, and warm-up cannot
be told apart); ``ProfilerStep#N`` rows (one step each) count the same way. Without step
rows the profiled window (``Self CPU time total``, the footer) is one step.

**Phases**, per step, from the markers the table has (:data:`.names.PHASE_MARKERS`):
data loading, backward and optimizer are the CPU totals of the ``enumerate(DataLoader)#``,
``autograd::engine::evaluate_function:`` and ``Optimizer.step#`` / ``Optimizer.zero_grad#``
rows (each marker is outermost in its phase, as a trace's segments are); "other" is the time
no op accounts for, as a trace's untracked time: the step rows' own self time, with the self
time of Python frames (``with_stack=True``: ``file.py(12): f``, ``<built-in ...>``,
``nn.Module: ...``; not those of ``torch/optim/`` and ``torch/utils/data/``, which run inside
the optimizer and data-loading markers), less the time the profile spent outside the steps
(footer minus the steps' total: the profiler's own frames); forward is the rest of the step.
Other annotations (``## Call CompiledFxGraph ... ##`` of inductor, ``record_function``
ranges) count as ops: a table cannot tell whether they sit at the top of the step (their
self time untracked) or inside an op (compiled regions run their kernels inside them).

**Per op** (Python frames and step rows left out, as a trace's op table leaves them out):
calls, self and total time per step, and a phase only where the name tells: a marker, an
autograd node (``XBackward0``, ``torch::autograd::...``) or a ``*_backward`` kernel
(backward), a fused optimizer kernel ``aten::_fused_*`` (optimizer); every op is forward when
the table has no marker of another phase. Other ops (``aten::mm``, ``aten::add_`` ...) may
run in several phases and the table has no nesting to tell which: their phase is left empty
and a note says how much self time that is.

**Rows left out.** A ``row_limit`` table omits rows: their self time is the footer minus
the printed rows' self time (the ``Self CPU %`` column falls short of 100% by more than its
rounding); a note says so, and the phases and ops then miss what those rows held.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import PHASES, marker_phase
from dnnlens.analysis.framework.steps import TableSteps, table_steps
from dnnlens.analysis.framework.views import OP_COLUMNS, PHASE_COLUMNS
from dnnlens.parsers.torch_table import ProfilerTable

#: Python frames as key_averages names them (``python_function`` events of with_stack).
PYTHON_FRAME = re.compile(r"^<built-in |^nn\.Module: |\.py\(\d+\): ")
#: Autograd nodes (``AddmmBackward0``, ``torch::autograd::AccumulateGrad``,
#: ``CompiledFunctionBackward``) and ATen's backward kernels (``aten::convolution_backward``,
#: ``aten::_log_softmax_backward_data``): these run in the backward only.
BACKWARD_OP = re.compile(
    r"^(?:[A-Za-z0-9_]+Backward\d*|torch::autograd::\w+)$|^\w+::\w*_backward(?:_[a-z]+)?$"
)
#: Python frames that run inside the optimizer and data-loading markers.
INSIDE_MARKERS = re.compile(r"torch/optim/|torch/utils/data/")
#: Fused optimizer kernels: only an optimizer step calls them.
OPTIMIZER_OP = re.compile(r"^aten::_fused_")
#: Share of the step (percent points) by which the printed ``Self CPU %`` column may fall
#: short of 100% per row through rounding: each value is printed with two decimals.
_PCT_ROUNDING = 0.005


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


def is_python_frame(name: str) -> bool:
    """A Python frame row of a ``with_stack`` table (not an op)."""
    return bool(PYTHON_FRAME.search(name))


def op_phase(name: str) -> str:
    """The phase an op name tells by itself, "" when it does not (see the module doc)."""
    marked = marker_phase(name)
    if marked is not None:
        return marked
    if BACKWARD_OP.match(name):
        return "backward"
    if OPTIMIZER_OP.match(name):
        return "optimizer"
    return ""


def grouped(rows: pd.DataFrame) -> pd.DataFrame:
    """Calls, self and total CPU ms by op name (a name can have several rows)."""
    sums = rows.groupby("name", sort=False)[["calls", "self_cpu_ms", "cpu_total_ms"]].sum()
    return sums.rename(columns={"self_cpu_ms": "own", "cpu_total_ms": "total"})


def omitted_ms(table: ProfilerTable) -> float:
    """Self time of the rows a ``row_limit`` table left out (0 when none is missing)."""
    rows = table.rows
    total = table.totals_ms.get("self_cpu_time_total_ms")
    if total is None or "self_cpu_pct" not in rows or not len(rows):
        return 0.0
    pct = float(np.nansum(rows["self_cpu_pct"].to_numpy()))
    if 100.0 - pct <= _PCT_ROUNDING * len(rows):
        return 0.0
    return max(total - float(np.nansum(rows["self_cpu_ms"].to_numpy())), 0.0)


def _phases(g: pd.DataFrame, names: list[str], steps: TableSteps) -> dict[str, float]:
    """Milliseconds per step of each phase (module doc)."""
    count = steps.count
    ms = dict.fromkeys(PHASES, 0.0)
    loose = 0.0  # self time no op accounts for: the steps' and Python frames'
    for n in names:
        if n in steps.names:
            loose += float(g.at[n, "own"])
            continue
        phase = marker_phase(n)
        if phase is not None:
            ms[phase] += float(g.at[n, "total"]) / count
        elif is_python_frame(n) and not INSIDE_MARKERS.search(n):
            loose += float(g.at[n, "own"])
    if steps.names:
        step_own = sum(float(g.at[n, "own"]) for n in steps.names)
        loose = max(loose - steps.outside_ms, step_own)
    ms["other"] = loose / count
    known = sum(v for k, v in ms.items() if k != "forward")
    ms["forward"] = max(steps.step_ms - known, 0.0)
    return ms


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
    g = grouped(rows)
    names = [str(n) for n in g.index]
    steps = table_steps(table, g)
    notes += steps.notes
    count = steps.count
    step_ms = steps.step_ms
    phase_ms = _phases(g, names, steps)
    phases = pd.DataFrame(
        {
            "phase": list(PHASES),
            "ms_per_step": [phase_ms[p] for p in PHASES],
            "share": [phase_ms[p] / step_ms if step_ms > 0 else 0.0 for p in PHASES],
        },
        columns=list(PHASE_COLUMNS),
    )
    ops_names = [n for n in names if n not in steps.names and not is_python_frame(n)]
    told = [op_phase(n) for n in ops_names]
    if not phase_ms["backward"] and not phase_ms["optimizer"] and not phase_ms["data loading"]:
        told = [p or "forward" for p in told]  # a step of one phase: every op is in it
    ops = pd.DataFrame(
        {
            "name": pd.Series(ops_names, dtype=object),
            "calls_per_step": [float(g.at[n, "calls"]) / count for n in ops_names],
            "self_ms_per_step": [float(g.at[n, "own"]) / count for n in ops_names],
            "total_ms_per_step": [float(g.at[n, "total"]) / count for n in ops_names],
        }
    )
    ops["self_share"] = ops["self_ms_per_step"] / step_ms if step_ms > 0 else 0.0
    ops["phase"] = told
    ops["phases"] = [
        {p: s} if p else {} for p, s in zip(told, ops["self_ms_per_step"], strict=True)
    ]
    ops = ops[list(OP_COLUMNS)].sort_values("self_ms_per_step", ascending=False, kind="stable")
    untold = ops[ops["phase"] == ""]
    if len(untold):
        notes.append(
            f"the table cannot tell the phase of {len(untold)} op names "
            f"({float(untold['self_share'].sum()):.0%} of the step in self time, e.g. "
            f"{untold['name'].iloc[0]}): such ops run in the forward, inside autograd nodes "
            "or inside the optimizer step, and a table has no nesting; their phase is left empty"
        )
    lost = omitted_ms(table)
    if lost > 0 and not steps.names:
        notes.append(
            "the ProfilerStep* row may be among the rows the table leaves out: print the "
            "table with row_limit=-1 for the steps"
        )
    if lost > 0:
        notes.append(
            f"{table.source}:{table.line}: the table shows {table.size} rows and leaves out "
            f"others (row_limit) holding {lost:.3f} ms of self time "
            f"({lost / (step_ms * count):.0%} of the profile): the ops miss them, and the "
            f"forward phase (the rest of the step) holds their {lost / count:.3f} ms per step"
            if step_ms > 0
            else f"{table.source}:{table.line}: the table leaves out rows (row_limit)"
        )
    cut = sum(1 for n in ops_names if n.endswith("..."))
    if cut:
        notes.append(
            f"{cut} op names are cut at the table's name column width (ending in '...'); "
            "names that share the kept start are one row"
        )
    notes.append(
        "from a key_averages table: times per step are totals / steps (means), "
        "warm-up cannot be separated"
    )
    return {
        "steps": steps.frame(table.line),
        "step_method": steps.method,
        "steady_count": count,
        "typical_step_ms": step_ms,
        "median_step_ms": steps.median_ms,
        "untracked_ms_per_step": phase_ms["other"],
        "phases": phases,
        "ops": ops.reset_index(drop=True),
        "notes": notes,
    }
