"""Start-up stays light: the command line imports neither torch nor the analysis stack."""

from __future__ import annotations

import subprocess
import sys


def test_cli_import_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, dnnlens, dnnlens.cli; "
        "print(sorted(m for m in ('torch', 'pandas', 'lark', 'networkx', 'numpy') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in (
        "analyze",
        "run",
        "capture",
        "graph",
        "diff",
        "project",
        "export",
        "rules",
        "machine",
    ):
        assert f" {command} " in out
