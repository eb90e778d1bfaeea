"""The training step of the recorded training logs against hand counts of their text.

The logs, their step boundaries and the counting program (``steps.py``: every exec line's
pass or reorder role, from prop_kind, weight dims and layouts) are in
``tests/data/training_hand_counts.md``. dnnlens's typical iteration is per position of a
step (the k-th exec line of a step, its median over the steady steps 2..N), so the hand
counts here are per position too: ``steps.py`` with these lines appended, run as in the
hand-count file (``python3 steps.py LOG STEP_START_REGEX 1``)::

    by_step = defaultdict(list)
    for r in rows:
        by_step[r["step"]].append(r)
    pos, pos_n = defaultdict(float), defaultdict(int)
    for k, first in enumerate(by_step[warm + 1]):
        pos[first["role"]] += st.median(by_step[s][k]["ms"] for s in steady)
        pos_n[first["role"]] += 1
    print(" ".join(f"{c}={pos[c]:.6f}/{pos_n[c]}" for c in COLS), f"{sum(pos.values()):.6f}")

which prints, per role, the ms and the exec lines of a step (every step has the same lines
in the same order: 234, 118, 14, 42 and 15 per step). Those are the figures of ``HAND``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.training import PARTS
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_logs"

#: Hand counts per position: role -> (ms, exec lines per step); hand-count names:
#: fwd, bwd_data, bwd_weights, backward, w_fwd, w_bwd_data, w_grad, act, other.
HAND = {
    "resnet18_nchw_train.log": {
        "forward": (2.896485, 20),
        "backward_data": (2.843506, 19),
        "backward_weights": (3.478269, 20),
        "reorder_weight_forward": (2.249024, 20),
        "reorder_weight_backward_data": (2.313966, 19),
        "reorder_weight_gradient": (5.660650, 20),
        "reorder_activation": (0.507569, 116),
        "total": (19.949470, 234),
    },
    "resnet18_cl_train.log": {
        "forward": (3.392090, 20),
        "backward_data": (3.305419, 19),
        "backward_weights": (3.656496, 20),
        "reorder_weight_forward": (3.612548, 20),
        "reorder_weight_backward_data": (3.212401, 19),
        "reorder_weight_gradient": (2.439696, 20),
        "total": (19.618649, 118),
    },
    "lstm_train.log": {
        "forward": (0.102051, 2),
        "backward": (0.177490, 2),
        "reorder_weight_forward": (0.011963, 4),
        "reorder_weight_gradient": (0.016846, 6),
        "total": (0.308350, 14),
    },
    "convnet_bf16_autocast_train.log": {
        "forward": (0.098389, 4),
        "backward_data": (0.086670, 3),
        "backward_weights": (0.108154, 4),
        "reorder_weight_forward": (0.007080, 4),
        "reorder_weight_backward_data": (0.003906, 3),
        "reorder_weight_gradient": (0.004883, 4),
        "reorder_activation": (0.234131, 20),
        "total": (0.543213, 42),
    },
    "keras_cnn_train.log": {
        "forward": (0.429200, 4),
        "backward_data": (0.303955, 2),
        "backward_weights": (0.386230, 2),
        "reorder_weight_forward": (0.040039, 2),
        "reorder_weight_backward_data": (0.031982, 1),
        "reorder_weight_gradient": (0.034180, 2),
        "other": (0.006836, 2),
        "total": (1.232421, 15),
    },
}
#: Steady steps: steps run (``done: ... passes=N``) minus the one warm-up step.
STEADY = {
    "resnet18_nchw_train.log": 9,
    "resnet18_cl_train.log": 9,
    "lstm_train.log": 10,
    "convnet_bf16_autocast_train.log": 5,
    "keras_cnn_train.log": 11,
}
# printed with 6 decimals
TOL = 2e-6


@cache
def analysis(name: str) -> Analysis:
    return Analysis(load([str(S / name)]))


@pytest.mark.parametrize("name", sorted(HAND))
def test_step_parts_equal_the_hand_counts(name: str) -> None:
    step = analysis(name).training
    assert step is not None and step.steady_steps == STEADY[name]
    hand = HAND[name]
    for part_name, _, _ in PARTS:
        part = step.part(part_name)
        ms, lines = hand.get(part_name, (0.0, 0))
        assert part.ms == pytest.approx(ms, abs=TOL), part_name
        assert part.per_step == lines, part_name
    total_ms, total_lines = hand["total"]
    assert step.step_ms == pytest.approx(total_ms, abs=TOL)
    assert sum(p.per_step for p in step.parts) == total_lines


@pytest.mark.parametrize("name", sorted(HAND))
def test_the_parts_add_up_to_the_typical_step(name: str) -> None:
    a = analysis(name)
    step = a.training
    assert step is not None
    assert sum(p.ms for p in step.parts) == pytest.approx(a.typical_iteration_ms, rel=1e-12)
    assert step.step_ms == a.typical_iteration_ms


def test_backward_over_forward() -> None:
    """Per position (the HAND figures): (bwd_data + bwd_weights + backward) / fwd."""
    for name, hand in HAND.items():
        bwd = sum(hand.get(k, (0.0, 0))[0] for k in ("backward_data", "backward_weights"))
        bwd += hand.get("backward", (0.0, 0))[0]
        step = analysis(name).training
        assert step is not None
        assert step.backward_forward_ratio == pytest.approx(bwd / hand["forward"][0], rel=1e-5)
    # resnet18 NCHW: 2.18 per position (2.221 as the ratio of the per-step means)
    nchw = analysis("resnet18_nchw_train.log").training
    assert nchw is not None and nchw.backward_forward_ratio == pytest.approx(2.1826, abs=1e-4)


def test_activation_roles_of_resnet18_nchw() -> None:
    """The 116 activation reorders of a step: 104 round trips between abcd and aBcd16b,
    6 one-way abcd -> acdb and 6 same-layout acdb -> acdb copies (before and after the
    strided backward-data convolutions). Counted in the second step (lines 478-945)::

        awk -F, 'NR>=478 && NR<946 && $4=="exec" && $6=="reorder" && $(NF-1) ~ /^4x/' \\
            resnet18_nchw_train.log | wc -l                                      # 116
        ... | grep -c 'src:f32::blocked:abcd::f0 dst:f32::blocked:acdb::f0'      # 6
        ... | grep -c 'src:f32::blocked:acdb::f0 dst:f32::blocked:acdb::f0'      # 6
    """
    part = analysis("resnet18_nchw_train.log").reorder_part
    assert part.count_by_role["activation_round_trip"] == 104
    assert part.count_by_role["activation_one_way"] == 6
    assert part.count_by_role["activation_copy"] == 6
    r = analysis("resnet18_nchw_train.log").reorders
    one_way = r[r["role"] == "activation_one_way"]
    copies = r[r["role"] == "activation_copy"]
    assert set(zip(one_way["src_layout"], one_way["dst_layout"], strict=True)) == {("abcd", "acdb")}
    assert set(zip(copies["src_layout"], copies["dst_layout"], strict=True)) == {("acdb", "acdb")}


def test_lstm_bias_gradient_is_a_weight_gradient() -> None:
    """The per-layer ``abcd -> abcd`` copy of dims 1x1x4x64 has the dims of the LSTM bias
    and of a hidden state at batch 4; the hand-count file settles it with a batch-8 run:
    it is ``diff_bias`` going back. The graph reads it from the rnn's ``diff_bias`` slot."""
    r = analysis("lstm_train.log").reorders
    copy = r[r["dims"] == "1x1x4x64"]
    assert len(copy) == 2 and set(copy["role"]) == {"weight_gradient"}


@pytest.mark.parametrize(
    "name", ["convnet_nchw_infer.log", "convnet_cl_infer.log", "lstm_infer.log"]
)
def test_inference_logs_have_no_training_step(name: str) -> None:
    a = analysis(name)
    assert a.training is None
    roles = set(a.reorders["role"])
    assert not roles & {"weight_backward_data", "weight_gradient"}
