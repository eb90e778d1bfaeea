"""Programs dnnlens starts (``run``, ``capture``) get one environment and one life.

The policy: an explicit ``--level`` is set for every release family's switch; without one a
level the user exported is kept and given to the other families, else 1; timestamps and
``PYTHONUNBUFFERED`` unless set. Both commands are checked with a real child printing what
it got.
"""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.cli.child import verbose_environment

SHOW = (
    "import os; print(' '.join(os.environ.get(n, '-') for n in ('ONEDNN_VERBOSE', "
    "'DNNL_VERBOSE', 'MKLDNN_VERBOSE', 'ONEDNN_VERBOSE_TIMESTAMP', 'PYTHONUNBUFFERED')))"
)


def test_policy() -> None:
    assert verbose_environment({}, None) == {
        "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1", "MKLDNN_VERBOSE": "1",
        "ONEDNN_VERBOSE_TIMESTAMP": "1", "DNNL_VERBOSE_TIMESTAMP": "1", "PYTHONUNBUFFERED": "1",
    }  # fmt: skip
    # an exported level is kept and given to the other families; an explicit one wins
    got = verbose_environment({"DNNL_VERBOSE": "2"}, None)
    assert (got["ONEDNN_VERBOSE"], got["DNNL_VERBOSE"], got["MKLDNN_VERBOSE"]) == ("2",) * 3
    got = verbose_environment({"ONEDNN_VERBOSE": "2"}, "dispatch")
    assert got["ONEDNN_VERBOSE"] == got["MKLDNN_VERBOSE"] == "dispatch"
    got = verbose_environment({"ONEDNN_VERBOSE_TIMESTAMP": "0"}, "1", timestamps=True)
    assert got["ONEDNN_VERBOSE_TIMESTAMP"] == "0" and got["DNNL_VERBOSE_TIMESTAMP"] == "1"
    assert "ONEDNN_VERBOSE_TIMESTAMP" not in verbose_environment({}, "1", timestamps=False)


def _capture(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = tmp_path / "cap"
    result = CliRunner().invoke(
        app, ["capture", "-o", str(out), *args, sys.executable, "-c", SHOW], env=env
    )
    assert result.exit_code == 0, result.output
    return (tmp_path / "cap.log").read_text().strip()


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    log = tmp_path / "run.log"
    result = CliRunner().invoke(
        app, ["run", "--log", str(log), "--no-live", "-q", *args, "--", sys.executable, "-c",
              SHOW], env=env,
    )  # fmt: skip
    assert result.exit_code in (0, 2), result.output  # no verbose line: nothing to analyse
    return log.read_text().strip()


def test_run_and_capture_give_the_same_environment(tmp_path: Path) -> None:
    clean = {"ONEDNN_VERBOSE": None, "DNNL_VERBOSE": None, "MKLDNN_VERBOSE": None,
             "ONEDNN_VERBOSE_TIMESTAMP": None, "DNNL_VERBOSE_TIMESTAMP": None,
             "PYTHONUNBUFFERED": None}  # fmt: skip
    assert _capture(tmp_path, env=clean) == _run(tmp_path, env=clean) == "1 1 1 1 1"
    exported = {**clean, "ONEDNN_VERBOSE": "2"}
    assert _capture(tmp_path, env=exported) == _run(tmp_path, env=exported) == "2 2 2 1 1"
    assert (
        _capture(tmp_path, "--level", "dispatch", env=exported) == "dispatch dispatch dispatch 1 1"
    )
    assert _run(tmp_path, "--level", "dispatch", env=exported) == "dispatch dispatch dispatch 1 1"
