"""Generate real oneDNN verbose logs and PyTorch profiler output into ``sample_logs/``.

Every scenario runs in a fresh child process (this script re-invoked with ``--child NAME``) so
that oneDNN reads its environment variables (``ONEDNN_VERBOSE``, ``ONEDNN_VERBOSE_TIMESTAMP``,
``ONEDNN_MAX_CPU_ISA``) at start-up and prints its header lines.  The child's stdout and stderr
are captured together into ``<scenario>.log``; profiler scenarios additionally write a chrome
trace and key-averages tables next to it.  No pass markers are printed into the logs: the only
program output is the final line ``done: <scenario> passes=<N>`` (plus, for the combined
profiler scenario, the key-averages table), which a parser must classify as foreign.

A ``MANIFEST.json`` describing every produced file (model, layout, dtype, mode, pass counts,
environment, versions and command line) is written at the end; ``--only`` updates just the
entries of the selected scenarios.

Usage::

    python3 scripts/make_sample_logs.py                 # all scenarios into sample_logs/
    python3 scripts/make_sample_logs.py --only lstm_infer --out /tmp/logs
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
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_logs"
SEED = 0
NUM_THREADS = "2"
MANIFEST_NAME = "MANIFEST.json"

# Environment variables inherited from the caller that could change what oneDNN prints.
_SCRUBBED_PREFIXES = ("ONEDNN_", "DNNL_", "MKLDNN_", "TORCHINDUCTOR_", "TORCH_COMPILE_")

_VERBOSE2 = {"ONEDNN_VERBOSE": "2"}
_PROFILE_ENV = {"ONEDNN_VERBOSE": "1", "ONEDNN_VERBOSE_TIMESTAMP": "1"}

_BF16_NOTE = (
    "On CPUs without avx_ne_convert or avx512bw/vl/dq PyTorch refuses its mkldnn bf16 "
    "path and runs bf16 convolutions/matmuls natively, so the log may hold no oneDNN lines."
)

CONVNET = "SmallResNet(conv-bn-relu stem, maxpool, residual block, strided conv, avgpool, linear)"
CONVNET_INPUT = "batch 4, 3x64x64"
LSTMNET = "LSTMNet(2-layer nn.LSTM input 32 hidden 64, linear head 64->10)"
LSTMNET_INPUT = "seq 20, batch 4, features 32"


@dataclass(frozen=True)
class Scenario:
    """One run of a small model with a given oneDNN configuration."""

    name: str
    description: str
    model: str = "convnet"  # "convnet" or "lstm"
    memory_format: str = "nchw"  # "nchw" or "channels_last"
    dtype: str = "fp32"  # "fp32" or "bf16_autocast"
    mode: str = "infer"  # "infer" or "train"
    warmup: int = 1
    timed: int = 10
    env: dict[str, str] = field(default_factory=lambda: dict(_VERBOSE2))
    runner: str = "eager"  # "eager", "compile_freezing" or "jit_freeze"
    profile: bool = False  # wrap the timed passes in torch.profiler
    profile_outputs: tuple[str, ...] = ()  # subset of ("trace", "table", "shapes")
    print_table: bool = False  # print the key_averages table to stdout (combined log)
    contention: int = 0  # number of busy-loop processes running alongside
    fallback_only: bool = False  # only run when explicitly selected or as a fallback

    @property
    def total(self) -> int:
        """Total number of model passes (warmup + timed)."""
        return self.warmup + self.timed


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
            warmup=2,
        ),
        Scenario(
            "jit_freeze_infer",
            "Fallback for compile_freezing_infer: torch.jit.freeze(torch.jit.trace(model)), "
            "NCHW fp32 inference under torch.no_grad().",
            runner="jit_freeze",
            warmup=2,
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


def run_child(sc: Scenario, out_dir: Path) -> None:
    """Run one scenario in this (fresh) process; verbose output goes to our stdout."""
    import torch

    torch.set_num_threads(int(NUM_THREADS))
    model, inputs, targets = _build_model(sc)
    step = _make_step(sc, model, inputs, targets)

    for _ in range(sc.warmup):
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


def _onednn_version_from_log(path: Path) -> str | None:
    """Extract the oneDNN version from a verbose log header, if present."""
    pattern = re.compile(r"onednn_verbose,.*info,oneDNN (v\S+)")
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = pattern.search(line)
            if m:
                return m.group(1)
    return None


def _torch_versions() -> tuple[str, str | None]:
    """Return ``(torch version, oneDNN version from torch's build config)``."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch; print(torch.__version__); print(torch.__config__.show())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    torch_version = out.splitlines()[0].strip()
    m = re.search(r"MKL-DNN (v\S+)", out)
    return torch_version, m.group(1) if m else None


def run_scenario(sc: Scenario, out_dir: Path) -> dict:
    """Run one scenario in a child process and return its result record."""
    log_path = out_dir / f"{sc.name}{OUTPUT_SUFFIXES['log']}"
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        sc.name,
        "--out",
        str(out_dir),
    ]
    shown_argv = [
        "python3",
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
        "returncode": proc.returncode,
        "elapsed_s": round(elapsed, 2),
        "env": recorded_env,
        "command": command,
    }


def _manifest_entries(result: dict, out_dir: Path, versions: tuple[str, str | None]) -> list:
    """Build one manifest entry per file produced by a scenario."""
    sc: Scenario = result["scenario"]
    log_path = out_dir / f"{sc.name}.log"
    header_version = _onednn_version_from_log(log_path)
    common = {
        "scenario": sc.name,
        "description": sc.description,
        "model": LSTMNET if sc.model == "lstm" else CONVNET,
        "input": LSTMNET_INPUT if sc.model == "lstm" else CONVNET_INPUT,
        "runner": sc.runner,
        "memory_format": sc.memory_format,
        "dtype": sc.dtype,
        "mode": sc.mode,
        "warmup_passes": sc.warmup,
        "timed_passes": sc.timed,
        "total_passes": sc.total,
        "profiled_passes": sc.timed if sc.profile else 0,
        "contention_processes": sc.contention,
        "env": result["env"],
        "torch_version": versions[0],
        "onednn_version": header_version or versions[1],
        "onednn_version_source": "log_header" if header_version else "torch_build_config",
        "command": result["command"],
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


def _write_manifest(out_dir: Path, new_entries: list, replaced: set[str], versions) -> None:
    """Merge new entries into MANIFEST.json, replacing entries of re-run scenarios."""
    path = out_dir / MANIFEST_NAME
    old_files: list = []
    if path.exists():
        with contextlib.suppress(ValueError, KeyError):
            old_files = json.loads(path.read_text())["files"]
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
        "torch_version": versions[0],
        "onednn_version": versions[1],
        "seed": SEED,
        "notes": "Pass counts are model forward passes (inference) or optimizer steps "
        "(training). No iteration markers are printed; each log ends with the program line "
        "'done: <scenario> passes=<N>'.",
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
    parser.add_argument("--child", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out_dir: Path = args.out.resolve()

    if args.child:
        run_child(SCENARIOS[args.child], out_dir)
        return 0

    out_dir.mkdir(parents=True, exist_ok=True)
    selected = args.only or [n for n, s in SCENARIOS.items() if not s.fallback_only]
    versions = _torch_versions()
    entries: list = []
    ran: set[str] = set()
    failures: list[str] = []
    queue = list(selected)
    while queue:
        name = queue.pop(0)
        sc = SCENARIOS[name]
        print(f"[make_sample_logs] {name} ...", end=" ", flush=True)
        result = run_scenario(sc, out_dir)
        ran.add(name)
        status = "ok" if result["returncode"] == 0 else f"FAILED rc={result['returncode']}"
        print(f"{status} ({result['elapsed_s']} s)", flush=True)
        if result["returncode"] != 0:
            failures.append(name)
            if sc.runner == "compile_freezing" and "jit_freeze_infer" not in selected:
                queue.append("jit_freeze_infer")
        entries.extend(_manifest_entries(result, out_dir, versions))

    _write_manifest(out_dir, entries, ran, versions)
    total = sum(p.stat().st_size for p in out_dir.iterdir() if p.is_file())
    print(f"[make_sample_logs] wrote {_display_path(out_dir)} ({total / 1e6:.2f} MB)")
    if failures:
        print(f"[make_sample_logs] failed: {', '.join(failures)} (see their .log files)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
