"""Record real oneDNN verbose logs of each program dnnlens names into ``sample_logs/producers/``.

dnnlens says its fixes in the terms of the program that made a log (PyTorch, TensorFlow,
OpenVINO, or oneDNN itself; ``dnnlens.analysis.producer``). These logs show what each program
prints, and each pair of them shows whether a fix works: a log with the cause, and the same
model run with the fix.

* OpenVINO 2026.4.1 (its own oneDNN fork, v3.13, threadpool runtime), a model built from
  ``openvino.opset13`` ops (``openvino.runtime`` is gone from OpenVINO 2026): a convolution
  with a bias and ReLU, max pooling, a MatMul. One convolution only: with a second one after
  the pooling the fork fails under ``ONEDNN_VERBOSE=1`` ("could not execute a primitive", on
  that convolution or on the MatMul), and runs without it. Run with the default precision
  (bf16 on a CPU with AVX-512 BF16), with ``INFERENCE_PRECISION_HINT`` f32, with the input
  declared NHWC through ``PrePostProcessor``, and with the convolution weights given as
  inputs of the model instead of constants.
* TensorFlow 2.21 (oneDNN 3.7, threadpool runtime), a small Keras CNN called through a
  ``tf.function``, with ``TF_ENABLE_ONEDNN_OPTS=1``, with ``=0`` (only Eigen's matrix
  multiplications reach oneDNN, as ``gemm_api`` lines), and with
  ``TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1``; and a Keras ``model.fit`` at batch 16 (the one of
  ``sample_logs/keras_cnn_train.log`` at batch 4).
* PyTorch: torchvision's resnet18 training in channels_last at batch 16 (the one of
  ``sample_logs/resnet18_cl_train.log`` at batch 4); the other PyTorch logs are
  ``sample_logs/``'s.
* oneDNN called by a C++ program: ``sample_logs/legacy/`` (``scripts/legacy/verbose_probe.cpp``).

Every scenario runs in a fresh child process (this script re-invoked with ``--child NAME``) so
that oneDNN reads its environment at start-up and prints its header; the child's stdout and
stderr go together into ``<scenario>.log``. Weights and inputs are random and seeded; nothing
is downloaded. The only program line is the last one, ``done: <scenario> passes=<N>``.
``MANIFEST.json`` names each file's versions, environment, header and command.

Interpreters, one per set of pins (``--python``, repeatable; each scenario runs under the first
one whose packages match): ``openvino==2026.4.1`` (``python3 -m venv OV && OV/bin/pip install
openvino==2026.4.1``), ``tensorflow-cpu==2.21.0``, ``torch==2.14.1`` with
``torchvision==0.29.1``::

    python3 scripts/make_producer_logs.py --python OV/bin/python --python TF/bin/python \\
        --python TV/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_sample_logs import (  # noqa: E402  (the sibling script: one copy of these helpers)
    _SCRUBBED_PREFIXES,
    NUM_THREADS,
    SEED,
    Interpreter,
    _count_lines,
    _display_path,
    _log_header,
    probe_interpreter,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_logs" / "producers"
MANIFEST_NAME = "MANIFEST.json"

OPENVINO = ("openvino==2026.4.1",)
TENSORFLOW = ("tensorflow-cpu==2.21.0",)
TORCH_VISION = ("torch==2.14.1", "torchvision==0.29.1")
RECORDED_PACKAGES = ("openvino", "tensorflow-cpu", "keras", "torch", "torchvision", "numpy")

_VERBOSE = {"ONEDNN_VERBOSE": "1"}
_TF = {"TF_ENABLE_ONEDNN_OPTS": "1", "KERAS_BACKEND": "tensorflow", **_VERBOSE}

OV_MODEL = (
    "ov.Model of opset13 ops: Convolution 8->16 3x3 + Add bias + Relu, MaxPool 2x2, Reshape, "
    "MatMul 4096->10; input 1x8x32x32"
)
TF_MODEL = (
    "keras Sequential(Conv2D 16 3x3 relu, MaxPooling2D, Conv2D 32 3x3 relu, MaxPooling2D, "
    "Flatten, Dense 10), called through a tf.function"
)
KERAS_FIT = (
    "keras Sequential(Conv2D 16 3x3 + BatchNormalization + ReLU, MaxPooling2D, "
    "Conv2D 32 3x3 + BatchNormalization + ReLU, GlobalAveragePooling2D, Dense 10), model.fit"
)
RESNET18 = "torchvision.models.resnet18(weights=None, num_classes=10), SGD momentum 0.9"


@dataclass(frozen=True)
class Scenario:
    """One run of a small model by one program."""

    name: str
    description: str
    producer: str  # "openvino", "tensorflow" or "pytorch"
    model: str
    requires: tuple[str, ...]
    env: dict[str, str] = field(default_factory=lambda: dict(_VERBOSE))
    warmup: int = 1
    timed: int = 10
    batch: int = 1
    options: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Model passes (inference) or optimizer steps (training), warm-up included."""
        return self.warmup + self.timed


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "openvino_cnn_infer",
            "OpenVINO CPU plugin, default precision (bf16 on a CPU with AVX-512 BF16): the "
            "f32 NCHW input is converted to bf16 NHWC on every inference; weights are "
            "constants, reordered once when the model is compiled.",
            "openvino",
            OV_MODEL,
            OPENVINO,
        ),
        Scenario(
            "openvino_cnn_f32_infer",
            "The same model with INFERENCE_PRECISION_HINT f32: the input is only reordered "
            "from NCHW to NHWC on every inference.",
            "openvino",
            OV_MODEL,
            OPENVINO,
            options={"precision": "f32"},
        ),
        Scenario(
            "openvino_cnn_nhwc_f32_infer",
            "f32, the input declared NHWC with PrePostProcessor (tensor layout NHWC, model "
            "layout NCHW) and fed in NHWC: no reorder of the input.",
            "openvino",
            OV_MODEL,
            OPENVINO,
            options={"precision": "f32", "input_layout": "NHWC"},
        ),
        Scenario(
            "openvino_weights_as_inputs_infer",
            "f32, the convolution weights given as inputs of the model (Parameters) instead of "
            "constants: the plugin reorders them on every inference.",
            "openvino",
            OV_MODEL,
            OPENVINO,
            options={"precision": "f32", "weights": "inputs"},
        ),
        Scenario(
            "tensorflow_cnn_infer",
            "TensorFlow with its oneDNN ops on (TF_ENABLE_ONEDNN_OPTS=1), inference through a "
            "tf.function: Conv2D + BiasAdd + Relu fused into one oneDNN convolution.",
            "tensorflow",
            TF_MODEL,
            TENSORFLOW,
            env=dict(_TF),
        ),
        Scenario(
            "tensorflow_cnn_noopts_infer",
            "The same with TF_ENABLE_ONEDNN_OPTS=0: Eigen runs the ops; its matrix "
            "multiplications call oneDNN's sgemm (gemm_api lines only).",
            "tensorflow",
            TF_MODEL,
            TENSORFLOW,
            env={**_TF, "TF_ENABLE_ONEDNN_OPTS": "0"},
        ),
        Scenario(
            "tensorflow_cnn_frozen_infer",
            "TF_ENABLE_ONEDNN_OPTS=1 and TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1: TensorFlow takes "
            "the weights as constants, lets oneDNN choose their layout, reorders each once and "
            "keeps it.",
            "tensorflow",
            TF_MODEL,
            TENSORFLOW,
            env={**_TF, "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"},
        ),
        Scenario(
            "tensorflow_keras_fit_b16_train",
            "keras_cnn_train of sample_logs/ at batch 16 (64 samples, 4 steps an epoch, 3 "
            "epochs, unshuffled): the same weight reorders every step, against 4 times the "
            "compute.",
            "tensorflow",
            KERAS_FIT,
            TENSORFLOW,
            env=dict(_TF),
            timed=11,
            batch=16,
            options={"mode": "fit", "epochs": "3"},
        ),
        Scenario(
            "pytorch_resnet18_cl_b16_train",
            "resnet18_cl_train of sample_logs/ (channels_last fp32, SGD momentum 0.9) at batch "
            "16: the same 59 weight reorders every step, against 4 times the compute.",
            "pytorch",
            RESNET18,
            TORCH_VISION,
            timed=5,
            batch=16,
            options={"mode": "train"},
        ),
    ]
}


# --------------------------------------------------------------------------------------------
# Child side: each program imported only here.
# --------------------------------------------------------------------------------------------


def run_openvino(sc: Scenario) -> None:
    """Compile the opset13 model for the CPU and infer ``sc.total`` times."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops
    from openvino.preprocess import PrePostProcessor

    rng = np.random.default_rng(SEED)

    def const(*shape: int):
        return ops.constant((rng.standard_normal(shape) * 0.1).astype(np.float32))

    as_inputs = sc.options.get("weights") == "inputs"
    bias = sc.options.get("bias", "yes") == "yes"
    x = ops.parameter([sc.batch, 8, 32, 32], np.float32, name="x")
    params, feeds = [x], {}
    weights = []
    for name, shape in (("w1", (16, 8, 3, 3)),):
        if as_inputs:
            w = ops.parameter(list(shape), np.float32, name=name)
            params.append(w)
            feeds[name] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        else:
            w = const(*shape)
        weights.append(w)
    t = x
    for w, channels in zip(weights, (16,), strict=True):
        t = ops.convolution(t, w, [1, 1], [1, 1], [1, 1], [1, 1])
        t = ops.relu(ops.add(t, const(1, channels, 1, 1)) if bias else t)
        t = ops.max_pool(t, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)
    flat = ops.reshape(t, ops.constant(np.array([sc.batch, -1], np.int64)), False)
    model = ov.Model([ops.matmul(flat, const(16 * 16 * 16, 10), False, False)], params, sc.name)
    shape = (sc.batch, 8, 32, 32)
    if sc.options.get("input_layout") == "NHWC":
        ppp = PrePostProcessor(model)
        ppp.input("x").tensor().set_layout(ov.Layout("NHWC"))
        ppp.input("x").model().set_layout(ov.Layout("NCHW"))
        model = ppp.build()
        shape = (sc.batch, 32, 32, 8)
    config = {"INFERENCE_NUM_THREADS": NUM_THREADS}
    if "precision" in sc.options:
        config["INFERENCE_PRECISION_HINT"] = sc.options["precision"]
    request = ov.Core().compile_model(model, "CPU", config).create_infer_request()
    image = rng.standard_normal(shape).astype(np.float32)
    for _ in range(sc.total):
        request.infer({"x": image, **feeds})


def run_tensorflow(sc: Scenario) -> None:
    """A Keras CNN: ``sc.total`` calls of a tf.function, or one ``model.fit``."""
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(int(NUM_THREADS))
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(SEED)
    layers = tf.keras.layers
    rng = np.random.default_rng(SEED)
    if sc.options.get("mode") == "fit":
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
        epochs = int(sc.options["epochs"])
        samples = sc.total // epochs * sc.batch
        x = rng.standard_normal((samples, 64, 64, 3), dtype=np.float32)
        y = rng.integers(0, 10, samples)
        model.fit(x, y, batch_size=sc.batch, epochs=epochs, shuffle=False, verbose=0)
        return
    model = tf.keras.Sequential(
        [
            tf.keras.Input((32, 32, 8)),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(10),
        ]
    )
    infer = tf.function(lambda t: model(t, training=False))
    image = rng.standard_normal((sc.batch, 32, 32, 8), dtype=np.float32)
    for _ in range(sc.total):
        infer(image)


def run_pytorch(sc: Scenario) -> None:
    """torchvision's resnet18 training steps in channels_last on one seeded batch."""
    import torch
    import torchvision
    from torch import nn

    torch.set_num_threads(int(NUM_THREADS))
    torch.manual_seed(SEED)
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    model = model.to(memory_format=torch.channels_last).train()
    inputs = torch.randn(sc.batch, 3, 64, 64).contiguous(memory_format=torch.channels_last)
    targets = torch.randint(0, 10, (sc.batch,))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(sc.total):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(inputs), targets).backward()
        opt.step()


RUNNERS = {"openvino": run_openvino, "tensorflow": run_tensorflow, "pytorch": run_pytorch}


def run_child(sc: Scenario) -> None:
    """Run one scenario in this (fresh) process; verbose output goes to our stdout."""
    RUNNERS[sc.producer](sc)
    print(f"done: {sc.name} passes={sc.total}", flush=True)


# --------------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------------


def run_scenario(sc: Scenario, out_dir: Path, interpreter: Interpreter) -> dict:
    """Run one scenario in a child process; return its manifest entry."""
    log_path = out_dir / f"{sc.name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.pop("OMP_NUM_THREADS", None)
    recorded = {"OMP_NUM_THREADS": NUM_THREADS, "PYTHONUNBUFFERED": "1", **sc.env}
    env.update(recorded)
    argv = [interpreter.path, str(Path(__file__).resolve()), "--child", sc.name]
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
    shown = [interpreter.path, _display_path(Path(__file__)), "--child", sc.name]
    lines, verbose = _count_lines(log_path)
    header = _log_header(log_path)
    return {
        "file": log_path.name,
        **{k: v for k, v in asdict(sc).items() if k != "name"},
        "scenario": sc.name,
        "passes": sc.total,
        "onednn_version": header.get("onednn_version"),
        "isa": header.get("isa"),
        "cpu_runtime": header.get("cpu_runtime"),
        "threads": int(header["threads"]) if "threads" in header else None,
        "python_version": interpreter.python,
        "packages": {n: v for n, v in interpreter.packages.items() if n in RECORDED_PACKAGES},
        "command": " ".join(
            [f"{k}={shlex.quote(v)}" for k, v in recorded.items()] + [shlex.join(shown)]
        ),
        "returncode": proc.returncode,
        "lines": lines,
        "onednn_verbose_lines": verbose,
        "bytes": log_path.stat().st_size,
    }


def write_manifest(out_dir: Path, entries: list[dict]) -> None:
    """Merge new entries into MANIFEST.json (entries of scenarios run again are replaced)."""
    path = out_dir / MANIFEST_NAME
    old = json.loads(path.read_text()) if path.exists() else {}
    ran = {e["scenario"] for e in entries}
    kept = [e for e in old.get("files", []) if e["scenario"] not in ran]
    order = list(SCENARIOS)
    files = sorted(kept + entries, key=lambda e: order.index(e["scenario"]))
    manifest = {
        "generator": "scripts/make_producer_logs.py",
        "seed": SEED,
        "notes": "Each log ends with the program line 'done: <scenario> passes=<N>'. Passes "
        "are inferences or optimizer steps, the first 'warmup' of them warm-up.",
        "files": files,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the selected scenarios (or one child scenario) and write the manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), metavar="NAME")
    parser.add_argument("--python", action="append", metavar="PATH", help="interpreter(s)")
    parser.add_argument("--child", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(SCENARIOS[args.child])
        return 0
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    names = sorted(
        {p.partition("==")[0] for sc in SCENARIOS.values() for p in sc.requires}
        | set(RECORDED_PACKAGES)
    )
    interpreters = [
        probe_interpreter(p, names, "make_producer_logs") for p in (args.python or [sys.executable])
    ]
    entries, failures = [], []
    for name in args.only or list(SCENARIOS):
        sc = SCENARIOS[name]
        print(f"[make_producer_logs] {name} ...", end=" ", flush=True)
        interpreter = next((i for i in interpreters if i.satisfies(sc.requires)), None)
        if interpreter is None:
            print(f"SKIPPED: no --python has {', '.join(sc.requires)}", flush=True)
            failures.append(name)
            continue
        entry = run_scenario(sc, out_dir, interpreter)
        print("ok" if entry["returncode"] == 0 else f"FAILED rc={entry['returncode']}")
        if entry["returncode"] != 0:
            failures.append(name)
        entries.append(entry)
    write_manifest(out_dir, entries)
    if failures:
        print(f"[make_producer_logs] failed or skipped: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
