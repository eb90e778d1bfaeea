"""What a ``key_averages()`` table alone tells of the patterns the framework rules blame.

A trace shows each call with its nesting, order, dtypes and strides (:mod:`.patterns`); a
table shows totals by op name. Each function here gives the table's figure for one pattern
as a :class:`TableEstimate`: time per step (a mean, as every table figure), what it is at
least and at most, the calls per step by op name, and in words what was counted and what a
table cannot see. A rule reading a table applies its threshold to ``ms_per_step`` and says
"as far as a table tells" unless :meth:`TableEstimate.certain` holds for that threshold.

* **optimizer** (:func:`optimizer`): the ``Optimizer.step#`` rows' CPU total (exact). The
  per-parameter ops inside it cannot be told from the same names elsewhere: at least one
  per parameter tensor (``torch::autograd::AccumulateGrad`` calls, one per parameter that
  got a gradient) when no fused kernel runs, since the ``foreach=False`` loop and, on the
  CPU, the ``_foreach_`` kernels dispatch one op per tensor; none when an
  ``aten::_fused_*`` kernel runs (it updates every parameter of its group in one call); at
  most every call of :data:`.names.OPTIMIZER_PER_PARAMETER` names.
* **casts** (:func:`casts`): a table has no dtypes. At most every ``aten::_to_copy`` (CPU
  total); at least the ``ToCopyBackward0`` nodes (on a CPU-only run autograd makes them
  only for casts between dtypes: the gradient cast back). In training the figure is twice
  the latter (each cast of a tensor that requires grad has its gradient cast back, of the
  same size), within the bounds; without a backward phase it is the upper bound.
* **layout** (:func:`layout_copies`): a table has no strides. The figure is the CPU total
  of ``aten::contiguous`` where it copied (its total exceeds its self time: the clone inside);
  a ``contiguous()`` of a transposed view copies too and is counted alike. At most every
  ``contiguous``, ``clone``, ``copy_`` and ``_to_copy``.
* **elementwise** (:func:`elementwise`): a table has no order, so it cannot tell a run of
  elementwise ops from ops standing alone between heavy ones. The figure is the backward
  nodes of elementwise ops (``MulBackward0`` ...: outermost in the backward, as a trace's
  segments; CPU totals) plus the forward elementwise ops' self time outside those nodes,
  the optimizer step and norm modules (below). The activations (``relu`` and its
  ``clamp_min`` kernel, ``threshold_backward``, ``ReluBackward0`` ...) are left out of the
  figure: a network runs one after each heavy op, where they make no run. A side (the
  nodes, the forward ops) with fewer calls per step than a chain's ``min_ops`` cannot hold
  a chain of its own (its calls bound the outermost ones) and adds nothing: a single
  ``MeanBackward1`` of a global average pool is no chain (a run across the loss into the
  backward is then missed). At most every elementwise op and node.
* **normalization** (:func:`normalization`): ATen's batch-norm kernels
  (:data:`.names.NATIVE_NORMALIZATION`, self time: exact), and norm modules made of
  elementwise ops: a table recorded with ``with_modules=True`` has their
  ``nn.Module: FrozenBatchNorm2d_0`` frames (CPU totals: their forward, exact) but no
  sequence numbers to pair their ops with backward nodes, so the backward nodes of the ops
  a scale and shift runs (:data:`NORM_OPS`: ``MulBackward0``, ``AddBackward0`` ...) are
  given to the norms when such frames are there (and then to no elementwise chain); at
  least the forward, at most both.

A ``row_limit`` table leaves rows out: the figures miss what those rows held, and every
upper bound grows by their self time (any of it could be the pattern's).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from dnnlens.analysis.framework.keyaverages import grouped, omitted_ms
from dnnlens.analysis.framework.names import (
    BACKWARD_PREFIX,
    ELEMENTWISE,
    NATIVE_NORMALIZATION,
    NORM_MODULE,
    OPTIMIZER_PER_PARAMETER,
    OPTIMIZER_STEP_PREFIX,
    module_class,
)
from dnnlens.analysis.framework.view import FrameworkAnalysis

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
#: Activations: elementwise, but one after each heavy op in a network (module doc).
ACTIVATIONS = frozenset(
    {"aten::relu", "aten::relu_", "aten::clamp_min", "aten::clamp_min_", "aten::threshold_backward"}
)
_ACTIVATION_NODES = re.compile(r"^(?:Relu|Threshold|ClampMin)Backward\d+$")
#: The ops a normalization written as a scale and shift runs (rsqrt of the variance, a
#: multiply by the scale, an add or subtract of the shift).
NORM_OPS = frozenset({"mul", "add", "sub", "div", "rsqrt", "sqrt"})
_NODE = re.compile(r"^([A-Z][A-Za-z0-9]*)Backward\d+$")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_ELEMENTWISE_STEMS = frozenset(n.removeprefix("aten::").rstrip("_") for n in ELEMENTWISE)


@dataclass
class TableEstimate:
    """A pattern's time per step as far as a table tells (module doc)."""

    ms_per_step: float
    low_ms: float
    high_ms: float
    calls_per_step: dict[str, float] = field(default_factory=dict)
    basis: str = ""

    def certain(self, threshold_ms: float) -> bool:
        """Whether both bounds fall on the same side of ``threshold_ms``."""
        return self.low_ms >= threshold_ms or self.high_ms < threshold_ms


@dataclass
class TableOptimizer:
    """The optimizer step of a table (module doc)."""

    step: TableEstimate  # the Optimizer.step# rows (exact)
    names: list[str]
    kind: str  # "fused", "foreach", "per-parameter loop" or "" (no optimizer step)
    parameters_per_step: float
    fused_kernels_per_step: float
    foreach_kernels_per_step: float
    #: per-parameter ops dispatched per step: at least, at most (module doc)
    per_parameter_low: float
    per_parameter_high: float
    per_parameter_by_name: dict[str, float]


class _Ops:
    """A table's rows by name (Python frames too), per step, looked up by name."""

    def __init__(self, fw: FrameworkAnalysis) -> None:
        if fw.table is None or not fw.steady_count:
            raise ValueError("table patterns need the framework view of a key_averages table")
        per_step = grouped(fw.table.rows) / fw.steady_count
        self.ops = per_step.rename(columns={"calls": "calls_per_step", "own": "self_ms_per_step"})
        self.names = [str(n) for n in self.ops.index]
        #: self time per step of the rows a row_limit table left out
        self.omitted = omitted_ms(fw.table) / fw.steady_count

    def get(self, name: str, column: str) -> float:
        return float(self.ops.at[name, column]) if name in self.ops.index else 0.0

    def total(self, names: list[str]) -> float:
        return sum(self.get(n, "total") for n in names)

    def own(self, names: list[str]) -> float:
        return sum(self.get(n, "self_ms_per_step") for n in names)

    def calls(self, names: list[str]) -> dict[str, float]:
        found = {n: self.get(n, "calls_per_step") for n in names}
        return {n: c for n, c in sorted(found.items(), key=lambda p: -p[1]) if c}

    def matching(self, test) -> list[str]:  # noqa: ANN001 - a predicate on names
        return [n for n in self.names if test(n)]


def optimizer(fw: FrameworkAnalysis) -> TableOptimizer:
    """The optimizer step and its per-parameter ops, as far as the table tells."""
    ops = _Ops(fw)
    steps = ops.matching(lambda n: n.startswith(OPTIMIZER_STEP_PREFIX))
    step_ms = ops.total(steps)
    fused = sum(ops.calls(ops.matching(lambda n: n.startswith("aten::_fused_"))).values())
    foreach = sum(ops.calls(ops.matching(lambda n: n.startswith("aten::_foreach_"))).values())
    parameters = ops.get(ACCUMULATE_GRAD, "calls_per_step")
    by_name = ops.calls(sorted(OPTIMIZER_PER_PARAMETER))
    if not steps:
        kind, low, high = "", 0.0, 0.0
    elif fused:
        kind, low, high = "fused", 0.0, 0.0
    else:
        kind = "foreach" if foreach else "per-parameter loop"
        high = sum(by_name.values())
        low = min(parameters, high)
        if ops.omitted:  # the rows left out could hold any number of calls
            high = math.inf
    basis = (
        "the Optimizer.step# rows' CPU total; per-parameter ops: at least one per parameter "
        "tensor (AccumulateGrad calls) unless a fused kernel runs, at most every call of "
        "the optimizer's op names (a table cannot tell which ran inside the step)"
    )
    return TableOptimizer(
        step=TableEstimate(step_ms, step_ms, step_ms, ops.calls(steps), basis),
        names=steps,
        kind=kind,
        parameters_per_step=parameters,
        fused_kernels_per_step=fused,
        foreach_kernels_per_step=foreach,
        per_parameter_low=low,
        per_parameter_high=high,
        per_parameter_by_name=by_name if kind and kind != "fused" else {},
    )


def _node_wrapper_total(ops: _Ops, node: str) -> float:
    """A backward node's time: its ``evaluate_function`` row's CPU total when the table
    names it in full, else the node's own row (the wrapper's name may be cut short)."""
    wrapper = f"{BACKWARD_PREFIX} {node}"
    return ops.get(wrapper, "total") if wrapper in ops.ops.index else ops.get(node, "total")


def casts(fw: FrameworkAnalysis) -> TableEstimate:
    """Casts between dtypes, as far as the table tells (module doc)."""
    ops = _Ops(fw)
    high = ops.get("aten::_to_copy", "total")
    nodes = ops.matching(lambda n: bool(re.match(r"^ToCopyBackward\d+$", n)))
    low = min(sum(_node_wrapper_total(ops, n) for n in nodes), high)
    training = fw.phase_ms("backward") > 0
    figure = min(2 * low, high) if training else high
    return TableEstimate(
        figure,
        low,
        high + ops.omitted,
        ops.calls(["aten::_to_copy", *nodes]),
        "a table has no dtypes: at most every aten::_to_copy, at least the ToCopyBackward "
        "nodes (the gradients cast back); in training twice the latter",
    )


def layout_copies(fw: FrameworkAnalysis) -> TableEstimate:
    """Memory-format conversions, as far as the table tells (module doc)."""
    ops = _Ops(fw)
    copied = ops.get("aten::contiguous", "total") > ops.get("aten::contiguous", "self_ms_per_step")
    figure = ops.get("aten::contiguous", "total") if copied else 0.0
    candidates = ["aten::contiguous", "aten::clone", "aten::copy_", "aten::_to_copy"]
    return TableEstimate(
        figure,
        0.0,
        ops.total(candidates) + ops.omitted,
        ops.calls(["aten::contiguous"]) if copied else {},
        "a table has no strides: the copies contiguous() made (a transposed view made "
        "dense counts too); at most every contiguous, clone, copy_ and _to_copy",
    )


def elementwise_node_op(name: str) -> str | None:
    """``MulBackward0`` -> ``mul``, ``BinaryCrossEntropyWithLogitsBackward0`` ->
    ``binary_cross_entropy_with_logits``; None for a name that is no autograd node."""
    m = _NODE.match(name)
    return _CAMEL.sub("_", m.group(1)).lower() if m else None


def _norm_frames(ops: _Ops) -> list[str]:
    return ops.matching(
        lambda n: n.startswith("nn.Module: ") and bool(NORM_MODULE.search(module_class(n)))
    )


def _norm_nodes(ops: _Ops, frames: list[str]) -> list[str]:
    """The backward nodes given to norm modules made of elementwise ops (module doc)."""
    if not frames or ops.own(sorted(NATIVE_NORMALIZATION)) > 0:
        return []
    return ops.matching(lambda n: elementwise_node_op(n) in NORM_OPS)


@dataclass
class TableNormalization:
    """Normalization outside oneDNN, as far as the table tells (module doc)."""

    native: TableEstimate  # ATen's batch-norm kernels, self time
    modules: TableEstimate  # norm modules made of elementwise ops, forward and backward
    module_classes: list[str]


def normalization(fw: FrameworkAnalysis) -> TableNormalization:
    """ATen's batch-norm kernels and norm modules made of elementwise ops (module doc)."""
    ops = _Ops(fw)
    native = ops.matching(lambda n: n in NATIVE_NORMALIZATION)
    native_ms = ops.own(native)
    frames = _norm_frames(ops) if not native_ms else []
    forward = ops.total(frames)
    nodes = _norm_nodes(ops, frames)
    backward = sum(_node_wrapper_total(ops, n) for n in nodes)
    return TableNormalization(
        native=TableEstimate(
            native_ms,
            native_ms,
            native_ms + ops.omitted,
            ops.calls(native),
            "ATen's batch-norm kernels",
        ),
        modules=TableEstimate(
            forward + backward,
            forward,
            forward + backward + ops.omitted,
            ops.calls(frames + nodes),
            "the norm modules' frames (their forward) and the backward nodes of the ops a "
            "scale and shift runs (a table has no sequence numbers to pair them)",
        ),
        module_classes=sorted({module_class(n) for n in frames}),
    )


def elementwise(fw: FrameworkAnalysis, min_ops: int) -> TableEstimate:
    """Elementwise work in the step, as far as the table tells (module doc): a phase with
    fewer than ``min_ops`` elementwise calls per step holds no chain of ``min_ops``."""
    ops = _Ops(fw)
    nodes = ops.matching(lambda n: elementwise_node_op(n) in _ELEMENTWISE_STEMS)
    norms = _norm_frames(ops)
    given = set(_norm_nodes(ops, norms))
    kept_nodes = [n for n in nodes if not _ACTIVATION_NODES.match(n) and n not in given]
    forward = ops.matching(lambda n: n in ELEMENTWISE)
    kept_forward = [n for n in forward if n not in ACTIVATIONS]
    backward_ms = sum(_node_wrapper_total(ops, n) for n in kept_nodes)
    inside_nodes = sum(ops.get(n, "total") - ops.get(n, "self_ms_per_step") for n in nodes)
    optimizer_ms = sum(
        ops.get(n, "total") - ops.get(n, "self_ms_per_step")
        for n in ops.matching(lambda n: n.startswith(OPTIMIZER_STEP_PREFIX))
    )
    outside = inside_nodes + optimizer_ms + ops.total(norms)
    forward_ms = max(ops.own(kept_forward) - outside, 0.0)
    if sum(ops.calls(kept_nodes).values()) < min_ops:
        backward_ms, kept_nodes = 0.0, []
    if sum(ops.calls(kept_forward).values()) < min_ops:
        forward_ms, kept_forward = 0.0, []
    high = sum(_node_wrapper_total(ops, n) for n in nodes) + ops.own(forward) + ops.omitted
    return TableEstimate(
        backward_ms + forward_ms,
        0.0,
        high,
        ops.calls(kept_forward + kept_nodes),
        "a table has no order: elementwise backward nodes and the forward elementwise ops "
        "outside them, the optimizer and norm modules, activations left out, each side when "
        "it has enough calls per step for a chain; whether they run in a row cannot be seen",
    )
