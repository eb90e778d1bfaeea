"""``--help`` is plain text that starts fast: typer formats it without rich (importing rich's
markdown and syntax modules for a help page was most of the time ``dnnlens --help`` took),
and the help texts carry no rich markup or its escapes."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _help(*argv: str) -> tuple[str, list[str]]:
    """What ``dnnlens ARGV --help`` prints, and which rich modules it imported."""
    code = (
        "import sys\n"
        f"sys.argv = ['dnnlens', *{list(argv)!r}, '--help']\n"
        "import dnnlens.cli\n"
        "try:\n    dnnlens.cli.app()\nexcept SystemExit:\n    pass\n"
        "print('imported:', *sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    text, _, imported = out.rpartition("imported:")
    return text, imported.split()


@pytest.mark.parametrize("argv", [(), ("analyze",), ("fleet", "build")])
def test_help_imports_no_rich(argv: tuple[str, ...]) -> None:
    text, rich = _help(*argv)
    assert rich == []
    assert "Usage:" in text and "--help" in text


def test_help_shows_no_markup_escapes() -> None:
    text, _ = _help("analyze")
    assert "[tool.dnnlens]" in text  # the --config help names the table as written
    assert "\\[" not in text
