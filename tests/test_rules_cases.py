"""Every YAML case file in tests/rules/ passes, and the worked examples of docs/rules.md work
when written to disk from the page alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dnnlens.rules.testing import run_test_file

ROOT = Path(__file__).resolve().parent.parent
CASE_FILES = sorted((ROOT / "tests" / "rules").glob("*.yaml"))


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.name for p in CASE_FILES])
def test_case_file_passes(path: Path) -> None:
    results = run_test_file(str(path))
    assert results
    failed = {r.name: r.problems for r in results if not r.passed}
    assert not failed


def doc_examples(dest: Path) -> list[Path]:
    """Write every ```block whose first line is `# file: NAME` into ``dest``."""
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    written = []
    for match in re.finditer(r"```\w+\n(# file: (\S+)\n.*?)```", text, re.S):
        path = dest / match.group(2)
        path.write_text(match.group(1), encoding="utf-8")
        written.append(path)
    return written


def test_rules_written_from_the_guide_alone_work(tmp_path: Path) -> None:
    (tmp_path / "sample_logs").symlink_to(ROOT / "sample_logs")
    examples = tmp_path / "examples"
    examples.mkdir()
    written = {p.name for p in doc_examples(examples)}
    assert {"reorders_between_convs.yaml", "weight_reorders.toml", "few_channels.py"} <= written
    tests = ["reorders_between_convs.yaml", "weight_reorders_test.yaml", "few_channels_test.yaml"]
    for name in tests:
        results = run_test_file(str(examples / name))
        assert len(results) == 2
        assert all(r.passed for r in results), {r.name: r.problems for r in results}
    fired = run_test_file(str(examples / "reorders_between_convs.yaml"))[0].findings
    assert "32% of each iteration" in fired[0].message
