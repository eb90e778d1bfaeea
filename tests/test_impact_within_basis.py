"""No finding claims more than the iteration or step it is measured against.

Every finding's impact is a part of its basis (``Finding.basis``: the typical iteration,
the trace's typical step, the mean steady pass for noise, the pass with its creations for
cache misses), so ``share_of_iteration`` is at most 1 on every real recording the project
ships: each sample log, each profiler trace (alone and with its log), each legacy log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
INPUTS = sorted(
    str(p.relative_to(ROOT))
    for pattern in ("*.log", "*/*.log", "*/*.log.gz", "*.trace.json", "*/*.trace.json.gz")
    for p in SAMPLES.glob(pattern)
)
runner = CliRunner()


@pytest.mark.parametrize("path", INPUTS)
def test_no_finding_exceeds_its_basis(path: str) -> None:
    result = runner.invoke(app, ["analyze", str(ROOT / path), "-f", "json", "-q"])
    assert result.exit_code in (0, 2), result.output
    doc = json.loads(result.stdout)
    for f in doc["findings"]:
        share = f.get("share_of_iteration")
        impact = f.get("impact_ms_per_iteration")
        assert impact is None or impact >= 0, f
        assert share is None or share <= 1.0 + 1e-9, (f["rule"], f["basis"], share)
