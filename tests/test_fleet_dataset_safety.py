"""The fleet dataset under hostile conditions: runs of one file name, two builds into one
directory at once, a write that fails between two tables, log names too long for the file
system, files damaged or edited by hand.

The logs are two small sample logs: ``dispatch_only_infer.log`` (6,131 bytes) and
``profile_lstm_infer.log`` (10,580 bytes); every build runs in this process (``-w 1``) but
the second builder of the concurrent case, which is a process of its own.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dnnlens.fleet import build as build_module
from dnnlens.fleet.dataset import Dataset
from dnnlens.fleet.schema import TABLES
from test_fleet_logs import SAMPLE_LOGS, build, invoke, small_dataset

pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parent.parent
SMALL = SAMPLE_LOGS / "dispatch_only_infer.log"
OTHER = SAMPLE_LOGS / "profile_lstm_infer.log"


def visible(dataset: Path) -> dict[str, list[str]]:
    """Every table's files that a reader of the directory sees (not hidden)."""
    return {
        t: sorted(p.name for p in (dataset / t).iterdir() if not p.name.startswith("."))
        for t in TABLES
        if (dataset / t).is_dir()
    }


def hidden(dataset: Path) -> list[str]:
    return sorted(
        p.name for t in TABLES if (dataset / t).is_dir() for p in (dataset / t).iterdir()
        if p.name.startswith(".")
    )  # fmt: skip


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    """A dataset of the two small logs, to copy and damage."""
    return small_dataset(tmp_path_factory)


# -- run identity ---------------------------------------------------------------------------


def test_two_train_logs_of_two_directories_built_one_after_the_other(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(SMALL, tmp_path / "a" / "train.log")
    shutil.copy(OTHER, tmp_path / "b" / "train.log")
    out = tmp_path / "ds"
    for folder in ("a", "b"):
        result = build(str(tmp_path / folder / "train.log"), "-o", str(out))
        assert result.exit_code == 0, result.stderr
        assert "1 run(s) written" in result.stderr
    runs = {r["inputs"][0]: r["run"] for r in Dataset.open(out).read("runs").to_pylist()}
    assert sorted(runs) == [str(tmp_path / "a" / "train.log"), str(tmp_path / "b" / "train.log")]
    assert runs[str(tmp_path / "a" / "train.log")] == "train"
    assert runs[str(tmp_path / "b" / "train.log")].startswith("train-")


def test_a_second_build_that_writes_the_name_while_the_first_analyses(
    tmp_path: Path, monkeypatch
) -> None:
    """Build A names its ``train`` run and analyses it; meanwhile build B, another
    process, writes its own ``train`` into the same dataset. A must not overwrite it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(SMALL, tmp_path / "a" / "train.log")
    shutil.copy(OTHER, tmp_path / "b" / "train.log")
    out = tmp_path / "ds"
    real = build_module.analyse_run
    second = {}

    def analyse_while_another_builds(job, parts=None):  # noqa: ANN001, ANN202
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        second["run"] = subprocess.run(
            [sys.executable, "-m", "dnnlens", "fleet", "build", "-w", "1", "-q",
             str(tmp_path / "b" / "train.log"), "-o", str(out)],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        return real(job, parts)

    monkeypatch.setattr(build_module, "analyse_run", analyse_while_another_builds)
    result = build(str(tmp_path / "a" / "train.log"), "-o", str(out))
    assert second["run"].returncode == 0, second["run"].stderr
    assert result.exit_code == 0, result.stderr
    assert "1 run(s) written" in result.stderr
    runs = {r["inputs"][0]: r["run"] for r in Dataset.open(out).read("runs").to_pylist()}
    assert runs[str(tmp_path / "b" / "train.log")] == "train"  # the second builder's, kept
    assert runs[str(tmp_path / "a" / "train.log")].startswith("train-")  # renamed on publish
    for table in TABLES:  # the renamed run's rows carry its new name in every table
        names = set(Dataset.open(out).read(table, ["run"])["run"].to_pylist())
        assert names <= set(runs.values()), table
    inputs = Dataset.open(out).read("inputs").to_pylist()
    assert {(r["run"], r["path"]) for r in inputs} == {(v, k) for k, v in runs.items()}


# -- partial runs -----------------------------------------------------------------------------


def test_a_write_that_fails_between_tables_leaves_nothing_of_the_run(
    tmp_path: Path, monkeypatch
) -> None:
    """The disk fills up while ``findings`` of ``profile_lstm_infer`` is written (its
    ``inputs`` and ``primitives`` are written already): none of its rows may be seen."""
    real = pq.write_table
    calls = {"n": 0}

    def full_disk(table: pa.Table, where, *args, **kwargs):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if "findings" in str(where) and table.num_rows and "lstm" in table["run"][0].as_py():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_disk)
    out = tmp_path / "ds"
    result = build(str(OTHER), str(SMALL), "-o", str(out))
    assert result.exit_code == 4, result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert errors == [errors[0]] and errors[0].startswith("dnnlens: error: run profile_lstm_infer:")
    assert "No space left on device" in errors[0]
    assert "1 run(s) written, 0 skipped (already in the dataset), 1 failed" in result.stderr
    assert visible(out) == {t: ["run-dispatch_only_infer.parquet"] for t in TABLES}
    assert hidden(out) == []
    assert set(pd.read_parquet(out / "inputs")["run"]) == {"dispatch_only_infer"}
    monkeypatch.setattr(pq, "write_table", real)
    again = build(str(OTHER), str(SMALL), "-o", str(out))  # the next build adds it
    assert again.exit_code == 0 and "1 run(s) written, 1 skipped" in again.stderr


def test_files_of_a_run_without_its_runs_file_are_never_read_and_then_removed(
    pair: Path, tmp_path: Path
) -> None:
    """A build killed between two renames leaves a run's first files: a query leaves
    them out, the next build removes them."""
    out = tmp_path / "ds"
    shutil.copytree(pair, out)
    for table in ("inputs", "primitives"):
        folder = out / table
        shutil.copy(folder / "run-dispatch_only_infer.parquet", folder / "run-ghost.parquet")
    (out / "findings" / ".staging-0123456789abcdef.parquet").write_bytes(b"half")
    sql = "SELECT count(DISTINCT run) AS n FROM inputs"
    got = invoke("fleet", "query", str(out), sql, "-f", "csv")
    assert got.exit_code == 0 and got.stdout.splitlines() == ["n", "2"]
    assert build(str(SMALL), "-o", str(out)).exit_code == 0
    assert "run-ghost.parquet" not in visible(out)["inputs"]
    assert hidden(out) == []


# -- long names ---------------------------------------------------------------------------------


def test_a_log_name_too_long_for_the_dataset_fails_that_run_only(tmp_path: Path) -> None:
    """A log name of 247 characters makes a 255-byte file name in each table
    (``run-`` + 243 + ``.parquet``): the limit itself, written; one of 251 would make 259
    bytes: that run fails alone, in one line, and the build exits 2."""
    fits = tmp_path / ("f" * 243 + ".log")
    too_long = tmp_path / ("t" * 247 + ".log")
    shutil.copy(SMALL, fits)
    shutil.copy(OTHER, too_long)
    shutil.copy(SMALL, tmp_path / "short.log")
    (tmp_path / "short.log").write_text((tmp_path / "short.log").read_text() + "end\n")
    out = tmp_path / "ds"
    result = build(str(fits), str(too_long), str(tmp_path / "short.log"), "-o", str(out))
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1
    assert errors[0].startswith(f"dnnlens: error: run {too_long}: ")
    assert "file name in the dataset would be 259 bytes, longer than the 255" in errors[0]
    assert "2 run(s) written, 0 skipped (already in the dataset), 1 failed" in result.stderr
    assert Dataset.open(out).run_names() == sorted(["f" * 243, "short"])


# -- damaged datasets ---------------------------------------------------------------------------


def damaged(pair: Path, tmp_path: Path, how: str) -> tuple[Path, Path]:
    """A copy of ``pair`` with ``runs/run-dispatch_only_infer.parquet`` damaged ``how``."""
    out = tmp_path / "ds"
    shutil.copytree(pair, out)
    target = out / "runs" / "run-dispatch_only_infer.parquet"
    if how == "three bytes":
        target.write_bytes(b"PAR")
    else:
        table = pq.read_table(target)
        index = table.schema.get_field_index("run")
        value = pa.array([7]) if how == "run as a number" else pa.array([[1, 2]])
        pq.write_table(table.set_column(index, "run", value), target)
    return out, target


@pytest.mark.parametrize("how", ["three bytes", "run as a number", "run as a list"])
@pytest.mark.parametrize(
    "command",
    [
        ("query", "SELECT run FROM runs"),
        ("query", "SELECT count(*) FROM primitives"),
        ("diff", "--baseline", "profile_lstm_infer"),
    ],
)
def test_a_damaged_file_is_a_dataset_error_naming_it(pair, tmp_path, how, command) -> None:
    out, target = damaged(pair, tmp_path, how)
    result = invoke("fleet", command[0], str(out), *command[1:])
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"dnnlens: error: {target}: damaged, ")
    assert len(result.stderr.splitlines()) == 1


def test_a_build_into_a_damaged_dataset_names_the_file(pair, tmp_path) -> None:
    out, target = damaged(pair, tmp_path, "three bytes")
    result = build(str(SAMPLE_LOGS / "lstm_infer.log"), "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dnnlens: error: {target}: damaged, not a Parquet file")
