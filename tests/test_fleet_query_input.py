"""Where ``fleet query`` takes its SQL from: the argument, a file (``@FILE`` or
``--file``), standard input (``-``); SQL that starts with a ``--`` comment is SQL, a word
that looks like an option is not run as SQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from test_fleet_logs import small_dataset

pytest.importorskip("duckdb")

SQL = "-- how many runs\nSELECT count(*) AS n FROM runs"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory)


def query(*args: str, stdin: str | None = None):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, ["fleet", "query", *args, "-f", "csv"], input=stdin)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_sql_that_starts_with_a_comment(pair) -> None:
    result = query(str(pair), SQL)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["n", "2"]


@pytest.mark.parametrize("how", ["@", "--file", "-"])
def test_sql_from_a_file_or_standard_input(pair, tmp_path, how) -> None:
    path = tmp_path / "count.sql"
    path.write_text(SQL)
    args = {"@": [f"@{path}"], "--file": ["--file", str(path)], "-": ["-"]}[how]
    result = query(str(pair), *args, stdin=SQL if how == "-" else None)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["n", "2"]


def test_a_file_that_cannot_be_read(pair, tmp_path) -> None:
    result = query(str(pair), f"@{tmp_path / 'none.sql'}")
    assert result.exit_code == 2
    assert result.stderr == (
        f"dnnlens: error: {tmp_path / 'none.sql'}: cannot read the SQL (No such file or "
        "directory)\n"
    )


def test_a_mistyped_option_is_not_run_as_sql(pair) -> None:
    result = query(str(pair), "--fromat=json")
    assert result.exit_code == 2
    assert result.stderr.startswith("dnnlens: error: no such option: --fromat=json")
    both = query(str(pair), "SELECT 1", "--file", "x.sql")
    assert both.exit_code == 2 and "--file and SQL: give one" in both.stderr
