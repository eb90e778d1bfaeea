"""A run slowed as a whole (analysis/timing_trust.py), against hand counts of real logs.

The contended recording (tests/data/noise/README.md: the convnet at nice 19 beside four CPU
hogs) runs its median exec line in 7.84 ms against 0.109 ms for the same net on a quiet
machine (``grep ,exec, LOG | awk -F, '{print $NF}' | sort -n``), and its 18 KB weight
reorder (16x16x3x3 f32, read and written: 2 x 9216 bytes) in a median 7.96 ms: 2.3 MB/s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.timing_trust import MIN_SLOW_SHARE, SLOW_FACTOR, timing_trust
from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
CONTENDED = ROOT / "tests" / "data" / "noise" / "contended_nice19_infer.log"
RUN_CONTENDED = ROOT / "tests" / "data" / "noise" / "run_contended_nchw_infer.log"
SAMPLES = ROOT / "sample_logs"
#: sample logs whose whole run was slowed (tests/test_first_finding.py has their hand counts)
SLOWED = {"profile_combined_infer.log", "legacy/onednn-2.6.0.log", "legacy/onednn-3.0.0.log"}
runner = CliRunner()


def analyze_json(path: Path, *args: str) -> dict:
    result = runner.invoke(app, ["analyze", str(path), "-f", "json", "-q", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def exec_times(path: Path, shape: str | None = None) -> list[float]:
    return sorted(
        float(line.rsplit(",", 1)[1])
        for line in path.read_text().splitlines()
        if ",exec," in line and (shape is None or f",{shape}," in line)
    )


def median(values: list[float]) -> float:
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def test_hand_counts_of_the_contended_recording():
    assert len(exec_times(CONTENDED)) == 465
    assert median(exec_times(CONTENDED)) == pytest.approx(7.836, abs=1e-3)
    assert median(exec_times(SAMPLES / "convnet_nchw_infer.log")) == pytest.approx(0.1089, abs=1e-4)
    reorder = [t for t in exec_times(CONTENDED, "16x16x3x3")]
    assert len(reorder) == 62 and median(reorder) == pytest.approx(7.958, abs=1e-3)


def test_a_contended_recording_is_not_trustworthy():
    doc = analyze_json(CONTENDED)
    trust = doc["timing_confidence"]
    assert trust["level"] == "low"
    assert trust["slow_share_of_iteration"] >= MIN_SLOW_SHARE
    assert trust["slow_share_of_iteration"] == pytest.approx(0.93, abs=0.01)
    assert "18 KB" in trust["reason"] and "2.3 MB/s" in trust["reason"]
    uniform = [f for f in doc["findings"] if f["data"].get("uniform_slowdown")]
    assert len(uniform) == 1
    f = uniform[0]
    assert f["rule"] == "unstable-timing" and f["severity"] == "warning"
    assert f["title"].startswith("Timings are not trustworthy")
    assert "timings are not trustworthy" in f["message"]
    assert any("timings are not trustworthy" in n for n in doc["notes"])
    text = runner.invoke(app, ["analyze", str(CONTENDED), "-q"]).output
    assert "timings are not trustworthy" in text


def test_clean_recordings_are_trustworthy():
    """Every sample log recorded on a quiet machine keeps its trust; the contended sample
    (two busy loops beside two threads, not niced) has spikes, not a uniform slowdown."""
    logs = sorted(SAMPLES.glob("*.log")) + sorted(SAMPLES.glob("legacy/*.log"))
    for log in logs:
        name = str(log.relative_to(SAMPLES))
        result = runner.invoke(app, ["analyze", str(log), "-f", "json", "-q"])
        if not result.stdout.strip():  # a log with nothing to analyse (exit 2, said why)
            continue
        doc = json.loads(result.stdout)
        level = doc["timing_confidence"]["level"]
        assert level == ("low" if name in SLOWED else "high"), (name, doc["timing_confidence"])
        uniform = [f for f in doc["findings"] if f["data"].get("uniform_slowdown")]
        assert bool(uniform) == (name in SLOWED), name


def test_the_note_stands_when_the_rule_is_ignored():
    doc = analyze_json(CONTENDED, "--ignore", "unstable-timing")
    assert doc["timing_confidence"]["level"] == "low"
    assert any("timings are not trustworthy" in n for n in doc["notes"])


def test_a_diff_with_a_slowed_side_is_low_confidence():
    """The quiet NCHW run against the contended one: every pass apart (52x slower), but
    NEW's times are not the program's, so the gate refuses."""
    result = runner.invoke(
        app, ["diff", str(SAMPLES / "convnet_nchw_infer.log"), str(CONTENDED), "-f", "json"]
    )
    c = json.loads(result.stdout)["confidence"]
    assert c["level"] == "low"
    assert any(r.startswith("NEW's timings are not trustworthy") for r in c["reasons"])
    gated = runner.invoke(
        app,
        ["diff", str(SAMPLES / "convnet_nchw_infer.log"), str(CONTENDED), "--fail-if-slower", "5%"],
    )
    assert gated.exit_code == 2 and "NEW's timings are not trustworthy" in gated.stderr


def test_the_threshold():
    def point(run_ms: float, roof_ms: float, iter_ms: float) -> dict:
        return {"record": 0, "kind": "reorder", "bytes": 1024, "gbs": 1.0, "bound": "memory",
                "run_ms": run_ms, "roof_ms": roof_ms, "iter_ms": iter_ms}  # fmt: skip

    slow = point(SLOW_FACTOR * 0.001, 0.001, 1.0)  # 0.1 ms at 100x its roof
    assert timing_trust([slow, point(0.01, 0.01, 3.0)], 4.0).level == "low"  # 25%
    assert timing_trust([slow, point(0.01, 0.01, 3.1)], 4.1).level == "high"
    tiny = point(0.05, 0.0001, 1.0)  # 500x its roof but 0.05 ms: a call's fixed cost
    assert timing_trust([tiny], 1.0).level == "high"
    assert timing_trust([], 1.0).trustworthy


def test_the_log_dnnlens_run_kept_of_a_loaded_machine():
    """The NCHW net under ``dnnlens run`` on a machine others kept 99% busy (README): every
    time is ~1 s (median exec line 991.7 ms; the 18 KB reorder 1.3 s). Reorders are 77%
    of that iteration, but the first finding says the times are not the program's."""
    times = exec_times(RUN_CONTENDED)
    assert len(times) == 165 and median(times) == pytest.approx(991.742, abs=1e-3)
    reorder = exec_times(RUN_CONTENDED, "16x16x3x3")
    assert len(reorder) == 22 and median(reorder) == pytest.approx(1299.86, abs=0.01)
    doc = analyze_json(RUN_CONTENDED)
    assert doc["timing_confidence"]["level"] == "low"
    assert doc["timing_confidence"]["slow_share_of_iteration"] == pytest.approx(1.0, abs=1e-3)
    first = doc["findings"][0]
    assert first["rule"] == "unstable-timing" and first["data"]["uniform_slowdown"]
    assert any(f["rule"] == "reorder-overhead" for f in doc["findings"][1:])


def test_a_loaded_machine_without_a_uniform_slowdown_keeps_its_trust():
    """The same program recorded twice while other sessions loaded the machine, not niced
    (tests/data/noise/README.md): stalls in some passes (1 to 120 ms), but the typical runs
    are the program's (typical iteration 1.12 and 1.00 ms), so the times keep their trust;
    the stalls are what the diff's confidence weighs."""
    for name in ("same_program_a.log", "same_program_b.log"):
        doc = analyze_json(ROOT / "tests" / "data" / "noise" / name)
        assert doc["timing_confidence"]["level"] == "high", name
        assert doc["summary"]["typical_iteration_ms"] < 1.2
