"""The program that made a log, and fixes said in its terms, on real logs of each producer.

The logs: ``sample_logs/producers/`` (``scripts/make_producer_logs.py``: OpenVINO 2026.4.1,
TensorFlow 2.21, torch 2.14.1 on a 2-core AVX-512 BF16 machine; versions and commands in its
``MANIFEST.json``), ``sample_logs/`` (PyTorch, and one Keras run), ``sample_logs/legacy/`` (a
C++ program calling oneDNN) and the public logs copied into ``tests/data/corpus/`` (sources in
its README). Every expected line number was read off the log with ``grep -n`` (the command is
beside each number).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.producer import (
    NAMED,
    ONEDNN,
    OPENVINO,
    PRODUCERS,
    PYTORCH,
    SHAPE,
    TENSORFLOW,
    detect_producer,
)
from dnnlens.reading import load
from dnnlens.rules.builtin._util import FixedByProducer
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.registry import Registry, add_entry_points
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_logs"
P = S / "producers"
CORPUS = ROOT / "tests" / "data" / "corpus"

#: What a fix for one producer must not say: another program's API.
FOREIGN_TERMS = {
    PYTORCH: ("tf.", "TF_", "keras", "Keras", "ov.", "openvino", "PrePostProcessor",
              "INFERENCE_PRECISION", "format_tag", "dnnl::"),
    TENSORFLOW: ("torch", "ov.", "openvino", "PrePostProcessor", "INFERENCE_PRECISION",
                 "format_tag", "dnnl::"),
    OPENVINO: ("torch", "tf.", "TF_", "keras", "Keras", "format_tag", "dnnl::"),
    ONEDNN: ("torch", "tf.", "TF_", "keras", "Keras", "ov.", "openvino", "PrePostProcessor",
             "INFERENCE_PRECISION"),
}  # fmt: skip


@cache
def analysed(path: Path) -> Analysis:
    a = Analysis(load([str(path)]))
    apply_rules(a, RuleOptions(search_config=False))
    return a


def line(path: Path, n: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[n - 1]


# (log, producer, first clue's line, its kind, a word of the line itself)
DETECTED = [
    # grep -n 'oneDNN v' P/openvino_*.log: the header's first line, commit 1289c3b6...
    (P / "openvino_cnn_infer.log", OPENVINO, 1, NAMED, "1289c3b65dd6a119a5ed12a816517d9c3a21d81b"),
    (P / "openvino_cnn_f32_infer.log", OPENVINO, 1, NAMED, "oneDNN v3.13.0"),
    (P / "openvino_weights_as_inputs_infer.log", OPENVINO, 1, NAMED, "oneDNN v3.13.0"),
    # grep -n 'custom operations' P/tensorflow_cnn_infer.log -> 2 (port.cc:153)
    (P / "tensorflow_cnn_infer.log", TENSORFLOW, 2, NAMED, "oneDNN custom operations are on"),
    # TF_ENABLE_ONEDNN_OPTS=0 prints no such note; grep -n cpu_feature_guard -> 2
    (P / "tensorflow_cnn_noopts_infer.log", TENSORFLOW, 2, NAMED, "cpu_feature_guard.cc"),
    (S / "keras_cnn_train.log", TENSORFLOW, 2, NAMED, "oneDNN custom operations are on"),
    # grep -n 'reorder.*attr-scratchpad:user' | head -1 -> 9; the logs print no program line
    (S / "convnet_nchw_infer.log", PYTORCH, 9, SHAPE, "attr-scratchpad:user"),
    (P / "pytorch_resnet18_cl_b16_train.log", PYTORCH, 8, SHAPE, "attr-scratchpad:user"),
    # grep -n SyncActivityProfilerHandler -> 1 (Kineto's profiler_start)
    (S / "profile_bf16_train.log", PYTORCH, 1, NAMED, "SyncActivityProfilerHandler.cpp"),
    # public logs (sources in the corpus README); TF 2.3: grep -n cdba -> 5, a reorder from HWIO
    (CORPUS / "07_dnnl1x_tf23_osx_backward_data.log", TENSORFLOW, 5, SHAPE, "blocked:cdba"),
    # TF 2.12: grep -n gemm_api -> 1
    (CORPUS / "15_onednn2x_tf_opt_gemm_api_markdown_bold.log", TENSORFLOW, 1, SHAPE, "gemm_api"),
    # PyTorch on AArch64: grep -n scratchpad:user -> 8, a reorder
    (CORPUS / "21_onednn3_3_pytorch_aarch64_header_truncated.log", PYTORCH, 8, SHAPE, "reorder"),
]  # fmt: skip


@pytest.mark.parametrize("path, name, lineno, kind, word", DETECTED, ids=lambda v: str(v)[-40:])
def test_the_producer_and_the_line_that_told(
    path: Path, name: str, lineno: int, kind: str, word: str
) -> None:
    p = analysed(path).producer
    assert p.name == name, p.to_json()
    first = p.clues[0]
    assert (first.path, first.line, first.kind) == (str(path), lineno, kind)
    assert word in line(path, lineno)
    assert all(c.producer == name for c in p.clues) and not p.others


def test_every_clue_of_a_tensorflow_log() -> None:
    """keras_cnn_train.log: two program lines (2: port.cc, 3: cpu_feature_guard.cc), the
    header (version at 7, threadpool with a graph backend), the first reorder from cdba (16)
    and the first gemm_api line (27), each found with grep -n."""
    p = analysed(S / "keras_cnn_train.log").producer
    assert [(c.kind, c.line) for c in p.clues] == [
        (NAMED, 2),
        (NAMED, 3),
        (SHAPE, 7),
        (SHAPE, 16),
        (SHAPE, 27),
    ]
    assert "cdba" in line(S / "keras_cnn_train.log", 16)
    assert ",gemm_api," in line(S / "keras_cnn_train.log", 27)
    assert not p.onednn_ops_off


@pytest.mark.parametrize("path", sorted((S / "legacy").glob("*.log")), ids=lambda p: p.name)
def test_a_cpp_program_is_named_by_nothing(path: Path) -> None:
    """verbose_probe.cpp prints OpenMP headers, no reorder attributes, no program line that
    names a framework: fixes in oneDNN's own terms."""
    p = analysed(path).producer
    assert p.name == ONEDNN and not p.clues and not p.others
    assert p.said_by == "no line names the program that made it"


def test_a_trace_beside_the_log_names_pytorch() -> None:
    log = load([str(S / "profile_nchw_infer.log"), str(S / "profile_nchw_infer.trace.json")])
    p = detect_producer(log)
    assert p.name == PYTORCH
    assert (p.clues[0].why, p.clues[0].line) == ("a PyTorch profiler trace", 0)
    assert p.clues[0].path.endswith("profile_nchw_infer.trace.json")


def test_evidence_for_two_programs_names_neither(tmp_path: Path) -> None:
    """A TensorFlow line (keras_cnn_train.log:3) and a PyTorch warning in one log: unknown."""
    keras = line(S / "keras_cnn_train.log", 3)
    torch_warning = (
        "/usr/lib/python3/site-packages/torch/nn/modules/conv.py:456: UserWarning: "
        "Plan failed with a cudnnException"
    )
    log = tmp_path / "mixed.log"
    log.write_text(f"{keras}\n{torch_warning}\n" + (S / "convnet_nchw_infer.log").read_text())
    p = detect_producer(load([str(log)]))
    assert p.name == ONEDNN and not p.clues
    assert {c.producer for c in p.others} == {PYTORCH, TENSORFLOW}
    assert p.said_by == "the inputs point at PyTorch and TensorFlow"


def test_tensorflow_with_its_onednn_ops_off() -> None:
    """TF_ENABLE_ONEDNN_OPTS=0: 44 exec lines (4 a pass), all gemm_api (grep -c ',exec,' and
    grep -c ',gemm_api,'), and no 'custom operations are on' line."""
    path = P / "tensorflow_cnn_noopts_infer.log"
    text = path.read_text()
    assert text.count(",exec,") == text.count(",gemm_api,") == 44
    a = analysed(path)
    assert a.producer.onednn_ops_off
    f = next(f for f in a.findings if f.rule == "tiny-primitives")
    assert f.fix.startswith("This log's only oneDNN calls are gemm_api lines")
    assert "`TF_ENABLE_ONEDNN_OPTS=1`" in f.fix
    assert not analysed(P / "tensorflow_cnn_infer.log").producer.onednn_ops_off


# -- fixes in each producer's terms ---------------------------------------------------------

#: Logs of each producer whose findings must all speak its terms.
BY_PRODUCER = {
    OPENVINO: sorted(P.glob("openvino_*.log")),
    TENSORFLOW: [*sorted(P.glob("tensorflow_*.log")), S / "keras_cnn_train.log"],
    PYTORCH: [S / "convnet_nchw_infer.log", S / "lstm_infer.log", S / "resnet18_nchw_train.log",
              S / "isa_sse41_infer.log", P / "pytorch_resnet18_cl_b16_train.log"],
    ONEDNN: sorted((S / "legacy").glob("onednn-3*.log")),
}  # fmt: skip


def _oneDNN_rules() -> list[FixedByProducer]:
    reg = Registry()
    add_entry_points(reg)
    rules = [e.make() for e in reg.entries.values()]
    return [r for r in rules if isinstance(r, FixedByProducer)]


def test_every_onednn_rule_says_its_fix_per_producer() -> None:
    rules = _oneDNN_rules()
    # DL001-DL013 but cache-miss-steady-state, unstable-timing and low-efficiency
    assert sorted(r.code for r in rules) == [f"DL{i:03d}" for i in (1, 2, 3, 4, 5, 7, 8, 9, 12, 13)]
    for rule in rules:
        assert rule.fixes, rule.name
        for _, fix in rule.fixes:
            for producer in PRODUCERS:
                text = fix.text(producer)
                bad = [t for t in FOREIGN_TERMS[producer] if t in text]
                assert not bad, f"{rule.name} for {producer} says {bad}: {text}"
        explained = rule.describe()
        labels = ("PyTorch", "TensorFlow", "OpenVINO", "oneDNN")
        assert all(f"\n{label}: " in explained or f"  {label}: " in explained for label in labels)


@pytest.mark.parametrize("producer", list(BY_PRODUCER))
def test_each_fix_shown_is_in_the_producers_terms(producer: str) -> None:
    shown = 0
    for path in BY_PRODUCER[producer]:
        a = analysed(path)
        assert a.producer.name == producer, path
        for f in a.findings:
            if f.rule not in {r.name for r in _oneDNN_rules()}:
                continue
            shown += 1
            bad = [t for t in FOREIGN_TERMS[producer] if t in f.fix]
            assert not bad, f"{path.name} {f.rule}: {bad} in {f.fix}"
            tail = (
                f"[{a.producer.label}, told by {a.producer.clues[0].where}]"
                if a.producer.known
                else "[oneDNN's own API: no line names the program that made it]"
            )
            assert f.fix.endswith(tail), f.fix
            assert f.data["producer"]["name"] == producer
    assert shown >= 3, f"only {shown} findings of {producer} logs"


def test_no_torch_in_an_openvino_report() -> None:
    from typer.testing import CliRunner

    from dnnlens.cli import app

    for path in BY_PRODUCER[OPENVINO]:
        out = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"]).stdout
        assert "torch" not in out and "channels_last" not in out, path.name


# -- the fixes the recordings support -------------------------------------------------------


def _count(path: Path, pattern: str) -> int:
    return len(re.findall(pattern, path.read_text(), re.M))


def test_openvino_nhwc_input_removes_the_input_reorder() -> None:
    """f32: the input's abcd->acdb reorder 1x8x32x32 runs in each of the 11 inferences
    (grep -c 'reorder.*abcd::f0 dst:f32::blocked:acdb::f0.*1x8x32x32'); declared NHWC with
    PrePostProcessor, never (the one reorder left is the weight's, 16x8x3x3, once)."""
    pattern = r"exec,cpu,reorder,.*src:f32::blocked:abcd::f0 dst:f32::blocked:acdb::f0,.*1x8x32x32"
    assert _count(P / "openvino_cnn_f32_infer.log", pattern) == 11
    assert _count(P / "openvino_cnn_nhwc_f32_infer.log", pattern) == 0
    assert _count(P / "openvino_cnn_nhwc_f32_infer.log", r",exec,cpu,reorder,") == 1
    nhwc = analysed(P / "openvino_cnn_nhwc_f32_infer.log").reorders
    assert list(nhwc["tensor"]) == ["weight"] and not nhwc["steady"].any()


def test_openvino_weights_as_constants_are_reordered_once() -> None:
    """Constants: the 16x8x3x3 weight reorder once in 11 inferences; given as a model input,
    in every one (grep -c). weight-reorder-per-iteration fires on the second only, in
    OpenVINO's terms."""
    pattern = r",exec,cpu,reorder,.*,16x8x3x3,"
    assert _count(P / "openvino_cnn_f32_infer.log", pattern) == 1
    assert _count(P / "openvino_weights_as_inputs_infer.log", pattern) == 11
    rule = "weight-reorder-per-iteration"
    assert not [f for f in analysed(P / "openvino_cnn_f32_infer.log").findings if f.rule == rule]
    f = next(f for f in analysed(P / "openvino_weights_as_inputs_infer.log").findings
             if f.rule == rule)  # fmt: skip
    assert f.data["weight_reorders"] == 1 and "Constant nodes" in f.fix


def test_openvino_f32_precision_removes_the_dtype_conversion() -> None:
    """Default precision on this AVX-512 BF16 machine: the input reorder converts f32 to bf16
    in every inference (grep 'src:f32::blocked:abcd::f0 dst:bf16': 11 of 1x8x32x32, and the
    weight 16x8x3x3 once); at INFERENCE_PRECISION_HINT f32 no reorder converts the type."""
    to_bf16 = r"src:f32::blocked:abcd::f0 dst:bf16.*,1x8x32x32,"
    assert _count(P / "openvino_cnn_infer.log", to_bf16) == 11
    assert _count(P / "openvino_cnn_f32_infer.log", r"dst:bf16") == 0
    f = next(f for f in analysed(P / "openvino_cnn_infer.log").findings
             if f.rule == "dtype-conversion")  # fmt: skip
    assert f.data["conversions"] == ["f32->bf16"] and "INFERENCE_PRECISION_HINT" in f.fix
    assert not [
        f for f in analysed(P / "openvino_cnn_f32_infer.log").findings
        if f.rule == "dtype-conversion"
    ]  # fmt: skip


def test_tensorflow_frozen_weights_are_reordered_once() -> None:
    """TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1: three reorders in 11 passes (grep -c reorder), each
    weight once (16x8x3x3 and 32x16x3x3 from cdba, the dense weight from ba); without it,
    none: oneDNN reads the HWIO weights as they are."""
    frozen = P / "tensorflow_cnn_frozen_infer.log"
    assert _count(frozen, r",exec,cpu,reorder,") == 3
    assert _count(frozen, r",exec,cpu,reorder,.*src:f32::blocked:cdba::f0") == 2
    assert _count(P / "tensorflow_cnn_infer.log", r",exec,cpu,reorder,") == 0


def test_tensorflow_fuses_under_tf_function() -> None:
    """Conv2D(activation='relu') in a tf.function: one convolution with a ReLU post-op per
    pass, 22 in 11 passes (two convolutions), and no separate eltwise line."""
    path = P / "tensorflow_cnn_infer.log"
    assert _count(path, r",exec,cpu,convolution,.*attr-post-ops:eltwise_relu") == 22
    assert _count(path, r",exec,cpu,eltwise,") == 0


def test_a_larger_batch_amortises_the_weight_reorders() -> None:
    """The Keras CNN at batch 4 (keras_cnn_train) and 16: 5 weight reorders a step in both,
    8.6% and 3.0% of the typical step; resnet18 in channels_last: 59, 47% and 26% (hand
    counts in tests/test_training_rules.py), the shares the fix texts quote."""
    small = analysed(S / "keras_cnn_train.log")
    large = analysed(P / "tensorflow_keras_fit_b16_train.log")
    shares = []
    for a in (small, large):
        f = next(f for f in a.findings if f.rule == "weight-reorder-training")
        assert f.data["weight_reorders_per_step"] == 5
        shares.append(f.data["share"])
    assert shares == [pytest.approx(0.086173, abs=1e-6), pytest.approx(0.030448, abs=1e-6)]
    shares = []
    for path in (S / "resnet18_cl_train.log", P / "pytorch_resnet18_cl_b16_train.log"):
        f = next(f for f in analysed(path).findings if f.rule == "weight-reorder-training")
        assert f.data["weight_reorders_per_step"] == 59
        assert "larger batch" in f.fix and "47%" in f.fix and "26%" in f.fix
        shares.append(f.data["share"])
    # resnet18 channels_last: 47% of the step at batch 4, 26% at 16 (hand counts beside)
    assert shares == [pytest.approx(0.472237, abs=1e-6), pytest.approx(0.257072, abs=1e-6)]


def test_pytorch_channels_last_and_freezing_as_docs_rules_md_says() -> None:
    """The PyTorch rows of the table in docs/rules.md: NCHW inference has 7 activation
    reorders a pass, channels_last none (only its 4 weights); resnet18 training 104 round
    trips a step in NCHW, no activation reorder in channels_last; with torch.compile and
    freezing no reorder runs in every pass, and ReLU and the residual add are post-ops
    (grep -c 'attr-post-ops:eltwise_relu' = 36, 'attr-post-ops:sum+eltwise_relu' = 12)."""

    def per_pass(path: Path, prefix: str) -> float:
        r = analysed(path).reorders
        mine = r[r["role"].astype(str).str.startswith(prefix) & r["steady"].astype(bool)]
        return float(mine["per_iteration"].sum())

    assert per_pass(S / "convnet_nchw_infer.log", "activation") == 7
    assert per_pass(S / "convnet_cl_infer.log", "activation") == 0
    assert per_pass(S / "convnet_cl_infer.log", "weight") == 4
    assert per_pass(S / "resnet18_nchw_train.log", "activation_round_trip") == 104
    assert per_pass(S / "resnet18_cl_train.log", "activation") == 0
    frozen = S / "compile_freezing_infer.log"
    assert per_pass(frozen, "") == 0
    assert _count(frozen, r",exec,cpu,convolution,.*attr-post-ops:eltwise_relu,") == 36
    assert _count(frozen, r",exec,cpu,convolution,.*attr-post-ops:sum\+eltwise_relu,") == 12
