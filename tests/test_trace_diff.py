"""dnnlens diff on profiler traces and on trace + log pairs.

Hand counts from the traces, with the standard library only::

    d = json.load(gzip.open("sample_logs/framework/NAME.trace.json.gz"))
    x = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    [e["dur"] for e in x if e["name"] == "Optimizer.step#SGD.step"]
    sum(e["name"] == "aten::add_" for e in x), sum(e["name"] == "aten::_fused_sgd_" for e in x)

* ``sgd_bad`` (``SGD(foreach=False)``): 4 ``ProfilerStep#`` spans; its 4
  ``Optimizer.step#SGD.step`` spans last 244.064, 212.387, 206.939 and 197.685 us (median
  209.663 us = 0.209663 ms per step); 128 ``aten::add_`` events (32 per step), no
  ``aten::_fused_sgd_``;
* ``sgd_fixed`` (``SGD(fused=True)``): 4 steps; ``Optimizer.step#SGD.step`` 112.508,
  77.365, 71.627 and 75.102 us (median 76.2335 us); no ``aten::add_``, 4
  ``aten::_fused_sgd_`` (1 per step).

The optimizer step is one call per step, so its typical total time per step is the median
of its spans (``docs/framework.md``: calls per steady step x median duration).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

FW = Path(__file__).resolve().parent.parent / "sample_logs" / "framework"
BAD, FIXED = str(FW / "sgd_bad.trace.json.gz"), str(FW / "sgd_fixed.trace.json.gz")
runner = CliRunner()


def diff_json(*args: str) -> dict:
    result = runner.invoke(app, ["diff", *args, "-f", "json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_two_traces_name_the_optimizer_change() -> None:
    """The verdict compares the typical steps and names the optimizer phase and step; the
    op rows hold the hand-counted optimizer step, the vanished add_ and the new fused op."""
    doc = diff_json(BAD, FIXED)
    assert doc["unit"] == "step"
    assert "per typical steady step" in doc["verdict"]
    assert "optimizer" in doc["verdict"] and "Optimizer.step#SGD.step" in doc["verdict"]
    ops = {o["name"]: o for o in doc["ops"]}
    opt = ops["Optimizer.step#SGD.step"]
    assert opt["status"] == "both"
    assert opt["base_total_ms_per_step"] == pytest.approx(0.209663)
    assert opt["new_total_ms_per_step"] == pytest.approx(0.0762335)
    assert (ops["aten::add_"]["status"], ops["aten::add_"]["base_calls_per_step"]) == (
        "vanished",
        32,
    )
    fused = ops["aten::_fused_sgd_"]
    assert (fused["status"], fused["new_calls_per_step"]) == ("appeared", 1)
    phases = {p["phase"]: p for p in doc["phases"]}
    assert phases["optimizer"]["new_ms_per_step"] < phases["optimizer"]["base_ms_per_step"]
    assert doc["base"]["step"]["steps"] == doc["new"]["step"]["steps"] == 4
    # the verdict's times are the sides' typical steps
    total = doc["total"]
    assert total["compared_base_ms"] == doc["base"]["step"]["typical_step_ms"]
    assert total["compared_new_ms"] == doc["new"]["step"]["typical_step_ms"]


def test_terminal_and_markdown_show_the_step() -> None:
    """The terminal and markdown reports lead with the step verdict and its tables."""
    out = runner.invoke(app, ["diff", BAD, FIXED], env={"COLUMNS": "160"}).stdout
    assert out.startswith("NEW is ") and "per typical steady step" in out.splitlines()[0]
    for title in ("Framework step", "Phases per typical step", "Per step"):
        assert title in out
    assert "aten::add_ (gone)" in out and "aten::_fused_sgd_ (new)" in out
    assert "Time by kind" not in out  # no verbose log on either side: no oneDNN tables
    md = runner.invoke(app, ["diff", BAD, FIXED, "-f", "markdown"]).stdout
    assert "### Ops by self time per step, largest changes first" in md


def test_gate_on_the_step() -> None:
    """--fail-if-slower gates on the typical step of a high-confidence diff: the NCHW
    layout run as NEW is slower in every steady step (BASE 6.28 to 8.16 ms, NEW 9.52 to
    11.0 ms). The SGD pair's steps overlap (0.76 to 1.13 ms against 0.72 to 0.96 ms: the
    ProfilerStep spans), so its gate is refused (exit 2)."""
    lbad, lfixed = str(FW / "layout_bad.*"), str(FW / "layout_fixed.*")
    assert runner.invoke(app, ["diff", lbad, lfixed, "--fail-if-slower", "5%"]).exit_code == 0
    slower = runner.invoke(app, ["diff", lfixed, lbad, "--fail-if-slower", "5%", "-f", "json"])
    assert slower.exit_code == 1
    assert json.loads(slower.stdout)["total"]["slower_pct"] > 5
    assert json.loads(slower.stdout)["confidence"]["level"] == "high"
    noisy = runner.invoke(app, ["diff", FIXED, BAD, "--fail-if-slower", "5%", "-q"])
    assert noisy.exit_code == 2 and "confidence is low" in noisy.stderr
    mean = diff_json(BAD, FIXED, "--basis", "mean")
    # the mean step: the 4 ProfilerStep spans' wall time / 4 (hand count: 884.98 us)
    assert mean["total"]["compared_base_ms"] == pytest.approx(
        (1125.509 + 843.388 + 809.959 + 761.065) / 4 / 1e3, rel=1e-6
    )


def test_trace_and_log_pairs() -> None:
    """Each side a glob of a log and its trace: the steps are compared, oneDNN's part of
    each step is the log's typical iteration once per step (72 exec lines in 6 passes:
    12 per pass, each step running one pass), and the oneDNN tables follow."""
    doc = diff_json(str(FW / "layout_bad.*"), str(FW / "layout_fixed.*"))
    assert doc["unit"] == "step"
    for side in ("base", "new"):
        step = doc[side]["step"]
        assert step["iterations_per_step"] == 1
        assert step["onednn_ms_per_step"] == doc[side]["typical_iteration_ms"]
        assert doc[side]["exec_count"] == 72
    assert doc["kinds"] and "oneDNN" in doc["verdict"]
    out = runner.invoke(app, ["diff", str(FW / "layout_bad.*"), str(FW / "layout_fixed.*")])
    assert "Time by kind (oneDNN)" in out.stdout


def test_nothing_in_common_is_a_usage_error() -> None:
    """A trace alone against a log alone: no step on one side, no execution on the other."""
    result = runner.invoke(app, ["diff", BAD, str(FW / "layout_fixed.log")])
    assert result.exit_code == 2
    assert "nothing to compare" in result.output
    # one side with a step, both with executions: the iterations, with a note
    doc = diff_json(str(FW / "layout_bad.*"), str(FW / "layout_fixed.log"))
    assert doc["unit"] == "iteration" and doc["notes"]
