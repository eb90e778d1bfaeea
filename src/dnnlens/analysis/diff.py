"""Run against run: what changed between the analyses of a BASE and a NEW log.

Both sides are :class:`~dnnlens.analysis.analysis.Analysis` objects, so every figure of a
side (typical iteration, passes, warm-up, totals) is the one ``analyze`` prints for that
log. Changes are reported

* per primitive kind (``kinds``): raw totals, and each kind's part of the typical iteration;
* per primitive: kind, prop_kind and problem (the shape), plus for reorders the layout
  flow (``abcd->aBcd8b``), because a reorder *is* its layouts; the implementation and the
  layouts of other kinds are attributes, so a convolution that moved from ``jit:avx2`` on
  ``aBcd8b`` to ``brg_conv_fwd:avx2`` on ``acdb`` is one primitive whose implementation
  changed, not one that vanished and one that appeared;
* per pass, side by side;
* with a profiler trace or table on both sides (alone or beside the log), the framework
  step: the typical step, its phases (forward, backward, optimizer ...), the ops by self
  time per step (appeared, vanished, changed), and the steps side by side. The verdict then
  compares the typical steps (the report's basis, as in ``analyze``), and the oneDNN
  iterations are its part.

The verdict compares the typical steady iterations by default (``basis="typical"``): a
pass-sum mean counts slow warm-up passes and scheduler spikes, which say nothing about the
change. ``basis="mean"`` (total exec time / passes) is there on request, and says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.confidence import Confidence, assess, overlap_share
from dnnlens.analysis.layouts import flow_label, md_layouts
from dnnlens.analysis.training import TrainingStep
from dnnlens.model import MdList
from dnnlens.parsers.memdesc import parse_mds

BASES = ("typical", "mean")
#: What the verdict is about: the framework step (both sides have a profiler trace or
#: table with steps) or the oneDNN iteration.
UNITS = ("step", "iteration")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def ratio(a: float, b: float) -> float | None:
    """``a / b`` when both are finite and ``b`` is positive, else ``None``."""
    if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return None
    q = a / b
    return q if math.isfinite(q) else None


@dataclass
class StepSide:
    """One run's framework step, all taken from its framework view."""

    path: str
    method: str
    steps: int
    steady: int
    warmup: int
    typical_ms: float
    median_ms: float
    untracked_ms: float
    step_ms: list[float]
    steady_flags: list[bool]
    phases: dict[str, float]
    #: oneDNN's part of the step (typical iterations per step x the typical iteration),
    #: None without a verbose log
    onednn_ms: float | None = None
    iterations_per_step: int | None = None

    @property
    def from_table(self) -> bool:
        """A key_averages table: its times per step are totals / steps (means)."""
        return self.method.startswith("table")

    @property
    def steady_times(self) -> list[float]:
        """The steady steps' wall times (ms); none for a table (no per-step times)."""
        if self.from_table:
            return []
        return [t for t, s in zip(self.step_ms, self.steady_flags, strict=True) if s]

    @property
    def mean_ms(self) -> float | None:
        """Wall time of all steps (warm-up included) / steps; a table's typical step is
        already that mean (totals / steps); None without steps."""
        if self.from_table:
            return self.typical_ms
        return sum(self.step_ms) / len(self.step_ms) if self.step_ms else None


def step_side_of(analysis: Analysis) -> StepSide | None:
    """The framework step of an analysis whose report's basis is a step, else None."""
    fw = analysis.framework
    basis = analysis.report_basis
    if fw is None or basis.unit != "step":
        return None
    steps = fw.steps
    flags = (~steps["warmup"] & ~steps["partial"]).tolist() if len(steps) else []
    return StepSide(
        path=fw.table.source if fw.table is not None else fw.path,
        method=fw.step_method,
        steps=len(steps),
        steady=fw.steady_count,
        warmup=int(steps["warmup"].sum()) if len(steps) else 0,
        typical_ms=fw.typical_step_ms,
        median_ms=fw.median_step_ms,
        untracked_ms=fw.untracked_ms_per_step,
        step_ms=[float(x) for x in steps["dur_ms"]] if len(steps) else [],
        steady_flags=[bool(x) for x in flags],
        phases={
            str(p): float(m)
            for p, m in zip(fw.phases["phase"], fw.phases["ms_per_step"], strict=True)
        },  # fmt: skip
        onednn_ms=basis.onednn_ms_per_step if basis.has_onednn else None,
        iterations_per_step=basis.iterations_per_step if basis.has_onednn else None,
    )


@dataclass
class Side:
    """One run's figures, all taken from its analysis."""

    path: str
    exec_count: int
    total_ms: float
    iterations: int
    steady_iterations: int
    warmup: int
    typical_ms: float
    iteration_ms: list[float]
    steady_flags: list[bool]
    typical_by_kind: dict[str, float] = field(default_factory=dict)
    reorder_share: float | None = None
    #: The typical training step by part (``None`` for a log without a backward pass).
    training: TrainingStep | None = None
    #: The framework step (``None`` without a profiler trace or table with steps).
    step: StepSide | None = None
    #: Why this run's times are not to be trusted (a uniform slowdown), or None
    untrusted: str | None = None

    @property
    def mean_ms(self) -> float | None:
        """Total exec time over every pass (warm-up included), or None without passes."""
        return self.total_ms / self.iterations if self.iterations > 0 else None

    @property
    def steady_times(self) -> list[float]:
        """The steady passes' times (ms) the confidence compares (:func:`steady_times`)."""
        return steady_times(
            self.iteration_ms, self.steady_flags, self.steady_iterations, self.total_ms,
            self.exec_count,
        )  # fmt: skip

    @property
    def steady_median_ms(self) -> float | None:
        """Median of the steady passes' sums (shown beside the typical iteration)."""
        steady = sorted(t for t, s in zip(self.iteration_ms, self.steady_flags, strict=True) if s)
        if not steady:
            return None
        mid = len(steady) // 2
        return steady[mid] if len(steady) % 2 else (steady[mid - 1] + steady[mid]) / 2


def steady_times(
    times: list[float], steady: list[bool], steady_count: int, total_ms: float, exec_count: int
) -> list[float]:
    """A run's steady passes' times (ms), per pass in order with whether each is steady:
    what its confidence compares (``diff`` from an analysis, ``fleet diff`` from a
    dataset's ``iterations`` and ``runs`` rows). One figure, the total, when the run has
    fewer than two steady passes (no repeating iteration: the whole log is then its one
    steady measurement); none without an execution."""
    if steady_count < 2:
        return [total_ms] if exec_count else []
    return [t for t, s in zip(times, steady, strict=True) if s]


def _input_paths(analysis: Analysis) -> list[str]:
    """The inputs of a side: its logs, then its traces (table files are among the logs)."""
    paths = [s.path for s in analysis.log.scans]
    fw = analysis.log.framework
    return paths + ([t.path for t in fw.traces if t.path not in paths] if fw is not None else [])


def side_of(analysis: Analysis) -> Side:
    """One side of a diff, from an analysis."""
    st = analysis.steady
    times = st.times
    return Side(
        path=", ".join(_input_paths(analysis)),
        exec_count=analysis.summary.exec_count,
        total_ms=analysis.summary.total_time_ms,
        iterations=st.passes,
        steady_iterations=st.divisor,
        warmup=st.warmup_left_out,
        typical_ms=analysis.typical_iteration_ms,
        iteration_ms=[float(t) for t in times["time_ms"]],
        steady_flags=[bool(x) for x in times["steady"]],
        typical_by_kind=analysis.typical.by_kind(),
        reorder_share=analysis.reorder_part.share,
        training=analysis.training,
        step=step_side_of(analysis),
        untrusted=None if analysis.timing_trust.trustworthy else analysis.timing_trust.reason,
    )


@dataclass
class Diff:
    """BASE vs NEW, ready for any renderer (:mod:`dnnlens.report.renderers.diff`)."""

    base: Side
    new: Side
    basis: str = "typical"
    kinds: list[dict[str, Any]] = field(default_factory=list)
    primitives: list[dict[str, Any]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    #: ``step`` when both sides have a framework step, else ``iteration``
    unit: str = "iteration"
    #: with a framework step on both sides: per phase, per op name, per step
    phases: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: how far the verdict can be trusted (:mod:`dnnlens.analysis.confidence`)
    confidence: Confidence = field(default_factory=lambda: Confidence("none"))

    @property
    def has_onednn(self) -> bool:
        """Whether either side has oneDNN primitive executions (the oneDNN tables)."""
        return self.base.exec_count > 0 or self.new.exec_count > 0

    def compared_ms(self) -> tuple[float, float]:
        """The two times the verdict compares (``basis``, ``unit``): typical or mean
        iterations, or typical or mean steps."""
        if self.unit == "step":
            b, n = self.base.step, self.new.step
            assert b is not None and n is not None
            if self.basis == "mean" and b.mean_ms is not None and n.mean_ms is not None:
                return b.mean_ms, n.mean_ms
            return b.typical_ms, n.typical_ms
        if self.basis == "mean":
            b, n = self.base.mean_ms, self.new.mean_ms
            if b is not None and n is not None:
                return b, n
            return self.base.total_ms, self.new.total_ms
        return self.base.typical_ms, self.new.typical_ms

    @property
    def basis_text(self) -> str:
        """What the verdict compares, in words."""
        if self.unit == "step":
            if self.basis == "mean":
                return "per mean step (wall time of all steps / steps, warm-up included)"
            return "per typical steady step"
        if self.basis == "mean":
            if self.base.mean_ms is not None and self.new.mean_ms is not None:
                return "per mean iteration (total / passes, warm-up included)"
            return "in total"
        return "per typical steady iteration"

    @property
    def speedup(self) -> float | None:
        """BASE time / NEW time (> 1: NEW is faster); None when it is not a number."""
        b, n = self.compared_ms()
        return ratio(b, n)

    @property
    def slower_fraction(self) -> float | None:
        """How much slower NEW is than BASE (0.05 = 5% slower; negative when faster)."""
        b, n = self.compared_ms()
        q = ratio(n, b)
        return None if q is None else q - 1.0

    def gate(self, limit: float | None) -> Gate:
        """What ``--fail-if-slower limit`` decides on this diff (:class:`Gate`): the one
        decision the exit code and every format's verdict share."""
        return gate_of(self, limit)

    def with_status(self, status: str) -> list[dict[str, Any]]:
        """The primitive rows of one status (appeared, vanished, changed, same)."""
        return [p for p in self.primitives if p["status"] == status]


@dataclass(frozen=True)
class Gate:
    """``--fail-if-slower``'s decision: ``none`` (no gate given), ``pass``, ``fail`` (exit 1)
    or ``refused`` (exit 2: the measurement cannot answer), with why in one line."""

    outcome: str
    why: str = ""

    @property
    def applied(self) -> bool:
        """Whether the gate answered (passed or failed)."""
        return self.outcome in ("pass", "fail")


def gate_of(d: Diff, limit: float | None) -> Gate:
    """``--fail-if-slower limit`` on one diff (:func:`gate_decision`)."""
    return gate_decision(d.confidence, d.slower_fraction, limit, d.basis_text)


def gate_decision(
    c: Confidence,
    slower: float | None,
    limit: float | None,
    basis_text: str,
    new: str = "NEW",
    base: str = "BASE",
) -> Gate:
    """The gate on one comparison (``diff``, and each run of ``fleet diff``): its
    confidence, how much slower ``new`` is than ``base`` (a fraction, None when not a
    number) and what was compared, in words. One-sided: it asks whether ``new`` is slower
    than ``base`` by more than ``limit``, and fails only on evidence of that.

    * refused, whatever the times: the runs are different workloads (no speed ratio), a
      side's times are not to be trusted (slowed as a whole: the machine's load), or a
      compared time is not a number;
    * slower by more than ``limit``: fail when the confidence is ``high`` (every steady
      pass of ``new`` beyond every one of ``base``, unlikely by chance); refused when it is
      not (the slowdown is within the pass-to-pass noise: it may be real or not, and a gate
      must neither pass nor fail it);
    * else pass: no evidence of a slowdown beyond ``limit``, also when the confidence is
      low (a run like its reference has overlapping passes: that is "no measurable change",
      which is what a gate on a pull request that changed nothing must say).
    """
    if limit is None:
        return Gate("none")
    gate = f"--fail-if-slower {100 * limit:g}%"
    if slower is None:
        return Gate("refused", f"cannot compare {basis_text}: a time is not a finite number")
    if c.level == "none" or c.untrusted:
        return Gate(
            "refused", f"{gate} not applied: the diff's confidence is {c.level}: {c.reason}"
        )
    if slower > limit:
        if c.level == "high":
            return Gate(
                "fail", f"{new} is {100 * slower:.1f}% slower than {base} {basis_text} ({gate})"
            )
        return Gate(
            "refused",
            f"{gate} not applied: {new} looks {100 * slower:.1f}% slower {basis_text}, but the "
            f"diff's confidence is {c.level}: {c.reason}",
        )
    return Gate("pass")


def primitive_identity(
    kind: str, prop_kind: str, problem: str, mds: MdList | str
) -> tuple[str, ...]:
    """What makes two primitives of two runs the same one (``diff`` and ``fleet diff``):
    kind, prop_kind, problem, and a reorder's layout flow; other layouts and the
    implementation are attributes, so a layout change is "changed", not a new primitive.

    ``mds`` is a record's parsed memory descriptors, or the field as text where there is no
    record (a fleet dataset's rows)."""
    if kind != "reorder":
        return kind, prop_kind, problem, ""
    return kind, prop_kind, problem, flow_label(parse_mds(mds) if isinstance(mds, str) else mds)


def _primitive_key(analysis: Analysis, rid: int) -> tuple[str, ...]:
    r = analysis.log.records[rid]
    return primitive_identity(r.kind, r.prop_kind, r.problem, r.parsed_mds)


def _empty_entry() -> dict[str, Any]:
    return {"count": 0, "ms": 0.0, "typical_ms": 0.0, "impls": Counter(), "layouts": Counter()}


def _per_primitive(analysis: Analysis) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    totals = analysis.record_totals
    part = analysis.typical.by_record
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for rid, row in totals.iterrows():
        r = analysis.log.records[int(rid)]
        if r.operation != "exec" or r.kind == "graph_partition":
            continue
        entry = out.setdefault(_primitive_key(analysis, int(rid)), _empty_entry())
        count = int(row["count"])
        entry["count"] += count
        entry["ms"] += float(row["time_ms"])
        entry["typical_ms"] += float(part.get(int(rid), 0.0))
        entry["impls"][r.impl] += count
        entry["layouts"][md_layouts(r.parsed_mds)] += count
    return out


def _names(counter: Counter[str]) -> list[str]:
    return [k for k, _ in counter.most_common()]


def _primitive_rows(base: Analysis, new: Analysis) -> list[dict[str, Any]]:
    b, n = _per_primitive(base), _per_primitive(new)
    rows = []
    for key in list(b) + [k for k in n if k not in b]:
        eb, en = b.get(key, _empty_entry()), n.get(key, _empty_entry())
        if not eb["count"]:
            status = "appeared"
        elif not en["count"]:
            status = "vanished"
        elif set(eb["impls"]) != set(en["impls"]) or set(eb["layouts"]) != set(en["layouts"]):
            status = "changed"
        else:
            status = "same"
        kind, prop, problem, flow = key
        rows.append(
            {
                "kind": kind,
                "prop_kind": prop,
                "shape": problem,
                "layouts": flow,
                "status": status,
                "base_count": eb["count"],
                "new_count": en["count"],
                "base_ms": eb["ms"],
                "new_ms": en["ms"],
                "delta_ms": en["ms"] - eb["ms"],
                "base_typical_ms": eb["typical_ms"],
                "new_typical_ms": en["typical_ms"],
                "base_impl": _names(eb["impls"]),
                "new_impl": _names(en["impls"]),
                "base_layouts": _names(eb["layouts"]),
                "new_layouts": _names(en["layouts"]),
            }
        )
    rows.sort(key=lambda r: (-abs(_finite(r["delta_ms"]) or 0.0), r["kind"], r["shape"]))
    return rows


def _kind_rows(base: Analysis, new: Analysis, bs: Side, ns: Side) -> list[dict[str, Any]]:
    def per_kind(a: Analysis) -> dict[str, tuple[int, float]]:
        return {r["kind"]: (int(r["count"]), float(r["time_ms"])) for r in a.summary.by_kind}

    gb, gn = per_kind(base), per_kind(new)
    rows = []
    for kind in dict.fromkeys([*gb, *gn]):
        bc, bm = gb.get(kind, (0, 0.0))
        nc, nm = gn.get(kind, (0, 0.0))
        rows.append(
            {
                "kind": kind,
                "base_count": bc,
                "new_count": nc,
                "base_ms": bm,
                "new_ms": nm,
                "delta_ms": nm - bm,
                "base_share": ratio(bm, bs.total_ms) or 0.0,
                "new_share": ratio(nm, ns.total_ms) or 0.0,
                "base_typical_ms": bs.typical_by_kind.get(kind, 0.0),
                "new_typical_ms": ns.typical_by_kind.get(kind, 0.0),
            }
        )
    rows.sort(key=lambda r: -(_finite(max(r["base_ms"], r["new_ms"])) or 0.0))
    return rows


def _phase_rows(b: StepSide, n: StepSide) -> list[dict[str, Any]]:
    rows = []
    for phase in dict.fromkeys([*b.phases, *n.phases]):
        bm, nm = b.phases.get(phase, 0.0), n.phases.get(phase, 0.0)
        if not (bm or nm):
            continue
        rows.append(
            {
                "phase": phase,
                "base_ms_per_step": bm,
                "new_ms_per_step": nm,
                "delta_ms": nm - bm,
                "base_share": ratio(bm, b.typical_ms) or 0.0,
                "new_share": ratio(nm, n.typical_ms) or 0.0,
            }
        )
    return rows


def _op_table(analysis: Analysis) -> dict[str, dict[str, Any]]:
    fw = analysis.framework
    if fw is None or fw.ops.empty:
        return {}
    cols = ["name", "calls_per_step", "self_ms_per_step", "total_ms_per_step", "phase"]
    return {str(r["name"]): r for r in fw.ops[cols].to_dict("records")}


def _op_rows(base: Analysis, new: Analysis) -> list[dict[str, Any]]:
    b, n = _op_table(base), _op_table(new)
    empty = {"calls_per_step": 0.0, "self_ms_per_step": 0.0, "total_ms_per_step": 0.0}
    rows = []
    for name in dict.fromkeys([*b, *n]):
        ob, on = b.get(name, empty), n.get(name, empty)
        status = "appeared" if name not in b else "vanished" if name not in n else "both"
        rows.append(
            {
                "name": name,
                "status": status,
                "phase": str((on if name in n else ob)["phase"]),
                "base_calls_per_step": float(ob["calls_per_step"]),
                "new_calls_per_step": float(on["calls_per_step"]),
                "base_self_ms_per_step": float(ob["self_ms_per_step"]),
                "new_self_ms_per_step": float(on["self_ms_per_step"]),
                "delta_self_ms": float(on["self_ms_per_step"]) - float(ob["self_ms_per_step"]),
                "base_total_ms_per_step": float(ob["total_ms_per_step"]),
                "new_total_ms_per_step": float(on["total_ms_per_step"]),
            }
        )
    rows.sort(key=lambda r: (-abs(_finite(r["delta_self_ms"]) or 0.0), r["name"]))
    return rows


def _step_rows(b: StepSide, n: StepSide) -> list[dict[str, Any]]:
    rows = []
    for i in range(max(len(b.step_ms), len(n.step_ms))):
        have_b, have_n = i < len(b.step_ms), i < len(n.step_ms)
        rows.append(
            {
                "step": i,
                "base_ms": b.step_ms[i] if have_b else None,
                "new_ms": n.step_ms[i] if have_n else None,
                "warmup": (have_b and not b.steady_flags[i]) or (have_n and not n.steady_flags[i]),
            }
        )
    return rows


def diff_analyses(base: Analysis, new: Analysis, basis: str = "typical") -> Diff:
    """Compare two analysed runs; ``basis`` is what the verdict compares (``BASES``): the
    typical or mean step when both have a framework step, else the iteration."""
    if basis not in BASES:
        raise ValueError(f"unknown basis {basis!r} (typical or mean)")
    bs, ns = side_of(base), side_of(new)
    d = Diff(bs, ns, basis=basis)
    if bs.step is not None and ns.step is not None:
        d.unit = "step"
        d.phases = _phase_rows(bs.step, ns.step)
        d.ops = _op_rows(base, new)
        d.steps = _step_rows(bs.step, ns.step)
    elif bs.step is not None or ns.step is not None:
        which = "BASE" if bs.step is not None else "NEW"
        d.notes.append(
            f"only {which} has a profiler trace or table with steps: the oneDNN typical "
            "iterations are compared"
        )
    d.kinds = _kind_rows(base, new, bs, ns)
    d.primitives = _primitive_rows(base, new)
    for i in range(max(len(bs.iteration_ms), len(ns.iteration_ms))):
        have_b, have_n = i < len(bs.iteration_ms), i < len(ns.iteration_ms)
        d.iterations.append(
            {
                "iteration": i,
                "base_ms": bs.iteration_ms[i] if have_b else None,
                "new_ms": ns.iteration_ms[i] if have_n else None,
                "warmup": (have_b and not bs.steady_flags[i])
                or (have_n and not ns.steady_flags[i]),
            }
        )
    d.confidence = confidence_of(d)
    return d


def _summed(rows: Iterable[tuple[tuple, tuple[float, ...]]]) -> dict[tuple, float]:
    """Time per key of ``(key, values)`` rows, from the first of the values that any row
    has a finite, non-zero time in (rows in order: the sums are the same to the bit)."""
    rows = list(rows)
    for column in range(max((len(values) for _, values in rows), default=0)):
        out: dict[tuple, float] = {}
        for key, values in rows:
            value = values[column]
            if value and math.isfinite(value):
                out[key] = out.get(key, 0.0) + float(value)
        if out:
            return out
    return {}


def direction(prop_kind: str) -> str:
    """``backward`` for the backward prop_kinds, else ``forward``: what the work of a
    primitive is, whatever oneDNN calls its forward (``forward_training`` when autograd
    records it, ``forward_inference`` under ``no_grad``; a fix may move one to the other)."""
    return "backward" if prop_kind.startswith("backward") else "forward"


def distrust(base: str | None, new: str | None) -> list[str]:
    """The confidence's reasons to distrust a side's times (:func:`assess`'s ``distrust``),
    from each side's timing-trust reason (None: trusted)."""
    return [
        f"{name}'s timings are not trustworthy: {why}"
        for name, why in (("BASE", base), ("NEW", new))
        if why
    ]


def _distrust(d: Diff) -> list[str]:
    return distrust(d.base.untrusted, d.new.untrusted)


def primitive_work(rows: Iterable[tuple[str, str, str, float, float]]) -> dict[tuple, float]:
    """One run's time per unit of work, for :func:`overlap_share` (``diff`` and ``fleet
    diff``): ``rows`` of (kind, prop_kind, shape, part of the typical iteration, total
    time), summed by kind, direction (:func:`direction`) and shape; by the parts of the
    typical iteration, or by total time when no primitive has a part (a run without a
    typical iteration still has its work)."""
    return _summed(((r[0], direction(r[1]), r[2]), (r[3], r[4])) for r in rows)


def _primitive_work(rows: list[dict[str, Any]], side: str) -> dict[tuple, float]:
    return primitive_work(
        (r["kind"], r["prop_kind"], r["shape"], r[f"{side}_typical_ms"], r[f"{side}_ms"])
        for r in rows
    )


def confidence_of(d: Diff) -> Confidence:
    """The confidence of a diff's verdict (:mod:`dnnlens.analysis.confidence`): its steady
    passes or steps, and the work the two runs share: by op name and self time per step
    when the verdict compares steps, else by primitive kind, direction (:func:`direction`)
    and shape and their part of the typical iteration (raw totals when neither side has
    one)."""
    if d.unit == "step":
        bs, ns = d.base.step, d.new.step
        assert bs is not None and ns is not None
        ov = overlap_share(
            *(_summed(((r["name"],), (r[f"{side}_self_ms_per_step"],)) for r in d.ops)
              for side in ("base", "new"))
        )  # fmt: skip
        return assess(
            bs.steady_times, ns.steady_times, d.compared_ms(), ov, "ops", "step", _distrust(d)
        )
    ov = overlap_share(*(_primitive_work(d.primitives, side) for side in ("base", "new")))
    return assess(
        d.base.steady_times, d.new.steady_times, d.compared_ms(), ov, distrust=_distrust(d)
    )


__all__ = [
    "BASES",
    "UNITS",
    "Confidence",
    "Diff",
    "Side",
    "StepSide",
    "confidence_of",
    "diff_analyses",
    "distrust",
    "gate_decision",
    "primitive_work",
    "ratio",
    "side_of",
    "steady_times",
    "step_side_of",
]
