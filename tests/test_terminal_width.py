"""The terminal report fits the width it is given, and never splits a word.

Every sample log's report (``--details`` too) is rendered at ``COLUMNS=80``: no line may be
longer than 80, and every word of it must be a word of the same report laid out 1,000
columns wide (or a word cut with an ellipsis): a word broken across two lines ("reorde"
then "r") is not one.

Each log is read and analysed once (its rules applied, as ``analyze`` does) and rendered at
both widths the way ``analyze`` renders it: what is checked is the layout, not the reading.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from dnnlens.app.session import Outcome, Settings, analyse
from dnnlens.reading import load
from dnnlens.report.renderers import render_analysis, render_runs
from dnnlens.report.text_layout import Grid, unique_suffixes, wrap

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted(str(p) for p in [*(ROOT / "sample_logs").glob("*.log"),
                               *(ROOT / "sample_logs").glob("legacy/*.log")])  # fmt: skip


@cache
def outcome(log: str) -> Outcome:
    """``log`` read and analysed once, for every width and layout it is rendered at."""
    analysed = analyse(load([log]), Settings())
    assert analysed.log.scans, log  # a log without a scan is refused before any report
    return analysed


def report(log: str, columns: int, details: bool, capsys, monkeypatch) -> str:
    """The terminal report of ``log`` on a standard output ``COLUMNS`` wide."""
    monkeypatch.setenv("COLUMNS", str(columns))
    done = outcome(log)
    capsys.readouterr()
    if len(done.analyses) > 1:
        render_runs(done.analyses, done.runs, "terminal", None, done.log, details=details)
    else:
        render_analysis(done.analyses[0], "terminal", None, details=details)
    return capsys.readouterr().out


def words(text: str) -> set[str]:
    return set(re.findall(r"\S+", text))


@pytest.mark.parametrize("log", LOGS, ids=[Path(p).name for p in LOGS])
@pytest.mark.parametrize("details", [False, True], ids=["verdict", "details"])
def test_eighty_columns(log: str, details: bool, capsys, monkeypatch) -> None:
    narrow = report(log, 80, details, capsys, monkeypatch)
    wide = words(report(log, 1000, details, capsys, monkeypatch))
    assert narrow.strip(), "no report"
    for line in narrow.splitlines():
        assert len(line) <= 80, line
    for word in words(narrow):
        assert word in wide or "…" in word, f"split or made-up word {word!r}"


def test_unique_suffixes() -> None:
    got = unique_suffixes(["runs/a/nchw/run.log", "runs/b/cl/run.log", "other.log"])
    assert got == {"runs/a/nchw/run.log": "nchw/run.log", "runs/b/cl/run.log": "cl/run.log",
                   "other.log": "other.log"}  # fmt: skip
    assert unique_suffixes(["x/run.log", "y/x/run.log"])["x/run.log"] == "x/run.log"


def test_wrap_never_splits_a_word() -> None:
    text = "a " + "b" * 200 + " c"
    lines = wrap(text, 40)
    assert all(len(x) <= 40 for x in lines)
    assert "…" in lines[1] and lines[1].startswith("bbb") and lines[1].endswith("bbb")


def test_grid_keeps_numbers_and_cuts_text() -> None:
    g = Grid("t", [("name", "flex"), ("ms", "right")])
    g.add_row("x" * 100, "1,234.567")
    lines = [t for t, _ in g.lines(30)]
    assert all(len(x) <= 30 for x in lines)
    assert lines[-1].endswith("1,234.567") and "…" in lines[-1]
