"""Shares: a part of nothing is no share (``None``, printed ``-``), in every owner of one.

``dispatch_only_infer.log`` (sample_logs) has no exec line at all (``grep -c ,exec,``: 0):
no typical iteration, no summed time, so neither the reorders nor anything else has a
share of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.shares import share
from dnnlens.analysis.training import training_step
from dnnlens.reading import load

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.mark.parametrize("whole", [0.0, -1.0, None, math.inf, math.nan])
def test_no_whole_is_no_share(whole: float | None) -> None:
    assert share(1.0, whole) is None


def test_a_part_of_a_whole() -> None:
    assert share(0.5, 2.0) == 0.25
    assert share(0.0, 2.0) == 0.0
    assert share(None, 2.0) is None


def test_a_log_without_executions_has_no_shares() -> None:
    a = Analysis(load([str(SAMPLES / "dispatch_only_infer.log")]))
    assert a.summary.exec_count == 0 and a.typical_iteration_ms == 0.0
    assert a.typical.share(1.0) is None
    assert a.reorder_part.share is None and a.reorder_part.raw_share is None


def test_an_empty_step_has_no_shares() -> None:
    terms = pd.DataFrame({"node": [], "kind": [], "iter_ms": [], "per_iteration": []})
    step = training_step(terms, {}, {}, {}, step_ms=0.0, steady_steps=0)
    assert step.share(1.0) is None
    assert training_step(terms, {}, {}, {}, step_ms=4.0, steady_steps=1).share(1.0) == 0.25


def test_a_trace_without_steps_has_no_step_shares() -> None:
    """A trace whose step is zero long: the framework view has no share of it."""
    from dnnlens.analysis.framework import analyze_framework
    from dnnlens.parsers.torch_trace import FrameworkData, parse_trace_json

    trace = parse_trace_json('{"traceEvents": []}', "empty.trace.json")
    fw = analyze_framework(FrameworkData(traces=[trace]))
    assert fw.typical_step_ms == 0.0
    assert fw.share(1.0) is None
