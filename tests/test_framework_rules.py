"""The framework rules on the real traces of ``sample_logs/framework/`` (scripts/make_traces.py).

Each rule fires on the bad run of its pair with the share of the step that a count of the
trace JSON gives, and stays quiet on the fixed run. The shares below were counted with
this script, which reads the JSON with nothing but the standard library and applies the
definitions of ``docs/framework.md`` (steps = the ``ProfilerStep#N`` spans, all steady here;
segments = the main thread's outermost ``cpu_op`` events and phase annotations; typical =
per (phase,) name, input dims and occurrence in the step: calls per step x median ``dur``,
plus the median untracked time of a step)::

    python3 count.py sample_logs/framework/<run>.trace.json.gz <what>   # count.py:

    import collections as C, gzip, json, statistics as S, sys
    F, WHAT = sys.argv[1], sys.argv[2]
    E = json.load(gzip.open(F))["traceEvents"]
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
number) and ``layout`` (``contiguous``/``clone``/``copy_``/``_to_copy`` calls whose input
strides and memory-format argument say NCHW <-> channels_last, outermost).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.reading import load
from dnnlens.rules.config import RuleConfig
from dnnlens.rules.engine import RuleOptions, run_selected, selected_rules
from dnnlens.rules.registry import Registry, add_entry_points

RUNS = Path(__file__).resolve().parent.parent / "sample_logs" / "framework"
FRAMEWORK_RULES = [
    "unfused-optimizer",
    "elementwise-chain",
    "aten-normalization",
    "autocast-casts",
    "aten-layout-copies",
    "dataloader-stall",
]

#: (rule, run, what, printed by the script: typical step ms, impact ms, share)
COUNTED = [
    ("unfused-optimizer", "sgd", "optimizer", 0.803803, 0.209663, 0.260839),
    ("unfused-optimizer", "adamw", "optimizer", 1.327522, 0.643195, 0.484508),
    ("elementwise-chain", "focal", "chain", 20.426979, 14.929533, 0.730873),
    ("aten-normalization", "frozenbn", "frozenbn", 37.173487, 3.712491, 0.099869),
    ("autocast-casts", "autocast", "casts", 10.682994, 5.759228, 0.539102),
    ("aten-layout-copies", "layout", "layout", 10.789236, 4.686509, 0.434369),
    ("dataloader-stall", "dataloader", "data", 28.010007, 16.465030, 0.587827),
]


def findings(path: Path, rule: str) -> list:
    registry = Registry()
    add_entry_points(registry)
    options = RuleOptions(select=[rule], search_config=False)
    rules = selected_rules(registry, options, RuleConfig(path="test", rules={}))
    return run_selected(Analysis(load([str(path)])), rules)


@pytest.mark.parametrize(
    "rule, run, what, step_ms, impact_ms, share", COUNTED, ids=[c[1] for c in COUNTED]
)
def test_fires_on_the_bad_run_with_the_counted_share(rule, run, what, step_ms, impact_ms, share):
    """``python3 count.py sample_logs/framework/<run>_bad.trace.json.gz <what>`` printed
    the typical step, the impact and the share of this row of COUNTED."""
    path = RUNS / f"{run}_bad.trace.json.gz"
    (f,) = findings(path, rule)
    assert f.data["typical_step_ms"] == pytest.approx(step_ms, rel=1e-6)
    assert f.data["impact_ms_per_step"] == pytest.approx(impact_ms, rel=1e-6)
    assert f.data["share_of_step"] == pytest.approx(share, rel=1e-5)
    assert f.fix and f.code.startswith("DL1")
    text = gzip.decompress(path.read_bytes()).decode().splitlines()  # lines of the JSON
    for e in f.evidence:
        assert e.path == str(path) and e.step.startswith("ProfilerStep#") and e.ts_us > 0
        assert text[e.line - 1].strip() == "{"
        assert f'"name": "{e.op}"' in "\n".join(text[e.line : e.line + 4])


@pytest.mark.parametrize("run", sorted({c[1] for c in COUNTED}))
def test_quiet_on_the_fixed_run(run):
    """On the fixed runs the same counts give: optimizer 10% of the step with fused SGD
    but no per-parameter op; casts 0; layout 0.4%; data loading 0.9%; no chain of five
    elementwise ops; no FrozenBatchNorm2d frame."""
    rule = next(c[0] for c in COUNTED if c[1] == run)
    assert findings(RUNS / f"{run}_fixed.trace.json.gz", rule) == []


def test_the_rules_say_what_they_counted():
    """The counts behind the messages, from the same traces: SGD(foreach=False) runs 48
    per-parameter ops per step (16 parameters: momentum mul_ and add_, then the update add_),
    AdamW(foreach=True) 128 inside _foreach_ ops; the focal loss chain has 28 segments."""
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


def test_framework_rules_have_nothing_to_say_without_a_trace():
    for rule in FRAMEWORK_RULES:
        assert findings(RUNS.parent / "convnet_nchw_train.log", rule) == []
