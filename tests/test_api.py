"""``dnnlens.analyze``, ``diff`` and ``project``: the commands' own reports, from Python."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens
from dnnlens.cli import app

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
NCHW = SAMPLES / "convnet_nchw_infer.log"
CL = SAMPLES / "convnet_cl_infer.log"


def _cli_json(*args: str) -> dict:
    """The command's JSON report, run in this process (the comparison is of documents, not
    of processes)."""
    done = CliRunner().invoke(app, [*args, "--format", "json"])
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.stdout)


@cache
def _nchw() -> dnnlens.Report:
    """The NCHW sample analysed once with the defaults; the tests only read it."""
    return dnnlens.analyze(NCHW)


def _lines_with(path: Path, text: str) -> int:
    return sum(text in line for line in path.read_text().splitlines())


def test_the_package_lists_its_entry_points():
    for name in ("analyze", "diff", "project", "capture", "Report", "Finding", "InputError"):
        assert name in dir(dnnlens)


def test_importing_dnnlens_loads_no_analysis():
    code = (
        "import sys, dnnlens\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pandas', 'dnnlens.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['dnnlens._version']"


def test_analyze_is_the_json_report():
    report = _nchw()
    assert report.to_dict() == _cli_json("analyze", str(NCHW))


def test_analyze_finds_what_the_command_finds():
    report = dnnlens.analyze(str(NCHW))
    # the terminal report of this log opens with these verdicts, highest cost first
    # (reorder-overhead folded into the round trips: rules/duplicates.py)
    assert [f.rule for f in report.findings] == [
        "layout-round-trip",
        "weight-reorder-per-iteration",
    ]
    impacts = [f.impact_ms_per_iteration for f in report.findings]
    assert impacts == sorted(impacts, reverse=True)
    first = report.findings[0]
    assert first.severity == "warning" and first.fix
    assert 0 < first.share_of_iteration < 1
    assert all(e.path == str(NCHW) and e.line > 0 for e in first.evidence)


def test_tables_hold_the_logs_rows():
    report = _nchw()
    events = report.events
    # every ``primitive,exec`` line of the log is one exec event (counted with grep)
    assert int((events["operation"] == "exec").sum()) == _lines_with(NCHW, ",primitive,exec,")
    assert len(report.primitives) == len(report.to_dict()["primitives"])
    assert report.framework_ops.empty  # no profiler trace beside the log
    # ... yet it has the columns a trace's table has, so code written for one runs on both
    from dnnlens.app.api import FRAMEWORK_OP_COLUMNS

    assert tuple(report.framework_ops.columns) == FRAMEWORK_OP_COLUMNS


def test_framework_ops_of_a_trace_have_the_documented_columns():
    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    report = dnnlens.analyze(
        [samples / "profile_nchw_infer.log", samples / "profile_nchw_infer.trace.json"]
    )
    ops = report.framework_ops
    assert len(ops) > 0
    assert tuple(ops.columns) == tuple(report.to_dict()["framework_ops"][0])


def test_several_runs_are_reports_of_their_own():
    report = dnnlens.analyze([NCHW, CL])
    assert report.to_dict() == _cli_json("analyze", str(NCHW), str(CL))
    assert len(report.runs) == 2
    assert sum(len(r.findings) for r in report.runs) == len(report.findings)
    assert set(report.primitives["run"]) == {r.to_dict()["run_name"] for r in report.runs}


def test_options_reach_the_analysis():
    skipped = dnnlens.analyze(NCHW, skip_iterations=3)
    assert skipped.to_dict() == _cli_json("analyze", str(NCHW), "--skip-iterations", "3")
    only = dnnlens.analyze(NCHW, select=["reorder-overhead"])
    assert [f.rule for f in only.findings] == ["reorder-overhead"]


def test_the_html_report_shows_inline():
    html = _nchw()._repr_html_()
    assert html.startswith("<iframe srcdoc=") and "reorder" in html


def test_input_errors_are_one_line(tmp_path):
    with pytest.raises(dnnlens.InputError) as caught:
        dnnlens.analyze(tmp_path / "missing.log")
    assert "\n" not in str(caught.value)
    with pytest.raises(dnnlens.InputError, match="skip-iterations 99"):
        dnnlens.analyze(NCHW, skip_iterations=99)


def test_diff_and_project_are_their_json_reports():
    d = dnnlens.diff(NCHW, CL)
    assert d.to_dict() == _cli_json("diff", str(NCHW), str(CL))
    assert "|" in d._repr_markdown_()
    p = dnnlens.project(NCHW)
    assert p.to_dict() == _cli_json("project", str(NCHW))
    with pytest.raises(dnnlens.InputError, match="unknown change"):
        dnnlens.project(NCHW, changes=["remove:everything"])
