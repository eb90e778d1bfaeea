"""--skip-iterations leaves out warm-up passes, counted against the sample log's passes.

convnet_nchw_infer.log ran 11 passes (sample_logs/MANIFEST.json) of 15 exec lines each:
165 exec lines in all (tests/test_sample_logs.py), with a create line before each exec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

NCHW = Path(__file__).resolve().parent.parent / "sample_logs" / "convnet_nchw_infer.log"


@pytest.mark.parametrize(("skip", "execs"), [(0, 165), (1, 150), (10, 15)])
def test_skip_iterations_counts(skip: int, execs: int) -> None:
    result = CliRunner().invoke(
        app, ["analyze", str(NCHW), "--format", "json", "--skip-iterations", str(skip)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["summary"]["exec_count"] == execs
    if skip:
        assert doc["skipped"]["found"] == 11
        assert doc["skipped"]["events_dropped"] == 2 * 15 * skip  # create + exec per primitive
    # the line accounting still covers the whole file
    assert doc["inputs"][0]["lines"] == 338


def test_skipping_every_pass_leaves_nothing_and_says_so() -> None:
    result = CliRunner().invoke(app, ["analyze", str(NCHW), "--skip-iterations", "11"])
    assert result.exit_code == 2
    assert "the log has 11 passes, so nothing is left to analyse" in result.stderr
