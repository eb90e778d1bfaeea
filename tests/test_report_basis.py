"""One basis per report: the trace's typical step, with the oneDNN iteration as its part.

Hand counts (``grep -c ,exec,`` and ``MANIFEST.json`` of ``sample_logs``):

* ``profile_nchw_infer.log``: 90 exec lines; the program ran 1 warm-up and 5 timed passes
  (``warmup``/``timed`` in MANIFEST.json), so 15 executions per pass; the profiler was
  around the 5 timed passes and the trace's step pattern finds 5 steps, one pass each:
  one typical iteration per step;
* ``profile_combined_infer.log``: 60 exec lines, 1 + 3 passes (15 per pass); its
  key_averages table (line 70) covers the 3 timed passes and has no ``ProfilerStep#`` row,
  so its window holds 3 typical iterations and the iteration stays the basis;
* ``sgd_bad.trace.json.gz``: 4 ``ProfilerStep#`` spans, no verbose log.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.fmt import ms

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW_LOG, NCHW_TRACE = ROOT / "profile_nchw_infer.log", ROOT / "profile_nchw_infer.trace.json"
runner = CliRunner()


def run(*args: object) -> str:
    result = runner.invoke(app, [*map(str, args), "-q"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_joined_report_has_one_basis() -> None:
    """Every share is of the trace's typical step; a oneDNN finding's impact per iteration
    counts once per step (one pass per step, above); share_of_iteration is the one share
    too, and oneDNN's iteration is the named second basis (share_of_onednn_iteration)."""
    doc = json.loads(run("analyze", NCHW_LOG, NCHW_TRACE, "-f", "json"))
    basis = doc["basis"]
    assert basis["unit"] == "step"
    assert basis["typical_ms"] == doc["framework"]["steps"]["typical_step_ms"]
    assert basis["onednn_iteration_ms"] == doc["summary"]["typical_iteration_ms"]
    assert basis["iterations_per_step"] == 1
    assert basis["iterations_per_step_from"] == "linked executions"
    assert doc["iterations"]["period_exec"] == 15
    timed = [f for f in doc["findings"] if f.get("impact_ms_per_iteration") is not None]
    assert any(f["basis"] == "iteration" for f in timed)
    for f in timed:
        assert f["share_of_basis"] == pytest.approx(f["impact_ms_per_basis"] / basis["typical_ms"])
        assert f["share_of_iteration"] == f["share_of_basis"]
        if f["basis"] == "iteration":
            assert f["impact_ms_per_basis"] == f["impact_ms_per_iteration"]
            assert f["share_of_onednn_iteration"] == pytest.approx(
                f["impact_ms_per_iteration"] / basis["onednn_iteration_ms"]
            )
        else:
            assert f.get("share_of_onednn_iteration") is None


def test_joined_terminal_says_the_basis_once() -> None:
    """The first line says the step and oneDNN's part of it; every finding's cost is of
    that one step."""
    doc = json.loads(run("analyze", NCHW_LOG, NCHW_TRACE, "-f", "json"))
    text = run("analyze", NCHW_LOG, NCHW_TRACE)
    step = ms(doc["basis"]["typical_ms"])
    first = text.split("\n\n")[0].replace("\n", " ")
    assert f"typical step {step}" in first
    assert f"oneDNN: {ms(doc['basis']['onednn_ms_per_step'])} of the {step} step" in first
    costs = re.findall(r"% of the typical ([0-9.]+ ms)( step)?", " ".join(text.split()))
    assert costs and all(c == (step, " step") for c in costs)


def test_trace_alone_opens_with_its_steps() -> None:
    """No 'no verbose log' line: the report opens with the trace's 4 steps, then the
    verdict."""
    text = run("analyze", ROOT / "framework" / "sgd_bad.trace.json.gz")
    lines = text.splitlines()
    assert lines[0].startswith("sgd_bad.trace.json.gz: 4 steps (profiler step, 0 warm-up)")
    assert "no verbose log" not in text
    # the optimizer loop's sure saving (the Python between its ops) leads, as a saving
    assert lines[2].startswith("Fix first: The optimizer step runs many small per-parameter")
    assert "(removal)" in lines[2]


def test_table_window_beside_a_log_stays_on_the_iteration() -> None:
    """A table without step rows is a window of 3 typical iterations (above): the iteration
    is the basis, a framework finding's window impact is shared out over the three."""
    doc = json.loads(run("analyze", ROOT / "profile_combined_infer.log", "-f", "json"))
    basis = doc["basis"]
    assert basis["unit"] == "iteration"
    assert basis["iterations_per_step"] == 3
    assert basis["typical_ms"] == doc["summary"]["typical_iteration_ms"]
    for f in doc["findings"]:
        if f.get("impact_ms_per_iteration") is not None and f["basis"] == "step":
            assert f["impact_ms_per_basis"] == pytest.approx(f["impact_ms_per_iteration"] / 3)
