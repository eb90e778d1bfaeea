"""What a finding's fix would save, against hand counts of the bundled real logs.

Every figure here is counted from the files without dnnlens where it can be (the exec
lines of a verbose log, split into passes of the net's 15 primitives; per position, the
median over the steady passes), and the report order is checked where it differs from the
order of time spent: a finding whose saving is known comes before one that spends more
time but whose saving is unknown (``rules.verdict``).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import SAVING_BASES, Evidence, Finding
from dnnlens.analysis.projection import project
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.rules import Rule, Saving
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.validate import checked_finding
from dnnlens.rules.verdict import apply_rules, report_order

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "sample_logs"
NCHW = LOGS / "convnet_nchw_infer.log"
runner = CliRunner()


def analysed(*paths: Path) -> Analysis:
    analysis = Analysis(load([str(p) for p in paths]))
    apply_rules(analysis, RuleOptions(search_config=False))
    return analysis


def by_rule(analysis: Analysis) -> dict[str, Finding]:
    """The findings of ``analysis`` by rule, and reorder-overhead's own finding as
    ``--select reorder-overhead`` gives it where a part folds it in (rules/duplicates.py)."""
    found = {f.rule: f for f in analysis.findings}
    if "reorder-overhead" not in found:
        alone = Analysis(analysis.log)
        apply_rules(alone, RuleOptions(search_config=False, select=["reorder-overhead"]))
        found.update({f.rule: f for f in alone.findings})
    return found


def exec_lines(path: Path) -> list[list[str]]:
    return [x.split(",") for x in path.read_text().splitlines() if ",exec," in x]


def steady_medians(path: Path, period: int, steady_from: int) -> list[tuple[list[str], float]]:
    """Per position of a pass: one of its lines and its median time over the steady passes
    (the passes from ``steady_from`` on: warm-up left out as docs/reports.md counts it)."""
    lines = exec_lines(path)
    passes = [lines[i : i + period] for i in range(0, len(lines), period)]
    steady = passes[steady_from:]
    return [
        (steady[0][k], statistics.median(float(p[k][-1]) for p in steady)) for k in range(period)
    ]


#: The NCHW sample: 11 passes of 15 executions, passes 0-3 warm-up (docs/reports.md).
NCHW_PASS, NCHW_STEADY_FROM = 15, 4


def nchw_reorders() -> tuple[float, float]:
    """(activation reorders, weight reorders) per typical iteration, by hand: a weight
    reorder writes oneDNN's blocked weight layout (two blocked letters: ABcd8b8a,
    Acdb8a), an activation one aBcd8b or plain abcd."""
    act = weight = 0.0
    for line, median in steady_medians(NCHW, NCHW_PASS, NCHW_STEADY_FROM):
        if line[5] != "reorder":
            continue
        dst = next(f for f in line if "dst:" in f).split()[-1]
        if "ABcd" in dst or "Acdb" in dst:
            weight += median
        else:
            act += median
    return act, weight


def test_a_reorder_finding_saves_the_reorder_time_counted_by_hand() -> None:
    """NCHW inference: freezing and channels_last remove every reorder, so reorder-overhead
    saves their whole time (0.676 ms), layout-round-trip the activation reorders' (0.650),
    weight-reorder-per-iteration the weights' (0.026), each with basis ``removal``."""
    act, weight = nchw_reorders()
    assert act + weight == pytest.approx(0.6760, abs=5e-4)
    found = by_rule(analysed(NCHW))
    saving = {rule: f.saving_ms_per_iteration for rule, f in found.items()}
    assert saving["reorder-overhead"] == pytest.approx(act + weight)
    assert saving["layout-round-trip"] == pytest.approx(act)
    assert saving["weight-reorder-per-iteration"] == pytest.approx(weight)
    for rule in ("reorder-overhead", "layout-round-trip", "weight-reorder-per-iteration"):
        assert found[rule].saving_basis == "removal"
        # removing the work saves the time it spends: the same figure
        assert found[rule].saving_ms_per_iteration == pytest.approx(
            found[rule].impact_ms_per_iteration
        )


@pytest.mark.parametrize("log", ["convnet_nchw_infer.log", "contended_infer.log"])
def test_a_finding_and_project_state_the_same_saving(log: str) -> None:
    """One number per fix: what analyze's reorder findings save is what project's
    removals project for the same log."""
    analysis = analysed(LOGS / log)
    found = by_rule(analysis)
    changes = {
        c.change: c.saving_ms
        for c in project(
            analysis,
            ["remove:reorders", "remove:activation-reorders", "remove:weight-reorders"],
        ).changes
    }
    pairs = {
        "reorder-overhead": "remove:reorders",
        "layout-round-trip": "remove:activation-reorders",
        "weight-reorder-per-iteration": "remove:weight-reorders",
    }
    for rule, change in pairs.items():
        assert found[rule].saving_ms_per_iteration == pytest.approx(changes[change]), rule


@pytest.mark.parametrize("log", ["resnet18_nchw_train.log", "legacy/onednn-2.6.0.log"])
def test_in_training_project_and_the_findings_keep_the_weight_reorders(log: str) -> None:
    """A training step's weight reorders: weight-reorder-training's saving is unknown, and so
    is project's remove:weight-reorders (it said the whole time before, as if the weights
    could be prepacked); remove:reorders and reorder-overhead both save the activation
    reorders only, layout-round-trip's figure."""
    analysis = analysed(LOGS / log)
    found = by_rule(analysis)
    changes = {
        c.change: c
        for c in project(
            analysis,
            ["remove:reorders", "remove:activation-reorders", "remove:weight-reorders"],
        ).changes
    }
    assert found["weight-reorder-training"].saving_basis == "unknown"
    assert changes["remove:weight-reorders"].basis == "unknown"
    assert changes["remove:weight-reorders"].to_json()["saving_ms"] is None
    act = found["layout-round-trip"].saving_ms_per_iteration
    assert found["reorder-overhead"].saving_ms_per_iteration == pytest.approx(act)
    assert changes["remove:reorders"].saving_ms == pytest.approx(act)
    assert changes["remove:activation-reorders"].saving_ms == pytest.approx(act)


def test_a_known_saving_leads_a_larger_time_of_unknown_saving() -> None:
    """contended_infer: two busy loops make 8.6 ms of noise a pass (unstable-timing: no fix
    of the model saves it); the NCHW reorders' 0.90 ms are what a fix removes, so they
    lead. Ranked by time spent, the noise came first."""
    analysis = analysed(LOGS / "contended_infer.log")
    rules = [f.rule for f in analysis.findings]
    found = by_rule(analysis)
    noise, reorders = found["unstable-timing"], found["reorder-overhead"]
    assert noise.impact_ms_per_iteration > 5 * reorders.impact_ms_per_iteration
    assert noise.saving_ms_per_iteration is None and noise.saving_basis == "unknown"
    # the reorders' one finding: the round trips, which hold 90% or more of them
    assert rules.index("layout-round-trip") < rules.index("unstable-timing")
    assert rules[0] == "layout-round-trip"


def test_training_weight_reorders_do_not_lead_the_activation_reorders() -> None:
    """resnet18 NCHW training: the weight reorders spend 10.2 ms a step and no recorded fix
    removes them (saving unknown); the activation round trips spend 0.51 ms and
    channels_last removes them. reorder-overhead saves only the removable part: its time
    less the weight reorders' (the by-role figures of its data)."""
    analysis = analysed(LOGS / "resnet18_nchw_train.log")
    found = by_rule(analysis)
    total = found["reorder-overhead"]
    weights = sum(
        v for k, v in total.data["by_role_ms_per_iteration"].items() if k.startswith("weight")
    )
    assert total.saving_ms_per_iteration == pytest.approx(total.impact_ms_per_iteration - weights)
    assert total.saving_ms_per_iteration == pytest.approx(
        found["layout-round-trip"].saving_ms_per_iteration
    )
    training = found["weight-reorder-training"]
    assert training.saving_basis == "unknown"
    assert training.impact_ms_per_iteration > 10 * total.saving_ms_per_iteration
    rules = [f.rule for f in analysis.findings]
    assert rules.index("layout-round-trip") < rules.index("weight-reorder-training")


def test_a_known_zero_saving_follows_the_time_of_unknown_saving() -> None:
    """resnet18 channels_last training: every reorder moves a weight; reorder-overhead
    saves 0 ms (known) and comes after weight-reorder-training (the same time, saving
    unknown)."""
    rules = [f.rule for f in analysed(LOGS / "resnet18_cl_train.log").findings]
    assert rules == ["weight-reorder-training"]  # reorder-overhead folded in: one cause
    alone = Analysis(load([str(LOGS / "resnet18_cl_train.log")]))
    apply_rules(alone, RuleOptions(search_config=False, select=["DL001", "DL013"]))
    assert [f.rule for f in alone.findings] == ["weight-reorder-training"]
    apply_rules(alone, RuleOptions(search_config=False, select=["DL001"]))
    (total,) = alone.findings
    assert total.saving_ms_per_iteration == 0 and total.saving_basis == "removal"


def test_report_order_tiers() -> None:
    def f(rule: str, impact: float | None, saving: float | None, basis: str = "removal") -> Finding:
        return Finding(
            rule, "X", "warning", rule, impact_ms_per_iteration=impact,
            saving_ms_per_iteration=saving, saving_basis=basis if saving is not None else "unknown",
        )  # fmt: skip

    small_known = f("small-known", 1.0, 1.0)
    big_unknown = f("big-unknown", 50.0, None)
    bigger_known = f("bigger-known", 3.0, 2.5, "roofline")
    zero = f("zero", 40.0, 0.0)
    timeless = f("timeless", None, None)
    ordered = report_order([timeless, zero, big_unknown, small_known, bigger_known])
    assert [x.rule for x in ordered] == [
        "bigger-known",
        "small-known",
        "big-unknown",
        "zero",
        "timeless",
    ]


def test_a_saving_is_never_more_than_the_time_spent_and_defaults_to_unknown() -> None:
    class Plugin(Rule):
        """A plugin."""

        name = "a-plugin"
        code = "P001"

    rule = Plugin()
    plain = rule.finding("m", impact_ms=2.0)
    assert (plain.saving_ms_per_iteration, plain.saving_basis) == (None, "unknown")
    capped = rule.finding("m", impact_ms=2.0, saving=Saving.removal(5.0))
    assert capped.saving_ms_per_iteration == 2.0
    timeless = rule.finding("m", saving=Saving.removal(5.0))
    assert (timeless.saving_ms_per_iteration, timeless.saving_basis) == (None, "unknown")
    # a plugin's finding built by hand: a saving above its time, or on no known basis, is
    # unknown; one within its time on a known basis is kept
    wild = Finding(
        "a-plugin", "P001", "warning", "m", [Evidence("x", 1)], impact_ms_per_iteration=1.0
    )
    wild.saving_ms_per_iteration, wild.saving_basis = 3.0, "removal"
    assert checked_finding(wild).saving_basis == "unknown"
    wild.saving_ms_per_iteration, wild.saving_basis = 0.5, "guess"
    assert checked_finding(wild).saving_basis == "unknown"
    wild.saving_ms_per_iteration, wild.saving_basis = 0.5, "measured"
    kept = checked_finding(wild)
    assert (kept.saving_ms_per_iteration, kept.saving_basis) == (0.5, "measured")


def test_every_builtin_rule_states_its_saving_in_its_docstring() -> None:
    from dnnlens.rules.registry import import_builtin_modules, rules_in

    rules = [r for module in import_builtin_modules() for r in rules_in(module)]
    assert len(rules) == 20
    for cls in rules:
        assert "Saving" in (cls.__doc__ or ""), cls.name


# ---------------------------------------------------------------------------------------
# aten-convolution: the same shape in oneDNN, else the roofline, else unknown

SLOWCONV = LOGS / "framework" / "slowconv_bad.trace.json.gz"


def test_aten_convolution_alone_has_no_saving() -> None:
    """A trace alone: no oneDNN convolution of these shapes and no machine (no header):
    the saving is unknown, said, and the finding does not lead with it."""
    analysis = analysed(SLOWCONV)
    (f,) = [x for x in analysis.findings if x.rule == "aten-convolution"]
    assert f.saving_ms_per_iteration is None and f.saving_basis == "unknown"
    assert "no oneDNN convolution" in f.saving_note


def test_aten_convolution_saves_down_to_onednn_rate_for_the_same_shape(tmp_path: Path) -> None:
    """slowconv_bad's 16->16 3x3 convolutions (input [4, 16, 32, 32]) in ATen's kernels,
    beside a verbose log that runs the same shape in oneDNN (convnet_nchw_infer.log's
    mb4_ic16oc16_ih32 convolution, 2 threads AVX2): that row saves its time less its calls
    at oneDNN's median run (same_shape); the other rows (the 3-channel stem, backward) have
    no pair and save their time less the f32 roof of the log's machine (roofline), so the
    finding's basis is the weaker, roofline."""
    (tmp_path / "pair.trace.json.gz").write_bytes(SLOWCONV.read_bytes())
    shutil.copy(NCHW, tmp_path / "pair.log")
    analysis = analysed(tmp_path / "pair.trace.json.gz", tmp_path / "pair.log")
    (f,) = [x for x in analysis.findings if x.rule == "aten-convolution"]
    # by hand: the steady forward executions of that shape in the log, median per line kind
    shape = "mb4_ic16oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1"
    lines = exec_lines(NCHW)
    runs: dict[str, list[float]] = {}
    for i, line in enumerate(lines):
        if i // NCHW_PASS >= NCHW_STEADY_FROM and line[-2] == shape and "forward" in line[7]:
            runs.setdefault(",".join(line[5:-1]), []).append(float(line[-1]))
    onednn_ms = min(statistics.median(v) for v in runs.values())
    # the machine of the log's header: 2 threads of AVX2 (2 FMA x 8 lanes x 2) at the
    # assumed 2.5 GHz = 160 GFLOP/s, 10 GB/s a thread
    peak, bandwidth = 2 * 2.5 * 32 * 1e9, 20e9
    expected = 0.0
    table = analysis.framework.slow_convolutions
    for row in table.itertuples(index=False):
        n, ic, ih, iw = row.input_dims
        oc, icg, kh, kw = row.weight_dims
        oh, ow = ih, iw  # 3x3, stride 1, padding 1
        if row.phase == "forward" and (n, ic, oc, ih) == (4, 16, 16, 32):
            expected += row.ms_per_step - row.calls_per_step * onednn_ms
            continue
        flops = 2 * n * oc * oh * ow * icg * kh * kw * (2 if row.phase == "backward" else 1)
        data = 4 * (n * ic * ih * iw + oc * icg * kh * kw + n * oc * oh * ow)
        roof_ms = max(flops / peak, data / bandwidth) * 1e3
        expected += row.ms_per_step - row.calls_per_step * roof_ms
    assert f.saving_basis == "roofline"
    assert f.saving_ms_per_iteration == pytest.approx(expected)
    assert "oneDNN rate" in f.saving_note
    assert f.saving_ms_per_iteration < f.impact_ms_per_iteration


def test_aten_convolution_with_a_machine_profile_is_bounded_by_its_roof() -> None:
    """A trace alone with a machine given (``--machine``: 2 threads of AVX2 at the assumed
    2.5 GHz, 20 GB/s): every row saves its time less its calls at the f32 roof."""
    from dnnlens.analysis.analysis import AnalysisOptions
    from dnnlens.analysis.machine import machine_from_isa

    m = machine_from_isa("avx2", 2)
    analysis = Analysis(load([str(SLOWCONV)]), AnalysisOptions(machine=m))
    apply_rules(analysis, RuleOptions(search_config=False))
    (f,) = [x for x in analysis.findings if x.rule == "aten-convolution"]
    expected = 0.0
    for row in analysis.framework.slow_convolutions.itertuples(index=False):
        n, ic, ih, iw = row.input_dims
        oc, icg, kh, kw = row.weight_dims
        flops = 2 * n * oc * ih * iw * icg * kh * kw * (2 if row.phase == "backward" else 1)
        data = 4 * (n * ic * ih * iw + oc * icg * kh * kw + n * oc * ih * iw)
        roof_ms = max(flops / 160e9, data / 20e9) * 1e3
        expected += row.ms_per_step - row.calls_per_step * roof_ms
    assert f.saving_basis == "roofline"
    assert f.saving_ms_per_iteration == pytest.approx(expected)


# ---------------------------------------------------------------------------------------
# the reports


def analyze_json(*paths: Path) -> dict:
    result = runner.invoke(app, ["analyze", *map(str, paths), "-f", "json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "paths",
    [
        [NCHW],
        [LOGS / "resnet18_nchw_train.log"],
        [LOGS / "framework" / "layout_bad.log", LOGS / "framework" / "layout_bad.trace.json.gz"],
    ],
    ids=["nchw", "resnet18-train", "trace-pair"],
)
def test_json_findings_carry_the_saving_and_validate(paths: list[Path]) -> None:
    doc = analyze_json(*paths)
    schema = json.loads((ROOT / "docs" / "schema" / "analyze.schema.json").read_text())
    jsonschema.validate(doc, schema)
    enum = schema["$defs"]["FindingDoc"]["properties"]["saving_basis"]["enum"]
    assert enum == list(SAVING_BASES)
    for f in doc["findings"]:
        for key in ("saving_ms_per_iteration", "saving_ms_per_basis", "saving_basis"):
            assert key in f
        if f["saving_ms_per_iteration"] is not None:
            assert f["saving_ms_per_iteration"] <= f["impact_ms_per_iteration"] + 1e-12


def test_the_headline_leads_with_the_saving_beside_the_time() -> None:
    result = runner.invoke(app, ["analyze", str(NCHW)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (
        "Fix first: Activations are reordered into a blocked layout and back around ops (saves "
        "~0.65 ms per iteration (removal); spends 0.65 ms per iteration, 31% of the typical "
        "2.09 ms)."
    ) in result.stdout


def test_a_headline_without_a_known_saving_says_so() -> None:
    result = runner.invoke(app, ["analyze", str(SLOWCONV)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Most time, saving unknown: Convolutions run in PyTorch's own" in result.stdout
    assert "Fix first" not in result.stdout
