"""The framework rules on the real traces of ``sample_logs/framework/`` (scripts/make_traces.py).

Each rule fires on the bad run of its pair with the share of the step that a count of the
trace JSON gives, and stays quiet on the fixed run. The shares below were counted with
this script, which reads the JSON with nothing but the standard library and applies the
definitions of ``docs/framework.md`` (steps = the ``ProfilerStep#N`` spans, all steady here;
segments = the main thread's outermost ``cpu_op`` events and phase annotations; typical =
per (phase,) name, input dims and occurrence in the step: calls per step x median ``dur``,
plus the median untracked time of a step)::

    python3 count.py sample_logs/framework/<run>.trace.json.gz <what>   # count.py:

    import collections as C, gzip, json, re, statistics as S, sys
    F, WHAT = sys.argv[1], sys.argv[2]
    E = json.load(gzip.open(F) if F.endswith(".gz") else open(F))["traceEvents"]
    E = [e for e in E if e.get("ph") == "X" and e.get("cat") != "Trace"]
    for i, e in enumerate(E):
        e["i"], e["end"], e["a"] = i, e["ts"] + e["dur"], e.get("args", {})
    isstep = lambda e: e["name"].startswith("ProfilerStep#")
    steps = sorted((e["ts"], e["end"]) for e in E if isstep(e))
    main, n = next(e["tid"] for e in E if isstep(e)), len(steps)
    step = lambda e: next((k for k, (a, b) in enumerate(steps) if a <= e["ts"] < b), -1)
    par, stack = {}, []  # parents: per thread, by start then longest first
    for e in sorted(E, key=lambda e: (str(e["pid"]), str(e["tid"]), e["ts"], -e["dur"])):
        while stack and (stack[-1]["tid"] != e["tid"] or stack[-1]["end"] <= e["ts"] + 1e-3):
            stack.pop()
        par[e["i"]] = stack[-1] if stack else None
        stack.append(e)
    def up(e):
        while (e := par[e["i"]]) is not None:
            yield e
    MARK = {"enumerate(DataLoader)#": "data", "Optimizer.step#": "opt",
            "Optimizer.zero_grad#": "opt", "autograd::engine::evaluate_function:": "bwd"}
    phase = lambda n: next((p for k, p in MARK.items() if n.startswith(k)), "fwd")
    marker = lambda n: any(n.startswith(k) for k in MARK)
    cand = lambda e: (e["tid"] == main and not isstep(e)
                      and (e.get("cat") == "cpu_op" or marker(e["name"])))
    seg = [e for e in E if cand(e) and not any(cand(a) for a in up(e))]
    dims = lambda e: json.dumps(e["a"].get("Input Dims"))
    occ, seen = {}, C.Counter()  # which occurrence of its name and dims in its step
    for e in sorted(E, key=lambda e: (e["ts"], e["i"])):
        k = (step(e), e["name"], dims(e))
        occ[e["i"]], seen[k] = seen[k], seen[k] + 1
    def typical(evs, by_phase=False):  # calls per step x median dur, per key; ms
        g = C.defaultdict(list)
        for e in (e for e in evs if step(e) >= 0):
            key = (phase(e["name"]) if by_phase else "", e["name"], dims(e), occ[e["i"]])
            g[key].append(e["dur"])
        return sum(len(v) / n * S.median(v) for v in g.values()) / 1e3
    gaps = [b - a - sum(e["dur"] for e in seg if step(e) == k) for k, (a, b) in enumerate(steps)]
    step_ms = typical(seg, True) + S.median(max(g, 0) for g in gaps) / 1e3
    def outer(evs):
        return [e for e in evs if not any(a in evs for a in up(e))]
    def cast(e):  # _to_copy between float and bfloat16, called from an op's top or a node
        t, c = (e["a"].get("Input type") or [""])[0], e["a"].get("Concrete Inputs") or []
        to = {"6": "float", "15": "c10::BFloat16"}.get(c[1] if len(c) > 1 else "", "")
        if e["name"] != "aten::_to_copy" or not to or to == t or "BFloat16" not in t + to:
            return False
        c = next((a for a in up(e) if a["name"] not in ("aten::to", "aten::_to_copy")), None)
        return c is None or c in seg or "ToCopyBackward" in c["name"] or not cand(c)
    def fmt(d, s):
        if not (d and s) or len(d) != 4:
            return ""
        N, Ch, H, W = d
        ok = lambda want: all(x == 1 or y == z for x, y, z in zip(d, s, want))
        if ok([Ch * H * W, H * W, W, 1]):
            return "nchw"
        return "nhwc" if ok([H * W * Ch, 1, W * Ch, Ch]) else ""
    def layout(e):  # NCHW <-> channels_last, from the input strides and memory format
        d, s = e["a"].get("Input Dims") or [[]], e["a"].get("Input Strides") or [[]]
        c, src = e["a"].get("Concrete Inputs") or [], fmt(d[0], s[0])
        if e["name"] == "aten::copy_":
            return bool(src and fmt(d[1], s[1]) and src != fmt(d[1], s[1]))
        at = 6 if e["name"] == "aten::_to_copy" else 1
        m = (c[at] if len(c) > at else "") or ("0" if e["name"] == "aten::contiguous" else "1")
        return bool(src) and {"0": "nchw", "2": "nhwc"}.get(m, src) != src
    if WHAT == "chain":  # the segments from aten::sigmoid to SigmoidBackward0, every step
        chosen = []
        for k in range(n):
            s = sorted((e for e in seg if step(e) == k), key=lambda e: e["ts"])
            names = [e["name"] for e in s]
            a = names.index("aten::sigmoid")
            b = names.index("autograd::engine::evaluate_function: SigmoidBackward0")
            chosen += s[a : b + 1]
        num = typical(chosen)
    elif WHAT == "frozenbn":  # the module frames, and the backward nodes of their ops
        frames = [e for e in E if e["name"].startswith("nn.Module: FrozenBatchNorm2d")]
        inside = [e for e in E if e.get("cat") == "cpu_op" and any(a in frames for a in up(e))]
        seqs = {e["a"].get("Sequence number") for e in inside} - {None}
        nodes = [e for e in seg if phase(e["name"]) == "bwd"
                 and e["a"].get("Sequence number") in seqs]
        num = typical(frames) + typical(nodes)
    elif WHAT in ("bn-eval", "bn-train"):  # ATen's batch-norm kernels by training flag
        at = {"aten::native_batch_norm": 5, "aten::native_batch_norm_backward": 7}
        flag = "False" if WHAT == "bn-eval" else "True"
        args = lambda e: e["a"].get("Concrete Inputs") or [""] * 8
        num = typical(outer([e for e in E if e["name"] in at and args(e)[at[e["name"]]] == flag]))
    elif WHAT == "perchannel":  # forward segments on [C] / [1, C, 1, 1] tensors only, the
        pc = lambda d: len(d) == 1 or (len(d) == 4 and d[0] == 1 and d[2:] == [1, 1])
        def norm_op(e):  # x * scale + bias on [N, C, H, W] and [1, C, 1, 1], their nodes
            d = [x for x in e["a"].get("Input Dims") or [] if x]
            if e["name"] in ("aten::mul", "aten::add") and len(d) == 2 and len(d[0]) == 4:
                return pc(d[1]) and d[1][1] == d[0][1]
            return bool(d) and all(pc(x) for x in d)
        ops = [e for e in seg if phase(e["name"]) == "fwd" and norm_op(e)]
        seqs = {e["a"].get("Sequence number") for e in ops} - {None}
        nodes = [e for e in seg if phase(e["name"]) == "bwd"
                 and e["a"].get("Sequence number") in seqs]
        num = typical(ops) + typical(nodes)
    elif WHAT == "slowconv":  # ATen's own convolution kernels, outermost
        slow = re.compile(r"aten::(_?slow_conv|thnn_conv)")
        num = typical(outer([e for e in E if slow.match(e["name"])]))
    elif WHAT == "layout":
        names = {"aten::contiguous", "aten::clone", "aten::copy_", "aten::_to_copy"}
        num = typical(outer([e for e in E if e["name"] in names and layout(e)]))
    else:
        num = typical({
            "optimizer": [e for e in E if e["name"].startswith("Optimizer.step#")],
            "data": [e for e in seg if e["name"].startswith("enumerate(DataLoader)#")],
            "casts": outer([e for e in E if cast(e)]),
        }[WHAT])
    print(f"steps {n} typical step {step_ms:.6f} ms {WHAT} {num:.6f} ms share {num / step_ms:.6f}")

``<what>`` is the rule's own selection: ``optimizer`` (the ``Optimizer.step#`` spans),
``data`` (the ``enumerate(DataLoader)#`` spans), ``casts`` (``_to_copy`` between float
and bfloat16 called from the top of an op or a ``ToCopyBackward`` node), ``chain`` (the
segments from ``aten::sigmoid`` to ``SigmoidBackward0``), ``frozenbn`` (the
``FrozenBatchNorm2d`` module frames and the backward nodes of their ops, by sequence
number), ``perchannel`` (no module frames: the forward segments on ``[C]`` or ``[1, C, 1,
1]`` tensors only, and the ``mul``/``add`` of an ``[N, C, H, W]`` activation with a ``[1, C,
1, 1]`` one, with the backward nodes of their sequence numbers), ``bn-eval`` / ``bn-train``
(``native_batch_norm`` and its backward, outermost, by their ``training`` argument),
``slowconv`` (ATen's ``thnn_conv*`` / ``_slow_conv*`` kernels, outermost) and ``layout``
(``contiguous``/``clone``/``copy_``/``_to_copy`` calls whose input strides and
memory-format argument say NCHW <-> channels_last, outermost).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.framework.patterns import optimizer_ops
from dnnlens.reading import load
from dnnlens.rules.builtin._framework import QUIET_BELOW_SHARE, WARNING_SHARE, graded
from dnnlens.rules.builtin.aten_convolution import AtenConvolution
from dnnlens.rules.builtin.aten_layout_copies import AtenLayoutCopies
from dnnlens.rules.config import RuleConfig
from dnnlens.rules.engine import RuleOptions, run_selected, selected_rules
from dnnlens.rules.registry import Registry, add_entry_points
from dnnlens.rules.verdict import report_order

RUNS = Path(__file__).resolve().parent.parent / "sample_logs" / "framework"
FRAMEWORK_RULES = [
    "unfused-optimizer",
    "elementwise-chain",
    "aten-normalization",
    "autocast-casts",
    "aten-layout-copies",
    "dataloader-stall",
    "aten-convolution",
]

#: (rule, bad run, what, printed by the script: typical step ms, impact ms, share)
COUNTED = [
    ("unfused-optimizer", "sgd_bad", "optimizer", 0.803803, 0.209663, 0.260839),
    ("unfused-optimizer", "adamw_bad", "optimizer", 1.327522, 0.643195, 0.484508),
    ("elementwise-chain", "focal_bad", "chain", 20.426979, 14.929533, 0.730873),
    ("aten-normalization", "frozenbn_bad", "frozenbn", 37.173487, 3.712491, 0.099869),
    ("aten-normalization", "frozenbn_tv_bad", "perchannel", 35.979023, 2.916205, 0.081053),
    ("aten-normalization", "bneval_train", "bn-eval", 17.233039, 1.684617, 0.097755),
    ("aten-normalization", "bn_infer_bad", "bn-eval", 8.725655, 0.401078, 0.045965),
    ("autocast-casts", "autocast_bad", "casts", 10.682994, 5.759228, 0.539102),
    ("aten-layout-copies", "layout_bad", "layout", 10.789236, 4.686509, 0.434369),
    ("dataloader-stall", "dataloader_bad", "data", 28.010007, 16.465030, 0.587827),
    ("aten-convolution", "slowconv_bad", "slowconv", 123.141477, 117.074815, 0.950734),
]
#: bad run -> the run that fixes it (the same count gives 0 or a share under 2% there)
FIXED = {
    "sgd_bad": "sgd_fixed",
    "adamw_bad": "adamw_fixed",
    "focal_bad": "focal_fixed",
    "frozenbn_bad": "frozenbn_fixed",
    "frozenbn_tv_bad": "frozenbn_tv_fixed",
    "bneval_train": "frozenbn_tv_fixed",
    "bn_infer_bad": "bn_infer_fixed",
    "autocast_bad": "autocast_fixed",
    "layout_bad": "layout_fixed",
    "dataloader_bad": "dataloader_fixed",
    "slowconv_bad": "slowconv_fixed",
}


def registry() -> Registry:
    """The built-in rules. An install made before aten-convolution existed lacks its entry
    point (entry points are read from the installed metadata): added here by its class."""
    reg = Registry()
    add_entry_points(reg)
    if "aten-convolution" not in reg.entries:
        reg.add_rule(AtenConvolution, "builtin")
    return reg


def findings(path: Path, rule: str | None = None) -> list:
    options = RuleOptions(select=[rule] if rule else FRAMEWORK_RULES, search_config=False)
    rules = selected_rules(registry(), options, RuleConfig(path="test", rules={}))
    return run_selected(Analysis(load([str(path)])), rules)


@pytest.mark.parametrize(
    "rule, run, what, step_ms, impact_ms, share", COUNTED, ids=[c[1] for c in COUNTED]
)
def test_fires_on_the_bad_run_with_the_counted_share(rule, run, what, step_ms, impact_ms, share):
    """``python3 count.py sample_logs/framework/<run>.trace.json.gz <what>`` printed the
    typical step, the impact and the share of this row of COUNTED; the severity follows
    that share (info under WARNING_SHARE)."""
    path = RUNS / f"{run}.trace.json.gz"
    (f,) = findings(path, rule)
    assert f.data["typical_step_ms"] == pytest.approx(step_ms, abs=1e-6)  # printed to 6 places
    assert f.data["impact_ms_per_step"] == pytest.approx(impact_ms, abs=1e-6)
    assert f.data["share_of_step"] == pytest.approx(share, abs=1e-6)
    assert f.severity == ("info" if share < WARNING_SHARE else "warning")
    assert f.fix and f.code.startswith("DL1")
    text = gzip.decompress(path.read_bytes()).decode().splitlines()  # lines of the JSON
    for e in f.evidence:
        assert e.path == str(path) and e.step.startswith("ProfilerStep#") and e.ts_us > 0
        assert text[e.line - 1].strip() == "{"
        assert f'"name": "{e.op}"' in "\n".join(text[e.line : e.line + 4])


@pytest.mark.parametrize("run", sorted(FIXED))
def test_quiet_on_the_fixed_run(run):
    """On the fixed runs the same counts give: optimizer 10% of the step with fused SGD
    but no per-parameter op; casts 0; layout 0.4%; data loading 0.9%; no chain of five
    elementwise ops; no FrozenBatchNorm2d frame, no per-channel norm and no eval-mode batch
    norm (0); slowconv 0."""
    rule = next(c[0] for c in COUNTED if c[1] == run)
    assert findings(RUNS / f"{FIXED[run]}.trace.json.gz", rule) == []


def test_the_rules_say_what_they_counted():
    """The counts behind the messages, from the same traces: SGD(foreach=False) runs 48
    per-parameter ops per step (16 parameters: momentum mul_ and add_, then the update add_),
    AdamW(foreach=True) 128 inside _foreach_ ops; the focal loss chain has 28 segments;
    frozenbn_tv_bad has 4 per-channel norms of 8 channels (one after each conv, its
    ``aten::rsqrt`` on ``[1, 8, 1, 1]``); bneval_train's 4 eval-mode norms run
    native_batch_norm and its backward once each per step."""
    (sgd,) = findings(RUNS / "sgd_bad.trace.json.gz", "unfused-optimizer")
    assert sgd.data["ops_per_step"] == {"aten::add_": 32.0, "aten::mul_": 16.0}
    assert "foreach=False" in sgd.message
    (adamw,) = findings(RUNS / "adamw_bad.trace.json.gz", "unfused-optimizer")
    assert adamw.data["per_parameter_ops_per_step"] == 128.0
    assert adamw.data["inside_foreach_per_step"] == 128.0
    (chain,) = findings(RUNS / "focal_bad.trace.json.gz", "elementwise-chain")
    assert [c["ops"] for c in chain.data["chains"]] == [28]
    assert chain.data["chains"][0]["first"] == "aten::sigmoid"
    (bn,) = findings(RUNS / "frozenbn_bad.trace.json.gz", "aten-normalization")
    assert bn.data["module_classes"] == ["FrozenBatchNorm2d"] and bn.data["native_ms_per_step"] == 0
    (tv,) = findings(RUNS / "frozenbn_tv_bad.trace.json.gz", "aten-normalization")
    assert tv.data["per_channel_channels"] == [8, 8, 8, 8] and tv.data["module_classes"] == []
    assert "scale that convolution's weights" in tv.fix and "compile" not in tv.fix
    (frozen,) = findings(RUNS / "bneval_train.trace.json.gz", "aten-normalization")
    assert frozen.data["native_calls_per_step"] == 8.0
    assert "eval mode" in frozen.message and frozen.data["trained_ms_per_step"] == 0
    (infer,) = findings(RUNS / "bn_infer_bad.trace.json.gz", "aten-normalization")
    assert "fuse_modules" in infer.fix and "torch.jit.freeze" in infer.fix


def test_a_frozen_norm_in_elementwise_ops_is_no_elementwise_chain():
    """frozenbn_tv_bad: after each conv, reshape x4, add, rsqrt, mul, mul, sub, mul, add
    (then the ReLU): eight elementwise segments that the chain rule would blame with a
    torch.compile fix. They are a frozen norm, folded away by the fix; the only finding of
    every framework rule is aten-normalization's."""
    got = findings(RUNS / "frozenbn_tv_bad.trace.json.gz")
    assert [f.rule for f in got] == ["aten-normalization"]


def test_trainable_batch_norm_in_training_is_no_finding():
    """dataloader_fixed and plain_good train nn.BatchNorm2d: ``count.py ... bn-train``
    gives 0.200811 (4.388628 of 21.854471 ms) and 0.157940 (10.993724 of 69.606831 ms) of
    the step; ``bn-eval`` gives 0. That is the normal cost of training a norm: a line of
    the view, no finding."""
    for run, share in (("dataloader_fixed", 0.200811), ("plain_good", 0.157940)):
        assert findings(RUNS / f"{run}.trace.json.gz", "aten-normalization") == []
        fw = Analysis(load([str(RUNS / f"{run}.trace.json.gz")])).framework
        (line,) = fw.normalization.to_dict("records")
        assert line["kind"] == "batch norm, trained (ATen kernels)" and not line["foldable"]
        assert line["share"] == pytest.approx(share, rel=1e-5)


def test_a_plain_well_configured_training_run_has_no_warning():
    """plain_good (trainable BatchNorm2d, SGD(fused=True), channels_last): the counts give
    optimizer 0.9% of the step, layout 0.6% (the fused kernel's copies of the 8 channels_last
    conv weights), casts 0, data loading 0, no focal chain; no framework rule warns, none
    says anything."""
    got = findings(RUNS / "plain_good.trace.json.gz")
    assert [f for f in got if f.severity != "info"] == []
    assert got == []


def test_ops_inside_a_fused_optimizer_kernel_are_not_per_parameter_dispatch():
    """plain_good's ``aten::_fused_sgd_`` calls ``aten::contiguous`` on each of its 8
    channels_last conv weights (counted in the JSON: 8 ``aten::contiguous`` events under
    each ``_fused_sgd_``, 32 in the 4 steps), as many as unfused-optimizer's min_ops: they
    are the kernel's own work, not a Python loop's dispatch."""
    path = RUNS / "plain_good.trace.json.gz"
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]]
    fused = [e for e in events if e.get("name") == "aten::_fused_sgd_"]
    inside = [
        e
        for e in events
        if e.get("name") == "aten::contiguous"
        and any(f["ts"] <= e["ts"] < f["ts"] + f["dur"] for f in fused)
    ]
    assert len(fused) == 4 and len(inside) == 32
    fw = Analysis(load([str(path)])).framework
    found = optimizer_ops(fw)
    assert not found.per_parameter.any()
    assert fw.calls_per_step(found.inside_fused & fw.rows.mask_names({"aten::contiguous"})) == 8


def test_grading_by_share_of_the_step():
    """Under QUIET_BELOW_SHARE nothing, under WARNING_SHARE info, from there the rule's
    severity; a severity set in the configuration is kept. bn_infer_bad's eval-mode norms
    cost 4.6% of the step (COUNTED): info, and after every other finding."""
    rule = AtenLayoutCopies()
    assert graded(rule, WARNING_SHARE - 1e-9) == "info" and graded(rule, WARNING_SHARE) == "warning"
    assert graded(AtenLayoutCopies(severity="error"), 0.03) == "error"
    assert QUIET_BELOW_SHARE < WARNING_SHARE
    assert AtenLayoutCopies.defaults["min_share"] == QUIET_BELOW_SHARE
    (info,) = findings(RUNS / "bn_infer_bad.trace.json.gz", "aten-normalization")
    assert info.severity == "info"
    other = info.__class__(**{**info.__dict__, "rule": "x", "severity": "warning"})
    other.impact_ms_per_iteration = None  # a finding that is not about time ranks before it
    assert report_order([info, other]) == [other, info]


def test_the_noise_the_grading_stands_on():
    """WARNING_SHARE is the step-to-step noise of a recording: over the traces of
    sample_logs/framework (steps = ProfilerStep spans), the median of (median absolute
    deviation of the step durations / median step) is between 2% and 8%."""
    spreads = []
    for path in sorted(RUNS.glob("*.trace.json.gz")):
        events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        durs = sorted(e["dur"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
        med = durs[len(durs) // 2 - 1 : len(durs) // 2 + 1]
        m = sum(med) / 2 if len(durs) % 2 == 0 else durs[len(durs) // 2]
        dev = sorted(abs(d - m) for d in durs)
        mad = (
            (dev[len(dev) // 2 - 1] + dev[len(dev) // 2]) / 2
            if len(dev) % 2 == 0
            else dev[len(dev) // 2]
        )
        spreads.append(mad / m)
    spreads.sort()
    middle = spreads[len(spreads) // 2]
    assert 0.02 <= middle <= 0.08


def test_framework_rules_have_nothing_to_say_without_a_trace():
    for rule in FRAMEWORK_RULES:
        assert findings(RUNS.parent / "convnet_nchw_train.log", rule) == []


def test_only_elementwise_backward_nodes_are_elementwise():
    """The backward nodes named in the traces of ``sample_logs/framework/`` and
    ``framework_tables/`` (every ``autograd::engine::evaluate_function: X`` event name,
    collected with json.load over the files): the nodes of elementwise ops are elementwise
    work; ``AddmmBackward0``, ``ToCopyBackward0``, ``LogSoftmaxBackward0`` (names that start
    like ``Add``, ``To...``, ``Log``) are not, and the view nodes ``TBackward0`` and
    ``ViewBackward0`` are neutral like the views."""
    from dnnlens.analysis.framework.names import ELEMENTWISE_BACKWARD, VIEW_BACKWARD

    node = "autograd::engine::evaluate_function: {}".format
    elementwise = ["AddBackward0", "MulBackward0", "RsubBackward1", "PowBackward0",
                   "MeanBackward1", "SigmoidBackward0", "ReluBackward0", "MseLossBackward0",
                   "BinaryCrossEntropyWithLogitsBackward0"]  # fmt: skip
    others = ["AddmmBackward0", "TBackward0", "ToCopyBackward0", "LogSoftmaxBackward0",
              "ViewBackward0", "ConvolutionBackward0", "MaxPool2DWithIndicesBackward0",
              "NativeBatchNormBackward0", "NllLossBackward0", "AsStridedBackward1"]  # fmt: skip
    assert all(ELEMENTWISE_BACKWARD.match(node(n)) for n in elementwise)
    assert not any(ELEMENTWISE_BACKWARD.match(node(n)) for n in others)
    views = {n for n in others if VIEW_BACKWARD.match(node(n))}
    assert views == {"TBackward0", "ViewBackward0"}
