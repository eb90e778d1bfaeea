"""Record real PyTorch profiler traces, a bad and a fixed version of each small model.

Each scenario runs in a fresh child process (this script re-invoked with ``--child NAME``)
so that oneDNN reads ``ONEDNN_VERBOSE`` at start-up. The child trains (or runs) its model
for ``wait + warmup + active`` steps under ``torch.profiler.profile`` with
``schedule(wait=1, warmup=1, active=ACTIVE)`` and ``record_shapes=True``, calling
``prof.step()`` after each step, so the trace holds ``ACTIVE`` ``ProfilerStep#N`` spans;
the trace is exported with ``prof.export_chrome_trace`` and gzipped into
``<scenario>.trace.json.gz``. Scenarios with a verbose log (``ONEDNN_VERBOSE=1`` with
timestamps, for the joined view) also write the child's stdout and stderr into
``<scenario>.log``.

The scenarios come in pairs (``*_bad`` / ``*_fixed``), one per framework rule:

* optimizer: SGD and AdamW with per-parameter loops (``foreach=False``, the CPU default)
  and with ``foreach=True`` / ``fused=True``;
* a RetinaNet-style head with the sigmoid focal loss in eager ops, and the same loss under
  ``torch.compile`` (inductor's C++ backend; it needs gcc);
* a FrozenBatchNorm2d made of elementwise ops in training, and the BN folded into the conv;
* bf16 autocast training (weights cast every step), and the model kept in bf16;
* a channels_last model fed NCHW input, and fed channels_last input;
* a DataLoader with a slow ``__getitem__``, and one over precomputed tensors;
* torchvision's ``FrozenBatchNorm2d`` (per-channel ops on ``[1, C, 1, 1]`` tensors) traced
  without module frames, and folded; ``nn.BatchNorm2d`` frozen with ``.eval()`` in
  training; eval-mode BN at inference, and folded by ``torch.fx``.

``plain_good`` is a plain, well-configured training run (trainable ``BatchNorm2d``,
``SGD(fused=True)``, channels_last model and input): no framework rule may warn on it.

Besides the optimizer pair, every model trains with ``SGD(fused=True)``, so that each pair
differs in one thing only.

``MANIFEST.json`` records versions, the command and what each scenario is.

With ``--tables`` the child also writes the ``key_averages()`` tables of the same profiled
run (the events the trace holds) next to the trace, as torch prints them (default output
directory ``sample_logs/framework_tables/``; the verbose log of such a run is not kept):

* ``<scenario>.table.txt``: ``key_averages().table(sort_by="self_cpu_time_total",
  row_limit=-1)``, every row;
* ``<scenario>.top.table.txt``: sorted by ``cpu_time_total`` with ``row_limit=TOP_ROWS``,
  the table most scripts print (rows left out);
* ``<scenario>.shapes.table.txt``: ``key_averages(group_by_input_shape=True)``, every row
  (an ``Input Shapes`` column, one row per op name and shapes).

``--memory-tables`` runs the chosen scenarios (``sgd_bad`` by default) once more with
``profile_memory=True`` and writes, without a trace, ``<scenario>.memory.table.txt`` (every
row, with the ``CPU Mem`` / ``Self CPU Mem`` columns) and ``<scenario>.toplevel.table.txt``
(``header=...``, ``top_level_events_only=True``): the other layouts torch prints.

Usage (with torch 2.13 installed in the running Python)::

    python scripts/make_traces.py                       # all into sample_logs/framework/
    python scripts/make_traces.py --only dataloader_bad --out /tmp/traces
    python scripts/make_traces.py --tables              # traces and tables of new runs
    python scripts/make_traces.py --memory-tables       # memory columns, a header
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_logs" / "framework"
TABLES_OUT = REPO_ROOT / "sample_logs" / "framework_tables"
#: rows of the ``.top.table.txt`` variant: a limit as scripts print it, below the row count
#: of every scenario's table, so that the variant always leaves rows out
TOP_ROWS = 25
#: file suffix -> (group_by_input_shape, sort_by, row_limit) of each table written
TABLE_VARIANTS = {
    ".table.txt": (False, "self_cpu_time_total", -1),
    ".top.table.txt": (False, "cpu_time_total", TOP_ROWS),
    ".shapes.table.txt": (True, "self_cpu_time_total", -1),
}
SEED = 0
WAIT, WARMUP, ACTIVE = 1, 1, 4
_VERBOSE = {"ONEDNN_VERBOSE": "1", "ONEDNN_VERBOSE_TIMESTAMP": "1"}


@dataclass(frozen=True)
class Scenario:
    """One recorded run."""

    name: str
    rule: str
    description: str
    env: dict[str, str] = field(default_factory=dict)
    with_stack: bool = False  # python frames (and nn.Module frames with with_modules)


SCENARIOS = [
    Scenario(
        "sgd_bad",
        "unfused-optimizer",
        "MLP (8 Linear 64->64) trained with SGD(momentum=0.9, foreach=False): one add_/mul_ "
        "per parameter per step",
    ),
    Scenario(
        "sgd_fixed",
        "unfused-optimizer",
        "the same MLP with SGD(momentum=0.9, fused=True): one _fused_sgd_ kernel",
    ),
    Scenario(
        "adamw_bad",
        "unfused-optimizer",
        "the same MLP with AdamW(foreach=True): _foreach_ ops over all parameters, which on "
        "the CPU still run one kernel per tensor inside",
    ),
    Scenario(
        "adamw_fixed",
        "unfused-optimizer",
        "the same MLP with AdamW(fused=True): one _fused_adamw_ kernel",
    ),
    Scenario(
        "focal_bad",
        "elementwise-chain",
        "RetinaNet-style classification head (3x3 conv tower, logits for 9 anchors x 20 "
        "classes) trained with the sigmoid focal loss written in eager ops",
    ),
    Scenario(
        "focal_fixed",
        "elementwise-chain",
        "the same head with the focal loss under torch.compile (inductor C++ kernels)",
    ),
    Scenario(
        "frozenbn_bad",
        "aten-normalization",
        "conv net (4 x conv3x3 8 ch at 128x128) whose norms are FrozenBatchNorm2d (scale and "
        "shift in elementwise ops, as torchvision's), trained; recorded with_stack and "
        "with_modules",
        with_stack=True,
    ),
    Scenario(
        "frozenbn_fixed",
        "aten-normalization",
        "the same net with each frozen BN folded into the conv before it (weights and bias "
        "scaled once); recorded with_stack and with_modules",
        with_stack=True,
    ),
    Scenario(
        "autocast_bad",
        "autocast-casts",
        "MLP (4 Linear 1024->1024, batch 16) trained under torch.autocast('cpu', "
        "dtype=torch.bfloat16): every weight cast to bf16 every step, its gradient back",
        env=dict(_VERBOSE),
    ),
    Scenario(
        "autocast_fixed",
        "autocast-casts",
        "the same MLP with model and input in bfloat16 (no autocast): nothing to cast",
        env=dict(_VERBOSE),
    ),
    Scenario(
        "layout_bad",
        "aten-layout-copies",
        "conv net (4x4/4 patchify stem, 3x3 conv) in channels_last fed NCHW 224x224 input, "
        "trained: the input is converted to channels_last every step (forward and backward)",
        env=dict(_VERBOSE),
    ),
    Scenario(
        "layout_fixed",
        "aten-layout-copies",
        "the same net fed channels_last input",
        env=dict(_VERBOSE),
    ),
    Scenario(
        "dataloader_bad",
        "dataloader-stall",
        "small conv net trained from a DataLoader whose __getitem__ builds each sample in "
        "Python (about 2 ms a sample)",
    ),
    Scenario(
        "dataloader_fixed",
        "dataloader-stall",
        "the same training from a DataLoader over precomputed tensors",
    ),
]
SCENARIOS += [
    Scenario(
        "plain_good",
        "none",
        "conv net (8 x conv3x3-BatchNorm2d-ReLU, 32-64 ch, batch 16 at 64x64) trained with "
        "trainable BatchNorm2d, SGD(momentum=0.9, fused=True), model and input in "
        "channels_last: nothing to fix",
    ),
    Scenario(
        "frozenbn_tv_bad",
        "aten-normalization",
        "conv net (4 x conv3x3 8 ch at 128x128, batch 4) whose norms are torchvision's "
        "FrozenBatchNorm2d (reshapes to [1, C, 1, 1] first, then rsqrt, mul, sub, mul, add), "
        "trained; no module frames (with_modules off, as most traces)",
    ),
    Scenario(
        "frozenbn_tv_fixed",
        "aten-normalization",
        "the same net with each frozen BN folded into the conv before it",
    ),
    Scenario(
        "bneval_train",
        "aten-normalization",
        "conv net (4 x conv3x3-BatchNorm2d-ReLU, 16 ch at 64x64, batch 4) trained with its "
        "BatchNorm2d frozen: .eval() and requires_grad_(False) (native_batch_norm with "
        "training=False)",
    ),
    Scenario(
        "slowconv_bad",
        "aten-convolution",
        "conv net (4 x conv3x3-BatchNorm2d-ReLU, 16 ch at 32x32, batch 4) trained under "
        "torch.autocast('cpu', dtype=torch.bfloat16) with oneDNN capped at AVX2 "
        "(ONEDNN_MAX_CPU_ISA=AVX2, set in the child before oneDNN starts): PyTorch finds no "
        "bfloat16 support and runs the convolutions in aten::_slow_conv2d_forward/_backward",
    ),
    Scenario(
        "slowconv_fixed",
        "aten-convolution",
        "the same net trained in float32 under the same cap: oneDNN convolutions",
    ),
    Scenario(
        "bn_infer_bad",
        "aten-normalization",
        "conv net (4 x conv3x3-BatchNorm2d-ReLU, 8 ch at 128x128, batch 4) at inference "
        "(eval, no_grad): every BN a pass of ATen's native_batch_norm",
    ),
    Scenario(
        "bn_infer_fixed",
        "aten-normalization",
        "the same net with each BN folded into its conv by torch.fx.experimental.optimization.fuse",
    ),
]
BY_NAME = {s.name: s for s in SCENARIOS}


def _conv_bn_net(nn, cin: int, widths: list[int], strides: list[int], norm):  # noqa: ANN001, ANN202
    """conv3x3 -> norm -> ReLU per width, then global pooling and a linear head."""
    layers = []
    for width, stride in zip(widths, strides, strict=True):
        layers += [nn.Conv2d(cin, width, 3, stride=stride, padding=1), norm(width), nn.ReLU()]
        cin = width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10))


def _tv_frozen_bn(torch, nn):  # noqa: ANN001, ANN202
    """torchvision.ops.FrozenBatchNorm2d's forward, written out (reshapes first)."""

    class FrozenBatchNorm2d(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.register_buffer("weight", torch.rand(n) + 0.5)
            self.register_buffer("bias", torch.randn(n))
            self.register_buffer("running_mean", torch.randn(n))
            self.register_buffer("running_var", torch.rand(n) + 0.5)
            self.eps = 1e-5

        def forward(self, x):  # noqa: ANN001, ANN202
            w = self.weight.reshape(1, -1, 1, 1)
            b = self.bias.reshape(1, -1, 1, 1)
            rv = self.running_var.reshape(1, -1, 1, 1)
            rm = self.running_mean.reshape(1, -1, 1, 1)
            scale = w * (rv + self.eps).rsqrt()
            bias = b - rm * scale
            return x * scale + bias

    return FrozenBatchNorm2d


def _fold_frozen(torch, model):  # noqa: ANN001, ANN202
    """Each frozen norm folded into the conv before it; the norm replaced by Identity."""
    layers = list(model)
    with torch.no_grad():
        for i, layer in enumerate(layers):
            if type(layer).__name__ != "FrozenBatchNorm2d":
                continue
            conv = layers[i - 1]
            scale = layer.weight * (layer.running_var + layer.eps).rsqrt()
            conv.weight.mul_(scale.reshape(-1, 1, 1, 1))
            conv.bias.copy_(layer.bias + (conv.bias - layer.running_mean) * scale)
            layers[i] = torch.nn.Identity()
    return torch.nn.Sequential(*layers)


def _more_step(name: str):  # noqa: ANN202 - the scenarios added after the first pairs
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(SEED)
    if name == "plain_good":
        widths, strides = [32] * 4 + [64] * 4, [2, 1, 1, 1, 2, 1, 1, 1]
        model = _conv_bn_net(nn, 3, widths, strides, nn.BatchNorm2d)
        model = model.to(memory_format=torch.channels_last)
        x = torch.randn(16, 3, 64, 64).contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (16,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        return step
    if name.startswith("frozenbn_tv"):
        model = _conv_bn_net(nn, 3, [8] * 4, [1] * 4, _tv_frozen_bn(torch, nn))
        if name.endswith("_fixed"):
            model = _fold_frozen(torch, model)
        x, y = torch.randn(4, 3, 128, 128), torch.randint(0, 10, (4,))
        return _fused_sgd_step(torch, F, model, x, y)
    if name == "bneval_train":
        model = _conv_bn_net(nn, 3, [16] * 4, [1] * 4, nn.BatchNorm2d)
        x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
        norms = [m for m in model if isinstance(m, nn.BatchNorm2d)]
        for m in norms:
            m.requires_grad_(False)
        opt = torch.optim.SGD(
            [p for p in model.parameters() if p.requires_grad], lr=0.01, fused=True
        )

        def step() -> None:
            model.train()
            for m in norms:  # frozen statistics, as detection fine-tuning does
                m.eval()
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        return step
    if name.startswith("slowconv"):
        # read by oneDNN when PyTorch first asks it for bfloat16 support (not yet done here);
        # set here rather than in Scenario.env, which also asks for a verbose log
        os.environ["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        model = _conv_bn_net(nn, 3, [16] * 4, [1] * 4, nn.BatchNorm2d)
        x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)
        bad = name.endswith("_bad")

        def step() -> None:
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bad):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return step
    if name.startswith("bn_infer"):
        model = _conv_bn_net(nn, 3, [8] * 4, [1] * 4, nn.BatchNorm2d).eval()
        if name.endswith("_fixed"):
            from torch.fx.experimental.optimization import fuse

            model = fuse(model)
        x = torch.randn(4, 3, 128, 128)

        def step() -> None:
            with torch.no_grad():
                model(x)

        return step
    raise SystemExit(f"unknown scenario {name}")


# --------------------------------------------------------------------------------------------
# child side: the models (imports torch)


def _convnet(nn, cin: int = 3, width: int = 16):  # noqa: ANN001, ANN202
    return nn.Sequential(
        nn.Conv2d(cin, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, 10),
    )


def _fused_sgd_step(torch, F, model, x, y):  # noqa: ANN001, ANN202, N803
    """One training step: cross entropy, backward, SGD(fused=True)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _scenario_step(name: str):  # noqa: C901, ANN202 - one small model per scenario
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(SEED)
    family = name.rsplit("_", 1)[0]
    bad = name.endswith("_bad")

    if family in ("sgd", "adamw"):
        model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(64, 64), nn.ReLU())])
        x, y = torch.randn(32, 64), torch.randn(32, 64)
        if family == "sgd":
            kind = {"foreach": False} if bad else {"fused": True}
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, **kind)
        else:
            kind = {"foreach": True} if bad else {"fused": True}
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **kind)

        def step() -> None:
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()

        return step

    if family == "focal":
        anchors, classes = 9, 20
        head = nn.Sequential(
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, anchors * classes, 3, padding=1),
        )
        feats = torch.randn(2, 32, 32, 32)
        target = (torch.rand(2, anchors * classes, 32, 32) > 0.99).float()

        def focal(logits, targets, alpha: float = 0.25, gamma: float = 2.0):  # noqa: ANN001, ANN202
            # torchvision.ops.sigmoid_focal_loss, written out
            p = torch.sigmoid(logits)
            ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
            p_t = p * targets + (1 - p) * (1 - targets)
            loss = ce * ((1 - p_t) ** gamma)
            alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
            return (alpha_t * loss).mean()

        loss_fn = focal if bad else torch.compile(focal)
        opt = torch.optim.SGD(head.parameters(), lr=0.01, fused=True)

        def step() -> None:
            opt.zero_grad()
            loss_fn(head(feats), target).backward()
            opt.step()

        return step

    if family == "frozenbn":

        class FrozenBatchNorm2d(nn.Module):
            """torchvision.ops.FrozenBatchNorm2d: statistics and affine fixed."""

            def __init__(self, n: int) -> None:
                super().__init__()
                self.register_buffer("weight", torch.rand(n) + 0.5)
                self.register_buffer("bias", torch.randn(n))
                self.register_buffer("running_mean", torch.randn(n))
                self.register_buffer("running_var", torch.rand(n) + 0.5)

            def forward(self, x):  # noqa: ANN001, ANN202
                scale = self.weight * (self.running_var + 1e-5).rsqrt()
                bias = self.bias - self.running_mean * scale
                return x * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)

        layers = []
        cin = 3
        for _ in range(4):
            conv, norm = nn.Conv2d(cin, 8, 3, padding=1), FrozenBatchNorm2d(8)
            if not bad:  # fold the frozen statistics into the conv once
                with torch.no_grad():
                    scale = norm.weight * (norm.running_var + 1e-5).rsqrt()
                    conv.weight.mul_(scale.reshape(-1, 1, 1, 1))
                    conv.bias.copy_(norm.bias + (conv.bias - norm.running_mean) * scale)
                layers += [conv, nn.ReLU()]
            else:
                layers += [conv, norm, nn.ReLU()]
            cin = 8
        model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
        x, y = torch.randn(4, 3, 128, 128), torch.randint(0, 10, (4,))
        return _fused_sgd_step(torch, F, model, x, y)

    if family == "autocast":
        model = nn.Sequential(
            *[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.ReLU())],
            nn.Linear(1024, 10),
        )
        x, y = torch.randn(16, 1024), torch.randint(0, 10, (16,))
        if not bad:
            model = model.to(torch.bfloat16)
            x = x.to(torch.bfloat16)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)

        def step() -> None:
            opt.zero_grad()
            if bad:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = F.cross_entropy(model(x), y)
            else:
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return step

    if family == "layout":
        model = nn.Sequential(  # a patchify stem (4x4, stride 4) then a 3x3 conv
            nn.Conv2d(3, 16, 4, stride=4),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(16, 10),
        ).to(memory_format=torch.channels_last)
        x, y = torch.randn(8, 3, 224, 224), torch.randint(0, 10, (8,))
        if not bad:
            x = x.contiguous(memory_format=torch.channels_last)
        return _fused_sgd_step(torch, F, model, x, y)

    if family == "dataloader":
        samples = 64

        class Slow(torch.utils.data.Dataset):
            """Each sample made in Python, as a decoding/augmenting dataset would."""

            def __len__(self) -> int:
                return samples

            def __getitem__(self, i: int):  # noqa: ANN204
                g = torch.Generator().manual_seed(i)
                end = time.perf_counter() + 0.002  # the decoding this stands for
                while time.perf_counter() < end:
                    pass
                return torch.randn(3, 32, 32, generator=g), i % 10

        data = (
            Slow()
            if bad
            else torch.utils.data.TensorDataset(
                torch.randn(samples, 3, 32, 32), torch.arange(samples) % 10
            )
        )
        loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=False)
        model = _convnet(nn, width=32)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)
        batches = iter(())

        def step() -> None:
            nonlocal batches
            try:
                xb, yb = next(batches)
            except StopIteration:
                batches = iter(loader)
                xb, yb = next(batches)
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()

        return step

    return _more_step(name)


def write_tables(prof, name: str, out_dir: Path) -> None:  # noqa: ANN001
    """The ``key_averages()`` tables of the profiled run, as torch prints them (module doc)."""
    for suffix, (by_shape, sort_by, limit) in TABLE_VARIANTS.items():
        text = prof.key_averages(group_by_input_shape=by_shape).table(
            sort_by=sort_by, row_limit=limit
        )
        (out_dir / f"{name}{suffix}").write_text(text)


def run_child(name: str, out_dir: Path, tables: bool = False) -> None:
    """Record ``name``'s trace (and with ``tables`` its key_averages tables) into
    ``out_dir`` (this runs in the child process)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    sc = BY_NAME[name]
    torch.set_num_threads(1)  # one thread: timings that other load on the machine barely moves
    step = _scenario_step(name)
    raw = out_dir / f"{name}.trace.json"
    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        with_stack=sc.with_stack,
        with_modules=sc.with_stack,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    with open(f"{raw}.gz", "wb") as out:
        out.write(gzip.compress(raw.read_bytes(), compresslevel=9, mtime=0))
    raw.unlink()
    if tables:
        write_tables(prof, name, out_dir)
    print(f"done: {name} steps={WAIT + WARMUP + ACTIVE}", flush=True)


def run_memory_child(name: str, out_dir: Path) -> None:
    """Record ``name`` with ``profile_memory=True``: its tables only (module doc)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.set_num_threads(1)
    step = _scenario_step(name)
    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        profile_memory=True,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    averages = prof.key_averages()
    (out_dir / f"{name}.memory.table.txt").write_text(
        averages.table(sort_by="self_cpu_time_total", row_limit=-1)
    )
    (out_dir / f"{name}.toplevel.table.txt").write_text(
        averages.table(
            sort_by="cpu_time_total",
            row_limit=-1,
            header=f"{name}: top-level ops",
            top_level_events_only=True,
        )
    )
    print(f"done: {name} memory tables", flush=True)


# --------------------------------------------------------------------------------------------
# parent side


def _versions(out_dir: Path) -> dict[str, str]:
    """Python, torch, oneDNN (from a recorded log's header) and the machine."""
    code = "import torch; print(torch.__version__)"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        torch_version = out.stdout.strip()
    except OSError:
        torch_version = ""
    onednn = ""
    for log in sorted(out_dir.glob("*.log")):
        m = re.search(r"oneDNN (v\S+)", log.read_text(errors="replace"))
        if m:
            onednn = m.group(1)
            break
    flags = _cpu_flags()
    return {
        "python": platform.python_version(),
        "torch": torch_version,
        "onednn": onednn,
        "machine": platform.machine(),
        "cpu_flags": " ".join(f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags),
    }


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


def run_scenario(sc: Scenario, out_dir: Path, tables: bool = False, memory: bool = False) -> dict:
    """Run one scenario in a child; return its manifest entry."""
    extra = ["--memory"] if memory else ["--tables"] if tables else []
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        sc.name,
        "--out",
        str(out_dir),
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONEDNN_", "DNNL_"))}
    env.update(sc.env)
    env["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="dnnlens-inductor-") as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache  # compile from scratch, never a stale cache
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{sc.name} failed:\n{done.stderr[-3000:]}")
    files = [f"{sc.name}.trace.json.gz"]
    if memory:
        files = [f"{sc.name}.memory.table.txt", f"{sc.name}.toplevel.table.txt"]
    elif sc.env and not tables:  # the table runs keep their trace and tables only
        (out_dir / f"{sc.name}.log").write_text(done.stdout + done.stderr)
        files.append(f"{sc.name}.log")
    if tables and not memory:
        files += [f"{sc.name}{suffix}" for suffix in TABLE_VARIANTS]
    shown = " ".join(f"{k}={v}" for k, v in sorted(sc.env.items()))
    child = ["python", "scripts/make_traces.py", "--child", sc.name, "--out", "DIR", *extra]
    return {
        **asdict(sc),
        "files": files,
        "steps": {"wait": WAIT, "warmup": WARMUP, "active": ACTIVE},
        "command": (shown + " " if shown else "") + shlex.join(child),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="*", choices=sorted(BY_NAME), default=None)
    parser.add_argument(
        "--tables",
        action="store_true",
        help="also write the key_averages() tables of each run (default out: "
        "sample_logs/framework_tables/)",
    )
    parser.add_argument(
        "--memory-tables",
        action="store_true",
        help="record the chosen scenarios (default sgd_bad) with profile_memory=True: tables "
        "only (default out: sample_logs/framework_tables/)",
    )
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = TABLES_OUT if args.tables or args.memory_tables else DEFAULT_OUT
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        if args.memory:
            run_memory_child(args.child, args.out)
        else:
            run_child(args.child, args.out, args.tables)
        return 0
    if args.memory_tables:
        return _memory_tables(args)
    chosen = [BY_NAME[n] for n in args.only] if args.only else SCENARIOS
    manifest_path = args.out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    scenarios = manifest.setdefault("scenarios", {})
    for sc in chosen:
        print(f"recording {sc.name} ...", flush=True)
        scenarios[sc.name] = run_scenario(sc, args.out, args.tables)
    manifest.update(
        generator="scripts/make_traces.py",
        versions=_versions(args.out),
        seed=SEED,
        schedule={"wait": WAIT, "warmup": WARMUP, "active": ACTIVE},
        threads=1,
        notes=_notes(args.tables),
    )
    manifest["scenarios"] = dict(sorted(scenarios.items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


def _notes(tables: bool) -> str:
    """The manifest's note on what the files are."""
    common = (
        "Each trace holds the ACTIVE profiled steps (ProfilerStep#N spans); "
        "record_shapes=True; one intra-op thread."
    )
    if tables:
        return common + (
            " Tables (*.table.txt) are prof.key_averages().table() of the same profiled run: "
            f"every row by self CPU, the top {TOP_ROWS} by CPU total, and by input shape. "
            "Runs with ONEDNN_VERBOSE in env keep no log."
        )
    return common + (
        " Logs are the child's stdout and stderr with ONEDNN_VERBOSE=1 and "
        "ONEDNN_VERBOSE_TIMESTAMP=1 (every step, warm-up too)."
    )


def _memory_tables(args: argparse.Namespace) -> int:
    """``--memory-tables``: the memory and top-level tables, in the manifest as
    ``<scenario>.memory``."""
    manifest_path = args.out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    scenarios = manifest.setdefault("scenarios", {})
    for name in args.only or ["sgd_bad"]:
        print(f"recording {name} with profile_memory ...", flush=True)
        entry = run_scenario(BY_NAME[name], args.out, memory=True)
        entry["description"] += "; profile_memory=True, tables only"
        scenarios[f"{name}.memory"] = entry
    manifest["scenarios"] = dict(sorted(scenarios.items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
