"""The tasks of a build: hash a run's files, scan a byte range, analyse a run.

They run on a Dask worker or in this process alike (:mod:`dnnlens.fleet.engine`), take and
return plain picklable values, and never print. A run is analysed exactly as ``dnnlens
analyze`` analyses the same files: :func:`dnnlens.reading.read`, then
:func:`dnnlens.app.session.analyse` with the build's settings (the runs, the analysis, the
rules), whose one run is the run's. A file large enough to be split is scanned in
byte ranges by other tasks first (:func:`dnnlens.reading.parallel.scan_range`), and the
front door merges them as it merges the parts of ``analyze -j`` (``read(..., parts=...)``),
which gives the same scan.

A run whose inputs cannot be analysed (unreadable, no verbose line, a rule file the worker
cannot read) gives a :class:`RunFailure`, the reason in one line; anything else that goes
wrong is a bug and raises. A run of which some inputs are rejected (a trace without a usable
event beside its log) is analysed from the others, as ``analyze`` does, and its
:class:`RunTables` name the rejected ones, for the build's summary.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

import pyarrow as pa

from dnnlens.app.session import SessionError, Settings, analyse
from dnnlens.fleet.rows import RunFile, RunIdentity, run_tables
from dnnlens.io.inputs import display_path
from dnnlens.io.problems import input_problems
from dnnlens.model import ParsedLog
from dnnlens.reading import parallel, read
from dnnlens.reading.parallel import Part

_HASH_BLOCK = 1 << 20


@dataclass(frozen=True)
class RunFailure:
    """Why a run could not be analysed (one line, starting with the input's path)."""

    message: str


@dataclass(frozen=True)
class RunJob:
    """Everything a worker needs to analyse one run: its files and ``analyze``'s settings."""

    identity: RunIdentity
    settings: Settings = field(default_factory=lambda: Settings(search_config=False))


def hash_files(paths: tuple[str, ...]) -> tuple[RunFile, ...] | RunFailure:
    """Size, SHA-256 and modification time of each file, or why one cannot be read."""
    files = []
    for path in paths:
        digest = hashlib.sha256()
        try:
            info = os.stat(path)
            with open(path, "rb") as fh:
                while block := fh.read(_HASH_BLOCK):
                    digest.update(block)
        except OSError as exc:
            return RunFailure(f"{display_path(path)}: cannot read ({exc.strerror or exc})")
        files.append(RunFile(path, info.st_size, digest.hexdigest(), info.st_mtime))
    return tuple(files)


def hash_runs(runs: tuple[tuple[str, ...], ...]) -> list[tuple[RunFile, ...] | RunFailure]:
    """:func:`hash_files` of each run's paths, in order: one task for several runs (a task
    costs the scheduler more than hashing a small log)."""
    return [hash_files(paths) for paths in runs]


def content_hash(files: tuple[RunFile, ...]) -> str:
    """The run's content hash: SHA-256 over its files' SHA-256, in input order (names and
    times left out, so a copied or renamed run is the same run)."""
    return hashlib.sha256("\n".join(f.sha256 for f in files).encode()).hexdigest()


def scan_range(path: str, start: int, end: int) -> tuple[Part, int]:
    """The scan of bytes ``start``..``end`` of ``path`` (cut at line starts), and its size:
    one byte range of a large file, as a task of its own."""
    return parallel.scan_range(path, start, end), end - start


def load_run(
    paths: tuple[str, ...], parts: dict[str, list[tuple[Part, int]]] | None = None
) -> ParsedLog:
    """The run's inputs read as :func:`dnnlens.reading.load` reads them; a file with
    ``parts`` (its byte ranges, scanned already) is merged from them by the same front door.

    Profiler tables printed inside a split file are found in its ranges as with
    ``load(..., jobs=N)`` (a table cut by a range's end is read on from the file); a
    profiler trace among the inputs is read as ``load`` reads it.
    """
    return read(list(paths), window_events=None, parts=parts or None)


@dataclass(frozen=True)
class RunTables:
    """Every table's rows of one run, and the inputs of it that were rejected (one line
    each: the run is analysed from the others)."""

    tables: dict[str, pa.Table]
    rejected: tuple[str, ...] = ()


def _usable(log: ParsedLog) -> bool:
    """Whether something of ``log`` can be analysed: a verbose line, a trace or a table."""
    return any(s.parsed or s.malformed for s in log.scans) or log.framework is not None


def analyse_run(
    job: RunJob, parts: dict[str, list[tuple[Part, int]]] | None = None
) -> RunTables | RunFailure:
    """Every table's rows of one run, or why its inputs cannot be analysed."""
    paths = tuple(f.path for f in job.identity.files)
    log = load_run(paths, parts)
    problems = input_problems(log)
    if problems.errors and not _usable(log):
        return RunFailure("; ".join(problems.errors))
    try:  # the one run analyze makes of these files, its rules applied
        analysis = analyse(log, job.settings).single(display_path(paths[0]), combine=False)
    except SessionError as exc:
        return RunFailure("; ".join([*problems.errors, str(exc)]))
    return RunTables(run_tables(analysis, job.identity), tuple(problems.errors))
