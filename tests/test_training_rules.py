"""The reorder findings on the recorded training logs, against hand counts of their text.

Basis: the typical step is per position of a step (the k-th exec line of a step, its median
over the steady steps 2..N: one warm-up step, the one with every ``create:cache_miss``;
``tests/data/training_hand_counts.md``). A reorder moves a weight when its dims do not begin
with the batch (4): the weight dims the hand-count program finds (weights of the
convolution or rnn next to it) are exactly those. Counted with::

    python3 - LOG 'STEP_START_REGEX' <<'EOF'
    import re, sys, statistics as st
    steps = []
    for line in open(sys.argv[1]):
        f = line.rstrip("\\n").split(",")
        if len(f) > 12 and f[2:4] == ["primitive", "exec"]:
            if re.search(sys.argv[2], line):
                steps.append([])
            steps[-1].append((f[5], f[-2], float(f[-1])))
    steady = steps[1:]
    med = [st.median(s[k][2] for s in steady) for k in range(len(steady[0]))]
    w = sum(m for (kind, dims, _), m in zip(steady[0], med)
            if kind == "reorder" and not dims.startswith("4x"))
    print(f"{sum(med):.6f} {w:.6f} {w / sum(med):.6f}")
    EOF

with the step-start regexes of the hand-count file. It prints the typical step, its weight
reorders and their share: ``WEIGHT_SHARE``. The batch-16 recordings of
``scripts/make_producer_logs.py`` (``sample_logs/producers/``) are counted the same way, with
the step starts of their batch-4 twins (``keras_cnn_train``, ``resnet18_cl_train``), but the
weight test changes where 16 is both the batch and a filter count: in the Keras log every
reorder moves a weight (its five reorders per step have the 4-D filter dims 16x3x3x3 and
32x16x3x3; NHWC activations are never reordered), so ``w`` sums every reorder; in resnet18
no filter has 16 output channels, so ``dims.startswith("16x")`` tells activations. The
resnet18 log was recorded with ``ONEDNN_VERBOSE=1``, without create lines, so no step is
warm-up by that method: ``steady`` is every step (its six steps sum to 64.9, 55.1, 53.2,
50.2, 55.6 and 55.8 ms; none is three times the median, so dnnlens keeps all six too).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.reading import load
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_logs"

#: log -> (typical step ms, weight reorder ms, share), per position (see the module doc).
WEIGHT_SHARE = {
    "resnet18_nchw_train.log": (19.949470, 10.223641, 0.512477),
    "resnet18_cl_train.log": (19.618649, 9.264644, 0.472237),
    "lstm_train.log": (0.308350, 0.028809, 0.093428),
    "convnet_bf16_autocast_train.log": (0.543213, 0.015869, 0.029213),
    "keras_cnn_train.log": (1.232421, 0.106201, 0.086173),
    "producers/tensorflow_keras_fit_b16_train.log": (4.329833, 0.131836, 0.030448),
    "producers/pytorch_resnet18_cl_b16_train.log": (53.076661, 13.644528, 0.257072),
}
#: Weight reorders per step (hand-count file): for forward, for backward-data, gradients.
PER_STEP = {
    "resnet18_nchw_train.log": (20, 19, 20),
    "resnet18_cl_train.log": (20, 19, 20),
    "lstm_train.log": (4, 0, 6),
    "convnet_bf16_autocast_train.log": (4, 3, 4),
    "keras_cnn_train.log": (2, 1, 2),
    "producers/tensorflow_keras_fit_b16_train.log": (2, 1, 2),
    "producers/pytorch_resnet18_cl_b16_train.log": (20, 19, 20),
}


@cache
def analysed(name: str, select: str | None = None) -> Analysis:
    a = Analysis(load([str(S / name)]))
    apply_rules(a, RuleOptions(search_config=False, select=[select] if select else []))
    return a


def finding(name: str, rule: str) -> Finding | None:
    """``rule``'s own finding on the log, as ``--select RULE`` gives it: a broader finding
    that a part folds into when all rules run (rules/duplicates.py) is still its own here."""
    return next((f for f in analysed(name, rule).findings if f.rule == rule), None)


@pytest.mark.parametrize("name", sorted(WEIGHT_SHARE))
def test_weight_reorder_training_fires_with_the_hand_counted_share(name: str) -> None:
    step_ms, weight_ms, share = WEIGHT_SHARE[name]
    f = finding(name, "weight-reorder-training")
    assert f is not None
    assert f.impact_ms_per_iteration == pytest.approx(weight_ms, abs=2e-6)
    assert f.data["share"] == pytest.approx(share, abs=2e-6)
    assert f.data["step_ms"] == pytest.approx(step_ms, abs=2e-6)
    fwd, bwd_data, grad = PER_STEP[name]
    by_role = f.data["by_role"]
    assert by_role.get("weight_forward", {}).get("per_step", 0) == fwd
    assert by_role.get("weight_backward_data", {}).get("per_step", 0) == bwd_data
    assert by_role.get("weight_gradient", {}).get("per_step", 0) == grad
    assert f.data["weight_reorders_per_step"] == fwd + bwd_data + grad
    assert len(f.data["reorders"]) == fwd + bwd_data + grad
    # the impact is the weight reorder nodes' part of the typical iteration
    r = analysed(name).reorders
    nodes = r[r["role"].str.startswith("weight")]
    assert f.impact_ms_per_iteration == pytest.approx(float(nodes["iter_ms"].sum()), rel=1e-12)
    # evidence: reorder lines of the log
    lines = (S / name).read_text(encoding="utf-8").splitlines()
    assert f.evidence and all(",exec,cpu,reorder," in lines[e.line - 1] for e in f.evidence)


def test_the_message_names_passes_and_weights() -> None:
    f = finding("resnet18_nchw_train.log", "weight-reorder-training")
    assert f is not None
    assert "59 weight reorders in every steady training step" in f.message
    assert "20 for forward" in f.message and "19 for backward-data" in f.message
    assert "20 gradients back to the framework's layout" in f.message
    assert "512x512x3x3 ABcd16b16a->abcd" in f.message
    assert "larger batch" in f.fix and "ipex" not in f.fix.lower()
    assert f.fix.endswith(f"[PyTorch, told by {S / 'resnet18_nchw_train.log'}:9]")


def test_the_inference_rule_still_skips_training() -> None:
    for name in WEIGHT_SHARE:
        assert finding(name, "weight-reorder-per-iteration") is None


@pytest.mark.parametrize(
    "name", ["resnet18_nchw_train.log", "resnet18_cl_train.log", "keras_cnn_train.log"]
)
def test_reorder_overhead_fix_names_the_weights_when_they_dominate(name: str) -> None:
    f = finding(name, "reorder-overhead")
    if name == "keras_cnn_train.log":  # reorders are 8.6% of its step, under the 10% bar
        assert f is None
        return
    assert f is not None and f.data["dominant_cause"] == "weights"
    assert "moves weights, every training step" in f.fix
    assert "weight-reorder-training" in f.fix


def test_reorder_overhead_on_resnet18_nchw_counts_by_role() -> None:
    """10.22 of 10.73 ms of reorders a step move weights (per position, module doc)."""
    f = finding("resnet18_nchw_train.log", "reorder-overhead")
    assert f is not None
    assert "weights 10.2 ms (59: 20 for forward" in f.message
    assert "activations 0.51 ms (116: 104 in round trips" in f.message
    assert f.data["reorders_by_role_per_iteration"]["weight_gradient"] == 20
    assert f.message.index("weights 10.2 ms") < f.message.index("activations 0.51 ms")


def test_round_trips_dominate_bf16_autocast() -> None:
    """Activations are 0.234 of 0.250 ms of reorders a step (HAND in test_training_step)."""
    f = finding("convnet_bf16_autocast_train.log", "reorder-overhead")
    assert f is not None and f.data["dominant_cause"] == "activation round trips"
    assert "channels_last" in f.fix


def test_both_activation_counts_are_one_fact() -> None:
    """reorder-overhead and layout-round-trip count the same 116 activation reorders."""
    over = finding("resnet18_nchw_train.log", "reorder-overhead")
    trip = finding("resnet18_nchw_train.log", "layout-round-trip")
    assert over is not None and trip is not None
    counts = over.data["reorders_by_role_per_iteration"]
    assert sum(v for k, v in counts.items() if k.startswith("activation")) == 116
    assert trip.data["activation_reorders"] == 116 and trip.data["round_trip_reorders"] == 104
    assert "116 activation reorders per iteration (104 in round trips" in trip.message
    assert "6 one-way conversions" in trip.message and "6 same-layout copies" in trip.message
