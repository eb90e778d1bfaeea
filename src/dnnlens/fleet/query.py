"""``fleet query``: DuckDB (embedded) over a dataset, its tables and views defined.

Each table is the Arrow dataset of its files (:meth:`~dnnlens.fleet.dataset.Dataset.files`)
with the table's schema, registered under the table's name, so DuckDB reads the Parquet
files itself (only the columns and row groups a query needs) and no path is read as a
glob pattern. The views of :mod:`dnnlens.fleet.views` are defined on top.

Results are streamed: rows are fetched in blocks of :data:`BLOCK_ROWS` (DuckDB
``fetchmany``) and written as they come, so a result of millions of rows takes the memory
of one block. They are laid out for a terminal (every cell terminal-safe; a result longer
than one block gets the column widths of its first block and its row count at the end),
or written as CSV (cells a spreadsheet would run as a formula prefixed with ``'``) or JSON.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import IO, Any

from dnnlens.fleet import schema
from dnnlens.fleet.dataset import FAILURES, Dataset, DatasetError, reading
from dnnlens.fleet.views import VIEWS, view_sql
from dnnlens.report.json_safe import json_safe
from dnnlens.report.text_layout import Grid, cut_middle, wrap
from dnnlens.textsafe import safe


class QueryError(Exception):
    """The SQL failed (syntax, an unknown column ...): DuckDB's message, first line."""


#: Rows fetched from DuckDB at a time, and laid out together in a table.
BLOCK_ROWS = 10_000


@dataclass
class QueryResult:
    """Column names and the rows of one statement, in blocks as DuckDB hands them over
    (no column and no block for a statement without a result). The blocks can be read
    once, while the query is open (:func:`open_query`)."""

    columns: list[str]
    blocks: Iterator[list[tuple[Any, ...]]]


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
    tables = {**dataset.check(), FAILURES: dataset.checked_failure_files()}
    for table, paths in tables.items():
        files = [str(p) for p in paths]
        con.register(table, ds.dataset(files, format="parquet", schema=schema.arrow_schema(table)))
    for view in VIEWS:
        con.execute(view_sql(view))
    if not allow_files:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


@contextmanager
def open_query(
    dataset: Dataset, sql: str, *, allow_files: bool = False, block_rows: int | None = None
) -> Iterator[QueryResult]:
    """The result of ``sql`` (the last statement's, for several) on ``dataset``, streamed
    while the block is open. DuckDB's errors, also those met while fetching, are
    :class:`QueryError`; Ctrl-C is ``KeyboardInterrupt``."""
    duckdb = _duckdb()
    with reading(dataset.root):  # a compaction leaves the files listed here until the end
        con = connect(dataset, allow_files=allow_files)
        interrupted = False
        try:
            with _errors(duckdb, dataset):
                cursor = interruptible(con, lambda: con.execute(sql))
            if cursor.description is None:
                yield QueryResult([], iter(()))
                return
            columns = [str(d[0]) for d in cursor.description]
            blocks = _blocks(duckdb, dataset, con, cursor, block_rows or BLOCK_ROWS)
            yield QueryResult(columns, blocks)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if not interrupted:  # an interrupted query may still be unwinding: the process ends
                con.close()


def interruptible(con: Any, call: Callable[[], Any]) -> Any:
    """``call()`` (a DuckDB call on ``con``), with Ctrl-C honoured at once.

    DuckDB runs a query without returning to Python, so a SIGINT's handler would wait for
    the whole query (a long one: minutes). The call runs on a thread of its own while this
    one waits in short slices, where the handler runs; on ``KeyboardInterrupt`` the query
    is interrupted (``con.interrupt()``) and the interrupt goes on at once (exit 130)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="dnnlens-duckdb", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.05)
    except KeyboardInterrupt:
        con.interrupt()
        raise
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _blocks(
    duckdb: Any, dataset: Dataset, con: Any, cursor: Any, size: int
) -> Iterator[list[tuple[Any, ...]]]:
    while True:
        with _errors(duckdb, dataset):
            rows = interruptible(con, lambda: cursor.fetchmany(size))
        if not rows:
            return
        yield rows


@contextmanager
def _errors(duckdb: Any, dataset: Dataset) -> Iterator[None]:
    """DuckDB's errors as ours; one met reading a table's files (damaged past their
    footer, which :meth:`~dnnlens.fleet.dataset.Dataset.check` reads) names the file."""
    try:
        yield
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None  # Ctrl-C, which DuckDB reports as its own error
    except UnicodeDecodeError:  # a value DuckDB hands over as text is not UTF-8
        for table in schema.TABLES:
            dataset.find_damage(table)
        raise DatasetError(f"{dataset.root}: a text value is not UTF-8 (damaged)") from None
    except duckdb.Error as exc:
        message = (str(exc).strip().splitlines() or ["query failed"])[0]
        table = _READING.search(message)
        if table and table.group(1) in schema.TABLES:
            dataset.find_damage(table.group(1))
        raise QueryError(message) from None


#: How DuckDB says that reading a registered table failed.
_READING = re.compile(r"reading the stream registered as '(\w+)' failed")


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


def table_lines(result: QueryResult, width: int) -> Iterator[tuple[str, str]]:
    """The result as a text table fitted to ``width`` (``(text, style)`` per line).

    A result of one block is laid out whole, its row count first; a longer one with the
    widths of its first block (a longer cell is cut with an ellipsis, a number is never
    cut) and its row count last."""
    first = next(result.blocks, [])
    numeric = [
        all(isinstance(r[i], int | float | Decimal) or r[i] is None for r in first)
        for i in range(len(result.columns))
    ]
    # a row too wide for the terminal leaves out its rightmost columns, never the first
    columns = [
        (c, "right" if n else "flex", i)
        for i, (c, n) in enumerate(zip(result.columns, numeric, strict=True))
    ]
    second = next(result.blocks, None)
    grid = Grid(title=f"{len(first):,} row(s)", columns=columns)
    for row in first:
        grid.add_row(*(cell_text(v) for v in row))
    if second is None:
        yield from grid.lines(width)
        return
    widths = grid.widths(width)
    yield "rows (the column widths of the first " + f"{len(first):,})", "bold"
    yield _row([h for h, *_ in columns], widths, columns), "bold"
    count = 0
    for block in itertools.chain([first, second], result.blocks):
        count += len(block)
        for row in block:
            yield _row([safe(cell_text(v)) for v in row], widths, columns), ""
    yield f"{count:,} row(s)", "bold"
    left = [c for (c, *_), w in zip(columns, widths, strict=True) if not w]
    if left:
        note = f"left out at {width} columns: {', '.join(left)} (--width or -f csv)"
        for line in wrap(note, width):
            yield line, "dim"


def _row(cells: list[str], widths: list[int], columns: list[tuple[str, str, int]]) -> str:
    """One table line: text cut in its middle to its column, numbers right-aligned, the
    columns the first block's layout left out (width 0) left out."""
    out = []
    for text, w, (_, justify, _) in zip(cells, widths, columns, strict=True):
        if not w:
            continue
        if justify == "right":
            out.append(text.rjust(w))
        else:
            out.append(cut_middle(text, w).ljust(w))
    return " ".join(out).rstrip()


def write_csv(result: QueryResult, out: IO[str]) -> None:
    """The result as CSV (header first; NULL is an empty cell), a block at a time."""
    import pandas as pd

    from dnnlens.report.tables_export import neutralise_formulas

    header = True
    for block in itertools.chain(result.blocks, [[]]):
        if block or header:
            frame = pd.DataFrame(
                [[_csv_value(v) for v in r] for r in block], columns=result.columns, dtype=object
            )
            neutralise_formulas(frame).to_csv(out, index=False, header=header)
            header = False


def _csv_value(value: Any) -> Any:
    """Lists and structs as JSON text; everything else as it is."""
    if isinstance(value, list | dict | tuple):
        return safe(json.dumps(plain(value), ensure_ascii=False))
    if isinstance(value, str):
        return safe(value)
    return value


def write_json(result: QueryResult, out: IO[str]) -> None:
    """The result as a JSON array of objects, one per row (as ``json.dumps(rows,
    indent=2)`` writes it), a block at a time."""
    first = True
    for block in result.blocks:
        for r in block:
            row = dict(zip(result.columns, map(plain, r), strict=True))
            text = json.dumps(row, indent=2, ensure_ascii=False)
            out.write(("[\n" if first else ",\n") + _json_text(textwrap.indent(text, "  ")))
            first = False
    out.write("[]\n" if first else "\n]\n")


def _json_text(text: str) -> str:
    """JSON text with every non-printable character but its own line ends as ``\\uXXXX``
    (still the same JSON value), so that no control sequence or bidi override reaches a
    terminal that shows it."""
    return "".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text)
