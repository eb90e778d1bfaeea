"""Machine model, roofline placement, the ``primitives`` JSON list and the roofline SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.costmodel import primitive_cost
from dnnlens.analysis.machine import (
    Machine,
    isa_from_flags,
    isa_gain,
    load_machine,
    machine_for_log,
    machine_from_isa,
    measure_gemm,
    save_machine,
)
from dnnlens.analysis.roofline import kind_points, place, primitives_json, roofline_json
from dnnlens.reading import load, load_text
from dnnlens.report.roofline_svg import roofline_svg

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
CONV1 = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"


def avx2_2thr() -> Machine:
    """The header of the sample logs: isa avx2, nthr 2, default 2.5 GHz and 20 GB/s."""
    return machine_from_isa("avx2", 2)


# ---------------------------------------------------------------------------------------
# machine


def test_nominal_peaks_per_isa():
    m = avx2_2thr()
    # 2 threads * 2.5 GHz * (2 FMA * 256/32 lanes * 2 flops) = 2 * 2.5 * 32
    assert m.peak("f32") == pytest.approx(160.0)
    assert m.peak("bf16") == pytest.approx(160.0)  # no bf16 arithmetic on AVX2
    assert m.peak("s8") == pytest.approx(160.0 * 4 / 3)  # vpmaddubsw path, no VNNI
    assert m.bandwidth_gbs == pytest.approx(20.0)  # 10 GB/s per thread
    assert m.ridge("f32") == pytest.approx(8.0)
    amx = machine_from_isa("avx512_core_amx", 56)
    # 56 * 2.5 * (2 * 512/32 * 2 = 64) = 8960 f32; bf16 x16, int8 x32
    assert amx.peak("f32") == pytest.approx(8960.0)
    assert amx.peak("bf16") == pytest.approx(8960.0 * 16)
    assert amx.peak("u8") == pytest.approx(8960.0 * 32)
    assert amx.bandwidth_gbs == pytest.approx(200.0)  # capped
    sse = machine_from_isa("sse41", 1)
    # 1 * 2.5 * (2 * 1 * 128/32) = 20
    assert sse.peak("f32") == pytest.approx(20.0)
    assert isa_gain("avx512_core_vnni", "int8") == 4.0
    assert isa_gain("avx512_core_bf16", "bf16") == 2.0
    assert isa_gain("avx2_vnni_2", "bf16") == 1.0
    assert isa_gain("avx2", "f64") == 0.5


def test_isa_from_cpu_flags():
    assert isa_from_flags({"avx", "avx2", "fma"}) == "avx2"
    assert (
        isa_from_flags({"avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"})
        == "avx512_core_vnni"
    )
    assert (
        isa_from_flags(
            {"avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16", "amx_bf16"}
        )
        == "avx512_core_amx"
    )
    assert isa_from_flags({"sse4_1"}) == "sse41"
    assert isa_from_flags({"asimd"}) == "asimd"
    assert isa_from_flags(set()) == ""


def test_machine_for_log_reads_the_header():
    m = machine_for_log(load([str(NCHW)]))
    assert (m.isa, m.threads) == ("avx2", 2)
    assert m.sources["isa"] == "header" and m.clock_basis == "assumed"
    assert m.peak_basis("f32") == "assumed" and m.bandwidth_basis == "assumed"
    assert m.peak_label("f32").startswith("assumed peak 160 GFLOP/s")


def test_machine_for_log_without_header_uses_impl_isa():
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:avx512_core,undef,"
        "src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,4x4,0.01"
    )
    m = machine_for_log(load_text(line))
    assert m.isa == "avx512_core" and m.sources["isa"] == "implementation names"


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_profile_roundtrip(tmp_path, suffix):
    m = avx2_2thr()
    m.bandwidth_gbs = 12.5
    m.peak_gflops["f32"] = 100.0
    m.measured["gemm_f32_gflops"] = 100.0
    path = tmp_path / f"box{suffix}"
    save_machine(m, path)
    back = load_machine(path)
    assert back.peak("f32") == 100.0
    assert back.peak("int8") == pytest.approx(100.0 * 4 / 3)  # measured f32 x the ISA gain
    assert back.bandwidth_gbs == 12.5 and back.threads == 2 and back.isa == "avx2"
    assert back.measured["gemm_f32_gflops"] == 100.0


def test_profile_overrides_and_errors(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(
        json.dumps(
            {"isa": "avx512_core", "threads": 4, "freq_ghz": 3.0, "peak_gflops": {"bf16": 999}}
        )
    )
    m = load_machine(p)
    # the ISA sets vector width and FMA units: 4 * 3.0 * 64
    assert m.peak("f32") == pytest.approx(768.0)
    assert m.peak("bf16") == 999  # explicit override wins
    assert m.sources["freq_ghz"].startswith("file")
    bad = tmp_path / "bad.toml"
    bad.write_text("isa = [")
    with pytest.raises(ValueError):
        load_machine(bad)
    with pytest.raises(ValueError):
        load_machine(tmp_path / "missing.json")


def test_gemm_probe_is_bounded():
    gflops, info = measure_gemm(seconds=0.05, n=128)
    assert gflops > 0 and info["gemm_reps"] >= 2


# ---------------------------------------------------------------------------------------
# placement


def test_place_compute_bound_conv_by_hand():
    rec = next(
        r
        for r in load([str(NCHW)]).records
        if r.kind == "convolution" and r.problem == CONV1 and r.operation == "exec"
    )
    cost = primitive_cost(rec.kind, rec.problem, rec.mds, rec.prop_kind, rec.aux, rec.attrs)
    assert cost is not None
    # a typical run of 0.625 ms, the fastest call 0.2 ms
    out = place(cost, 0.625, avx2_2thr(), best_ms=0.2)
    # AI = 13862400 / 1246912 = 11.12 > ridge 160/20 = 8: compute bound
    assert out["bound"] == "compute" and out["peak_basis"] == "assumed"
    # roof per call: 13862400 FLOP / 160 GFLOP/s = 0.08664 ms
    assert out["roof_ms"] == pytest.approx(13_862_400 / 160e6)
    # attained: 13862400 / 0.625 ms = 22.18 GFLOP/s; efficiency 22.18 / 160 = 0.1386
    assert out["gflops"] == pytest.approx(13_862_400 / 0.625 / 1e6)
    assert out["efficiency"] == pytest.approx(out["gflops"] / 160.0)
    # the fastest call: 69.3 GFLOP/s, 43% of the roof
    assert out["best_efficiency"] == pytest.approx(13_862_400 / 0.2 / 1e6 / 160.0)
    assert out["above_roof"] is None


def test_place_above_the_roof_is_no_efficiency_but_a_reason():
    cost = primitive_cost(
        "reorder", "4x16x64x64", "src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0", "undef"
    )
    assert cost is not None
    # 2097152 B at the assumed 20 GB/s take 0.10486 ms; measured 0.05 ms: above the roof
    out = place(cost, 0.05, avx2_2thr())
    assert out["efficiency"] is None and out["gbs"] == pytest.approx(2_097_152 / 0.05 / 1e6)
    assert out["above_roof"].startswith("the typical run is above the assumed bandwidth (20")
    # a compute-bound conv faster than the assumed 2.5 GHz allow: the clock is too low
    rec = next(r for r in load([str(NCHW)]).records if r.problem == CONV1)
    conv = primitive_cost(rec.kind, rec.problem, rec.mds, rec.prop_kind, rec.aux, rec.attrs)
    assert conv is not None
    out = place(conv, 0.5, avx2_2thr(), best_ms=0.05)  # roof 0.0866 ms
    assert out["efficiency"] == pytest.approx(0.08664 / 0.5) and out["best_efficiency"] is None
    assert out["above_roof"] == (
        "the fastest call is above the assumed peak (160 GFLOP/s): the assumed clock "
        "(2.5 GHz) is too low"
    )


def test_place_reorder_memory_bound_by_hand():
    cost = primitive_cost(
        "reorder", "4x16x64x64", "src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0", "undef"
    )
    assert cost is not None
    out = place(cost, 0.5, avx2_2thr())
    # no FLOPs: memory bound; 2097152 B per call at 20 GB/s = 0.10486 ms
    assert out["bound"] == "memory" and out["gflops"] == 0.0
    assert out["roof_ms"] == pytest.approx(2_097_152 / 20e6)
    # attained bandwidth 2097152 B / 0.5 ms = 4.194 GB/s; efficiency = 4.194 / 20
    assert out["gbs"] == pytest.approx(4.194304)
    assert out["efficiency"] == pytest.approx(4.194304 / 20)


def test_place_untimed():
    cost = primitive_cost(
        "reorder", "4x4", "src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0", "undef"
    )
    assert cost is not None
    out = place(cost, None, avx2_2thr())
    assert out["gflops"] is None and out["efficiency"] is None and out["above_roof"] is None


def test_primitives_json_contract_nchw_sample():
    analysis = Analysis(load([str(NCHW)]))
    rows = primitives_json(analysis)
    keys = [
        "kind",
        "impl",
        "problem",
        "count",
        "time_ms",
        "flops",
        "bytes",
        "gflops",
        "bound",
        "efficiency",
    ]
    assert all(list(r)[: len(keys)] == keys for r in rows)
    assert len(rows) == 10  # distinct exec lines (see analyze: 9 shapes, 2 reorders share one)
    times = [r["time_ms"] for r in rows]
    assert times == sorted(times, reverse=True)
    conv1 = next(r for r in rows if r["problem"] == CONV1)
    assert conv1["count"] == 11 and conv1["flops"] == 13_862_400
    assert conv1["bytes"] == 1_246_912 and conv1["bound"] == "compute"
    # the rate of its typical run (the median of its 7 steady calls), not the raw mean
    assert conv1["gflops"] == pytest.approx(13_862_400 / conv1["run_ms"] / 1e6)
    assert conv1["efficiency"] == pytest.approx(conv1["gflops"] / 160.0)
    assert conv1["peak_basis"] == "assumed" and conv1["above_roof"] is None
    assert conv1["best_gflops"] >= conv1["gflops"]
    assert all(r["bound"] == "memory" for r in rows if r["kind"] == "reorder")
    json.dumps(rows)  # plain data


def test_kind_points_sum_the_primitives():
    analysis = Analysis(load([str(NCHW)]))
    doc = roofline_json(analysis)
    kinds = {k["kind"]: k for k in doc["kinds"]}
    convs = [p for p in doc["primitives"] if p["kind"] == "convolution"]
    # over the steady executions: 7 steady passes of the 11
    assert kinds["convolution"]["flops"] == sum(p["flops"] * p["steady_count"] for p in convs)
    assert kinds["convolution"]["bound"] == "compute"
    assert kinds["reorder"]["flops"] == 0 and kinds["reorder"]["bound"] == "memory"
    assert doc["machine"]["peaks"]["f32"] == pytest.approx(160.0)
    assert doc["machine"]["peak_basis"]["f32"] == "assumed"
    assert kind_points([], avx2_2thr()) == []


def test_machine_passed_in_changes_the_roof():
    analysis = Analysis(load([str(NCHW)]))
    half = machine_from_isa("avx2", 2)
    half.peak_gflops["f32"] = 80.0  # a roof half as high: compute-bound efficiencies x2
    base = {r["problem"]: r for r in primitives_json(analysis)}
    slow = {r["problem"]: r for r in primitives_json(analysis, half)}
    assert slow[CONV1]["efficiency"] == pytest.approx(base[CONV1]["efficiency"] * 2)
    assert slow[CONV1]["peak_basis"] == "profile"
    tenth = machine_from_isa("avx2", 2)
    tenth.peak_gflops["f32"] = 16.0  # 22 GFLOP/s measured: above this roof, no efficiency
    low = {r["problem"]: r for r in primitives_json(analysis, tenth)}
    assert low[CONV1]["efficiency"] is None
    assert low[CONV1]["above_roof"].startswith("the typical run is above the profile's peak")


# ---------------------------------------------------------------------------------------
# SVG


def test_roofline_svg_is_well_formed_and_escaped():
    analysis = Analysis(load([str(NCHW)]))
    rows = primitives_json(analysis)
    rows.append(
        {
            "kind": "matmul",
            "impl": "<script>alert('x')</script>",
            "problem": 'a"&b',
            "count": 1,
            "time_ms": 1.0,
            "flops": 1000,
            "bytes": 100,
            "gflops": 0.001,
            "bound": "compute",
            "efficiency": 0.5,
            "dtype": "f32",
        }
    )
    svg = roofline_svg(rows, avx2_2thr(), title="<title> & more")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    circles = [
        e
        for e in root.iter()
        if e.tag.endswith("circle") and e.find("{http://www.w3.org/2000/svg}title") is not None
    ]
    assert len(circles) == 4  # three convolutions + the injected matmul
    assert "7 primitives without arithmetic" in svg  # the reorders


def test_roofline_svg_accepts_json_machine_and_empty_input():
    analysis = Analysis(load([str(NCHW)]))
    doc = roofline_json(analysis)
    ET.fromstring(roofline_svg(doc["primitives"], doc["machine"]))
    empty = roofline_svg([], avx2_2thr())
    ET.fromstring(empty)
    assert "no timed primitive" in empty
