"""A configuration dnnlens finds by itself never makes it run Python (docs/rules.md,
"Configuration"): a ``pyproject.toml`` in a parent directory is anyone's file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"

PLUGIN = """
from pathlib import Path
Path({marker!r}).write_text("ran")
from dnnlens.rules import Rule


class Lint(Rule):
    \"\"\"A plugin that leaves a mark when imported.\"\"\"

    name = "lint"
    code = "T100"

    def check(self, ctx):
        return []
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``proj/pyproject.toml`` naming ``tools/lint.py``; the current directory is below it."""
    proj = tmp_path / "proj"
    (proj / "tools").mkdir(parents=True)
    marker = tmp_path / "ran.txt"
    (proj / "tools" / "lint.py").write_text(PLUGIN.format(marker=str(marker)))
    (proj / "pyproject.toml").write_text('[tool.dnnlens]\nrule-files = ["tools/lint.py"]\n')
    (proj / "sub").mkdir()
    monkeypatch.chdir(proj / "sub")
    return proj, marker


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


@pytest.mark.parametrize(
    "command",
    [["analyze", str(NCHW)], ["rules", "list"], ["rules", "explain", "DL001"]],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_found_configuration_does_not_run_python(project, command: list[str]) -> None:  # noqa: ANN001
    proj, marker = project
    result = invoke(*command)
    assert not marker.exists()
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"dnnlens: error: {proj / 'pyproject.toml'}:2: rule-files: ")
    assert "--config" in line and "--rules" in line


@pytest.mark.skipif(sys.platform == "win32", reason="`true`")
def test_run_does_not_run_python_from_a_found_configuration(project, tmp_path: Path) -> None:  # noqa: ANN001
    _, marker = project
    result = invoke("run", "--no-live", "--log", str(tmp_path / "run.log"), "--", "true")
    assert not marker.exists()
    assert result.exit_code == 2
    assert "rule-files" in result.stderr and "Traceback" not in result.stderr


def test_a_named_configuration_may_run_python_and_says_so(project) -> None:  # noqa: ANN001
    proj, marker = project
    result = invoke("analyze", "--config", str(proj / "pyproject.toml"), str(NCHW))
    assert result.exit_code == 0
    assert marker.exists()
    note = f"running the Python rule file {proj / 'tools' / 'lint.py'}"
    assert note in result.stderr


def test_rules_given_on_the_command_line_run_and_say_so(project) -> None:  # noqa: ANN001
    proj, marker = project
    (proj / "pyproject.toml").write_text("[tool.dnnlens]\n")
    result = invoke("analyze", "--rules", str(proj / "tools" / "lint.py"), str(NCHW))
    assert result.exit_code == 0 and marker.exists()
    assert "running the Python rule file" in result.stderr and "(named by --rules)" in result.stderr


def test_a_found_configuration_may_still_name_rule_files(project) -> None:  # noqa: ANN001
    """YAML and TOML rule files are data: a found configuration may bring them."""
    proj, marker = project
    (proj / "r.yaml").write_text(
        "name: always\nwhen: 'true'\nmessage: 'always'\nseverity: info\n", encoding="utf-8"
    )
    (proj / "pyproject.toml").write_text('[tool.dnnlens]\nrule-files = ["r.yaml"]\n')
    result = invoke("analyze", "-f", "json", str(NCHW))
    assert result.exit_code == 0 and '"rule": "always"' in result.stdout
