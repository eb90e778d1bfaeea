"""What the reorders of a typical iteration do, by the op graph's role: the words and the fix
every reorder finding shares, so that they name the same cause with the same counts.

The counts and times are :class:`~dnnlens.analysis.analysis.ReorderPart`'s ``by_role`` and
``count_by_role`` (one fact); this module only groups and words them. Causes: *weights*
(converted for a pass, or gradients going back), *activation round trips*, and *one-way*
activation reorders (conversions nothing undoes, and plain copies).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnlens.analysis.analysis import ReorderPart
from dnnlens.rules.builtin._util import ms, ratio

__all__ = ["ACTIVATION_ROLES", "WEIGHT_ROLE_WORDS", "ReorderCauses", "causes_of", "count_value"]

#: Weight roles and how a message names them (forward first, gradients last).
WEIGHT_ROLE_WORDS = (
    ("weight_forward", "for forward"),
    ("weight_backward_data", "for backward-data"),
    ("weight_gradient", "gradients back to the framework's layout"),
    ("weight", "for a pass not told"),
)
#: Activation roles and how a message names one of them and several.
ACTIVATION_ROLES = (
    ("activation_round_trip", ("in round trips", "in round trips")),
    ("activation_one_way", ("one-way conversion", "one-way conversions")),
    ("activation_copy", ("same-layout copy", "same-layout copies")),
)

_FIX = {
    ("weights", True): (
        "most reorder time moves weights, every training step (see weight-reorder-training): "
        "a larger batch per step amortises them, as their cost does not grow with the batch; "
        "neither PyTorch nor TensorFlow keeps trainable weights in oneDNN's layout today, "
        "channels_last and torch.compile leave them (Intel Extension for PyTorch's "
        "`ipex.optimize(model, optimizer=optimizer)` did; it is end-of-life)."
    ),
    ("weights", False): (
        "most reorder time moves weights, on every pass (see weight-reorder-per-iteration): "
        "freeze the model so its weights are prepacked once (`torch.jit.freeze`, "
        "`torch.compile` with `torch._inductor.config.freezing = True`), or keep them in "
        "oneDNN's layout (`torch.utils.mkldnn.to_mkldnn`)."
    ),
    ("activation round trips", True): (
        "most reorder time moves activations into a blocked layout and back around the ops "
        "(see layout-round-trip): run the model and its input in channels_last "
        "(`model.to(memory_format=torch.channels_last)`) so oneDNN reads and writes the "
        "framework's layout, or keep blocked layouts between ops (torch.compile, oneDNN Graph)."
    ),
    ("one-way activation reorders", True): (
        "most reorder time converts activations one way, between oneDNN's layout or data "
        "type and the framework's (see layout-round-trip, dtype-conversion): keep the "
        "activations in one layout for both (channels_last: "
        "`model.to(memory_format=torch.channels_last)`) and the model in one data type."
    ),
}


def _counted(count: float, words: tuple[str, str]) -> str:
    return f"{count:g} {words[0] if count == 1 else words[1]}"


@dataclass(frozen=True)
class ReorderCauses:
    """The reorders of a typical iteration grouped by cause (ms and count per iteration)."""

    weight: dict[str, tuple[float, float]]
    activation: dict[str, tuple[float, float]]
    total_ms: float

    @property
    def weight_ms(self) -> float:
        """Reorders of weights and weight gradients."""
        return sum(v[1] for v in self.weight.values())

    @property
    def weight_count(self) -> float:
        """Weight reorders per iteration."""
        return sum(v[0] for v in self.weight.values())

    @property
    def activation_ms(self) -> float:
        """Reorders of activations."""
        return sum(v[1] for v in self.activation.values())

    @property
    def activation_count(self) -> float:
        """Activation reorders per iteration."""
        return sum(v[0] for v in self.activation.values())

    @property
    def round_trip_ms(self) -> float:
        """Activation reorders in round trips."""
        return self.activation.get("activation_round_trip", (0.0, 0.0))[1]

    @property
    def one_way_ms(self) -> float:
        """Activation reorders nothing undoes: one-way conversions and copies."""
        return self.activation_ms - self.round_trip_ms

    @property
    def dominant(self) -> str:
        """The cause holding the most reorder time: weights, activation round trips or
        one-way activation reorders."""
        options = [
            ("weights", self.weight_ms),
            ("activation round trips", self.round_trip_ms),
            ("one-way activation reorders", self.one_way_ms),
        ]
        return max(options, key=lambda kv: kv[1])[0]

    @property
    def dominant_share(self) -> float:
        """The dominant cause's share of all reorder time."""
        by = {
            "weights": self.weight_ms,
            "activation round trips": self.round_trip_ms,
            "one-way activation reorders": self.one_way_ms,
        }
        return ratio(by[self.dominant], self.total_ms)

    def weight_words(self) -> str:
        """``weights 10.2 ms (59: 20 for forward 2.25 ms, ...)``."""
        split = ", ".join(
            f"{self.weight[role][0]:g} {words} {ms(self.weight[role][1])}"
            for role, words in WEIGHT_ROLE_WORDS
            if role in self.weight
        )
        return f"weights {ms(self.weight_ms)} ({self.weight_count:g}: {split})"

    def activation_split(self) -> str:
        """``104 in round trips 0.45 ms, 6 one-way conversions 0.028 ms, ...``."""
        return ", ".join(
            f"{_counted(self.activation[role][0], words)} {ms(self.activation[role][1])}"
            for role, words in ACTIVATION_ROLES
            if role in self.activation
        )

    def activation_words(self) -> str:
        """``activations 0.51 ms (116: 104 in round trips 0.45 ms, ...)``."""
        split = self.activation_split()
        return f"activations {ms(self.activation_ms)} ({self.activation_count:g}: {split})"

    def words(self) -> str:
        """Both groups, the dominant one first; empty groups left out."""
        groups = []
        if self.weight:
            groups.append((self.weight_ms, self.weight_words()))
        if self.activation:
            groups.append((self.activation_ms, self.activation_words()))
        groups.sort(key=lambda g: -g[0])
        return "; ".join(text for _, text in groups)

    def fix(self, training: bool) -> str:
        """The fix for the dominant cause (training changes the weights' fix)."""
        cause = self.dominant
        text = _FIX[(cause, training if cause == "weights" else True)]
        return text[0].upper() + text[1:]


def count_value(count: float) -> int | float:
    """A count per iteration as JSON shows it: whole counts as integers."""
    return round(count) if abs(count - round(count)) < 1e-9 else float(count)


def causes_of(part: ReorderPart) -> ReorderCauses:
    """Group a typical iteration's reorders by cause (roles that ran in steady state)."""

    def group(roles: tuple[tuple[str, object], ...]) -> dict[str, tuple[float, float]]:
        out = {}
        for role, _ in roles:
            count = part.count_by_role.get(role, 0.0)
            if count > 0:
                out[role] = (count, part.by_role.get(role, 0.0))
        return out

    return ReorderCauses(group(WEIGHT_ROLE_WORDS), group(ACTIVATION_ROLES), part.ms)
