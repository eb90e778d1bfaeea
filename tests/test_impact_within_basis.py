"""No finding claims more than the iteration or step it is measured against.

Every finding's impact is a part of its basis (``Finding.basis``: the typical iteration,
the trace's typical step, the mean steady pass for noise, the pass with its creations for
cache misses), so ``share_of_iteration`` is at most 1 on every real recording the project
ships: each sample log, each profiler trace (alone, and with its log for the RetinaNet
recordings), each legacy log. The reports are those other files check too
(``tests/shared_analyses.py``): made once for all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_analyses import GROUP, analyze_json

pytestmark = pytest.mark.xdist_group(GROUP)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
INPUTS = sorted(
    str(p.relative_to(ROOT))
    for pattern in ("*.log", "*/*.log", "*/*.log.gz", "*.trace.json", "*/*.trace.json.gz")
    for p in SAMPLES.glob(pattern)
)
#: each RetinaNet trace with the log recorded beside it (tests/test_retinanet_verdicts.py)
WITH_LOGS = [
    (str(p.relative_to(ROOT)), str(p.relative_to(ROOT)).replace(".trace.json.gz", ".log.gz"))
    for p in sorted((SAMPLES / "retinanet").glob("*.trace.json.gz"))
]


@pytest.mark.parametrize("paths", [(p,) for p in INPUTS] + WITH_LOGS, ids="+".join)
def test_no_finding_exceeds_its_basis(paths: tuple[str, ...]) -> None:
    result = analyze_json(*(ROOT / p for p in paths))
    assert result.exit_code in (0, 2), result.stderr
    doc = result.doc()
    for f in doc["findings"]:
        share = f.get("share_of_iteration")
        impact = f.get("impact_ms_per_iteration")
        assert impact is None or impact >= 0, f
        assert share is None or share <= 1.0 + 1e-9, (f["rule"], f["basis"], share)
