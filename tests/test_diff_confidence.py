"""The confidence of a diff (analysis/confidence.py) against hand counts of real logs.

Pass sums by hand: the exec lines of a sample cut into passes of its period (NCHW 15
executions, channels_last 8, SSE4.1 15; MANIFEST.json: 11, 11 and 6 passes), each pass the
sum of its lines' last field, e.g.::

    grep ,exec, sample_logs/isa_sse41_infer.log | \\
        awk -F, '{s+=$NF; if (++n % 15 == 0) {printf "%.3f ", s; s=0}}'
    101.692 107.188 11.541 15.344 19.254 112.314

(the first two are slow warm-up, more than 3x the median of the others; the 112 ms pass is
a stall in the middle of the run and stays steady). NCHW: 102.970 102.261 102.303 30.189,
then the steady 2.246 4.261 2.104 1.990 2.706 3.033 2.023; channels_last: 16.483, then the
steady 8.015 22.766 1.637 8.926 63.322 29.501 9.705 9.307 1.012 9.667.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens
from dnnlens.analysis.confidence import assess, overlap_share, separation_chance
from dnnlens.cli import app

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
CL = str(LOGS / "convnet_cl_infer.log")
SSE41 = str(LOGS / "isa_sse41_infer.log")
LSTM = str(LOGS / "lstm_infer.log")
NCHW_TRAIN = str(LOGS / "convnet_nchw_train.log")
runner = CliRunner()


def exec_fields(path: str) -> list[list[str]]:
    return [
        line.rstrip("\n").split(",")
        for line in Path(path).read_text().splitlines()
        if line.startswith("onednn_verbose,") and ",exec," in line
    ]


def pass_sums(path: str, period: int) -> list[float]:
    times = [float(f[-1]) for f in exec_fields(path)]
    return [sum(times[i : i + period]) for i in range(0, len(times), period)]


def diff_doc(base: str, new: str) -> dict:
    result = runner.invoke(app, ["diff", base, new, "-f", "json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_overlapping_pass_ranges_are_low_confidence():
    """NCHW against channels_last: 1.31x faster by the typical iterations, but the steady
    passes of the two runs overlap (hand counts in the module docstring)."""
    nchw, cl = pass_sums(NCHW, 15)[4:], pass_sums(CL, 8)[1:]
    assert len(nchw) == 7 and len(cl) == 10
    doc = diff_doc(NCHW, CL)
    c = doc["confidence"]
    assert c["level"] == "low" and not c["different_workloads"]
    assert c["base_steady"] == 7 and c["new_steady"] == 10
    assert c["base_range_ms"] == pytest.approx([min(nchw), max(nchw)], rel=1e-6)
    assert c["new_range_ms"] == pytest.approx([min(cl), max(cl)], rel=1e-6)
    assert c["base_range_ms"] == pytest.approx([1.990, 4.261], abs=1e-3)
    assert c["new_range_ms"] == pytest.approx([1.012, 63.322], abs=1e-3)
    assert "the ranges overlap" in c["reason"]
    assert doc["verdict"].startswith("NEW is 1.31x faster")  # the ratio is still said
    text = runner.invoke(app, ["diff", NCHW, CL, "-q"]).stdout
    assert "Confidence: low: within the noise" in text
    md = runner.invoke(app, ["diff", NCHW, CL, "-q", "-f", "markdown"]).stdout
    assert "Confidence: low: within the noise" in md


def test_gate_on_overlapping_passes_is_one_sided():
    """NCHW then channels_last: NEW is faster, so the gate passes whatever the noise;
    channels_last then NCHW: NEW looks 30.8% slower but the passes overlap: one line, exit 2."""
    passed = runner.invoke(app, ["diff", NCHW, CL, "--fail-if-slower", "5%", "-q"])
    assert passed.exit_code == 0 and passed.stderr == ""
    result = runner.invoke(app, ["diff", CL, NCHW, "--fail-if-slower", "5%", "-q"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(
        "dnnlens: error: --fail-if-slower 5% not applied: NEW looks 30.8% slower"
    )
    assert "the diff's confidence is low: within the noise" in result.stderr


def test_separated_passes_are_high_confidence_and_the_gate_works():
    """The same net with oneDNN capped at SSE4.1: its 4 steady passes (11.5 to 112.3 ms)
    are all slower than NCHW's 7 (1.99 to 4.26 ms): chance 2 / C(11, 4) = 0.6%."""
    sse = pass_sums(SSE41, 15)
    assert [round(t, 3) for t in sse] == [101.692, 107.188, 11.541, 15.344, 19.254, 112.314]
    doc = diff_doc(NCHW, SSE41)
    c = doc["confidence"]
    assert c["level"] == "high" and c["reasons"] == []
    assert c["new_range_ms"] == pytest.approx([min(sse[2:]), max(sse[2:])], rel=1e-6)
    assert c["chance"] == pytest.approx(2 / math.comb(11, 4))
    assert c["workload_overlap"] == pytest.approx(1.0)  # the same primitives by shape
    slower = runner.invoke(app, ["diff", NCHW, SSE41, "--fail-if-slower", "5%", "-q"])
    assert slower.exit_code == 1 and "slower than BASE" in slower.stderr
    faster = runner.invoke(app, ["diff", SSE41, NCHW, "--fail-if-slower", "5%", "-q"])
    assert faster.exit_code == 0
    assert dnnlens.diff(NCHW, SSE41).confidence["level"] == "high"


def test_unrelated_workloads_are_different_workloads():
    """An LSTM against a convnet: by hand, no (kind, shape) of one log's exec lines is in
    the other's, so no time is shared and the verdict names no speed ratio."""
    shapes = [{(f[5], f[-2]) for f in exec_fields(p)} for p in (LSTM, NCHW)]
    assert not shapes[0] & shapes[1]
    doc = diff_doc(LSTM, NCHW)
    c = doc["confidence"]
    assert c["level"] == "none" and c["different_workloads"]
    assert c["workload_overlap"] == 0.0
    assert doc["verdict"].startswith("Different workloads, no speed ratio")
    assert "slower" not in doc["verdict"] and "faster" not in doc["verdict"]
    gated = runner.invoke(app, ["diff", LSTM, NCHW, "--fail-if-slower", "5%", "-q"])
    assert gated.exit_code == 2 and "different workloads" in gated.stderr
    assert dnnlens.diff(LSTM, NCHW).confidence["different_workloads"]


def test_inference_against_training_is_different_workloads():
    """The same convnet, inference against training: the training step's backward
    primitives (most of its time) have no counterpart in the inference run."""
    c = diff_doc(NCHW, NCHW_TRAIN)["confidence"]
    assert c["different_workloads"] and c["workload_overlap"] < 0.5


def test_one_pass_each_is_too_few(tmp_path):
    """One recorded pass of each run (the first 15 exec lines of NCHW, of SSE4.1): no
    spread to tell a change from, whatever the ratio. (The iteration finder cuts the lone
    pass into three by its repeats, two of them steady: still too few, chance 2 / C(4, 2).)"""
    logs = []
    for src in (NCHW, SSE41):
        lines = Path(src).read_text().splitlines()
        execs = [i for i, line in enumerate(lines) if ",exec," in line]
        out = tmp_path / Path(src).name
        out.write_text("\n".join(lines[: execs[14] + 1]) + "\n")
        logs.append(str(out))
    doc = diff_doc(*logs)
    c = doc["confidence"]
    assert c["level"] == "low" and c["base_steady"] <= 2 and c["new_steady"] <= 2
    assert "too few steady passes" in c["reason"]
    gated = runner.invoke(app, ["diff", *logs, "--fail-if-slower", "5%", "-q"])
    assert gated.exit_code == 2 and "too few" in gated.stderr


def test_the_rule_in_numbers():
    assert separation_chance(3, 3) == pytest.approx(0.1)  # 3 a side cannot reach 5%
    assert separation_chance(4, 4) == pytest.approx(2 / 70)
    assert separation_chance(1, 1) == 1.0
    assert assess([1, 2, 3, 4], [5, 6, 7, 8], (2.5, 6.5), 1.0).level == "high"
    assert assess([1, 2, 3], [5, 6, 7], (2, 6), 1.0).level == "low"  # too few
    assert assess([1, 2, 3, 6], [5, 6, 7, 8], (2.5, 6.5), 1.0).level == "low"  # overlap
    opposite = assess([1, 2, 3, 4], [5, 6, 7, 8], (2.5, 2.0), 1.0)
    assert opposite.level == "low" and "every steady pass of NEW is slower" in opposite.reason
    assert overlap_share({"a": 1.0, "b": 1.0}, {"a": 3.0, "c": 1.0}) == pytest.approx(0.5)
    assert overlap_share({}, {"a": 1.0}) is None


NOISE = Path(__file__).resolve().parent / "data" / "noise"
SAME_A, SAME_B = str(NOISE / "same_program_a.log"), str(NOISE / "same_program_b.log")


def test_the_same_program_twice_is_no_change():
    """One program recorded twice in a row (tests/data/noise/README.md): the typical
    iterations differ by 12%, but the steady passes of each run span 1 to 120 ms."""
    a, b = pass_sums(SAME_A, 15), pass_sums(SAME_B, 15)
    assert len(a) == len(b) == 11
    doc = diff_doc(SAME_A, SAME_B)
    c = doc["confidence"]
    assert c["level"] == "low" and "the ranges overlap" in c["reason"]
    assert c["base_range_ms"] == pytest.approx([min(a[2:]), max(a[2:])], rel=1e-6)
    assert c["new_range_ms"] == pytest.approx([min(b[2:]), max(b[2:])], rel=1e-6)
    assert c["base_range_ms"] == pytest.approx([1.002, 121.536], abs=1e-3)
    assert c["new_range_ms"] == pytest.approx([0.901, 114.515], abs=1e-3)
    # one-sided: the run that looks 12% slower is within the noise (exit 2, not a failure);
    # the other way round it looks faster, which passes
    outcomes = []
    for args in ([SAME_A, SAME_B], [SAME_B, SAME_A]):
        gated = runner.invoke(app, ["diff", *args, "--fail-if-slower", "5%", "-q"])
        outcomes.append(gated.exit_code)
        if gated.exit_code == 2:
            assert "looks" in gated.stderr and "confidence is low" in gated.stderr
    assert sorted(outcomes) == [0, 2]


def test_two_traces_share_work_by_op_name():
    """Steps compared (profiler traces on both sides): the work is the ops' self time per
    step by name. Unfused AdamW against fused AdamW trains one model: most of the step is
    ops both run (the optimizer's ops differ); BatchNorm inference against that training
    step shares little: different workloads, no verdict."""
    framework = LOGS / "framework"
    same = diff_doc(
        str(framework / "adamw_bad.trace.json.gz"), str(framework / "adamw_fixed.trace.json.gz")
    )
    assert same["confidence"]["workload_by"] == "ops"
    assert 0.5 <= same["confidence"]["workload_overlap"] < 1.0
    assert not same["confidence"]["different_workloads"]
    other = diff_doc(
        str(framework / "bn_infer_bad.trace.json.gz"), str(framework / "adamw_fixed.trace.json.gz")
    )
    assert other["confidence"]["workload_overlap"] < 0.5
    assert other["confidence"]["level"] == "none" and other["confidence"]["different_workloads"]
