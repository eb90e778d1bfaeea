"""``fleet query`` under hostile input: control sequences from stored text in every output
format, and SQL that reaches for files outside the dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

duckdb = pytest.importorskip("duckdb")

OSC52 = "\x1b]52;c;aGk=\x07"
BIDI = "\u202e"
LINE = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,{impl},undef,"
    "src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,,,16x3x3x3,0.25"
)


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    """A dataset of one run whose implementation names carry OSC 52 and a bidi override."""
    root = tmp_path_factory.mktemp("evil")
    log = root / "evil.log"
    impls = [f"jit{OSC52}", f"jit{BIDI}cba", "jit\x9b2J"]
    log.write_text("\n".join(LINE.format(impl=i) for i in impls for _ in range(2)) + "\n")
    out = root / "ds"
    assert invoke("fleet", "build", "-w", "1", str(log), "-o", str(out)).exit_code == 0
    return out


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_no_control_sequence_reaches_the_output(evil, fmt) -> None:
    result = invoke("fleet", "query", str(evil), "SELECT DISTINCT impl FROM primitives", "-f", fmt)
    assert result.exit_code == 0, result.stderr
    for bad in ("\x1b", "\x07", BIDI, "\x9b"):
        assert bad not in result.stdout, (fmt, bad)
    assert "\\x1b]52" in result.stdout or "\\u001b]52" in result.stdout


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/hostname')",
        "COPY (SELECT 1) TO '{tmp}/copied.csv'",
        "ATTACH '{tmp}/other.duckdb' AS other",
    ],
)
def test_queries_cannot_reach_files_by_default(evil, tmp_path, sql) -> None:
    result = invoke("fleet", "query", str(evil), sql.format(tmp=tmp_path))
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_allow_files_lets_a_query_write(evil, tmp_path) -> None:
    target = tmp_path / "copied.csv"
    sql = f"COPY (SELECT count(*) AS n FROM runs) TO '{target}'"
    assert invoke("fleet", "query", str(evil), sql, "--allow-files").exit_code == 0
    assert target.read_text().splitlines() == ["n", "1"]


def test_an_interrupted_query_is_exit_130_in_one_line(evil, monkeypatch) -> None:
    """DuckDB turns Ctrl-C into its own exception; the command line must see an interrupt."""
    from dnnlens.fleet import query

    class Interrupted:
        def execute(self, sql: str) -> None:
            raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

        def close(self) -> None:
            pass

    monkeypatch.setattr(query, "connect", lambda dataset, allow_files=False: Interrupted())
    result = invoke("fleet", "query", str(evil), "SELECT 1")
    assert result.exit_code == 130
    assert "internal error" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 1
