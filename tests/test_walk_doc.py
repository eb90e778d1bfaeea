"""docs/walk.md follows one real line through every room: what it says of that line stays
true (the line quoted is line 10 of the sample, and the counts are the file's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis, AnalysisOptions
from dnnlens.reading import read

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "walk.md").read_text(encoding="utf-8")
LOG = ROOT / "sample_logs" / "convnet_nchw_infer.log"
LINES = LOG.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return Analysis(read([str(LOG)], jobs=1), AnalysisOptions())


def test_the_line_quoted_is_line_10_of_the_sample() -> None:
    assert LINES[9] in DOC
    assert LINES[9].endswith(",0.00708008")


def test_every_line_is_accounted_for_as_the_doc_counts(analysis: Analysis) -> None:
    # hand count: 338 lines, one of them not oneDNN's (``grep -vc '^onednn_verbose'``)
    foreign = sum(1 for line in LINES if not line.startswith("onednn_verbose,"))
    assert (len(LINES), foreign) == (338, 1)
    scan = analysis.log.scans[0]
    assert (scan.lines, scan.parsed, scan.foreign, scan.malformed) == (338, 337, 1, 0)
    assert "338 = 337 + 1 + 0" in DOC


def test_line_10_is_the_row_the_doc_describes(analysis: Analysis) -> None:
    events = analysis.log.events
    row = events[events["line"] == 10].iloc[0]
    assert (row["kind"], row["impl"], row["impl_family"], row["isa"]) == (
        "reorder",
        "jit:uni",
        "jit",
        "uni",
    )
    assert row["time_ms"] == 0.00708008
    reorder = analysis.reorders[analysis.reorders["record"] == row["record"]].iloc[0]
    # hand count: the line's text (less its time) occurs once per pass
    text = LINES[9].rsplit(",", 1)[0] + ","
    assert reorder["role"] == "weight_forward"
    assert reorder["count"] == sum(1 for line in LINES if line.startswith(text)) == 11


def test_passes_and_the_typical_iteration_are_the_doc_s(analysis: Analysis) -> None:
    steady = analysis.steady
    assert (analysis.iterations.count, steady.warmup) == (11, 4)
    assert (steady.warmup_structural, steady.warmup_slow) == (1, 3)
    assert round(analysis.typical_iteration_ms, 4) == 2.0857
    assert "11 here),\ntheir warm-up (`steady`: 4 passes, 1 that creates primitives and 3" in DOC
    assert "(2.0857 ms)" in DOC
