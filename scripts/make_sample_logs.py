"""Generate real oneDNN verbose logs and PyTorch profiler output into ``sample_logs/``.

Every scenario runs in a fresh child process (this script re-invoked with ``--child NAME``) so
that oneDNN reads its environment variables (``ONEDNN_VERBOSE``, ``ONEDNN_VERBOSE_TIMESTAMP``,
``ONEDNN_MAX_CPU_ISA``) at start-up and prints its header lines.  The child's stdout and stderr
are captured together into ``<scenario>.log``; profiler scenarios additionally write a chrome
trace and key-averages tables next to it.  No pass markers are printed into the logs: the only
program output is the final line ``done: <scenario> passes=<N>`` (plus, for the combined
profiler scenario, the key-averages table), which a parser must classify as foreign.

A ``MANIFEST.json`` describing every produced file (model, layout, dtype, mode, pass counts,
environment, versions, ISA and threading runtime from the log header, and command line) is
written at the end; ``--only`` updates just the entries of the selected scenarios.

Interpreters.  Each scenario names the packages it needs (``Scenario.requires``, pinned
versions; also in the manifest).  The script itself needs only the standard library; the
children run under the first interpreter given with ``--python`` (repeatable; default: the one
running this script) whose installed packages match the pins.  A scenario no interpreter
satisfies is reported as failed and keeps its old manifest entries.  The pins in use:

* ``torch==2.13.0`` (CPU build, oneDNN 3.12; ``pip install torch==2.13.0 numpy``): the convnet
  and LSTM scenarios, including ``lstm_train`` and ``convnet_bf16_autocast_train``;
* ``torch==2.14.1`` and ``torchvision==0.29.1`` (the CUDA build, run on the CPU; ``pip install
  torch==2.14.1 torchvision==0.29.1``): ``resnet18_nchw_train`` and ``resnet18_cl_train``,
  torchvision's resnet18 with random weights (nothing is downloaded);
* ``tensorflow-cpu==2.21.0`` (Keras 3, oneDNN 3.7 with the threadpool runtime; ``pip install
  tensorflow-cpu==2.21.0``): ``keras_cnn_train``, one ``model.fit`` of a small CNN with
  ``TF_ENABLE_ONEDNN_OPTS=1``.

Training scenarios run a fixed number of optimizer steps on one fixed, seeded batch (the Keras
one on a fixed, unshuffled set of batches), so reruns print the same primitive sequence; only
the times differ.

Each log header names the machine's ISA (entries written by this version of the script copy
it into the manifest): the scenarios up to ``profile_combined_infer`` were recorded on an AVX2
machine, those after it on an AVX-512 machine with bf16.

Usage, with one virtual environment per set of pins (``python3 -m venv T213 &&
T213/bin/pip install torch==2.13.0 numpy``, likewise ``TV`` and ``TF``)::

    python3 scripts/make_sample_logs.py --python T213/bin/python \\
        --python TV/bin/python --python TF/bin/python       # every scenario into sample_logs/
    python3 scripts/make_sample_logs.py --python T213/bin/python --only lstm_train --out /tmp/logs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_logs"
SEED = 0
NUM_THREADS = "2"
MANIFEST_NAME = "MANIFEST.json"

# Environment variables inherited from the caller that could change what oneDNN prints.
_SCRUBBED_PREFIXES = (
    "ONEDNN_",
    "DNNL_",
    "MKLDNN_",
    "TORCHINDUCTOR_",
    "TORCH_COMPILE_",
    "TF_",
    "KERAS_",
)

_VERBOSE2 = {"ONEDNN_VERBOSE": "2"}
_PROFILE_ENV = {"ONEDNN_VERBOSE": "1", "ONEDNN_VERBOSE_TIMESTAMP": "1"}
# TensorFlow uses oneDNN only with its oneDNN graph rewrites on; Keras 3 on its TF backend.
_TF_ENV = {"TF_ENABLE_ONEDNN_OPTS": "1", "KERAS_BACKEND": "tensorflow", **_VERBOSE2}

TORCH_213 = ("torch==2.13.0",)
TORCH_214_VISION = ("torch==2.14.1", "torchvision==0.29.1")
TF_CPU = ("tensorflow-cpu==2.21.0",)
# Packages whose versions go into the manifest when the interpreter has them.
RECORDED_PACKAGES = ("torch", "torchvision", "numpy", "tensorflow-cpu", "keras")

_BF16_NOTE = (
    "On CPUs without avx_ne_convert or avx512bw/vl/dq PyTorch refuses its mkldnn bf16 "
    "path and runs bf16 convolutions/matmuls natively, so the log may hold no oneDNN lines."
)

CONVNET = "SmallResNet(conv-bn-relu stem, maxpool, residual block, strided conv, avgpool, linear)"
CONVNET_INPUT = "batch 4, 3x64x64"
LSTMNET = "LSTMNet(2-layer nn.LSTM input 32 hidden 64, linear head 64->10)"
LSTMNET_INPUT = "seq 20, batch 4, features 32"
RESNET18 = "torchvision.models.resnet18(weights=None, num_classes=10)"
KERAS_CNN = (
    "keras Sequential(Conv2D 16 3x3 + BatchNormalization + ReLU, MaxPooling2D, "
    "Conv2D 32 3x3 + BatchNormalization + ReLU, GlobalAveragePooling2D, Dense 10)"
)
KERAS_CNN_INPUT = "16 samples 64x64x3 (NHWC) in batches of 4, unshuffled"
MODEL_TEXT = {
    "convnet": (CONVNET, CONVNET_INPUT),
    "lstm": (LSTMNET, LSTMNET_INPUT),
    "resnet18": (RESNET18, CONVNET_INPUT),
    "keras_cnn": (KERAS_CNN, KERAS_CNN_INPUT),
}
KERAS_SAMPLES = 16
KERAS_BATCH = 4


@dataclass(frozen=True)
class Scenario:
    """One run of a small model with a given oneDNN configuration."""

    name: str
    description: str
    model: str = "convnet"  # a key of MODEL_TEXT
    memory_format: str = "nchw"  # "nchw" or "channels_last"
    dtype: str = "fp32"  # "fp32" or "bf16_autocast"
    mode: str = "infer"  # "infer" or "train"
    #: passes the program runs before its timed ones: what it intends as warm-up. What
    #: dnnlens finds is the steady state's warm-up (``SteadyState.warmup``), which is more
    #: when the passes after these are still slow (4 in convnet_nchw_infer.log)
    warmup_calls: int = 1
    timed: int = 10
    env: dict[str, str] = field(default_factory=lambda: dict(_VERBOSE2))
    runner: str = "eager"  # "eager", "compile_freezing" or "jit_freeze"
    profile: bool = False  # wrap the timed passes in torch.profiler
    profile_outputs: tuple[str, ...] = ()  # subset of ("trace", "table", "shapes")
    print_table: bool = False  # print the key_averages table to stdout (combined log)
    contention: int = 0  # number of busy-loop processes running alongside
    fallback_only: bool = False  # only run when explicitly selected or as a fallback
    requires: tuple[str, ...] = TORCH_213  # pinned packages the child's interpreter must have
    framework: str = "torch"  # "torch" or "tensorflow" (Keras model.fit)
    epochs: int = 1  # Keras only: the one fit's epochs; steps = total passes

    @property
    def total(self) -> int:
        """Total number of model passes (warm-up calls + timed)."""
        return self.warmup_calls + self.timed


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "convnet_nchw_infer",
            "NCHW fp32 inference under torch.no_grad(); PyTorch's mkldnn conv reorders "
            "activations between plain and blocked layouts around each convolution.",
        ),
        Scenario(
            "convnet_cl_infer",
            "channels_last fp32 inference under torch.no_grad() (model and input in "
            "channels_last).",
            memory_format="channels_last",
        ),
        Scenario(
            "convnet_nchw_train",
            "NCHW fp32 training: forward + cross-entropy loss + backward + SGD step.",
            mode="train",
            timed=5,
        ),
        Scenario(
            "convnet_cl_train",
            "channels_last fp32 training: forward + cross-entropy loss + backward + SGD step.",
            memory_format="channels_last",
            mode="train",
            timed=5,
        ),
        Scenario(
            "convnet_bf16_autocast_infer",
            'NCHW inference under torch.autocast("cpu", dtype=torch.bfloat16). ' + _BF16_NOTE,
            dtype="bf16_autocast",
        ),
        Scenario(
            "lstm_infer",
            "2-layer LSTM + linear head fp32 inference under torch.no_grad().",
            model="lstm",
        ),
        Scenario(
            "compile_freezing_infer",
            "torch.compile (inductor) with torch._inductor.config.freezing=True, NCHW fp32 "
            "inference under torch.no_grad(); compilation happens during the 2 warmup passes.",
            runner="compile_freezing",
            warmup_calls=2,
        ),
        Scenario(
            "jit_freeze_infer",
            "Fallback for compile_freezing_infer: torch.jit.freeze(torch.jit.trace(model)), "
            "NCHW fp32 inference under torch.no_grad().",
            runner="jit_freeze",
            warmup_calls=2,
            fallback_only=True,
        ),
        Scenario(
            "all_timestamps_infer",
            "NCHW fp32 inference with ONEDNN_VERBOSE=all and timestamps (prints dispatch/check "
            "and profiling lines too).",
            timed=5,
            env={"ONEDNN_VERBOSE": "all", "ONEDNN_VERBOSE_TIMESTAMP": "1"},
        ),
        Scenario(
            "dispatch_only_infer",
            "NCHW fp32 inference with ONEDNN_VERBOSE=dispatch: oneDNN prints only why it "
            "skipped implementations (create:dispatch lines), no create or exec line.",
            timed=2,
            env={"ONEDNN_VERBOSE": "dispatch"},
        ),
        Scenario(
            "isa_sse41_infer",
            "NCHW fp32 inference with ONEDNN_MAX_CPU_ISA=SSE41 on an AVX2 machine, capping the "
            "implementations oneDNN may dispatch.",
            timed=5,
            env={"ONEDNN_VERBOSE": "2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
        ),
        Scenario(
            "contended_infer",
            "NCHW fp32 inference with OMP_NUM_THREADS=2 while 2 busy-loop processes compete "
            "for the 2 cores, so execution times are noisy.",
            timed=30,
            contention=2,
        ),
        Scenario(
            "profile_nchw_infer",
            "NCHW fp32 inference; torch.profiler (CPU, record_shapes) around the timed passes.",
            timed=5,
            env=dict(_PROFILE_ENV),
            profile=True,
            profile_outputs=("trace", "table", "shapes"),
        ),
        Scenario(
            "profile_bf16_train",
            "NCHW bf16-autocast training step; torch.profiler (CPU, record_shapes) around the "
            "timed steps. " + _BF16_NOTE,
            dtype="bf16_autocast",
            mode="train",
            timed=3,
            env=dict(_PROFILE_ENV),
            profile=True,
            profile_outputs=("trace", "table"),
        ),
        Scenario(
            "profile_lstm_infer",
            "LSTM fp32 inference; torch.profiler (CPU, record_shapes) around the timed passes.",
            model="lstm",
            timed=5,
            env=dict(_PROFILE_ENV),
            profile=True,
            profile_outputs=("trace", "table"),
        ),
        Scenario(
            "profile_combined_infer",
            "NCHW fp32 inference with torch.profiler around the timed passes; the key_averages "
            "table is printed to stdout after the verbose lines, in the same log.",
            timed=3,
            env=dict(_PROFILE_ENV),
            profile=True,
            print_table=True,
        ),
        Scenario(
            "resnet18_nchw_train",
            "torchvision resnet18 NCHW fp32 training: forward + cross-entropy loss + backward + "
            "SGD (momentum 0.9) step. PyTorch's mkldnn convolution reorders each weight to a "
            "blocked layout for forward and for backward-data and each weight gradient back to "
            "plain, every step.",
            model="resnet18",
            mode="train",
            timed=9,
            requires=TORCH_214_VISION,
        ),
        Scenario(
            "resnet18_cl_train",
            "torchvision resnet18 channels_last fp32 training (model and input in "
            "channels_last): forward + cross-entropy loss + backward + SGD (momentum 0.9) step.",
            model="resnet18",
            memory_format="channels_last",
            mode="train",
            timed=9,
            requires=TORCH_214_VISION,
        ),
        Scenario(
            "lstm_train",
            "2-layer LSTM + linear head fp32 training: forward + cross-entropy loss + backward "
            "+ SGD (momentum 0.9) step; the same model and input as lstm_infer.",
            model="lstm",
            mode="train",
        ),
        Scenario(
            "convnet_bf16_autocast_train",
            'NCHW training step under torch.autocast("cpu", dtype=torch.bfloat16), recorded on '
            "an AVX-512 machine with bf16 support, where PyTorch takes its mkldnn bf16 path.",
            dtype="bf16_autocast",
            mode="train",
            timed=5,
        ),
        Scenario(
            "keras_cnn_train",
            "TensorFlow Keras model.fit of a small fp32 CNN (SGD momentum 0.9, sparse "
            "categorical cross-entropy), 3 epochs of 4 steps, with TF_ENABLE_ONEDNN_OPTS=1; "
            "the first step, which traces the train function, is the warm-up. TensorFlow runs "
            "oneDNN on its own threadpool (intra-op 2, inter-op 1 threads).",
            model="keras_cnn",
            memory_format="channels_last",
            mode="train",
            timed=KERAS_SAMPLES // KERAS_BATCH * 3 - 1,
            env=dict(_TF_ENV),
            requires=TF_CPU,
            framework="tensorflow",
            epochs=3,
        ),
    ]
}

OUTPUT_SUFFIXES = {
    "log": ".log",
    "trace": ".trace.json",
    "table": ".table.txt",
    "shapes": ".shapes.txt",
}
OUTPUT_KINDS = {
    "log": "onednn_verbose_log",
    "trace": "chrome_trace",
    "table": "profiler_key_averages_table",
    "shapes": "profiler_key_averages_by_input_shape_table",
}


# --------------------------------------------------------------------------------------------
# Child side: models and the measured loop.  torch is imported only here.
# --------------------------------------------------------------------------------------------


def _build_model(sc: Scenario):
    """Return ``(model, inputs, targets)`` for the scenario, seeded and in the right layout."""
    import torch
    from torch import nn

    torch.manual_seed(SEED)

    if sc.model == "lstm":

        class LSTMNet(nn.Module):
            """Two-layer LSTM with a linear head on the last time step."""

            def __init__(self) -> None:
                super().__init__()
                self.lstm = nn.LSTM(input_size=32, hidden_size=64, num_layers=2)
                self.head = nn.Linear(64, 10)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[-1])

        model = LSTMNet()
        inputs = torch.randn(20, 4, 32)
    elif sc.model == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(weights=None, num_classes=10)
        inputs = torch.randn(4, 3, 64, 64)
    else:

        def conv_bn_relu(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            )

        class SmallResNet(nn.Module):
            """Tiny ResNet-like conv net: stem, maxpool, one residual block, downsample, head."""

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

        model = SmallResNet()
        inputs = torch.randn(4, 3, 64, 64)

    targets = torch.randint(0, 10, (4,))
    if sc.memory_format == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        inputs = inputs.contiguous(memory_format=torch.channels_last)
    model.train(sc.mode == "train")
    return model, inputs, targets


def _make_step(sc: Scenario, model, inputs, targets) -> Callable[[], None]:
    """Return a callable performing one model pass (inference) or one training step."""
    import torch
    from torch import nn

    def autocast():
        if sc.dtype == "bf16_autocast":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    if sc.mode == "train":
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def train_step() -> None:
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = loss_fn(model(inputs), targets)
            loss.backward()
            opt.step()

        return train_step

    if sc.runner == "compile_freezing":
        import torch._inductor.config as inductor_config

        inductor_config.freezing = True
        model = torch.compile(model)
    elif sc.runner == "jit_freeze":
        with torch.no_grad():
            model = torch.jit.freeze(torch.jit.trace(model, inputs))

    def infer_step() -> None:
        with torch.no_grad(), autocast():
            model(inputs)

    return infer_step


@contextlib.contextmanager
def _maybe_profile(sc: Scenario) -> Iterator[object]:
    """Profile the enclosed block when the scenario asks for it; yield the profiler or None."""
    if not sc.profile:
        yield None
        return
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        yield prof


def run_keras_child(sc: Scenario) -> None:
    """Run one Keras ``model.fit`` in this (fresh) process; verbose output goes to stdout."""
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(int(NUM_THREADS))
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(SEED)
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
    x = rng.standard_normal((KERAS_SAMPLES, 64, 64, 3), dtype=np.float32)
    y = rng.integers(0, 10, KERAS_SAMPLES)
    steps_per_epoch = KERAS_SAMPLES // KERAS_BATCH
    if steps_per_epoch * sc.epochs != sc.total:
        raise SystemExit(f"{sc.name}: {sc.epochs} epochs of {steps_per_epoch} != {sc.total}")
    model.fit(x, y, batch_size=KERAS_BATCH, epochs=sc.epochs, shuffle=False, verbose=0)
    print(f"done: {sc.name} passes={sc.total}", flush=True)


def run_child(sc: Scenario, out_dir: Path) -> None:
    """Run one scenario in this (fresh) process; verbose output goes to our stdout."""
    if sc.framework == "tensorflow":
        run_keras_child(sc)
        return
    import torch

    torch.set_num_threads(int(NUM_THREADS))
    model, inputs, targets = _build_model(sc)
    step = _make_step(sc, model, inputs, targets)

    for _ in range(sc.warmup_calls):
        step()
    with _maybe_profile(sc) as prof:
        for _ in range(sc.timed):
            step()

    if prof is not None:
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1)
        if "trace" in sc.profile_outputs:
            prof.export_chrome_trace(str(out_dir / f"{sc.name}{OUTPUT_SUFFIXES['trace']}"))
        if "table" in sc.profile_outputs:
            (out_dir / f"{sc.name}{OUTPUT_SUFFIXES['table']}").write_text(table + "\n")
        if "shapes" in sc.profile_outputs:
            shapes = prof.key_averages(group_by_input_shape=True).table(
                sort_by="cpu_time_total", row_limit=30
            )
            (out_dir / f"{sc.name}{OUTPUT_SUFFIXES['shapes']}").write_text(shapes + "\n")
        if sc.print_table:
            print(table, flush=True)

    print(f"done: {sc.name} passes={sc.total}", flush=True)


# --------------------------------------------------------------------------------------------
# Parent side: subprocess orchestration and the manifest.
# --------------------------------------------------------------------------------------------


def _display_path(path: Path) -> str:
    """Show a path relative to the repository root when it lies inside it."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _child_env(sc: Scenario, inductor_cache: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """Return ``(full_env, recorded_env)``: the child's environment and the vars we set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.pop("OMP_NUM_THREADS", None)
    recorded = {"OMP_NUM_THREADS": NUM_THREADS, "PYTHONUNBUFFERED": "1", **sc.env}
    if sc.runner == "compile_freezing":
        # A fresh cache keeps reruns identical (no cache hits skipping compilation) and a single
        # compile thread avoids a pool of worker processes.
        recorded["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        env["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache or ""
    env.update(recorded)
    return env, recorded


def _start_busy_loops(count: int) -> list[subprocess.Popen]:
    """Start ``count`` CPU-burning Python processes."""
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def _stop_processes(procs: list[subprocess.Popen]) -> None:
    """Kill exactly the processes we started."""
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def _count_lines(path: Path) -> tuple[int, int]:
    """Return ``(total lines, lines starting with onednn_verbose)`` of a text file."""
    total = verbose = 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            total += 1
            verbose += line.startswith("onednn_verbose")
    return total, verbose


_HEADER_PATTERNS = {
    "onednn_version": re.compile(r"onednn_verbose,.*info,oneDNN (v\S+)"),
    "isa": re.compile(r"onednn_verbose,.*info,cpu,isa:(.+)$"),
    "cpu_runtime": re.compile(r"onednn_verbose,.*info,cpu,runtime:([^,]+),nthr:\d+"),
    "threads": re.compile(r"onednn_verbose,.*info,cpu,runtime:[^,]+,nthr:(\d+)"),
}


def header_facts(lines: Iterable[str]) -> dict[str, str]:
    """The oneDNN version, CPU ISA, threading runtime and threads the log header names."""
    found: dict[str, str] = {}
    for line in lines:
        for key, pattern in _HEADER_PATTERNS.items():
            m = pattern.search(line.rstrip("\n"))
            if m and key not in found:
                found[key] = m.group(1)
        if len(found) == len(_HEADER_PATTERNS):
            break
    return found


def _log_header(path: Path) -> dict[str, str]:
    """:func:`header_facts` of a log file."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        return header_facts(fh)


# Run by each candidate interpreter: its Python and package versions, and for torch the oneDNN
# version of its build.  Printed as one JSON line.
_FACTS_PROBE = r"""
import importlib.metadata as md, json, platform, re, sys
packages = {}
for name in json.loads(sys.argv[1]):
    try:
        packages[name] = md.version(name)
    except md.PackageNotFoundError:
        pass
onednn = None
if "torch" in packages:
    import torch
    m = re.search(r"MKL-DNN (v\S+)", torch.__config__.show())
    onednn = m.group(1) if m else None
print(json.dumps({"python": platform.python_version(), "packages": packages, "onednn": onednn}))
"""


@dataclass(frozen=True)
class Interpreter:
    """A Python that can run scenario children, with the package versions it has."""

    path: str  # as given on the command line (shown in the manifest's commands)
    python: str
    packages: dict[str, str]
    onednn: str | None  # torch's build config, when torch is installed

    def satisfies(self, requires: tuple[str, ...]) -> bool:
        """Whether every pin of ``requires`` holds."""
        return not self.unmet(requires)

    def unmet(self, requires: tuple[str, ...]) -> list[str]:
        """The pins of ``requires`` this interpreter does not satisfy (local labels ignored)."""
        missing = []
        for pin in requires:
            name, _, version = pin.partition("==")
            have = self.packages.get(name)
            if have is None or have.split("+")[0] != version:
                missing.append(pin)
        return missing


def probe_interpreter(
    path: str, names: list[str] | None = None, who: str = "make_sample_logs"
) -> Interpreter:
    """Ask an interpreter for the versions of ``names`` (by default the packages this
    script's scenarios pin or record); a failure is a usage error naming the path. The
    other recording scripts share it."""
    if names is None:
        names = [pin.partition("==")[0] for sc in SCENARIOS.values() for pin in sc.requires]
        names = sorted(set(names) | set(RECORDED_PACKAGES))
    try:
        out = subprocess.run(
            [path, "-c", _FACTS_PROBE, json.dumps(names)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"{who}: cannot run {path}: {exc}") from exc
    facts = json.loads(out.strip().splitlines()[-1])
    return Interpreter(path, facts["python"], facts["packages"], facts["onednn"])


def run_scenario(sc: Scenario, out_dir: Path, interpreter: Interpreter) -> dict:
    """Run one scenario in a child process and return its result record."""
    log_path = out_dir / f"{sc.name}{OUTPUT_SUFFIXES['log']}"
    argv = [
        interpreter.path,
        str(Path(__file__).resolve()),
        "--child",
        sc.name,
        "--out",
        str(out_dir),
    ]
    shown_argv = [
        interpreter.path if interpreter.path != sys.executable else "python3",
        _display_path(Path(__file__)),
        "--child",
        sc.name,
        "--out",
        _display_path(out_dir),
    ]

    with tempfile.TemporaryDirectory(prefix="dnnlens-inductor-") as cache_dir:
        env, recorded_env = _child_env(sc, cache_dir)
        busy = _start_busy_loops(sc.contention)
        try:
            if busy:
                time.sleep(1.0)  # let the busy loops get going before measuring
            start = time.monotonic()
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
        finally:
            _stop_processes(busy)

    command = " ".join(
        [f"{k}={shlex.quote(v)}" for k, v in recorded_env.items()] + [shlex.join(shown_argv)]
    )
    return {
        "scenario": sc,
        "interpreter": interpreter,
        "returncode": proc.returncode,
        "elapsed_s": round(elapsed, 2),
        "env": recorded_env,
        "command": command,
    }


def _manifest_entries(result: dict, out_dir: Path, generator_command: str) -> list:
    """Build one manifest entry per file produced by a scenario."""
    sc: Scenario = result["scenario"]
    interpreter: Interpreter = result["interpreter"]
    header = _log_header(out_dir / f"{sc.name}.log")
    model, model_input = MODEL_TEXT[sc.model]
    versions: dict[str, object] = {}
    if sc.framework == "torch":
        versions["torch_version"] = interpreter.packages["torch"]
        onednn = header.get("onednn_version") or interpreter.onednn
    else:
        versions["tensorflow_version"] = interpreter.packages["tensorflow-cpu"]
        onednn = header.get("onednn_version")
    source = "log_header" if "onednn_version" in header else "torch_build_config"
    common = {
        "scenario": sc.name,
        "description": sc.description,
        "model": model,
        "input": model_input,
        "framework": sc.framework,
        "runner": sc.runner,
        "memory_format": sc.memory_format,
        "dtype": sc.dtype,
        "mode": sc.mode,
        "warmup_passes": sc.warmup_calls,
        "timed_passes": sc.timed,
        "total_passes": sc.total,
        "profiled_passes": sc.timed if sc.profile else 0,
        "contention_processes": sc.contention,
        "env": result["env"],
        **versions,
        "onednn_version": onednn,
        "onednn_version_source": source,
        "isa": header.get("isa"),
        "cpu_runtime": header.get("cpu_runtime"),
        "threads": int(header["threads"]) if "threads" in header else None,
        "requires": list(sc.requires),
        "python_version": interpreter.python,
        "packages": {n: v for n, v in interpreter.packages.items() if n in RECORDED_PACKAGES},
        "command": result["command"],
        "generator_command": generator_command,
        "returncode": result["returncode"],
        "elapsed_s": result["elapsed_s"],
    }
    entries = []
    for key in ("log", *sc.profile_outputs):
        path = out_dir / f"{sc.name}{OUTPUT_SUFFIXES[key]}"
        if not path.exists():
            continue
        entry = {
            "file": path.name,
            "kind": OUTPUT_KINDS[key],
            **common,
            "bytes": path.stat().st_size,
        }
        if key == "log":
            entry["lines"], entry["onednn_verbose_lines"] = _count_lines(path)
            entry["contains_profiler_table"] = sc.print_table
        entries.append(entry)
    return entries


def _write_manifest(
    out_dir: Path, new_entries: list, replaced: set[str], default: Interpreter | None
) -> None:
    """Merge new entries into MANIFEST.json, replacing entries of re-run scenarios.

    The top-level versions are those of the default pins (``TORCH_213``, most scenarios); they
    change only when such a scenario ran.  Each file's entry has its own versions.
    """
    path = out_dir / MANIFEST_NAME
    old: dict = {}
    if path.exists():
        with contextlib.suppress(ValueError):
            old = json.loads(path.read_text())
    old_files: list = old.get("files", []) if isinstance(old, dict) else []
    kept = [e for e in old_files if e.get("scenario") not in replaced]
    order = list(SCENARIOS)
    files = sorted(
        kept + new_entries,
        key=lambda e: (
            order.index(e["scenario"]) if e["scenario"] in order else len(order),
            e["file"],
        ),
    )
    manifest = {
        "generator": "scripts/make_sample_logs.py",
        "torch_version": default.packages["torch"] if default else old.get("torch_version"),
        "onednn_version": default.onednn if default else old.get("onednn_version"),
        "seed": SEED,
        "notes": "Pass counts are model forward passes (inference) or optimizer steps "
        "(training). No iteration markers are printed; each log ends with the program line "
        "'done: <scenario> passes=<N>'. The top-level versions are those of the scenarios "
        "pinned to " + ", ".join(TORCH_213) + "; every file's entry names its own framework "
        "and oneDNN versions and the pins ('requires') its interpreter satisfied.",
        "scenarios": {n: asdict(s) for n, s in SCENARIOS.items()},
        "files": files,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and run either the orchestrator or a single child scenario."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SCENARIOS),
        metavar="SCENARIO",
        help="run only this scenario (repeatable); choices: " + ", ".join(SCENARIOS),
    )
    parser.add_argument(
        "--python",
        action="append",
        metavar="PATH",
        help="interpreter for the children (repeatable): each scenario runs under the first "
        "one whose packages match its pins; default: this interpreter",
    )
    parser.add_argument("--child", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out_dir: Path = args.out.resolve()

    if args.child:
        run_child(SCENARIOS[args.child], out_dir)
        return 0

    out_dir.mkdir(parents=True, exist_ok=True)
    selected = args.only or [n for n, s in SCENARIOS.items() if not s.fallback_only]
    interpreters = [probe_interpreter(p) for p in (args.python or [sys.executable])]
    generator_command = shlex.join(
        ["python3", _display_path(Path(__file__)), *(sys.argv[1:] if argv is None else argv)]
    )
    entries: list = []
    ran: set[str] = set()
    default: Interpreter | None = None
    failures: list[str] = []
    queue = list(selected)
    while queue:
        name = queue.pop(0)
        sc = SCENARIOS[name]
        print(f"[make_sample_logs] {name} ...", end=" ", flush=True)
        interpreter = next((i for i in interpreters if not i.unmet(sc.requires)), None)
        if interpreter is None:
            print(f"SKIPPED: no --python has {', '.join(sc.requires)}", flush=True)
            failures.append(name)
            continue
        result = run_scenario(sc, out_dir, interpreter)
        ran.add(name)
        if sc.requires == TORCH_213:
            default = interpreter
        status = "ok" if result["returncode"] == 0 else f"FAILED rc={result['returncode']}"
        print(f"{status} ({result['elapsed_s']} s)", flush=True)
        if result["returncode"] != 0:
            failures.append(name)
            if sc.runner == "compile_freezing" and "jit_freeze_infer" not in selected:
                queue.append("jit_freeze_infer")
        entries.extend(_manifest_entries(result, out_dir, generator_command))

    _write_manifest(out_dir, entries, ran, default)
    total = sum(p.stat().st_size for p in out_dir.iterdir() if p.is_file())
    print(f"[make_sample_logs] wrote {_display_path(out_dir)} ({total / 1e6:.2f} MB)")
    if failures:
        print(f"[make_sample_logs] failed or skipped: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
