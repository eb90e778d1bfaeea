"""One cause, one finding: a reorder cause that holds 90% or more of the reorder time takes
reorder-overhead's place (``rules/duplicates.py``); below that both stay.

Hand counts (``--select`` each rule alone, which is never folded): on
``convnet_nchw_infer.log`` reorder-overhead counts 0.676 ms per iteration (11 reorders) and
layout-round-trip 0.650 ms (its 7 activation reorders): 96%, folded. On
``profile_combined_infer.log`` reorder-overhead counts 43.4 ms and the round trips 31.8 ms
(73%: the rest is weights, DL003): both stay. On ``resnet18_cl_train.log`` every reorder is a
weight reorder of training: DL013 holds 100%.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.findings import Finding
from dnnlens.cli import app
from dnnlens.rules.duplicates import FOLD_AT, fold

S = Path(__file__).resolve().parents[1] / "sample_logs"


def _findings(log: str, *args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["analyze", str(S / log), "-f", "json", "-q", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["findings"]


def _alone(log: str, rule: str) -> dict:
    (found,) = _findings(log, "--select", rule)
    return found


@pytest.mark.parametrize(
    ("log", "part", "covered"),
    [
        ("convnet_nchw_infer.log", "layout-round-trip", 0.96),
        ("resnet18_cl_train.log", "weight-reorder-training", 1.0),
    ],
)
def test_a_cause_that_holds_the_reorder_time_is_the_one_finding(log, part, covered):
    whole = _alone(log, "reorder-overhead")
    alone = _alone(log, part)
    assert alone["impact_ms_per_iteration"] / whole["impact_ms_per_iteration"] == pytest.approx(
        covered, abs=0.005
    )
    everything = _findings(log)
    rules = [f["rule"] for f in everything]
    assert "reorder-overhead" not in rules
    (kept,) = [f for f in everything if f["rule"] == part]
    assert kept["impact_ms_per_iteration"] == alone["impact_ms_per_iteration"]
    includes = kept["data"]["includes"]
    assert (includes["code"], includes["impact_ms_per_iteration"]) == (
        "DL001",
        whole["impact_ms_per_iteration"],
    )
    assert f"{covered:.0%} of the reorder time" in kept["message"]
    assert "reorder-overhead DL001 is this finding" in kept["message"]


def test_two_causes_keep_the_broader_finding():
    whole = _alone("profile_combined_infer.log", "reorder-overhead")
    trips = _alone("profile_combined_infer.log", "layout-round-trip")
    share = trips["impact_ms_per_iteration"] / whole["impact_ms_per_iteration"]
    assert share == pytest.approx(0.73, abs=0.01) and share < FOLD_AT
    rules = [f["rule"] for f in _findings("profile_combined_infer.log")]
    assert {"reorder-overhead", "layout-round-trip"} <= set(rules)


def _f(rule: str, ms: float, basis: str = "iteration") -> Finding:
    return Finding(rule, rule.upper(), "warning", "m", impact_ms_per_iteration=ms, basis=basis)


PARTS = {"part": "whole"}


def test_the_threshold_and_the_basis():
    kept = fold([_f("whole", 1.0), _f("part", 0.9)], PARTS)
    assert [f.rule for f in kept] == ["part"]
    assert [f.rule for f in fold([_f("whole", 1.0), _f("part", 0.899)], PARTS)] == [
        "whole",
        "part",
    ]
    # a part on another basis (a step, the whole on oneDNN's iteration) is not compared
    mixed = fold([_f("whole", 1.0), _f("part", 0.95, basis="step")], PARTS)
    assert [f.rule for f in mixed] == ["whole", "part"]
    # a whole without a time is never folded
    assert len(fold([_f("whole", 0.0), _f("part", 0.0)], PARTS)) == 2
