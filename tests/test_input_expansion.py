"""A command looks into a directory's files once: the progress bar, the choice of ``-j`` and
the reading share one expansion of the inputs (each file of a directory is sniffed for a
run, which reads its head: twice was twice the reading of every head)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnlens.io.content as content
from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


@pytest.mark.parametrize("extra", [[], ["-j", "1"], ["-j", "2"]])
def test_each_file_of_a_directory_is_sniffed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(SAMPLES / "convnet_nchw_infer.log", runs / "a.log")
    shutil.copy(SAMPLES / "convnet_nchw_train.log", runs / "b.log")
    (runs / "notes.txt").write_text("not a run\n")
    seen: Counter[str] = Counter()
    real = content.holds_run

    def counted(path: str) -> bool:
        seen[Path(path).name] += 1
        return real(path)

    monkeypatch.setattr(content, "holds_run", counted)
    result = CliRunner().invoke(app, ["analyze", str(runs), "--format", "json", *extra])
    assert result.exit_code == 0, result.stderr
    assert seen == {"a.log": 1, "b.log": 1, "notes.txt": 1}
    assert "skipped 1 file" in result.stderr
