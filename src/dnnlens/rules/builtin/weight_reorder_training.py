"""DL013 weight-reorder-training."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.analysis.training import StepPart
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._reorder_causes import WEIGHTS_TRAINING_FIX
from dnnlens.rules.builtin._util import FixedByProducer, ms, producer_fix
from dnnlens.rules.context import RuleContext

#: Weight roles of the op graph's reorders, the step part that holds each, and its words.
ROLES = (
    ("weight_forward", "reorder_weight_forward", "for forward"),
    ("weight_backward_data", "reorder_weight_backward_data", "for backward-data"),
    ("weight_gradient", "reorder_weight_gradient", "gradients back to the framework's layout"),
    ("weight", "reorder_weight", "for a pass the log does not tell"),
)
EVIDENCE_SHOWN = 4
#: The fix of a finding about an RNN's weight reorders alone (class doc).
RNN_FIX = (
    "None to make: PyTorch hands oneDNN's rnn primitive its weights as plain parameters on "
    "every call (aten/src/ATen/native/mkldnn/RNN.cpp), one reorder per weight and call "
    "whatever the batch; the time is reported, not blamed"
)


class WeightReorderTraining(FixedByProducer):
    """Weights are reordered on every training step.

    In training the weights change every step, and eager frameworks keep them in their own
    plain layout (oihw, ohwi in channels_last, TensorFlow's hwio): each step oneDNN reorders
    every weight into its blocked layout for the forward pass, again (transposed) for the
    backward-data pass, and reorders each weight gradient from its blocked layout back to
    the framework's. The op graph tells these apart by the slot and prop_kind of the
    primitive each reorder feeds or reads. The cost is those reorders' part of the typical
    step; a weight reorder costs the same whatever the batch, so it weighs most on small
    batches.

    What keeps weights in oneDNN's layout across steps, checked in the frameworks' own
    source. PyTorch (2.13, 2.14): nothing, for trainable weights. ``torch.compile`` prepacks
    weights only when freezing, and freezes only without grad
    (``torch/_inductor/compile_fx.py``: ``if config.freezing and not
    torch.is_grad_enabled()``; ``torch/_inductor/config.py``: "After freezing, weights can
    no longer be updated"); ``torch.utils.mkldnn.to_mkldnn`` makes the weights buffers
    (``torch/utils/mkldnn.py``), for inference; channels_last still reorders every weight
    (from ohwi) and every gradient (back to oihw), and so does a ``torch.compile``d training
    step (torch 2.13.0, inductor, ``ONEDNN_VERBOSE=1``: every step reorders each convolution
    weight for forward and backward-data and its gradient back). TensorFlow 2.21: its oneDNN
    kernels cache a reordered weight only when it is a constant (``CacheWeight`` under
    ``is_weight_const_``, set from the ``is_filter_const`` attribute or
    ``TF_ONEDNN_ASSUME_FROZEN_WEIGHTS``, in ``tensorflow/core/kernels/mkl/``), which a
    trained variable is not. Intel Extension for PyTorch's ``ipex.optimize(model,
    optimizer=...)`` prepacked weights with the optimizer, but it is end-of-life, and a
    recording of IPEX 2.8 on an AVX2 machine (not in this repository) reordered its
    prepacked weights on every step, about 70% of the step: it is not recommended.

    What the recordings show (``sample_logs/``, ``sample_logs/producers/``; the training logs
    made on a 2-core AVX-512 BF16 machine): torchvision resnet18 has 59 weight reorders a step
    in NCHW and in channels_last, a small convnet 11 in fp32 and in bf16 autocast. At batch 16
    instead of 4 the reorders are the same and their time grows far less than the compute's:
    resnet18 in channels_last 9.3 ms of a 19.6 ms step (47%) at batch 4, 13.6 of 53.1 ms (26%)
    at batch 16; the Keras CNN 0.106 of 1.23 ms (8.6%), 0.132 of 4.33 ms (3.0%).

    Saving (``unknown``): no recorded fix removes these reorders from a training step; a
    larger batch spreads them over more samples (a smaller share) but does not shorten
    the step, so the finding ranks by its time after the findings whose saving is known.

    **Weights of oneDNN's RNN primitive: info, not a warning.** An ``nn.LSTM`` (``GRU``,
    ``RNN``) trained on the CPU runs oneDNN's rnn primitive through
    ``aten::mkldnn_rnn_layer``, which hands oneDNN a view of each plain parameter
    (``get_mkldnn_tensor(weight_ih, rnn.weights_layer_desc(...))``, format ``ldgoi``, the
    parameter's own ``[4*hidden, input]`` storage; ``aten/src/ATen/native/mkldnn/RNN.cpp``)
    on every call, forward and backward, and allocates the weight gradients the same plain
    way (``at::empty(weight_ih.sizes(), ...)``); ideep's ``lstm_forward_training`` and
    ``lstm_backward`` reorder them into and out of the primitive's own layout (``ldigo`` in
    the log: ``abdec->abcde`` and back). Nothing in PyTorch passes the RNN a weight already
    in that layout for training: the op takes ordinary tensors, there is no RNN
    counterpart of ``mkldnn_reorder_conv2d_weight``, and a larger batch does not change the
    count (one reorder per weight per call). The reorders a weight of an rnn primitive
    makes (the reorder's producer or consumer is an ``rnn`` node of the op graph) are
    therefore left out of the warning: when they are all there is, the finding is ``info``
    and says why (``sample_logs/lstm_train.log``: 10 a step, 9% of the step, all of the
    LSTM's); beside other weight reorders, the warning counts the others only and says
    how many of the RNN's it left out (``rnn_weight_reorder_ms_per_step`` in ``data``;
    ``tests/data/alarms/conv_lstm_train.log``, a Conv1d before an LSTM: the conv weight's 2
    reorders a step warn, the LSTM's 6 are left out).

    Fix: give each step more work per weight: a larger batch per step, where the training
    allows it; gradient accumulation does not help, every micro-batch's forward and backward
    reorder again. Neither channels_last nor bf16 autocast removes these reorders; freezing,
    ``to_mkldnn`` or a frozen graph stop the weights from training. Each program's terms
    follow.
    """

    name = "weight-reorder-training"
    code = "DL013"
    part_of = "reorder-overhead"
    severity = "warning"
    defaults = {"min_share": 0.01}
    fixes = (("", WEIGHTS_TRAINING_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        step = ctx.analysis.training
        if step is None or not ctx.iterations.found:
            return
        per_step = step.weight_reorder_ms
        share = step.share(per_step)
        if per_step <= 0 or share is None or share < self.options["min_share"]:
            return
        parts = [(role, step.part(part), words) for role, part, words in ROLES]
        r = ctx.reorders
        rows = r[r["role"].isin([role for role, _, _ in ROLES]) & (r["iter_ms"] > 0)]
        of_rnn = _of_rnn(ctx, rows)
        severity = None
        fix = producer_fix(ctx, WEIGHTS_TRAINING_FIX)
        rnn_note = ""
        rnn_ms = 0.0
        if of_rnn.any():
            rnn_rows, others = rows[of_rnn], rows[~of_rnn]
            rnn_ms = min(float(rnn_rows["iter_ms"].sum()), per_step)
            rnn_count = float(rnn_rows["per_iteration"].sum())
            why = (
                "PyTorch hands oneDNN's rnn primitive its weights as plain parameters on "
                "every call: no setting of PyTorch keeps them in the primitive's layout for "
                "training"
            )
            rnn_note = f"; {rnn_count:g} of them ({ms(rnn_ms)}) are an RNN's weights: {why}"
            if (step.share(per_step - rnn_ms) or 0.0) >= self.options["min_share"]:
                rows = others  # the warning is about the others
                per_step -= rnn_ms
                parts = _parts_of(others)
                rnn_note = (
                    f"; besides these, {rnn_count:g} reorders of an RNN's weights "
                    f"({ms(rnn_ms)}) are left out: {why}"
                )
            else:
                severity = "info"
                fix = RNN_FIX
        present = [(role, p, words) for role, p, words in parts if p.per_step > 0]
        count = sum(p.per_step for _, p, _ in present)
        split = ", ".join(
            f"{p.per_step:g} {words} ({ms(p.ms)}{_largest(rows, role)})"
            for role, p, words in present
        )
        msg = (
            f"{count:g} weight reorders in every steady training step (over "
            f"{step.steady_steps} steps): {split}; {ctx.cost_text(per_step)}{rnn_note}"
        )
        yield self.finding(
            msg,
            _evidence(rows, [role for role, _, _ in present]),
            severity=severity,
            fix=fix,
            impact_ms=per_step,
            saving=Saving.unknown(
                "no recorded fix removes a training step's weight reorders; a larger batch "
                "only spreads them over more samples"
            ),
            data={
                "share": ctx.share(per_step),
                "share_of_onednn_iteration": share,
                "weight_reorder_ms_per_step": per_step,
                "step_ms": step.step_ms,
                "weight_reorders_per_step": count,
                "steps": step.steady_steps,
                "by_role": {
                    role: {
                        "per_step": p.per_step,
                        "ms": p.ms,
                        "share_of_onednn_iteration": step.share(p.ms),
                    }
                    for role, p, _ in present
                },
                "reorders": [
                    {
                        "role": str(x.role),
                        "dims": str(x.dims),
                        "layouts": f"{x.src_layout}->{x.dst_layout}",
                        "ms_per_step": float(x.iter_ms),
                        "line": f"{x.path}:{int(x.line)}",
                    }
                    for x in rows.itertuples(index=False)
                ],
                "producer": ctx.producer.to_json(),
                "rnn_weight_reorder_ms_per_step": rnn_ms,
                **({"graded_by": "no fix"} if severity == "info" else {}),
            },
        )


def _of_rnn(ctx: RuleContext, rows: pd.DataFrame) -> pd.Series:
    """Which of the weight reorders ``rows`` feed or read an ``rnn`` node of the op graph."""
    nodes = ctx.analysis.graph.nodes
    rnn = set(nodes.loc[nodes["kind"] == "rnn", "node"].astype(str))
    if not rnn:
        return pd.Series(False, index=rows.index)
    return rows["consumer"].astype(str).isin(rnn) | rows["producer"].astype(str).isin(rnn)


def _parts_of(rows: pd.DataFrame) -> list[tuple[str, StepPart, str]]:
    """The weight roles of ``rows`` as step parts (their ms and calls per step)."""
    out = []
    for role, part, words in ROLES:
        mine = rows[rows["role"] == role]
        out.append(
            (
                role,
                StepPart(
                    part,
                    "",
                    words,
                    float(mine["iter_ms"].sum()),
                    float(mine["per_iteration"].sum()),
                ),
                words,
            )
        )
    return out


def _largest(rows: pd.DataFrame, role: str) -> str:
    """``; largest 512x512x3x3 abcd->ABcd16b16a 0.54 ms`` for the costliest reorder of a role."""
    mine = rows[rows["role"] == role]
    if mine.empty:
        return ""
    top = mine.sort_values("iter_ms", ascending=False, kind="stable").iloc[0]
    return f"; largest {top['dims']} {top['src_layout']}->{top['dst_layout']} {ms(top['iter_ms'])}"


def _evidence(rows: pd.DataFrame, roles: list[str]) -> list[Evidence]:
    """The costliest reorder line of each role first, then the next costliest."""
    ranked = rows.sort_values("iter_ms", ascending=False, kind="stable")
    role_of = [str(r) for r in ranked["role"].tolist()]
    nodes, paths, lines = (ranked[c].tolist() for c in ("node", "path", "line"))
    firsts = [role_of.index(role) for role in roles if role in role_of]
    shown: list[Evidence] = []
    seen: set[object] = set()
    for i in [*firsts, *range(len(ranked))]:  # a few dozen rows: plain lists, no frames
        if nodes[i] not in seen and len(shown) < EVIDENCE_SHOWN:
            seen.add(nodes[i])
            shown.append(Evidence(str(paths[i]), int(lines[i])))
    return shown
