"""``fleet query``: DuckDB (embedded) over a dataset, its tables and views defined.

Each table is the Arrow dataset of its files (:meth:`~dnnlens.fleet.dataset.Dataset.files`)
with the table's schema, registered under the table's name, so DuckDB reads the Parquet
files itself (only the columns and row groups a query needs) and no path is read as a
glob pattern. The views of :mod:`dnnlens.fleet.views` are defined on top.

Results are laid out for a terminal (every cell terminal-safe), or written as CSV (cells a
spreadsheet would run as a formula prefixed with ``'``) or JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import IO, Any

from dnnlens.fleet import schema
from dnnlens.fleet.dataset import Dataset
from dnnlens.fleet.views import VIEWS, view_sql
from dnnlens.report.json_safe import json_safe
from dnnlens.report.text_layout import Grid
from dnnlens.textsafe import safe


class QueryError(Exception):
    """The SQL failed (syntax, an unknown column ...): DuckDB's message, first line."""


@dataclass
class QueryResult:
    """Column names and rows of one statement (none for a statement without a result)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise QueryError("fleet query needs duckdb: pip install 'dnnlens[fleet]'") from None
    return duckdb


def connect(dataset: Dataset, *, allow_files: bool = False) -> Any:
    """An in-memory DuckDB connection with the dataset's tables and views.

    Unless ``allow_files``, the connection is read-only over the dataset: external access
    (``read_csv``, ``COPY ... TO``, ``ATTACH``, ``INSTALL``) is turned off once the views
    exist, and the setting is locked so that SQL cannot turn it back on."""
    import pyarrow.dataset as ds

    duckdb = _duckdb()
    con = duckdb.connect(":memory:")
    for table, paths in dataset.check().items():
        files = [str(p) for p in paths]
        con.register(table, ds.dataset(files, format="parquet", schema=schema.arrow_schema(table)))
    for view in VIEWS:
        con.execute(view_sql(view))
    if not allow_files:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


def run_query(dataset: Dataset, sql: str, *, allow_files: bool = False) -> QueryResult:
    """The result of ``sql`` (the last statement's, for several) on ``dataset``."""
    duckdb = _duckdb()
    con = connect(dataset, allow_files=allow_files)
    try:
        cursor = con.execute(sql)
        if cursor.description is None:
            return QueryResult([], [])
        columns = [str(d[0]) for d in cursor.description]
        return QueryResult(columns, cursor.fetchall())
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None  # Ctrl-C, which DuckDB reports as its own error
    except duckdb.Error as exc:
        raise QueryError((str(exc).strip().splitlines() or ["query failed"])[0]) from None
    finally:
        con.close()


# -- output ------------------------------------------------------------------------------


def cell_text(value: Any) -> str:
    """One value as a table cell: NULL, numbers with 6 significant digits, lists as JSON."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | dict | tuple):
        return json.dumps(plain(value), ensure_ascii=False)
    return str(value)


def plain(value: Any) -> Any:
    """``value`` as JSON data: times as ISO text, decimals as numbers, NaN as null."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return json_safe(value)


def table_lines(result: QueryResult, width: int) -> list[tuple[str, str]]:
    """The result as a text table fitted to ``width`` (``(text, style)`` per line)."""
    numeric = [
        all(isinstance(r[i], int | float | Decimal) or r[i] is None for r in result.rows)
        for i in range(len(result.columns))
    ]
    grid = Grid(
        title=f"{len(result.rows):,} row(s)",
        columns=[
            (c, "right" if n else "flex") for c, n in zip(result.columns, numeric, strict=True)
        ],
    )
    for row in result.rows:
        grid.add_row(*(cell_text(v) for v in row))
    return grid.lines(width)


def write_csv(result: QueryResult, out: IO[str]) -> None:
    """The result as CSV (header first; NULL is an empty cell)."""
    import pandas as pd

    from dnnlens.report.tables_export import neutralise_formulas

    frame = pd.DataFrame(
        [[_csv_value(v) for v in r] for r in result.rows], columns=result.columns, dtype=object
    )
    neutralise_formulas(frame).to_csv(out, index=False)


def _csv_value(value: Any) -> Any:
    """Lists and structs as JSON text; everything else as it is."""
    if isinstance(value, list | dict | tuple):
        return safe(json.dumps(plain(value), ensure_ascii=False))
    if isinstance(value, str):
        return safe(value)
    return value


def write_json(result: QueryResult, out: IO[str]) -> None:
    """The result as a JSON array of objects, one per row."""
    rows = [dict(zip(result.columns, map(plain, r), strict=True)) for r in result.rows]
    out.write(_json_text(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n")


def _json_text(text: str) -> str:
    """JSON text with every non-printable character but its own line ends as ``\\uXXXX``
    (still the same JSON value), so that no control sequence or bidi override reaches a
    terminal that shows it."""
    return "".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text)
