"""Verdicts that were wrong on real inputs, each pinned on the input that showed it.

* a log made with ``ONEDNN_VERBOSE=dispatch`` (sample_logs/dispatch_only_infer.log, made by
  scripts/make_sample_logs.py) printed the header and only ``create:dispatch`` lines; it
  was told "the framework used its own kernels";
* ``--skip-iterations 50`` on an 11-pass log left nothing, and was told there were no
  oneDNN lines;
* one graph line cut before its end (the pasted line of
  tests/data/corpus/33_onednn_v1_graph_partition_exec_quoted.log, cut as pasted logs are)
  was told "not even a header: verbose was off", though its verbose marker shows verbose
  was on;
* an eltwise-only log (the header and eltwise exec lines of the real
  sample_logs/legacy/onednn-3.2.0.log) got low-efficiency, which is about convolutions
  and matmuls;
* a PyTorch profiler table alone (sample_logs/profile_lstm_infer.table.txt) was told it
  had no oneDNN lines and that verbose was off, though a table is framework input that the
  framework view reads.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.rules import RuleOptions
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT / "tests" / "data" / "corpus"


def findings(path: Path) -> dict[str, object]:
    analysis = Analysis(load([str(path)]))
    return {f.rule: f for f in apply_rules(analysis, RuleOptions(search_config=False))}


def test_a_dispatch_only_log_is_named_for_what_it_is() -> None:
    # grep -c ",create:dispatch," -> 26 diagnostic lines, no create or exec line
    log = load([str(SAMPLES / "dispatch_only_infer.log")])
    assert len(log.diagnostics) == 26 and len(log.events) == 0
    f = findings(SAMPLES / "dispatch_only_infer.log")["no-onednn-lines"]
    assert "only dispatch diagnostics" in f.message and "ONEDNN_VERBOSE=1" in f.message
    assert "its own kernels" not in f.message
    assert f.data["diagnostic_only"] is True
    line = (SAMPLES / "dispatch_only_infer.log").read_text().splitlines()[f.evidence[0].line - 1]
    assert ",create:dispatch," in line


def test_skipping_every_pass_is_a_usage_error() -> None:
    result = CliRunner().invoke(
        app, ["analyze", str(SAMPLES / "convnet_nchw_infer.log"), "--skip-iterations", "50"]
    )
    assert result.exit_code == 2
    assert "the log has 11 passes, so nothing is left" in result.stderr
    assert "no-onednn-lines" not in result.output


def test_a_malformed_verbose_line_says_verbose_was_on(tmp_path: Path) -> None:
    line = (CORPUS / "33_onednn_v1_graph_partition_exec_quoted.log").read_text().splitlines()[0]
    cut = tmp_path / "cut_graph_line.log"
    cut.write_text(line[: line.index(" in1_")] + "\n")  # cut in the middle of its tensors
    f = findings(cut)["no-onednn-lines"]
    assert "carry a verbose marker (so verbose was on)" in f.message
    assert "verbose was off" not in f.message


def test_low_efficiency_judges_convolutions_and_matmuls_only(tmp_path: Path) -> None:
    src = (SAMPLES / "legacy" / "onednn-3.2.0.log").read_text().splitlines()
    keep = [x for x in src if ",info," in x or (",exec," in x and ",eltwise," in x)]
    assert sum(",exec," in x for x in keep) == 3  # grep -c ',exec,.*,eltwise,'
    log = tmp_path / "eltwise_only.log"
    log.write_text("\n".join(keep) + "\n")
    got = findings(log)
    assert "low-efficiency" not in got
    # on the whole log the rule still looks at its convolutions
    whole = Analysis(load([str(SAMPLES / "legacy" / "onednn-3.2.0.log")]))
    assert whole.summary.exec_count == 47


def test_a_profiler_table_alone_is_framework_input_not_a_missing_log() -> None:
    table = SAMPLES / "profile_lstm_infer.table.txt"
    assert "no-onednn-lines" not in findings(table)
    result = CliRunner().invoke(app, ["analyze", str(table), "--width", "100"])
    assert result.exit_code == 0, result.output
    # wc -l: 25 lines: three rules, the header, 19 op rows (lines 4-22, grep -c aten::),
    # the CPU total and a blank line
    assert "profile_lstm_infer.table.txt: 25 lines, 0 parsed, 25 foreign" in result.output
    assert "profiler table at line 1: 19 rows" in result.output
    assert "verbose was off" not in result.output
