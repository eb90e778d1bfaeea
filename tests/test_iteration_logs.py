"""Iterations right on ordinary runs: the recordings of ``sample_logs/iterations/``.

Each log is a real run made by ``scripts/make_iteration_logs.py``: the primitive cache off,
a batch or sequence length that changes every pass, four or six identical layers in a pass,
TensorFlow with only ``gemm_api`` lines, Keras ``model.fit``. Every program prints a line
of its own after each step. The hand count is in ``MANIFEST.json`` (``hand_count``) and
re-derived from the log text without dnnlens by ``test_iteration_recordings.py``: per step,
the exec times of the exec lines between two step lines summed (the lines before the first
step line are step 1); ``median_step_ms_after_warmup`` is the median of those sums after
the program's warm-up steps.

dnnlens must find as many passes as the program ran steps, and a typical iteration within
15% of that median: from the program's step lines, and from the exec stream alone once the
step lines are taken out of the log, with one exception the exec stream cannot tell: a pass
of nothing but identical layers (``encoder6_fp32_infer``: six identical encoder layers and
no other oneDNN primitive per pass) repeats with the layer's period.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.iterations import max_warmup
from dnnlens.reading import read
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "sample_logs" / "iterations"
MANIFEST = json.loads((LOGS / "MANIFEST.json").read_text(encoding="utf-8"))["recordings"]
ENTRIES = {e["name"]: e for e in MANIFEST}
#: Passes that are nothing but one repeated layer: without step lines, one pass per layer.
ONLY_LAYERS = {"encoder6_fp32_infer": 6}
TOLERANCE = 0.15


@cache
def analysed(path: str) -> Analysis:
    return Analysis(read([path]))


def without_step_lines(entry: dict, tmp_path: Path) -> Path:
    """The log with its step lines taken out (every other line kept as it was)."""
    step = re.compile(entry["step_line_regex"])
    lines = (LOGS / entry["file"]).read_text(encoding="utf-8").splitlines(keepends=True)
    out = tmp_path / entry["file"]
    out.write_text("".join(x for x in lines if not step.fullmatch(x.strip())), encoding="utf-8")
    return out


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_passes_from_the_program_step_lines(name: str) -> None:
    entry = ENTRIES[name]
    hand = entry["hand_count"]
    a = analysed(str(LOGS / entry["file"]))
    it = a.iterations
    assert it.method == "steps"
    shape = re.compile(re.escape(it.step_line).replace("\\#", r"\d+(?:\.\d+)?"))
    program = re.compile(entry["step_line_regex"])
    lines = (LOGS / entry["file"]).read_text(encoding="utf-8").splitlines()
    steps = [x for x in lines if program.fullmatch(x.strip())]
    assert steps and all(shape.fullmatch(x.strip()) for x in steps)
    assert it.count == hand["steps"] == entry["steps"]
    assert a.steady.warmup <= max_warmup(it.count)
    want = hand["median_step_ms_after_warmup"]
    assert a.typical_iteration_ms == pytest.approx(want, rel=TOLERANCE)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_passes_from_the_exec_stream_alone(name: str, tmp_path: Path) -> None:
    entry = ENTRIES[name]
    hand = entry["hand_count"]
    a = Analysis(read([str(without_step_lines(entry, tmp_path))]))
    assert a.iterations.method == "period"
    layers = ONLY_LAYERS.get(name, 1)
    assert a.iterations.count == hand["steps"] * layers
    if layers == 1:
        want = hand["median_step_ms_after_warmup"]
        assert a.typical_iteration_ms == pytest.approx(want, rel=TOLERANCE)


def test_warm_up_is_the_program_warm_up_at_most() -> None:
    """No run is called mostly warm-up: each has one warm-up step the program ran (the
    first pass, which creates its primitives, or traces Keras's train function); dnnlens
    may count one more slow pass, never more."""
    for entry in MANIFEST:
        a = analysed(str(LOGS / entry["file"]))
        assert a.steady.warmup <= entry["warmup_steps"] + 1, entry["name"]


def test_no_finding_claims_more_than_its_basis() -> None:
    for entry in MANIFEST:
        a = analysed(str(LOGS / entry["file"]))
        apply_rules(a.prepare(), RuleOptions())
        for f in a.findings:
            share = a.share_of(f)
            assert share is None or share <= 1.0, (entry["name"], f.rule, share)
