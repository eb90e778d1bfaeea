"""What-if projection: the iteration time after removing what the log measured, then estimates.

The unit is one steady iteration of the analysis (:mod:`dnnlens.analysis.steady`): the
primitives of one steady pass in order (*steps*), each with its typical run
(:mod:`dnnlens.analysis.timing`: the median over the steady passes, the fastest below three
runs). The baseline is **the typical iteration** that ``analyze`` and ``diff`` print: the
steps plus, when some steady passes differ from the one shown, the difference as one more
term (``other_ms``: executions that not every pass runs). Framework time between primitives
is not in the log, and neither is primitive creation: what steady passes spend creating
primitives (``creation_ms``) is counted beside the baseline. A change rewrites some steps;
every rewritten number says where it came from:

* ``log``: a time measured in this log (the removed reorder's own time, a creation's);
* ``measured``: the same primitive (kind, problem, direction) measured in another layout,
  implementation or data type, in this log or in a log passed with ``measured``
  (``--measured``);
* ``scaled``: an optimised kernel of the same kind measured on another shape, carried over
  by the roofline (``t = t_other x roof / roof_other``: it keeps that kernel's efficiency);
* ``roofline``: scaled by the roofline, keeping the primitive's current efficiency:
  ``t_new = t_old x roof_new / roof_old`` (``roof = max(flops/peak, bytes/bandwidth)``);
* ``assumed``: nothing measured or modelled it: the time is kept, and the assumption says so.

A change whose numbers all come from ``log`` and ``measured`` (and ``assumed``, which keeps a
time) is **measured**; one that uses ``scaled`` or ``roofline`` is an **estimate**, which
leans on the machine model (an assumed clock, an assumed bandwidth). Reports lead with the
measured changes and label the estimates. A change the machine cannot run as the model
supposes (``dtype:bf16`` on a CPU without bf16 arithmetic, where oneDNN has no bf16 jit
kernel and runs reference code or refuses: slower, not faster), or that no recorded fix
makes (``remove:weight-reorders`` in a training log: the weights change every step, and
``remove:reorders`` there removes the activation reorders only) is **unknown**: no saving is
projected for it (JSON ``saving_ms`` null), its times are kept in a combination, and a
measured log of the change (``--measured``) projects it instead.

Changes: ``remove:reorders``, ``remove:activation-reorders``, ``remove:weight-reorders``,
``replace:reference-kernels``, ``remove:cache-misses``, ``fuse:eltwise``, ``dtype:bf16``.
Each is projected alone, then all selected ones together (in that order, each on the result
of the previous).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dnnlens.analysis.columns import str_values
from dnnlens.analysis.costmodel import Cost, primitive_cost, record_cost
from dnnlens.analysis.creations import Creations
from dnnlens.analysis.machine import Machine, isa_gain, machine_for_log
from dnnlens.parsers.isa import is_reference
from dnnlens.parsers.records import LineRecord

__all__ = [
    "CHANGES",
    "ESTIMATE_SOURCES",
    "Adjustment",
    "ChangeResult",
    "Creations",
    "Projection",
    "Step",
    "StepTable",
    "iteration_steps",
    "project",
    "rank",
]

CHANGES = (
    "remove:reorders",
    "remove:activation-reorders",
    "remove:weight-reorders",
    "replace:reference-kernels",
    "remove:cache-misses",
    "fuse:eltwise",
    "dtype:bf16",
)
#: Sources that lean on the machine model: a change using one is an estimate.
ESTIMATE_SOURCES = frozenset({"scaled", "roofline"})
#: Kinds that take an eltwise post-op (oneDNN attribute ``post_ops``).
FUSABLE = frozenset(
    {
        "convolution",
        "deconvolution",
        "inner_product",
        "matmul",
        "binary",
        "gemm_api",
        "pooling",
        "batch_normalization",
        "sum",
        "eltwise",
    }
)
_LAYOUT_NOTE = (
    "a layout change can change the implementation oneDNN dispatches for a convolution "
    "(e.g. jit:avx2 on blocked aBcd8b vs brg_conv_fwd:avx2 on channels_last acdb in oneDNN "
    "3.x) and so its speed, either way"
)


@dataclass
class Step:
    """One primitive of the steady iteration, at its position, with its typical time."""

    position: int
    record: int
    kind: str
    impl: str
    prop_kind: str
    problem: str
    mds: str
    attrs: str
    aux: str
    time_ms: float
    samples: int
    #: the record itself: its descriptors, parsed once
    line: LineRecord = field(repr=False, compare=False)
    tensor: str = ""  # reorders: activation or weight
    producers: list[int] = field(default_factory=list)
    consumers: list[int] = field(default_factory=list)
    example: str = ""
    node: str = ""  # its node in the op graph

    @property
    def direction(self) -> str:
        """forward / backward_data / backward_weights / backward / '' (prop kind, grouped)."""
        return (
            "forward"
            if self.prop_kind.startswith("forward")
            else ("" if self.prop_kind == "undef" else self.prop_kind)
        )

    @property
    def src_layout(self) -> str:
        """Layout tag of the source (``src``, ``data``, ``src_layer``, ``in``)."""
        mds = self.line.parsed_mds
        for arg in ("src", "data", "src_layer", "in", "query"):
            md = mds.get(arg)
            if md is not None:
                return md.layout
        return mds[0].layout if len(mds) else ""

    @property
    def dst_layout(self) -> str:
        """Layout tag of the destination (``dst``, ``out``, last md)."""
        mds = self.line.parsed_mds
        md = mds.get("dst") or mds.get("out") or (mds[-1] if len(mds) else None)
        return md.layout if md is not None else ""

    @property
    def dtype(self) -> str:
        """Compute data type (:func:`dnnlens.analysis.costmodel.compute_dtype`)."""
        c = record_cost(self.line)
        return c.dtype if c else ""

    @property
    def name(self) -> str:
        """Node name in the op graph (``n3_reorder``)."""
        return self.node or f"n{self.position}_{self.kind or 'op'}"


#: How a step's time is taken (:mod:`dnnlens.analysis.timing`).
STATISTIC = "typical run (median over the steady passes; fastest below 3 runs)"


@dataclass
class StepTable:
    """The steps of one steady pass, and the typical iteration they add up to.

    ``baseline_ms`` is the analysis's typical iteration; ``other_ms`` the part of it that
    the shown pass does not run (baseline - sum of the steps); ``pass_index`` the pass the
    steps come from (-1: the whole log, no repeating iteration was found); ``creations``
    the cache misses of the steady passes (not in the baseline: it holds executions only).
    """

    source: str
    steps: list[Step]
    iterations_used: int
    baseline_ms: float
    other_ms: float = 0.0
    pass_index: int = -1
    statistic: str = STATISTIC
    notes: list[str] = field(default_factory=list)
    creations: Creations = field(default_factory=lambda: Creations(False, 1))

    @property
    def total_ms(self) -> float:
        """Baseline: the typical iteration."""
        return self.baseline_ms


@dataclass
class Adjustment:
    """One step rewritten by a change: its time before and after, and why."""

    position: int
    node: str
    kind: str
    problem: str
    before_ms: float
    after_ms: float
    source: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        """Plain data."""
        return dict(self.__dict__)


@dataclass
class ChangeResult:
    """A projected iteration time, with every rewritten step and what was assumed.

    ``projected_ms`` is the executions' typical iteration after the change;
    ``creation_saving_ms`` the primitive creation per iteration it removes, which is not in
    the baseline (executions only) and so comes on top of ``baseline_ms - projected_ms``.
    """

    change: str
    baseline_ms: float
    projected_ms: float
    adjustments: list[Adjustment] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    creation_saving_ms: float = 0.0
    #: Why no saving can be projected for the change (``basis`` ``unknown``), or "".
    unknown: str = ""

    @property
    def saving_ms(self) -> float:
        """Baseline minus projection, plus the creation time removed."""
        return self.baseline_ms - self.projected_ms + self.creation_saving_ms

    @property
    def speedup(self) -> float | None:
        """The iteration before (executions and the creations removed) over after."""
        before = self.baseline_ms + self.creation_saving_ms
        return before / self.projected_ms if self.projected_ms > 0 else None

    @property
    def sources(self) -> list[str]:
        """The kinds of source its numbers come from (log, measured, scaled, roofline,
        assumed)."""
        order = ("log", "measured", "scaled", "roofline", "assumed")
        found = {k for a in self.adjustments for k in a.source.split("+")}
        return [s for s in order if s in found]

    @property
    def basis(self) -> str:
        """``measured`` when every number is the log's (or a measured log's), ``estimate``
        when one leans on the machine model (``scaled``, ``roofline``), ``unknown`` when the
        machine cannot run the change as modelled (:attr:`unknown`), ``none`` when the
        change found nothing to change (or only kept times: ``assumed``)."""
        if self.unknown:
            return "unknown"
        if set(self.sources) <= {"assumed"}:
            return "none"
        return "estimate" if ESTIMATE_SOURCES & set(self.sources) else "measured"

    def to_json(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "change": self.change, "basis": self.basis, "baseline_ms": self.baseline_ms,
            "projected_ms": None if self.unknown else self.projected_ms,
            "saving_ms": None if self.unknown else self.saving_ms,
            "creation_saving_ms": self.creation_saving_ms,
            "speedup": None if self.unknown else self.speedup, "sources": self.sources,
            "unknown": self.unknown or None,
            "assumptions": self.assumptions, "warnings": self.warnings,
            "adjustments": [a.to_json() for a in self.adjustments],
        }  # fmt: skip


@dataclass
class Projection:
    """Each change alone and all together, against the baseline of one log.

    ``changes`` are ranked (:func:`rank`): the measured ones first, then the estimates,
    then those that found nothing to change, each by saving.
    """

    table: StepTable
    machine: Machine
    changes: list[ChangeResult]
    combined: ChangeResult | None
    measured: list[StepTable] = field(default_factory=list)

    @property
    def headline(self) -> ChangeResult | None:
        """The measured change that saves the most (``None``: none saves anything)."""
        return _best(self.changes, "measured")

    @property
    def best_estimate(self) -> ChangeResult | None:
        """The estimate that saves the most (``None``: none saves anything)."""
        return _best(self.changes, "estimate")


def _best(changes: list[ChangeResult], basis: str) -> ChangeResult | None:
    ranked = [c for c in changes if c.basis == basis and c.saving_ms > 0]
    return max(ranked, key=lambda c: c.saving_ms, default=None)


#: The order of :func:`rank`: what the log measured leads.
BASIS_ORDER = {"measured": 0, "estimate": 1, "unknown": 2, "none": 3}


def rank(changes: list[ChangeResult]) -> list[ChangeResult]:
    """Measured changes first, then estimates, then those whose saving is unknown, then
    those that found nothing to change; each by saving, largest first (stable: ties keep
    :data:`CHANGES` order)."""
    return sorted(changes, key=lambda c: (BASIS_ORDER[c.basis], -round(c.saving_ms, 12)))


# ---------------------------------------------------------------------------------------
# the steps of a steady iteration


def _chosen_pass(analysis: Any) -> tuple[int, np.ndarray, list[str]]:
    """The pass whose steps are shown: the first steady pass with the template sequence."""
    st = analysis.steady
    ex_rows = np.flatnonzero(
        (analysis.events["operation"] == "exec").to_numpy()
        & (analysis.events["kind"] != "graph_partition").to_numpy()
    )
    times = st.times
    if not st.found:
        return -1, ex_rows, ["no repeating iteration found: the whole log is one iteration"]
    regular = times[times["steady"] & times["regular"]]
    notes = []
    if regular.empty:
        regular = times[times["steady"]]
        notes.append("no steady pass runs the repeating sequence exactly: the first shown")
    pick = int(regular["iteration"].iloc[0])
    it = analysis.events["iteration"].to_numpy()
    return pick, ex_rows[it[ex_rows] == pick], notes


def iteration_steps(analysis: Any) -> StepTable:
    """The steps of one steady pass of ``analysis``, timed by their typical runs."""
    ev = analysis.events
    log = analysis.log
    source = ", ".join(s.path for s in log.scans) or "<log>"
    typical = analysis.typical
    if not len(analysis.execs):
        return StepTable(source, [], 0, 0.0, notes=["no primitive executions"])
    pick, rows, notes = _chosen_pass(analysis)
    terms = typical.terms.set_index("node")
    run = terms["run_ms"].to_dict()
    samples = terms["steady_count"].to_dict()
    rec_all = ev["record"].to_numpy(dtype=np.int64)
    line_all = ev["line"].to_numpy()
    inputs = str_values(ev["input"])
    nodes = analysis.graph.node_of_rows(rows)
    steps: list[Step] = []
    for k, row in enumerate(rows.tolist()):
        rid = int(rec_all[row])
        rec = log.records[rid]
        t = float(run.get(nodes[k], 0.0))
        steps.append(
            Step(
                position=k, record=rid, kind=rec.kind, impl=rec.impl,
                prop_kind=rec.prop_kind, problem=rec.problem, mds=rec.mds, attrs=rec.attrs,
                aux=rec.aux, time_ms=t if t == t else 0.0,
                samples=int(samples.get(nodes[k], 0)), line=rec,
                example=f"{inputs[row]}:{int(line_all[row])}", node=nodes[k],
            )
        )  # fmt: skip
    untimed = int(analysis.execs["time_ms"].isna().sum())
    if untimed:
        notes.append(f"{untimed} primitive executions print no time: counted as 0 ms")
    other = typical.ms - float(sum(s.time_ms for s in steps))
    if abs(other) <= 1e-9 * max(typical.ms, 1.0):
        other = 0.0
    else:
        notes.append(
            f"{other:+.4f} ms per iteration run in other steady passes but not in the one "
            "shown (executions not every pass runs): kept as they are"
        )
    table = StepTable(source, steps, analysis.steady.divisor, typical.ms, other, pick, notes=notes)
    table.creations = analysis.creations
    _link(analysis, table)
    return table


def _link(analysis: Any, table: StepTable) -> None:
    """Reorder classes and producer/consumer positions, from the analysis's op graph."""
    graph = analysis.graph
    tensor = dict(zip(graph.reorders["node"], graph.reorders["tensor"], strict=True))
    pos = {s.node: s.position for s in table.steps}
    steps = table.steps
    for s in steps:
        if s.kind == "reorder":
            s.tensor = str(tensor.get(s.node, ""))
    for a, b in graph.digraph.edges():
        if a in pos and b in pos:
            steps[pos[a]].consumers.append(pos[b])
            steps[pos[b]].producers.append(pos[a])


# ---------------------------------------------------------------------------------------
# alternatives measured elsewhere


@dataclass
class _Alt:
    time_ms: float
    detail: str
    layout: str
    dtype: str
    impl: str


def _key(s: Step) -> tuple[str, str, str]:
    return (s.kind.removesuffix("_v2"), s.problem, s.direction)


def _alternatives(
    step: Step, occurrence: int, tables: list[StepTable], want: Callable[[Step], bool]
) -> _Alt | None:
    """The best measured alternative of ``step`` satisfying ``want(candidate_step)``.

    Candidates are steps of the same kind, problem and direction. A candidate at the same
    occurrence (k-th step of that key in its iteration) is preferred; tables are searched in
    order (the ``--measured`` logs first, then the log itself).
    """
    for table in tables:
        same = [c for c in table.steps if _key(c) == _key(step) and want(c)]
        if not same:
            continue
        c = same[occurrence] if occurrence < len(same) else same[-1]
        how = f"typical run of {c.samples} steady calls, " + (
            "same occurrence in the pass"
            if occurrence < len(same)
            else "its last occurrence in the pass"
        )
        return _Alt(
            c.time_ms,
            f"measured in {c.example} ({c.impl}, src {c.src_layout}, {c.dtype}): {how}",
            c.src_layout,
            c.dtype,
            c.impl,
        )
    return None


def _occurrences(steps: list[Step]) -> dict[int, int]:
    seen: dict[tuple, int] = defaultdict(int)
    out = {}
    for s in steps:
        out[s.position] = seen[_key(s)]
        seen[_key(s)] += 1
    return out


_BLOCKED = re.compile(r"[0-9]+[a-z]")


def _plain(layout: str) -> bool:
    return bool(layout) and not _BLOCKED.search(layout) and layout.isalpha()


# ---------------------------------------------------------------------------------------
# the changes


class _State:
    """Per-step times while changes are applied, with the adjustments made so far."""

    def __init__(self, table: StepTable) -> None:
        self.table = table
        self.times = {s.position: s.time_ms for s in table.steps}
        self.adjustments: dict[int, Adjustment] = {}
        #: creations removed: not steps, not in the baseline (position -1)
        self.creations: list[Adjustment] = []
        self.assumptions: list[str] = []
        self.warnings: list[str] = []
        #: change -> why no saving can be projected for it
        self.unknown: dict[str, str] = {}

    def set(self, s: Step, after: float, source: str, detail: str) -> None:
        prev = self.adjustments.get(s.position)
        before = prev.before_ms if prev else self.times[s.position]
        if prev:  # a later change of the same step: keep both reasons and both sources
            detail = f"{prev.detail}; then {detail}"
            source = "+".join(dict.fromkeys((*prev.source.split("+"), source)))
        self.times[s.position] = after
        self.adjustments[s.position] = Adjustment(
            s.position, s.name, s.kind, s.problem, before, after, source, detail
        )

    def note(self, text: str, warning: bool = False) -> None:
        target = self.warnings if warning else self.assumptions
        if text not in target:
            target.append(text)

    def result(self, change: str) -> ChangeResult:
        adj = sorted(self.adjustments.values(), key=lambda a: a.position)
        saving = float(sum(a.before_ms - a.after_ms for a in adj))
        alone = list(self.unknown.values()) if " + " not in change else []
        for name, why in self.unknown.items():
            self.note(why if alone else f"{name} is not counted (its times are kept): {why}", True)
        return ChangeResult(
            change,
            self.table.total_ms,
            self.table.total_ms - saving,
            adj + self.creations,
            list(self.assumptions),
            list(self.warnings),
            float(sum(a.before_ms - a.after_ms for a in self.creations)),
            alone[0] if alone else "",
        )


def _reachable_primitives(steps: list[Step], start: int, removed: set[int]) -> set[int]:
    """Non-reorder steps reached from a removed reorder through removed reorders only."""
    out: set[int] = set()
    seen = {start}
    stack = [start]
    while stack:
        i = stack.pop()
        for j in (*steps[i].producers, *steps[i].consumers):
            if j in seen:
                continue
            seen.add(j)
            if steps[j].kind == "reorder":
                if j in removed:
                    stack.append(j)
            else:
                out.add(j)
    return out


#: Why a training step's weight reorders are not removed (``weight-reorder-training``).
_TRAINING_WEIGHTS = (
    "a training step's weight reorders are kept: no recorded fix removes them (the weights "
    "change every step; a larger batch spreads them over more samples, it does not remove "
    "them), so no saving is projected for them"
)


def _remove(state: _State, which: str, ctx: _Context) -> None:
    steps = state.table.steps
    wanted = {
        "reorders": ("activation", "weight"),
        "activation-reorders": ("activation",),
        "weight-reorders": ("weight",),
    }[which]
    if ctx.training and "weight" in wanted:
        if which == "weight-reorders":
            if any(s.kind == "reorder" and s.tensor == "weight" for s in steps):
                state.unknown["remove:weight-reorders"] = _TRAINING_WEIGHTS
                return
        else:
            state.note(_TRAINING_WEIGHTS, True)
        wanted = tuple(w for w in wanted if w != "weight")
    removed = {
        s.position
        for s in steps
        if s.kind == "reorder"
        and (s.tensor or "activation") in wanted
        and state.times[s.position] > 0
    }
    if not removed:
        state.note(f"the iteration has no {which.replace('-', ' ')}: nothing to remove", True)
        return
    for i in sorted(removed):
        s = steps[i]
        state.set(
            s,
            0.0,
            "log",
            f"removed {s.tensor or 'activation'} reorder "
            f"{s.src_layout}->{s.dst_layout}: measured {state.times[i]:.4f} ms per "
            "iteration in this log",
        )
    if "weight" in wanted:
        state.note(
            "weights are converted once ahead of time (prepacked: torch.jit.freeze at "
            "inference, or a weight cache); that one-time cost is not counted"
        )
    if "activation" not in wanted:
        return
    affected: set[int] = set()
    for i in removed:
        if steps[i].tensor != "weight":
            affected |= _reachable_primitives(steps, i, removed)
    state.note(
        "the framework and oneDNN agree on one activation layout (e.g. the model and "
        "its input in channels_last): the producers' output is read as it is; "
        "framework time between primitives is not in the log"
    )
    state.note(_LAYOUT_NOTE)
    occ = _occurrences(steps)
    for i in sorted(affected):
        s = steps[i]
        alt = _alternatives(
            s,
            occ[i],
            ctx.measured + [state.table],
            lambda c, s=s: (
                _plain(c.src_layout) and c.src_layout != s.src_layout and c.dtype == s.dtype
            ),
        )
        if alt is not None:
            state.set(
                s, alt.time_ms, "measured", f"layout {s.src_layout} -> {alt.layout}: {alt.detail}"
            )
            if alt.impl != s.impl:
                state.note(
                    f"{s.kind} {s.problem}: implementation {s.impl} -> {alt.impl} "
                    "in the measured layout"
                )
        else:
            state.set(
                s,
                state.times[i],
                "assumed",
                f"no {s.kind} of this shape measured in a plain layout: time kept "
                f"({s.impl} on {s.src_layout}); pass a log of the other layout with "
                "--measured",
            )


def _replace_reference(state: _State, ctx: _Context) -> None:
    """Reference kernels run as fast as an optimised kernel measured for the same primitive
    (``measured``), else as one measured on another shape of the same kind (``scaled``)."""
    steps = state.table.steps
    refs = [s for s in steps if is_reference(s.impl) and state.times[s.position] > 0]
    if not refs:
        state.note("the iteration runs no reference kernel: nothing to replace", True)
        return
    occ = _occurrences(steps)
    tables = ctx.measured + [state.table]
    for s in refs:
        alt = _alternatives(
            s,
            occ[s.position],
            tables,
            lambda c, s=s: not is_reference(c.impl) and c.dtype == s.dtype,
        )
        if alt is not None:
            state.set(s, alt.time_ms, "measured", f"{s.impl} -> {alt.impl}: {alt.detail}")
            continue
        scaled = _scaled(s, tables, ctx.machine)
        if scaled is not None:
            state.set(s, *scaled)
            continue
        state.set(
            s,
            state.times[s.position],
            "assumed",
            f"no optimised {s.kind} {s.direction or s.prop_kind} measured in {s.dtype or 'its'} "
            "data type: time kept; pass a log that runs one with --measured",
        )
    state.note(
        "the optimised kernel a change of build, data type, layout or attribute enables "
        "runs as fast as the one measured (the dispatch log, ONEDNN_VERBOSE=dispatch, says "
        "why the reference kernel was chosen)"
    )


def _scaled(s: Step, tables: list[StepTable], m: Machine) -> tuple[float, str, str] | None:
    """(time, source, detail) of ``s`` from an optimised kernel of the same kind, direction
    and data type measured on another shape: its time x the ratio of the two roof times."""
    cost = _cost(s)
    if cost is None:
        return None
    roof = _roof_ms(cost, m)
    best: tuple[float, Step, float] | None = None
    for table in tables:
        for c in table.steps:
            if c.kind != s.kind or c.direction != s.direction or is_reference(c.impl):
                continue
            other = _cost(c)
            if other is None or other.dtype != cost.dtype or c.time_ms <= 0:
                continue
            r = _roof_ms(other, m)
            if r <= 0 or roof <= 0:
                continue
            distance = abs(np.log(r / roof))  # the most similar amount of work
            if best is None or distance < best[0]:
                best = (distance, c, r)
    if best is None:
        return None
    _, c, r = best
    t = c.time_ms * roof / r
    return (
        t,
        "scaled",
        f"{s.impl} -> {c.impl}: scaled from {c.kind} {c.problem} ({c.time_ms:.4f} ms in "
        f"{c.example}) x roof {roof:.4g} / {r:.4g} ms, keeping that kernel's efficiency",
    )


def _cost(s: Step) -> Cost | None:
    return record_cost(s.line)


def _roof_ms(cost: Cost, m: Machine) -> float:
    """The roofline's time of one call (ms): max(FLOPs / peak, bytes / bandwidth)."""
    peak, bw = m.peak(cost.dtype), m.bandwidth_gbs
    compute = cost.flops / peak / 1e6 if peak > 0 else 0.0
    memory = cost.bytes / bw / 1e6 if bw > 0 else 0.0
    return max(compute, memory)


def _remove_cache_misses(state: _State) -> None:
    """Creations that miss the primitive cache in steady passes become cache hits."""
    cr = state.table.creations
    if not cr.found:
        state.note(
            "the log has no passes: its creations cannot be told apart from the first "
            "creation of each primitive, which no fix removes; nothing projected",
            True,
        )
        return
    if not cr.misses:
        state.note(f"no primitive cache miss {cr.scope}: nothing to remove", True)
        return
    hit = cr.hit_ms if cr.hit_ms is not None else 0.0
    as_hits = (
        f"as cache hits of {hit:.4f} ms (the median cache hit there)"
        if cr.hit_ms is not None
        else "as cache hits of 0 ms"
    )
    for kind, (n, total, first) in sorted(cr.by_kind.items(), key=lambda kv: -kv[1][1]):
        before = total / cr.passes
        after = n * hit / cr.passes
        state.creations.append(
            Adjustment(
                -1, f"create:{kind}", kind, f"{n} cache misses {cr.scope}",
                before, after, "log",
                f"{n / cr.passes:g} creations per iteration missed the primitive cache "
                f"{cr.scope} ({before:.4f} ms per iteration; first at {first}): "
                f"{as_hits}",
            )
        )  # fmt: skip
    state.note(
        "primitive creation is not in the baseline (executions only): the saving comes "
        "on top of it; shapes stay static and the primitive cache "
        "(ONEDNN_PRIMITIVE_CACHE_CAPACITY, default 1024) holds every primitive"
    )
    if cr.hit_ms is None:
        state.note(f"the log has no cache hit {cr.scope}: a hit is counted as 0 ms")


def _fuse(state: _State, ctx: _Context) -> None:
    steps = state.table.steps
    elt = [s for s in steps if s.kind == "eltwise"]
    if not elt:
        state.note(
            "the iteration has no oneDNN eltwise primitive: nothing to fuse (an "
            "activation the framework runs itself prints no oneDNN line and its time is "
            "not in the log)",
            True,
        )
        return
    occ = _occurrences(steps)
    fused = 0
    for s in elt:
        prods = [steps[j] for j in s.producers if steps[j].kind in FUSABLE]
        if len(s.producers) != 1 or not prods:
            state.note(f"{s.name}: no single producer that takes an eltwise post-op: kept", True)
            continue
        p = prods[0]
        alg = s.line.parsed_aux.get("alg", "eltwise")
        alt = _alternatives(
            p,
            occ[p.position],
            ctx.measured + [state.table],
            lambda c, alg=alg: any(po.alg == alg for po in c.line.parsed_attrs.post_ops),
        )
        state.set(
            s,
            0.0,
            "log",
            f"fused into {p.name} as post-op {alg}: its own pass "
            f"(measured {state.times[s.position]:.4f} ms) disappears",
        )
        fused += 1
        if alt is not None:
            state.set(p, alt.time_ms, "measured", f"with post-op {alg}: {alt.detail}")
            continue
        cost = record_cost(s.line)
        extra = cost.flops / ctx.machine.peak(cost.dtype) / 1e6 if cost else 0.0
        state.set(
            p,
            state.times[p.position] + extra,
            "roofline",
            f"+ post-op {alg}: {cost.flops if cost else '?'} FLOPs at the compute peak "
            f"({extra:.3g} ms), applied in registers before the store (no extra traffic)",
        )
    if fused:
        state.note(
            "the eltwise is applied as a post-op of its producer (oneDNN attribute "
            "post_ops), so its tensor is not written and read again"
        )


def _to_bf16(text: str) -> str:
    """An md string with every f32 tensor in bf16 (``src:f32:`` and ``src_f32:`` forms)."""
    return re.sub(r"(?<=[:_])f32(?=:)", "bf16", text)


def _dtype(state: _State, ctx: _Context, target: str = "bf16") -> None:
    steps = state.table.steps
    m = ctx.machine
    gain = isa_gain(m.isa, target)
    # no arithmetic in the target type: oneDNN has no jit kernel for it (reference code or
    # a refusal), so the roofline of a faster kernel does not apply; only a measured time
    # of the change (a log passed with --measured) says what it does
    no_kernels = gain <= 1.0
    occ = _occurrences(steps)
    changed = unmodelled = 0
    for s in steps:
        if "f32" not in s.mds or state.times[s.position] <= 0:
            continue
        alt = _alternatives(
            s, occ[s.position], ctx.measured + [state.table], lambda c: c.dtype == target
        )
        if alt is not None:
            state.set(s, alt.time_ms, "measured", f"in {target}: {alt.detail}")
            changed += 1
            continue
        if no_kernels:
            state.set(
                s,
                state.times[s.position],
                "assumed",
                f"no {target} jit kernel on {m.isa}: time kept, not projected",
            )
            unmodelled += 1
            continue
        old = record_cost(s.line)
        # a what-if line no log printed: costed from its text
        new = primitive_cost(s.kind, s.problem, _to_bf16(s.mds), s.prop_kind, s.aux, s.attrs)
        if old is None or new is None:
            state.set(
                s, state.times[s.position], "assumed", f"no cost model for {s.kind}: time kept"
            )
            continue
        r_old = max(old.flops / m.peak(old.dtype), old.bytes / m.bandwidth_gbs)
        r_new = max(new.flops / m.peak(new.dtype), new.bytes / m.bandwidth_gbs)
        factor = r_new / r_old if r_old > 0 else 1.0
        bound = (
            "compute" if old.flops / m.peak(old.dtype) >= old.bytes / m.bandwidth_gbs else "memory"
        )
        state.set(
            s,
            state.times[s.position] * factor,
            "roofline",
            f"{bound}-bound: roof time x {factor:.2f} (bytes {old.bytes} -> {new.bytes}, "
            f"peak {m.peak(old.dtype):.0f} -> {m.peak(new.dtype):.0f} GFLOP/s)",
        )
        changed += 1
    if not changed and not unmodelled:
        state.note("no f32 primitive in the iteration: nothing to convert", True)
        return
    if unmodelled:
        why = (
            f"{m.isa} has no {target} arithmetic (peak gain {gain:g}) and oneDNN has no "
            f"{target} jit kernels below AVX-512 BF16 / AVX2-VNNI-2 (it runs reference code "
            "or refuses; PyTorch autocast refuses its mkldnn bf16 path on such CPUs): expect "
            "slower, not faster. No saving is projected for "
            f"{unmodelled} primitive{'s' if unmodelled != 1 else ''}; a {target} log of this "
            "machine passed with --measured projects them from measured times"
        )
        state.unknown[f"dtype:{target}"] = why
        return
    state.note(
        f"every f32 tensor becomes {target}; a primitive keeps its current fraction of "
        "its roof (efficiency); conversion reorders at the edges of the bf16 region and "
        "accuracy are not counted"
    )


@dataclass
class _Context:
    machine: Machine
    measured: list[StepTable]
    #: a training log: its weight reorders are not removed (``_TRAINING_WEIGHTS``)
    training: bool = False


def _apply(table: StepTable, changes: list[str], ctx: _Context) -> ChangeResult:
    state = _State(table)
    for change in changes:
        verb, _, what = change.partition(":")
        if change == "remove:cache-misses":
            _remove_cache_misses(state)
        elif verb == "remove":
            _remove(state, what, ctx)
        elif verb == "replace":
            _replace_reference(state, ctx)
        elif verb == "fuse":
            _fuse(state, ctx)
        elif verb == "dtype":
            _dtype(state, ctx, what)
    return state.result(" + ".join(changes))


def normalize_changes(
    remove: list[str] | None = None,
    fuse: list[str] | None = None,
    dtype: str | None = None,
    replace: list[str] | None = None,
) -> list[str]:
    """The change ids of the command-line options, validated, in application order."""
    out: list[str] = []
    for r in remove or []:
        if f"remove:{r}" not in CHANGES:
            raise ValueError(
                f"--remove {r}: expected reorders, activation-reorders, weight-reorders or "
                "cache-misses"
            )
        out.append(f"remove:{r}")
    for r in replace or []:
        if r != "reference-kernels":
            raise ValueError(f"--replace {r}: only reference-kernels is supported")
        out.append("replace:reference-kernels")
    for f in fuse or []:
        if f != "eltwise":
            raise ValueError(f"--fuse {f}: only eltwise is supported")
        out.append("fuse:eltwise")
    if dtype:
        if dtype != "bf16":
            raise ValueError(f"--dtype {dtype}: only bf16 is supported")
        out.append("dtype:bf16")
    order = {c: i for i, c in enumerate(CHANGES)}
    return sorted(dict.fromkeys(out), key=order.__getitem__)


def project(analysis: Any, changes: list[str], measured: list[Any] | None = None) -> Projection:
    """Project each change alone and all together (see the module docstring).

    ``analysis`` and each of ``measured`` are :class:`~dnnlens.analysis.analysis.Analysis`;
    the machine is the analysis's (``analysis.machine``: its options' profile, else the
    log's header), the one every efficiency of its report is measured against.
    """
    m = analysis.machine
    table = iteration_steps(analysis)
    if analysis.options.machine is not None:
        header = machine_for_log(analysis.log)  # the log's own ISA and threads, to compare
        if header.sources.get("threads") == "header" and header.threads != m.threads:
            table.notes.append(
                f"the log ran with {header.threads} threads, the machine profile "
                f"describes {m.threads}: its peaks may not apply"
            )
    others = [iteration_steps(x) for x in (measured or [])]
    here = machine_for_log(analysis.log)
    for x, other in zip(measured or [], others, strict=True):
        there = machine_for_log(x.log)
        if (there.isa, there.threads) != (here.isa, here.threads):
            table.notes.append(
                f"{other.source} ran on {there.isa} with {there.threads} threads, this log on "
                f"{here.isa} with {here.threads}: its times are another machine's"
            )
    ctx = _Context(m, others, bool(analysis.is_training))
    order = {c: i for i, c in enumerate(CHANGES)}
    chosen = sorted(dict.fromkeys(changes), key=lambda c: order.get(c, 99))
    alone = [_apply(table, [c], ctx) for c in chosen]
    together = chosen
    if "remove:reorders" in chosen:  # it includes the other two removals
        together = [
            c for c in chosen if c not in ("remove:activation-reorders", "remove:weight-reorders")
        ]
    combined = _apply(table, together, ctx) if len(chosen) > 1 else None
    return Projection(table, m, rank(alone), combined, others)
