"""Parse the text of torch.profiler's ``key_averages().table()`` into a DataFrame.

The head of the table (rule, header, rule) goes through ``grammars/torch_table.lark``
(LALR, transformer passed in) once per distinct head; row lines are split into cells with
the grammar's CELL pattern once per distinct line (memoised), so a log that prints the same
profile every few steps pays for each table's own lines, never lark per line. Each cell is
put under its column by its position against the dashes of the rule line, so any column
set works (with or without ``group_by_input_shape``, CUDA, memory, FLOPs or
``Source Location`` columns), in any sort order, with names cut short by ``...``.

Known columns get fixed names; times are converted to milliseconds:

================== =====================================================
column             header as printed
================== =====================================================
name               Name
self_cpu_pct       Self CPU %
self_cpu_ms        Self CPU
cpu_total_pct      CPU total %
cpu_total_ms       CPU total
cpu_time_avg_ms    CPU time avg
calls              # of Calls
input_shapes       Input Shapes (``group_by_input_shape=True``)
truncated          the name ends with ``...`` (cut to the column width)
================== =====================================================

Other columns become snake case (``Self CUDA`` -> ``self_cuda_ms``, ``CPU Mem`` ->
``cpu_mem_bytes``, ``Total MFLOPs`` -> ``total_mflops``). The footer lines
(``Self CPU time total: 20.667ms``) become :attr:`ProfilerTable.totals_ms`.

:class:`TableFinder` finds such tables in a log that holds other lines too (verbose lines
then the table printed at the end of the run) while the line scanner reads it, and notes the
``profiler_start`` / ``profiler_stop`` lines some PyTorch builds print, which mark the
profiled window inside a longer log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import numpy as np
from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

if TYPE_CHECKING:
    import pandas as pd

_TIME = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(ns|us|ms|s)")
_PCT = re.compile(r"(-?\d+(?:\.\d+)?)%")
#: memory as torch prints it: ``96.00 KB``, ``-32.02 KB``, ``0 B`` (torch 2.x), ``1.00 Mb``
#: (older releases)
_MEM = re.compile(r"(-?\d+(?:\.\d+)?)\s*([bB]|[KMGT][bB])")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
_MEM_BYTES = {
    **{u: 1024**i for i, u in enumerate(("b", "Kb", "Mb", "Gb", "Tb"))},
    **{u: 1024**i for i, u in enumerate(("B", "KB", "MB", "GB", "TB"))},
}
_RULE_LINE = re.compile(r"-{3,}(?: +-{3,})+\s*")
_DASHES = re.compile(r"-+")
_MARKER = re.compile(r"\bprofiler_(start|stop)\b")

#: Header -> column name and value kind, for the columns every table has.
KNOWN_COLUMNS: dict[str, tuple[str, str]] = {
    "Name": ("name", "text"),
    "Self CPU %": ("self_cpu_pct", "pct"),
    "Self CPU": ("self_cpu_ms", "time"),
    "CPU total %": ("cpu_total_pct", "pct"),
    "CPU total": ("cpu_total_ms", "time"),
    "CPU time avg": ("cpu_time_avg_ms", "time"),
    "# of Calls": ("calls", "int"),
    "Input Shapes": ("input_shapes", "text"),
    "Source Location": ("source_location", "text"),
    "Overload Name": ("overload_name", "text"),
    "Node ID": ("node_id", "int"),
}
MAIN_COLUMNS = (
    "name",
    "self_cpu_pct",
    "self_cpu_ms",
    "cpu_total_pct",
    "cpu_total_ms",
    "cpu_time_avg_ms",
    "calls",
    "input_shapes",
)


Spans = tuple[tuple[int, int], ...]


class TableParseError(ValueError):
    """The text is not a profiler table; the message says where and why."""


@dataclass
class ProfilerTable:
    """One parsed ``key_averages().table()``.

    ``columns`` holds each column's values (one per row); :attr:`rows` is the same as a
    DataFrame, built on first use: a log that prints its profile every few steps holds
    thousands of tables, most of which are only counted or linked.
    """

    columns: dict[str, np.ndarray]
    headers: list[str]
    totals_ms: dict[str, float] = field(default_factory=dict)
    source: str = ""
    line: int = 0
    size: int = 0

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The table's rows (columns as described in the module doc)."""
        import pandas as pd

        return pd.DataFrame(self.columns, index=pd.RangeIndex(self.size), copy=False)

    @property
    def by_input_shape(self) -> bool:
        """True for a ``group_by_input_shape=True`` table."""
        return "input_shapes" in self.columns


class _HeadTransformer(Transformer):
    """The head of a table: the column spans of its rule and each header's text."""

    def header(self, c: list[Token]) -> list[Token]:
        return c

    def head(self, c: list[Any]) -> tuple[Spans, tuple[str, ...]]:
        rule, header = c[0], c[1]
        offset = rule.column - 1
        spans = tuple((offset + m.start(), offset + m.end()) for m in _DASHES.finditer(str(rule)))
        headers = [""] * len(spans)
        for tok in header:
            i = _column_of(tok.column - 1, tok.end_column - 1, spans)
            headers[i] = f"{headers[i]} {tok}".strip()
        return spans, tuple(headers)


@lru_cache(maxsize=1)
def table_parser() -> Lark:
    """The LALR parser of a table's head (rule, header, rule), with its transformer."""
    grammar = (files("dnnlens.parsers") / "grammars" / "torch_table.lark").read_text()
    return Lark(
        grammar,
        parser="lalr",
        start=["head", "start"],  # ``start`` keeps the row and footer terminals defined
        transformer=_HeadTransformer(),
        cache=False,
    )


@lru_cache(maxsize=1)
def _terminals() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The grammar's CELL and FOOTER patterns, for splitting row and footer lines."""
    parser = table_parser()
    cell, footer = (parser.get_terminal(n).pattern.to_regexp() for n in ("CELL", "FOOTER"))
    return re.compile(cell), re.compile(footer)


@lru_cache(maxsize=4096)
def _head(rule: str, header: str) -> tuple[Spans, tuple[str, ...]]:
    """Column spans and headers of a table head (each distinct head parsed once)."""
    try:
        return table_parser().parse(f"{rule}\n{header}\n{rule}\n", start="head")
    except LarkError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TableParseError(first) from None


@lru_cache(maxsize=1 << 16)
def _cells(line: str, spans: Spans) -> tuple[str | None, ...]:
    """The cells of a row line under their columns (each distinct line split once)."""
    row: list[str | None] = [None] * len(spans)
    for m in _terminals()[0].finditer(line):
        i = _column_of(m.start(), m.end(), spans)
        row[i] = m.group() if row[i] is None else f"{row[i]} {m.group()}"
    return tuple(row)


def _column_of(start: int, end: int, spans: Spans) -> int:
    """Index of the span that overlaps ``[start, end)`` most (cells are right or left
    aligned); in a gap, the nearest span."""
    best, best_overlap = -1, 0
    for i, (a, b) in enumerate(spans):
        overlap = min(end, b) - max(start, a)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    if best < 0:
        best = min(
            range(len(spans)), key=lambda i: min(abs(spans[i][0] - end), abs(spans[i][1] - start))
        )
    return best


def _snake(header: str) -> str:
    text = header.replace("%", " pct").replace("#", "n")
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_") or "column"


def time_ms(text: str) -> float:
    """``568.794us`` -> 0.568794; NaN when ``text`` is not a time."""
    m = _TIME.fullmatch(text.strip())
    return float(m.group(1)) * _TO_MS[m.group(2)] if m else math.nan


@lru_cache(maxsize=1 << 16)
def _number(kind: str, text: str) -> Any:
    """A cell's value (remembered: tables printed every few steps repeat most cells)."""
    if kind == "time":
        return time_ms(text)
    if kind == "pct":
        m = _PCT.fullmatch(text)
        return float(m.group(1)) if m else math.nan
    if kind == "int":
        return int(text) if text.lstrip("-").isdigit() else math.nan
    if kind == "mem":
        m = _MEM.fullmatch(text)
        return float(m.group(1)) * _MEM_BYTES[m.group(2)] if m else math.nan
    if kind == "number":
        return float(text) if _NUMBER.fullmatch(text) else math.nan
    return text


def _guess_kind(values: list[str | None]) -> str:
    """Value kind of a column the table does not name in KNOWN_COLUMNS."""
    present = [v for v in values if v is not None and v != "--"]
    for kind, pattern in (("time", _TIME), ("pct", _PCT), ("mem", _MEM), ("number", _NUMBER)):
        if present and all(pattern.fullmatch(v) for v in present):
            return kind
    return "text"


def _column_names(headers: list[str], cells: list[list[str | None]]) -> list[tuple[str, str]]:
    named: list[tuple[str, str]] = []
    for i, h in enumerate(headers):
        if h in KNOWN_COLUMNS:
            named.append(KNOWN_COLUMNS[h])
            continue
        kind = _guess_kind([row[i] for row in cells])
        suffix = {"time": "_ms", "mem": "_bytes"}.get(kind, "")
        named.append((_snake(h) + suffix, kind))
    return named


def _footer(text: str) -> tuple[str, float]:
    label, _, value = text.partition(":")
    return _snake(label) + "_ms", time_ms(value)


def table_from_lines(lines: list[str], source: str = "<table>", line: int = 1) -> ProfilerTable:
    """Build a table from its lines: rule, header, rule, rows, closing rule, footers.

    The head goes through the grammar once per distinct head, each row line is split into
    cells once per distinct line: the cost is that of the table's own lines.
    """
    if len(lines) < 4:
        raise TableParseError(f"{source}:{line}: not a profiler table (too few lines)")
    try:
        spans, head = _head(lines[0].rstrip(), lines[1].rstrip())
    except TableParseError as exc:
        raise TableParseError(f"{source}:{line}: not a profiler table ({exc})") from None
    headers = list(head)
    name_col = headers.index("Name") if "Name" in headers else 0
    footer = _terminals()[1]
    cells: list[list[str | None]] = []
    footers: list[str] = []
    closed = False
    for text in lines[3:]:
        if closed:
            m = footer.search(text)
            if m:
                footers.append(m.group())
            continue
        if text[:3] == "---" and _RULE_LINE.fullmatch(text):
            closed = True
            continue
        row = _cells(text, spans)
        if all(v is None for v in row):
            continue  # a blank line
        if row[name_col] is None and cells:  # continuation line of a multi-line cell
            prev = cells[-1]
            for i, value in enumerate(row):
                if value is not None:
                    prev[i] = value if prev[i] is None else f"{prev[i]}\n{value}"
            continue
        cells.append(list(row))
    return _build(headers, cells, footers, source, line)


def _build(
    headers: list[str],
    cells: list[list[str | None]],
    footers: list[str],
    source: str,
    line: int,
) -> ProfilerTable:
    named = _column_names(headers, cells)
    data: dict[str, Any] = {}
    for i, (name, kind) in enumerate(named):
        while name in data:
            name += "_"
        if kind == "text":
            data[name] = np.array([row[i] for row in cells], dtype=object)
        else:
            data[name] = np.array(
                [math.nan if row[i] is None else _number(kind, row[i]) for row in cells],
                np.float64,
            )
    if "name" in data:
        data["truncated"] = np.array(
            [isinstance(v, str) and v.endswith("...") for v in data["name"]], dtype=bool
        )
    if "calls" in data and not np.isnan(data["calls"]).any():
        data["calls"] = data["calls"].astype(np.int64)
    totals = dict(_footer(f) for f in footers)
    return ProfilerTable(
        columns=data, headers=headers, totals_ms=totals, source=source, line=line, size=len(cells)
    )


def parse_table(text: str, source: str = "<table>", line: int = 1) -> ProfilerTable:
    """Parse one table (optionally with its footer lines); raise TableParseError if it is none.

    ``source`` and ``line`` say where the table came from (for messages and reports).
    """
    finder = TableFinder(source)
    finder.feed(text.splitlines())
    finder.close()
    if finder.tables:
        table = finder.tables[0]
        table.line += line - 1
        return table
    why = finder.errors[0].split(": ", 1)[1] if finder.errors else "no rule, header, rule lines"
    raise TableParseError(f"{source}:{line}: not a profiler table ({why})")


def read_table_file(path: str) -> ProfilerTable:
    """Parse a file holding one table (``prof.key_averages().table()`` written out)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        tables = find_tables(fh, source=path)
    if not tables:
        raise TableParseError(f"{path}: no profiler table found")
    return tables[0]


# --------------------------------------------------------------------------------------------
# Finding tables inside a longer log


class TableFinder:
    """Collects profiler tables and profiler start/stop lines from a stream of lines.

    Feed it the chunks the line scanner reads (:meth:`watch` passes them through unchanged).
    A chunk without ``---`` and without ``profiler_st`` costs two substring searches; only
    chunks holding a table are looked at line by line.
    """

    def __init__(self, source: str = "<lines>") -> None:
        self.source = source
        self.tables: list[ProfilerTable] = []
        self.errors: list[str] = []
        #: the line each error names (``source:line: ...``), for :meth:`absorb`
        self.error_lines: list[int] = []
        #: (line number, "start" | "stop") of the profiler marker lines, in order
        self.markers: list[tuple[int, str]] = []
        self._lineno = 0
        self._block: list[str] = []
        self._block_line = 0
        self._state = ""  # "" idle, then header, rule2, rows, footer

    def watch(self, chunks: Iterable[list[str]]) -> Iterator[list[str]]:
        """Yield ``chunks`` unchanged, collecting tables on the way."""
        for chunk in chunks:
            self.feed(chunk)
            yield chunk
        self.close()

    @property
    def idle(self) -> bool:
        """True when no table is being read (lines without ``---`` cannot start one)."""
        return not self._state

    @property
    def lines_seen(self) -> int:
        """Lines looked at or skipped so far."""
        return self._lineno

    def skip(self, n: int) -> None:
        """Count ``n`` lines the caller knows hold no rule line and no profiler marker."""
        self._lineno += n

    def seek(self, lines_seen: int) -> None:
        """Set how many lines were seen: the caller skipped the ones between (while idle,
        only rule lines and profiler markers matter)."""
        self._lineno = lines_seen

    def line(self, lineno: int, text: str) -> None:
        """Look at line ``lineno`` (1-based; the lines before it that were not shown hold no
        rule line and no profiler marker, unless a table is open), with or without its end."""
        self._lineno = lineno
        self._line(text.rstrip("\r\n"))

    def feed(self, lines: list[str]) -> None:
        """Look at the next lines (with or without their line ends).

        While no table is being read only lines holding ``---`` or ``profiler_st`` can
        matter: the others are counted, not looked at one by one.
        """
        if not self._state:
            text = "".join(lines)
            if "---" not in text and "profiler_st" not in text:
                self._lineno += len(lines)
                return
        hits = [i for i, line in enumerate(lines) if "---" in line or "profiler_st" in line]
        start = self._lineno
        i, n, h = 0, len(lines), 0
        while i < n:
            if not self._state:  # jump to the next line that can start a table or mark
                while h < len(hits) and hits[h] < i:
                    h += 1
                if h == len(hits):
                    break
                i = hits[h]
            self._lineno = start + i + 1
            self._line(lines[i].rstrip("\r\n"))
            i += 1
        self._lineno = start + n

    def close(self) -> None:
        """End of input: finish a table still being read."""
        if self._state in ("rows", "footer"):
            self._emit()
        self._reset()

    def _reset(self) -> None:
        self._block, self._state = [], ""

    def _line(self, line: str) -> None:
        state = self._state
        is_rule = line[:3] == "---" and _RULE_LINE.fullmatch(line) is not None
        if not state:
            if is_rule:
                self._block, self._block_line, self._state = [line], self._lineno, "header"
            elif "profiler_st" in line:
                m = _MARKER.search(line)
                if m:
                    self.markers.append((self._lineno, m.group(1)))
            return
        if state == "header":
            if is_rule or not line.strip():
                self._reset()
                self._line(line)
                return
            self._block.append(line)
            self._state = "rule2"
        elif state == "rule2":
            if not is_rule:
                self._reset()
                self._line(line)
                return
            self._block.append(line)
            self._state = "rows"
        elif state == "rows":
            self._block.append(line)
            if is_rule:
                self._state = "footer"
        elif state == "footer":
            if "time total:" in line:
                self._block.append(line)
            else:
                self._emit()
                self._reset()
                self._line(line)

    def _emit(self) -> None:
        if self._state == "rows":  # no closing rule: the table was cut off
            self.errors.append(
                f"{self.source}:{self._block_line}: profiler table cut off "
                f"after {len(self._block) - 3} rows; they were read"
            )
            self.error_lines.append(self._block_line)
            self._block.append(self._block[0])
        try:
            self.tables.append(table_from_lines(self._block, self.source, self._block_line))
        except TableParseError as exc:
            self.errors.append(str(exc))
            self.error_lines.append(self._block_line)

    # -- finders of the parts of one input (parallel reading) ---------------------------------
    @property
    def found(self) -> tuple[int, int, int]:
        """How many tables, markers and errors were found so far."""
        return len(self.tables), len(self.markers), len(self.errors)

    def absorb(self, part: TableFinder, offset: int, skip: tuple[int, int, int]) -> None:
        """Take in what ``part`` found in the next lines of the same input, numbered from 1
        there (``offset``: the lines before them), leaving out its first ``skip`` tables,
        markers and errors (found again here); then go on in ``part``'s state."""
        for table in part.tables[skip[0] :]:
            table.line += offset
            self.tables.append(table)
        self.markers.extend((line + offset, what) for line, what in part.markers[skip[1] :])
        for line, error in zip(part.error_lines[skip[2] :], part.errors[skip[2] :], strict=True):
            named = f"{part.source}:{line}:"
            if error.startswith(named):
                error = f"{part.source}:{line + offset}:{error[len(named) :]}"
            self.errors.append(error)
            self.error_lines.append(line + offset)
        self._block, self._state = list(part._block), part._state
        self._block_line = part._block_line + offset
        self._lineno = part._lineno + offset


def find_tables(lines: Iterable[str], source: str = "<lines>") -> list[ProfilerTable]:
    """Every profiler table inside ``lines`` (a log with verbose lines, a table file ...)."""
    finder = TableFinder(source)
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= 4096:
            finder.feed(chunk)
            chunk = []
    finder.feed(chunk)
    finder.close()
    return finder.tables
