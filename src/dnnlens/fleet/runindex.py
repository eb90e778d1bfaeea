"""The runs of a dataset in one file, so that publishing a run and opening the dataset
cost what is new, not what is there.

``DATASET/.runs-index`` holds JSON lines::

    {"format": "dnnlens runs index", "version": 1}
    ["train", "3f2a9c...", [[6131, 1733512345123456789], ...]]
    ["eval", "9b1e04...", [[918231, 1733512399123456789], ...], "19f0c2a1b2c3d4e5-0a1b2c3d"]
    {"dirs": [[1733512345123456789, 4211], ...]}

A run's line holds its name, content hash, and the size and modification time (ns) of its
file in each table, in :data:`~dnnlens.fleet.schema.TABLES` order, once that file's footer
is known to match the table's schema (``null``: not known); a run of a compacted group
(:meth:`~dnnlens.fleet.dataset.Dataset.compact`) has the group's token fourth, and its
keys are those of the group's files. A later line of a run replaces
an earlier one. A stamp line holds the modification time and inode of each table
directory (``null``: none) as they were once the lines before it were true.

A build appends the lines of the runs it published and a stamp, in one write, once their
files are renamed into place (with stop signals held back). A reader whose table
directories are not those of the last stamp (a run deleted or copied by hand, a build
killed by SIGKILL, a dataset made by an older dnnlens, a copied dataset: other inodes)
does not trust the file: it lists the ``runs`` directory, and a build rewrites the file
from it (under a hidden name, renamed into place). The file is a cache of what the
directories hold: deleting it costs one rebuild of it.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

INDEX = ".runs-index"
_HEADER = {"format": "dnnlens runs index", "version": 1}

#: Size and modification time (ns) of a file: what a footer check is cached under.
Key = tuple[int, int]
#: Modification time (ns) and inode of each table directory, ``None`` for a missing one.
Stamp = tuple[tuple[int, int] | None, ...]


@dataclass
class Entry:
    """One run: its content hash (``None``: not read yet), the key of each table's file
    whose footer was checked (``None``: not checked), and the compacted group whose files
    hold it (``None``: its own files, ``run-<run>.parquet``)."""

    content_hash: str | None
    files: tuple[Key | None, ...]
    part: str | None = None


def file_key(path: Path | str) -> Key | None:
    """The cache key of ``path``, or ``None`` if it is missing."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_size, info.st_mtime_ns)


class RunIndex:
    """The index file of one dataset, read as it grows."""

    def __init__(self, root: Path, tables: tuple[str, ...]) -> None:
        self.root = root
        self.path = root / INDEX
        self.tables = tables
        self.entries: dict[str, Entry] = {}
        self.by_hash: dict[str, str] = {}  # content hash -> run
        self.incomplete: set[str] = set()  # runs whose hash or a file's check is not known
        self.stamp: Stamp | None = None  # the last stamp read
        self._file: tuple[int, int] | None = None  # (device, inode) of the file read
        self._offset = 0

    def directories(self) -> Stamp:
        """The table directories now."""
        out = []
        for table in self.tables:
            try:
                info = os.stat(self.root / table)
            except FileNotFoundError:
                out.append(None)
                continue
            out.append((info.st_mtime_ns, info.st_ino))
        return tuple(out)

    def read(self) -> None:
        """Read what was appended since the last read (all of it if the file was
        rewritten); a missing or unreadable file is an empty index."""
        try:
            with open(self.path, "rb") as fh:
                info = os.fstat(fh.fileno())
                if self._file != (info.st_dev, info.st_ino) or info.st_size < self._offset:
                    self._reset((info.st_dev, info.st_ino))
                if info.st_size == self._offset:
                    return
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            self._reset(None)
            return
        end = data.rfind(b"\n") + 1  # a line still being appended waits for the next read
        self._offset += end
        for line in data[:end].splitlines():
            self._take(line)

    def _reset(self, file: tuple[int, int] | None) -> None:
        self.entries, self.by_hash, self.incomplete, self.stamp = {}, {}, set(), None
        self._file, self._offset = file, 0

    def put(self, run: str, entry: Entry) -> None:
        """Set ``run``'s entry (in memory)."""
        self.entries[run] = entry
        if entry.content_hash:
            self.by_hash[entry.content_hash] = run
        if entry.content_hash is None or None in entry.files:
            self.incomplete.add(run)
        else:
            self.incomplete.discard(run)

    def _take(self, line: bytes) -> None:
        try:
            value = json.loads(line)
            if isinstance(value, list):
                run, content_hash, files, *rest = value
                keys = tuple(tuple(k) if k else None for k in files)
                part = rest[0] if rest else None
                if (
                    not isinstance(run, str)
                    or len(keys) != len(self.tables)
                    or len(rest) > 1
                    or not (part is None or isinstance(part, str))
                ):
                    raise ValueError(run)
                self.put(run, Entry(content_hash, keys, part))  # type: ignore[arg-type]
            elif isinstance(value, dict) and "dirs" in value:
                self.stamp = tuple(tuple(d) if d else None for d in value["dirs"])  # type: ignore[misc]
        except (ValueError, TypeError):  # a damaged line: the stamp no longer vouches for it
            self.stamp = None

    def current(self) -> bool:
        """Read what is new; whether the index is what the ``runs`` directory holds
        (``all_current`` for every table directory)."""
        now = self.directories()
        self.read()
        return self.stamp is not None and self.stamp[self._runs] == now[self._runs]

    def all_current(self) -> bool:
        """Whether every table directory is as the last stamp says (no file of a killed
        build, no hand edit)."""
        return self.stamp == self.directories()

    @property
    def _runs(self) -> int:
        return self.tables.index("runs")

    def relist(self, listed: dict[str, tuple[str | None, str | None]]) -> None:
        """The runs are those ``listed`` (the ``runs`` directory listed: run -> its group
        and, for a group's run, its content hash): runs not in it go, runs not known (or
        now in another group) come in unchecked. The stamp no longer vouches."""
        known = self.entries
        blank = tuple(None for _ in self.tables)
        self.entries = {}
        for name, (part, content_hash) in listed.items():
            entry = known.get(name)
            if entry is None or entry.part != part:
                entry = Entry(content_hash, blank, part)
            self.entries[name] = entry
        self.incomplete = {
            n for n, e in self.entries.items() if e.content_hash is None or None in e.files
        }
        self.rehash()
        self.stamp = None

    def rehash(self) -> None:
        """The content hash -> run map again, from the entries."""
        self.by_hash = {e.content_hash: r for r, e in self.entries.items() if e.content_hash}

    # -- writing (the dataset's lock held) ------------------------------------------------
    def append(self, entries: list[tuple[str, Entry]]) -> None:
        """Add the lines of ``entries`` (run, entry) and a stamp of the directories now, in
        one write. A write that fails leaves the stamp behind the directories: the next
        reader lists them."""
        for run, entry in entries:
            self.put(run, entry)
        lines = [_line(_row(run, entry)) for run, entry in entries]
        data = b"".join(lines) + _line({"dirs": self.directories()})
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError:
            pass

    def rewrite(self) -> None:
        """Write the whole index and a stamp of the directories now, under a hidden name
        renamed into place; a failure leaves the old file (the next build tries again)."""
        lines = [_line(_HEADER)]
        lines += [_line(_row(r, e)) for r, e in sorted(self.entries.items())]
        stamp = self.directories()
        lines.append(_line({"dirs": stamp}))
        temporary = self.root / f"{INDEX}.{secrets.token_hex(4)}.tmp"
        try:
            with open(temporary, "wb") as fh:
                fh.write(b"".join(lines))
            os.replace(temporary, self.path)
            info = os.stat(self.path)
        except OSError:
            try:
                temporary.unlink()
            except OSError:
                pass
            return
        self._file, self._offset, self.stamp = (info.st_dev, info.st_ino), info.st_size, stamp


def is_temporary(name: str) -> bool:
    """A file name of an index rewrite that did not finish."""
    return name.startswith(f"{INDEX}.") and name.endswith(".tmp")


def _row(run: str, entry: Entry) -> list[object]:
    row: list[object] = [run, entry.content_hash, entry.files]
    return [*row, entry.part] if entry.part else row


def _line(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"
