"""The runs index of a dataset (``DATASET/.runs-index``): publishing and opening read what is
new only, and the index is rebuilt from the files when it is missing or not current.

The runs are copies of one run of the small pair dataset under new names and content
hashes (its five tables' rows renamed), published with :meth:`Dataset.publish` as a build
publishes them; footer checks are counted by wrapping ``dataset._check_file``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from dnnlens.fleet import dataset as dataset_module
from dnnlens.fleet.dataset import Dataset, DatasetError, Settings
from dnnlens.fleet.runindex import INDEX
from dnnlens.fleet.schema import TABLES
from test_fleet_logs import invoke, small_dataset

pytest.importorskip("duckdb")

RUN = "dispatch_only_infer"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory)


def rows_of(source: Path, run: str, content_hash: str) -> dict[str, pa.Table]:
    """The tables of ``RUN`` in ``source`` as the rows of a new run ``run``."""
    data = Dataset.open(source)
    out = {}
    for table in TABLES:
        rows = data.read(table, runs=[RUN])
        rows = dataset_module._renamed(rows, run)
        if table == "runs":
            index = rows.schema.get_field_index("content_hash")
            rows = rows.set_column(index, "content_hash", pa.array([content_hash]))
        out[table] = rows
    return out


def copies(pair: Path, root: Path, count: int, start: int = 0) -> Dataset:
    """A dataset at ``root`` of ``count`` copies of the run (``copy-<n>``), published."""
    data = Dataset.for_build(root, Settings(**Dataset.open(pair).manifest["settings"]))
    for n in range(start, start + count):
        tables = rows_of(pair, f"copy-{n}", f"{n:064x}")
        data.publish(f"copy-{n}", f"{n:064x}", tables, lambda taken: "unused")
    return data


@pytest.fixture
def checks(monkeypatch) -> list[Path]:
    """Every footer check made, by path."""
    made: list[Path] = []
    real = dataset_module._check_file

    def counted(path, expected):  # noqa: ANN001, ANN202
        made.append(Path(path))
        return real(path, expected)

    monkeypatch.setattr(dataset_module, "_check_file", counted)
    return made


@pytest.fixture
def listings(monkeypatch) -> list[Path]:
    """Every listing of the ``runs`` directory."""
    made: list[Path] = []
    real = Dataset._listed

    def counted(self):  # noqa: ANN001, ANN202
        made.append(self.root)
        return real(self)

    monkeypatch.setattr(Dataset, "_listed", counted)
    return made


def test_publishing_reads_no_footer_and_lists_nothing(pair, tmp_path, checks, listings) -> None:
    data = copies(pair, tmp_path / "ds", 3)
    checks.clear()
    listings.clear()
    copies(pair, tmp_path / "ds", 2, start=3)  # a second build: opens, publishes two
    assert checks == [] and listings == []
    assert Dataset.open(tmp_path / "ds").run_names() == [f"copy-{n}" for n in range(5)]
    assert data.run_names() == [f"copy-{n}" for n in range(5)]  # read on from the index


def test_opening_reads_no_footer_of_a_file_it_checked(pair, tmp_path, checks, listings) -> None:
    copies(pair, tmp_path / "ds", 3)
    checks.clear()
    listings.clear()
    files = Dataset.open(tmp_path / "ds").check()
    assert checks == [] and listings == []
    assert [p.name for p in files["primitives"]] == [f"run-copy-{n}.parquet" for n in range(3)]
    sql = "SELECT count(*) AS n FROM runs"
    got = invoke("fleet", "query", str(tmp_path / "ds"), sql, "-f", "csv")
    assert got.exit_code == 0 and got.stdout.splitlines() == ["n", "3"]
    assert checks == []


def test_a_file_changed_in_place_is_checked_again(pair, tmp_path, checks) -> None:
    """A file rewritten in place (the directory does not change): its size and time do,
    so its footer is read again, and the damage is named."""
    copies(pair, tmp_path / "ds", 3)
    target = tmp_path / "ds" / "findings" / "run-copy-1.parquet"
    target.write_bytes(b"PAR")
    checks.clear()
    with pytest.raises(DatasetError, match="run-copy-1.parquet: damaged, not a Parquet file"):
        Dataset.open(tmp_path / "ds").check()
    assert checks == [target]


def test_a_missing_index_is_rebuilt_from_the_files(pair, tmp_path, checks, listings) -> None:
    copies(pair, tmp_path / "ds", 3)
    (tmp_path / "ds" / INDEX).unlink()
    checks.clear()
    listings.clear()
    assert Dataset.open(tmp_path / "ds").run_names() == ["copy-0", "copy-1", "copy-2"]
    assert len(listings) == 1  # a reader lists the runs, and writes nothing
    assert not (tmp_path / "ds" / INDEX).exists()
    data = copies(pair, tmp_path / "ds", 1, start=3)  # a build rewrites it, every file checked
    assert len(checks) == 3 * len(TABLES)
    assert data.run_with(f"{1:064x}") == "copy-1"  # content hashes read back
    checks.clear()
    listings.clear()
    assert Dataset.open(tmp_path / "ds").run_names() == [f"copy-{n}" for n in range(4)]
    assert checks == [] and listings == []


def test_runs_deleted_or_copied_in_by_hand(pair, tmp_path) -> None:
    """Deleting a run's five files, or copying another dataset's run in, changes the
    ``runs`` directory: the index is not trusted, the runs are listed."""
    copies(pair, tmp_path / "ds", 3)
    for table in TABLES:
        (tmp_path / "ds" / table / "run-copy-1.parquet").unlink()
        shutil.copy(pair / table / f"run-{RUN}.parquet", tmp_path / "ds" / table)
    assert Dataset.open(tmp_path / "ds").run_names() == ["copy-0", "copy-2", RUN]
    sql = "SELECT run FROM runs ORDER BY 1"
    got = invoke("fleet", "query", str(tmp_path / "ds"), sql, "-f", "csv")
    assert got.stdout.splitlines() == ["run", "copy-0", "copy-2", RUN]
    data = copies(pair, tmp_path / "ds", 0)  # a build learns the copied run's hash
    same = Dataset.open(pair).content_hashes()
    assert {data.run_with(h) for h in same} >= {RUN}


def test_a_run_published_by_another_build_meanwhile(pair, tmp_path) -> None:
    """Two builds into one dataset: each learns of the other's runs from the lines it
    appended, and a run of the same content is not written twice."""
    first = copies(pair, tmp_path / "ds", 1)
    copies(pair, tmp_path / "ds", 1, start=1)  # the other build
    tables = rows_of(pair, "again", f"{1:064x}")
    done = first.publish("again", f"{1:064x}", tables, lambda taken: "unused")
    assert not done.written and done.name == "copy-1"


def test_a_damaged_index_line_is_not_trusted(pair, tmp_path, listings) -> None:
    copies(pair, tmp_path / "ds", 2)
    listings.clear()
    with open(tmp_path / "ds" / INDEX, "ab") as fh:
        fh.write(b'["half a line"\n')
    assert Dataset.open(tmp_path / "ds").run_names() == ["copy-0", "copy-1"]
    assert len(listings) == 1


def test_a_line_being_appended_is_read_once_whole(pair, tmp_path) -> None:
    copies(pair, tmp_path / "ds", 1)
    index = tmp_path / "ds" / INDEX
    whole = index.read_bytes()
    reader = Dataset.open(tmp_path / "ds")
    copies(pair, tmp_path / "ds", 1, start=1)
    appended = index.read_bytes()[len(whole) :]
    index.write_bytes(whole + appended[:10])  # the other build is midway through its write
    os.utime(index)
    names = reader.run_names()  # not current (runs changed), listed
    assert names == ["copy-0", "copy-1"]
    index.write_bytes(whole + appended)
    assert reader.run_names() == ["copy-0", "copy-1"]
    assert reader._index.current()
