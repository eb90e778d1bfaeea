"""Golden numbers for the real sample logs, counted by hand with grep and awk.

For each log, the expected values were produced by these commands (README, "How the
numbers are computed"), which know nothing of dnnlens:

    lines   wc -l < LOG
    exec    grep -E '_verbose,' LOG | grep -E ',exec,' | grep -vc ',graph,exec,'
    time    grep -E '_verbose,' LOG | grep -E ',exec,' | grep -v ',graph,exec,' \\
              | awk -F, '{s+=$NF} END {printf "%.6f", s}'
    create  grep -E '_verbose,' LOG | grep -E ',create(_nested)?:' \\
              | grep -vcE ',create:(dispatch|check),'
    reorder the exec/time commands with an extra `grep ',reorder,'`

If the sample logs are regenerated (scripts/make_sample_logs.py), these numbers must be
counted again: they are facts about the files, not about dnnlens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnlens.analysis.summary import summarize
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"

# name: (lines, exec, exec time ms, create lines, reorder execs, reorder time ms)
HAND_COUNTS = {
    "all_timestamps_infer.log": (307, 90, 13.057864, 90, 66, 5.289795),
    "compile_freezing_infer.log": (112, 52, 35.215822, 52, 4, 25.161870),
    "contended_infer.log": (938, 465, 399.352288, 465, 341, 256.960668),
    "convnet_bf16_autocast_infer.log": (1, 0, 0.0, 0, 0, 0.0),
    "convnet_cl_infer.log": (184, 88, 180.342063, 88, 44, 87.989787),
    "dispatch_only_infer.log": (34, 0, 0.0, 0, 0, 0.0),
    "convnet_cl_train.log": (272, 132, 20.474365, 132, 66, 0.537842),
    "convnet_nchw_infer.log": (338, 165, 356.084723, 165, 121, 245.681646),
    "convnet_nchw_train.log": (512, 252, 40.978509, 252, 186, 19.908201),
    "isa_sse41_infer.log": (188, 90, 367.332983, 90, 66, 236.984345),
    "lstm_infer.log": (140, 66, 30.198738, 66, 44, 4.606204),
    "profile_bf16_train.log": (3, 0, 0.0, 0, 0, 0.0),
    "profile_combined_infer.log": (110, 60, 235.695272, 0, 44, 168.216037),
    "profile_lstm_infer.log": (46, 36, 4.472167, 0, 24, 0.746826),
    "profile_nchw_infer.log": (100, 90, 8.733892, 0, 66, 3.349122),
    "resnet18_nchw_train.log": (4688, 2340, 233.355003, 2340, 1750, 131.210713),
    "resnet18_cl_train.log": (2368, 1180, 214.065419, 1180, 590, 108.213368),
    "lstm_train.log": (316, 154, 27.431357, 154, 110, 0.570068),
    "convnet_bf16_autocast_train.log": (512, 252, 4.097412, 252, 186, 1.793214),
    "keras_cnn_train.log": (230, 180, 38.199969, 35, 60, 1.466553),
    "framework/autocast_bad.log": (94, 84, 12.751222, 0, 0, 0.0),
    "framework/autocast_fixed.log": (94, 84, 18.962400, 0, 0, 0.0),
    "framework/layout_bad.log": (82, 72, 15.618159, 0, 42, 0.116699),
    "framework/layout_fixed.log": (82, 72, 16.780510, 0, 42, 0.093994),
    "legacy/onednn-2.0.0.log": (82, 47, 34.806161, 29, 17, 1.181152),
    "legacy/onednn-2.2.0-timestamp.log": (83, 47, 34.047874, 29, 17, 2.162595),
    "legacy/onednn-2.2.0.log": (83, 47, 71.851538, 29, 17, 23.777334),
    "legacy/onednn-2.4.0-timestamp.log": (83, 47, 45.526903, 29, 17, 15.474610),
    "legacy/onednn-2.4.0.log": (83, 47, 80.092277, 29, 17, 43.599853),
    "legacy/onednn-2.5.0.log": (83, 47, 220.960626, 29, 17, 38.481913),
    "legacy/onednn-2.6.0.log": (83, 47, 391.346250, 29, 17, 134.879180),
    "legacy/onednn-2.6.3-debian.log": (83, 47, 128.904637, 29, 17, 14.091599),
    "legacy/onednn-3.0.0.log": (83, 47, 412.125940, 29, 17, 136.806860),
    "legacy/onednn-3.2.0-timestamp.log": (84, 47, 215.806389, 29, 17, 55.964650),
    "legacy/onednn-3.2.0.log": (84, 47, 228.078375, 29, 17, 91.186315),
    "producers/openvino_cnn_f32_infer.log": (40, 34, 0.384033, 0, 12, 0.072754),
    "producers/openvino_cnn_infer.log": (65, 59, 0.695068, 0, 26, 0.305420),
    "producers/openvino_cnn_nhwc_f32_infer.log": (29, 23, 0.329345, 0, 1, 0.020996),
    "producers/openvino_weights_as_inputs_infer.log": (50, 44, 0.641113, 0, 22, 0.220215),
    "producers/pytorch_resnet18_cl_b16_train.log": (716, 708, 334.884023, 0, 354, 89.767555),
    "producers/tensorflow_cnn_frozen_infer.log": (73, 58, 7.160393, 0, 3, 3.151118),
    "producers/tensorflow_cnn_infer.log": (70, 55, 8.000739, 0, 0, 0.000000),
    "producers/tensorflow_cnn_noopts_infer.log": (56, 44, 48.679221, 0, 0, 0.000000),
    "producers/tensorflow_keras_fit_b16_train.log": (195, 180, 93.835452, 0, 60, 1.750977),
}

FAMILY = {
    "legacy/onednn-2.0.0.log": "dnnl",
    "legacy/onednn-2.2.0.log": "dnnl",
    "legacy/onednn-2.2.0-timestamp.log": "dnnl",
    "legacy/onednn-2.4.0.log": "dnnl",
    "legacy/onednn-2.4.0-timestamp.log": "dnnl",
    "legacy/onednn-2.5.0.log": "onednn-flat",
    "legacy/onednn-2.6.0.log": "onednn-flat",
    "legacy/onednn-2.6.3-debian.log": "onednn-flat",
    "legacy/onednn-3.0.0.log": "onednn-flat",
    "legacy/onednn-3.2.0.log": "onednn-flat",
    "legacy/onednn-3.2.0-timestamp.log": "onednn-flat",
    "convnet_nchw_infer.log": "onednn-v1",
    "resnet18_nchw_train.log": "onednn-v1",  # torch 2.14.1's oneDNN 3.12
    "keras_cnn_train.log": "onednn-v1",  # TensorFlow 2.21's oneDNN 3.7.3
}


def test_every_sample_log_is_counted() -> None:
    # iterations/ has its own hand counts (tests/test_iteration_recordings.py)
    names = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.log")}
    names = {n for n in names if not n.startswith("iterations/")}
    assert names == set(HAND_COUNTS)


@pytest.mark.parametrize("name", sorted(HAND_COUNTS))
def test_sample_log_matches_hand_count(name: str) -> None:
    lines, execs, time_ms, creates, reorders, reorder_ms = HAND_COUNTS[name]
    log = load([str(ROOT / name)])
    scan = log.scans[0]
    assert scan.lines == lines
    assert scan.parsed + scan.foreign + scan.malformed == lines
    assert scan.malformed == 0
    s = summarize(log)
    assert s.exec_count == execs
    assert s.total_time_ms == pytest.approx(time_ms, abs=1e-6)
    assert s.create_count == creates
    kinds = {r["kind"]: r for r in s.by_kind}
    if reorders:
        assert kinds["reorder"]["count"] == reorders
        assert kinds["reorder"]["time_ms"] == pytest.approx(reorder_ms, abs=1e-6)
    if name in FAMILY:
        assert scan.family_names == [FAMILY[name]]


def test_timestamps_are_read_where_printed() -> None:
    log = load(
        [str(ROOT / "legacy/onednn-2.2.0-timestamp.log"), str(ROOT / "legacy/onednn-2.2.0.log")]
    )
    ev = log.events
    stamped = ev[ev["input"].str.endswith("timestamp.log")]
    plain = ev[~ev["input"].str.endswith("timestamp.log")]
    assert stamped["timestamp_ms"].notna().all()
    assert plain["timestamp_ms"].isna().all()
    # epoch milliseconds of a 2026 run, increasing in log order
    assert stamped["timestamp_ms"].is_monotonic_increasing
    assert (stamped["timestamp_ms"] > 1.7e12).all()


def test_bf16_runs_without_onednn_are_said_plainly() -> None:
    s = summarize(load([str(ROOT / "convnet_bf16_autocast_infer.log")]))
    assert s.exec_count == 0 and s.create_count == 0
