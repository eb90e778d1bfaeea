"""The first finding of every sample log is the one a person reading the log names first.

The findings are in report order: by what their fix would save per typical iteration,
known savings first, then time whose saving is unknown (``rules.verdict``). For each sample
log, the rule that comes first and why a reader of the log would say the same (the numbers
are the log's own: pass sums and shares counted from its lines).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"
REORDERS_OF_NCHW = "reorder-overhead"
#: Where one cause holds 90% or more of the reorder time, its finding is the one finding
#: (rules/duplicates.py): activation round trips in NCHW, weights in training.
ROUND_TRIPS = "layout-round-trip"
WEIGHTS_TRAINING = "weight-reorder-training"

#: log -> (first rule, why a reader names it first)
FIRST = {
    "convnet_nchw_infer.log": (
        ROUND_TRIPS,
        "11 reorders per pass around 4 convolutions, a third of each steady pass; the 7 of "
        "activations hold 96% of their time",
    ),
    "all_timestamps_infer.log": (ROUND_TRIPS, "the same NCHW net as convnet_nchw_infer"),
    "profile_nchw_infer.log": (ROUND_TRIPS, "the same NCHW net, profiled"),
    "profile_combined_infer.log": (
        REORDERS_OF_NCHW,
        "the same NCHW net, 71% in reorders, a quarter of them weights: two causes",
    ),
    "convnet_nchw_train.log": (ROUND_TRIPS, "NCHW training: reorders around every conv"),
    "convnet_bf16_autocast_train.log": (
        ROUND_TRIPS,
        "bf16 autocast training: f32<->bf16 and layout reorders are 46% of a step",
    ),
    "resnet18_nchw_train.log": (
        ROUND_TRIPS,
        "resnet18 training: weight reorders are about half of every step but no recorded fix "
        "removes them (saving unknown); the activation round trips' 0.51 ms are what a fix "
        "removes",
    ),
    "resnet18_cl_train.log": (
        "weight-reorder-training",
        "channels_last training reorders only weights, which no recorded fix removes: the "
        "reorder-overhead finding saves 0 ms and follows the time of unknown saving",
    ),
    "contended_infer.log": (
        ROUND_TRIPS,
        "two busy loops compete for the two cores (noise of 8.6 ms a pass, which no fix of "
        "the model saves); the NCHW reorders' 0.90 ms are what a fix removes",
    ),
    "convnet_cl_infer.log": (
        "weight-reorder-per-iteration",
        "steady passes take 1.0 to 63 ms for a 1.6 ms typical pass (noise, no saving); "
        "the weights reordered every pass are the one cost a fix removes",
    ),
    "lstm_infer.log": (
        "weight-reorder-per-iteration",
        "steady passes take 0.7 to 10.7 ms (noise, no saving); the LSTM weights reordered "
        "every pass are the one cost a fix removes",
    ),
    "isa_sse41_infer.log": (
        "low-efficiency",
        "every kernel runs capped at SSE4.1: 14.1 ms a pass above the roof (a roofline "
        "saving); the cap's own saving is not in the log (no kernel at AVX2 to compare)",
    ),
    "lstm_train.log": (
        "reference-implementation",
        "the LSTM runs ref rnn kernels: 91% of each training step",
    ),
    "profile_lstm_infer.log": (
        "weight-reorder-per-iteration",
        "the LSTM weights are reordered on every inference pass",
    ),
    "convnet_bf16_autocast_infer.log": ("no-onednn-lines", "one line: no oneDNN at all"),
    "profile_bf16_train.log": ("no-onednn-lines", "three lines: no oneDNN at all"),
    "dispatch_only_infer.log": ("no-onednn-lines", "ONEDNN_VERBOSE=dispatch: diagnostics only"),
    "compile_freezing_infer.log": (None, "frozen and compiled: weights reordered once, fused"),
    "keras_cnn_train.log": (
        "weight-reorder-training",
        "Keras reorders both weights from HWIO every step: 9% of a step, nothing else",
    ),
    "convnet_cl_train.log": (
        "weight-reorder-training",
        "channels_last training: no activation reorder left, the weights still every step",
    ),
    # the C++ training probe: most of its reorders move weights, which no recorded fix
    # removes from a training step; the ReLU a post-op would absorb saves more
    "legacy/onednn-2.0.0.log": ("missed-fusion", "the probe's ReLU after its convolution"),
    "legacy/onednn-2.5.0.log": ("missed-fusion", "the probe's ReLU after its convolution"),
    "legacy/onednn-2.6.0.log": (
        "low-efficiency",
        "the probe's convolutions run far under their roof: 33.5 ms a pass above it",
    ),
    "legacy/onednn-2.6.3-debian.log": ("missed-fusion", "the probe's ReLU after its convolution"),
    "legacy/onednn-3.2.0.log": ("missed-fusion", "the probe's ReLU after its convolution"),
}
#: logs of the C++ probe where two causes cost about the same: either may come first
EITHER = {
    "legacy/onednn-2.2.0.log": {REORDERS_OF_NCHW, "missed-fusion"},
    "legacy/onednn-2.2.0-timestamp.log": {REORDERS_OF_NCHW, "missed-fusion"},
    "legacy/onednn-2.4.0.log": {REORDERS_OF_NCHW, "missed-fusion"},
    "legacy/onednn-2.4.0-timestamp.log": {REORDERS_OF_NCHW, "missed-fusion"},
    "legacy/onednn-3.0.0.log": {REORDERS_OF_NCHW, "low-efficiency"},
    "legacy/onednn-3.2.0-timestamp.log": {REORDERS_OF_NCHW, "missed-fusion"},
}


def first_rule(log: str) -> str | None:
    result = CliRunner().invoke(app, ["analyze", str(ROOT / log), "-f", "json", "-q"])
    findings = json.loads(result.stdout)["findings"]
    return findings[0]["rule"] if findings else None


@pytest.mark.parametrize("log", sorted(FIRST), ids=sorted(FIRST))
def test_first_finding(log: str) -> None:
    rule, why = FIRST[log]
    assert first_rule(log) == rule, why


@pytest.mark.parametrize("log", sorted(EITHER), ids=sorted(EITHER))
def test_first_finding_of_a_close_call(log: str) -> None:
    assert first_rule(log) in EITHER[log]
