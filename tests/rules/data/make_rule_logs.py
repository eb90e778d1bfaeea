"""Make the real verbose logs of tests/rules/data (developers only; CI reads the files).

    python3 tests/rules/data/make_rule_logs.py

Each scenario runs in a child process with ONEDNN_VERBOSE=2 and OMP_NUM_THREADS=2 and its
whole stdout+stderr is the log. Scenarios:

* shape_churn_infer: a small NCHW conv net, fp32 inference under torch.no_grad(): 3 passes
  at 64x64 (warm-up), then 8 passes whose input size changes (64, 48, 56, 40, 64, 32, 72,
  44): every new size creates new primitives (create:cache_miss) after warm-up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = (64, 64, 64, 64, 48, 56, 40, 64, 32, 72, 44)


def child(name: str) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    ).eval()
    with torch.no_grad():
        for size in SIZES:
            model(torch.randn(4, 3, size, size))
    print(f"done: {name} passes={len(SIZES)}", flush=True)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    for name in ("shape_churn_infer",):
        env = dict(os.environ, ONEDNN_VERBOSE="2", OMP_NUM_THREADS="2", PYTHONUNBUFFERED="1")
        out = subprocess.run(
            [sys.executable, __file__, "--child", name],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        (HERE / f"{name}.log").write_text(out.stdout + out.stderr, encoding="utf-8")
        print(f"wrote {name}.log")


if __name__ == "__main__":
    main()
