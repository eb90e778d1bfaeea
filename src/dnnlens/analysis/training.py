"""A training step split into forward, backward and the reorders between them.

The parts are terms of the one typical iteration (:mod:`dnnlens.analysis.timing`), so they
add up to ``typical_iteration_ms`` and each share is a share of the same figure:

* compute by the prop_kind of its node (:mod:`dnnlens.analysis.graph`): ``forward``
  (``forward_training``, ``forward_inference``, ``forward``), ``backward_data``,
  ``backward_weights`` and ``backward`` (one call computing data and weight gradients:
  rnn, batch and layer normalisation);
* reorders by the op graph's role, as :class:`~dnnlens.analysis.analysis.ReorderPart`
  sums them: weights converted for the forward pass, for the backward-data pass, weight
  gradients going back to the framework's layout, weights whose pass the graph does not
  tell, and activations (round trips, one-way conversions and copies together);
* ``other``: primitives without a pass (prop_kind ``undef``: matmul, binary, sum,
  TensorFlow's ``gemm_api`` ...).

``backward_forward_ratio`` is the backward compute (backward-data + backward-weights +
backward) over the forward compute, reorders left out: about 2 for convolutions, where
each backward pass costs about as much as the forward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from dnnlens.analysis.shares import share

__all__ = ["PARTS", "StepPart", "TrainingStep", "training_step"]

#: ``(name, group, label)`` of every part of a step, in the order views show them.
PARTS: tuple[tuple[str, str, str], ...] = (
    ("forward", "compute", "forward"),
    ("backward_data", "compute", "backward-data"),
    ("backward_weights", "compute", "backward-weights"),
    ("backward", "compute", "backward (data and weights in one call)"),
    ("reorder_weight_forward", "reorder", "weights reordered for forward"),
    ("reorder_weight_backward_data", "reorder", "weights reordered for backward-data"),
    ("reorder_weight_gradient", "reorder", "weight gradients back to the framework's layout"),
    ("reorder_weight", "reorder", "weights reordered, pass not told"),
    ("reorder_activation", "reorder", "activations reordered"),
    ("other", "other", "other (no pass: matmul, binary, sum ...)"),
)

_PASS_OF_PROP = {
    "forward_training": "forward",
    "forward_inference": "forward",
    "forward_scoring": "forward",
    "forward": "forward",
    "backward_data": "backward_data",
    "backward_weights": "backward_weights",
    "backward": "backward",
    "backward_bias": "backward",
}
_BACKWARD = ("backward_data", "backward_weights", "backward")


@dataclass(frozen=True)
class StepPart:
    """One part of the typical step: ms and executions per steady step."""

    name: str
    group: str
    label: str
    ms: float
    per_step: float


@dataclass(frozen=True)
class TrainingStep:
    """The typical steady training step by pass and reorder role (see the module doc)."""

    step_ms: float
    steady_steps: int
    parts: tuple[StepPart, ...]

    def part(self, name: str) -> StepPart:
        """The part called ``name`` (one of :data:`PARTS`)."""
        return next(p for p in self.parts if p.name == name)

    def share(self, ms: float) -> float | None:
        """``ms`` as a share of the step (``None`` for an empty step: :mod:`.shares`)."""
        return share(ms, self.step_ms)

    @property
    def forward_ms(self) -> float:
        """Forward compute per step."""
        return self.part("forward").ms

    @property
    def backward_ms(self) -> float:
        """Backward compute per step: backward-data + backward-weights + backward."""
        return sum(self.part(n).ms for n in _BACKWARD)

    @property
    def weight_reorder_ms(self) -> float:
        """Reorders of weights and weight gradients per step."""
        return sum(p.ms for p in self.parts if p.name.startswith("reorder_weight"))

    @property
    def backward_forward_ratio(self) -> float | None:
        """Backward compute over forward compute; ``None`` without forward compute."""
        fwd = self.forward_ms
        return self.backward_ms / fwd if fwd > 0 else None


def training_step(
    terms: pd.DataFrame,
    prop_of_node: Mapping[str, str],
    reorder_ms_by_role: Mapping[str, float],
    reorder_count_by_role: Mapping[str, float],
    step_ms: float,
    steady_steps: int,
) -> TrainingStep:
    """The step of a typical iteration's ``terms`` (one row per node: ``node``, ``kind``,
    ``iter_ms``, ``per_iteration``), the prop_kind of each node and the reorders' part of
    the iteration by role (:attr:`ReorderPart.by_role` and ``count_by_role``)."""
    ms = dict.fromkeys((name for name, _, _ in PARTS), 0.0)
    count = dict.fromkeys(ms, 0.0)
    compute = terms[terms["kind"] != "reorder"] if len(terms) else terms
    passes = [_PASS_OF_PROP.get(prop_of_node.get(str(n), ""), "other") for n in compute["node"]]
    if len(compute):
        sums = compute[["iter_ms", "per_iteration"]].groupby(passes).sum()
        for name, row in sums.iterrows():
            ms[str(name)] += float(row["iter_ms"])
            count[str(name)] += float(row["per_iteration"])
    for role, value in reorder_ms_by_role.items():
        name = "reorder_activation" if role.startswith("activation") else f"reorder_{role}"
        ms[name] += float(value)
        count[name] += float(reorder_count_by_role.get(role, 0.0))
    parts = tuple(
        StepPart(name, group, label, ms[name], count[name]) for name, group, label in PARTS
    )
    return TrainingStep(step_ms=step_ms, steady_steps=steady_steps, parts=parts)
