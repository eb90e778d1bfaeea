"""Make the real verbose logs of tests/data/projection (developers only; CI reads the files).

    /work/venvs/T213/bin/python scripts/make_projection_logs.py   # any torch with oneDNN

Each scenario runs in a child process with ONEDNN_VERBOSE=2 and OMP_NUM_THREADS=2 (seeded
random weights and data, nothing downloaded); its whole stdout+stderr is the log.
Scenarios, each a case of ``dnnlens project`` that no sample log shows:

* ``lstm_ref_and_jit_train``: an LSTM (input 64, hidden 256, 20 steps, batch 8) that, in
  each of 8 passes, runs an evaluation forward under ``torch.no_grad()`` (oneDNN picks an
  optimised ``brgemm`` rnn, ``forward_inference``) and a training step (oneDNN 3.12 runs the
  ``ref`` rnn for ``forward_training`` and ``backward``): the same primitive measured with
  a reference and an optimised kernel in one log (``replace:reference-kernels``).
* ``cache_capacity_zero_infer``: a small NCHW conv net, fp32 inference, 8 passes, with
  ``ONEDNN_PRIMITIVE_CACHE_CAPACITY=0``: every pass creates every primitive again
  (``create:cache_miss``), the case of ``remove:cache-misses``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "projection"
PASSES = 8
#: Extra environment of each scenario.
SCENARIOS = {
    "lstm_ref_and_jit_train": {},
    "cache_capacity_zero_infer": {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"},
}


def lstm_ref_and_jit_train() -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    lstm = nn.LSTM(64, 256)
    head = nn.Linear(256, 10)
    opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.01)
    x = torch.randn(20, 8, 64)
    y = torch.randint(0, 10, (8,))
    for _ in range(PASSES):
        lstm.eval()
        with torch.no_grad():
            lstm(x)
        lstm.train()
        out, _ = lstm(x)
        loss = nn.functional.cross_entropy(head(out[-1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def cache_capacity_zero_infer() -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
    ).eval()
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        for _ in range(PASSES):
            model(x)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        name = sys.argv[2]
        globals()[name]()
        print(f"done: {name} passes={PASSES}", flush=True)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for name, extra in SCENARIOS.items():
        env = dict(os.environ, ONEDNN_VERBOSE="2", OMP_NUM_THREADS="2", PYTHONUNBUFFERED="1")
        env.update(extra)
        out = subprocess.run(
            [sys.executable, __file__, "--child", name],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        (OUT / f"{name}.log").write_text(out.stdout + out.stderr, encoding="utf-8")
        print(f"wrote {OUT / name}.log")


if __name__ == "__main__":
    main()
