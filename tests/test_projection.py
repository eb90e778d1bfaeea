"""What-if projections on the real NCHW / channels_last samples and on small synthetic logs.

The expected numbers are computed here without dnnlens: the exec lines of each sample, cut
into its 11 passes (MANIFEST.json: 1 warm-up + 10 timed; 165 = 11 x 15 exec lines for NCHW,
88 = 11 x 8 for channels_last), the warm-up passes dropped, and each step timed by the
median of its position over the steady passes. The warm-up passes,
by the pass sums (``awk`` over 15-line chunks): NCHW 102.97, 102.26, 102.30, 30.19, then
2.25 .. 2.02 ms: the first pass creates the primitives, passes 2 to 4 are more than 3x the
steady median (2.87 ms), so 7 steady passes; channels_last: only the first pass.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis, AnalysisOptions
from dnnlens.analysis.machine import machine_from_isa
from dnnlens.analysis.projection import (
    CHANGES,
    iteration_steps,
    normalize_changes,
    project,
)
from dnnlens.cli import app
from dnnlens.reading import load, load_text
from dnnlens.report import projection_report

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = ROOT / "convnet_nchw_infer.log"
CL = ROOT / "convnet_cl_infer.log"
# positions in one NCHW pass (read off the log): weight reorders feed a conv's wei slot
NCHW_WEIGHT = (0, 4, 8, 12)
NCHW_ACT = (2, 3, 6, 7, 10, 11, 14)
NCHW_CONV = (1, 5, 9, 13)
CL_CONV = (1, 3, 5, 7)  # channels_last pass: reorder(wei), conv, ... (no activation reorders)


STEADY_FROM = {"convnet_nchw_infer.log": 4, "convnet_cl_infer.log": 1}


def hand_medians(path: Path, period: int) -> list[float]:
    """Per position of a pass: its median time over the steady passes."""
    times = [float(x.rsplit(",", 1)[1]) for x in path.read_text().splitlines() if ",exec," in x]
    passes = [times[i : i + period] for i in range(0, len(times), period)]
    assert len(passes) == 11
    steady = passes[STEADY_FROM[path.name] :]
    return [statistics.median(p[k] for p in steady) for k in range(period)]


@pytest.fixture(scope="module")
def nchw():
    return Analysis(load([str(NCHW)]))


@pytest.fixture(scope="module")
def cl():
    return Analysis(load([str(CL)]))


def test_steps_and_baseline_match_hand_medians(nchw):
    med = hand_medians(NCHW, 15)
    t = iteration_steps(nchw)
    assert t.iterations_used == 7
    assert [s.time_ms for s in t.steps] == pytest.approx(med)
    assert t.total_ms == pytest.approx(sum(med))
    # the baseline is the typical iteration that analyze and diff print, to the last bit
    assert t.total_ms == nchw.typical_iteration_ms and t.other_ms == 0.0
    assert [s.position for s in t.steps if s.tensor == "weight"] == list(NCHW_WEIGHT)
    assert [s.position for s in t.steps if s.tensor == "activation"] == list(NCHW_ACT)


def test_remove_activation_reorders_without_measurement(nchw):
    med = hand_medians(NCHW, 15)
    r = project(nchw, ["remove:activation-reorders"]).changes[0]
    assert r.projected_ms == pytest.approx(sum(med) - sum(med[i] for i in NCHW_ACT))
    assert r.sources == ["log", "assumed"]
    kept = [a for a in r.adjustments if a.kind == "convolution"]
    assert [a.position for a in kept] == list(NCHW_CONV)
    assert all(a.source == "assumed" and a.after_ms == a.before_ms for a in kept)
    assert any("can change the implementation" in x for x in r.assumptions)


def test_remove_activation_reorders_with_channels_last_measured(nchw, cl):
    med, cl_med = hand_medians(NCHW, 15), hand_medians(CL, 8)
    r = project(nchw, ["remove:activation-reorders"], measured=[cl]).changes[0]
    # NCHW pass - activation reorders - NCHW convs + CL convs (k-th conv of a shape <-> k-th)
    expected = (
        sum(med)
        - sum(med[i] for i in NCHW_ACT)
        - sum(med[i] for i in NCHW_CONV)
        + sum(cl_med[i] for i in CL_CONV)
    )
    assert r.projected_ms == pytest.approx(expected)
    assert r.sources == ["log", "measured"]
    convs = {a.position: a for a in r.adjustments if a.kind == "convolution"}
    assert convs[1].after_ms == pytest.approx(cl_med[1])
    assert "convnet_cl_infer.log" in convs[1].detail and "brg_conv_fwd:avx2" in convs[1].detail
    assert any("jit:avx2 -> brg_conv_fwd:avx2" in x for x in r.assumptions)


def test_remove_weight_reorders(nchw):
    med = hand_medians(NCHW, 15)
    r = project(nchw, ["remove:weight-reorders"]).changes[0]
    assert r.projected_ms == pytest.approx(sum(med) - sum(med[i] for i in NCHW_WEIGHT))
    assert r.sources == ["log"]
    assert any("prepacked" in x for x in r.assumptions)


def test_fuse_eltwise_nothing_to_fuse_in_pytorch_sample(nchw):
    r = project(nchw, ["fuse:eltwise"]).changes[0]
    assert r.projected_ms == pytest.approx(r.baseline_ms)
    assert r.adjustments == [] and "nothing to fuse" in r.warnings[0]


def test_bf16_on_avx2_is_not_projected(nchw):
    """AVX2 has no bf16 arithmetic and oneDNN no bf16 jit kernel there: the roofline of a
    faster kernel does not apply, so the table and the text agree that no saving is
    projected (the text said "expect slower" beside a 1.19x speedup before)."""
    r = project(nchw, ["dtype:bf16"]).changes[0]
    assert r.basis == "unknown"
    assert r.projected_ms == pytest.approx(r.baseline_ms)  # every time kept
    assert r.sources == ["assumed"]
    assert any("expect slower" in w for w in r.warnings)
    doc = r.to_json()
    assert doc["saving_ms"] is None and doc["speedup"] is None and doc["projected_ms"] is None


def test_bf16_by_roofline_where_the_machine_has_bf16_arithmetic(nchw):
    """With AVX-512 BF16 (gain 2) the roofline applies: compute-bound convolutions halve,
    memory-bound reorders move half the bytes."""
    m = machine_from_isa("avx512_core_bf16", 2)
    a = Analysis(nchw.log, AnalysisOptions(machine=m))
    r = project(a, ["dtype:bf16"]).changes[0]
    assert r.basis == "estimate" and r.sources == ["roofline"]
    assert 0 < r.projected_ms < r.baseline_ms


def test_combined_is_applied_in_order(nchw, cl):
    cl_med = hand_medians(CL, 8)
    p = project(nchw, list(CHANGES), measured=[cl])
    # measured changes first (by saving), then the estimates, then those with nothing to do
    assert [c.change for c in p.changes] == [
        "remove:reorders",
        "remove:activation-reorders",
        "remove:weight-reorders",
        "dtype:bf16",
        "replace:reference-kernels",
        "remove:cache-misses",
        "fuse:eltwise",
    ]
    # bf16 on AVX2 is not projected (its saving is unknown), before the changes that find
    # nothing to change
    assert [c.basis for c in p.changes] == ["measured"] * 3 + ["unknown"] + ["none"] * 3
    assert p.combined is not None
    # every reorder removed, convs from the CL log; bf16 keeps their times (not counted)
    assert p.combined.projected_ms == pytest.approx(sum(cl_med[i] for i in CL_CONV))
    assert any("dtype:bf16 is not counted" in w for w in p.combined.warnings)
    assert p.combined.change == (
        "remove:reorders + replace:reference-kernels + remove:cache-misses + fuse:eltwise + "
        "dtype:bf16"
    )
    doc = json.loads(projection_report.render_json(p))
    assert doc["baseline"]["typical_iteration_ms"] == nchw.typical_iteration_ms
    assert doc["baseline_ms"] == pytest.approx(sum(hand_medians(NCHW, 15)))
    assert doc["measured_logs"][0]["baseline_ms"] == pytest.approx(sum(cl_med))


# ---------------------------------------------------------------------------------------
# synthetic logs: fusion and measured dtype


HEADER = [
    "onednn_verbose,v1,info,oneDNN v3.12.0 (commit x)",
    "onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2",
    "onednn_verbose,v1,info,cpu,isa:Intel AVX2",
]
CONV = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_inference,"
    "src:{dt}::blocked:acdb::f0 wei:{dt}::blocked:Acdb8a::f0 bia:undef::undef::: "
    "dst:{dt}::blocked:acdb::f0,{attrs},alg:convolution_direct,"
    "mb1_ic8oc8_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,{t}"
)
ELT = (
    "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
    "src:f32::blocked:acdb::f0 dst:f32::blocked:acdb::f0,,alg:eltwise_relu alpha:0 beta:0,"
    "1x8x8x8,{t}"
)


def synthetic(
    passes: int, fused: bool = False, dt: str = "f32", conv_ms: float = 0.5, machine=None
):
    lines = list(HEADER)
    for _ in range(passes):
        if fused:
            lines.append(CONV.format(dt=dt, attrs="attr-post-ops:eltwise_relu", t=conv_ms))
        else:
            lines += [CONV.format(dt=dt, attrs="", t=conv_ms), ELT.format(t=0.1)]
    return Analysis(load_text("\n".join(lines)), AnalysisOptions(machine=machine))


def test_fuse_eltwise_by_roofline():
    r = project(synthetic(6), ["fuse:eltwise"]).changes[0]
    assert r.baseline_ms == pytest.approx(0.6)
    elt = next(a for a in r.adjustments if a.kind == "eltwise")
    conv = next(a for a in r.adjustments if a.kind == "convolution")
    assert (elt.after_ms, elt.source) == (0.0, "log")
    # + 1*8*8*8 = 512 FLOPs at 160 GFLOP/s = 3.2e-6 ms
    assert conv.source == "roofline"
    assert conv.after_ms == pytest.approx(0.5 + 512 / 160e6)
    assert r.projected_ms == pytest.approx(0.5 + 512 / 160e6)


def test_fuse_eltwise_measured_in_other_log():
    other = synthetic(6, True, conv_ms=0.55)
    r = project(synthetic(6), ["fuse:eltwise"], measured=[other]).changes[0]
    conv = next(a for a in r.adjustments if a.kind == "convolution")
    assert conv.source == "measured" and conv.after_ms == pytest.approx(0.55)
    assert r.projected_ms == pytest.approx(0.55)


def test_bf16_measured_in_other_log_wins_over_roofline():
    m = machine_from_isa("avx512_core_bf16", 2)
    other = synthetic(6, dt="bf16", conv_ms=0.2, machine=m)
    r = project(synthetic(6, machine=m), ["dtype:bf16"], measured=[other]).changes[0]
    conv = next(a for a in r.adjustments if a.kind == "convolution")
    assert conv.source == "measured" and conv.after_ms == pytest.approx(0.2)
    elt = next(a for a in r.adjustments if a.kind == "eltwise")
    assert elt.source == "roofline" and elt.after_ms == pytest.approx(0.05)  # memory bound


def test_machine_profile_thread_mismatch_is_noted():
    m = machine_from_isa("avx2", 8)
    p = project(synthetic(4, machine=m), ["dtype:bf16"])
    assert p.machine is m
    assert any("2 threads" in n and "8" in n for n in p.table.notes)


def test_normalize_changes():
    assert normalize_changes(["weight-reorders"], ["eltwise"], "bf16") == [
        "remove:weight-reorders",
        "fuse:eltwise",
        "dtype:bf16",
    ]
    assert normalize_changes(["cache-misses"], None, None, ["reference-kernels"]) == [
        "replace:reference-kernels",
        "remove:cache-misses",
    ]
    for bad in (
        (["nothing"], None, None),
        (None, ["relu"], None),
        (None, None, "f16"),
        (None, None, None, ["everything"]),
    ):
        with pytest.raises(ValueError):
            normalize_changes(*bad)


def test_empty_log_projects_to_zero():
    p = project(Analysis(load_text("\n".join(HEADER))), ["remove:reorders"])
    assert p.table.total_ms == 0.0 and p.changes[0].projected_ms == 0.0


# ---------------------------------------------------------------------------------------
# command line


runner = CliRunner()


def test_cli_project_json():
    res = runner.invoke(
        app,
        [
            "project",
            str(NCHW),
            "--remove",
            "activation-reorders",
            "--measured",
            str(CL),
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [c["change"] for c in doc["changes"]] == ["remove:activation-reorders"]
    assert doc["changes"][0]["sources"] == ["log", "measured"]
    assert doc["combined"] is None


def test_cli_project_terminal_all_changes():
    res = runner.invoke(app, ["project", str(NCHW)])
    assert res.exit_code == 0, res.output
    for text in ("remove:activation-reorders", "dtype:bf16", "assumes:", "warning:", "baseline"):
        assert text in res.output


def test_cli_project_errors(tmp_path):
    assert runner.invoke(app, ["project", str(NCHW), "--remove", "x"]).exit_code == 2
    assert runner.invoke(app, ["project", str(tmp_path / "none.log")]).exit_code == 2
    bad = tmp_path / "m.json"
    bad.write_text("{")
    assert runner.invoke(app, ["project", str(NCHW), "--machine", str(bad)]).exit_code == 2


def test_cli_machine_show(tmp_path):
    res = runner.invoke(app, ["machine", "show", str(NCHW), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["isa"] == "avx2" and doc["threads"] == 2
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**doc, "bandwidth_gbs": 7.0}))
    res = runner.invoke(app, ["machine", "show", "--machine", str(path)])
    assert res.exit_code == 0 and "7.0" in res.output
    res = runner.invoke(app, ["project", str(NCHW), "--machine", str(path), "-f", "json"])
    assert json.loads(res.output)["machine"]["bandwidth_gbs"] == 7.0


def test_cli_machine_probe_writes_profile(tmp_path):
    out = tmp_path / "box.toml"
    res = runner.invoke(
        app, ["machine", "probe", "-o", str(out), "--seconds", "0.2", "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["peak_gflops"]["f32"] > 0 and doc["bandwidth_gbs"] > 0
    assert "gemm_f32_gflops" in doc["measured"] and out.exists()


def test_cli_machine_show_says_where_each_value_came_from(tmp_path):
    # the NCHW header prints isa:Intel AVX2 and nthr:2; a file without a header has neither
    res = runner.invoke(app, ["machine", "show", str(NCHW)])
    assert "from the log's header (ISA and threads)" in res.output
    bare = tmp_path / "bare.log"
    bare.write_text("no header here\n")
    res = runner.invoke(app, ["machine", "show", str(bare)])
    assert "defaults: the log names no ISA and no thread count" in res.output
    assert "from log header" not in res.output
    assert runner.invoke(app, ["machine", "show", "-f", "xml", str(NCHW)]).exit_code == 2
