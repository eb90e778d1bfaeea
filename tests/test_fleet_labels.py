"""``fleet build --label key=value``: stored with every run the build writes
(``runs.labels``, a JSON object), and a baseline of ``fleet diff`` named by them; a
dataset written before the column was added reads it as NULL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dnnlens.fleet.dataset import Dataset
from test_fleet_logs import build, invoke, write_copy

pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> Path:
    """Two nightly builds of one workload, the second 3x slower (every steady pass slower
    than every one of the first: a slowdown ``fleet diff`` tells from the noise; 2x is
    within the sample's spread), each with its labels."""
    root = tmp_path_factory.mktemp("labels")
    out = root / "ds"
    for day, factor in (("0412", 1.0), ("0413", 3.0)):
        log = write_copy(root / day / "convnet.log", "convnet_nchw_infer", factor)
        result = build(
            str(log), "-o", str(out), "--label", "job=nightly", "--label", f"date=2024-{day}",
            "--label", f"commit=c{day}",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
    return out


def test_labels_are_stored_per_run(labelled) -> None:
    sql = "SELECT labels->>'date' AS day, labels->>'job' AS job FROM runs ORDER BY 1"
    got = invoke("fleet", "query", str(labelled), sql, "-f", "json")
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout) == [
        {"day": "2024-0412", "job": "nightly"},
        {"day": "2024-0413", "job": "nightly"},
    ]
    rows = Dataset.open(labelled).read("runs", ["labels"]).to_pylist()
    assert json.loads(rows[0]["labels"]).keys() == {"commit", "date", "job"}


def test_a_baseline_named_by_its_labels(labelled) -> None:
    result = invoke("fleet", "diff", str(labelled), "--baseline", "label=commit=c0412")
    assert result.exit_code == 1, result.stderr
    assert "slower than" in result.stderr
    several = invoke("fleet", "diff", str(labelled), "--baseline", "label=job=nightly")
    assert several.exit_code == 2
    assert "2 runs have these labels" in several.stderr
    both = invoke("fleet", "diff", str(labelled), "--baseline", "label=job=nightly,date=2024-0413")
    assert both.exit_code == 0, both.stderr
    none = invoke("fleet", "diff", str(labelled), "--baseline", "label=job=weekly")
    assert none.exit_code == 2 and "no run in" in none.stderr


def test_a_label_without_a_value_is_refused(tmp_path) -> None:
    result = build(str(tmp_path), "-o", str(tmp_path / "ds"), "--label", "nightly")
    assert result.exit_code == 2
    assert "--label 'nightly': give key=value" in result.stderr


def test_runs_written_before_labels_read_them_as_null(labelled, tmp_path) -> None:
    out = tmp_path / "ds"
    shutil.copytree(labelled, out)
    for path in (out / "runs").glob("run-*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["labels"]), path)
    got = invoke("fleet", "query", str(out), "SELECT count(labels) AS n FROM runs", "-f", "csv")
    assert got.exit_code == 0, got.stderr
    assert got.stdout.splitlines() == ["n", "0"]
