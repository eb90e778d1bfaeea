"""The event table (and framework ops) as a dataset on disk: Parquet or CSV.

Layout (Hive partitioning, read by pandas/pyarrow, DuckDB and Spark as one table)::

    DIR/events/run=<run>/rank=<N>/part-0.parquet     (or .csv)
    DIR/ops/run=<run>/rank=0/part-0.parquet          (profiler trace ops, if any)

The runs are those ``dnnlens analyze`` shows for the same inputs (:mod:`dnnlens.analysis.runs`:
a log and its rotations, the logs of several ranks, a log and its profiler trace are one
run each), so a profiler trace paired with its log gets the log's ``run``, and the events
and ops join on it.

``run`` is the run's name as ``analyze`` shows it without ``.gz``/``.json``/``.log``/``.txt``
(:func:`run_name`, as ``fleet build`` names its runs; ``-`` is ``stdin``; a name seen twice
gets ``-2``, ``-3``...). ``rank`` comes from a ``[rankN]`` prefix on the event line
(``torchrun`` prefixes each process's output with ``[rank0]:``), kept by the reader
(``InputScan.event_rank``: the input is never read again, so standard input has its ranks
too); else, in a run of several ranks' logs, from the log's name (``train.rank1.log``: 1);
else 0.

The partition columns live in the directory names, not in the files. Each row also gets
``iteration`` (0-based, see :mod:`dnnlens.analysis.steady`) and ``steady``, from the
analysis of its run over all of its events (``analyze`` looks at the last ``--window``
events; on a log within the window the two are the same), so every run's iterations
start at 0; and the memory descriptors
split per argument, ``<arg>_dtype`` and ``<arg>_layout`` (``src_dtype``, ``wei_layout``,
``diff_dst_dtype``...) for every argument the inputs name, beside ``mds`` as printed.
A value a line does not have (the cache state of an exec line, a timestamp that was not
printed, a tensor that is absent) is NULL in Parquet, an empty cell in CSV.

A CSV file is opened by spreadsheets, which run a cell that starts with ``=``, ``+``,
``-`` or ``@`` (or a tab or carriage return) as a formula: such text cells get a leading
``'`` (the OWASP rule, :func:`neutralise_formulas`). Number columns are left as they are,
so ``-1.5`` stays a number; Parquet is typed and is written unchanged.

``pd.read_parquet("DIR/events")`` or, in DuckDB,
``SELECT * FROM read_parquet('DIR/events/**/*.parquet', hive_partitioning = true)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.runs import Run, rank_in_name
from dnnlens.errors import OutputError
from dnnlens.model import InputScan, MdList

FORMATS = ("parquet", "csv")
_SUFFIXES = (".gz", ".json", ".log", ".txt")
_TRACE = re.compile(r"(\.pt)?\.trace(?=\.json(\.gz)?$)")
#: What each memory descriptor gives its columns: ``<arg>_dtype``, ``<arg>_layout``.
MD_FIELDS = ("dtype", "layout")
#: An argument name that can be part of a column name (others stay in ``mds`` only).
_ARG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}\Z")


class ExportError(Exception):
    """A user-facing problem (missing pyarrow, unwritable directory): one readable line."""


@dataclass
class ExportResult:
    """What was written."""

    files: list[Path] = field(default_factory=list)
    rows: int = 0
    runs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_name(path: str, seen: set[str]) -> str:
    """The ``run`` partition value of an input path (unique within ``seen``, which grows)."""
    if path == "-":
        base = "stdin"
    else:
        base = Path(path).name
        for suffix in _SUFFIXES:
            if base.endswith(suffix) and len(base) > len(suffix):
                base = base[: -len(suffix)]
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", base) or "run"
    name, k = base, 2
    while name in seen:
        name, k = f"{base}-{k}", k + 1
    seen.add(name)
    return name


def md_args(mds_fields: Iterable[MdList]) -> list[str]:
    """The argument names of the (parsed) memory descriptors in ``mds_fields``, in
    first-seen order.

    Names that cannot be part of a column name are left out (``mds`` keeps them as printed).
    """
    seen: dict[str, None] = {}
    for parsed in mds_fields:
        for md in parsed:
            if md.arg and _ARG_NAME.match(md.arg):
                seen.setdefault(md.arg)
    return list(seen)


def md_column_names(args: Sequence[str]) -> list[str]:
    """``<arg>_dtype``, ``<arg>_layout`` of each argument, in order."""
    return [f"{arg}_{what}" for arg in args for what in MD_FIELDS]


def md_columns(mds: MdList, args: Sequence[str]) -> dict[str, str | None]:
    """The data type and layout of each of ``args`` in one (parsed) memory-descriptor field.

    ``None`` where the field names no such argument or its tensor is absent (``undef``):
    a missing value, never an empty string. The layout is the tag of blocked memory
    (``acdb``, ``aBcd8b``), else the format kind (``any``).
    """
    out: dict[str, str | None] = dict.fromkeys(md_column_names(args))
    for md in mds:
        key = f"{md.arg}_dtype"
        if key in out and out[key] is None and not md.is_absent:
            out[key] = md.dtype or None
            out[f"{md.arg}_layout"] = md.layout or None
    return out


def _md_split(
    events: pd.DataFrame, args: Sequence[str], parsed: Mapping[str, MdList]
) -> pd.DataFrame:
    """``events`` with :func:`md_columns` as categorical columns (one per distinct ``mds``
    value, ``parsed`` by the records, so the cost per event is one array lookup)."""
    mds = events["mds"]
    per_value = [md_columns(parsed[str(v)], args) for v in mds.cat.categories]
    codes = mds.cat.codes.to_numpy()
    columns = {}
    for name in md_column_names(args):
        values = pd.Categorical([p[name] for p in per_value], categories=_strings(per_value, name))
        lookup = np.append(values.codes, -1)  # an event without mds (code -1) stays missing
        columns[name] = pd.Categorical.from_codes(
            lookup[codes], categories=values.categories, validate=False
        )
    return events.assign(**columns)


def _strings(rows: list[dict[str, str | None]], name: str) -> pd.Index:
    return pd.Index(sorted({r[name] for r in rows if r[name] is not None}), dtype=str)


def _missing_as_null(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns with the empty string (a field the line did not print) as missing."""
    out = {}
    for col in frame.columns:
        series = frame[col]
        if isinstance(series.dtype, pd.CategoricalDtype) and "" in series.cat.categories:
            out[col] = series.cat.remove_categories([""])
    return frame.assign(**out) if out else frame


def event_ranks(scan: InputScan, lines: np.ndarray) -> tuple[np.ndarray, bool]:
    """The rank of each of the event ``lines`` of one input (0 without a ``[rankN]``
    prefix), and whether any event line of the input had one (as the reader kept them)."""
    if not len(scan.event_rank):
        return np.zeros(len(lines), dtype=np.int32), False
    at = np.searchsorted(np.frombuffer(scan.event_line, dtype=np.int64), lines)
    ranks = np.frombuffer(scan.event_rank, dtype=np.int32)[at]
    return np.maximum(ranks, 0), True


def _frames(
    runs: Sequence[tuple[str, Analysis]], notes: list[str]
) -> list[tuple[str, int, pd.DataFrame]]:
    """Per run and rank, its events with their iteration, from the analysis of that run
    (the one ``analyze`` makes of it: the same passes and warm-up)."""
    parsed: dict[str, MdList] = {}
    for _, analysis in runs:
        # every mds value of the event table is the field of some record
        for r in analysis.log.records:
            if r.mds not in parsed:
                parsed[r.mds] = r.parsed_mds
    categories = {str(v) for _, a in runs for v in a.log.events["mds"].cat.categories}
    args = md_args(parsed[v] for v in sorted(categories))
    out = []
    for name, analysis in runs:
        if not len(analysis.events):  # profiler files alone: their ops only
            continue
        events = _missing_as_null(_md_split(analysis.events, args, parsed))
        ranks = np.zeros(len(events), dtype=np.int64)
        inputs = events["input"].astype(str).to_numpy() if len(events) else np.array([])
        for scan in analysis.log.scans:
            mine = inputs == scan.path
            if not mine.any():
                continue
            found_ranks, found = event_ranks(scan, events["line"].to_numpy()[mine])
            named = rank_in_name(scan.path) if len(analysis.log.scans) > 1 else None
            ranks[mine] = found_ranks if found or named is None else named
            if scan.prefixed and not found:
                rank = named if named is not None else 0
                notes.append(f"{scan.path}: no event line has a [rankN] prefix; rank={rank}")
        for rank in np.unique(ranks).tolist():
            out.append((name, int(rank), events[ranks == rank]))
    return out


def _ops_frames(runs: Sequence[tuple[str, Analysis]]) -> list[tuple[str, pd.DataFrame]]:
    """Framework op tables (PyTorch profiler traces) of each run, under the run's name."""
    out = []
    for name, analysis in runs:
        framework = getattr(analysis.log, "framework", None)
        for trace in getattr(framework, "traces", None) or []:
            ops = getattr(trace, "ops", None)
            if isinstance(ops, pd.DataFrame):
                out.append((name, ops))
    return out


_FORMULA = r"^[=+\-@\t\r]"


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell that a spreadsheet would run prefixed by ``'``.

    Only text columns (object, string, categorical of text) are looked at; a categorical
    column is checked once per category, so a log of a few hundred distinct lines costs
    nothing per row.
    """
    out = frame
    for col in frame.columns:
        series = frame[col]
        if isinstance(series.dtype, pd.CategoricalDtype):
            cats = series.cat.categories
            if (
                not pd.api.types.is_string_dtype(cats.dtype)
                or not cats.astype(str).str.contains(_FORMULA).any()
            ):
                continue
            series = series.astype(object)
        elif series.dtype != object and not pd.api.types.is_string_dtype(series.dtype):
            continue
        text = series.astype(str)
        risky = text.str.contains(_FORMULA)
        if not risky.any():
            continue
        risky[risky] = series[risky].map(lambda v: isinstance(v, str))  # -1 stays a number
        if out is frame:
            out = frame.copy()
        out[col] = series.where(~risky, "'" + text)
    return out


def _write(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = frame.reset_index(drop=True)
    for col in frame.columns:
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            frame[col] = frame[col].cat.remove_unused_categories()
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        neutralise_formulas(frame).to_csv(path, index=False)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ExportError(f"unknown table format {fmt!r} (parquet or csv)")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ExportError(
                "parquet export needs pyarrow: pip install 'dnnlens[parquet]' (or export csv)"
            ) from None


def export_tables(
    analyses: Sequence[Analysis], runs: Sequence[Run], out_dir: Path, fmt: str
) -> ExportResult:
    """Write the event table (and framework ops, when present) of each run under
    ``out_dir``: the runs and their analyses as ``analyze`` makes them
    (:func:`dnnlens.app.session.open_inputs`, every event looked at)."""
    _check_format(fmt)
    result = ExportResult()
    ext = "parquet" if fmt == "parquet" else "csv"
    seen: set[str] = set()
    named = [(run_name(run.name, seen), a) for run, a in zip(runs, analyses, strict=True)]
    try:
        for run, rank, frame in _frames(named, result.notes):
            path = out_dir / "events" / f"run={run}" / f"rank={rank}" / f"part-0.{ext}"
            _write(frame, path, fmt)
            result.files.append(path)
            result.rows += len(frame)
            if run not in result.runs:
                result.runs.append(run)
        for run, ops in _ops_frames(named):
            out = out_dir / "ops" / f"run={run}" / "rank=0" / f"part-0.{ext}"
            _write(ops, out, fmt)
            result.files.append(out)
    except OSError as exc:
        if exc.filename is None:  # opened, then the write failed: a full disk, an I/O error
            raise OutputError(f"{out_dir}: cannot write ({exc.strerror or exc})") from None
        raise ExportError(f"{out_dir}: cannot write ({exc.strerror or exc})") from None
    return result
