"""``fleet query`` and ``fleet diff`` over a dataset damaged at random: a Parquet file
truncated, with bytes flipped or a column rewritten to another type, a table or the
manifest gone or garbled. Whatever the damage, the command answers (exit 0; 1 for a diff
that finds a slower run) or says what is wrong in one line naming the dataset or its file
(exit 2): never an internal error (exit 3), never a traceback.

The dataset is two small sample logs (``test_fleet_logs.small_dataset``), built once;
each example damages a copy of it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.fleet.schema import TABLES
from test_fleet_logs import small_dataset

pytest.importorskip("duckdb")

#: Reads every column of every table and view, so each file's pages are decoded.
EVERYTHING = " UNION ALL ".join(
    f"SELECT '{name}' AS t, count(*) AS n, max(length(CAST(x AS VARCHAR))) AS width "
    f"FROM {name} AS x"
    for name in (*TABLES, "slowest_primitives", "findings_by_rule", "run_trend")
)


DIFF = ["--baseline", "profile_lstm_infer", "-f", "json"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory)


def _parquet_files(root: Path) -> list[Path]:
    return sorted(root.glob("*/run-*.parquet"))


#: What a hand edit may turn a column into.
RETYPES = ("string", "int64", "list")

damage = st.one_of(
    st.tuples(
        st.just("retype"),
        st.integers(0, 10**9),
        st.tuples(st.integers(0, 99), st.sampled_from(RETYPES)),
    ),
    st.tuples(st.just("truncate"), st.integers(0, 10**9), st.integers(0, 10**6)),
    st.tuples(st.just("flip"), st.integers(0, 10**9), st.lists(st.integers(0, 10**6), max_size=8)),
    st.tuples(st.just("drop table"), st.sampled_from(sorted(TABLES)), st.none()),
    st.tuples(st.just("manifest"), st.sampled_from(["", "{", "[]", '{"format": 1}']), st.none()),
)


def _damage(root: Path, how: tuple) -> None:
    kind, what, where = how
    files = _parquet_files(root)
    if kind == "retype":
        path = files[what % len(files)]
        table = pq.read_table(path)
        index = where[0] % table.num_columns
        rows = table.num_rows
        value = {"string": ["x"] * rows, "int64": [7] * rows, "list": [[1]] * rows}[where[1]]
        pq.write_table(table.set_column(index, table.schema.names[index], pa.array(value)), path)
    elif kind == "truncate":
        path = files[what % len(files)]
        data = path.read_bytes()
        path.write_bytes(data[: where % max(len(data), 1)])
    elif kind == "flip":
        path = files[what % len(files)]
        data = bytearray(path.read_bytes())
        for offset in where:
            data[offset % len(data)] ^= 0xFF
        path.write_bytes(bytes(data))
    elif kind == "drop table":
        shutil.rmtree(root / what, ignore_errors=True)
    else:
        (root / "dataset.json").write_text(what)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(how=("flip", 0, [97285]), command="query")  # text that is no longer UTF-8
@given(how=damage, command=st.sampled_from(["query", "diff"]))
def test_a_damaged_dataset_is_answered_or_one_line(pristine: Path, how: tuple, command) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ds"
        shutil.copytree(pristine, root)
        _damage(root, how)
        args = [EVERYTHING, "-f", "csv"] if command == "query" else DIFF
        result = CliRunner().invoke(app, ["fleet", command, str(root), *args])
    allowed = (0, 2) if command == "query" else (0, 1, 2)
    assert result.exit_code in allowed, (how, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if result.exit_code == 2:
        assert len(result.stderr.splitlines()) == 1, (how, result.stderr)
        assert f"dnnlens: error: {root}" in result.stderr or f"in {root}" in result.stderr, (
            how,
            result.stderr,
        )
    elif command == "query":
        assert result.stderr == "" and result.stdout.startswith("t,n,width\n")
