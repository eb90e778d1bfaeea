"""Record real oneDNN verbose logs of ordinary runs whose iterations are hard to find.

Each recording is one small, seeded program that runs its model for a known number of passes
(inference) or steps (training) and prints **one line of its own after every pass**, as real
training scripts do (``iter 3/13 ...``, ``Epoch 1 Step 3/6 - loss: ...``, a Keras callback's
``batch 3 end ...``).  Those step lines are the ground truth the iteration finder is checked
against: the exec lines between two step lines are one pass.  The programs cover five
situations in which finding the passes from the exec stream alone is hard:

* ``create_every_exec``: ``ONEDNN_PRIMITIVE_CACHE_CAPACITY=0`` with ``ONEDNN_VERBOSE=2``, so
  every exec line is preceded by the create line of a freshly made primitive;
* ``dynamic_shapes``: the batch (or the sequence length) changes from pass to pass and a small
  primitive cache makes every pass re-create its primitives;
* ``repeated_layers``: transformer encoders whose identical layers repeat the same primitive
  sequence several times inside one pass;
* ``tf_gemm_api``: TensorFlow with ``TF_ENABLE_ONEDNN_OPTS=0``, where only oneDNN's
  ``gemm_api`` lines (Eigen's matrix products) are printed;
* ``keras_fit``: Keras ``model.fit`` with ``TF_ENABLE_ONEDNN_OPTS=1`` and a callback printing
  each step.

Every recording runs in a fresh child process (this script re-invoked with ``--child NAME``) so
that oneDNN reads its environment (``ONEDNN_VERBOSE``, ``ONEDNN_PRIMITIVE_CACHE_CAPACITY``) at
start-up and prints its header.  Inherited ``ONEDNN_``/``DNNL_``/``MKLDNN_``/``TF_``/``KERAS_``
variables are scrubbed.  The child's stdout and stderr go into one log, as ``python train.py >
run.log 2>&1`` would.  Step lines are written with ``print(..., flush=True)`` on a buffered
stdout (``PYTHONUNBUFFERED`` is *not* set: unbuffered, ``print`` issues the text and its newline
as two writes, between which a TensorFlow pool thread could print a oneDNN line); oneDNN
flushes its own stdout after every line.  A log over ``GZIP_ABOVE_BYTES`` is stored gzipped
(dnnlens reads ``.log.gz``).  The 2-thread programs on a 2-core machine measure mostly
other processes when those are busy, so each program waits for a quiet moment and runs up to
``--attempts`` times until other processes used at most ``--max-others`` of the CPUs during the
run (see :class:`Quiet`); the quietest run is kept and the manifest gives the share measured.

``MANIFEST.json`` names, per recording, the command, environment, versions, model, passes,
warm-up passes the program ran, the regex of its step lines, and a ``hand_count`` computed
here with plain Python over the log text (no dnnlens): the number of step lines and, per step,
the sum of the exec times (last comma field of each exec line) of the exec lines between
consecutive step lines, the lines before the first step line belonging to step 1.
``tests/test_iteration_recordings.py`` re-derives it with its own parser.

Interpreters (``--python``, repeatable; each recording runs under the first one that has its
pinned packages): ``torch==2.13.0`` (CPU build, oneDNN 3.12) for the PyTorch recordings and
``tensorflow-cpu==2.21.0`` (Keras 3, oneDNN 3.7, threadpool runtime) for the TensorFlow ones.
The bf16 recordings need a CPU with avx512_bf16 (or AMX), where PyTorch takes its mkldnn bf16
path; elsewhere their logs hold few oneDNN lines.  Usage::

    python3 scripts/make_iteration_logs.py --python /work/venvs/T213/bin/python \\
        --python /work/venvs/TF/bin/python                  # all into sample_logs/iterations/
    python3 scripts/make_iteration_logs.py --python T213/bin/python --only convnet_nocache
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_sample_logs import (  # noqa: E402  (the sibling script: one copy of these helpers)
    _SCRUBBED_PREFIXES,
    Interpreter,
    header_facts,
    probe_interpreter,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_logs" / "iterations"
MANIFEST_NAME = "MANIFEST.json"
SEED = 0
NUM_THREADS = 2
# Logs stay plain text up to this size so a reader can open them; larger ones are gzipped to
# keep the repository small (the brief: "ideally < 300 KB").
GZIP_ABOVE_BYTES = 300_000


TORCH_213 = ("torch==2.13.0",)
TF_CPU = ("tensorflow-cpu==2.21.0",)
RECORDED_PACKAGES = ("torch", "numpy", "tensorflow-cpu", "keras")

_TF_ENV = {"KERAS_BACKEND": "tensorflow"}


@dataclass(frozen=True)
class Recording:
    """One program run: what it runs, with which environment, and how its step lines read."""

    name: str  # the log's file stem
    group: str  # which hard case it belongs to (see the module docstring)
    description: str
    model: str
    model_input: str
    framework: str  # "torch" or "tensorflow"
    mode: str  # "infer" or "train"
    dtype: str
    warmup: int  # passes the program runs before its timed ones (counted in ``steps``)
    steps: int  # every pass/step the program runs, warm-up included
    step_line: str  # regex (re.fullmatch) of the program's own line printed after each step
    env: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = TORCH_213


# --------------------------------------------------------------------------------------------
# Child side: the programs.  torch / tensorflow are imported only here.
# --------------------------------------------------------------------------------------------


def _say(line: str) -> None:
    """Print one program line in one write, flushed, so it lands between oneDNN's lines."""
    print(line, flush=True)


def _torch_setup():
    """Import torch, fix its threads and seed; return the module."""
    import torch

    torch.set_num_threads(NUM_THREADS)
    torch.manual_seed(SEED)
    return torch


def _small_resnet():
    """The conv net of ``scripts/make_sample_logs.py``: conv-bn-relu blocks, a residual add."""
    import torch
    from torch import nn

    def conv_bn_relu(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    class SmallResNet(nn.Module):
        """Stem, maxpool, one residual block, strided conv, global average pool, linear."""

        def __init__(self) -> None:
            super().__init__()
            self.stem = conv_bn_relu(3, 16)
            self.pool = nn.MaxPool2d(2)
            self.block_a = conv_bn_relu(16, 16)
            self.block_b = nn.Sequential(
                nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
            )
            self.relu = nn.ReLU(inplace=True)
            self.down = conv_bn_relu(16, 32, stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            x = self.pool(self.stem(x))
            x = self.relu(self.block_b(self.block_a(x)) + x)
            x = self.avgpool(self.down(x))
            return self.fc(torch.flatten(x, 1))

    return SmallResNet()


def _bert_like(layers: int, hidden: int, heads: int, ffn: int, vocab: int, max_len: int):
    """A BERT-style encoder written with nn.Linear/LayerNorm/softmax, with a classifier head."""
    import math

    import torch
    from torch import nn

    class Layer(nn.Module):
        """Self-attention (separate q/k/v projections) and a GELU feed-forward, post-norm."""

        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(hidden, hidden)
            self.k = nn.Linear(hidden, hidden)
            self.v = nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)
            self.norm1 = nn.LayerNorm(hidden)
            self.up = nn.Linear(hidden, ffn)
            self.down = nn.Linear(ffn, hidden)
            self.norm2 = nn.LayerNorm(hidden)

        def forward(self, x):
            b, t, _ = x.shape
            d = hidden // heads

            def split(y):
                return y.view(b, t, heads, d).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            ctx = ctx.transpose(1, 2).reshape(b, t, hidden)
            x = self.norm1(x + self.o(ctx))
            return self.norm2(x + self.down(nn.functional.gelu(self.up(x))))

    class BertLike(nn.Module):
        """Token + position embeddings, ``layers`` encoder layers, tanh pooler, classifier."""

        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_len, hidden)
            self.norm = nn.LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)
            self.classifier = nn.Linear(hidden, 2)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1])
            x = self.norm(self.tok(ids) + self.pos(positions))
            for layer in self.layers:
                x = layer(x)
            return self.classifier(torch.tanh(self.pooler(x[:, 0])))

    return BertLike()


def _torch_encoder(layers: int, d_model: int, heads: int, ffn: int):
    """``nn.TransformerEncoder`` of identical ``nn.TransformerEncoderLayer`` and a linear head."""
    from torch import nn

    class Encoder(nn.Module):
        """PyTorch's own encoder layers (their fused inference path), mean-pooled, a head."""

        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(
                d_model, heads, ffn, dropout=0.0, batch_first=True, activation="gelu"
            )
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, 10)

        def forward(self, x):
            return self.head(self.encoder(x).mean(dim=1))

    return Encoder()


def child_convnet_nocache(rec: Recording) -> None:
    """Conv net inference, batch 4 of 3x64x64; the env sets the primitive cache to 0."""
    torch = _torch_setup()
    model = _small_resnet().eval()
    x = torch.randn(4, 3, 64, 64)
    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model(x)
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"iter {i}/{rec.steps} out_mean {out.mean().item():.4f} time {ms:.2f} ms")


def child_lstm_nocache(rec: Recording) -> None:
    """3-layer LSTM inference on seq 30, batch 8; the env sets the primitive cache to 0."""
    torch = _torch_setup()
    from torch import nn

    lstm = nn.LSTM(input_size=40, hidden_size=96, num_layers=3).eval()
    head = nn.Linear(96, 5).eval()
    x = torch.randn(30, 8, 40)
    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        with torch.no_grad():
            out, _ = lstm(x)
            logits = head(out[-1])
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"[infer] batch {i} of {rec.steps} done in {ms:.3f} ms (top {logits.argmax().item()})")


CONVNET_BATCHES = [2 + i % 8 for i in range(17)]  # 2, 3, ..., 9, 2, 3, ..., 9, 2


def child_convnet_dynbatch(rec: Recording) -> None:
    """Conv net inference whose batch cycles 2..9 from pass to pass (a serving loop)."""
    torch = _torch_setup()
    model = _small_resnet().eval()
    inputs = [torch.randn(b, 3, 64, 64) for b in CONVNET_BATCHES[: rec.steps]]
    for i, x in enumerate(inputs, start=1):
        t0 = time.perf_counter()
        with torch.no_grad():
            model(x)
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"pass {i}/{rec.steps} batch={x.shape[0]} time {ms:.2f} ms")


ENCODER_SEQ_LENS = [16, 24, 32, 40, 48, 56] * 3  # bucketed sequence lengths, cycled


def child_encoder_dynseq(rec: Recording) -> None:
    """bf16-autocast encoder inference, batch 4, the sequence length cycling over buckets."""
    torch = _torch_setup()
    model = _torch_encoder(layers=2, d_model=64, heads=4, ffn=128).eval()
    inputs = [torch.randn(4, t, 64) for t in ENCODER_SEQ_LENS[: rec.steps]]
    for i, x in enumerate(inputs, start=1):
        t0 = time.perf_counter()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            model(x)
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"Step {i} | seq_len {x.shape[1]} | {ms:.2f} ms")


def child_bert_bf16_infer(rec: Recording) -> None:
    """BERT-style encoder, 4 layers, bf16 autocast inference on batch 4 of 32 tokens."""
    torch = _torch_setup()
    model = _bert_like(layers=4, hidden=128, heads=4, ffn=512, vocab=2000, max_len=64).eval()
    ids = torch.randint(0, 2000, (4, 32))
    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(ids)
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"it {i}/{rec.steps} logits_mean={logits.float().mean().item():.4f} {ms:.2f}ms")


def child_encoder6_fp32_infer(rec: Recording) -> None:
    """6 ``nn.TransformerEncoderLayer``, fp32 with matmul precision "medium" (bf16 matmuls)."""
    torch = _torch_setup()
    torch.set_float32_matmul_precision("medium")
    model = _torch_encoder(layers=6, d_model=96, heads=4, ffn=256).eval()
    x = torch.randn(4, 24, 96)
    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        with torch.no_grad():
            model(x)
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"eval step {i}: {ms:.3f} ms")


def child_bert_bf16_train(rec: Recording) -> None:
    """BERT-style encoder, 4 layers, bf16 autocast training (SGD) on one fixed batch."""
    torch = _torch_setup()
    model = _bert_like(layers=4, hidden=96, heads=4, ffn=384, vocab=1000, max_len=32).train()
    for m in model.modules():  # no dropout in this model; train() only for realism
        m.train()
    ids = torch.randint(0, 1000, (8, 24))
    labels = torch.randint(0, 2, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(model(ids), labels)
        loss.backward()
        opt.step()
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"Epoch 1 Step {i}/{rec.steps} loss {loss.item():.4f} time {ms:.2f} ms")


def _tf_setup():
    """Import TensorFlow with 2 intra-op and 1 inter-op threads, seeded; return the module."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(NUM_THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(SEED)
    return tf


def child_tf_mlp_loop(rec: Recording) -> None:
    """Keras MLP trained with a custom ``tf.function`` GradientTape loop on one fixed batch."""
    tf = _tf_setup()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((64,)),
            layers.Dense(256, activation="relu"),
            layers.Dense(128, activation="relu"),
            layers.Dense(10),
        ]
    )
    opt = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.random.normal((32, 64), seed=SEED)
    y = tf.random.uniform((32,), 0, 10, dtype=tf.int32, seed=SEED)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    for i in range(1, rec.steps + 1):
        t0 = time.perf_counter()
        loss = float(train_step(x, y))  # float() waits for the step's result
        ms = (time.perf_counter() - t0) * 1e3
        _say(f"step {i}/{rec.steps} loss {loss:.4f} time {ms:.2f} ms")


def _keras_step_printer(tf, fmt: Callable[[int, int, float, float], str]):
    """A Keras callback printing one line per train batch: ``fmt(epoch, batch, loss, ms)``."""

    class StepPrinter(tf.keras.callbacks.Callback):
        """Times each train batch and prints the program's step line after it."""

        epoch = 0
        t0 = 0.0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_begin(self, batch, logs=None):
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            loss = float((logs or {}).get("loss", float("nan")))
            ms = (time.perf_counter() - self.t0) * 1e3
            _say(fmt(self.epoch, batch, loss, ms))

    return StepPrinter()


def child_tf_lstm_fit(rec: Recording) -> None:
    """Keras LSTM classifier, ``model.fit`` one epoch; without oneDNN ops only gemm_api lines."""
    import numpy as np

    tf = _tf_setup()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((12, 16)),
            layers.LSTM(32),
            layers.Dense(16, activation="relu"),
            layers.Dense(4),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    rng = np.random.default_rng(SEED)
    batch = 8
    x = rng.standard_normal((batch * rec.steps, 12, 16), dtype=np.float32)
    y = rng.integers(0, 4, batch * rec.steps)
    printer = _keras_step_printer(tf, lambda e, b, loss, ms: f"batch {b} end loss={loss:.4f}")
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[printer])


def child_tf_cnn_fit(rec: Recording) -> None:
    """Keras CNN, ``model.fit`` one epoch; without oneDNN ops Eigen's convolutions are gemms."""
    import numpy as np

    tf = _tf_setup()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((32, 32, 3)),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((4 * rec.steps, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, 4 * rec.steps)
    printer = _keras_step_printer(
        tf, lambda e, b, loss, ms: f"[epoch {e}] step {b:02d} done, loss {loss:.3f}, {ms:.2f} ms"
    )
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[printer])


def child_keras_cnn_fit(rec: Recording) -> None:
    """Small Keras CNN, ``model.fit`` one epoch of ``steps`` batches of 4 (64x64x3, NHWC)."""
    import numpy as np

    tf = _tf_setup()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((64, 64, 3)),
            layers.Conv2D(16, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((4 * rec.steps, 64, 64, 3), dtype=np.float32)
    y = rng.integers(0, 10, 4 * rec.steps)
    printer = _keras_step_printer(
        tf, lambda e, b, loss, ms: f"train batch {b} end - loss {loss:.4f} - {ms:.1f}ms"
    )
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[printer])


TEXT_EPOCHS = 2


def child_keras_text_fit(rec: Recording) -> None:
    """Keras Embedding + Conv1D text classifier, ``model.fit`` of 2 epochs, batches of 8."""
    import numpy as np

    tf = _tf_setup()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((40,), dtype="int32"),
            layers.Embedding(500, 32),
            layers.Conv1D(48, 5, activation="relu"),
            layers.GlobalMaxPooling1D(),
            layers.Dense(24, activation="relu"),
            layers.Dense(2),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.RMSprop(1e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    per_epoch = rec.steps // TEXT_EPOCHS
    rng = np.random.default_rng(SEED)
    x = rng.integers(0, 500, (8 * per_epoch, 40)).astype(np.int32)
    y = rng.integers(0, 2, 8 * per_epoch)
    printer = _keras_step_printer(
        tf,
        lambda e, b, loss, ms: (
            f"Epoch {e + 1} Step {b + 1}/{per_epoch} - loss: {loss:.4f} - {ms:.0f}ms/step"
        ),
    )
    model.fit(x, y, batch_size=8, epochs=TEXT_EPOCHS, shuffle=False, verbose=2, callbacks=[printer])


CHILDREN: dict[str, Callable[[Recording], None]] = {
    "convnet_nocache": child_convnet_nocache,
    "lstm_nocache": child_lstm_nocache,
    "convnet_dynbatch": child_convnet_dynbatch,
    "encoder_dynseq_bf16": child_encoder_dynseq,
    "bert4_bf16_infer": child_bert_bf16_infer,
    "encoder6_fp32_infer": child_encoder6_fp32_infer,
    "bert4_bf16_train": child_bert_bf16_train,
    "tf_mlp_loop_nodnn": child_tf_mlp_loop,
    "tf_lstm_fit_nodnn": child_tf_lstm_fit,
    "tf_cnn_fit_nodnn": child_tf_cnn_fit,
    "keras_cnn_fit": child_keras_cnn_fit,
    "keras_text_fit": child_keras_text_fit,
}

_NUM = r"-?[0-9.]+|nan"
RECORDINGS: dict[str, Recording] = {
    r.name: r
    for r in [
        Recording(
            "convnet_nocache",
            "create_every_exec",
            "Conv net inference with the primitive cache off: each exec line follows the create "
            "line (create:cache_miss) of the primitive it runs.",
            "SmallResNet(conv-bn-relu stem, maxpool, residual block, strided conv, avgpool, "
            "linear)",
            "batch 4, 3x64x64, fp32 NCHW",
            "torch",
            "infer",
            "fp32",
            warmup=1,
            steps=13,
            step_line=rf"iter \d+/\d+ out_mean (?:{_NUM}) time [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "2", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"},
        ),
        Recording(
            "lstm_nocache",
            "create_every_exec",
            "3-layer LSTM inference with the primitive cache off: each rnn and reorder exec "
            "follows its create line.",
            "nn.LSTM(input 40, hidden 96, 3 layers) + Linear(96, 5) on the last step",
            "seq 30, batch 8, 40 features, fp32",
            "torch",
            "infer",
            "fp32",
            warmup=1,
            steps=13,
            step_line=r"\[infer\] batch \d+ of \d+ done in [0-9.]+ ms \(top \d+\)",
            env={"ONEDNN_VERBOSE": "2", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"},
        ),
        Recording(
            "convnet_dynbatch",
            "dynamic_shapes",
            "Conv net inference whose batch cycles 2,3,...,9,2,... (the step line names it); "
            "with a 4-entry primitive cache 10 of the 15 creates of every pass miss.",
            "SmallResNet (as convnet_nocache)",
            "batch " + ",".join(map(str, CONVNET_BATCHES)) + " (one per pass), 3x64x64, fp32",
            "torch",
            "infer",
            "fp32",
            warmup=1,
            steps=17,
            step_line=r"pass \d+/\d+ batch=(?P<shape>\d+) time [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "2", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "4"},
        ),
        Recording(
            "encoder_dynseq_bf16",
            "dynamic_shapes",
            "bf16-autocast encoder inference whose sequence length cycles 16..56 in steps of 8 "
            "(the step line names it); with an 8-entry primitive cache 8 of the 16 creates of "
            "every pass miss.",
            "nn.TransformerEncoder(2 x nn.TransformerEncoderLayer(d_model 64, 4 heads, ffn 128, "
            "gelu)), mean pool, Linear(64, 10)",
            "batch 4, seq " + ",".join(map(str, ENCODER_SEQ_LENS)) + " (one per pass), 64 features",
            "torch",
            "infer",
            "bf16_autocast",
            warmup=1,
            steps=18,
            step_line=r"Step \d+ \| seq_len (?P<shape>\d+) \| [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "2", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "8"},
        ),
        Recording(
            "bert4_bf16_infer",
            "repeated_layers",
            'BERT-style encoder inference under torch.autocast("cpu", dtype=torch.bfloat16): '
            "the 4 identical layers repeat the same 8 matmuls inside each pass.",
            "BertLike(token+position embedding, LayerNorm, 4 x [q/k/v/o Linear 128, softmax "
            "attention 4 heads, LayerNorm, Linear 128->512 GELU Linear 512->128, LayerNorm], "
            "tanh pooler, Linear(128, 2))",
            "batch 4 of 32 token ids (vocab 2000)",
            "torch",
            "infer",
            "bf16_autocast",
            warmup=1,
            steps=21,
            step_line=rf"it \d+/\d+ logits_mean=(?:{_NUM}) [0-9.]+ms",
            env={"ONEDNN_VERBOSE": "1"},
        ),
        Recording(
            "encoder6_fp32_infer",
            "repeated_layers",
            'fp32 inference with torch.set_float32_matmul_precision("medium") (oneDNN matmuls '
            "with fpmath bf16) through 6 identical nn.TransformerEncoderLayer.",
            "nn.TransformerEncoder(6 x nn.TransformerEncoderLayer(d_model 96, 4 heads, ffn 256, "
            "gelu)), mean pool, Linear(96, 10)",
            "batch 4, seq 24, 96 features, fp32",
            "torch",
            "infer",
            "fp32_matmul_medium",
            warmup=1,
            steps=16,
            step_line=r"eval step \d+: [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "1"},
        ),
        Recording(
            "bert4_bf16_train",
            "repeated_layers",
            "BERT-style encoder training under bf16 autocast (cross-entropy, backward, SGD "
            "momentum 0.9): the 4 layers repeat in the forward and again in the backward.",
            "BertLike(4 layers, hidden 96, 4 heads, ffn 384, vocab 1000), classifier 2",
            "batch 8 of 24 token ids, one fixed batch",
            "torch",
            "train",
            "bf16_autocast",
            warmup=1,
            steps=11,
            step_line=rf"Epoch 1 Step \d+/\d+ loss (?:{_NUM}) time [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "1"},
        ),
        Recording(
            "tf_mlp_loop_nodnn",
            "tf_gemm_api",
            "TensorFlow with TF_ENABLE_ONEDNN_OPTS=0: a Keras MLP trained by a custom "
            "tf.function GradientTape loop; only gemm_api lines (Eigen's matmuls) are printed.",
            "keras Sequential(Dense 256 relu, Dense 128 relu, Dense 10), SGD momentum 0.9",
            "batch 32 of 64 features, one fixed batch",
            "tensorflow",
            "train",
            "fp32",
            warmup=1,
            steps=11,
            step_line=rf"step \d+/\d+ loss (?:{_NUM}) time [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "1", "TF_ENABLE_ONEDNN_OPTS": "0", **_TF_ENV},
            requires=TF_CPU,
        ),
        Recording(
            "tf_lstm_fit_nodnn",
            "tf_gemm_api",
            "TensorFlow with TF_ENABLE_ONEDNN_OPTS=0: Keras model.fit of an LSTM classifier "
            "(one epoch); the LSTM's per-time-step matmuls repeat inside each step.",
            "keras Sequential(LSTM 32, Dense 16 relu, Dense 4), Adam",
            "batches of 8 sequences of 12 x 16 features, unshuffled",
            "tensorflow",
            "train",
            "fp32",
            warmup=1,
            steps=11,
            step_line=rf"batch \d+ end loss=(?:{_NUM})",
            env={"ONEDNN_VERBOSE": "1", "TF_ENABLE_ONEDNN_OPTS": "0", **_TF_ENV},
            requires=TF_CPU,
        ),
        Recording(
            "tf_cnn_fit_nodnn",
            "tf_gemm_api",
            "TensorFlow with TF_ENABLE_ONEDNN_OPTS=0: Keras model.fit of a small CNN (one "
            "epoch); Eigen's convolutions and their gradients call gemm_api in pieces whose "
            "order varies between steps.",
            "keras Sequential(Conv2D 16 3x3 relu, MaxPooling2D, Conv2D 32 3x3 relu, "
            "GlobalAveragePooling2D, Dense 10), Adam",
            "44 samples 32x32x3 (NHWC) in batches of 4, unshuffled",
            "tensorflow",
            "train",
            "fp32",
            warmup=1,
            steps=11,
            step_line=rf"\[epoch \d+\] step \d+ done, loss (?:{_NUM}), [0-9.]+ ms",
            env={"ONEDNN_VERBOSE": "1", "TF_ENABLE_ONEDNN_OPTS": "0", **_TF_ENV},
            requires=TF_CPU,
        ),
        Recording(
            "keras_cnn_fit",
            "keras_fit",
            "Keras model.fit of a small CNN, one epoch of 11 steps, TF_ENABLE_ONEDNN_OPTS=1; the "
            "first step traces the train function (the program's warm-up).",
            "keras Sequential(Conv2D 16 3x3 + BatchNormalization + ReLU, MaxPooling2D, Conv2D "
            "32 3x3 + BatchNormalization + ReLU, GlobalAveragePooling2D, Dense 10), SGD "
            "momentum 0.9",
            "44 samples 64x64x3 (NHWC) in batches of 4, unshuffled",
            "tensorflow",
            "train",
            "fp32",
            warmup=1,
            steps=11,
            step_line=r"train batch \d+ end - loss (?:-?[0-9.]+|nan) - [0-9.]+ms",
            env={"ONEDNN_VERBOSE": "2", "TF_ENABLE_ONEDNN_OPTS": "1", **_TF_ENV},
            requires=TF_CPU,
        ),
        Recording(
            "keras_text_fit",
            "keras_fit",
            "Keras model.fit of an Embedding + Conv1D text classifier, 2 epochs of 6 steps, "
            "TF_ENABLE_ONEDNN_OPTS=1, verbose=2 (Keras prints one line per epoch); the first "
            "step traces the train function.",
            "keras Sequential(Embedding 500x32, Conv1D 48 k5 relu, GlobalMaxPooling1D, Dense 24 "
            "relu, Dense 2), RMSprop",
            "48 sequences of 40 token ids in batches of 8, unshuffled, 2 epochs",
            "tensorflow",
            "train",
            "fp32",
            warmup=1,
            steps=12,
            step_line=rf"Epoch \d+ Step \d+/\d+ - loss: (?:{_NUM}) - \d+ms/step",
            env={"ONEDNN_VERBOSE": "2", "TF_ENABLE_ONEDNN_OPTS": "1", **_TF_ENV},
            requires=TF_CPU,
        ),
    ]
}
assert set(RECORDINGS) == set(CHILDREN)


# --------------------------------------------------------------------------------------------
# The hand count: plain Python over the log text, no dnnlens.
# --------------------------------------------------------------------------------------------

# A primitive exec line of the v1 format, with or without ONEDNN_VERBOSE_TIMESTAMP's field.
EXEC_LINE = re.compile(r"onednn_verbose,(?:[0-9.]+,)?v1,primitive,exec,")


def hand_count(lines: list[str], step_line: str, warmup: int) -> dict:
    """Steps from the step lines; per step the summed exec time of the exec lines before it.

    The exec lines up to the first step line belong to step 1, those between step line k-1
    and k to step k; exec lines after the last step line belong to no step and are counted.
    """
    step_re = re.compile(step_line)
    sums, counts = [0.0], [0]
    for raw in lines:
        line = raw.rstrip("\r\n")
        if step_re.fullmatch(line):
            sums.append(0.0)
            counts.append(0)
        elif EXEC_LINE.match(line):
            sums[-1] += float(line.rsplit(",", 1)[1])
            counts[-1] += 1
    after_last = counts.pop()
    sums.pop()
    steady = sums[warmup:]
    return {
        "steps": len(sums),
        "median_step_ms": round(statistics.median(sums), 6) if sums else None,
        "median_step_ms_after_warmup": round(statistics.median(steady), 6) if steady else None,
        "step_ms": [round(s, 6) for s in sums],
        "exec_lines_per_step": counts,
        "exec_lines_after_last_step": after_last,
    }


# --------------------------------------------------------------------------------------------
# Parent side: children, versions and the manifest.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quiet:
    """When a run's times count as the program's own.

    The programs run 2 threads on a 2-core machine: when another process holds a core, an
    OpenMP barrier waits for a preempted thread and a 0.01 ms primitive reads as a scheduler
    tick (~12 ms).  ``others``: other processes may use at most a tenth of the machine (a fifth
    of one core) during a kept run; ``busy_before``: a run starts once at most a quarter of the
    machine is busy (the one-second sample is a hint, the run's own share decides).
    """

    attempts: int = 6
    others: float = 0.10
    busy_before: float = 0.25
    max_wait_s: float = 300.0


def child_env(rec: Recording) -> tuple[dict[str, str], dict[str, str]]:
    """``(full environment, the variables set here)`` for a child."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    for name in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED"):
        env.pop(name, None)
    recorded = {"OMP_NUM_THREADS": str(NUM_THREADS), **rec.env}
    env.update(recorded)
    return env, recorded


def _cpu_ticks() -> tuple[int, int] | None:
    """``(all ticks, idle ticks)`` of the machine since boot (/proc/stat); None elsewhere."""
    try:
        ticks = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(ticks), ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait


def _children_cpu_s() -> float:
    """CPU seconds used so far by this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def busy_share(seconds: float = 1.0) -> float | None:
    """Share of the machine's CPU time that was busy over the next ``seconds``."""
    first = _cpu_ticks()
    time.sleep(seconds)
    second = _cpu_ticks()
    if first is None or second is None or second[0] == first[0]:
        return None
    return round(1.0 - (second[1] - first[1]) / (second[0] - first[0]), 3)


def wait_for_quiet(max_busy: float, max_wait_s: float) -> None:
    """Wait until at most ``max_busy`` of the machine is busy, or ``max_wait_s`` passed."""
    deadline = time.monotonic() + max_wait_s
    while time.monotonic() < deadline:
        share = busy_share()
        if share is None or share <= max_busy:
            return
        time.sleep(2.0)


def run_child(rec: Recording, interp: Interpreter, log_path: Path) -> tuple[int, float, float]:
    """Run one program into ``log_path``; ``(returncode, seconds, others' busy share)``.

    The last is the share of the machine's CPU time that other processes used meanwhile (all
    busy time minus the child's own), measured because it decides whether the times are the
    program's or a scheduler's.
    """
    env, _ = child_env(rec)
    argv = [interp.path, str(Path(__file__).resolve()), "--child", rec.name]
    ticks0, child0, start = _cpu_ticks(), _children_cpu_s(), time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.run(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=REPO_ROOT,
            check=False,
        )
    elapsed = time.monotonic() - start
    ticks1, child_s = _cpu_ticks(), _children_cpu_s() - child0
    others = float("nan")
    if ticks0 is not None and ticks1 is not None and ticks1[0] > ticks0[0]:
        hz = os.sysconf("SC_CLK_TCK")
        total_s = (ticks1[0] - ticks0[0]) / hz
        busy_s = total_s - (ticks1[1] - ticks0[1]) / hz
        others = max(0.0, busy_s - child_s) / total_s
    return proc.returncode, round(elapsed, 2), round(others, 3)


def _display(path: Path) -> str:
    """A path relative to the repository root when inside it."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def record(
    rec: Recording, out_dir: Path, interp: Interpreter, generator: str, quiet: Quiet
) -> dict:
    """Record one program (the quietest of up to ``quiet.attempts`` runs); its manifest entry.

    A run is kept at once when it exits 0 and other processes used at most ``quiet.others`` of
    the machine meanwhile; otherwise the quietest successful run so far is kept.
    """
    plain = out_dir / f"{rec.name}.log"
    attempt_log = out_dir / f"{rec.name}.attempt.log"
    best: tuple[int, float, float] | None = None
    attempts = 0
    while attempts < quiet.attempts:
        attempts += 1
        wait_for_quiet(quiet.busy_before, quiet.max_wait_s)
        rc, elapsed, others = run_child(rec, interp, attempt_log)
        if best is None or (rc == 0 and (best[0] != 0 or others < best[2])):
            attempt_log.replace(plain)
            best = (rc, elapsed, others)
        else:
            attempt_log.unlink()
        if rc == 0 and (others <= quiet.others or math.isnan(others)):  # nan: not measurable
            break
    assert best is not None
    returncode, elapsed, others = best
    _, recorded_env = child_env(rec)
    lines = plain.read_text(encoding="utf-8", errors="replace").splitlines()
    target = plain
    gz = out_dir / f"{rec.name}.log.gz"
    with contextlib.suppress(FileNotFoundError):
        gz.unlink()
    if plain.stat().st_size > GZIP_ABOVE_BYTES:
        # mtime=0 keeps the file byte-identical for identical logs
        gz.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=9, mtime=0))
        plain.unlink()
        target = gz
    header = header_facts(lines)
    shown = [
        interp.path if interp.path != sys.executable else "python3",
        _display(Path(__file__)),
        "--child",
        rec.name,
    ]
    versions = {"python": interp.python}
    versions.update({k: v for k, v in interp.packages.items() if k in RECORDED_PACKAGES})
    return {
        "file": target.name,
        "group": rec.group,
        "description": rec.description,
        "model": rec.model,
        "input": rec.model_input,
        "framework": rec.framework,
        "mode": rec.mode,
        "dtype": rec.dtype,
        "steps": rec.steps,
        "warmup_steps": rec.warmup,
        "step_line_regex": rec.step_line,
        "env": recorded_env,
        "command": " ".join(
            [f"{k}={shlex.quote(v)}" for k, v in recorded_env.items()] + [shlex.join(shown)]
        ),
        "generator_command": generator,
        "requires": list(rec.requires),
        "versions": versions,
        "onednn_version": header.get("onednn_version"),
        "isa": header.get("isa"),
        "cpu_runtime": header.get("cpu_runtime"),
        "threads": int(header["threads"]) if "threads" in header else None,
        "others_cpu_share": others,
        "attempts": attempts,
        "returncode": returncode,
        "elapsed_s": elapsed,
        "bytes": target.stat().st_size,
        "lines": len(lines),
        "onednn_verbose_lines": sum(line.startswith("onednn_verbose") for line in lines),
        "exec_lines": sum(bool(EXEC_LINE.match(line)) for line in lines),
        "hand_count": hand_count(lines, rec.step_line, rec.warmup),
    }


def write_manifest(out_dir: Path, entries: list[dict]) -> None:
    """Merge new entries into MANIFEST.json (entries of re-recorded logs replaced)."""
    path = out_dir / MANIFEST_NAME
    old: list[dict] = []
    if path.exists():
        with contextlib.suppress(ValueError, KeyError):
            old = json.loads(path.read_text())["recordings"]
    new_names = {e["name"] for e in entries}
    merged = [e for e in old if e.get("name") not in new_names] + entries
    order = list(RECORDINGS)
    merged.sort(key=lambda e: order.index(e["name"]) if e["name"] in order else len(order))
    manifest = {
        "generator": "scripts/make_iteration_logs.py",
        "seed": SEED,
        "notes": "Each program prints one line of its own after every pass/step "
        "(step_line_regex). hand_count is counted over the log text without dnnlens: steps = "
        "step lines; step_ms[k] = sum of the last comma field of the exec lines between step "
        "line k-1 and k (those before the first step line belong to step 1); medians over all "
        "steps and over the steps after the program's warm-up (warmup_steps).",
        "recordings": merged,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the selected recordings (parent) or one program (``--child``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(RECORDINGS),
        metavar="NAME",
        help="record only this one (repeatable): " + ", ".join(RECORDINGS),
    )
    parser.add_argument(
        "--python",
        action="append",
        metavar="PATH",
        help="interpreter for the children (repeatable); default: this one",
    )
    parser.add_argument(
        "--attempts", type=int, default=6, help="runs per recording at most (default 6)"
    )
    parser.add_argument(
        "--max-others",
        type=float,
        default=Quiet.others,
        help=f"keep a run at once when other processes used at most this share of the CPUs "
        f"during it (default {Quiet.others})",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=Quiet.max_wait_s,
        help=f"seconds to wait for a quiet machine before each run (default {Quiet.max_wait_s})",
    )
    parser.add_argument("--child", choices=sorted(RECORDINGS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        CHILDREN[args.child](RECORDINGS[args.child])
        return 0

    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    names = sorted(set(RECORDED_PACKAGES) | {"torch", "tensorflow-cpu"})
    interpreters = [
        probe_interpreter(p, names, "make_iteration_logs")
        for p in (args.python or [sys.executable])
    ]
    generator = shlex.join(
        ["python3", _display(Path(__file__)), *(sys.argv[1:] if argv is None else argv)]
    )
    entries, failed = [], []
    for name in args.only or list(RECORDINGS):
        rec = RECORDINGS[name]
        print(f"[make_iteration_logs] {name} ...", end=" ", flush=True)
        interp = next((i for i in interpreters if i.satisfies(rec.requires)), None)
        if interp is None:
            print(f"SKIPPED: no --python has {', '.join(rec.requires)}", flush=True)
            failed.append(name)
            continue
        quiet = Quiet(args.attempts, args.max_others, max_wait_s=args.max_wait)
        entry = {"name": name, **record(rec, out_dir, interp, generator, quiet)}
        count = entry["hand_count"]
        ok = entry["returncode"] == 0 and count["steps"] == rec.steps
        print(
            f"{'ok' if ok else 'FAILED'} rc={entry['returncode']} steps={count['steps']} "
            f"median {count['median_step_ms_after_warmup']} ms ({entry['elapsed_s']} s, "
            f"others {entry['others_cpu_share']}, attempts {entry['attempts']})",
            flush=True,
        )
        if not ok:
            failed.append(name)
        entries.append(entry)
    write_manifest(out_dir, entries)
    if failed:
        print(f"[make_iteration_logs] failed or skipped: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
