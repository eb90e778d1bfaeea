"""Efficiency against a peak the report can show: one machine, one efficiency per primitive.

Hand counts (no dnnlens), from the sample logs' own lines:

* ``isa_sse41_infer.log`` (header ``isa:Intel SSE4.1``, ``nthr:2``): 90 exec lines, 6 passes
  of 15. Pass sums (awk over 15-line chunks): 101.69 (creates every primitive), 107.19,
  11.54, 15.34, 19.25, 112.31 ms; pass 1 is over 3 x the median of passes 1-5 (19.25):
  slow warm-up, so the steady passes are 2-5. The first convolution
  (``mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1``, position 1 of a pass) takes
  0.958008, 4.86499, 8.94995, 8.73804 ms there: median (4.86499 + 8.73804) / 2 = 6.801515 ms. FLOPs
  13,862,400 (docs/cost-model.md, 2.1). The peak: no clock in the log, so 2.5 GHz assumed;
  SSE4.1 = 4 f32 lanes x 1 multiply-add pair x 2 = 8 FLOP/cycle; 2 threads: 40 GFLOP/s.
  Rate 13,862,400 / 6.8015 ms = 2.038 GFLOP/s, efficiency 2.038 / 40 = 5.095%.
* ``convnet_nchw_infer.log``: 165 exec lines, 11 passes of 15, steady passes 4-10
  (tests/test_projection.py); the same convolution at position 1.
* ``tests/data/corpus/09_dnnl1_95_dpcpp_engine_header.log:5``: ``name:Intel(R) Core(TM)
  i9-9900K CPU @ 3.60GHz`` in a CPU engine line; ``isa:Intel AVX2``; no ``nthr``.
* ``resnet18_nchw_train.log``: ``isa:Intel AVX-512 with Intel DL Boost and bfloat16
  support`` (oneDNN's ``avx512_core_bf16``), ``nthr:2``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens.analysis.machine as machine_module
from dnnlens.analysis.analysis import Analysis, AnalysisOptions
from dnnlens.analysis.machine import HostCpu, load_machine, machine_for_log, made_here
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
SSE = SAMPLES / "isa_sse41_infer.log"
NCHW = SAMPLES / "convnet_nchw_infer.log"
RESNET = SAMPLES / "resnet18_nchw_train.log"
DPCPP = ROOT / "tests" / "data" / "corpus" / "09_dnnl1_95_dpcpp_engine_header.log"
CONV1 = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
CONV1_FLOPS = 13_862_400
LOGS = sorted([*SAMPLES.glob("*.log"), *SAMPLES.glob("legacy/*.log")])
#: This machine as /proc/cpuinfo showed it when the AVX-512 samples were recorded.
EPYC = HostCpu("avx512_core_bf16", 2, 2596.122, "AMD EPYC")
runner = CliRunner()


def exec_times(path: Path, period: int) -> list[list[float]]:
    """The exec times of a log cut into passes of ``period`` lines."""
    times = [float(x.rsplit(",", 1)[1]) for x in path.read_text().splitlines() if ",exec," in x]
    return [times[i : i + period] for i in range(0, len(times), period)]


def analysed(path: Path, **options) -> Analysis:
    a = Analysis(load([str(path)]), AnalysisOptions(**options))
    apply_rules(a.prepare(), RuleOptions(search_config=False))
    return a


def row(a: Analysis, problem: str) -> dict:
    return next(p for p in a.primitives if p["problem"] == problem)


# ---------------------------------------------------------------------------------------
# one peak, one efficiency


def test_sse41_conv_efficiency_by_hand_and_one_owner():
    passes = exec_times(SSE, 15)
    assert [round(sum(p), 2) for p in passes] == [101.69, 107.19, 11.54, 15.34, 19.25, 112.31]
    median = statistics.median(p[1] for p in passes[2:])
    assert median == pytest.approx(6.801515)  # (4.86499 + 8.73804) / 2
    a = analysed(SSE)
    m = a.machine
    assert (m.threads, m.freq_ghz, m.flops_per_cycle, m.clock_basis) == (2, 2.5, 8, "assumed")
    conv = row(a, CONV1)
    assert conv["flops"] == CONV1_FLOPS and conv["run_ms"] == pytest.approx(median)
    assert conv["peak_gflops"] == pytest.approx(40.0) and conv["peak_basis"] == "assumed"
    assert conv["gflops"] == pytest.approx(CONV1_FLOPS / median / 1e6)  # 2.038
    assert conv["efficiency"] == pytest.approx(CONV1_FLOPS / median / 1e6 / 40.0)  # 5.095%
    # the rule reads the same figure: one number per primitive in the whole document
    f = next(f for f in a.findings if f.rule == "low-efficiency")
    judged = {p["problem"]: p for p in f.data["primitives"]}
    assert judged[CONV1]["efficiency"] == conv["efficiency"]
    assert judged[CONV1]["gflops"] == conv["gflops"]
    assert f.data["peak_gflops"] == pytest.approx(40.0) and f.data["peak_assumed"] is True
    assert "assumed peak 40 GFLOP/s" in f.message and "(5% of its roofline)" in f.message


def test_nchw_conv_efficiency_by_hand():
    median = statistics.median(p[1] for p in exec_times(NCHW, 15)[4:])
    a = analysed(NCHW)
    conv = row(a, CONV1)
    assert conv["run_ms"] == pytest.approx(median)
    # 2 threads x 2.5 GHz (assumed) x 32 FLOP/cycle (AVX2: 2 FMA x 8 lanes x 2) = 160
    assert conv["efficiency"] == pytest.approx(CONV1_FLOPS / median / 1e6 / 160.0)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_no_primitive_is_above_its_roof_as_a_fact(log: Path):
    """Every efficiency of every sample log is at most 1; a call faster than its roof has
    none, and says which assumption it disproves."""
    a = Analysis(load([str(log)]))
    for p in a.primitives:
        for eff in (p["efficiency"], p["best_efficiency"]):
            assert eff is None or 0.0 <= eff <= 1.0, p
        if p["efficiency"] is None and p["run_ms"] and p["roof_ms"]:
            assert p["roof_ms"] > p["run_ms"] and "is above the" in p["above_roof"], p
        if p["above_roof"]:
            assert p["above_roof"].startswith(("the typical run", "the fastest call"))
            assert "assumed" in p["above_roof"] or p["peak_basis"] != "assumed"


# ---------------------------------------------------------------------------------------
# where the clock comes from


def test_clock_from_the_cpu_name_in_the_header():
    m = machine_for_log(load([str(DPCPP)]))
    assert (m.isa, m.freq_ghz, m.clock_basis) == ("avx2", 3.6, "log header")
    # no nthr: 1 thread assumed; 1 x 3.6 GHz x 32 FLOP/cycle = 115.2 GFLOP/s
    assert m.peak("f32") == pytest.approx(115.2)
    assert "i9-9900K CPU @ 3.60GHz" in m.sources["freq_ghz"]
    assert m.sources["threads"] == "default"


def test_clock_of_this_machine_when_the_log_was_made_here(monkeypatch):
    monkeypatch.setattr(machine_module, "this_cpu", lambda: EPYC)
    m = machine_for_log(load([str(RESNET)]))
    assert (m.isa, m.threads, m.clock_basis) == ("avx512_core_bf16", 2, "this machine")
    # 2 threads x 2.596 GHz x 64 FLOP/cycle (AVX-512: 2 FMA x 16 lanes x 2) = 332.3
    assert m.peak("f32") == pytest.approx(2 * 2.596 * 64)
    assert "the log's ISA line (avx512_core_bf16) is this CPU's" in m.sources["freq_ghz"]
    # an AVX2 log is another machine's (or capped): its clock stays assumed
    assert machine_for_log(load([str(NCHW)])).clock_basis == "assumed"


def test_made_here_is_strict():
    assert made_here("avx512_core_bf16", 2, EPYC)
    assert made_here("avx512_core_bf16", None, EPYC)
    assert not made_here("avx512_core_bf16", 8, EPYC)  # more threads than cores
    assert not made_here("avx2", 2, EPYC)  # capped with ONEDNN_MAX_CPU_ISA, or elsewhere
    assert not made_here("", 2, EPYC)  # no ISA line: implementation names say too little


def test_a_profile_wins_over_header_and_host(monkeypatch, tmp_path):
    monkeypatch.setattr(machine_module, "this_cpu", lambda: EPYC)
    path = tmp_path / "box.toml"
    path.write_text('isa = "avx512_core_bf16"\nthreads = 2\nfreq_ghz = 3.0\n')
    m = load_machine(path)
    assert (m.clock_basis, m.bandwidth_basis) == ("profile", "assumed")
    a = Analysis(load([str(RESNET)]), AnalysisOptions(machine=m))
    assert a.machine is m and a.machine.peak("f32") == pytest.approx(2 * 3.0 * 64)
    assert {p["peak_basis"] for p in a.primitives if p["bound"] == "compute"} == {"profile"}


def test_above_the_peak_says_the_clock_is_too_low():
    # a clock of 0.25 GHz (still assumed: no profile gives it): the NCHW convolutions run
    # faster than 16 GFLOP/s allow, and no view may call that more than 100%
    m = machine_for_log(load([str(NCHW)]))
    m.freq_ghz = 0.25
    a = analysed(NCHW, machine=m)
    conv = row(a, CONV1)
    assert conv["efficiency"] is None and conv["gflops"] > 16.0
    assert conv["above_roof"] == (
        "the typical run is above the assumed peak (16 GFLOP/s): the assumed clock "
        "(0.25 GHz) is too low"
    )


# ---------------------------------------------------------------------------------------
# every view labels an assumed peak


def test_json_terminal_and_html_label_the_assumed_peak(tmp_path):
    res = runner.invoke(app, ["analyze", str(SSE), "-f", "json", "-q"])
    doc = json.loads(res.stdout)
    assert doc["machine"]["clock_basis"] == "assumed"
    assert doc["machine"]["peak_labels"]["f32"].startswith("assumed peak 40 GFLOP/s")
    assert {p["peak_basis"] for p in doc["primitives"]} == {"assumed"}
    res = runner.invoke(app, ["analyze", str(SSE), "-q"], env={"COLUMNS": "400"})
    assert "of their roofline (weighted by time) against the assumed peak 40 GFLOP/s" in (
        res.stdout
    )
    page = tmp_path / "r.html"
    res = runner.invoke(app, ["analyze", str(NCHW), "-q", "-f", "html", "-o", str(page)])
    html = page.read_text(encoding="utf-8")
    assert "f32 assumed peak 160 GFLOP/s" in html and "assumed 20.0 GB/s" in html
    assert "f32 assumed peak 160 GFLOP/s (2 threads x 2.5 GHz x 32 FLOP/cycle" in html


def test_analyze_takes_a_machine_profile(tmp_path):
    path = tmp_path / "box.toml"
    # 2 threads x 3.0 GHz x 32 (AVX2) = 192 GFLOP/s, 40 GB/s
    path.write_text('isa = "avx2"\nthreads = 2\nfreq_ghz = 3.0\nbandwidth_gbs = 40.0\n')
    res = runner.invoke(app, ["analyze", str(NCHW), "-f", "json", "-q", "--machine", str(path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["machine"]["clock_basis"], doc["machine"]["bandwidth_basis"]) == (
        "profile",
        "profile",
    )
    conv = next(p for p in doc["primitives"] if p["problem"] == CONV1)
    assert conv["peak_gflops"] == pytest.approx(192.0) and conv["peak_basis"] == "profile"
    assert conv["efficiency"] == pytest.approx(CONV1_FLOPS / conv["run_ms"] / 1e6 / 192.0)
    bad = tmp_path / "bad.toml"
    bad.write_text("isa = [")
    res = runner.invoke(app, ["analyze", str(NCHW), "-q", "--machine", str(bad)])
    assert res.exit_code == 2 and "not valid" in res.output


def test_machine_show_says_how_the_clock_is_known(monkeypatch):
    res = runner.invoke(app, ["machine", "show", str(NCHW)], env={"COLUMNS": "300"})
    assert "assumed: 2.5 GHz: no clock in the log or a profile" in res.stdout
    monkeypatch.setattr(machine_module, "this_cpu", lambda: EPYC)
    res = runner.invoke(app, ["machine", "show", str(RESNET)], env={"COLUMNS": "300"})
    assert "this machine: this machine (AMD EPYC" in res.stdout


def test_a_model_written_from_a_header_stays_assumed_when_read_back(tmp_path):
    """``dnnlens machine show LOG -f json > box.json`` then ``--machine box.json``: the file
    repeats the assumed 2.5 GHz and 20 GB/s, it does not state them."""
    res = runner.invoke(app, ["machine", "show", str(NCHW), "-f", "json"])
    path = tmp_path / "box.json"
    path.write_text(res.stdout)
    m = load_machine(path)
    assert (m.clock_basis, m.bandwidth_basis) == ("assumed", "assumed")
    assert m.peak_label("f32").startswith("assumed peak 160 GFLOP/s")
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "freq_ghz": 3.0, "clock_basis": "profile"}))
    assert load_machine(path).clock_basis == "profile"


def test_a_hostile_cpu_name_is_shown_escaped(tmp_path):
    """The CPU name of an engine line is log text: an escape sequence in it reaches no view
    as it is (synthetic: the DPC++ header of the corpus log with ESC [2J in the name)."""
    text = DPCPP.read_text().replace("i9-9900K CPU @", "i9-9900K\x1b[2J CPU @")
    log = tmp_path / "evil.log"
    log.write_text(text)
    m = machine_for_log(load([str(log)]))
    assert m.freq_ghz == 3.6 and "\x1b" not in m.sources["freq_ghz"]
    assert "i9-9900K\\x1b[2J CPU" in m.sources["freq_ghz"]
    res = runner.invoke(app, ["machine", "show", str(log)], env={"COLUMNS": "300"})
    assert "\x1b" not in res.stdout
    page = tmp_path / "r.html"
    runner.invoke(app, ["analyze", str(log), "-q", "-f", "html", "-o", str(page)])
    assert "\x1b" not in page.read_text(encoding="utf-8")
