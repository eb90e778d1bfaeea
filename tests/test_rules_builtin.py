"""Each built-in rule on real logs: it fires where its cause is real, stays quiet elsewhere."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.reading import load
from dnnlens.rules.engine import RuleOptions, run_rules

ROOT = Path(__file__).resolve().parent.parent
S, L, C = "sample_logs/", "sample_logs/legacy/", "tests/data/corpus/"
CHURN = "tests/rules/data/shape_churn_infer.log"


@cache
def findings(rel: str) -> tuple[Finding, ...]:
    analysis = Analysis(load([str(ROOT / rel)]))
    return tuple(run_rules(analysis, RuleOptions(search_config=False)))


def fired(rel: str, rule: str) -> list[Finding]:
    return [f for f in findings(rel) if f.rule == rule]


# (rule, a real log where it fires, real logs where it stays quiet)
CASES = [
    (
        "reorder-overhead",
        S + "convnet_nchw_infer.log",
        [S + "convnet_cl_infer.log", S + "compile_freezing_infer.log", S + "convnet_cl_train.log"],
    ),
    (
        "layout-round-trip",
        S + "convnet_nchw_infer.log",
        [S + "convnet_cl_infer.log", S + "compile_freezing_infer.log", S + "convnet_cl_train.log"],
    ),
    (
        "weight-reorder-per-iteration",
        S + "lstm_infer.log",
        [S + "compile_freezing_infer.log", S + "convnet_nchw_train.log"],
    ),
    (
        "reference-implementation",
        C + "03_mkldnn0x_tf_sum_reorder_loop_truncated.log",
        [S + "convnet_nchw_infer.log", S + "lstm_infer.log"],
    ),
    (
        "isa-below-machine",
        S + "isa_sse41_infer.log",
        [
            S + "convnet_nchw_infer.log",
            C + "05_dnnl1_6_benchdnn_conv_backtick.log",
            C + "27_onednn3x_amx_bf16_matmul_ellipses.log",
        ],
    ),
    (
        "cache-miss-steady-state",
        CHURN,
        [
            S + "convnet_nchw_infer.log",
            S + "compile_freezing_infer.log",
            S + "convnet_nchw_train.log",
        ],
    ),
    (
        "dtype-conversion",
        L + "onednn-3.2.0.log",
        [S + "convnet_nchw_infer.log", C + "27_onednn3x_amx_bf16_matmul_ellipses.log"],
    ),
    (
        "missed-fusion",
        L + "onednn-3.2.0.log",
        [
            S + "convnet_nchw_infer.log",
            C + "29_onednn3_8rc_xpu_gpu_gemm_info_postops.log",
            C + "07_dnnl1x_tf23_osx_backward_data.log",
        ],
    ),
    (
        "tiny-primitives",
        L + "onednn-2.2.0.log",
        [S + "convnet_nchw_infer.log", S + "convnet_cl_train.log"],
    ),
    (
        "unstable-timing",
        S + "contended_infer.log",
        [
            S + "convnet_cl_train.log",
            S + "compile_freezing_infer.log",
            S + "all_timestamps_infer.log",
        ],
    ),
    (
        "low-efficiency",
        S + "isa_sse41_infer.log",
        [S + "all_timestamps_infer.log", S + "convnet_cl_train.log"],
    ),
    (
        "no-onednn-lines",
        S + "convnet_bf16_autocast_infer.log",
        [S + "convnet_nchw_infer.log", C + "27_onednn3x_amx_bf16_matmul_ellipses.log"],
    ),
]


@pytest.mark.parametrize("rule, log, quiet", CASES, ids=[c[0] for c in CASES])
def test_fires_on_a_real_log(rule: str, log: str, quiet: list[str]) -> None:
    hits = fired(log, rule)
    assert hits, f"{rule} should fire on {log}: {[f.rule for f in findings(log)]}"
    f = hits[0]
    assert f.code.startswith("DL") and f.message and f.fix
    assert f.data, "findings carry the numbers behind them"
    assert f.evidence, "findings carry file:line evidence"
    for e in f.evidence:
        assert Path(e.path).is_file() and e.line >= 1


@pytest.mark.parametrize("rule, log, quiet", CASES, ids=[c[0] for c in CASES])
def test_stays_quiet_on_real_logs(rule: str, log: str, quiet: list[str]) -> None:
    for other in quiet:
        assert not fired(other, rule), f"{rule} fired on {other}: {fired(other, rule)}"


def test_all_builtins_are_covered() -> None:
    from dnnlens.rules.registry import Registry, add_builtins

    reg = Registry()
    add_builtins(reg)
    names = set(reg.entries)
    assert {c[0] for c in CASES} <= names
    assert len(CASES) == 12


def line_of(f: Finding, k: int = 0) -> str:
    e = f.evidence[k]
    return Path(e.path).read_text(encoding="utf-8").splitlines()[e.line - 1]


def test_layout_round_trip_names_layouts_and_points_at_reorders() -> None:
    f = fired(S + "convnet_nchw_infer.log", "layout-round-trip")[0]
    assert set(f.data["layouts"]) == {"abcd", "aBcd8b"}
    assert all(",reorder," in line_of(f, k) for k in range(len(f.evidence)))
    assert "channels_last" in f.fix


def test_weight_reorders_on_nchw_and_channels_last() -> None:
    for log in ("convnet_nchw_infer.log", "convnet_cl_infer.log"):
        f = fired(S + log, "weight-reorder-per-iteration")[0]
        # NCHW: 7 steady passes (passes 2 to 4 are slow warm-up); channels_last: 10
        steady = 7 if log.startswith("convnet_nchw") else 10
        assert f.data["weight_reorders"] == 4 and f.data["iterations"] == steady
        assert "freez" in f.fix


def test_noise_is_not_blamed_on_layouts() -> None:
    """The contended run gets unstable-timing; its reorder verdict comes from medians and
    matches the clean run of the same model, although the raw sums differ a lot."""
    contended = S + "contended_infer.log"
    assert fired(contended, "unstable-timing")
    noisy = fired(contended, "reorder-overhead")[0].data
    clean = fired(S + "all_timestamps_infer.log", "reorder-overhead")[0].data
    assert abs(noisy["share"] - clean["share"]) < 0.05
    assert noisy["raw_share"] > noisy["share"] + 0.15
    # channels_last: raw sums put 49% in reorders (spikes); medians say a few percent
    cl = findings(S + "convnet_cl_infer.log")
    assert not [f for f in cl if f.rule in ("reorder-overhead", "layout-round-trip")]
    assert [f for f in cl if f.rule == "unstable-timing"]


def test_the_uncontended_sample_logs_are_noisy_too() -> None:
    """Honest about the data: the machine that recorded the sample logs added 4-12 ms spikes
    to runs without deliberate contention as well, so unstable-timing fires on the
    channels_last run (its steady passes sum to 1.0 .. 63 ms). On the NCHW run the slow
    passes were the three after the first (102, 102, 30 ms against a 2.9 ms median): warm-up,
    not noise, so the steady state is quiet."""
    assert fired(S + "convnet_cl_infer.log", "unstable-timing")
    assert not fired(S + "convnet_nchw_infer.log", "unstable-timing")


def test_isa_cap_is_named_as_the_likely_cause() -> None:
    f = fired(S + "isa_sse41_infer.log", "isa-below-machine")[0]
    assert f.data["capped"] and f.data["header_isa"] == ["sse41"]
    assert "ONEDNN_MAX_CPU_ISA" in f.message
    assert ",convolution,jit:sse41," in line_of(f)


def test_isa_below_a_configured_machine_isa() -> None:
    from dnnlens.rules.builtin.isa_below_machine import IsaBelowMachine
    from dnnlens.rules.context import RuleContext

    ctx = RuleContext(Analysis(load([str(ROOT / S / "convnet_nchw_infer.log")])))
    assert not list(IsaBelowMachine().check(ctx))
    f = list(IsaBelowMachine({"machine_isa": "avx512_core"}).check(ctx))[0]
    assert f.data["below"] and f.data["below"][0]["isa"] == "avx2"


def test_cache_misses_after_warmup_on_shape_churn() -> None:
    f = fired(CHURN, "cache-miss-steady-state")[0]
    assert f.data["misses"] >= 30
    assert f.data["distinct_shapes"]["convolution"] > 3
    assert "create:cache_miss" in line_of(f)


def test_dtype_conversion_on_int8_legacy_probe() -> None:
    f = fired(L + "onednn-3.2.0.log", "dtype-conversion")[0]
    assert f.data["low_precision"] == ["convolution:s8"]
    assert f.data["f32_compute_primitives"] >= 3
    assert "f32->s8" in f.data["one_time_conversions"]


def test_missed_fusion_names_the_pattern() -> None:
    f = fired(L + "onednn-3.2.0.log", "missed-fusion")[0]
    assert f.data["through_reorder"] == f.data["occurrences"] == 2
    assert ",eltwise," in line_of(f)


def test_low_efficiency_numbers() -> None:
    f = fired(S + "isa_sse41_infer.log", "low-efficiency")[0]
    assert f.data["threads"] == 2 and f.data["peak_gflops"] == pytest.approx(40.0)
    assert f.data["efficiency"] < 0.1


def test_no_onednn_lines_for_both_bf16_logs() -> None:
    for log in ("convnet_bf16_autocast_infer.log", "profile_bf16_train.log"):
        f = fired(S + log, "no-onednn-lines")[0]
        assert f.data["header"] is False and "ONEDNN_VERBOSE" in f.message


def test_every_finding_of_every_sample_log_is_well_formed() -> None:
    for log in sorted((ROOT / "sample_logs").glob("*.log")):
        for f in findings(str(log.relative_to(ROOT))):
            assert f.severity in ("info", "warning", "error")
            assert not f.data.get("rule_error"), f.message
