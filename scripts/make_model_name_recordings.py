"""Record a run whose inputs name its model: a small ResNet-style class of its own name.

The model-name sources (``dnnlens.analysis.model_name``) read the outermost ``nn.Module:``
frames of a trace and the ``nn.Module:`` rows of a profiler table. The other recordings
here build their nets as ``nn.Sequential``, so this one defines ``TinyResNet`` (a stem, two
residual blocks, a classifier) and calls ``nn.CrossEntropyLoss`` as a module of its own
beside it, as a training script does. One child process (torch 2.13, CPU, one intra-op
thread, ``ONEDNN_VERBOSE=1``) trains it for ``WAIT + WARMUP + ACTIVE`` steps under
``torch.profiler`` (``with_stack=True, with_modules=True, record_shapes=True``, a step
marked after each) and writes, into ``tests/data/model_name/``:

* ``tinyresnet_train.log``: the child's standard output, oneDNN's verbose lines;
* ``tinyresnet_train.trace.json.gz``: the trace of the ACTIVE steps (``export_chrome_trace``);
* ``tinyresnet_train.table.txt``: ``key_averages().table(sort_by="cpu_time_total")``;
* ``MANIFEST.json``: how they were made.

Usage (torch 2.13 installed in the running Python)::

    python scripts/make_model_name_recordings.py                # into tests/data/model_name/
    python scripts/make_model_name_recordings.py --out /tmp/model_name
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "data" / "model_name"
NAME = "tinyresnet_train"
SEED = 0
WAIT, WARMUP, ACTIVE = 1, 1, 3
ROW_LIMIT = 40


def _record(out: Path) -> None:
    """The child: train TinyResNet under the profiler; the trace and table into ``out``."""
    import torch
    from torch import nn
    from torch.nn import functional as F
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(SEED)
    torch.set_num_threads(1)

    class Block(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
            self.b1 = nn.BatchNorm2d(channels)
            self.c2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(channels)

        def forward(self, x):  # noqa: ANN001, ANN202
            return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

    class TinyResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            self.blocks = nn.Sequential(Block(16), Block(16))
            self.head = nn.Linear(16, 10)

        def forward(self, x):  # noqa: ANN001, ANN202
            h = self.blocks(F.relu(self.stem(x)))
            return self.head(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))

    model, loss_fn = TinyResNet(), nn.CrossEntropyLoss()
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    raw = out / f"{NAME}.trace.json"
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
        record_shapes=True,
        with_stack=True,
        with_modules=True,
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            prof.step()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=ROW_LIMIT)
    (out / f"{NAME}.table.txt").write_text(table + "\n")
    with open(raw, "rb") as src, gzip.GzipFile(out / f"{NAME}.trace.json.gz", "wb", mtime=0) as dst:
        dst.write(src.read())
    raw.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        _record(args.out)
        return 0
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--child", "--out", str(args.out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stderr)
        return done.returncode
    (args.out / f"{NAME}.log").write_text(done.stdout)
    import torch

    manifest = {
        "script": "scripts/make_model_name_recordings.py",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "env": {"ONEDNN_VERBOSE": "1", "OMP_NUM_THREADS": "1"},
        "schedule": {"wait": WAIT, "warmup": WARMUP, "active": ACTIVE},
        "files": {
            f"{NAME}.log": "oneDNN verbose lines of the whole run (standard output)",
            f"{NAME}.trace.json.gz": "profiler trace of the active steps, with module frames",
            f"{NAME}.table.txt": f"key_averages().table(sort_by='cpu_time_total', "
            f"row_limit={ROW_LIMIT})",
        },
        "model": "TinyResNet: conv3x3 3->16 stem, two residual blocks of 16 channels "
        "(conv3x3 + BatchNorm2d twice), average pool, linear 16->10; batch 4 at 16x16; "
        "nn.CrossEntropyLoss as a module; SGD(momentum=0.9)",
    }
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for path in sorted(args.out.iterdir()):
        print(f"{path.stat().st_size:>9,} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
