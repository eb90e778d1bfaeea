"""The model a run ran, where its inputs name it (``summary.model`` of the JSON report,
the headline of the terminal one): each source from a real recording, the order they win
in, and a hostile name bounded and escaped."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from typer.testing import CliRunner

from dnnlens.analysis.model_name import ModelName, model_name
from dnnlens.cli import app
from dnnlens.parsers.model_lines import MAX_MODEL_CHARS, benchdnn_model
from dnnlens.parsers.torch_table import ProfilerTable
from dnnlens.parsers.torch_trace import TraceData, read_trace

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
FRAMEWORK = ROOT / "sample_logs" / "framework"
TABLES = ROOT / "sample_logs" / "framework_tables"
runner = CliRunner()


def analyze(*paths: Path, fmt: str = "json") -> str:
    out = ["-o", "-"] if fmt == "html" else []  # a page on standard output
    result = runner.invoke(app, ["analyze", *map(str, paths), "--format", fmt, *out])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def model_of(*paths: Path) -> dict | None:
    return json.loads(analyze(*paths))["summary"].get("model")


# -- benchdnn problem names ---------------------------------------------------------------


def test_benchdnn_problem_name_of_a_real_log() -> None:
    # the last line of tests/data/corpus/01_mkldnn0x_benchdnn_resnet_conv1.log (oneDNN
    # issue 359): the problem name resnet_50:conv1 of benchdnn's resnet_50 shapes file
    line = "0:PASSED __REPRO: --dir=FWD_I mb50ic3ih224oc64oh112kh7sh2ph3nresnet_50:conv1"
    assert benchdnn_model(line) == "resnet_50"
    log = CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log"
    assert model_of(log) == {"name": "resnet_50", "source": "benchdnn", "path": str(log)}


def test_a_benchdnn_line_without_a_problem_name_names_nothing() -> None:
    # tests/data/corpus/13_onednn2_7_benchdnn_header_then_errors.log: a benchdnn command
    # line with no name (``n...``) after the descriptor
    line = "$ DNNL_VERBOSE=1 ./benchdnn --conv mb1ic32ih512iw512id256oc1kh1kw1kd1ph0pw0pd0"
    assert benchdnn_model(line) is None
    assert benchdnn_model('0:PASSED __REPRO: --conv mb1ic3ih8oc8oh8kh3n"conv1"') is None
    assert model_of(CORPUS / "13_onednn2_7_benchdnn_header_then_errors.log") is None


def test_a_log_that_names_no_model_has_none() -> None:
    # sample_logs/convnet_nchw_infer.log: oneDNN's lines and "done: ..." only
    assert model_of(ROOT / "sample_logs" / "convnet_nchw_infer.log") is None


# -- PyTorch profiler traces and tables -----------------------------------------------


def test_the_outermost_module_of_a_trace_recorded_with_modules() -> None:
    # frozenbn_bad.trace.json.gz (scripts/make_traces.py, with_modules): 4 steps, each one
    # "nn.Module: Sequential_0" frame around Conv2d_0..3, FrozenBatchNorm2d_0..3, ReLU_0..3,
    # AdaptiveAvgPool2d_0, Flatten_0, Linear_0 (zcat | grep -c '"nn.Module: Sequential_0"': 4)
    trace = FRAMEWORK / "frozenbn_bad.trace.json.gz"
    assert model_of(trace) == {"name": "Sequential", "source": "trace", "path": str(trace)}


def test_a_trace_without_module_frames_names_nothing() -> None:
    # recorded without with_modules: no "nn.Module: " frame (zcat | grep -c: 0)
    assert model_of(FRAMEWORK / "plain_good.trace.json.gz") is None


def test_the_module_row_of_a_profiler_table() -> None:
    # sample_logs/framework_tables/frozenbn_bad.table.txt line 120: "nn.Module: Sequential_0
    # ... 29.94% 52.955ms", the largest CPU total of its nn.Module rows (Conv2d_3: 13.930ms)
    table = TABLES / "frozenbn_bad.table.txt"
    assert model_of(table) == {"name": "Sequential", "source": "table", "path": str(table)}


def test_a_loss_module_beside_the_model_loses_to_it() -> None:
    trace = read_trace(str(FRAMEWORK / "frozenbn_bad.trace.json.gz"))
    ops = trace.ops.copy()
    loss = ops.iloc[[0]].copy()  # a top-level frame of its own, shorter than the model's
    loss["name"], loss["cat"] = "nn.Module: CrossEntropyLoss_0", "python_function"
    loss["parent"], loss["depth"], loss["dur_us"] = -1, 0, 1.0
    ops = pd.concat([ops.astype({"name": str, "cat": str}), loss], ignore_index=True)
    with_loss = TraceData(trace.path, ops)
    assert model_name(_log(traces=[with_loss])) == ModelName("Sequential", "trace", trace.path)


# -- which source wins --------------------------------------------------------------------


def _log(traces=(), tables=(), lines=()) -> SimpleNamespace:
    framework = SimpleNamespace(traces=list(traces), tables=list(tables))
    scans = [SimpleNamespace(path=p, model_line=(n, name)) for p, n, name in lines]
    return SimpleNamespace(framework=framework, scans=scans)


def test_a_trace_wins_over_a_table_and_a_table_over_a_log_line() -> None:
    trace = read_trace(str(FRAMEWORK / "frozenbn_bad.trace.json.gz"))
    table = ProfilerTable(
        {"name": _arr(["nn.Module: Other_0"]), "cpu_total_ms": _arr([9.0])}, ["Name"],
        source="t.log", size=1,
    )  # fmt: skip
    line = [("bench.log", 7, "resnet_50")]
    assert model_name(_log([trace], [table], line)).source == "trace"
    assert model_name(_log([], [table], line)) == ModelName("Other", "table", "t.log")
    assert model_name(_log([], [], line)) == ModelName("resnet_50", "benchdnn", "bench.log")
    assert model_name(_log()) is None


def _arr(values: list) -> object:
    import numpy as np

    return np.array(values, dtype=object if isinstance(values[0], str) else float)


# -- a hostile name ---------------------------------------------------------------------


def test_a_hostile_module_name_is_bounded_and_escaped(tmp_path: Path) -> None:
    name = "nn.Module: Evil\x1b]52;c;aGk=\x07\x1b[2J" + "A" * 10_000 + "_0"
    events = [
        {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": 0,
         "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10,
         "dur": 50},
    ]  # fmt: skip
    trace = tmp_path / "evil.trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    model = model_of(trace)
    assert model is not None and len(model["name"]) == MAX_MODEL_CHARS
    assert model["name"].startswith("Evil\x1b]52")  # kept as data: JSON escapes it
    text = analyze(trace, fmt="terminal")
    assert "\x1b" not in text and "\x07" not in text
    assert "Model Evil\\x1b]52;c;aGk=\\x07\\x1b[2JAAA" in text.replace("\n", " ")
    page = analyze(trace, fmt="html")  # the same phrase heads the HTML report, escaped
    assert '<p class="sub">Model Evil\x1b]52;c;aGk=\x07\x1b[2JAAA' in page


def test_html_and_terminal_name_the_model_alike() -> None:
    """Corpus log 01 (benchdnn's resnet_50:conv1): one phrase heads both reports."""
    log = CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log"
    phrase = "Model resnet_50 (from benchdnn's problem name)"
    assert phrase in analyze(log, fmt="terminal").replace("\n", " ")
    assert '<p class="sub">Model resnet_50 (from benchdnn&#x27;s problem name);' in analyze(
        log, fmt="html"
    )


# -- a model class of its own name ------------------------------------------------------------

MODEL_NAME = ROOT / "tests" / "data" / "model_name"


def test_a_model_class_named_by_its_trace_and_table_not_by_its_log() -> None:
    """tests/data/model_name (scripts/make_model_name_recordings.py): TinyResNet trained 3
    profiled steps, ``nn.CrossEntropyLoss`` called as a module beside it. Counted by hand
    (zcat | grep -o '"nn.Module: [A-Za-z]*_[0-9]*"' | sort | uniq -c): 3 frames each of
    TinyResNet_0 and CrossEntropyLoss_0 at the top, Sequential_0, Block_0/1, Linear_0 inside;
    their durations sum to 7,853 us and 267 us, so the model is TinyResNet, not the loss.
    The table's nn.Module row of the largest CPU total is ``TinyResNet_0`` (9.750ms, 36.29%).
    The verbose log alone names nothing."""
    log = MODEL_NAME / "tinyresnet_train.log"
    trace = MODEL_NAME / "tinyresnet_train.trace.json.gz"
    table = MODEL_NAME / "tinyresnet_train.table.txt"
    assert model_of(log, trace) == {"name": "TinyResNet", "source": "trace", "path": str(trace)}
    assert model_of(table) == {"name": "TinyResNet", "source": "table", "path": str(table)}
    assert model_of(log) is None
    headline = analyze(log, trace, fmt="terminal").replace("\n", " ")
    assert headline.startswith("Model TinyResNet (from the profiler trace's modules);")


def test_fleet_names_the_model_analyze_names(tmp_path: Path) -> None:
    """The TinyResNet log and trace, built into a fleet (the trace joins its log: one run):
    ``runs.model`` is analyze's ``summary.model`` name."""
    import pytest

    pytest.importorskip("duckdb")
    out = tmp_path / "ds"
    built = runner.invoke(app, ["fleet", "build", "-w", "1", "-q", str(MODEL_NAME), "-o", str(out)])
    assert built.exit_code == 0, built.stderr
    sql = "SELECT run, model, input_count FROM runs"
    got = runner.invoke(app, ["fleet", "query", str(out), sql, "-f", "csv"])
    assert got.stdout.splitlines() == ["run,model,input_count", "tinyresnet_train,TinyResNet,3"]
