"""The trace's ops as aligned numpy arrays, with what the framework view derives per row.

Everything here is vectorised over the op table (a trace of a million ops is a few
arrays), walking the nesting one depth level at a time rather than one op at a time.

Per row:

* ``main``: the op runs on the main thread (the one holding the ``ProfilerStep#`` spans,
  else the one with the most top-level time);
* ``segment``: the row of its *segment*, the outermost op above it (or itself) that the
  framework dispatched or that marks a phase (see :mod:`.names`), -1 if none: a step is
  its segments plus the untracked time between them;
* ``phase``: the phase of its segment (index into :data:`.names.PHASES`), "other" without;
* ``module``: the row of the innermost ``nn.Module: ...`` frame above it, -1 if none;
* ``step``: the step it starts in (-1 outside every step), set by :mod:`.steps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import (
    CPU_CATEGORIES,
    MODULE_PREFIX,
    OP_CATEGORIES,
    PHASES,
    PYTHON_CATEGORY,
    STEP_PREFIX,
    marker_phase,
)
from dnnlens.analysis.framework.typical import compose, occurrences
from dnnlens.parsers.torch_trace import TraceData

OTHER = PHASES.index("other")
FORWARD = PHASES.index("forward")


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes and category texts of a categorical column (any column made one)."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    names = np.array([str(c) for c in cat.cat.categories], dtype=object)
    return cat.cat.codes.to_numpy().astype(np.int32), names


def propagate(
    parent: np.ndarray, depth: np.ndarray, seed: np.ndarray, outermost: bool
) -> np.ndarray:
    """For each row, the row of the outermost (or innermost) ancestor-or-self where
    ``seed`` holds, -1 if none: computed level by level of the nesting."""
    n = len(parent)
    index = np.int32 if n < (1 << 31) else np.int64  # row numbers, compact
    out = np.full(n, -1, dtype=index)
    if not n:
        return out
    order = np.argsort(depth, kind="stable")
    levels = depth[order]
    cuts = np.flatnonzero(np.diff(levels)) + 1
    own = np.arange(n, dtype=index)
    for rows in np.split(order, cuts):
        p = parent[rows]
        above = np.where(p >= 0, out[np.maximum(p, 0)], -1)
        mine = np.where(seed[rows], own[rows], -1)
        if outermost:
            out[rows] = np.where(above >= 0, above, mine)
        else:
            out[rows] = np.where(mine >= 0, mine, above)
    return out


@dataclass
class OpRows:
    """The ops of one trace as arrays aligned with ``trace.ops`` rows."""

    trace: TraceData
    name: np.ndarray
    names: np.ndarray
    dims: np.ndarray
    dims_names: np.ndarray
    cat: np.ndarray
    cats: np.ndarray
    thread: np.ndarray
    threads: list[tuple[str, str]]
    ts: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    self_us: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    main_thread: int
    main: np.ndarray
    python: np.ndarray
    is_step: np.ndarray
    candidate: np.ndarray
    segment: np.ndarray
    phase: np.ndarray
    module: np.ndarray
    step: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    #: which occurrence of its (name, shapes) in its step a row is (set with the steps)
    occurrence: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def number_occurrences(self) -> None:
        """Set :attr:`occurrence` from :attr:`step` (see :mod:`.typical`)."""
        code = self.name.astype(np.int64) * (len(self.dims_names) + 1) + self.dims
        self.occurrence = occurrences(self.step, code, self.ts)

    def key(self, at: np.ndarray, *leading: tuple[np.ndarray, int]) -> np.ndarray:
        """The grouping key of rows ``at`` for the typical statistic: the ``leading``
        (codes, size) parts, then name, input shapes and occurrence in the step."""
        occ = self.occurrence[at]
        return compose(
            *leading,
            (self.name[at], len(self.names)),
            (self.dims[at], len(self.dims_names)),
            (occ, int(occ.max(initial=0)) + 1),
        )

    def __len__(self) -> int:
        return len(self.ts)

    def name_of(self, rows: np.ndarray | int) -> np.ndarray | str:
        """Op name(s) of row(s)."""
        return self.names[self.name[rows]]

    def mask_names(self, wanted: set[str] | frozenset[str]) -> np.ndarray:
        """Rows whose name is one of ``wanted``."""
        hit = np.array([n in wanted for n in self.names], dtype=bool)
        return hit[self.name] if len(self.names) else np.zeros(len(self), dtype=bool)

    def mask_prefix(self, prefix: str) -> np.ndarray:
        """Rows whose name starts with ``prefix``."""
        hit = np.array([n.startswith(prefix) for n in self.names], dtype=bool)
        return hit[self.name] if len(self.names) else np.zeros(len(self), dtype=bool)

    def mask_match(self, pattern) -> np.ndarray:  # noqa: ANN001 - a compiled regex
        """Rows whose name matches ``pattern`` (``re.Pattern.search``)."""
        hit = np.array([bool(pattern.search(n)) for n in self.names], dtype=bool)
        return hit[self.name] if len(self.names) else np.zeros(len(self), dtype=bool)

    def outermost(self, mask: np.ndarray) -> np.ndarray:
        """``mask`` without the rows that have an ancestor in ``mask``."""
        top = propagate(self.parent, self.depth, mask, outermost=True)
        return mask & (top == np.arange(len(self)))


def op_rows(trace: TraceData) -> OpRows:
    """Derive the per-row arrays of ``trace`` (steps are assigned later)."""
    ops = trace.ops
    name, names = _codes(ops["name"])
    dims, dims_names = _codes(ops["input_dims"])
    cat, cats = _codes(ops["cat"])
    pid, pids = _codes(ops["pid"])
    tid, tids = _codes(ops["tid"])
    pair = pid.astype(np.int64) * (len(tids) + 1) + tid
    keys, thread = np.unique(pair, return_inverse=True)
    threads = [(str(pids[k // (len(tids) + 1)]), str(tids[k % (len(tids) + 1)])) for k in keys]
    ts = ops["ts_us"].to_numpy(dtype=np.float64)
    dur = ops["dur_us"].to_numpy(dtype=np.float64)
    parent = ops["parent"].to_numpy()
    depth = ops["depth"].to_numpy()
    cpu = np.array([c in CPU_CATEGORIES for c in cats], dtype=bool)[cat] if len(cats) else cat > 0
    python = (cats == PYTHON_CATEGORY)[cat] if len(cats) else np.zeros(len(ts), bool)
    dispatched = (
        np.array([c in OP_CATEGORIES for c in cats], dtype=bool)[cat] if len(cats) else python
    )
    is_step = np.array([n.startswith(STEP_PREFIX) for n in names], dtype=bool)
    is_step = is_step[name] if len(names) else np.zeros(len(ts), bool)
    marker = np.array([marker_phase(n) is not None for n in names], dtype=bool)
    marker = marker[name] if len(names) else np.zeros(len(ts), bool)
    main_thread = _main_thread(thread, len(threads), is_step, depth, dur, cpu)
    main = thread == main_thread
    candidate = main & cpu & ~is_step & ~python & (dispatched | marker)
    segment = propagate(parent, depth, candidate, outermost=True)
    phase_of_name = np.array(
        [PHASES.index(marker_phase(n)) if marker_phase(n) else FORWARD for n in names],
        dtype=np.int8,
    )
    phase = np.full(len(ts), OTHER, dtype=np.int8)
    inside = segment >= 0
    if len(names):
        phase[inside] = phase_of_name[name[segment[inside]]]
    is_module = np.array([n.startswith(MODULE_PREFIX) for n in names], dtype=bool)
    is_module = (is_module[name] & python) if len(names) else python
    module = propagate(parent, depth, is_module, outermost=False)
    return OpRows(
        trace=trace,
        name=name,
        names=names,
        dims=dims,
        dims_names=dims_names,
        cat=cat,
        cats=cats,
        thread=thread.astype(np.int32),
        threads=threads,
        ts=ts,
        dur=dur,
        end=ts + dur,
        self_us=ops["self_us"].to_numpy(dtype=np.float64),
        parent=parent,
        depth=depth,
        main_thread=main_thread,
        main=main,
        python=python,
        is_step=is_step,
        candidate=candidate,
        segment=segment,
        phase=phase,
        module=module,
        step=np.full(len(ts), -1, dtype=np.int32),
    )


def _main_thread(
    thread: np.ndarray,
    count: int,
    is_step: np.ndarray,
    depth: np.ndarray,
    dur: np.ndarray,
    cpu: np.ndarray,
) -> int:
    """The thread holding the step spans, else the one with the most top-level time."""
    if not count:
        return -1
    if is_step.any():
        return int(np.bincount(thread[is_step], minlength=count).argmax())
    top = (depth == 0) & cpu
    return int(np.bincount(thread[top], weights=dur[top], minlength=count).argmax())
