"""``dnnlens analyze INPUTS -f json -q`` of the shipped recordings, once per test process.

Several test files check the same JSON documents for different things (the views agree,
no finding exceeds its basis, the RetinaNet verdicts); each document is made once and
shared. Those files are one xdist group (``pytestmark = pytest.mark.xdist_group(GROUP)``,
``tests/conftest.py``), so they run in the same process and the documents are made once
per test run. A document is parsed afresh for each caller: no test sees another's edits.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from typer.testing import CliRunner

from dnnlens.cli import app

#: the xdist group of the files that share these documents
GROUP = "analyze-json"


class Analyzed(NamedTuple):
    """What ``analyze INPUTS -f json -q`` ended with and wrote."""

    exit_code: int
    stdout: str
    stderr: str

    def doc(self) -> Any:
        return json.loads(self.stdout)


@cache
def _analyze(paths: tuple[str, ...]) -> Analyzed:
    result = CliRunner().invoke(app, ["analyze", *paths, "-f", "json", "-q"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return Analyzed(result.exit_code, result.stdout, result.stderr)


def analyze_json(*paths: str | Path) -> Analyzed:
    """The JSON report of ``paths`` (made on the first call for these paths)."""
    return _analyze(tuple(str(Path(p).resolve()) for p in paths))
