"""Hand counts of the RetinaNet recordings (``sample_logs/retinanet/``).

The recordings are the seed paper's case, RetinaNet with a ResNeXt50-FPN backbone training
on a 2-core AVX2 machine, a baseline and its fixes one at a time
(``scripts/make_retinanet_recordings.py``). Everything here is counted with the standard
library from the files, without dnnlens, so that dnnlens can be checked against it; the
script writes these counts into ``MANIFEST.json`` (``hand_count``) and the tests below
count again and compare, and check the counts that follow from the model's structure.

How each figure is counted (all per profiled step: the mean over the trace's
``ProfilerStep#N`` spans, 3 here; times in ms from the events' ``dur``):

* ``step_ms``: the mean ``dur`` of the ``ProfilerStep#N`` spans.
* Events: the trace's complete (``ph == "X"``) events on the thread of the step spans
  (forward, backward and optimizer all run there on the CPU), each given its parent by a
  stack over (start, longest first); an event's step is the step span it lies in.
  *Forward* events have no ancestor that is a backward node
  (``autograd::engine::evaluate_function: ...``), an ``Optimizer.`` span or an
  ``enumerate(DataLoader)#`` span. *Segments* are the step span's direct children.
* ``optimizer``: the ``Optimizer.step#SGD.step`` spans (``ms``) and their direct children
  (``ops``).
* ``data_loading``: the ``enumerate(DataLoader)#`` spans.
* ``frozenbn``: forward ``aten::mul`` / ``aten::add`` / ``aten::sub`` / ``aten::rsqrt``
  events with an input of dims ``[1, C, 1, 1]`` (C > 1), outermost: torchvision's
  FrozenBatchNorm2d reshapes its four buffers to ``[1, C, 1, 1]`` and computes
  ``x * (w * (rv + eps).rsqrt()) + (b - rm * scale)``, 7 such ops a module; nothing else
  in this model has an input of that shape (the transform's mean and std are
  ``[3, 1, 1]``). The traces have no module frames (recorded without ``with_modules``), so
  shape is what tells them. ``backward_*``: the backward nodes of those ops, matched by
  sequence number *and* name (``aten::mul`` -> ``MulBackward0``): an op that creates no
  node (the buffers need no gradient) shares its sequence number with the next op that
  does, which in the frozen first layers is a convolution of the next layer.
* ``focal_loss``: the forward segments of torchvision's ``sigmoid_focal_loss``, per image
  from ``aten::sigmoid`` to the first ``aten::sum`` after it (16 ops: sigmoid,
  binary_cross_entropy_with_logits, the ``p_t``, modulating factor and ``alpha_t``
  elementwise ops, sum); ``backward_*``: the backward nodes whose sequence number lies
  between those of the window's sigmoid and sum (the autograd sequence counter rises by
  one per node created, so these are the nodes created in the window, autocast's casts
  too). When the loss is compiled, its forward is the ``TorchDynamo Cache Lookup`` and
  ``Torch-Compiled Region: ...`` segments and its backward the
  ``CompiledFunctionBackward`` nodes.
* From the verbose log (the lines of one profiled step: those after the program's
  ``step N-1 loss ...`` line up to its ``step N loss ...`` line, for the traced steps N):
  ``onednn_ms`` the sum of every ``exec`` line's time; ``conv_forward``,
  ``conv_backward_data``, ``conv_backward_weights`` the convolution exec lines by
  prop_kind; ``reorders`` all reorder exec lines;
  ``weight_reorders`` the reorder exec lines whose dims (the problem field,
  ``256x128x1x1``) are the weight dims of a convolution of the same log: from its problem
  descriptor ``[gG]mbN_icIocO_..khK..kwL``, ``OxIxKxL``, or ``GxO/GxI/GxKxL`` when grouped.
  Activations have the batch (2) first and so never match; this takes the weights to
  oneDNN's layout for the forward and the backward-data pass, the weight gradients back to
  PyTorch's, and plain copies of weights. ``bias_reorders``: the 1-D reorder exec lines
  whose dims are the output channels of a convolution with a bias (``bia:`` not
  ``undef``): plain ``a -> a`` copies of biases and their gradients, counted apart.
* ``share`` = ms / ``step_ms``.

The figures follow the steps' noise: on a shared 2-core machine a step varies by 10-30%.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

RUNS = Path(__file__).resolve().parent.parent / "sample_logs" / "retinanet"
BACKWARD = "autograd::engine::evaluate_function: "
_NOT_FORWARD = (BACKWARD, "Optimizer.", "enumerate(DataLoader)#")
_FROZENBN_OPS = {"aten::mul", "aten::add", "aten::sub", "aten::rsqrt"}
_STEP_LINE = re.compile(r"^step (\d+) loss ")
_CONV = re.compile(r"^(?:g(\d+))?mb\d+_ic(\d+)oc(\d+)_.*?kh(\d+).*?kw(\d+)")


# --------------------------------------------------------------------------------------------
# the trace


class Trace:
    """The main thread's events of a trace, with parents and steps."""

    def __init__(self, path: Path) -> None:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        events = [e for e in events if e.get("ph") == "X" and e.get("cat") != "Trace"]
        spans = [e for e in events if e["name"].startswith("ProfilerStep#")]
        main = spans[0]["tid"]
        self.events = sorted(
            (e for e in events if e["tid"] == main), key=lambda e: (e["ts"], -e["dur"])
        )
        self.steps = sorted(spans, key=lambda e: e["ts"])
        self.parent: dict[int, dict | None] = {}
        stack: list[dict] = []
        for e in self.events:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-3:
                stack.pop()
            self.parent[id(e)] = stack[-1] if stack else None
            stack.append(e)

    def ancestors(self, e: dict):  # noqa: ANN201
        while (e := self.parent[id(e)]) is not None:
            yield e

    def step_of(self, e: dict) -> int:
        for k, s in enumerate(self.steps):
            if s["ts"] <= e["ts"] < s["ts"] + s["dur"]:
                return k
        return -1

    def forward(self, e: dict) -> bool:
        return not any(a["name"].startswith(_NOT_FORWARD) for a in self.ancestors(e))

    def segments(self, k: int) -> list[dict]:
        step = self.steps[k]
        return [e for e in self.events if self.parent[id(e)] is step]

    def per_step(self, events: list[dict]) -> dict:
        """Calls and ms per step (means over the steps), of events in the steps."""
        inside = [e for e in events if self.step_of(e) >= 0]
        n = len(self.steps)
        return {
            "calls": len(inside) / n,
            "ms": sum(e["dur"] for e in inside) / 1e3 / n,
        }


def _dims(e: dict) -> list:
    return e.get("args", {}).get("Input Dims") or []


def _seq(e: dict) -> int | None:
    return e.get("args", {}).get("Sequence number")


def _node_name(op: str) -> str:
    """``aten::binary_cross_entropy_with_logits`` -> ``BinaryCrossEntropyWithLogitsBackward``."""
    return "".join(w.capitalize() for w in op.split("::", 1)[1].split("_")) + "Backward"


def _frozenbn(t: Trace) -> dict:
    def norm_shaped(d: list) -> bool:
        return len(d) == 4 and d[0] == 1 and d[1] > 1 and d[2] == 1 and d[3] == 1

    fwd = [
        e
        for e in t.events
        if e["name"] in _FROZENBN_OPS and any(norm_shaped(d) for d in _dims(e)) and t.forward(e)
    ]
    chosen = {id(e) for e in fwd}
    fwd = [e for e in fwd if not any(id(a) in chosen for a in t.ancestors(e))]
    want = {(_seq(e), _node_name(e["name"])) for e in fwd}
    nodes = [
        e
        for e in t.events
        if e["name"].startswith(BACKWARD)
        and (_seq(e), re.sub(r"\d+$", "", e["name"][len(BACKWARD) :])) in want
    ]
    return _pair(t, fwd, nodes)


def _focal_loss(t: Trace) -> dict:
    if any(e["name"].startswith("Torch-Compiled Region") for e in t.events):
        fwd = [
            e
            for k in range(len(t.steps))
            for e in t.segments(k)
            if e["name"].startswith(("Torch-Compiled Region", "TorchDynamo Cache Lookup"))
        ]
        nodes = [e for e in t.events if e["name"] == BACKWARD + "CompiledFunctionBackward"]
        return _pair(t, fwd, nodes)
    fwd, ranges = [], []
    for k in range(len(t.steps)):
        seg = t.segments(k)
        names = [e["name"] for e in seg]
        start = 0
        while "aten::sigmoid" in names[start:]:
            a = names.index("aten::sigmoid", start)
            b = names.index("aten::sum", a)
            fwd += seg[a : b + 1]
            ranges.append((_seq(seg[a]), _seq(seg[b])))
            start = b + 1
    nodes = [
        e
        for e in t.events
        if e["name"].startswith(BACKWARD)
        and _seq(e) is not None
        and any(lo <= _seq(e) <= hi for lo, hi in ranges)
    ]
    return _pair(t, fwd, nodes)


def _pair(t: Trace, fwd: list[dict], nodes: list[dict]) -> dict:
    f, b = t.per_step(fwd), t.per_step(nodes)
    return {
        "forward_ops": f["calls"],
        "forward_ms": f["ms"],
        "backward_nodes": b["calls"],
        "backward_ms": b["ms"],
        "ms": f["ms"] + b["ms"],
    }


def trace_counts(path: Path) -> dict:
    """The trace's figures (module docstring)."""
    t = Trace(path)
    durations = [s["dur"] / 1e3 for s in t.steps]
    opt = [e for e in t.events if e["name"] == "Optimizer.step#SGD.step"]
    opt_ops = [e for e in t.events if t.parent[id(e)] in opt]
    data = [e for e in t.events if e["name"].startswith("enumerate(DataLoader)#")]
    return {
        "steps": len(t.steps),
        "step_ms": statistics.fmean(durations),
        "step_ms_each": durations,
        "optimizer": {"ms": t.per_step(opt)["ms"], "ops": t.per_step(opt_ops)["calls"]},
        "data_loading": {"ms": t.per_step(data)["ms"]},
        "frozenbn": _frozenbn(t),
        "focal_loss": _focal_loss(t),
    }


# --------------------------------------------------------------------------------------------
# the verbose log


def log_counts(path: Path, traced_steps: list[int]) -> dict:
    """The log's figures over the traced steps (module docstring)."""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    step, by_step = 0, Counter()  # the step a line belongs to: the next "step N" line's N
    weight_dims: set[str] = set()
    bias_dims: set[str] = set()
    execs: list[tuple[int, str, str, str, float]] = []
    for line in lines:
        m = _STEP_LINE.match(line)
        if m:
            step = int(m.group(1)) + 1
            continue
        f = line.split(",")
        if not line.startswith("onednn_verbose,") or "exec" not in f[3:5]:
            continue
        i = f.index("exec")
        kind, prop, desc = f[i + 2], f[i + 4], f[-2]
        execs.append((step, kind, prop, desc, float(f[-1])))
        c = _CONV.match(desc) if kind == "convolution" else None
        if c:
            g, ic, oc, kh, kw = (int(x) if x else 0 for x in c.groups())
            dims = [g, oc // g, ic // g, kh, kw] if g else [oc, ic, kh, kw]
            weight_dims.add("x".join(map(str, dims)))
            if "bia:undef" not in line:
                bias_dims.add(str(oc))
    n = len(traced_steps)
    out = {"onednn_ms": 0.0, "conv_forward": 0.0, "conv_backward_data": 0.0}
    out.update(conv_backward_weights=0.0, reorders={"count": 0.0, "ms": 0.0})
    out["weight_reorders"] = {"count": 0.0, "ms": 0.0}
    out["bias_reorders"] = {"count": 0.0, "ms": 0.0}
    for step, kind, prop, desc, ms in execs:
        if step not in traced_steps:
            continue
        by_step[step] += 1
        out["onednn_ms"] += ms / n
        if kind == "convolution":
            key = "conv_forward" if prop.startswith("forward") else f"conv_{prop}"
            out[key] += 1 / n
        if kind == "reorder":
            out["reorders"]["count"] += 1 / n
            out["reorders"]["ms"] += ms / n
            role = "weight" if desc in weight_dims else "bias" if desc in bias_dims else ""
            if role:
                out[f"{role}_reorders"]["count"] += 1 / n
                out[f"{role}_reorders"]["ms"] += ms / n
    out["exec_lines_each"] = [by_step[s] for s in traced_steps]
    return out


def hand_count(directory: Path, name: str) -> dict:
    """Every figure of one recording, with the shares of the step."""
    counts = trace_counts(directory / f"{name}.trace.json.gz")
    wait_warmup = 2  # schedule(wait=1, warmup=1): the traced steps are the next ones
    traced = list(range(wait_warmup, wait_warmup + counts["steps"]))
    counts["log"] = log_counts(directory / f"{name}.log.gz", traced)
    step = counts["step_ms"]
    parts = {
        "optimizer": counts["optimizer"]["ms"],
        "data_loading": counts["data_loading"]["ms"],
        "frozenbn": counts["frozenbn"]["ms"],
        "frozenbn_forward": counts["frozenbn"]["forward_ms"],
        "focal_loss": counts["focal_loss"]["ms"],
        "onednn": counts["log"]["onednn_ms"],
        "reorders": counts["log"]["reorders"]["ms"],
        "weight_reorders": counts["log"]["weight_reorders"]["ms"],
        "bias_reorders": counts["log"]["bias_reorders"]["ms"],
    }
    counts["share"] = {k: v / step for k, v in parts.items()}
    return _rounded(counts)


def _rounded(x):  # noqa: ANN001, ANN202
    if isinstance(x, float):
        return round(x, 6)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


# --------------------------------------------------------------------------------------------
# the tests


def _manifest() -> dict:
    return json.loads((RUNS / "MANIFEST.json").read_text(encoding="utf-8"))


NAMES = sorted(_manifest()["scenarios"]) if (RUNS / "MANIFEST.json").exists() else []
SCENARIOS = ["baseline", "fold_bn", "fused_sgd", "channels_last", "bf16_autocast",
             "compiled_loss", "slow_loader", "plain"]  # fmt: skip
FROZENBN_RUNS = {"baseline", "fused_sgd", "channels_last", "bf16_autocast", "compiled_loss",
                 "slow_loader"}  # fmt: skip


@cache
def counted(name: str) -> dict:
    """One recording's hand count, made once per process and only for the recordings its
    tests ask for (a worker that runs one scenario's tests counts that one)."""
    return hand_count(RUNS, name)


def test_every_scenario_is_recorded() -> None:
    assert NAMES == sorted(SCENARIOS)
    for entry in _manifest()["scenarios"].values():
        for f in entry["files"]:
            assert (RUNS / f).stat().st_size == entry["bytes"][f], f


def test_directory_is_small() -> None:
    """The whole directory stays under 15 MB (the traces are gzipped)."""
    assert sum(p.stat().st_size for p in RUNS.iterdir()) < 15e6


@pytest.mark.parametrize("name", NAMES)
def test_manifest_holds_the_hand_count(name: str) -> None:
    assert counted(name) == _manifest()["scenarios"][name]["hand_count"]


@pytest.mark.parametrize("name", NAMES)
def test_frozenbn_ops_follow_the_model(name: str) -> None:
    """ResNeXt50 has 53 norms (stem 1, 16 blocks x 3, 4 downsamples), 7 ops each: 371.

    With trainable_layers=3 the stem and layer1 (1 + 3 x 3 + 1 = 11 norms) get no gradient;
    each of the other 42 has a MulBackward0 (``x * scale``) and an AddBackward0 (``+ bias``):
    84 nodes. Folded or replaced by nn.BatchNorm2d, there are none.
    """
    fbn = counted(name)["frozenbn"]
    if name in FROZENBN_RUNS:
        assert (fbn["forward_ops"], fbn["backward_nodes"]) == (371, 84)
    else:
        assert (fbn["forward_ops"], fbn["backward_nodes"]) == (0, 0)


@pytest.mark.parametrize("name", NAMES)
def test_optimizer_ops_follow_the_parameters(name: str) -> None:
    """78 trainable tensors (layer2-4: 42 conv weights; FPN: 8 convs with bias, 16; the two
    heads: 5 convs with bias each, 20). The per-parameter loop of SGD(momentum) runs
    ``buf.mul_(momentum).add_(grad)`` and ``param.add_(buf, alpha=-lr)`` a tensor:
    3 x 78 = 234 direct children; fused, one ``aten::_fused_sgd_``.
    """
    fused = _manifest()["scenarios"][name]["fused_sgd"]
    assert counted(name)["optimizer"]["ops"] == (1 if fused else 234)


@pytest.mark.parametrize("name", NAMES)
def test_focal_loss_ops_follow_the_loss(name: str) -> None:
    """16 forward ops an image (torchvision's sigmoid_focal_loss), 2 images a step; when
    compiled, a cache lookup and a compiled region an image, and one backward node each."""
    focal = counted(name)["focal_loss"]
    if name == "compiled_loss":
        assert (focal["forward_ops"], focal["backward_nodes"]) == (4, 2)
    else:
        assert focal["forward_ops"] == 32
        assert focal["backward_nodes"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_log_steps_follow_the_model(name: str) -> None:
    """The convolutions of a step: forward 111 (backbone 53, FPN 8, two heads x 5 convs x
    5 levels); backward-weights 100 (the trainable ones: layer2-4 42, FPN 8, heads 50);
    backward-data 98 (layer2's first conv and downsample read layer1's output, which needs
    no gradient). One bias gradient copied back per backward-weights call of a conv with a
    trainable bias (FPN 8 + heads 50 = 58). Every traced step has the same lines. bf16 under
    autocast on AVX2 runs no oneDNN at all (PyTorch's slow_conv2d): no verbose line."""
    log = counted(name)["log"]
    if name == "bf16_autocast":
        assert log["exec_lines_each"] == [0, 0, 0]
        return
    convs = [log["conv_forward"], log["conv_backward_weights"], log["conv_backward_data"]]
    assert convs == [111, 100, 98]
    assert log["bias_reorders"]["count"] == 58
    assert len(set(log["exec_lines_each"])) == 1
    assert log["weight_reorders"]["count"] > 0
