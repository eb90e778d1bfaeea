"""The Python API and the iteration marker against hostile arguments: each refused with the
command line's kind of one-line message (:class:`dnnlens.InputError`), never an empty report,
an internal error or a hang."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens
from dnnlens.cli import app

NCHW = Path(__file__).resolve().parents[1] / "sample_logs" / "convnet_nchw_infer.log"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": -1}, "window=-1: expected an integer >= 0 (as --window)"),
        ({"window": "x"}, "window='x': expected an integer >= 0"),
        ({"skip_iterations": -5}, "skip_iterations=-5: expected an integer >= 0"),
        ({"skip_iterations": 1.5}, "skip_iterations=1.5: expected an integer"),
        ({"skip_iterations": True}, "skip_iterations=True: expected an integer"),
        ({"jobs": -1}, "jobs=-1: expected an integer >= 0 (as -j)"),
        ({"combine": "yes"}, "combine='yes': expected True or False"),
        ({"select": [1]}, "select=[1]: expected a name or a list of names"),
        ({"iteration_marker": 5}, "iteration_marker=5: expected a regex"),
        ({"iteration_marker": "(?=x)"}, "iteration_marker '(?=x)': bad regular expression"),
        ({"config": 3}, "config=3: expected a path"),
    ],
)
def test_a_bad_argument_is_an_input_error(kwargs: dict, message: str) -> None:
    with pytest.raises(dnnlens.InputError) as err:
        dnnlens.analyze(NCHW, **kwargs)
    assert message in str(err.value)


@pytest.mark.parametrize("paths", [123, None, b"x.log", [], [NCHW, 7]])
def test_paths_that_are_not_paths(paths: object) -> None:
    with pytest.raises(dnnlens.InputError):
        dnnlens.analyze(paths)  # type: ignore[arg-type]


def test_one_name_is_one_name_not_its_characters() -> None:
    """``select="reorder-overhead"`` selects that rule (it read 'r', 'e', ... one by one)."""
    report = dnnlens.analyze(NCHW, select="reorder-overhead")
    assert [f.rule for f in report.findings] == ["reorder-overhead"]


def test_to_dict_is_a_copy() -> None:
    report = dnnlens.analyze(NCHW)
    doc = report.to_dict()
    count = len(doc["findings"])
    doc["findings"].clear()
    doc["summary"]["exec_count"] = -1
    again = report.to_dict()
    assert len(again["findings"]) == count and again["summary"]["exec_count"] == 165


def test_diff_and_project_check_their_arguments() -> None:
    with pytest.raises(dnnlens.InputError, match="base=1: expected a path"):
        dnnlens.diff(1, NCHW)  # type: ignore[arg-type]
    with pytest.raises(dnnlens.InputError, match="basis=2"):
        dnnlens.diff(NCHW, NCHW, basis=2)  # type: ignore[arg-type]
    one = dnnlens.project(NCHW, changes="remove:reorders").to_dict()
    assert [c["change"] for c in one["changes"]] == ["remove:reorders"]


def test_a_catastrophic_marker_is_matched_in_linear_time(tmp_path: Path) -> None:
    """``(a+)+$`` on a line of 30,000 ``a`` and a ``b`` backtracks for ever in Python's
    ``re`` (and a signal cannot stop one match); RE2 answers at once, and the line matches
    nothing. The subprocess's timeout only keeps a regression from hanging the suite."""
    log = tmp_path / "run.log"
    log.write_text("a" * 30_000 + "b\n" + NCHW.read_text())
    done = subprocess.run(
        [sys.executable, "-m", "dnnlens", "analyze", str(log), "--iteration-marker", "(a+)+$"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "--iteration-marker '(a+)+$' matches no line" in " ".join(done.stdout.split())


def test_a_marker_that_matches_nothing_is_a_note_and_passes_are_found(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(NCHW), "--iteration-marker", "zzzz"])
    assert result.exit_code == 0, result.output
    assert "11 passes (4 warm-up)" in result.stdout  # as without a marker (hand count)
    assert "--iteration-marker 'zzzz' matches no line of" in " ".join(result.stdout.split())


def test_a_marker_re2_cannot_take_is_one_line() -> None:
    result = CliRunner().invoke(app, ["analyze", str(NCHW), "--iteration-marker", r"(a)\1"])
    assert result.exit_code == 2
    assert "bad regular expression (RE2 syntax" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_a_long_chain_of_one_operator_is_checked_and_run_without_recursion(
    tmp_path: Path, op: str
) -> None:
    """``1+1+...+1`` of 500 terms (999 characters, one level deep) is inside the documented
    limits (10,000 characters, 100 levels): it raised RecursionError, an internal error."""
    chain = op.join(["1"] * 500)
    expected = {"+": 500, "-": -498, "*": 1}[op]
    rules = tmp_path / "chain.yaml"
    rules.write_text(
        "rules:\n"
        "  - name: long-chain\n    code: T001\n    severity: info\n"
        f"    message: 'the chain is {{value}}'\n"
        f"    metrics:\n      value: {chain}\n"
        f"    when: value == {expected}\n"
        "  - name: long-chain-rows\n    code: T002\n    severity: info\n"
        "    message: 'rows'\n"
        f"    where: {chain} == {expected}\n"
        "    when: count() > 0\n"
    )
    result = CliRunner().invoke(
        app, ["analyze", str(NCHW), "--rules", str(rules), "-q", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    fired = {f["rule"]: f["message"] for f in __import__("json").loads(result.stdout)["findings"]}
    assert fired["long-chain"] == f"the chain is {expected}"
    assert "long-chain-rows" in fired
