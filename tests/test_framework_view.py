"""The framework view (steps, phases, ops, modules, threads, the join) on real traces.

Runs from ``sample_logs/framework/`` (scripts/make_traces.py, torch 2.13) and the older
profiler samples of ``sample_logs/``. Hand counts are made with the standard library on
the JSON (the command in each docstring; ``count.py`` is the script in the docstring of
tests/test_framework_rules.py).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.framework import PHASES, analyze_framework
from dnnlens.parsers.torch_trace import FrameworkData, parse_trace_json
from dnnlens.reading import load

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
RUNS = SAMPLES / "framework"


def view(*names: str, join: bool = False):
    log = load([str(SAMPLES / n) for n in names])
    return analyze_framework(log.framework, log.events if join else None, log.records)


def trace_events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture(scope="module")
def sgd():
    return view("framework/sgd_bad.trace.json.gz")


def test_a_trace_alone_is_a_complete_input():
    log = load([str(RUNS / "sgd_bad.trace.json.gz")])
    assert log.scans == [] and log.input_errors == [] and len(log.events) == 0
    assert log.framework is not None and len(log.framework.traces) == 1
    analysis = Analysis(log)  # the oneDNN side has nothing, and says nothing wrong
    assert analysis.summary is not None


def test_steps_are_the_profiler_step_spans(sgd):
    """``python3 -c "import gzip,json; e=json.load(gzip.open('sample_logs/framework/
    sgd_bad.trace.json.gz'))['traceEvents']; print([(x['name'], x['dur']) for x in e if
    x['name'].startswith('ProfilerStep#')])"`` lists ProfilerStep#2..#5 (the schedule's wait
    and warm-up steps are not recorded)."""
    events = trace_events(RUNS / "sgd_bad.trace.json.gz")
    spans = [(e["name"], e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")]
    assert sgd.step_method == "profiler_step"
    assert (
        list(sgd.steps["name"])
        == [n for n, _ in spans]
        == [f"ProfilerStep#{i}" for i in range(2, 6)]
    )
    assert list(sgd.steps["dur_ms"]) == pytest.approx([d / 1e3 for _, d in spans])
    assert not sgd.steps["warmup"].any() and not sgd.steps["partial"].any()
    assert sgd.steady_count == 4


def test_the_typical_step_and_its_parts_add_up(sgd):
    """count.py (tests/test_framework_rules.py) on sgd_bad prints ``typical step 0.803803
    ms``; the phases partition it exactly, and it sits beside the median wall step."""
    assert sgd.typical_step_ms == pytest.approx(0.803803, rel=1e-6)
    assert list(sgd.phases["phase"]) == list(PHASES)
    assert sgd.phases["ms_per_step"].sum() == pytest.approx(sgd.typical_step_ms, rel=1e-12)
    assert sgd.phases["share"].sum() == pytest.approx(1.0)
    assert sgd.segments["ms_per_step"].sum() + sgd.untracked_ms_per_step == pytest.approx(
        sgd.typical_step_ms
    )
    assert 0.8 < sgd.typical_step_ms / sgd.median_step_ms < 1.2
    phase = dict(zip(sgd.phases["phase"], sgd.phases["ms_per_step"], strict=True))
    assert phase["data loading"] == 0 and phase["backward"] > phase["forward"] > 0


def test_by_op_self_and_total(sgd):
    """Per step the MLP runs 8 addmm forward, 15 mm backward (no input gradient for the
    first layer), and SGD(foreach=False) 32 add_ and 16 mul_ in the optimizer: ``python3 -c
    "import gzip,json,collections as C; e=json.load(gzip.open('sample_logs/framework/
    sgd_bad.trace.json.gz'))['traceEvents']; print(C.Counter(x['name'] for x in e if
    x.get('ph')=='X'))"`` gives addmm 32, mm 60, mul_ 64 over the 4 steps."""
    ops = sgd.ops.set_index("name")
    assert ops.at["aten::addmm", "calls_per_step"] == 8
    assert ops.at["aten::mm", "calls_per_step"] == 15
    assert ops.at["aten::mul_", "calls_per_step"] == 16
    assert ops.at["aten::mul_", "phase"] == "optimizer"
    assert (ops["self_ms_per_step"] <= ops["total_ms_per_step"] + 1e-12).all()
    assert ops["self_ms_per_step"].is_monotonic_decreasing
    assert ops.at["aten::mm", "phases"] == {
        "backward": pytest.approx(ops.at["aten::mm", "self_ms_per_step"])
    }


def test_json_has_the_contract_keys(sgd):
    doc = sgd.to_json()
    assert {"steps", "phases", "ops"} <= set(doc)
    json.dumps(doc, allow_nan=False)  # plain, finite data
    assert doc["steps"]["count"] == 4 and doc["steps"]["typical_step_ms"] == sgd.typical_step_ms
    assert {p["phase"] for p in doc["phases"]} == set(PHASES)
    assert doc["ops"][0]["name"] == sgd.ops.iloc[0]["name"]
    assert "median" in doc["steps"]["statistic"] and "3x" in doc["steps"]["warmup_rule"]


def test_a_spike_moves_the_mean_not_the_typical_step():
    """One aten::mm of ProfilerStep#3 made 100x slower (the JSON edited: the ops after it
    shifted, the spans around it stretched): the mean step grows by a quarter of it, the
    typical step (per-op medians of 4 steps) by less than a tenth of that."""
    events = [e for e in trace_events(RUNS / "sgd_bad.trace.json.gz") if e.get("ph") == "X"]
    step3 = next(e for e in events if e["name"] == "ProfilerStep#3")
    mm = next(e for e in events if e["name"] == "aten::mm" and e["ts"] > step3["ts"])
    end, extra = mm["ts"] + mm["dur"], mm["dur"] * 99
    for e in events:
        if e["ts"] >= end:
            e["ts"] += extra
        elif e["ts"] <= mm["ts"] and e["ts"] + e["dur"] >= end:
            e["dur"] += extra  # mm itself and the spans holding it
    base = view("framework/sgd_bad.trace.json.gz")
    trace = parse_trace_json(json.dumps({"traceEvents": events}), "spiked.json")
    spiked = analyze_framework(FrameworkData(traces=[trace]))
    mean = spiked.steps["dur_ms"].mean() - base.steps["dur_ms"].mean()
    assert mean == pytest.approx(extra / 1e3 / 4, rel=1e-6)
    assert mean > 0.1 * base.typical_step_ms
    assert abs(spiked.typical_step_ms - base.typical_step_ms) < mean / 10


def test_without_profiler_steps_the_repeating_pattern_makes_the_steps():
    """The ProfilerStep# events taken out of dataloader_bad: the steps are found again, each
    starting at its ``enumerate(DataLoader)#`` span (4 of them in the JSON)."""
    events = [
        e
        for e in trace_events(RUNS / "dataloader_bad.trace.json.gz")
        if not e.get("name", "").startswith("ProfilerStep#")
    ]
    loads = sorted(
        e["ts"] for e in events if e.get("name", "").startswith("enumerate(DataLoader)#")
    )
    trace = parse_trace_json(json.dumps({"traceEvents": events}), "no-steps.json")
    fw = analyze_framework(FrameworkData(traces=[trace]))
    assert fw.step_method == "pattern" and len(loads) == 4
    assert list(fw.steps["start_us"]) == loads
    assert fw.phases.set_index("phase").at["data loading", "share"] > 0.5


def test_older_traces_without_step_spans():
    """profile_bf16_train: 3 training passes (3 Optimizer.zero_grad# spans), each a step;
    profile_nchw_infer: 5 passes (20 convs / 4 per pass); profile_lstm_infer: 5 passes,
    all steady: ``python3 -c "import json; e=json.load(open('sample_logs/
    profile_lstm_infer.trace.json'))['traceEvents']; print([x['dur'] for x in e if
    x.get('name')=='aten::lstm'])"`` gives 1598.978 us for the first lstm, 1064-1304 us
    after; its step (2.26 ms) is 1.6x the median step (1.44 ms), under the 3x of warm-up."""
    bf16 = view("profile_bf16_train.trace.json")
    assert (bf16.step_method, bf16.steady_count) == ("pattern", 3)
    assert bf16.phases.set_index("phase").at["backward", "ms_per_step"] > 0
    nchw = view("profile_nchw_infer.trace.json")
    assert (nchw.step_method, len(nchw.steps), nchw.steady_count) == ("pattern", 5, 5)
    assert nchw.ops.set_index("name").at["aten::mkldnn_convolution", "calls_per_step"] == 4
    lstm = view("profile_lstm_infer.trace.json")
    assert list(lstm.steps["warmup"]) == [False] * 5
    ratio = lstm.steps.at[0, "dur_ms"] / np.median(lstm.steps["dur_ms"])
    assert 1.5 < ratio < 3


def test_a_profile_cut_short_leaves_its_last_step_out():
    """The trace cut in the middle of ProfilerStep#5 (the file truncated, as a crashed run
    leaves it): the last step lacks ops the others have, so it is partial, not steady."""
    text = gzip.decompress((RUNS / "sgd_bad.trace.json.gz").read_bytes()).decode()
    start = text.index('"name": "ProfilerStep#5"')
    cut = parse_trace_json(text[: start + (len(text) - start) // 2], "cut.json")
    assert cut.error is not None and "ends early" in cut.error
    fw = analyze_framework(FrameworkData(traces=[cut]))
    assert list(fw.steps["partial"]) == [False, False, False, True]
    assert fw.steady_count == 3


def test_modules_from_a_trace_with_module_frames():
    """frozenbn_bad was recorded with_modules: 4 Conv2d, 4 FrozenBatchNorm2d, 4 ReLU ...
    under Sequential_0, one call each per step."""
    fw = view("framework/frozenbn_bad.trace.json.gz")
    mods = fw.modules.set_index("module")
    assert list(mods.index[mods["class"] == "FrozenBatchNorm2d"]) == [
        f"Sequential_0/FrozenBatchNorm2d_{i}" for i in range(4)
    ]
    assert (mods["calls_per_step"] == 1).all()
    assert (mods["self_ms_per_step"] <= mods["total_ms_per_step"] + 1e-9).all()
    assert mods.at["Sequential_0", "self_ms_per_step"] == 0  # its ops are in its children


def test_threads_busy_and_idle():
    fw = view("framework/frozenbn_bad.trace.json.gz")
    (main,) = fw.threads.itertuples()
    assert main.role == "main" and main.name.startswith("thread ")
    assert main.idle_ms_per_step == pytest.approx(fw.untracked_ms_per_step, rel=0.05)
    assert main.busy_ms_per_step + main.idle_ms_per_step == pytest.approx(
        fw.median_step_ms, rel=0.05
    )


def test_aten_ops_outside_onednn_without_a_log():
    fw = view("framework/dataloader_bad.trace.json.gz")
    names = list(fw.aten_outside_onednn["name"])
    assert "aten::mkldnn_convolution" not in names  # it runs oneDNN
    assert names.index("aten::native_batch_norm_backward") < 6
    assert fw.aten_outside_onednn["outside_ms_per_step"].is_monotonic_decreasing


def test_joined_view_with_the_verbose_log():
    """autocast_bad with its verbose log (timestamps): per step the MLP runs 5 forward
    matmuls (addmm) and 9 backward ones (mm); ``grep -c ',exec,cpu,matmul,'
    sample_logs/framework/autocast_bad.log`` counts 84 = 6 steps x 14, of which the trace's 4
    steps hold 56."""
    fw = view("framework/autocast_bad.trace.json.gz", "framework/autocast_bad.log", join=True)
    assert fw.link["method"] == "timestamp" and fw.link["primitives_linked"] == 56
    prims = fw.primitives.groupby(["name", "kind"])["calls_per_step"].sum()
    assert prims[("aten::addmm", "matmul")] == 5 and prims[("aten::mm", "matmul")] == 9
    ops = fw.ops.set_index("name")
    assert 0 < ops.at["aten::mm", "onednn_share"] <= 1
    assert ops.at["aten::mm", "primitives"][0]["kind"] == "matmul"
    phases = fw.phases.set_index("phase")
    assert phases.at["forward", "onednn_ms_per_step"] == pytest.approx(
        ops.at["aten::addmm", "onednn_ms_per_step"]
    )
    assert phases.at["optimizer", "onednn_share"] == 0
    outside = fw.aten_outside_onednn.set_index("name")
    assert outside.at["aten::mm", "outside_ms_per_step"] == pytest.approx(
        ops.at["aten::mm", "self_ms_per_step"] - ops.at["aten::mm", "onednn_ms_per_step"]
    )


def test_a_key_averages_table_alone():
    """profile_nchw_infer.table.txt: ``Self CPU time total: 20.667ms`` and
    ``aten::mkldnn_convolution ... 11.029ms ... 20`` (self CPU, calls); no ProfilerStep rows,
    so the profiled window is one step."""
    fw = view("profile_nchw_infer.table.txt")
    assert fw.source == "table" and fw.step_method == "table_window"
    assert fw.typical_step_ms == pytest.approx(20.667)
    conv = fw.ops.set_index("name").loc["aten::mkldnn_convolution"]
    assert conv["self_ms_per_step"] == pytest.approx(11.029) and conv["calls_per_step"] == 20
    assert fw.phases["ms_per_step"].sum() == pytest.approx(fw.typical_step_ms)
    doc = fw.to_json()
    assert doc["steps"]["statistic"] == "totals / steps" and doc["ops"]


def test_convolutions_outside_onednn_are_a_fact_of_the_view():
    """profile_bf16_train.trace.json (bf16 autocast where PyTorch found no bf16 support):
    in the JSON, 12 ``aten::thnn_conv2d`` (3 at [4, 3, 64, 64] x [16, 3, 3, 3], 6 at
    [4, 16, 32, 32] x [16, 16, 3, 3], 3 at [4, 16, 32, 32] x [32, 16, 3, 3]) and as many
    ``aten::_slow_conv2d_backward`` in the 3 steps; the ``aten::_convolution`` above each
    has ``Input type`` c10::BFloat16, NCHW strides ([16384, 1024, 32, 1] for [4, 16, 32,
    32]), stride [1, 1] (the [32, 16, 3, 3] one [2, 2]), dilation [1, 1] and groups 1."""
    fw = view("profile_bf16_train.trace.json")
    table = fw.slow_convolutions
    assert len(table) == 6 and fw.steady_count == 3
    calls = table.groupby("op")["calls_per_step"].sum().to_dict()
    assert calls == {"aten::thnn_conv2d": 4.0, "aten::_slow_conv2d_backward": 4.0}
    row = table[
        (table["op"] == "aten::thnn_conv2d")
        & (table["weight_dims"].map(str) == str([16, 16, 3, 3]))
    ]
    (r,) = row.to_dict("records")
    assert r["input_dims"] == [4, 16, 32, 32] and r["calls_per_step"] == 2.0
    assert (r["dtype"], r["layout"], r["stride"], r["dilation"], r["groups"]) == (
        "bfloat16",
        "contiguous",
        [1, 1],
        [1, 1],
        1,
    )
    assert r["reason"].startswith("bfloat16 input") and "does not record the CPU" in r["reason"]
    strided = table[table["weight_dims"].map(str) == str([32, 16, 3, 3])]
    assert set(map(str, strided["stride"])) == {"[2, 2]"}
    assert list(table["ms_per_step"]) == sorted(table["ms_per_step"], reverse=True)
    doc = fw.to_json()
    assert len(doc["convolutions_outside_onednn"]) == 6
    json.dumps(doc, allow_nan=False)
    assert view("framework/slowconv_fixed.trace.json.gz").slow_convolutions.empty


def test_the_reason_follows_pytorchs_backend_choice():
    """The float32 rules of PyTorch's ``use_mkldnn`` (a 1x1 convolution with unit stride and
    a batch under 16; a batch-1 problem of at most 20480 input elements), other dtypes."""
    from dnnlens.analysis.framework.convs import reason

    one = {"dtype": "float32", "input_dims": [8, 64, 14, 14], "weight_dims": [64, 64, 1, 1]}
    assert "1x1" in reason({**one, "stride": [1, 1], "dilation": [1, 1], "groups": 1})
    tiny = {"dtype": "float32", "input_dims": [1, 3, 32, 32], "weight_dims": [8, 3, 3, 3]}
    assert "this small" in reason({**tiny, "stride": [1, 1], "dilation": [1, 1], "groups": 1})
    big = {**tiny, "input_dims": [8, 3, 224, 224], "stride": [1, 1], "dilation": [1, 1]}
    assert "mkldnn.enabled" in reason(big)
    assert reason({"dtype": "float64"}).startswith("float64 input")
    assert "record_shapes" in reason({})


def test_norms_by_kind():
    """frozenbn_tv_bad (torchvision's FrozenBatchNorm2d, no module frames): per norm and
    step 11 forward segments (4 reshapes, add, rsqrt, 2 muls, sub on [1, 8, 1, 1], then the
    mul and add on [4, 8, 128, 128]), 4 norms: 44 per step, and the MulBackward0 and
    AddBackward0 nodes of the activation's mul and add (4 each); frozenbn_bad holds the same
    ops inside its module frames, so none of them counts a second time by shape.
    bneval_train and bn_infer_bad run native_batch_norm with training=False (its
    ``Concrete Inputs``), plain_good with True."""
    fw = view("framework/frozenbn_tv_bad.trace.json.gz")
    found = fw.norms
    assert fw.calls_by_name(found.per_channel) == {
        "aten::reshape": 16.0,
        "aten::mul": 12.0,
        "aten::add": 8.0,
        "aten::rsqrt": 4.0,
        "aten::sub": 4.0,
    }
    assert fw.calls_by_name(found.backward) == {
        "autograd::engine::evaluate_function: AddBackward0": 4.0,
        "autograd::engine::evaluate_function: MulBackward0": 4.0,
    }
    framed = view("framework/frozenbn_bad.trace.json.gz").norms
    assert not framed.per_channel.any() and framed.modules.any()
    kinds = {
        run: [n["kind"] for n in view(f"framework/{run}.trace.json.gz").to_json()["normalization"]]
        for run in ("bneval_train", "bn_infer_bad", "plain_good")
    }
    assert kinds == {
        "bneval_train": ["batch norm, eval mode (ATen kernels)"],
        "bn_infer_bad": ["batch norm, eval mode (ATen kernels)"],
        "plain_good": ["batch norm, trained (ATen kernels)"],
    }
