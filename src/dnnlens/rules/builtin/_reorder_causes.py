"""What the reorders of a typical iteration do, by the op graph's role: the words and the fix
every reorder finding shares, so that they name the same cause with the same counts.

The counts and times are :class:`~dnnlens.analysis.analysis.ReorderPart`'s ``by_role`` and
``count_by_role`` (one fact); this module only groups and words them. Causes: *weights*
(converted for a pass, or gradients going back), *activation round trips*, and *one-way*
activation reorders (conversions nothing undoes, and plain copies). Each cause's fix is said
in the terms of the program that made the log (:class:`~dnnlens.rules.builtin._util.Fix`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dnnlens.analysis.analysis import ReorderPart
from dnnlens.rules.builtin._util import Fix, ms, producer_fix, ratio

if TYPE_CHECKING:
    from dnnlens.rules.context import RuleContext

__all__ = [
    "ACTIVATION_ROLES",
    "CAUSE_FIXES",
    "ONE_WAY_FIX",
    "ROUND_TRIP_FIX",
    "WEIGHTS_INFERENCE_FIX",
    "WEIGHTS_TRAINING_FIX",
    "WEIGHT_ROLE_WORDS",
    "ReorderCauses",
    "causes_of",
    "count_value",
]

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

#: Weights reordered every training step (weight-reorder-training tells the recordings).
WEIGHTS_TRAINING_FIX = Fix(
    pytorch=(
        "a larger batch per step, where the training allows it: the weight reorders are the "
        "same whatever the batch and their time grows far less than the compute's "
        "(torchvision resnet18 in channels_last on an AVX-512 BF16 machine: 59 a step, 47% of "
        "the step at batch 4, 26% at batch 16); channels_last and bf16 autocast leave them "
        "(59 a step in NCHW and in channels_last, 11 in fp32 and in bf16 on a small convnet), "
        "and freezing or `torch.utils.mkldnn.to_mkldnn` stop the weights from training"
    ),
    tensorflow=(
        "a larger batch per step (`model.fit(batch_size=...)`), where the training allows "
        "it: TensorFlow reorders each HWIO weight for the forward and the backward-data pass "
        "and each gradient back, every step, whatever the batch (a Keras CNN on an AVX-512 "
        "BF16 machine: 5 a step, 8.6% of the step at batch 4, 3.0% at batch 16); "
        "`TF_ONEDNN_ASSUME_FROZEN_WEIGHTS` is for inference only"
    ),
    openvino=(
        "OpenVINO runs inference only, so a training step came from another program: a "
        "larger batch per step amortises weight reorders, whose time grows far less than the "
        "compute's"
    ),
    onednn=(
        "a larger batch per step amortises them (their time grows far less than the "
        "compute's); a program that owns its weights can also keep them in the forward "
        "primitive's layout (`memory::format_tag::any`, `pd.weights_desc()`) across steps "
        "when the backward-weights primitive gives the gradients in that layout (compare its "
        "`diff_weights_desc()`), so that the update runs there (not measured here)"
    ),
)
#: Weights reordered on every pass at inference (weight-reorder-per-iteration).
WEIGHTS_INFERENCE_FIX = Fix(
    pytorch=(
        "freeze the model so its weights are prepacked once, under `torch.no_grad()` and "
        "`model.eval()`: `torch.compile` with `torch._inductor.config.freezing = True`, or "
        "`torch.jit.freeze(torch.jit.trace(model, x))` (recorded: with freezing the weights "
        "are reordered once, in warm-up)"
    ),
    tensorflow=(
        "in a process that only infers, set `TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1`: TensorFlow's "
        "oneDNN convolutions and matmuls then take the weights as constants, reorder each "
        "once and keep it (recorded: one reorder per weight in the whole run)"
    ),
    openvino=(
        "make the weights Constant nodes of the model, not inputs (Parameters): the CPU "
        "plugin reorders constant weights once, when the model is compiled (recorded: weights "
        "given as inputs are reordered on every inference, constants once)"
    ),
    onednn=(
        "reorder the weights once, at setup, into the layout the primitive chose (create it "
        "with `memory::format_tag::any` for the weights and reorder into `pd.weights_desc()`), "
        "and keep that memory for every execution"
    ),
)
#: Activations reordered into a blocked layout and back around the ops (layout-round-trip).
ROUND_TRIP_FIX = Fix(
    pytorch=(
        "run the model and its input in channels_last "
        "(`model.to(memory_format=torch.channels_last)`, "
        "`x.contiguous(memory_format=torch.channels_last)`) so that oneDNN reads and writes "
        "PyTorch's layout (recorded: resnet18 training has 104 activation reorders in round "
        "trips a step in NCHW, none in channels_last)"
    ),
    tensorflow=(
        "keep the model in NHWC, Keras' default (`data_format='channels_last'`), which "
        "TensorFlow's oneDNN ops read and write directly (recorded: no activation reorder in "
        "an NHWC Keras CNN)"
    ),
    openvino=(
        "give the model its input in the layout the CPU plugin computes in: declare it with "
        "`PrePostProcessor` (`ppp.input().tensor().set_layout(ov.Layout('NHWC'))`, "
        "`ppp.input().model().set_layout(ov.Layout('NCHW'))`, `model = ppp.build()`) and "
        "feed NHWC tensors (recorded: the input's reorder on every inference went away); "
        "between its own nodes the plugin chooses the layouts itself"
    ),
    onednn=(
        "create the primitives with `memory::format_tag::any` for src and dst and give each "
        "primitive the previous one's `dst_desc()`, so that activations stay in the layout "
        "the kernels chose from one primitive to the next; reorder only at the model's input "
        "and output"
    ),
)
#: Activations converted one way (layout-round-trip, dtype-conversion).
ONE_WAY_FIX = Fix(
    pytorch=(
        "keep the activations in one layout for PyTorch's ops and oneDNN's: channels_last "
        "(`model.to(memory_format=torch.channels_last)`, "
        "`x.contiguous(memory_format=torch.channels_last)`), and the model in one data type "
        "(recorded: the small convnet's 7 activation reorders a pass in NCHW, none in "
        "channels_last)"
    ),
    tensorflow=(
        "keep the model and its inputs in NHWC (Keras' default) and in one data type, so "
        "that TensorFlow's ops and oneDNN's share the layout"
    ),
    openvino=(
        "give the model its input in the layout and precision the CPU plugin computes in: an "
        "NHWC input declared with `PrePostProcessor` "
        "(`ppp.input().tensor().set_layout(ov.Layout('NHWC'))`, recorded: its reorder went "
        "away), and `INFERENCE_PRECISION_HINT` f32 when the f32 input's conversion to bf16 "
        "costs more than bf16 saves (recorded: at f32 the conversion is gone; compare both)"
    ),
    onednn=(
        "keep activations in the layout and data type the primitives use: create them with "
        "`memory::format_tag::any`, give each the previous one's `dst_desc()`, and convert "
        "only at the model's input and output"
    ),
)
#: The words before each cause's fix in a reorder-overhead finding.
_CAUSE = {
    ("weights", True): (
        "most reorder time moves weights, every training step (see weight-reorder-training)",
        WEIGHTS_TRAINING_FIX,
    ),
    ("weights", False): (
        "most reorder time moves weights, on every pass (see weight-reorder-per-iteration)",
        WEIGHTS_INFERENCE_FIX,
    ),
    ("activation round trips", True): (
        "most reorder time moves activations into a blocked layout and back around the ops "
        "(see layout-round-trip)",
        ROUND_TRIP_FIX,
    ),
    ("one-way activation reorders", True): (
        "most reorder time converts activations one way, between oneDNN's layout or data "
        "type and the framework's (see layout-round-trip, dtype-conversion)",
        ONE_WAY_FIX,
    ),
}
#: Each cause and its fix, for ``rules explain``.
CAUSE_FIXES = (
    ("weights, in training", WEIGHTS_TRAINING_FIX),
    ("weights, at inference", WEIGHTS_INFERENCE_FIX),
    ("activation round trips", ROUND_TRIP_FIX),
    ("one-way activation reorders", ONE_WAY_FIX),
)


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

    def fix(self, ctx: RuleContext) -> str:
        """The fix for the dominant cause in the producer's terms (training changes the
        weights' fix)."""
        cause = self.dominant
        words, fix = _CAUSE[(cause, ctx.is_training if cause == "weights" else True)]
        return producer_fix(ctx, fix, words)


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
