"""The training step in every output: JSON ``training``, the terminal, HTML and ``diff``.

The figures are the analysis's (checked against hand counts in test_training_step.py); here:
each view shows them, the parts add up to the step, and inference logs show nothing new.
resnet18 NCHW per position (test_training_step.HAND): forward 2.896485, weight gradients
5.660650, step 19.949470 ms.
"""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import pytest
from rich.console import Console

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.diff import diff_analyses
from dnnlens.reading import load
from dnnlens.report.diff_report import render_json as diff_json
from dnnlens.report.diff_report import render_markdown
from dnnlens.report.html import render_html
from dnnlens.report.json_report import to_json_dict
from dnnlens.report.terminal import render_terminal
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules

S = Path(__file__).resolve().parent.parent / "sample_logs"
TRAIN = [
    "resnet18_nchw_train.log",
    "resnet18_cl_train.log",
    "lstm_train.log",
    "convnet_bf16_autocast_train.log",
    "keras_cnn_train.log",
]
INFER = ["convnet_nchw_infer.log", "lstm_infer.log"]


@cache
def analysed(name: str) -> Analysis:
    a = Analysis(load([str(S / name)]))
    apply_rules(a, RuleOptions(search_config=False))
    return a


def terminal(name: str, width: int = 100) -> str:
    out = io.StringIO()
    render_terminal(analysed(name), Console(file=out, width=width, no_color=True))
    return out.getvalue()


@pytest.mark.parametrize("name", TRAIN)
def test_json_training_parts_add_up_to_the_step(name: str) -> None:
    doc = to_json_dict(analysed(name))
    t = doc["training"]
    assert t["step_ms"] == doc["summary"]["typical_iteration_ms"]
    assert sum(p["ms"] for p in t["parts"]) == pytest.approx(t["step_ms"], rel=1e-12)
    assert sum(p["share"] for p in t["parts"]) == pytest.approx(1.0, rel=1e-12)
    reorder = sum(p["ms"] for p in t["parts"] if p["group"] == "reorder")
    assert reorder == pytest.approx(doc["summary"]["reorder_ms_per_iteration"], rel=1e-12)
    weights = sum(p["ms"] for p in t["parts"] if p["part"].startswith("reorder_weight"))
    assert t["weight_reorder_ms"] == pytest.approx(weights, rel=1e-12)
    finding = next(f for f in doc["findings"] if f["rule"] == "weight-reorder-training")
    assert finding["impact_ms_per_iteration"] == pytest.approx(weights, rel=1e-12)


def test_json_training_of_resnet18_nchw() -> None:
    t = to_json_dict(analysed("resnet18_nchw_train.log"))["training"]
    parts = {p["part"]: p for p in t["parts"]}
    assert parts["forward"]["ms"] == pytest.approx(2.896485, abs=2e-6)
    assert parts["reorder_weight_gradient"]["ms"] == pytest.approx(5.660650, abs=2e-6)
    assert parts["reorder_activation"]["per_step"] == 116
    assert t["steady_steps"] == 9 and t["backward_forward_ratio"] == pytest.approx(2.1826, 1e-4)


@pytest.mark.parametrize("name", INFER)
def test_inference_outputs_have_no_training_step(name: str) -> None:
    assert "training" not in to_json_dict(analysed(name))
    assert "Training step" not in terminal(name)
    assert 'id="training"' not in render_html(analysed(name))


def test_terminal_shows_the_step_after_the_breakdown() -> None:
    text = terminal("resnet18_nchw_train.log")
    at = text.index("Training step")
    assert text.index("Typical iteration by kind") < at < text.index("--details")
    section = text[at:]
    assert "weight gradients back to the framework's layout" in section
    assert "5.661" in section and "2.896" in section and "19.949" in section
    assert "backward/forward 2.18" in section


def test_terminal_step_fits_a_narrow_console() -> None:
    text = terminal("keras_cnn_train.log", width=40)
    section = text[text.index("Training step") : text.index("--details")]
    assert all(len(line) <= 40 for line in section.splitlines())
    assert "0.429" in section and "1.232" in section  # numbers keep every digit


def test_html_section_after_where_the_time_went() -> None:
    html = render_html(analysed("resnet18_nchw_train.log"))
    assert '<a href="#training">Training step</a>' in html
    assert html.index('id="time"') < html.index('id="training"') < html.index('id="iteration"')
    section = html[html.index('id="training"') :].split("</section>", 1)[0]
    assert "weight gradients back to the framework&#x27;s layout" in section
    assert "<svg" in section and "5.661" in section


def test_diff_shows_both_steps() -> None:
    d = diff_analyses(analysed("resnet18_nchw_train.log"), analysed("resnet18_cl_train.log"))
    doc = json.loads(diff_json(d))
    assert doc["base"]["training"]["step_ms"] == pytest.approx(19.949470, abs=2e-6)
    assert doc["new"]["training"]["step_ms"] == pytest.approx(19.618649, abs=2e-6)
    md = render_markdown(d)
    assert "### Training step" in md
    assert "| weight gradients back to the framework's layout | 5.661 -> 2.440 |" in md
    assert "| backward/forward (compute) | 2.18 -> 2.05 |" in md


def test_diff_of_inference_logs_has_no_training_table() -> None:
    d = diff_analyses(analysed("convnet_nchw_infer.log"), analysed("lstm_infer.log"))
    assert "Training step" not in render_markdown(d)
    doc = json.loads(diff_json(d))
    assert "training" not in doc["base"] and "training" not in doc["new"]


def test_diff_with_one_training_side() -> None:
    d = diff_analyses(analysed("lstm_infer.log"), analysed("lstm_train.log"))
    md = render_markdown(d)
    assert "| step | - -> 0.308 | new | - -> 100.0% |" in md
