"""``fleet query`` (DuckDB, the views, output formats, hostile text) and ``fleet diff``
options, on small datasets of the sample logs and scaled copies of them."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.fleet import schema
from dnnlens.fleet.views import VIEWS
from dnnlens.reading import load
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules
from test_fleet_logs import write_copy

duckdb = pytest.importorskip("duckdb")

DOCS = Path(__file__).resolve().parent.parent / "docs" / "fleet.md"
ESC = "\x1b"


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def trio(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """``base`` (convnet_nchw_infer), ``later`` (times x 1.001, modified an hour later),
    ``slow`` (times x 2, a day later) and ``lstm`` (another workload)."""
    root = tmp_path_factory.mktemp("trio")
    logs = {
        "base": write_copy(root / "logs" / "base.log", "convnet_nchw_infer", 1.0),
        "later": write_copy(root / "logs" / "later.log", "convnet_nchw_infer", 1.001),
        "slow": write_copy(root / "logs" / "slow.log", "convnet_nchw_infer", 2.0),
        "lstm": write_copy(root / "logs" / "lstm.log", "lstm_infer", 1.0),
    }
    for offset, name in ((0, "base"), (3600, "later"), (86400, "slow"), (0, "lstm")):
        os.utime(logs[name], (1_700_000_000 + offset, 1_700_000_000 + offset))
    out = root / "ds"
    result = invoke("fleet", "build", "-w", "1", *map(str, logs.values()), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    return out, logs


def query(out: Path, sql: str, *args: str) -> list[dict]:
    result = invoke("fleet", "query", str(out), sql, "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_slowest_primitives_is_the_typical_iteration_by_primitive(trio) -> None:
    out, logs = trio
    a = Analysis(load([str(logs["base"])]))
    top = a.typical.by_record.sort_values(ascending=False)
    got = query(out, "SELECT * FROM slowest_primitives WHERE run = 'base' ORDER BY position")
    assert [g["position"] for g in got] == list(range(1, len(got) + 1))
    assert [g["ms_per_iteration"] for g in got] == top.tolist()
    first = a.log.records[int(top.index[0])]
    assert (got[0]["kind"], got[0]["problem"]) == (first.kind, first.problem)
    assert got[0]["share_of_iteration"] == a.typical.share(float(top.iloc[0]))


def test_findings_by_rule_counts_runs(trio) -> None:
    out, logs = trio
    expected: dict[str, set[str]] = {}
    for run, path in logs.items():
        a = Analysis(load([str(path)]))
        for f in apply_rules(a.prepare(), RuleOptions(search_config=False)):
            expected.setdefault(f.rule, set()).add(run)
    got = {g["rule"]: g for g in query(out, "SELECT * FROM findings_by_rule")}
    assert {r: g["runs"] for r, g in got.items()} == {r: len(v) for r, v in expected.items()}
    assert got["layout-round-trip"]["findings"] == 3  # base, later and slow


def test_run_trend_follows_each_workload_in_time(trio) -> None:
    out, _ = trio
    got = query(out, "SELECT run, previous_run, change_vs_previous FROM run_trend")
    by_run = {g["run"]: g for g in got}
    assert by_run["base"]["previous_run"] is None and by_run["lstm"]["previous_run"] is None
    assert by_run["later"]["previous_run"] == "base"
    assert by_run["slow"]["previous_run"] == "later"
    assert by_run["later"]["change_vs_previous"] == pytest.approx(0.001)
    assert by_run["slow"]["change_vs_previous"] == pytest.approx(2.0 / 1.001 - 1)


def test_query_formats(trio) -> None:
    out, _ = trio
    sql = "SELECT run, exec_count, onednn_version, inputs FROM runs ORDER BY run"
    table = invoke("fleet", "query", str(out), sql, "--width", "120")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0] == "4 row(s)" and lines[1].split() == [
        "run", "exec_count", "onednn_version", "inputs",
    ]  # fmt: skip
    assert lines[2].split()[:3] == ["base", "165", "3.12.0"]
    text = invoke("fleet", "query", str(out), sql, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["run"] for r in rows] == ["base", "later", "lstm", "slow"]
    assert json.loads(rows[0]["inputs"])[0].endswith("base.log")
    empty = invoke("fleet", "query", str(out), "SELECT * FROM findings WHERE false")
    assert empty.exit_code == 0 and empty.stdout.startswith("0 row(s)")


def test_bad_sql_is_one_line_and_exit_2(trio) -> None:
    out, _ = trio
    result = invoke("fleet", "query", str(out), "SELEC run FROM runs")
    assert result.exit_code == 2
    assert result.stderr.startswith("dnnlens: error: Parser Error:")
    assert len(result.stderr.splitlines()) == 1
    missing = invoke("fleet", "query", str(out), "SELECT nope FROM runs")
    assert missing.exit_code == 2 and "nope" in missing.stderr


def test_views_are_printed_and_documented(trio) -> None:
    out, _ = trio
    result = invoke("fleet", "query", str(out), "--views")
    assert result.exit_code == 0
    docs = DOCS.read_text()
    for view in VIEWS:
        assert f"CREATE VIEW {view.name} AS" in result.stdout
        assert f"`{view.name}`" in docs, view.name
    con = duckdb.connect()  # the printed SQL runs as it is, over the files read directly
    for table in schema.TABLES:
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{out}/{table}/*.parquet')")
    con.execute(result.stdout)
    assert con.execute("SELECT count(*) FROM slowest_primitives").fetchone()[0] > 0
    con.close()


def test_every_column_is_documented() -> None:
    docs = DOCS.read_text()
    for table, columns in schema.TABLES.items():
        assert f"### `{table}`" in docs, table
        section = docs.split(f"### `{table}`", 1)[1].split("\n### ", 1)[0]
        for column in columns:
            assert f"| `{column.name}` |" in section, (table, column.name)


def test_the_dataset_reads_in_pandas_and_duckdb_alone(trio) -> None:
    """What docs/fleet.md shows: pandas and DuckDB read each table directory as one table."""
    out, _ = trio
    runs = pd.read_parquet(out / "runs")
    assert sorted(runs["run"]) == ["base", "later", "lstm", "slow"]
    assert str(runs["modified_at"].dtype).startswith("datetime64")
    count = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{out}/iterations/*.parquet') WHERE run = 'base'"
    ).fetchall()
    assert count == [(11,)]  # 11 passes: ``done: convnet_nchw_infer passes=11`` ends the log


def test_text_from_a_log_is_safe_in_every_format(tmp_path) -> None:
    """An implementation name with ``ESC[2J`` and one that a spreadsheet runs: the table
    shows the escape as text, CSV prefixes the formula with ``'``."""
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,reorder,{impl},undef,"
        "src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,,,16x3x3x3,0.25"
    )
    log = tmp_path / "evil.log"
    log.write_text(
        "\n".join([line.format(impl=f"jit{ESC}[2J")] * 3 + [line.format(impl="=1+1")] * 3) + "\n"
    )
    out = tmp_path / "ds"
    assert invoke("fleet", "build", "-w", "1", str(log), "-o", str(out)).exit_code == 0
    sql = "SELECT impl FROM primitives ORDER BY impl"
    table = invoke("fleet", "query", str(out), sql).stdout
    assert ESC not in table and "jit\\x1b[2J" in table
    text = invoke("fleet", "query", str(out), sql, "--format", "csv").stdout
    assert "'=1+1" in text.splitlines()
    assert ESC not in invoke("fleet", "diff", str(out), "--baseline", "evil").stdout


# -- diff -----------------------------------------------------------------------------------


def test_diff_terminal(trio) -> None:
    out, _ = trio
    result = invoke("fleet", "diff", str(out), "--baseline", "base", "--width", "120")
    assert result.exit_code == 2  # x2 is within the sample's pass-to-pass noise: not decided
    assert "Baseline base: typical iteration 2.09 ms; 2 run(s) compared with it." in result.stdout
    assert "Runs against the baseline (--fail-if-slower 5%" in result.stdout
    lines = [line.split() for line in result.stdout.splitlines()]
    assert ["slow", "4.171", "+100.0%", "low", "refused"] in lines
    assert ["later", "2.088", "+0.1%", "low", "pass"] in lines


def test_diff_thresholds_and_run_patterns(trio) -> None:
    out, _ = trio
    # 2x slower is not more than 100% slower
    assert (
        invoke("fleet", "diff", str(out), "--baseline", "base", "--fail-if-slower", "100").exit_code
        == 0
    )
    doc = json.loads(
        invoke("fleet", "diff", str(out), "--baseline", "base", "--run", "l*", "-f", "json").stdout
    )
    assert doc["compared"] == ["later", "lstm"]  # chosen by name, whatever the workload
    assert doc["slower_runs"] == []  # lstm's iteration is shorter; later is 0.1% slower
    # lstm's primitives are not the baseline's: each counts from zero
    assert {(p["run"], p["change"]) for p in doc["slower_primitives"]} == {("lstm", None)}
    lstm = json.loads(invoke("fleet", "diff", str(out), "--baseline", "lstm", "-f", "json").stdout)
    assert lstm["compared"] == [] and not lstm["slower"]


def test_diff_usage_errors(trio) -> None:
    out, _ = trio
    result = invoke("fleet", "diff", str(out), "--baseline", "nope")
    assert result.exit_code == 2 and "--baseline 'nope': no such run" in result.stderr
    result = invoke("fleet", "diff", str(out), "--baseline", "base", "--fail-if-slower", "x")
    assert result.exit_code == 2 and "expected a percentage" in result.stderr
