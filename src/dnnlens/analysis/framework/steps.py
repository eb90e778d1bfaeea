"""The steps of a trace and which of them are warm-up; the steps of a key_averages table.

**Steps.** The ``ProfilerStep#N`` spans when the trace has them (``prof.step()`` in the
loop, with or without a schedule), one step each. Without them, the *repeating pattern* of
the main thread's segments (the outermost ops it dispatched, see :mod:`.rows`): the
longest tail of the segment sequence (name and input shapes) that repeats itself at least
twice, covering at least half of the segments, cut into periods. A period starts at the
data-loading annotation when it has one, else right after the optimizer step, else where
the trace starts; segments before the first full period form a warm-up step when they are
at least half a period long and are left out otherwise, like an incomplete last period
(a note says so). Without a pattern, the whole trace is one step.

**Warm-up** (the same idea as the oneDNN side's iterations): the leading steps whose ops
(every op of the main thread in the step, by name and input shapes, counted: the order
of independent autograd nodes may change from step to step) differ from the most common
set (when one occurs twice at least), then the leading
steps that last more than :data:`WARMUP_SLOWER` times the median of the others (first
calls that build kernels, allocate, warm caches). Trailing steps whose ops differ are
*partial* (cut by the end of the profile) and left out too. At least one step
is always steady.

**Steps of a table** (:func:`table_steps`): ``key_averages`` groups every
``ProfilerStep#N`` span into one row ``ProfilerStep*`` (``# of Calls`` = steps, CPU total =
their sum); tables made otherwise can hold ``ProfilerStep#N`` rows, one step each. A step
lasts their total / calls (a mean). Without them the whole profiled window (the footer's
``Self CPU time total``, else the sum of the self times) is one step.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import (
    DATALOADER_PREFIX,
    OPTIMIZER_STEP_PREFIX,
    STEP_PREFIX,
)
from dnnlens.analysis.framework.rows import OpRows
from dnnlens.analysis.steady import SLOW_WARMUP_FACTOR
from dnnlens.parsers.torch_table import ProfilerTable

#: A leading step this many times slower than the median step is warm-up: the oneDNN
#: side's passes' threshold, one value for the same idea (its reason is given there).
WARMUP_SLOWER = SLOW_WARMUP_FACTOR
#: The repeating tail must cover at least this share of the segments to make steps.
MIN_PATTERN_COVER = 0.5
_STEP_NUMBER = re.compile(r"#(\d+)$")
#: The row ``key_averages`` makes of all the ``ProfilerStep#N`` spans.
GROUPED_STEPS = "ProfilerStep*"


@dataclass
class Steps:
    """The steps found: spans in trace microseconds, warm-up flags and why."""

    method: str  # "profiler_step", "pattern", "single" or "none"
    names: list[str]
    start: np.ndarray
    end: np.ndarray
    #: row of the event that opens each step (the ProfilerStep span, the first segment)
    row: np.ndarray
    warmup: np.ndarray
    reasons: list[str]
    #: trailing steps cut short by the end of the profile (neither warm-up nor steady)
    partial: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    period: int = 0
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def steady(self) -> np.ndarray:
        """Indices of the steady steps."""
        return np.flatnonzero(~self.warmup & ~self.partial)

    @property
    def duration_us(self) -> np.ndarray:
        """Wall time of each step."""
        return self.end - self.start


def find_steps(rows: OpRows) -> Steps:
    """Find the steps of ``rows``, set ``rows.step`` and flag warm-up steps."""
    notes: list[str] = []
    if rows.is_step[rows.main].any():
        steps = _profiler_steps(rows)
    else:
        steps = _pattern_steps(rows, notes) or _single_step(rows)
    steps.notes = notes + steps.notes
    steps.partial = np.zeros(len(steps), dtype=bool)
    _assign(rows, steps)
    rows.number_occurrences()
    _flag_warmup(rows, steps)
    return steps


def _profiler_steps(rows: OpRows) -> Steps:
    at = np.flatnonzero(rows.is_step & rows.main)
    at = at[np.argsort(rows.ts[at], kind="stable")]
    names = [str(n) for n in rows.name_of(at)]
    return Steps(
        method="profiler_step",
        names=names,
        start=rows.ts[at],
        end=rows.end[at],
        row=at,
        warmup=np.zeros(len(at), dtype=bool),
        reasons=[""] * len(at),
    )


def _segment_rows(rows: OpRows) -> np.ndarray:
    """The main thread's segments, in time order."""
    own = np.flatnonzero(rows.main & (rows.segment == np.arange(len(rows))))
    return own[np.argsort(rows.ts[own], kind="stable")]


def periodic_tail(codes: list[int]) -> tuple[int, int]:
    """(period, length) of the longest tail of ``codes`` that repeats at least twice
    (its smallest period), (0, 0) if none: the prefix function of the reversed sequence."""
    r = codes[::-1]
    n = len(r)
    pi = [0] * n
    best = (0, 0)
    for i in range(1, n):
        k = pi[i - 1]
        while k and r[i] != r[k]:
            k = pi[k - 1]
        if r[i] == r[k]:
            k += 1
        pi[i] = k
        length = i + 1
        if length >= 2 * (length - k):
            best = (length - k, length)
    return best


def _pattern_steps(rows: OpRows, notes: list[str]) -> Steps | None:
    segs = _segment_rows(rows)
    if len(segs) < 2:
        return None
    pair = rows.name[segs].astype(np.int64) * (len(rows.dims_names) + 1) + rows.dims[segs]
    codes = np.unique(pair, return_inverse=True)[1].tolist()
    period, length = periodic_tail(codes)
    n = len(segs)
    if not period or length < MIN_PATTERN_COVER * n:
        return None
    tail = n - length
    unit = [str(x) for x in rows.name_of(segs[tail : tail + period])]
    loader = [i for i, x in enumerate(unit) if x.startswith(DATALOADER_PREFIX)]
    optimizer = [i for i, x in enumerate(unit) if x.startswith(OPTIMIZER_STEP_PREFIX)]
    if loader:
        offset = loader[0]
    elif optimizer:
        offset = (optimizer[-1] + 1) % period
    else:
        offset = (-tail) % period
    first = tail + offset
    if first >= n:
        first -= period
    bounds = list(range(first, n - period + 1, period))
    if not bounds:
        return None
    lead = bounds[0]
    if lead >= period / 2:
        bounds.insert(0, 0)
    elif lead:
        notes.append(
            f"the first {lead} segment(s) of the main thread come before the first full "
            "step (the profile started mid-step); they are left out"
        )
    left = n - (bounds[-1] + period)
    if left:
        notes.append(
            f"the last {left} segment(s) of the main thread do not make a full step; "
            "they are left out"
        )
    first_rows = segs[bounds]
    start = rows.ts[first_rows]
    last_end = [float(rows.end[segs[b : b + period]].max()) for b in bounds[-1:]]
    end = np.append(start[1:], last_end)
    k = len(bounds)
    return Steps(
        method="pattern",
        names=[f"step {i}" for i in range(k)],
        start=start,
        end=end,
        row=first_rows,
        warmup=np.zeros(k, dtype=bool),
        reasons=[""] * k,
        period=period,
    )


def _single_step(rows: OpRows) -> Steps:
    main = np.flatnonzero(rows.main)
    if not len(main):
        return Steps(
            "none", [], np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), []
        )
    first = main[np.argmin(rows.ts[main])]
    end = float(rows.end[main].max())
    return Steps(
        method="single",
        names=["whole trace"],
        start=np.array([rows.ts[first]]),
        end=np.array([end]),
        row=np.array([first]),
        warmup=np.zeros(1, dtype=bool),
        reasons=[""],
        notes=["no ProfilerStep# spans and no repeating pattern: the trace is one step"],
    )


def _assign(rows: OpRows, steps: Steps) -> None:
    """Each row goes to the step it starts in (-1 when in none)."""
    if not len(steps):
        return
    k = np.searchsorted(steps.start, rows.ts, side="right") - 1
    inside = (k >= 0) & (rows.ts < steps.end[np.maximum(k, 0)])
    rows.step = np.where(inside, k, -1).astype(np.int32)


def _signatures(rows: OpRows, count: int) -> list[bytes]:
    """Per step, a digest of the multiset of its main-thread ops (name and shapes): the
    autograd engine may run independent nodes in another order from one step to the
    next, so the order is not part of it."""
    keep = np.flatnonzero(rows.main & ~rows.python & ~rows.is_step & (rows.step >= 0))
    codes = rows.name[keep].astype(np.int64) * (len(rows.dims_names) + 1) + rows.dims[keep]
    order = np.lexsort((codes, rows.step[keep]))
    keep, codes = keep[order], codes[order]
    step = rows.step[keep]
    cuts = np.searchsorted(step, np.arange(count + 1))
    return [
        hashlib.blake2b(codes[cuts[i] : cuts[i + 1]].tobytes(), digest_size=16).digest()
        for i in range(count)
    ]


def _flag_warmup(rows: OpRows, steps: Steps) -> None:
    count = len(steps)
    if count < 2:
        return
    sigs = _signatures(rows, count)
    tally = Counter(sigs)
    top = max(tally.values())
    template = next(s for s in reversed(sigs) if tally[s] == top)
    last = count - 1
    if top == 1:  # every step differs (data-dependent ops): structure tells nothing
        template = b""
    while template and last > 0 and sigs[last] != template:  # cut by the end of the profile
        steps.partial[last] = True
        steps.reasons[last] = "the last step's ops differ: cut short by the end of the profile"
        last -= 1
    k = 0
    while template and k < last and sigs[k] != template:
        steps.warmup[k] = True
        steps.reasons[k] = "its ops differ from the other steps'"
        k += 1
    duration = steps.duration_us
    median = float(np.median(duration[k : last + 1]))
    while k < last and duration[k] > WARMUP_SLOWER * median:
        steps.warmup[k] = True
        steps.reasons[k] = f"more than {WARMUP_SLOWER:g}x the median step"
        k += 1


def step_number(name: str) -> int | None:
    """``ProfilerStep#7`` -> 7."""
    m = _STEP_NUMBER.search(name)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------------------------
# steps of a key_averages table


def is_step_row(name: str) -> bool:
    """``ProfilerStep*`` (all steps in one row) or ``ProfilerStep#N`` (one step)."""
    return name == GROUPED_STEPS or name.startswith(STEP_PREFIX)


@dataclass
class TableSteps:
    """The steps a table shows: their rows, how many and how long (module doc)."""

    method: str  # "table_steps" or "table_window"
    names: list[str]  # the step rows' names
    count: int  # steps (at least 1: the window)
    total_ms: float  # wall time of all steps (or of the window)
    #: profiled time outside the steps: the footer minus the steps' total (0 without steps)
    outside_ms: float
    per_step_ms: list[float]  # one per step: a mean for the steps of a ProfilerStep* row
    step_names: list[str] = field(default_factory=list)  # one per step (none for a window)
    reasons: list[str] = field(default_factory=list)  # one per step
    notes: list[str] = field(default_factory=list)

    @property
    def step_ms(self) -> float:
        """Mean wall time of a step."""
        return self.total_ms / self.count if self.count else 0.0

    @property
    def median_ms(self) -> float:
        return float(np.median(self.per_step_ms)) if self.per_step_ms else self.step_ms

    def frame(self, line: int) -> pd.DataFrame:
        """One row per step, as a trace's steps frame (``STEP_COLUMNS`` of the view)."""
        k = len(self.step_names)
        return pd.DataFrame(
            {
                "index": np.arange(k),
                "name": self.step_names,
                "start_us": np.full(k, np.nan),
                "dur_ms": self.per_step_ms[:k],
                "warmup": np.zeros(k, dtype=bool),
                "partial": np.zeros(k, dtype=bool),
                "reason": self.reasons[:k],
                "line": np.full(k, line, dtype=np.int64),
            }
        )


def table_steps(table: ProfilerTable, grouped: pd.DataFrame) -> TableSteps:
    """The steps of ``table`` from its step rows; ``grouped`` holds its calls, self
    (``own``) and CPU total (``total``) ms by op name."""
    names = [
        str(n)
        for n in grouped.index
        if is_step_row(str(n))
        and np.isfinite(grouped.at[n, "calls"])
        and grouped.at[n, "calls"] > 0
    ]
    footer = table.totals_ms.get("self_cpu_time_total_ms")
    busy = float(footer) if footer is not None else float(grouped["own"].sum())
    if not names:
        return TableSteps(
            method="table_window",
            names=[],
            count=1,
            total_ms=busy,
            outside_ms=0.0,
            per_step_ms=[busy],
            notes=[
                "the table has no ProfilerStep rows (prof.step() was not called in the "
                "profiled loop): its whole profiled window is taken as one step"
            ],
        )
    per_step: list[float] = []
    step_names: list[str] = []
    reasons: list[str] = []
    for n in names:
        calls, total = int(grouped.at[n, "calls"]), float(grouped.at[n, "total"])
        per_step += [total / calls] * calls
        if calls == 1:
            step_names.append(n)
            reasons.append("")
        else:
            step_names += [f"{n} {i + 1} of {calls}" for i in range(calls)]
            reasons += [f"the mean of the {calls} steps of {n} (the table holds their total)"] * (
                calls
            )
    total = float(sum(grouped.at[n, "total"] for n in names))
    notes = [
        f"{len(per_step)} steps from the table's {', '.join(names)} row(s) (their calls), "
        f"{total / len(per_step):.3f} ms each on average (CPU total / calls)"
    ]
    return TableSteps(
        method="table_steps",
        names=names,
        count=len(per_step),
        total_ms=total,
        outside_ms=max(busy - total, 0.0) if footer is not None else 0.0,
        per_step_ms=per_step,
        step_names=step_names,
        reasons=reasons,
        notes=notes,
    )
