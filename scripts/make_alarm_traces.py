"""Record the traces the framework rules were not tuned on: false alarms and missed wins.

Small PyTorch profiler traces (torch 2.13, CPU), each a few seconds, recorded like
``scripts/make_traces.py`` does (a fresh child process per scenario, one intra-op thread,
``schedule(wait=1, warmup=1, active=ACTIVE)``, ``record_shapes=True``, ``prof.step()`` after
each step, ``export_chrome_trace`` gzipped), into ``tests/data/alarms/`` with a
``MANIFEST.json`` that says how each was made. The scenarios:

* ``resnet_cl_fused``: a small hand-written ResNet-style net (stem, two residual stages of
  two basic blocks, trainable BatchNorm2d) in channels_last, fed channels_last input,
  cross entropy, ``SGD(momentum=0.9, fused=True)``: a clean channels_last training step;
  its NCHW<->channels_last copies are torch's own (the fused optimizer's and the loss's);
* ``lstm_lm_adam_loop`` / ``lstm_lm_adam_fused``: a small LSTM language model (embedding
  1000x64, LSTM 64->128, linear 128->1000, batch 16 x 64 tokens) trained with
  ``Adam(foreach=False)`` (a Python loop over the parameters) and with ``Adam(fused=True)``;
* ``seg_cl_loss4d`` / ``seg_cl_flat``: a per-pixel classifier in channels_last whose cross
  entropy takes the ``[N, C, H, W]`` logits (``_log_softmax`` copies them to NCHW) and the
  same with the logits as ``[N*H*W, C]``, a view;
* ``conv_lstm_train`` (a oneDNN verbose log, ``ONEDNN_VERBOSE=1``, no profiler): a Conv1d
  before an LSTM, trained: weight reorders of a convolution beside those of the rnn
  primitive;
* ``cnn_bf16_autocast`` / ``cnn_fp32``: a small convnet trained under
  ``torch.autocast("cpu", dtype=torch.bfloat16)`` and its float32 twin (no casts).

Usage (with torch 2.13 installed in the running Python)::

    python scripts/make_alarm_traces.py                 # all into tests/data/alarms/
    python scripts/make_alarm_traces.py --only cnn_fp32 --out /tmp/alarms
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "data" / "alarms"
SEED = 0
WAIT, WARMUP, ACTIVE = 1, 1, 8

#: Scenarios recorded as a oneDNN verbose log (``ONEDNN_VERBOSE=1``, the child's stdout),
#: no profiler: STEPS training steps.
LOG_SCENARIOS = {
    "conv_lstm_train": "Conv1d 64->256 (k7) over 20 steps of a batch of 4, then an LSTM "
    "256->64 and a linear head, cross entropy, SGD(momentum=0.9): oneDNN runs the "
    "convolution and the rnn primitive, and reorders the weights of both every step",
}
STEPS = 10

SCENARIOS = {
    "resnet_cl_fused": "ResNet-style net (stem conv 3->64 at 16x16, stages of 2 basic blocks "
    "at 64 and 128 channels), trainable BatchNorm2d, channels_last model and input, batch 4, "
    "cross entropy, SGD(momentum=0.9, fused=True)",
    "lstm_lm_adam_loop": "LSTM language model (embedding 1000x64, LSTM 64->128, linear "
    "128->1000, batch 16 x 64 tokens), cross entropy, Adam(foreach=False)",
    "lstm_lm_adam_fused": "the same LSTM language model with Adam(fused=True)",
    "seg_cl_loss4d": "per-pixel classifier (conv3x3 3->32 + BatchNorm2d + ReLU, conv3x3 "
    "32->32 classes at 32x32), channels_last model and input, batch 4, cross entropy on the "
    "[N, C, H, W] logits, SGD(momentum=0.9, fused=True)",
    "seg_cl_flat": "the same, cross entropy on the logits as [N*H*W, C] "
    "(permute(0, 2, 3, 1).reshape(-1, C): a view of channels_last memory)",
    "cnn_bf16_autocast": "convnet (4 conv3x3 128 ch at 8x8 + BatchNorm2d + ReLU, linear), "
    "batch 4, forward and loss under torch.autocast('cpu', dtype=torch.bfloat16), "
    "SGD(fused=True)",
    "cnn_fp32": "the same convnet in float32, no autocast",
}


def _step(name: str):  # noqa: ANN202, C901 - one small model per scenario
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(SEED)
    if name == "resnet_cl_fused":

        class Block(nn.Module):
            def __init__(self, cin: int, cout: int, stride: int) -> None:
                super().__init__()
                self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.b1 = nn.BatchNorm2d(cout)
                self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.b2 = nn.BatchNorm2d(cout)
                self.down = None
                if stride != 1 or cin != cout:
                    self.down = nn.Sequential(
                        nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                    )

            def forward(self, x):  # noqa: ANN001, ANN202
                out = F.relu(self.b1(self.c1(x)))
                out = self.b2(self.c2(out))
                return F.relu(out + (x if self.down is None else self.down(x)))

        model = nn.Sequential(
            nn.Conv2d(3, 64, 3, 1, 1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            Block(64, 64, 1),
            Block(64, 64, 1),
            Block(64, 128, 2),
            Block(128, 128, 1),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(128, 10),
        ).to(memory_format=torch.channels_last)
        x = torch.randn(4, 3, 16, 16).contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (4,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        return step
    if name.startswith("seg_cl"):
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1),
        ).to(memory_format=torch.channels_last)
        x = torch.randn(4, 3, 32, 32).contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 32, (4, 32, 32))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
        flat = name == "seg_cl_flat"

        def step() -> None:
            opt.zero_grad()
            logits = model(x)
            if flat:
                loss = F.cross_entropy(logits.permute(0, 2, 3, 1).reshape(-1, 32), y.reshape(-1))
            else:
                loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()

        return step
    if name.startswith("lstm_lm"):

        class LM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(1000, 64)
                self.rnn = nn.LSTM(64, 128, batch_first=True)
                self.out = nn.Linear(128, 1000)

            def forward(self, t):  # noqa: ANN001, ANN202
                return self.out(self.rnn(self.emb(t))[0])

        model = LM()
        tokens = torch.randint(0, 1000, (16, 65))
        x, y = tokens[:, :-1], tokens[:, 1:]
        kind = {"fused": True} if name.endswith("_fused") else {"foreach": False}
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, **kind)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1)).backward()
            opt.step()

        return step
    if name.startswith("cnn_"):
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Conv2d(3 if i == 0 else 128, 128, 3, padding=1), nn.BatchNorm2d(128)]
            layers.append(nn.ReLU())
        model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
        x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)
        low = name == "cnn_bf16_autocast"

        def step() -> None:
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return step
    if name == "conv_lstm_train":

        class ConvLSTM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv = nn.Conv1d(64, 256, 7, padding=3)
                self.rnn = nn.LSTM(256, 64)
                self.out = nn.Linear(64, 10)

            def forward(self, x):  # noqa: ANN001, ANN202 - x: [batch, 16, time]
                h = self.conv(x).permute(2, 0, 1)  # [time, batch, 256]
                return self.out(self.rnn(h)[0][-1])

        model = ConvLSTM()
        x, y = torch.randn(4, 64, 20), torch.randint(0, 10, (4,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        return step
    raise SystemExit(f"unknown scenario {name}")


def run_child(name: str, out_dir: Path) -> None:
    """Record ``name``'s trace into ``out_dir`` (in the child process)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.set_num_threads(1)
    step = _step(name)
    if name in LOG_SCENARIOS:  # a verbose log: oneDNN prints to this process's stdout
        for _ in range(STEPS):
            step()
        return
    raw = out_dir / f"{name}.trace.json"
    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    with open(f"{raw}.gz", "wb") as out:
        out.write(gzip.compress(raw.read_bytes(), compresslevel=9, mtime=0))
    raw.unlink()


def _cpu() -> str:
    """The CPU's model name, core count and the ISA flags that matter here."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), ""
    )
    flags = next(
        (ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []
    )
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(isa)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--only", nargs="*", choices=sorted({*SCENARIOS, *LOG_SCENARIOS}), default=None
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        run_child(args.child, args.out)
        return 0
    manifest_path = args.out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    entries = manifest.setdefault("scenarios", {})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONEDNN_", "DNNL_"))}
    env["OMP_NUM_THREADS"] = "1"
    for name in args.only or [*SCENARIOS, *LOG_SCENARIOS]:
        print(f"recording {name} ...", flush=True)
        started = time.perf_counter()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--out"]
        log = name in LOG_SCENARIOS
        run_env = {**env, "ONEDNN_VERBOSE": "1"} if log else env
        done = subprocess.run([*cmd, str(args.out)], env=run_env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        if log:
            (args.out / f"{name}.log").write_text(done.stdout)
        shown = "ONEDNN_VERBOSE=1 " if log else ""
        entries[name] = {
            "description": (LOG_SCENARIOS if log else SCENARIOS)[name],
            "file": f"{name}.log" if log else f"{name}.trace.json.gz",
            "command": f"{shown}OMP_NUM_THREADS=1 python scripts/make_alarm_traces.py --child "
            f"{name} --out DIR" + (f" ({STEPS} steps, stdout)" if log else ""),
            "seconds": round(time.perf_counter() - started, 1),
        }
    import torch

    manifest.update(
        generator="scripts/make_alarm_traces.py",
        versions={
            "python": platform.python_version(),
            "torch": torch.__version__,
            "machine": platform.machine(),
            "cpu": _cpu(),
        },
        seed=SEED,
        schedule={"wait": WAIT, "warmup": WARMUP, "active": ACTIVE},
        threads=1,
        notes="Each trace holds ACTIVE ProfilerStep#N spans; record_shapes=True; one "
        "intra-op thread; recorded on a shared machine (its step-to-step spread is part of "
        "what the tests check: tests/test_alarm_recordings.py).",
    )
    manifest["scenarios"] = dict(sorted(entries.items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
