"""A fleet dataset on disk: ``dataset.json`` and one Parquet file per run in each table.

::

    DATASET/dataset.json                     schema version and the build settings
    DATASET/<table>/run-<run>.parquet        one per run: inputs, primitives, findings,
                                             iterations, runs (schema: dnnlens.fleet.schema)

A run's files are written one by one, each to a hidden temporary name first and then
renamed, ``runs`` last: a run is in the dataset once its ``runs`` file is, so a build that
is interrupted leaves whole runs only, and the next build analyses the rest. Files of a
run without a ``runs`` file are left out by every reader here and replaced when the run is
built again.

A dataset keeps the settings it was built with (the window, skipped passes, rule
selection): a later build with other settings would mix two kinds of numbers in one
table, so it is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from dnnlens._version import __version__
from dnnlens.errors import OutputError
from dnnlens.fleet import schema

MANIFEST = "dataset.json"
FORMAT = "dnnlens fleet dataset"
_PREFIX, _SUFFIX = "run-", ".parquet"


class DatasetError(Exception):
    """A dataset that cannot be used as asked (missing, another schema or settings)."""


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
    name = path.name
    if name.startswith(_PREFIX) and name.endswith(_SUFFIX) and len(name) > 12:
        return name[len(_PREFIX) : -len(_SUFFIX)]
    return None


class Dataset:
    """One dataset directory."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest

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
        """The dataset to add runs to: created if new, else checked against ``settings``."""
        manifest = _read_manifest(root)
        if manifest is None:
            if root.exists() and (not root.is_dir() or any(root.iterdir())):
                raise DatasetError(f"{root}: exists and is not a fleet dataset")
            manifest = {
                "format": FORMAT,
                "schema_version": schema.DATASET_SCHEMA_VERSION,
                "created_by": f"dnnlens {__version__}",
                "settings": asdict(settings),
            }
            _write_json(root / MANIFEST, manifest)
            return cls(root, manifest)
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
        return cls(root, manifest)

    # -- reading ----------------------------------------------------------------------------
    def files(self, table: str) -> list[Path]:
        """The table's files of the runs in the dataset (runs with a ``runs`` file)."""
        runs = set(self.run_names())
        return [p for p in self._table_files(table) if run_of(p) in runs]

    def run_names(self) -> list[str]:
        """Every run in the dataset, by name."""
        return sorted(r for p in self._table_files("runs") if (r := run_of(p)) is not None)

    def _table_files(self, table: str) -> list[Path]:
        folder = self.root / table
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if run_of(p) is not None)

    def read(
        self, table: str, columns: list[str] | None = None, runs: list[str] | None = None
    ) -> pa.Table:
        """The table (of the runs in the dataset, or of ``runs`` only) as one Arrow table."""
        import pyarrow.dataset as ds

        wanted = set(runs) if runs is not None else None
        files = [str(p) for p in self.files(table) if wanted is None or run_of(p) in wanted]
        if not files:
            empty = schema.arrow_schema(table).empty_table()
            return empty.select(columns) if columns else empty
        data = ds.dataset(files, format="parquet", schema=schema.arrow_schema(table))
        return data.to_table(columns=columns)

    def content_hashes(self) -> dict[str, str]:
        """Content hash -> run name of every run in the dataset."""
        table = self.read("runs", ["run", "content_hash"])
        return dict(zip(table["content_hash"].to_pylist(), table["run"].to_pylist(), strict=True))

    # -- writing ----------------------------------------------------------------------------
    def write_run(self, run: str, tables: dict[str, pa.Table]) -> None:
        """Write one run's tables, ``runs`` last, each file in place in one rename."""
        import pyarrow.parquet as pq

        for table in schema.TABLES:
            folder = self.root / table
            target = folder / file_name(run)
            temporary = folder / f".{file_name(run)}.tmp"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                pq.write_table(tables[table], temporary)
                os.replace(temporary, target)
            except OSError as exc:
                _remove(temporary)
                raise OutputError(f"{target}: cannot write ({exc.strerror or exc})") from None


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
