"""``fleet query`` streams its result: rows are fetched from DuckDB a block at a time
(``fetchmany``, never ``fetchall``) and written as they come, complete, in every format.

The connection is wrapped so that each fetch is seen; the rows are DuckDB's own
``range(n)``, whose values are known: 0 .. n-1.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.fleet import query
from test_fleet_logs import small_dataset

pytest.importorskip("duckdb")


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory)


class _Cursor:
    """DuckDB's connection, its fetches counted; ``fetchall`` and the other whole-result
    fetches are refused."""

    def __init__(self, con: Any, seen: dict[str, int]) -> None:
        self._con, self._seen = con, seen

    def execute(self, sql: str) -> _Cursor:
        self._con.execute(sql)
        return self

    @property
    def description(self) -> Any:
        return self._con.description

    def fetchmany(self, size: int) -> list[tuple]:
        rows = self._con.fetchmany(size)
        self._seen["fetches"] += 1
        self._seen["largest"] = max(self._seen["largest"], len(rows))
        return rows

    def __getattr__(self, name: str) -> Any:
        if name.startswith("fetch") or name in ("df", "arrow", "pl"):
            raise AssertionError(f"the whole result fetched at once ({name})")
        return getattr(self._con, name)


@pytest.fixture
def seen(monkeypatch) -> dict[str, int]:
    counts = {"fetches": 0, "largest": 0}
    real = query.connect
    monkeypatch.setattr(
        query, "connect", lambda dataset, allow_files=False: _Cursor(real(dataset), counts)
    )
    return counts


def test_csv_of_200k_rows_is_complete_and_fetched_in_blocks(tiny, seen) -> None:
    result = invoke("fleet", "query", str(tiny), "SELECT * FROM range(200000)", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "range" and len(lines) == 200_001
    assert [int(v) for v in lines[1:]] == list(range(200_000))
    assert seen["fetches"] == 200_000 // query.BLOCK_ROWS + 1  # the last one empty
    assert seen["largest"] == query.BLOCK_ROWS


def test_json_of_many_blocks_is_one_array(tiny, seen, monkeypatch) -> None:
    monkeypatch.setattr(query, "BLOCK_ROWS", 100)
    sql = "SELECT range AS n, 'row ' || range AS t FROM range(250)"
    result = invoke("fleet", "query", str(tiny), sql, "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": k, "t": f"row {k}"} for k in range(250)]
    assert seen["fetches"] == 4 and seen["largest"] == 100  # 100, 100, 50 and the end


def test_a_table_of_many_blocks_has_every_row_and_its_count_last(tiny, seen, monkeypatch) -> None:
    """Widths come from the first block: a longer text after it is cut with an ellipsis,
    and the count (not known before the end) is the last line."""
    monkeypatch.setattr(query, "BLOCK_ROWS", 100)
    sql = (
        "SELECT range AS n, CASE WHEN range = 249 THEN repeat('x', 50) ELSE 'short' END AS t "
        "FROM range(250)"
    )
    result = invoke("fleet", "query", str(tiny), sql, "--width", "80")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "rows (the column widths of the first 100)"
    assert lines[1].split() == ["n", "t"]
    rows = [line.split() for line in lines[2:-1]]
    assert [int(r[0]) for r in rows] == list(range(250))
    assert rows[0] == ["0", "short"] and rows[-1] == ["249", "xxx…x"]  # cut in its middle
    assert lines[-1] == "250 row(s)"
    assert seen["fetches"] == 4 and seen["largest"] == 100  # 100, 100, 50 and the end


def test_one_block_is_laid_out_as_before(tiny, seen) -> None:
    result = invoke("fleet", "query", str(tiny), "SELECT range AS n FROM range(3)")
    assert result.stdout.splitlines() == ["3 row(s)", "n", "0", "1", "2"]
    empty = invoke("fleet", "query", str(tiny), "SELECT range AS n FROM range(0)", "-f", "csv")
    assert list(csv.reader(io.StringIO(empty.stdout))) == [["n"]]
    assert invoke("fleet", "query", str(tiny), "SELECT 1 WHERE false", "-f", "json").stdout == (
        "[]\n"
    )


def test_an_error_met_while_fetching_is_one_line_and_exit_2(tiny) -> None:
    """DuckDB raises some errors only as rows are computed (a cast that fails late)."""
    sql = "SELECT CASE WHEN range < 15000 THEN range ELSE 'x'::INTEGER END FROM range(20000)"
    result = invoke("fleet", "query", str(tiny), sql, "-f", "csv")
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "Conversion Error" in result.stderr


def test_ctrl_c_stops_a_long_query_at_once(tiny) -> None:
    """DuckDB runs a query without returning to Python, so a SIGINT handler alone waits for
    the whole query: this one would take hours (checked: without the query on a thread of
    its own, the process is still running 30 s after Ctrl-C). Ctrl-C must interrupt it and
    exit 130 with one line; the wait here is a hang guard, not a timing."""
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    sql = "SELECT sum(hash(i)) FROM range(1000000000000) t(i)"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dnnlens", "fleet", "query", str(tiny), sql],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    time.sleep(3)  # started, and inside the query
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the query went on after Ctrl-C") from None
    assert proc.returncode == 130
    assert err.strip() == "dnnlens: error: query interrupted" and out == ""
