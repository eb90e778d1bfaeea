"""Hostile inputs, fourth round: file names that are not UTF-8, Markdown from a log, odd
output shapes (tiny terminals, wide characters, ``-o -``, huge times), hand-edited fleets
and plugins that fork (docs/input-policy.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.dataset as pads
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.textsafe import path_text, safe

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
NCHW = SAMPLES / "convnet_nchw_infer.log"
CL = SAMPLES / "convnet_cl_infer.log"

BAD_NAME = b"bad\xff\xfe.log"
SHOWN = "bad\\xff\\xfe.log"  # the literal backslash text


def invoke(*args: str | os.PathLike[str]):
    result = CliRunner().invoke(app, [os.fspath(a) for a in args])
    assert "Traceback" not in result.stderr
    assert result.exit_code != 3, result.stderr
    return result


# -- file names that are not UTF-8 ------------------------------------------------------------


@pytest.fixture
def bad_dir(tmp_path: Path) -> Path:
    """A directory with a log whose name is not UTF-8 and a good log beside it."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copyfile(NCHW, os.path.join(os.fsencode(folder), BAD_NAME))
    shutil.copyfile(CL, folder / "good.log")
    return folder


def bad_path(folder: Path) -> str:
    return os.fsdecode(os.path.join(os.fsencode(folder), BAD_NAME))


def test_textsafe_shows_the_bytes_of_a_name() -> None:
    name = os.fsdecode(BAD_NAME)
    assert safe(name) == SHOWN
    assert path_text(name) == SHOWN
    assert path_text(BAD_NAME) == SHOWN
    assert path_text("a\nb.log") == "a\nb.log"  # data keeps control characters
    assert safe("a\nb.log") == "a\\nb.log"


@pytest.mark.parametrize("form", ["file", "directory"])
@pytest.mark.parametrize("fmt", ["terminal", "json", "html"])
def test_analyze_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path, form: str, fmt: str):
    target = bad_path(bad_dir) if form == "file" else bad_dir
    out = tmp_path / "report.out"
    result = invoke("analyze", target, "-f", fmt, "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        doc = json.loads(text)
        paths = [i["path"] for i in doc["inputs"]]
        assert any(p.endswith(SHOWN) for p in paths)
        if form == "directory":
            assert any(p.endswith("good.log") for p in paths)
    elif fmt == "terminal":
        assert SHOWN in text
        if form == "directory":
            assert "good.log" in text
    else:
        assert SHOWN in text


def test_diff_a_name_that_is_not_utf8(bad_dir: Path) -> None:
    result = invoke("diff", bad_path(bad_dir), bad_dir / "good.log")
    assert result.exit_code == 0, result.stderr
    assert SHOWN in result.stdout
    result = invoke("diff", bad_path(bad_dir), bad_dir / "good.log", "-f", "json")
    assert result.exit_code == 0, result.stderr
    json.loads(result.stdout)
    assert json.dumps(SHOWN)[1:-1] in result.stdout


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_export_tables_of_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path, kind: str):
    out = tmp_path / "out"
    result = invoke("export", kind, bad_dir, "-o", out)
    assert result.exit_code == 0, result.stderr
    table = pads.dataset(out / "events", format=kind, partitioning="hive").to_table()
    inputs = {str(v) for v in table.column("input").to_pylist()}
    assert any(v.endswith(SHOWN) for v in inputs)
    assert any(v.endswith("good.log") for v in inputs)


def test_fleet_build_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    result = invoke("fleet", "build", bad_dir, "-o", fleet)
    assert result.exit_code == 0, result.stderr
    assert "2 run(s) written" in result.stderr
    runs = pads.dataset(fleet / "runs", format="parquet").to_table().to_pylist()
    inputs = sorted(p for r in runs for p in r["inputs"])
    assert inputs[0].endswith(SHOWN) and inputs[1].endswith("good.log")
    paths = pads.dataset(fleet / "inputs", format="parquet").to_table().column("path")
    assert any(p.endswith(SHOWN) for p in paths.to_pylist())
