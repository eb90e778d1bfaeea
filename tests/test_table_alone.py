"""A ``key_averages()`` table alone against the trace of the same profiled run.

The recordings of ``sample_logs/framework_tables/`` (``scripts/make_traces.py --tables``,
torch 2.13, one intra-op thread, ``schedule(wait=1, warmup=1, active=4)``) hold, per
scenario, the chrome trace and the tables torch printed from the same events:
``<run>.table.txt`` (every row, by self CPU), ``<run>.top.table.txt`` (``row_limit=25`` by
CPU total) and ``<run>.shapes.table.txt`` (``group_by_input_shape=True``).

MEAN below was counted from each trace with this script (standard library only): the
steps are the ``ProfilerStep#N`` complete events (``ph == "X"``), the mean step the mean of
their ``dur``; a phase's share is the ``dur`` of the main thread's outermost ``cpu_op`` and
marker events of the steps (``enumerate(DataLoader)#`` data, ``Optimizer.step#`` and
``Optimizer.zero_grad#`` optimizer, ``autograd::engine::evaluate_function:`` backward, any
other op forward) over the steps' total; "other" is the rest of the steps' time::

    python3 count.py sample_logs/framework_tables/<run>.trace.json.gz   # count.py:

    import gzip, json, sys
    E = json.load(gzip.open(sys.argv[1]))["traceEvents"]
    E = [e for e in E if e.get("ph") == "X" and e.get("cat") != "Trace"]
    isstep = lambda e: e["name"].startswith("ProfilerStep#")
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in E if isstep(e))
    main = next(e["tid"] for e in E if isstep(e))
    MARK = {"enumerate(DataLoader)#": "data", "Optimizer.step#": "opt",
            "Optimizer.zero_grad#": "opt", "autograd::engine::evaluate_function:": "bwd"}
    mark = lambda n: next((p for k, p in MARK.items() if n.startswith(k)), None)
    seg = [e for e in E if e["tid"] == main and not isstep(e)
           and (e.get("cat") == "cpu_op" or mark(e["name"]))]
    seg.sort(key=lambda e: (e["ts"], -e["dur"]))
    top, reach = [], -1.0  # outermost: not inside the previous outermost one
    for e in seg:
        if e["ts"] >= reach:
            top.append(e); reach = e["ts"] + e["dur"]
    n, wall = len(steps), sum(b - a for a, b in steps)
    ph = dict.fromkeys(["data", "bwd", "opt", "fwd"], 0.0)
    for e in top:
        if any(a <= e["ts"] < b for a, b in steps):
            ph[mark(e["name"]) or "fwd"] += e["dur"]
    ph["other"] = wall - sum(ph.values())
    print(n, wall / n / 1e3, {k: v / wall for k, v in ph.items()})

RULE_SHARES are printed by the ``count.py`` of ``tests/test_framework_rules.py`` (the rules'
own selections, typical statistic) on the same traces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.framework import table_patterns
from dnnlens.analysis.framework.keyaverages import omitted_ms
from dnnlens.parsers.torch_table import parse_table, read_table_file
from dnnlens.reading import load
from dnnlens.rules.config import RuleConfig
from dnnlens.rules.engine import RuleOptions, run_selected, selected_rules
from dnnlens.rules.registry import Registry, add_entry_points

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
RUNS = SAMPLES / "framework_tables"

#: run -> (steps, mean step ms, shares data, backward, optimizer, forward, other), by count.py
MEAN = {
    "adamw_bad": (4, 1.528560, 0.0, 0.2126, 0.4904, 0.1166, 0.1804),
    "adamw_fixed": (4, 0.960660, 0.0, 0.2888, 0.2471, 0.1754, 0.2887),
    "autocast_bad": (4, 16.661630, 0.0, 0.6405, 0.1211, 0.1723, 0.0662),
    "autocast_fixed": (4, 7.682456, 0.0, 0.6710, 0.0908, 0.1665, 0.0717),
    "dataloader_bad": (4, 34.093853, 0.5498, 0.2178, 0.0107, 0.1826, 0.0390),
    "dataloader_fixed": (4, 23.551830, 0.0107, 0.4874, 0.0315, 0.3844, 0.0860),
    "focal_bad": (4, 73.307242, 0.0, 0.4262, 0.0049, 0.5528, 0.0162),
    "focal_fixed": (4, 7.664777, 0.0, 0.5244, 0.0380, 0.3751, 0.0625),
    "frozenbn_bad": (4, 43.990308, 0.0, 0.6671, 0.0095, 0.2815, 0.0419),
    "frozenbn_fixed": (4, 33.166630, 0.0, 0.7503, 0.0119, 0.1987, 0.0392),
    "layout_bad": (4, 11.642554, 0.0, 0.5965, 0.0226, 0.3260, 0.0549),
    "layout_fixed": (4, 8.606241, 0.0, 0.6913, 0.0306, 0.2060, 0.0721),
    "sgd_bad": (4, 1.052998, 0.0, 0.3420, 0.2434, 0.1540, 0.2607),
    "sgd_fixed": (4, 0.916204, 0.0, 0.3577, 0.1242, 0.2040, 0.3141),
}
PHASE_KEYS = ("data loading", "backward", "optimizer", "forward", "other")

#: rule -> (bad run, share of the step its trace finding has), by the rules' count.py
RULE_SHARES = {
    "unfused-optimizer": [("sgd_bad", 0.243565), ("adamw_bad", 0.499801)],
    "elementwise-chain": [("focal_bad", 0.904477)],
    "aten-normalization": [("frozenbn_bad", 0.067517)],
    "autocast-casts": [("autocast_bad", 0.521716)],
    "aten-layout-copies": [("layout_bad", 0.381360)],
    "dataloader-stall": [("dataloader_bad", 0.572376)],
}
#: each rule's own pair of recordings
PAIRS = {
    "unfused-optimizer": ["sgd", "adamw"],
    "elementwise-chain": ["focal"],
    "aten-normalization": ["frozenbn"],
    "autocast-casts": ["autocast"],
    "aten-layout-copies": ["layout"],
    "dataloader-stall": ["dataloader"],
}


def close(table_share: float, trace_share: float) -> bool:
    """Within 10% of the trace's share; below a share of 0.1, within 0.01 of the step
    (a tenth of such a share is a few microseconds of a small run: scheduling noise)."""
    return abs(table_share - trace_share) <= max(0.1 * trace_share, 0.01)


def analysis(path: Path) -> Analysis:
    return Analysis(load([str(path)]))


def rules() -> dict:
    registry = Registry()
    add_entry_points(registry)
    options = RuleOptions(select=list(PAIRS), search_config=False)
    chosen = selected_rules(registry, options, RuleConfig(path="test", rules={}))
    return {r.name: r for r in chosen}


@pytest.fixture(scope="module")
def rule_set() -> dict:
    return rules()


def fired(rule_set: dict, a: Analysis) -> set[str]:
    return {f.rule for f in run_selected(a, list(rule_set.values()))}


def rule_shares(rule_set: dict, a: Analysis) -> dict[str, float]:
    """Framework rule name -> the share of the step its finding has."""
    return {f.rule: f.data["share_of_step"] for f in run_selected(a, list(rule_set.values()))}


@pytest.mark.parametrize("run", sorted(MEAN))
def test_the_steps_are_the_profiler_step_row(run):
    """``ProfilerStep*`` (calls = steps, CPU total / calls = the step) gives the trace's
    step count and mean ProfilerStep duration (MEAN: count.py); e.g. sgd_bad.table.txt's
    ``ProfilerStep* 26.07% 1.098ms 100.00% 4.212ms 1.053ms 4``: 4 steps of 4.212 / 4 ms."""
    steps, mean_ms = MEAN[run][:2]
    fw = analysis(RUNS / f"{run}.table.txt").framework
    assert fw.source == "table" and fw.step_method == "table_steps"
    assert fw.steady_count == steps and len(fw.steps) == steps
    # the table prints 4 significant digits: 1e-3 of the step; well within 10%
    assert fw.typical_step_ms == pytest.approx(mean_ms, rel=1e-3)
    assert list(fw.steps["dur_ms"]) == pytest.approx([mean_ms] * steps, rel=1e-3)
    assert all("mean of the 4 steps" in r for r in fw.steps["reason"])
    assert not any("no ProfilerStep" in n for n in fw.notes)


@pytest.mark.parametrize("run", sorted(MEAN))
def test_the_phases_match_the_trace(run):
    """Each phase's share of the step is within 10% of the trace's (MEAN: count.py, the
    same mean statistic a table has) and they add up to the step."""
    fw = analysis(RUNS / f"{run}.table.txt").framework
    shares = fw.phases.set_index("phase")["share"]
    for phase, trace_share in zip(PHASE_KEYS, MEAN[run][2:], strict=True):
        assert close(float(shares[phase]), trace_share), (phase, float(shares[phase]))
    assert fw.phases["ms_per_step"].sum() == pytest.approx(fw.typical_step_ms)


@pytest.mark.parametrize("run", sorted(MEAN))
def test_each_rule_gives_the_verdict_of_the_trace(rule_set, run):
    """On every recording, bad and fixed, the framework rules fire on the table alone when,
    and only when, they fire on the trace of the same run (their own thresholds), and each
    finding's share of the step is within 10% (relative) of the trace finding's."""
    on_trace = rule_shares(rule_set, analysis(RUNS / f"{run}.trace.json.gz"))
    on_table = rule_shares(rule_set, analysis(RUNS / f"{run}.table.txt"))
    assert set(on_table) == set(on_trace)
    for rule, share in on_trace.items():
        assert on_table[rule] == pytest.approx(share, rel=0.1), rule


@pytest.mark.parametrize(
    "rule, run, share",
    [(rule, run, share) for rule, runs in RULE_SHARES.items() for run, share in runs],
)
def test_the_table_share_is_within_10_percent_of_the_trace(rule_set, rule, run, share):
    """The bad run's finding from the table alone against the trace finding's share
    (RULE_SHARES: the count.py of tests/test_framework_rules.py): within 10%, a part of the
    step (basis "step"), the table's rows as evidence."""
    (found,) = run_selected(analysis(RUNS / f"{run}.table.txt"), [rule_set[rule]])
    assert found.data["share_of_step"] == pytest.approx(share, rel=0.1)
    assert found.data["impact_ms_per_step"] <= found.data["typical_step_ms"]
    assert found.evidence and found.evidence[0].path.endswith(f"{run}.table.txt")


@pytest.mark.parametrize("run", ["dataloader_bad", "dataloader_fixed"])
def test_dataloader_stall_reads_the_table_itself(rule_set, run):
    """dataloader-stall reads the data-loading phase of any framework view: on the table
    alone the rule fires (or not) as on the trace, with the share of the step the table's
    ``enumerate(DataLoader)#...`` row gives (MEAN: 0.5498 of the step on dataloader_bad)."""
    rule = rule_set["dataloader-stall"]
    on_trace = run_selected(analysis(RUNS / f"{run}.trace.json.gz"), [rule])
    on_table = run_selected(analysis(RUNS / f"{run}.table.txt"), [rule])
    assert len(on_table) == len(on_trace)
    for f in on_table:
        assert f.data["share_of_step"] == pytest.approx(MEAN[run][2], abs=0.001)
        assert f.evidence and f.evidence[0].path.endswith(f"{run}.table.txt")


# --------------------------------------------------------------------------------------------
# what a table tells and what it cannot


def test_backward_ops_are_in_the_backward_and_shared_ops_in_no_phase():
    """sgd_bad.table.txt: ``AddmmBackward0``, its ``autograd::engine::evaluate_function:``
    row and ``aten::threshold_backward`` run in the backward only; ``aten::mm`` (60 calls:
    forward matmuls and the gradients of AddmmBackward0) and ``aten::add_`` (the optimizer's
    and autograd's) may run in several: a table cannot tell, so no phase and a note."""
    fw = analysis(RUNS / "sgd_bad.table.txt").framework
    phase = fw.ops.set_index("name")["phase"]
    assert phase["AddmmBackward0"] == "backward"
    assert phase["autograd::engine::evaluate_function: AddmmBackward0"] == "backward"
    assert phase["aten::threshold_backward"] == "backward"
    assert phase["Optimizer.step#SGD.step"] == "optimizer"
    assert phase["aten::mm"] == "" and phase["aten::add_"] == ""
    assert fw.ops.set_index("name").at["aten::mm", "phases"] == {}
    assert any("cannot tell the phase" in n for n in fw.notes)
    assert "ProfilerStep*" not in set(fw.ops["name"])


def test_a_fused_kernel_is_the_optimizer_and_a_cut_name_keeps_its_phase():
    """layout_bad.table.txt: ``aten::_fused_sgd_`` (line 31) runs in the optimizer step;
    ``autograd::engine::evaluate_function: ConvolutionBack...`` (line 21, cut at the name
    column) is still a backward node."""
    fw = analysis(RUNS / "layout_bad.table.txt").framework
    phase = fw.ops.set_index("name")["phase"]
    assert phase["aten::_fused_sgd_"] == "optimizer"
    assert phase["autograd::engine::evaluate_function: ConvolutionBack..."] == "backward"


def test_an_inference_table_is_all_forward():
    """profile_nchw_infer.table.txt has no marker of another phase and no step rows: every
    op is forward, the window one step."""
    fw = analysis(SAMPLES / "profile_nchw_infer.table.txt").framework
    assert fw.step_method == "table_window" and set(fw.ops["phase"]) == {"forward"}


def test_python_frames_are_no_ops():
    """frozenbn_bad.table.txt (with_stack, with_modules) holds Python frames
    (``make_traces.py(203): step``, ``<built-in method ...``, ``nn.Module: Conv2d_0``): they
    are left out of the ops, their self time is the "other" phase, as a trace's untracked
    time (MEAN)."""
    fw = analysis(RUNS / "frozenbn_bad.table.txt").framework
    names = set(fw.ops["name"])
    assert not any(n.startswith(("nn.Module: ", "<built-in")) or ".py(" in n for n in names)
    assert "aten::mkldnn_convolution" in names


def test_a_row_limit_table_says_what_it_left_out():
    """sgd_bad.top.table.txt prints 25 rows (``row_limit=25``): their ``Self CPU %`` add to
    91.27% and their self times to 3.844 ms of the footer's 4.212 ms (awk over the file),
    so 0.368 ms of self time is in rows left out. The steps are those of the full table."""
    top = read_table_file(str(RUNS / "sgd_bad.top.table.txt"))
    assert top.size == 25
    assert omitted_ms(top) == pytest.approx(4.212 - 3.8437, abs=0.002)
    assert omitted_ms(read_table_file(str(RUNS / "sgd_bad.table.txt"))) == 0.0
    fw = analysis(RUNS / "sgd_bad.top.table.txt").framework
    assert fw.steady_count == 4 and fw.typical_step_ms == pytest.approx(1.053, rel=1e-3)
    (note,) = [n for n in fw.notes if "leaves out" in n]
    assert "25 rows" in note and "0.368 ms" in note
    optimizer = table_patterns.optimizer(fw)
    assert optimizer.per_parameter_high == float("inf")  # the rows left out could hold any


@pytest.mark.parametrize("run", ["sgd_bad", "layout_bad", "frozenbn_bad"])
def test_a_table_by_input_shape_gives_the_same_view(run):
    """``group_by_input_shape=True`` splits an op's row by input shapes; summed by name it
    is the plain table of the same run: the same steps and phases."""
    plain = analysis(RUNS / f"{run}.table.txt").framework
    shapes = analysis(RUNS / f"{run}.shapes.table.txt").framework
    assert shapes.table is not None and shapes.table.by_input_shape
    assert shapes.steady_count == plain.steady_count
    assert shapes.typical_step_ms == pytest.approx(plain.typical_step_ms, rel=1e-3)
    for a, b in zip(shapes.phases["share"], plain.phases["share"], strict=True):
        assert a == pytest.approx(b, abs=0.002)


def test_profiler_step_rows_one_per_step():
    """A table with ``ProfilerStep#N`` rows (torch 2.13 and 2.14 print ``ProfilerStep*``;
    this one is sgd_bad.table.txt's head with that row split into its four steps, each a
    quarter of 4.212 ms): four steps, named."""
    lines = (RUNS / "sgd_bad.table.txt").read_text().splitlines()
    star = next(i for i, x in enumerate(lines) if "ProfilerStep*" in x)
    rows = [
        lines[star]
        .replace("ProfilerStep*", f"ProfilerStep#{k}")
        .replace("4.212ms", "1.053ms")
        .replace("100.00%", " 25.00%")
        .replace("            4  ", "            1  ")
        for k in (2, 3, 4, 5)
    ]
    table = parse_table("\n".join(lines[:star] + rows + lines[star + 1 :]))
    from dnnlens.analysis.framework.keyaverages import table_view

    parts = table_view(table)
    assert parts["steady_count"] == 4 and parts["typical_step_ms"] == pytest.approx(1.053)
    assert list(parts["steps"]["name"]) == [f"ProfilerStep#{k}" for k in (2, 3, 4, 5)]


def test_what_the_table_cannot_see_is_bounded():
    """sgd_bad.table.txt: 68 ``aten::_to_copy`` calls (117.966 us, 2.8% of the step: the
    trace shows them as double -> float scalar casts) and no ``ToCopyBackward0``: the casts
    figure is 0, its upper bound every _to_copy; 16 ``torch::autograd::AccumulateGrad``
    calls per step (64 / 4) are the least per-parameter ops of SGD(foreach=False), the trace
    counts 48. autocast_bad.table.txt: ``ToCopyBackward0`` totals 28.659 ms, ``_to_copy``
    32.977 ms over 4 steps."""
    fw = analysis(RUNS / "sgd_bad.table.txt").framework
    casts = table_patterns.casts(fw)
    assert casts.ms_per_step == 0 and casts.high_ms == pytest.approx(0.117966 / 4, rel=1e-3)
    assert not casts.certain(0.02 * fw.typical_step_ms)
    optimizer = table_patterns.optimizer(fw)
    assert optimizer.kind == "per-parameter loop" and optimizer.per_parameter_low == 16
    assert optimizer.per_parameter_by_name["aten::add_"] == 32  # 128 / 4
    auto = analysis(RUNS / "autocast_bad.table.txt").framework
    casts = table_patterns.casts(auto)
    assert casts.low_ms == pytest.approx(28.659 / 4, rel=1e-3)
    assert casts.ms_per_step == pytest.approx(32.977 / 4, rel=1e-3)
    assert casts.certain(0.02 * auto.typical_step_ms)


def test_a_top_level_table_says_its_ops_are_left_out():
    """sgd_bad.toplevel.table.txt (``top_level_events_only=True``) shows only
    ``ProfilerStep*``: 4 steps of 22.330 / 4 ms, and 22.330 - 2.907 = 19.423 ms of self time
    in rows it does not show, which the note gives to the forward phase, not to an op."""
    fw = analysis(RUNS / "sgd_bad.toplevel.table.txt").framework
    assert fw.steady_count == 4 and fw.typical_step_ms == pytest.approx(22.330 / 4)
    (note,) = [n for n in fw.notes if "leaves out" in n]
    assert "19.423 ms" in note and f"{19.423 / 4:.3f} ms per step" in note
    assert fw.ops.empty


def test_a_lone_elementwise_node_is_no_chain():
    """dataloader_fixed.table.txt's autograd nodes (awk over the file): MeanBackward1 (the
    global average pool's backward, 4 calls: 1 per step, 2.296 ms with its ``aten::div``,
    2.4% of the 23.55 ms step) is the only elementwise node but ReluBackward0 (an
    activation); the others (NativeBatchNorm, Convolution, Addmm, NllLoss, LogSoftmax,
    View, T) are not elementwise. One node per step is fewer than a chain's 5 ops, so the
    table's figure leaves it out, as the trace finds no chain; its upper bound keeps it."""
    fw = analysis(RUNS / "dataloader_fixed.table.txt").framework
    found = table_patterns.elementwise(fw, 5)
    assert "MeanBackward1" not in found.calls_per_step
    assert found.ms_per_step < 0.02 * fw.typical_step_ms
    assert found.high_ms >= 2.296 / 4
    assert table_patterns.elementwise(fw, 1).calls_per_step["MeanBackward1"] == 1


def test_a_finding_says_when_only_a_table_tells(rule_set):
    """focal_bad.table.txt has no order (elementwise figure's lower bound 0) and
    layout_bad.table.txt no strides (its lower bound 0): their findings say "as far as a
    table tells" and what it cannot see. sgd_bad.table.txt's optimizer step is exact
    (``Optimizer.step#SGD.step`` 949.658 us CPU total over 4 steps) and its 16
    ``AccumulateGrad`` calls per step (64 / 4) reach min_ops 8 alone: no hedge."""
    for run, rule, cannot in [
        ("focal_bad", "elementwise-chain", "no order"),
        ("layout_bad", "aten-layout-copies", "no strides"),
    ]:
        (found,) = run_selected(analysis(RUNS / f"{run}.table.txt"), [rule_set[rule]])
        assert "as far as a table tells" in found.message and cannot in found.message
        assert found.data["table_low_ms_per_step"] == 0
    (found,) = run_selected(analysis(RUNS / "sgd_bad.table.txt"), [rule_set["unfused-optimizer"]])
    assert "as far as a table tells" not in found.message
    assert found.data["per_parameter_ops_per_step"] == 16
    assert found.data["impact_ms_per_step"] == pytest.approx(0.949658 / 4, rel=1e-4)
