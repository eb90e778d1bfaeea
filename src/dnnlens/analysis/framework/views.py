"""The tables of the framework view, from a trace's rows and steps.

All times are typical milliseconds per steady step (:mod:`.typical`); shares are of the
typical step. Only the main thread makes the step; other threads are in :func:`threads`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import MODULE_PREFIX, PHASES, module_class
from dnnlens.analysis.framework.rows import OpRows
from dnnlens.analysis.framework.steps import Steps
from dnnlens.analysis.framework.typical import compose, split, typical

SEGMENT_COLUMNS = ("phase", "name", "input_dims", "calls_per_step", "median_ms", "ms_per_step")
OP_COLUMNS = (
    "name",
    "calls_per_step",
    "self_ms_per_step",
    "total_ms_per_step",
    "self_share",
    "phase",
    "phases",
)
PHASE_COLUMNS = ("phase", "ms_per_step", "share")
MODULE_COLUMNS = (
    "module",
    "class",
    "calls_per_step",
    "total_ms_per_step",
    "self_ms_per_step",
    "total_share",
)
THREAD_COLUMNS = (
    "pid",
    "tid",
    "name",
    "role",
    "busy_ms_per_step",
    "idle_ms_per_step",
    "busy_share",
)


def steady_mask(rows: OpRows, steps: Steps) -> np.ndarray:
    """Rows that start in a steady step."""
    steady = np.zeros(len(steps) + 1, dtype=bool)
    steady[steps.steady] = True
    return steady[rows.step] & (rows.step >= 0)


def segments(rows: OpRows, steps: Steps, steady: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """Typical cost of the segments, by (phase, name, shapes); and the untracked time of
    each steady step (its wall time minus its segments', never below 0)."""
    own = rows.main & steady & (rows.segment == np.arange(len(rows)))
    at = np.flatnonzero(own)
    n = len(steps.steady)
    occ = int(rows.occurrence[at].max(initial=0)) + 1
    sizes = (len(PHASES), len(rows.names), len(rows.dims_names), occ)
    table = typical(rows.key(at, (rows.phase[at], sizes[0])), rows.dur[at], n)
    phase, name, dims, _ = split(table["key"].to_numpy(), *sizes)
    frame = pd.DataFrame(
        {
            "phase": [PHASES[i] for i in phase],
            "name": rows.names[name] if len(name) else [],
            "input_dims": rows.dims_names[dims] if len(dims) else [],
            "calls_per_step": table["calls_per_step"].to_numpy(),
            "median_ms": table["median_us"].to_numpy() / 1e3,
            "ms_per_step": table["ms_per_step"].to_numpy(),
        },
        columns=list(SEGMENT_COLUMNS),
    )
    covered = np.bincount(rows.step[at], weights=rows.dur[at], minlength=len(steps))
    untracked = np.maximum(steps.duration_us - covered[: len(steps)], 0.0)[steps.steady]
    return frame, untracked


def phases(segment_table: pd.DataFrame, untracked_ms: float, step_ms: float) -> pd.DataFrame:
    """Typical time per phase; "other" holds the untracked time. Adds up to the step."""
    by_phase = segment_table.groupby("phase")["ms_per_step"].sum()
    values = [float(by_phase.get(p, 0.0)) for p in PHASES]
    values[PHASES.index("other")] += untracked_ms
    return pd.DataFrame(
        {
            "phase": list(PHASES),
            "ms_per_step": values,
            "share": [v / step_ms if step_ms > 0 else 0.0 for v in values],
        },
        columns=list(PHASE_COLUMNS),
    )


def op_atoms(rows: OpRows, steps: Steps, steady: np.ndarray) -> pd.DataFrame:
    """Self and total typical time of every (phase, name, shapes) of the main thread."""
    at = np.flatnonzero(rows.main & steady & ~rows.python & ~rows.is_step)
    n = len(steps.steady)
    occ = int(rows.occurrence[at].max(initial=0)) + 1
    sizes = (len(PHASES), len(rows.names), len(rows.dims_names), occ)
    key = rows.key(at, (rows.phase[at], sizes[0]))
    own = typical(key, rows.self_us[at], n)
    total = typical(key, rows.dur[at], n)
    phase, name, dims, _ = split(own["key"].to_numpy(), *sizes)
    return pd.DataFrame(
        {
            "phase": [PHASES[i] for i in phase],
            "name": rows.names[name] if len(name) else [],
            "input_dims": rows.dims_names[dims] if len(dims) else [],
            "calls_per_step": own["calls_per_step"].to_numpy(),
            "self_ms_per_step": own["ms_per_step"].to_numpy(),
            "total_ms_per_step": total["ms_per_step"].to_numpy(),
        }
    )


def ops_by_name(atoms: pd.DataFrame, step_ms: float) -> pd.DataFrame:
    """The by-op table: one row per op name, largest self time first."""
    if atoms.empty:  # texts stay texts: an empty column would be float
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in OP_COLUMNS})
    g = atoms.groupby("name", sort=False)
    out = g[["calls_per_step", "self_ms_per_step", "total_ms_per_step"]].sum()
    split_by_phase = atoms.groupby(["name", "phase"], sort=False)["self_ms_per_step"].sum()
    per_phase: dict[str, dict[str, float]] = {}
    for (name, phase), value in split_by_phase.items():
        per_phase.setdefault(str(name), {})[str(phase)] = float(value)
    names = [str(n) for n in out.index]
    frame = pd.DataFrame(
        {
            "name": names,
            "calls_per_step": out["calls_per_step"].to_numpy(),
            "self_ms_per_step": out["self_ms_per_step"].to_numpy(),
            "total_ms_per_step": out["total_ms_per_step"].to_numpy(),
            "self_share": out["self_ms_per_step"].to_numpy() / step_ms if step_ms > 0 else 0.0,
            "phase": [max(per_phase[n], key=per_phase[n].get) for n in names],
            "phases": [per_phase[n] for n in names],
        },
        columns=list(OP_COLUMNS),
    )
    return frame.sort_values("self_ms_per_step", ascending=False, kind="stable").reset_index(
        drop=True
    )


def _module_paths(rows: OpRows, module_rows: np.ndarray) -> dict[int, str]:
    """Row of a module frame -> its path (``Sequential_0/Conv2d_1``)."""
    paths: dict[int, str] = {}
    for row in module_rows.tolist():
        chain = []
        r = row
        while r >= 0 and r not in paths:
            chain.append(r)
            p = rows.parent[r]
            r = rows.module[p] if p >= 0 else -1
        prefix = paths.get(r, "") if r >= 0 else ""
        for c in reversed(chain):
            own = str(rows.name_of(c)).removeprefix(MODULE_PREFIX)
            prefix = f"{prefix}/{own}" if prefix else own
            paths[c] = prefix
    return paths


def modules(rows: OpRows, steps: Steps, steady: np.ndarray, step_ms: float) -> pd.DataFrame:
    """By module (traces made with ``with_modules=True``): calls, inclusive time, and the
    self time of the ops directly inside each (not inside a child module)."""
    frames = np.flatnonzero(rows.main & steady & (rows.module == np.arange(len(rows))))
    if not len(frames):
        return pd.DataFrame({c: [] for c in MODULE_COLUMNS})
    paths = _module_paths(rows, frames)
    distinct = sorted(set(paths.values()))
    code = {p: i for i, p in enumerate(distinct)}
    n = len(steps.steady)
    frame_codes = np.array([code[paths[r]] for r in frames.tolist()], dtype=np.int64)
    frame_key = compose(
        (frame_codes, len(distinct)),
        (rows.occurrence[frames], int(rows.occurrence[frames].max()) + 1),
    )
    by_frame = typical(frame_key, rows.dur[frames], n)
    path_of = split(
        by_frame["key"].to_numpy(), len(distinct), int(rows.occurrence[frames].max()) + 1
    )[0]
    total = by_frame.groupby(path_of)[["calls_per_step", "ms_per_step"]].sum()
    inside = np.flatnonzero(rows.main & steady & ~rows.python & (rows.module >= 0))
    inside = inside[np.isin(rows.module[inside], frames)]
    owner = np.array([code[paths[r]] for r in rows.module[inside].tolist()], dtype=np.int64)
    occ = int(rows.occurrence[inside].max(initial=0)) + 1
    sizes = (len(distinct), len(rows.names), len(rows.dims_names), occ)
    own = typical(rows.key(inside, (owner, sizes[0])), rows.self_us[inside], n)
    own_by_path = (
        pd.Series(own["ms_per_step"].to_numpy())
        .groupby(split(own["key"].to_numpy(), *sizes)[0])
        .sum()
    )
    frame = pd.DataFrame(
        {
            "module": distinct,
            "class": [module_class(p.rsplit("/", 1)[-1]) for p in distinct],
            "calls_per_step": [float(total.at[i, "calls_per_step"]) for i in range(len(distinct))],
            "total_ms_per_step": [float(total.at[i, "ms_per_step"]) for i in range(len(distinct))],
            "self_ms_per_step": [float(own_by_path.get(i, 0.0)) for i in range(len(distinct))],
        }
    )
    frame["total_share"] = frame["total_ms_per_step"] / step_ms if step_ms > 0 else 0.0
    return frame[list(MODULE_COLUMNS)]


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals sorted by start, merged where they overlap."""
    reach = np.maximum.accumulate(ends)
    opens = np.ones(len(starts), dtype=bool)
    opens[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(opens)
    return starts[first], np.maximum.reduceat(reach, first)


def _busy_before(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Busy time of disjoint sorted intervals before each time in ``t``."""
    cum = np.concatenate([[0.0], np.cumsum(ends - starts)])
    k = np.searchsorted(ends, t, side="right")  # intervals over by t
    nxt = np.minimum(k, len(starts) - 1)
    partial = np.where(k < len(starts), np.clip(t - starts[nxt], 0.0, None), 0.0)
    return cum[k] + partial


def threads(rows: OpRows, steps: Steps) -> pd.DataFrame:
    """Per CPU thread of the trace: busy and idle time per steady step (medians), where
    busy is the union of its outermost framework events (ops and annotations, not Python
    frames, not the step spans) within the step's wall time."""
    out = []
    steady = steps.steady
    if not len(steady):
        return pd.DataFrame({c: [] for c in THREAD_COLUMNS})
    s, e = steps.start[steady], steps.end[steady]
    wall = e - s
    top = rows.outermost(~rows.python & ~rows.is_step)
    for code, (pid, tid) in enumerate(rows.threads):
        at = np.flatnonzero(top & (rows.thread == code))
        if not len(at):
            continue
        at = at[np.argsort(rows.ts[at], kind="stable")]
        starts, ends = _union(rows.ts[at], rows.end[at])
        busy = _busy_before(starts, ends, e) - _busy_before(starts, ends, s)
        busy_ms = float(np.median(busy)) / 1e3
        idle_ms = float(np.median(wall - busy)) / 1e3
        out.append(
            {
                "pid": pid,
                "tid": tid,
                "name": rows.trace.thread_names.get((pid, tid), ""),
                "role": "main" if code == rows.main_thread else "other",
                "busy_ms_per_step": busy_ms,
                "idle_ms_per_step": idle_ms,
                "busy_share": busy_ms / (busy_ms + idle_ms) if busy_ms + idle_ms > 0 else 0.0,
            }
        )
    return pd.DataFrame(out, columns=list(THREAD_COLUMNS))
