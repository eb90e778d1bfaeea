"""A usage error is one line on stderr and exit 2, and ``--help`` never breaks a token.

Every command and subcommand (``fleet``, ``export``, ``rules``, ``machine`` too) goes through
the root command's handler (:mod:`dnnlens.cli.usage`), so each kind of mistake is tried on a
few of them; the help of every command is laid out at 60, 80 and 100 columns.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
LOG = str(ROOT / "sample_logs" / "convnet_nchw_infer.log")


def usage_error(*args: str) -> str:
    """The one line of standard error of a mistaken command line (exit 2, no stdout)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, (args, result.output)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("dnnlens: error: ")
    return lines[0].removeprefix("dnnlens: error: ")


def test_an_unknown_option_names_the_closest() -> None:
    assert usage_error("analyze", "--bogus", LOG) == "no such option --bogus (did you mean --jobs?)"
    assert usage_error("analyze", LOG, "--quiett") == (
        "no such option --quiett (did you mean --quiet or --output?)"
    )


def test_an_unknown_option_of_a_subcommand() -> None:
    assert usage_error("fleet", "build", "--bogus").startswith("no such option --bogus")
    assert usage_error("machine", "probe", "--bogus") == "no such option --bogus"


def test_an_unknown_command_names_the_closest() -> None:
    assert usage_error("analyz") == "no such command 'analyz' in dnnlens (did you mean analyze?)"
    assert usage_error("fleet", "qurey").endswith("(did you mean query?)")
    assert usage_error("export", "zzz") == (
        "no such command 'zzz' in dnnlens export (dnnlens export --help lists them)"
    )


def test_a_missing_argument() -> None:
    assert usage_error("analyze") == (
        "missing argument paths (dnnlens analyze --help shows the usage)"
    )
    assert usage_error("diff", LOG).startswith("missing argument new")


def test_a_bad_value() -> None:
    assert usage_error("analyze", LOG, "--format", "htm") == (
        "invalid value for --format: 'htm' is not one of 'terminal', 'json', 'html',"
        " 'sarif', 'github', 'junit'"
        " (did you mean html?)"
    )
    assert usage_error("analyze", LOG, "-j", "x") == (
        "invalid value for --jobs: 'x' is not a whole number"
    )
    assert usage_error("analyze", LOG, "--top", "0") == (
        "invalid value for --top: 0 is not in the range x>=1"
    )
    assert usage_error("analyze", LOG, "--format") == "option --format requires an argument"


def test_the_console_script_says_it_in_one_line_too() -> None:
    """The real process (``python -m dnnlens``, as the console script runs ``main``)."""
    result = subprocess.run(
        [sys.executable, "-m", "dnnlens", "analyze", "--bogus", LOG],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert result.stderr == "dnnlens: error: no such option --bogus (did you mean --jobs?)\n"
    assert result.stdout == ""


def test_no_command_shows_the_help() -> None:
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2
    assert "Commands:" in result.stdout and "analyze" in result.stdout


# -- help -----------------------------------------------------------------------------------


def _command_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found.extend(_command_paths(sub, (*path, name)))
    return found


COMMANDS = _command_paths(typer.main.get_command(app))


def help_text(command: tuple[str, ...], columns: int) -> str:
    """The help laid out ``columns`` wide (the runner would force 80; a terminal of
    ``COLUMNS`` gets at most 78, see the test of the real process below)."""
    extra = {"terminal_width": columns, "max_content_width": columns}
    result = CliRunner().invoke(app, [*command, "--help"], **extra)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_tried() -> None:
    assert len(COMMANDS) > 20
    assert ("fleet", "query") in COMMANDS and ("analyze",) in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "dnnlens")
def test_help_never_breaks_a_token(command: tuple[str, ...]) -> None:
    """Each word of the help at 60/80/100 columns is a word of the help laid out 2,000
    columns wide: ``<terminal|json|htm`` then ``l>`` would not be."""
    wide = set(help_text(command, 2000).split())
    for columns in (60, 80, 100):
        text = help_text(command, columns)
        for line in text.splitlines():
            assert len(line) <= columns, (columns, line)
        # a command's one-line summary may end early, at a word's end, with "..."
        broken = {w for w in text.split() if w not in wide and w.removesuffix("...") not in wide}
        assert not broken, (columns, sorted(broken))
        assert not re.search(r"[╭│╰]", text)  # no box whose frame cuts the text


@pytest.mark.parametrize("columns", [60, 80])
def test_the_help_of_analyze_in_a_terminal(columns: int) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dnnlens", "analyze", "--help"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": str(columns)},
    )
    assert result.returncode == 0
    flat = result.stdout.replace("\n", "").replace(" ", "")  # the choices may wrap
    assert "<terminal|json|html|sarif|github|junit>" in flat
    assert max(len(line) for line in result.stdout.splitlines()) <= columns
