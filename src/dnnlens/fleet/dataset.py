"""A fleet dataset on disk: ``dataset.json`` and, in each table, one Parquet file per run
or per group of runs (published together, or compacted).

::

    DATASET/dataset.json                     schema version and the build settings
    DATASET/<table>/run-<run>.parquet        one per run: inputs, primitives, findings,
                                             iterations, runs (schema: dnnlens.fleet.schema)
    DATASET/<table>/part-<token>.parquet     one per group of runs (publish_many, compact)
    DATASET/.lock                            taken by a build while it publishes a run
    DATASET/.readers                         taken shared by readers (see compact)
    DATASET/.runs-index                      the runs, their content hashes and checked
                                             files (dnnlens.fleet.runindex)

A run is published whole (:meth:`Dataset.publish`): with the dataset's lock held (so two
builds into one directory take turns), its five files are written under hidden names,
then renamed into place, ``runs`` last; a write that fails removes what it wrote. A run is
in the dataset once its ``runs`` file is: every reader here leaves out the files of a run
without one (left only by a build killed between two renames), and the next build removes
them. The name is checked against the dataset under the lock, so a run of another build
that took the name meanwhile is not overwritten (the new run gets its content hash), and a
run whose content another build wrote meanwhile is not written twice. Runs a build
finished close together are published whole as one group (:meth:`Dataset.publish_many`):
one file per table holds them all, placed the same way, as :meth:`Dataset.compact` writes.

Every file is checked against the table's schema before it is read (:meth:`Dataset.check`):
a damaged or hand-edited file is a :class:`DatasetError` naming it, never a cast or a crash.
A file's check is kept in the runs index under its size and modification time, so opening
a dataset reads the footers of the files that are new or changed only, and publishing a run
reads what other builds published since (:mod:`dnnlens.fleet.runindex`).

A run's own files are rewritten into groups, one file per table each, by
:meth:`Dataset.compact`: a group is in the dataset once its ``runs`` file is, and a run
that a group holds is read from the group only.

A dataset keeps the settings it was built with (the window, skipped passes, rule
selection): a later build with other settings would mix two kinds of numbers in one
table, so it is refused.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from dnnlens._version import __version__
from dnnlens.errors import OutputError
from dnnlens.fleet import schema
from dnnlens.fleet.runindex import Entry, RunIndex, file_key, is_temporary

MANIFEST = "dataset.json"
LOCK = ".lock"
FORMAT = "dnnlens fleet dataset"
_PREFIX, _SUFFIX = "run-", ".parquet"
#: The files of a compacted group of runs: ``<table>/part-<token>.parquet``.
_PART = "part-"
#: Taken shared by a reader while it reads files, exclusive by a compaction before it
#: removes the files it rewrote (a reader that listed them still reads them).
READERS = ".readers"
_STAGING = ".staging-"
#: The table of failed runs, and the prefix of its files.
FAILURES, _FAILURES_PREFIX = "failures", "failures-"
#: The file name limit where the file system does not say (POSIX pathconf missing).
_NAME_MAX = 255
_PATH_MAX = 4096


_RUNS_LAST = tuple(sorted(schema.TABLES, key=lambda table: table == "runs"))


class DatasetError(Exception):
    """A dataset that cannot be used as asked (missing, damaged, another schema or
    settings): one line, naming the file."""


@dataclass(frozen=True)
class Settings:
    """What a build was asked for that changes the numbers of every run."""

    window_events: int | None
    skip_iterations: int = 0
    rule_files: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: str | None = None

    def differences(self, other: Settings) -> list[str]:
        """``name: theirs != ours`` for every setting that differs."""
        mine, theirs = asdict(self), asdict(other)
        return [f"{k}: {theirs[k]!r} != {mine[k]!r}" for k in mine if mine[k] != theirs[k]]


def file_name(run: str) -> str:
    """The file of ``run`` in each table (never hidden: readers skip names with . or _)."""
    return f"{_PREFIX}{run}{_SUFFIX}"


def run_of(path: Path) -> str | None:
    """The run a table file belongs to, or ``None`` for a file that is not a run's."""
    return _run_of_name(path.name)


def _run_of_name(name: str) -> str | None:
    if name.startswith(_PREFIX) and name.endswith(_SUFFIX) and len(name) > 12:
        return name[len(_PREFIX) : -len(_SUFFIX)]
    return None


def part_name(token: str) -> str:
    """The file of the compacted group ``token`` in each table."""
    return f"{_PART}{token}{_SUFFIX}"


def _part_of_name(name: str) -> str | None:
    if name.startswith(_PART) and name.endswith(_SUFFIX) and len(name) > 13:
        return name[len(_PART) : -len(_SUFFIX)]
    return None


#: Runs per compacted group (one file per table). A run's five files are about 52 KB, a
#: seventh of that or less once compacted: a group of 10,000 runs is at most about 75 MB
#: over its five files, each under 128 MiB (a file a reader maps and a compaction holds a
#: row group of at a time), and a compaction never rewrites more than that at once.
COMPACT_RUNS_PER_FILE = 10_000
#: Rows per row group of a compacted file: DuckDB's own row group size. DuckDB reads one
#: row group per thread, so a file of a few large row groups is read by every core, where
#: pyarrow's default (1 Mi rows) would make a whole ``primitives`` file one thread's work.
ROW_GROUP_ROWS = 122_880
#: A group of fewer runs is rewritten with the next runs compacted: a build compacts once
#: 200 runs are its own (``fleet build``), and merging its groups below 1,000 runs keeps
#: one group per 1,000 runs or more, each rewritten at most four times.
MERGE_BELOW = 1_000


@dataclass
class Compacted:
    """What :meth:`Dataset.compact` did: runs rewritten, files and bytes before and after."""

    runs: int = 0
    files_before: int = 0
    bytes_before: int = 0
    files_after: int = 0
    bytes_after: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Pending:
    """A run to publish: its name, content hash, tables, and the name to take instead when
    another build took that one meanwhile (given the names taken)."""

    run: str
    content_hash: str
    tables: dict[str, pa.Table]
    other_name: Callable[[set[str]], str]


@dataclass(frozen=True)
class Published:
    """Where :meth:`Dataset.publish` put a run: its name, and whether this call wrote it
    (``False``: a run of the same content was in the dataset already, under ``name``)."""

    name: str
    written: bool


class Dataset:
    """One dataset directory."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest
        self._index = RunIndex(root, tuple(schema.TABLES))

    # -- opening ----------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path) -> Dataset:
        """An existing dataset (to query or compare)."""
        manifest = _read_manifest(root)
        if manifest is None:
            raise DatasetError(f"{root}: not a fleet dataset (no {MANIFEST}; see fleet build)")
        major = str(manifest.get("schema_version", "")).split(".")[0]
        if major != schema.DATASET_SCHEMA_VERSION.split(".")[0]:
            raise DatasetError(
                f"{root}: dataset schema {manifest.get('schema_version')!r}; this dnnlens "
                f"reads {schema.DATASET_SCHEMA_VERSION}"
            )
        return cls(root, manifest)

    @classmethod
    def for_build(cls, root: Path, settings: Settings) -> Dataset:
        """The dataset to add runs to: created if new, else checked against ``settings``;
        what a killed build left (hidden files, files of a run without a ``runs`` file) is
        removed."""
        if _read_manifest(root) is None and root.exists():
            if not root.is_dir() or any(p.name != LOCK for p in root.iterdir()):
                raise DatasetError(f"{root}: exists and is not a fleet dataset")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatasetError(f"{root}: cannot create ({exc.strerror or exc})") from None
        with _locked(root):
            manifest = _read_manifest(root)
            if manifest is None:  # new, or made by another build since the look above
                manifest = {
                    "format": FORMAT,
                    "schema_version": schema.DATASET_SCHEMA_VERSION,
                    "created_by": f"dnnlens {__version__}",
                    "settings": asdict(settings),
                }
                _write_json(root / MANIFEST, manifest)
            _check_settings(root, manifest, settings)
            dataset = cls(root, manifest)
            dataset._sync(cleanup=True)
        return dataset

    # -- reading ----------------------------------------------------------------------------
    def files(self, table: str) -> list[Path]:
        """The table's files of the runs in the dataset (runs with a ``runs`` file)."""
        return [path for path, _, _ in self._present(table)]

    def run_names(self) -> list[str]:
        """Every run in the dataset, by name."""
        return sorted(self._runs())

    def _runs(self) -> dict[str, Entry]:
        """The runs in the dataset: the index's, read on from where it was read last, or
        the ``runs`` directory's when the index is not current (see
        :mod:`dnnlens.fleet.runindex`)."""
        if not self._index.current():
            self._index.relist(self._listed())
        return self._index.entries

    def _listed(self) -> dict[str, tuple[str | None, str | None]]:
        """The runs of the ``runs`` directory's files: run -> (its compacted group, its
        content hash), ``(None, None)`` for a run's own file. A group's ``runs`` file is
        what puts its runs in the dataset (it is renamed into place last); a run in a group
        and in a file of its own (a compaction stopped before it removed that file) is the
        group's."""
        import pyarrow.parquet as pq

        folder = self.root / "runs"
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise DatasetError(f"{folder}: cannot list ({exc.strerror or exc})") from None
        out: dict[str, tuple[str | None, str | None]] = {
            r: (None, None) for n in names if (r := _run_of_name(n)) is not None
        }
        for name in names:
            token = _part_of_name(name)
            if token is None:
                continue
            path = folder / name
            _check_file(path, schema.arrow_schema("runs"))
            try:
                rows = pq.read_table(path, columns=["run", "content_hash"])
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise DatasetError(f"{path}: cannot be read ({_first_line(exc)})") from None
            for run, digest in zip(
                rows["run"].to_pylist(), rows["content_hash"].to_pylist(), strict=True
            ):
                out[run] = (token, digest or "")
        return out

    def _path(self, table: str, run: str, entry: Entry) -> Path:
        """The file of ``table`` that holds ``run``'s rows."""
        name = part_name(entry.part) if entry.part else file_name(run)
        return self.root / table / name

    def _present(
        self, table: str, runs: set[str] | None = None
    ) -> list[tuple[Path, tuple[int, int], tuple[int, int] | None]]:
        """Each file of ``table`` of the runs (in file name order) that is there: its path,
        its key now and the key its footer check was kept under (``None``: never checked)."""
        entries = self._runs()
        position = list(schema.TABLES).index(table)
        seen: dict[Path, tuple[Path, tuple[int, int], tuple[int, int] | None]] = {}
        for run in entries if runs is None else entries.keys() & runs:
            entry = entries[run]
            path = self._path(table, run, entry)
            if path in seen:  # a compacted group: one file for its runs
                continue
            key = file_key(path)
            if key is not None:
                seen[path] = (path, key, entry.files[position])
        return [seen[p] for p in sorted(seen, key=lambda p: p.name)]

    def _checked(self, table: str, runs: set[str] | None = None) -> list[Path]:
        """The files of ``table`` (of ``runs`` only), each checked (:func:`_check_file`)
        unless it is as it was when it was last checked."""
        expected = schema.arrow_schema(table)
        files = []
        for path, key, checked in self._present(table, runs):
            if key != checked:
                _check_file(path, expected)
            files.append(path)
        return files

    def check(self, tables: tuple[str, ...] | None = None) -> dict[str, list[Path]]:
        """The files of each table, every one checked to be a Parquet file of the table's
        columns and types (its footer read, unless the index says it was checked at its
        size and modification time): a :class:`DatasetError` names the first that is not
        (a damaged or hand-edited file would otherwise be cast, or fail a query in the
        middle)."""
        return {table: self._checked(table) for table in tables or tuple(schema.TABLES)}

    def find_damage(self, table: str) -> None:
        """Read and validate every file of ``table`` whole: a :class:`DatasetError` names
        the first that cannot be read or holds text that is not UTF-8 (damaged past its
        footer). Called once a read of the table failed."""
        import pyarrow.parquet as pq

        expected = schema.arrow_schema(table)
        for path in self.files(table):
            _check_file(path, expected)
            try:
                pq.read_table(path, schema=expected).validate(full=True)  # UTF-8 too
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise DatasetError(f"{path}: damaged ({_first_line(exc)})") from None

    def read(
        self, table: str, columns: list[str] | None = None, runs: list[str] | None = None
    ) -> pa.Table:
        """The table (of the runs in the dataset, or of ``runs`` only) as one Arrow table;
        each file checked first (:meth:`check`)."""
        with reading(self.root):
            return self._read(table, columns, runs)

    def _read(self, table: str, columns: list[str] | None, runs: list[str] | None) -> pa.Table:
        import pyarrow.dataset as ds

        files = self._checked(table, set(runs) if runs is not None else None)
        expected = schema.arrow_schema(table)
        if not files:
            empty = expected.empty_table()
            return empty.select(columns) if columns else empty
        try:
            data = ds.dataset([str(p) for p in files], format="parquet", schema=expected)
            grouped = runs is not None and any(_part_of_name(p.name) for p in files)
            only = ds.field("run").isin(list(runs)) if grouped and runs is not None else None
            table = data.to_table(columns=columns, filter=only)
            table.validate(full=True)  # text that is not UTF-8 (a flipped byte) is damage too
            return table
        except (pa.ArrowException, OSError, ValueError) as exc:  # a file damaged past its footer
            self.find_damage(table)
            raise DatasetError(
                f"{self.root / table}: cannot be read ({_first_line(exc)})"
            ) from None

    def content_hashes(self) -> dict[str, str]:
        """Content hash -> run name of every run in the dataset."""
        table = self.read("runs", ["run", "content_hash"])
        return dict(zip(table["content_hash"].to_pylist(), table["run"].to_pylist(), strict=True))

    def run_with(self, content_hash: str) -> str | None:
        """The run of that content hash, among the runs this object knows (as of the build's
        start or its last publish)."""
        return self._index.by_hash.get(content_hash)

    def _sync(self, cleanup: bool = False) -> None:
        """Bring the index up to what the dataset holds, the lock held: read what other
        builds appended; if it is not current, list the runs and check again the files
        that changed; read the content hash and check the files of runs it does not know
        (a dataset of an older dnnlens, runs copied in by hand), and write it anew.
        ``cleanup``: also remove what a killed build left, if a table directory changed."""
        index = self._index
        changed = False
        if not index.current():
            index.relist(self._listed())
            for run, entry in index.entries.items():
                keys = tuple(
                    k if k is None or file_key(self._path(t, run, entry)) == k else None
                    for t, k in zip(schema.TABLES, entry.files, strict=True)
                )
                runs_file = keys[list(schema.TABLES).index("runs")]  # changed: read its hash again
                keep = runs_file or entry.part  # a group's hashes were read by the listing
                index.put(run, Entry(entry.content_hash if keep else None, keys, entry.part))
            changed = True
        if cleanup and (changed or not index.all_current() or self._rewritten_left()):
            self._remove_leftovers()
            changed = True
        checked: dict[Path, tuple[int, int] | None] = {}  # a group's file: checked once
        for run in sorted(index.incomplete):
            entry = index.entries[run]
            learned = self._learn(run, entry, checked)
            if learned != entry:
                index.put(run, learned)
                changed = True
        if changed:
            index.rehash()
            index.rewrite()

    def _learn(self, run: str, entry: Entry, checked: dict[Path, tuple[int, int] | None]) -> Entry:
        """``entry`` with its content hash read and the files not checked yet checked (a
        damaged ``runs`` file is a :class:`DatasetError`; a damaged file of another table
        stays unchecked, for a query to name). ``checked``: the key each group file was
        checked at (``None``: damaged), filled as they are checked."""
        import pyarrow.parquet as pq

        keys = list(entry.files)
        for i, table in enumerate(schema.TABLES):
            path = self._path(table, run, entry)
            if keys[i] is None and entry.part and path in checked:
                keys[i] = checked[path]
            elif keys[i] is None and (key := file_key(path)) is not None:
                try:
                    _check_file(path, schema.arrow_schema(table))
                except DatasetError:
                    if table == "runs":
                        raise
                    checked[path] = None
                    continue
                keys[i] = checked[path] = key
        content_hash = entry.content_hash
        if content_hash is None:
            path = self._path("runs", run, entry)
            try:
                rows = pq.read_table(path, columns=["run", "content_hash"])
                if entry.part:
                    import pyarrow.compute as pc

                    rows = rows.filter(pc.equal(rows["run"], run))
                hashes = rows["content_hash"]
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise DatasetError(f"{path}: cannot be read ({_first_line(exc)})") from None
            content_hash = str(hashes[0]) if len(hashes) else ""
        return Entry(content_hash, tuple(keys), entry.part)

    # -- failures -----------------------------------------------------------------------------
    def failure_files(self) -> list[Path]:
        """The files of the ``failures`` table (one per build that had failures)."""
        folder = self.root / FAILURES
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise DatasetError(f"{folder}: cannot list ({exc.strerror or exc})") from None
        return [folder / n for n in names if n.startswith(_FAILURES_PREFIX) and n.endswith(_SUFFIX)]

    def checked_failure_files(self) -> list[Path]:
        """:meth:`failure_files`, each checked against the table's schema."""
        expected = schema.arrow_schema(FAILURES)
        files = self.failure_files()
        for path in files:
            _check_file(path, expected)
        return files

    def failures(self) -> pa.Table:
        """Every failure recorded, oldest first."""
        import pyarrow.parquet as pq

        expected = schema.arrow_schema(FAILURES)
        tables = []
        for path in self.checked_failure_files():
            try:
                tables.append(pq.read_table(path, schema=expected))
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise DatasetError(f"{path}: damaged ({_first_line(exc)})") from None
        if not tables:
            return expected.empty_table()
        return pa.concat_tables(tables).sort_by("failed_at")

    def known_failures(self) -> dict[str, dict[str, Any]]:
        """Content hash -> the last failure of that content that building again would
        repeat: it could not be analysed (``input``), or failed inside this version of
        dnnlens (``internal``); a write that failed, a run not finished or a name too long
        are tried again."""
        out = {}
        for row in self.failures().to_pylist():
            repeats = row["exit_class"] == "input" or (
                row["exit_class"] == "internal" and row["dnnlens_version"] == __version__
            )
            if row["content_hash"] and repeats:
                out[row["content_hash"]] = row
            elif row["content_hash"]:
                out.pop(row["content_hash"], None)
        return out

    def record_failures(self, rows: list[dict[str, Any]]) -> None:
        """Add ``rows`` (columns of the ``failures`` table, ``failed_at`` and the version
        filled in) as one file, written under a hidden name and renamed into place."""
        import datetime

        import pyarrow.parquet as pq

        if not rows:
            return
        now = datetime.datetime.now(datetime.UTC)
        full = [{**r, "failed_at": now, "dnnlens_version": __version__} for r in rows]
        table = schema.make_table(FAILURES, full)
        folder = self.root / FAILURES
        name = f"{_FAILURES_PREFIX}{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}{_SUFFIX}"
        temporary = folder / f"{_STAGING}{secrets.token_hex(8)}{_SUFFIX}"
        try:
            folder.mkdir(exist_ok=True)
            pq.write_table(table, temporary)
            os.replace(temporary, folder / name)
        except OSError as exc:
            _remove(temporary)
            raise OutputError(f"{folder / name}: cannot write ({exc.strerror or exc})") from None

    # -- writing ----------------------------------------------------------------------------
    def name_problem(self, run: str) -> str | None:
        """Why ``run`` cannot be a name in this dataset (its files' names or paths too long
        for the file system), or ``None``."""
        name = os.fsencode(file_name(run))
        limit = _limit(self.root, "PC_NAME_MAX", _NAME_MAX)
        if len(name) > limit:
            return (
                f"the run's file name in the dataset would be {len(name)} bytes, longer than "
                f"the {limit} the file system allows: rename the log (or --group-by directory)"
            )
        path = os.fsencode(os.path.abspath(self.root / "primitives" / file_name(run)))
        limit = _limit(self.root, "PC_PATH_MAX", _PATH_MAX)
        if len(path) >= limit:
            return (
                f"the run's path in the dataset would be {len(path)} bytes, longer than the "
                f"{limit - 1} the file system allows: a shorter name or dataset path"
            )
        return None

    def publish(
        self,
        run: str,
        content_hash: str,
        tables: dict[str, pa.Table],
        other_name: Callable[[set[str]], str],
    ) -> Published:
        """Publish one run's tables whole (:meth:`publish_many` of that run alone)."""
        return self.publish_many([Pending(run, content_hash, tables, other_name)])[0]

    def publish_many(self, runs: list[Pending]) -> list[Published]:
        """Publish the tables of ``runs`` whole, with the dataset's lock held (see the module
        doc): a lone run in files of its own, several in one group (one file per table, as
        :meth:`compact` writes), so that a build pays five file writes per batch of runs,
        not per run. Where each run went, in order.

        A run of a content hash in the dataset already (another build wrote it since this
        one looked) is left out; a name that another build took meanwhile is replaced by
        its ``other_name(names taken)`` (its rows renamed). A write that fails is an
        :class:`~dnnlens.errors.OutputError` and leaves nothing of the runs.
        """
        out: list[Published] = []
        with _locked(self.root):
            self._sync()
            taken = set(self._index.entries)
            chosen: list[tuple[str, str, dict[str, pa.Table]]] = []
            hashes: dict[str, str] = {}
            for item in runs:
                same = self.run_with(item.content_hash) or hashes.get(item.content_hash)
                if same is not None:
                    out.append(Published(same, written=False))
                    continue
                run, tables = item.run, item.tables
                if run in taken:
                    run = item.other_name(taken)
                    tables = {t: _renamed(rows, run) for t, rows in tables.items()}
                taken.add(run)
                hashes[item.content_hash] = run
                chosen.append((run, item.content_hash, tables))
                out.append(Published(run, written=True))
            if len(chosen) == 1:
                run, digest, tables = chosen[0]
                self._write_whole(run, tables, digest)
            elif chosen:
                self._write_batch(chosen)
        return out

    def _write_whole(self, run: str, tables: dict[str, pa.Table], content_hash: str) -> None:
        """Every table's file under a hidden name, then each renamed into place (``runs``
        last) and the run added to the index; on a failure nothing of the run stays."""
        import pyarrow.parquet as pq

        self._place(
            secrets.token_hex(8),
            file_name(run),
            lambda table, path: pq.write_table(tables[table], path),
            placed=lambda keys: self._index.append([(run, Entry(content_hash, keys))]),
            hold_signals=True,  # a stop signal comes once the run is placed whole
        )

    def _write_batch(self, runs: list[tuple[str, str, dict[str, pa.Table]]]) -> None:
        """The tables of ``runs`` (name, content hash, tables) as one new group: each
        table's rows of every run in one file, placed as :meth:`_write_whole` places a
        run's files, and every run added to the index as the group's."""
        import pyarrow.parquet as pq

        token = _group_token()

        def write(table: str, path: Path) -> None:
            rows = pa.concat_tables([tables[table] for _, _, tables in runs])
            pq.write_table(rows, path, row_group_size=ROW_GROUP_ROWS)

        def placed(keys: tuple[tuple[int, int] | None, ...]) -> None:
            self._index.append([(run, Entry(digest, keys, token)) for run, digest, _ in runs])

        self._place(token, part_name(token), write, placed=placed, hold_signals=True)

    def _place(
        self,
        token: str,
        name: str,
        write: Callable[[str, Path], None],
        *,
        mark: Callable[[str], None] | None = None,
        placed: Callable[[tuple[tuple[int, int] | None, ...]], None] | None = None,
        hold_signals: bool = False,
    ) -> tuple[tuple[int, int] | None, ...]:
        """One file per table named ``name``: each written (``write(table, path)``) under a
        hidden name of ``token``, then all renamed into place in table order (``runs``
        last: its rename puts the run or group in the dataset) and ``placed`` told their
        keys. A failure removes everything written and is
        :class:`~dnnlens.errors.OutputError`; ``mark`` is told each point reached
        (``staged``, then ``placed`` per file); their keys are returned."""
        staged: list[tuple[Path, Path]] = []
        done: list[Path] = []
        current = self.root
        tell = mark or (lambda _point: None)
        try:
            for table in schema.TABLES:
                folder = self.root / table
                current = folder / f"{_STAGING}{token}{_SUFFIX}"
                folder.mkdir(parents=True, exist_ok=True)
                staged.append((current, folder / name))
                write(table, current)
            tell("staged")
            with _signals_held() if hold_signals else nullcontext():
                for temporary, target in staged:
                    current = target
                    os.replace(temporary, target)
                    done.append(target)
                    tell("placed")
                keys = tuple(file_key(target) for _, target in staged)
                if placed is not None:
                    placed(keys)
        except OSError as exc:
            for path in [*done, *(t for t, _ in staged)]:
                _remove(path)
            raise OutputError(f"{current}: cannot write ({exc.strerror or exc})") from None
        return keys

    # -- compacting ----------------------------------------------------------------------------
    def loose_runs(self) -> list[str]:
        """The runs held by files of their own (not compacted yet)."""
        return sorted(r for r, e in self._runs().items() if e.part is None)

    def small_files(self) -> int:
        """Files per table that :meth:`compact` would rewrite: a run's own, and a group's
        of fewer than :data:`MERGE_BELOW` runs."""
        entries = self._runs().values()
        sizes = Counter(e.part for e in entries if e.part)
        loose = sum(e.part is None for e in entries)
        return loose + sum(n < MERGE_BELOW for n in sizes.values())

    def compact(
        self,
        runs_per_file: int = COMPACT_RUNS_PER_FILE,
        step: Callable[[str], None] | None = None,
        merge_below: int = MERGE_BELOW,
    ) -> Compacted:
        """Rewrite the runs held by files of their own, with those of the groups of fewer
        than ``merge_below`` runs (when there are runs of their own, or several such
        groups), into groups of at most ``runs_per_file`` runs, one file per table each
        (``part-<token>.parquet``). A run in two groups (one stopped before it removed
        the group it rewrote) is the newer group's: tokens start with the time.

        With the dataset's lock held (a build publishing waits): each group's files are
        written under hidden names, renamed into place (``runs`` last: its rename puts the
        group in the dataset, as a run's own ``runs`` file does), and the index rewritten.
        Then, once no reader holds :func:`reading` (one that listed the old files reads
        them to the end), the runs' own files are removed, the lock held again. Every
        reader here takes a run from its group once the group's ``runs`` file is there,
        from its own file before: stopped at any point, the dataset holds every run once,
        and the next build or compaction removes what was left. ``step`` is called with
        the name of each point (``staged``, ``placed``, ``switched``, ``indexed``,
        ``alone``, ``removing``): tests stop there.
        """
        if self.manifest.get("schema_version") != schema.DATASET_SCHEMA_VERSION:
            raise DatasetError(
                f"{self.root}: built with dataset schema {self.manifest.get('schema_version')!r}"
                f", this dnnlens writes {schema.DATASET_SCHEMA_VERSION}: not compacted"
            )
        mark = step or (lambda _: None)
        done = Compacted()
        started = time.perf_counter()
        with _locked(self.root):
            self._sync(cleanup=True)
            entries = self._index.entries
            sizes = Counter(e.part for e in entries.values() if e.part)
            small = {g for g, n in sizes.items() if n < merge_below}
            loose = [r for r, e in sorted(entries.items()) if e.part is None]
            if loose or len(small) > 1:
                loose = [r for r, e in sorted(entries.items()) if e.part is None or e.part in small]
            for start in range(0, len(loose), max(1, runs_per_file)):
                chunk = loose[start : start + max(1, runs_per_file)]
                before = {
                    self._path(t, r, self._index.entries[r]) for t in schema.TABLES for r in chunk
                }
                done.files_before += len(before)
                done.bytes_before += sum(k[0] for p in before if (k := file_key(p)))
                token = _group_token()
                keys = self._write_group(token, chunk, mark)
                mark("switched")
                for run in chunk:
                    entry = self._index.entries[run]
                    self._index.put(run, Entry(entry.content_hash, keys, token))
                done.runs += len(chunk)
                done.files_after += len(keys)
                done.bytes_after += sum(k[0] for k in keys if k)
            if done.runs:
                self._index.rewrite()
                mark("indexed")
            elif not self._rewritten_left():
                done.seconds = time.perf_counter() - started
                return done
        with _readers_gone(self.root, wait=True):
            mark("alone")
            with _locked(self.root):
                self._remove_rewritten(mark)
        done.seconds = time.perf_counter() - started
        return done

    def _remove_rewritten(self, mark: Callable[[str], None]) -> None:
        """Remove the own files of the runs that groups hold (the lock held, no reader)."""
        self._sync()
        for run, entry in sorted(self._index.entries.items()):
            if entry.part is None:
                continue
            for table in _RUNS_LAST:  # its runs file says the others may be left
                path = self.root / table / file_name(run)
                if path.exists():
                    mark("removing")
                    _remove(path)
        for token in sorted(self._unheld_groups()):  # groups whose runs newer ones hold
            for table in _RUNS_LAST:
                mark("removing")
                _remove(self.root / table / part_name(token))
        self._index.rewrite()

    def _unheld_groups(self) -> set[str]:
        """The groups with a ``runs`` file whose runs are all held by newer groups."""
        held = {e.part for e in self._index.entries.values() if e.part}
        try:
            names = os.listdir(self.root / "runs")
        except OSError:
            return set()
        return {t for n in names if (t := _part_of_name(n)) is not None and t not in held}

    def _rewritten_left(self) -> bool:
        """Whether a run of a group still has its own ``runs`` file (a compaction stopped
        before it removed it; a run's ``runs`` file is the last of its files removed)."""
        entries = self._index.entries
        try:
            names = os.listdir(self.root / "runs")
        except OSError:
            return False
        return any((e := entries.get(_run_of_name(n) or "")) and e.part for n in names) or bool(
            self._unheld_groups()
        )

    def _write_group(
        self, token: str, runs: list[str], mark: Callable[[str], None]
    ) -> tuple[tuple[int, int] | None, ...]:
        """The files of group ``token`` (the rows of ``runs``, each file read whole and
        checked as :meth:`read` does), written hidden and renamed into place, ``runs``
        last; their keys. A write that fails removes what it wrote
        (:class:`~dnnlens.errors.OutputError`)."""
        import pyarrow.parquet as pq

        def write(table: str, path: Path) -> None:
            with pq.ParquetWriter(path, schema.arrow_schema(table)) as writer:
                for rows in self._batches(table, runs):
                    writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)

        return self._place(token, part_name(token), write, mark=mark)

    def _batches(self, table: str, runs: list[str]) -> Iterator[pa.Table]:
        """The rows of ``runs`` in ``table``, in row groups of :data:`ROW_GROUP_ROWS` (the
        last one shorter), run by run."""
        held: list[pa.Table] = []
        count = 0
        for start in range(0, len(runs), 256):
            # not read(): the lock held keeps the files, and a compaction waiting for the
            # readers to end before it takes the lock would wait for this one
            rows = self._read(table, None, runs[start : start + 256])
            held.append(rows)
            count += len(rows)
            while count >= ROW_GROUP_ROWS:
                whole = pa.concat_tables(held)
                yield whole.slice(0, ROW_GROUP_ROWS)
                rest = whole.slice(ROW_GROUP_ROWS)
                held, count = [rest], len(rest)
        if count or not runs:
            yield pa.concat_tables(held) if held else schema.arrow_schema(table).empty_table()

    def _remove_leftovers(self) -> None:
        """Files of a build killed midway: hidden temporaries, and files of a run that has
        no ``runs`` file, an index rewrite that did not finish. Called with the lock held
        (no build is publishing), the index current."""
        runs = self._index.entries
        groups = {e.part for e in runs.values() if e.part}
        for path in self.root.iterdir():
            if is_temporary(path.name):
                _remove(path)
        with _readers_gone(self.root, wait=False) as alone:
            for table in (*schema.TABLES, FAILURES):
                folder = self.root / table
                if not folder.is_dir():
                    continue
                for path in folder.iterdir():
                    hidden = path.name.startswith(_STAGING) or (
                        path.name.startswith(f".{_PREFIX}") and path.name.endswith(".tmp")
                    )
                    run, token = run_of(path), _part_of_name(path.name)
                    # a run's own file that a group holds now: a reader that listed it
                    # before the group came may read it still, unless none reads
                    rewritten = run in runs and runs[run].part is not None and alone
                    # a group no run is read from: never published (no runs file), or
                    # rewritten into newer groups (a reader may read it still)
                    unheld = token is not None and token not in groups
                    published = unheld and (self.root / "runs" / part_name(token)).exists()
                    if (
                        hidden
                        or (run is not None and (run not in runs or rewritten))
                        or (unheld and (alone or not published))
                    ):
                        _remove(path)


@contextmanager
def reading(root: Path) -> Iterator[None]:
    """Held while a reader reads the files it listed: a compaction removes the files it
    rewrote only once no reader holds it (``flock`` shared on ``DATASET/.readers``; a
    dataset that cannot be written to, a read-only copy, is read without it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fd = os.open(root / READERS, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield  # nobody can compact a dataset this process cannot write either
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@contextmanager
def _readers_gone(root: Path, wait: bool) -> Iterator[bool]:
    """Whether no reader holds :func:`reading` (and none starts) for the block: waits for
    the readers to finish, or (``not wait``) says ``False`` at once if one reads. Taken
    before the dataset's lock, never while holding it, unless ``not wait``: a reader
    never takes the dataset's lock while it reads, so neither waits for the other."""
    import fcntl

    try:
        fd = os.open(root / READERS, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if not wait:  # the files a reader may read stay
            yield False
            return
        raise DatasetError(f"{root / READERS}: cannot open ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """The dataset's lock (``flock`` on ``DATASET/.lock``), waiting for another build to
    let go; released when the block ends, and by the system when the process dies."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        raise DatasetError("fleet build needs POSIX file locks (fcntl)") from None
    path = root / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing it lets the lock go


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (POSIX) until the block ends."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _check_settings(root: Path, manifest: dict[str, Any], settings: Settings) -> None:
    if manifest.get("schema_version") != schema.DATASET_SCHEMA_VERSION:
        raise DatasetError(
            f"{root}: built with dataset schema {manifest.get('schema_version')!r}, this "
            f"dnnlens writes {schema.DATASET_SCHEMA_VERSION}: build into a new directory"
        )
    try:
        built = Settings(**manifest.get("settings", {}))
    except TypeError:
        raise DatasetError(f"{root}/{MANIFEST}: settings not understood") from None
    changed = settings.differences(built)
    if changed:
        raise DatasetError(
            f"{root}: built with other settings ({'; '.join(changed)}): use the same "
            "options, or build into a new directory"
        )


def _check_file(path: Path, expected: pa.Schema) -> None:
    """``path`` is a Parquet file with exactly the columns and types of ``expected`` (only
    its footer is read)."""
    import pyarrow.dataset as ds
    from pyarrow import fs

    try:
        found = ds.ParquetFileFormat().inspect(str(path), filesystem=fs.LocalFileSystem())
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DatasetError(f"{path}: damaged, not a Parquet file ({_first_line(exc)})") from None
    if found.equals(expected):
        return
    for want in expected:
        index = found.get_field_index(want.name)
        if index < 0 and _added(expected, want.name):
            continue  # written before the column was added: NULL there
        if index < 0:
            raise DatasetError(f"{path}: damaged, no column {want.name!r}")
        got = found.field(index).type
        if got != want.type:
            raise DatasetError(
                f"{path}: damaged, column {want.name!r} is {got}, the dataset's is {want.type}"
            )
    extra = [name for name in found.names if expected.get_field_index(name) < 0]
    if extra:
        raise DatasetError(f"{path}: damaged, columns not in the dataset: {', '.join(extra)}")


def _added(expected: pa.Schema, column: str) -> bool:
    """Whether ``column`` of the table of schema ``expected`` was added after files of the
    same major schema version were written (:data:`~dnnlens.fleet.schema.ADDED_COLUMNS`)."""
    return any(
        name == column and schema.arrow_schema(table).equals(expected)
        for table, name in schema.ADDED_COLUMNS
    )


def _renamed(rows: pa.Table, run: str) -> pa.Table:
    """``rows`` with every ``run`` cell set to ``run``."""
    index = rows.schema.get_field_index("run")
    return rows.set_column(
        index, rows.schema.field(index), pa.array([run] * len(rows), pa.string())
    )


def _group_token() -> str:
    """A new group's token: the time first, so that of a run in two groups (a compaction
    stopped before it removed the group it rewrote) the newer group is known."""
    return f"{time.time_ns():016x}-{secrets.token_hex(4)}"


def _limit(root: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(root, name)
    except (AttributeError, ValueError, OSError):  # no pathconf here: the usual limit
        return default


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _read_manifest(root: Path) -> dict[str, Any] | None:
    path = root / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DatasetError(f"{path}: not a fleet dataset manifest")
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Written under a hidden name and renamed: a reader sees all of it or none."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        _remove(temporary)
        raise DatasetError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
