"""Opening inputs: paths, globs, directories, ``-`` for stdin, compression by content.

This module knows nothing of oneDNN. It turns what the user typed into a list of
:class:`InputSource` and each source into physical lines (``\\n``-terminated, line ends kept,
``\\r\\n`` left as it is; a lone ``\\r`` as written by progress bars stays inside the line).
The policy it implements is ``docs/input-policy.md``:

* gzip, bzip2 and xz are recognised by their magic bytes, whatever the file is called; a
  truncated or corrupt stream keeps every line read before the damage and sets
  :attr:`ReadStats.error`;
* a UTF-8 or UTF-16 byte order mark picks the encoding; anything else is read as UTF-8 and
  bytes that are not UTF-8 are replaced by U+FFFD and counted;
* files that are known binary formats (executables, images, archives, ...) and devices are
  refused with one clear :class:`InputError`;
* a physical line longer than :data:`MAX_LINE_BYTES` is cut there (the rest of it, up to its
  newline, is skipped and counted), so no input can make a line exhaust memory.

Files and pipes go through the same :class:`Decoder`: raw bytes are pushed into it as they
come and UTF-8 bytes of physical lines come out, so a pipe is decompressed, decoded and cut
exactly as a file is, and nothing is ever peeked at twice (a pipe has no second read).
UTF-16 is decoded before lines are cut, so a cut never falls inside a character.
"""

from __future__ import annotations

import bz2
import codecs
import glob
import gzip
import io
import itertools
import lzma
import os
import select
import stat
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from dnnlens.textsafe import safe

GZIP_MAGIC = b"\x1f\x8b"
STDIN_NAME = "-"
#: Characters of text per chunk handed to the scanner.
CHUNK_BYTES = 1 << 20
#: A verbose line longer than this many characters is not parsed (the scanner's limit).
MAX_LINE_CHARS = 1 << 20
#: Physical lines are cut after this many bytes. Four bytes per character at most, so a cut
#: line always has more than :data:`MAX_LINE_CHARS` characters and the scanner says so.
MAX_LINE_BYTES = 4 * (MAX_LINE_CHARS + 1)
#: Bytes per block handed to the bulk scanner (whole lines; small enough to stay in cache).
BLOCK_BYTES = 1 << 20
#: Bytes asked for per read of an input (a pipe gives what it holds, up to this).
_TEXT_CHUNK = 1 << 20

_BZIP2_BLOCK = b"1AY&SY"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: Known binary formats by their leading bytes: refused with this description.
_BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "an ELF executable or library"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a zip archive (or a file in one, such as a .pt checkpoint)"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"\x93NUMPY", "a NumPy array file"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"MZ\x90\x00", "a Windows executable"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class file"),
    (b"\x00asm", "a WebAssembly module"),
    (b"\x80\x02", "a Python pickle"),
    (b"\x80\x03", "a Python pickle"),
    (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"),
    (_ZSTD_MAGIC, "zstd-compressed (decompress it first: zstd -d FILE)"),
)


class InputError(Exception):
    """A user-facing problem with one input: the message is one readable line."""


@dataclass
class InputSource:
    """One input the user named: a file path, or ``-`` for standard input."""

    path: str

    @property
    def is_stdin(self) -> bool:
        """True for standard input."""
        return self.path == STDIN_NAME


@dataclass
class ReadStats:
    """What happened while reading one source, beyond its lines."""

    gzip: bool = False
    invalid_utf8_bytes: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    #: ``gzip``, ``bzip2``, ``xz`` or None.
    compression: str | None = None
    #: The text encoding used: ``utf-8``, or ``utf-8-sig`` / ``utf-16`` from a byte order mark.
    encoding: str = "utf-8"
    #: Physical lines longer than :data:`MAX_LINE_BYTES`, and the bytes skipped from them.
    cut_lines: int = 0
    skipped_bytes: int = 0

    def add(self, part: ReadStats) -> None:
        """Take in what reading a later part of the same input learnt (a byte range)."""
        self.invalid_utf8_bytes += part.invalid_utf8_bytes
        self.cut_lines += part.cut_lines
        self.skipped_bytes += part.skipped_bytes
        self.error = self.error or part.error
        self.notes.extend(n for n in part.notes if n not in self.notes)
        if part.encoding != "utf-8" and self.encoding == "utf-8":
            self.encoding = part.encoding


def note_cut_lines(path: str, stats: ReadStats) -> None:
    """The note on the lines of ``path`` cut at :data:`MAX_LINE_BYTES`, if any were."""
    if stats.cut_lines:
        lines = "1 line" if stats.cut_lines == 1 else f"{stats.cut_lines:,} lines"
        stats.notes.append(
            f"{display_path(path)}: {lines} longer than {MAX_LINE_BYTES:,} bytes "
            f"cut there ({stats.skipped_bytes:,} bytes skipped)"
        )


def display_path(path: str) -> str:
    """``path`` safe to print on one line: control characters are shown as escapes, and a
    byte of the name that is not UTF-8 as ``\\xNN`` (:func:`dnnlens.textsafe.safe`)."""
    return safe(path)


def _file_key(path: str) -> tuple[int, int] | str:
    try:
        st = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return (st.st_dev, st.st_ino)


def _directory_files(spec: str) -> tuple[list[str], str | None]:
    """The regular, non-hidden files directly inside directory ``spec``, sorted."""
    shown = display_path(spec)
    try:
        entries = os.listdir(spec)
    except PermissionError:
        return [], f"{shown}: permission denied (cannot list the directory)"
    except OSError as exc:
        return [], f"{shown}: cannot list the directory ({exc.strerror or exc})"
    names = sorted(os.path.join(spec, n) for n in entries if not n.startswith("."))
    files = [n for n in names if os.path.isfile(n)]
    if files:
        return files, None
    subdirs = sum(1 for n in names if os.path.isdir(n))
    if subdirs:
        return [], (
            f"{shown}: directory holds no files, only {subdirs} subdirectories "
            f"(they are not searched; pass '{shown}/**/*.log' to search them)"
        )
    return [], f"{shown}: directory holds no files"


def _listed(names: list[str]) -> str:
    shown = [display_path(os.path.basename(n)) for n in names[:_SKIPPED_SHOWN]]
    more = f" and {len(names) - _SKIPPED_SHOWN:,} more" if len(names) > _SKIPPED_SHOWN else ""
    return ", ".join(shown) + more


def _skipped_note(directory: str, names: list[str]) -> str:
    from dnnlens.io.content import HEAD_BYTES

    files = "1 file" if len(names) == 1 else f"{len(names):,} files"
    return (
        f"{display_path(directory)}: skipped {files} with no oneDNN verbose line, profiler "
        f"trace or table in the first {HEAD_BYTES >> 20} MiB: {_listed(names)} "
        "(name a file to read it anyway)"
    )


def _nothing_note(directory: str, names: list[str]) -> str:
    from dnnlens.io.content import HEAD_BYTES

    return (
        f"{display_path(directory)}: none of its {len(names):,} files holds a oneDNN verbose "
        f"line, profiler trace or table in the first {HEAD_BYTES >> 20} MiB ({_listed(names)}; "
        "name a file to read it anyway)"
    )


#: Skipped files named in the note about a directory; the rest are counted.
_SKIPPED_SHOWN = 6


def left_out_note(spec: str, matched: Sequence[str]) -> str | None:
    """For a glob ``spec`` that matched ``matched``: the files in the directories it
    searched (its directory part's matches) that it did not match and that hold a log, a
    trace or a table (``logs/**/*.log`` leaves out ``a.log.gz`` and ``a.trace.json``), in
    one line as a directory's skipped files are; ``None`` if there are none."""
    from dnnlens.io.content import holds_run

    if not glob.has_magic(spec):
        return None
    chosen = {os.path.abspath(m) for m in matched}
    folder = os.path.dirname(spec) or "."
    if glob.has_magic(folder):
        folders = sorted(p for p in glob.glob(folder, recursive=True) if os.path.isdir(p))
    else:
        folders = [folder]
    left = []
    for where in folders:
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        for name in names:
            path = os.path.join(where, name)
            if name.startswith(".") or os.path.abspath(path) in chosen:
                continue
            if os.path.isfile(path) and holds_run(path):
                left.append(path)
    if not left:
        return None
    files = "1 file" if len(left) == 1 else f"{len(left):,} files"
    return (
        f"{display_path(spec)}: left out {files} it does not match that hold a oneDNN "
        f"verbose line, profiler trace or table: {_listed(left)} (widen the pattern, "
        "e.g. '*.log*', or name them)"
    )


@dataclass(frozen=True)
class Expansion:
    """What a command's input specs name, found once (a directory's files are looked into
    to tell runs from the rest): the sources, one error per spec that names nothing
    readable, and the notes of files skipped. The command line makes it for its progress
    bar and its choice of ``-j`` and hands the same one to :func:`dnnlens.reading.read`."""

    sources: list[InputSource]
    errors: list[str]
    notes: list[str]


def expand(specs: Sequence[str]) -> Expansion:
    """:func:`expand_inputs` of ``specs``, as an :class:`Expansion`."""
    notes: list[str] = []
    sources, errors = expand_inputs(list(specs), notes)
    return Expansion(sources, errors, notes)


def expand_inputs(
    specs: list[str], notes: list[str] | None = None
) -> tuple[list[InputSource], list[str]]:
    """Expand paths, globs and directories into sources.

    A directory stands for the regular, non-hidden files directly inside it that hold a
    log, a trace or a table (:mod:`dnnlens.io.content`); the others are listed in one line
    added to ``notes``. A pattern with
    ``*``, ``?`` or ``[`` that names no existing file is a glob (``**`` recurses). A file named
    twice (also through a link, a directory or a glob) is read once.

    Returns the sources and one error line per spec that names nothing readable; the
    caller decides whether those errors are fatal (they are when no source is left).
    """
    sources: list[InputSource] = []
    errors: list[str] = []
    seen: set[tuple[int, int] | str] = set()

    def add(path: str) -> None:
        key = STDIN_NAME if path == STDIN_NAME else _file_key(path)
        if key not in seen:
            seen.add(key)
            sources.append(InputSource(path))

    for spec in specs:
        if spec == STDIN_NAME:
            add(STDIN_NAME)
            continue
        if not spec:
            errors.append("'': an empty path names no file")
            continue
        if os.path.isdir(spec):
            from dnnlens.io.content import holds_run

            files, error = _directory_files(spec)
            if error:
                errors.append(error)
            runs, skipped = [], []
            for name in files:
                (runs if holds_run(name) else skipped).append(name)
            if files and not runs:
                errors.append(_nothing_note(spec, files))
            elif skipped and notes is not None:
                notes.append(_skipped_note(spec, skipped))
            for name in runs:
                add(name)
            continue
        if os.path.lexists(spec):
            add(spec)  # opening it says what is wrong with it, if anything
            continue
        if glob.has_magic(spec):
            try:
                matches = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            except OSError as exc:  # pragma: no cover - glob swallows most of these
                errors.append(f"{display_path(spec)}: cannot search ({exc.strerror or exc})")
                continue
            if matches:
                for name in matches:
                    add(name)
            else:
                errors.append(
                    f"{display_path(spec)}: no such file, and no file matches it as a pattern"
                )
            continue
        errors.append(f"{display_path(spec)}: no such file or directory")
    return sources, errors


# -- opening ------------------------------------------------------------------------------


def _stdin_binary() -> BinaryIO:
    stdin = sys.stdin
    if stdin is None:
        raise InputError("-: standard input is closed")
    buffer = getattr(stdin, "buffer", None)
    if buffer is None:  # replaced by a text stream (notebooks, some test runners)
        return io.BytesIO(stdin.read().encode("utf-8", "surrogateescape"))
    return buffer


def _fileno(stream: BinaryIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None


class RawInput:
    """One opened input: where its raw bytes come from, and whether it can be waited on.

    A regular file is read with ``read1``; a pipe, a FIFO, process substitution or a
    terminal is read with ``os.read`` on its descriptor (nothing buffered above it, so
    :meth:`wait` is exact and no byte is held back). Nothing here peeks: what is read once
    is never read again, so a pipe loses no byte to sniffing.
    """

    def __init__(self, source: InputSource, stream: BinaryIO, close: bool) -> None:
        self.source = source
        self.stream = stream
        self._close = close
        fd = _fileno(stream)
        mode = os.fstat(fd).st_mode if fd is not None else stat.S_IFREG
        #: a regular file: its size is known and it can be opened again by name
        self.is_file = stat.S_ISREG(mode)
        self.size: int | None = os.fstat(fd).st_size if fd is not None and self.is_file else None
        self._fd = None if self.is_file else fd
        self._stat_fd = fd if self.is_file else None
        self._read = getattr(stream, "read1", None) or stream.read
        #: bytes read so far
        self.consumed = 0
        #: a regular file's size when it ended before the size it had when opened
        self.shrunk_to: int | None = None

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes, as soon as some are there; ``b""`` at the end."""
        data = os.read(self._fd, size) if self._fd is not None else self._read(size)
        self.consumed += len(data)
        if not data and self.size is not None and self.consumed < self.size:
            self._check_shrunk()
        return data

    def _check_shrunk(self) -> None:
        """A file ended early: truncated in place while read (``copytruncate``)?"""
        try:
            now = os.fstat(self._stat_fd).st_size if self._stat_fd is not None else None
        except OSError:
            return
        if now is not None and self.size is not None and now < self.size:
            self.shrunk_to = now

    def shrink_note(self) -> str | None:
        """The note on a file that shrank while it was read, or ``None``: the lines read
        before the cut are kept, and the cut is said, not silent."""
        if self.shrunk_to is None or self.size is None:
            return None
        return (
            f"{display_path(self.source.path)}: the file shrank while it was read, from "
            f"{self.size:,} to {self.shrunk_to:,} bytes (truncated in place, as logrotate's "
            f"copytruncate does): the {self.consumed:,} bytes read before are analysed, "
            "the rest is gone"
        )

    def wait(self, timeout: float) -> bool:
        """Whether :meth:`read` can return at once (bytes or the end), waiting at most
        ``timeout`` seconds. Always true for files and streams without a descriptor."""
        if self._fd is None:
            return True
        ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
        return bool(ready)

    def close(self) -> None:
        """Close what was opened here (never standard input or a stream given to us)."""
        if self._close:
            self.stream.close()


def _refuse_device_stdin(stdin: BinaryIO) -> None:
    """``- < /dev/zero`` would be read forever: a character device on standard input that
    is not a terminal is refused like the same device named as a path. ``/dev/null`` is
    let through: it ends at once, as empty standard input."""
    fd = _fileno(stdin)
    if fd is None:
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISCHR(info.st_mode) and not stat.S_ISBLK(info.st_mode) or os.isatty(fd):
            return
        null = os.stat(os.devnull)
    except OSError:
        return  # reading says what is wrong with it
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == null.st_rdev:
        return
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        name = "a character device" if stat.S_ISCHR(info.st_mode) else "a block device"
    shown = display_path(name)
    raise InputError(f"standard input: is a device ({shown}), not a file, pipe or terminal")


def open_input(source: InputSource, stream: BinaryIO | None = None) -> RawInput:
    """Open ``source`` for reading its raw bytes (``stream``: already open, e.g. a child's
    output). Raises :class:`InputError` when it cannot be opened or is a device."""
    if stream is not None:
        return RawInput(source, stream, close=False)
    if source.is_stdin:
        stdin = _stdin_binary()
        _refuse_device_stdin(stdin)
        return RawInput(source, stdin, close=False)
    shown = display_path(source.path)
    try:
        raw = open(source.path, "rb")  # noqa: SIM115 - closed by RawInput.close
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file (it disappeared, or is a broken link)") from None
    except PermissionError:
        raise InputError(f"{shown}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot open ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(raw.fileno()).st_mode
        tty = raw.isatty()
    except OSError:  # pragma: no cover - fstat on an open file does not fail in practice
        return RawInput(source, raw, close=True)
    if stat.S_ISCHR(mode) and not tty or stat.S_ISBLK(mode):
        raw.close()
        raise InputError(f"{shown}: is a device, not a file")
    return RawInput(source, raw, close=True)


def _binary_kind(head: bytes) -> str | None:
    for magic, what in _BINARY_SIGNATURES:
        if head.startswith(magic):
            return what
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "a tar archive"
    return None


def _encoding(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8"


def _packing(head: bytes) -> str | None:
    """``gzip``, ``bzip2`` or ``xz`` when ``head`` (16 bytes or all there is) starts one."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (_BZIP2_BLOCK, b"\x17rE8P\x90"):
        return "bzip2"
    if head.startswith(_XZ_MAGIC):
        return "xz"
    return None


def _may_grow_into(head: bytes, marks: tuple[bytes, ...]) -> bool:
    """Whether more bytes after ``head`` could still make it start with one of ``marks``."""
    return any(len(head) < len(m) and m.startswith(head) for m in marks)


_PACK_MARKS = (GZIP_MAGIC, b"BZh0" + _BZIP2_BLOCK, _XZ_MAGIC)
_TEXT_MARKS = (
    codecs.BOM_UTF8,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
    *(magic for magic, _ in _BINARY_SIGNATURES),
)
#: Raw bytes looked at to recognise compression, decoded bytes to recognise binary formats.
PACK_HEAD = 16
TEXT_HEAD = 512


# -- invalid bytes are counted by one error handler, told where to count per thread --------

_COUNT_INTO = threading.local()
_ERRORS = "dnnlens-count-replace"


def _count_and_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):  # pragma: no cover - only decoding uses it
        raise exc
    stats = getattr(_COUNT_INTO, "stats", None)
    if stats is not None:
        stats.invalid_utf8_bytes += exc.end - exc.start
    return ("\ufffd", exc.end)


codecs.register_error(_ERRORS, _count_and_replace)


# -- decoding: raw bytes in, UTF-8 bytes of physical lines out ------------------------------


class _Unpack:
    """A gzip, bzip2 or xz stream decompressed as bytes come, in pieces of bounded size.

    Concatenated streams (gzip members, bzip2 and xz streams) are read one after the other;
    after a complete bzip2 or xz stream, data that starts no new one is ignored (as Python's
    own readers do), after a gzip member it is an error (as :mod:`gzip` does).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._d = self._new()
        self._fed = False  # the current stream has been given bytes
        self._streams = 1
        self._pending = b""  # the first byte of what may be a gzip magic
        self._ignoring = False

    def _new(self) -> Any:
        if self.kind == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.kind == "bzip2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decompressed bytes of ``data``; raises on corrupt data."""
        if self._pending:
            data, self._pending = self._pending + data, b""
        while data and not self._ignoring:
            if self._d.eof:
                if not self._next_stream(data):
                    return
            fresh = not self._fed and self._streams > 1
            self._fed = True
            try:
                yield from self._inflate(data)
            except (OSError, lzma.LZMAError):
                if fresh and self.kind != "gzip":  # trailing garbage after a whole stream
                    self._ignoring = True
                    return
                raise
            data = yield from self._drain()

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        """``decompress`` once; for gzip, the bytes before a damage are given out too (zlib
        checks the CRC in the call that reads the trailer and drops that call's output)."""
        if self.kind != "gzip":
            out = self._d.decompress(data, CHUNK_BYTES)
            if out:
                yield out
            return
        saved = self._d.copy()
        try:
            out = self._d.decompress(data, CHUNK_BYTES)
        except zlib.error:
            self._d = saved
            yield from self._salvage(data)
            raise
        if out:
            yield out

    def _salvage(self, data: bytes) -> Iterator[bytes]:
        """Decompress ``data`` byte by byte up to the byte that fails."""
        for i in range(len(data)):
            saved = self._d.copy()
            try:
                out = self._d.decompress(data[i : i + 1])
            except zlib.error:
                self._d = saved
                return
            if out:
                yield out

    def _drain(self) -> Iterator[bytes]:
        """Output held back by the size limit; returns the input left for the next stream."""
        d = self._d
        if self.kind == "gzip":
            while not self._d.eof and self._d.unconsumed_tail:
                yield from self._inflate(self._d.unconsumed_tail)
            while not self._d.eof:  # output still held inside zlib
                out = self._d.decompress(b"", CHUNK_BYTES)
                if not out:
                    break
                yield out
            d = self._d
        else:
            while not d.eof and not d.needs_input:
                out = d.decompress(b"", CHUNK_BYTES)
                if not out:
                    break
                yield out
        return d.unused_data if d.eof else b""

    def _next_stream(self, data: bytes) -> bool:
        """Start the stream that ``data`` opens; False when ``data`` is kept or ignored."""
        if self.kind == "gzip":
            if len(data) < len(GZIP_MAGIC) and GZIP_MAGIC.startswith(data):
                self._pending = data
                return False
            if not data.startswith(GZIP_MAGIC):
                raise gzip.BadGzipFile(f"Not a gzipped file ({data[:2]!r})")
        self._d = self._new()
        self._fed = False
        self._streams += 1
        return True

    def finish(self) -> None:
        """At the end of the raw bytes: raise if the last stream is incomplete."""
        if self._pending:
            raise gzip.BadGzipFile(f"Not a gzipped file ({self._pending!r})")
        if self._fed and not self._d.eof and not self._ignoring:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")


class _LineCap:
    """Cuts physical lines longer than :data:`MAX_LINE_BYTES` there, at a UTF-8 character
    boundary, and skips the rest of them up to their newline (counted into ``stats``)."""

    def __init__(self, stats: ReadStats) -> None:
        self._stats = stats
        self._run = 0  # bytes of the current (unfinished) line passed on so far
        self._skipping = False  # inside the cut-off rest of an overlong line

    def __call__(self, data: bytes) -> bytes:
        if self._skipping:
            j = data.find(b"\n")
            if j < 0:
                self._stats.skipped_bytes += len(data)
                return b""
            self._stats.skipped_bytes += j
            data = data[j:]
            self._skipping = False
            self._run = 0
        if len(data) <= MAX_LINE_BYTES:  # only the line carried over can grow too long
            j = data.find(b"\n")
            if self._run + (len(data) if j < 0 else j) <= MAX_LINE_BYTES:
                k = data.rfind(b"\n") if j >= 0 else -1
                self._run = self._run + len(data) if k < 0 else len(data) - k - 1
                return data
        return self._cut(data)

    def _cut(self, data: bytes) -> bytes:
        out: list[bytes] = []
        pos, n = 0, len(data)
        while pos < n:
            j = data.find(b"\n", pos)
            end = n if j < 0 else j
            if self._run + end - pos <= MAX_LINE_BYTES:
                out.append(data[pos:] if j < 0 else data[pos : j + 1])
                self._run = self._run + end - pos if j < 0 else 0
                if j < 0:
                    break
                pos = j + 1
                continue
            keep = MAX_LINE_BYTES + 1 - self._run
            while keep > 1 and pos + keep < n and 0x80 <= data[pos + keep] < 0xC0:
                keep -= 1  # do not split a UTF-8 character
            out.append(data[pos : pos + keep])
            self._stats.cut_lines += 1
            self._stats.skipped_bytes += end - pos - keep
            self._run = 0
            if j < 0:
                self._skipping = True
                break
            out.append(b"\n")
            pos = j + 1
        return b"".join(out)


class Decoder:
    """The reading policy of this module as a push decoder: raw bytes of one input in (as a
    file or a pipe gives them), UTF-8 bytes of its physical lines out.

    Compression is recognised from the first :data:`PACK_HEAD` raw bytes, binary formats and
    the byte order mark from the first :data:`TEXT_HEAD` decoded ones (a paused stream is
    decided on fewer with :meth:`flush`, unless they could still grow into a mark). UTF-16 is
    decoded and written out as UTF-8, so that lines are cut after decoding, never inside a
    character. Decompression and read errors end the output (:attr:`failed`) and set
    ``stats.error``; the bytes before them are all given out. A known binary format raises
    :class:`InputError`.
    """

    def __init__(self, stats: ReadStats, path: str, plain: bool = False) -> None:
        self.stats = stats
        self.path = path
        self._plain = plain
        #: the first decoded bytes, once the kind of input is known (None before)
        self.head: bytes | None = b"" if plain else None
        #: raw bytes pushed until :attr:`head` was known (a trace is read again from them;
        #: the caller lets go of them)
        self.raw_seen = bytearray()
        self.failed = False
        self._raw = b""  # raw bytes while compression is not known
        self._packed_known = plain
        self._unpack: _Unpack | None = None
        self._text = b""  # decoded bytes while the encoding is not known
        self._utf16: codecs.IncrementalDecoder | None = None
        self._bom = False  # a UTF-8 byte order mark is still to be dropped
        self._cap = _LineCap(stats)

    def push(self, data: bytes) -> Iterator[bytes]:
        """The output for the next raw bytes (pieces of at most about :data:`CHUNK_BYTES`)."""
        if self.failed or not data:
            return
        if self.head is None:
            self.raw_seen += data
        if not self._packed_known:
            self._raw += data
            if len(self._raw) < PACK_HEAD and _may_grow_into(self._raw, _PACK_MARKS):
                return
            data = self._know_packing()
        yield from self._unpacked(data)

    def flush(self) -> Iterator[bytes]:
        """The stream paused: decide what can be decided on the bytes there are."""
        if self.failed:
            return
        if not self._packed_known and not _may_grow_into(self._raw, _PACK_MARKS):
            yield from self._unpacked(self._know_packing())
        if self._packed_known and self.head is None and self._text:
            if not _may_grow_into(self._text, _TEXT_MARKS):
                yield from self._decoded(b"", decide=True)

    def end(self) -> Iterator[bytes]:
        """The raw bytes ended: the rest of the output (the last line may lack its end)."""
        if not self.failed:
            if not self._packed_known:
                yield from self._unpacked(self._know_packing())
            if self._unpack is not None and not self.failed:
                try:
                    self._unpack.finish()
                except Exception as exc:  # noqa: BLE001 - every stream error ends the input
                    self.fail(exc)
            if self.head is None and not self.failed:
                yield from self._decoded(b"", decide=True)
            if self._utf16 is not None and not self.failed:
                yield from self._encoded(b"", final=True)
        if not self._plain:  # the parts of a file read in ranges are noted together
            note_cut_lines(self.path, self.stats)

    def fail(self, exc: BaseException) -> None:
        """Reading or decompressing failed: no more output; ``stats.error`` says why."""
        self.failed = True
        shown = display_path(self.path)
        kind = self.stats.compression
        if kind and isinstance(exc, EOFError):
            what = f"truncated {kind} stream (the file ends early)"
        elif kind and isinstance(exc, gzip.BadGzipFile | zlib.error | lzma.LZMAError | OSError):
            what = f"corrupt {kind} stream ({exc})"
        elif isinstance(exc, OSError):
            what = f"read error ({exc.strerror or exc})"
        else:
            what = f"read error ({type(exc).__name__}: {exc})"
        self.stats.error = f"{shown}: {what}; the lines before it were read"

    def _know_packing(self) -> bytes:
        data, self._raw = self._raw, b""
        self._packed_known = True
        kind = _packing(data[:PACK_HEAD])
        if kind is not None:
            self._unpack = _Unpack(kind)
            self.stats.compression = kind
            self.stats.gzip = kind == "gzip"
        return data

    def _unpacked(self, data: bytes) -> Iterator[bytes]:
        if self._unpack is None:
            yield from self._decoded(data)
            return
        pieces = self._unpack.feed(data)
        while not self.failed:
            try:
                piece = next(pieces)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - every stream error ends the input
                self.fail(exc)
                return
            yield from self._decoded(piece)

    def _decoded(self, piece: bytes, decide: bool = False) -> Iterator[bytes]:
        if self.head is None:
            self._text += piece
            if len(self._text) < TEXT_HEAD and not decide:
                return
            piece, self._text = self._text, b""
            self._know_text(piece)
        yield from self._encoded(piece)

    def _know_text(self, head: bytes) -> None:
        shown = display_path(self.path)
        kind = _binary_kind(head)
        if kind is not None:
            self.failed = True
            packed = f"{self.stats.compression}-compressed " if self.stats.compression else ""
            raise InputError(f"{shown}: {packed}{kind}, not a text log")
        self.head = head[:4096]
        self.stats.encoding = _encoding(head)
        if self.stats.encoding == "utf-16":
            self.stats.notes.append(f"{shown}: read as UTF-16 (byte order mark)")
            self._utf16 = codecs.getincrementaldecoder("utf-16")(_ERRORS)
        self._bom = self.stats.encoding == "utf-8-sig"
        if self.stats.compression and self.stats.compression != "gzip":
            self.stats.notes.append(f"{shown}: {self.stats.compression}-compressed")

    def _encoded(self, piece: bytes, final: bool = False) -> Iterator[bytes]:
        if self._utf16 is not None:
            _COUNT_INTO.stats = self.stats
            try:
                text = self._utf16.decode(piece, final)
            finally:
                _COUNT_INTO.stats = None
            piece = text.encode("utf-8", "surrogatepass")
        elif self._bom and piece:
            self._bom = False
            if piece.startswith(codecs.BOM_UTF8):
                piece = piece[len(codecs.BOM_UTF8) :]
        out = self._cap(piece) if piece else b""
        if out:
            yield out


class LineBlocks:
    """Decoded pieces in, blocks of whole lines out, each of about :data:`BLOCK_BYTES`
    (longer when one line is; lines are at most :data:`MAX_LINE_BYTES` after the cap)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    @property
    def pending(self) -> int:
        """Bytes held: the lines of a block not yet full, and the start of the next line."""
        return self._size

    def add(self, piece: bytes) -> bytes | None:
        """A block when ``piece`` fills one."""
        if not self._parts and len(piece) >= BLOCK_BYTES and piece.endswith(b"\n"):
            return piece
        self._parts.append(piece)
        self._size += len(piece)
        return self.whole() if self._size >= BLOCK_BYTES else None

    def whole(self) -> bytes | None:
        """Every whole line held, as one block (None when no line is complete)."""
        parts = self._parts
        for i in range(len(parts) - 1, -1, -1):
            k = parts[i].rfind(b"\n")
            if k >= 0:
                break
        else:
            return None
        rest = parts[i][k + 1 :]
        if i == 0 and not rest:
            block = parts[0]
        else:
            block = b"".join([*parts[:i], memoryview(parts[i])[: k + 1]])
        self._parts = [rest, *parts[i + 1 :]] if rest else parts[i + 1 :]
        self._size = sum(map(len, self._parts))
        return block

    def rest(self) -> bytes:
        """Everything held (at the end of the input: the last line may lack its end)."""
        data = b"".join(self._parts)
        self._parts, self._size = [], 0
        return data


# -- reading a whole input ----------------------------------------------------------------


def _pieces(raw: RawInput, decoder: Decoder) -> Iterator[bytes]:
    """The decoded output of ``raw`` to its end (a read error ends it, see Decoder.fail)."""
    try:
        while not decoder.failed:
            try:
                data = raw.read(_TEXT_CHUNK)
            except Exception as exc:  # noqa: BLE001 - every stream error ends the input
                decoder.fail(exc)
                break
            if not data:
                break
            yield from decoder.push(data)
        note = raw.shrink_note()
        if note is not None:
            decoder.stats.notes.append(note)
        yield from decoder.end()
    finally:
        raw.close()


def _blocks_of(pieces: Iterable[bytes]) -> Iterator[bytes]:
    blocks = LineBlocks()
    for piece in pieces:
        block = blocks.add(piece)
        if block is not None:
            yield block
    block = blocks.whole()
    if block is not None:
        yield block
    last = blocks.rest()
    if last:
        yield last


def _opened(raw: RawInput, decoder: Decoder) -> Iterator[bytes]:
    """The decoded output of ``raw``, its head already decoded: an input that is not text
    raises :class:`InputError` here, not at the first ``next``."""
    pieces = _pieces(raw, decoder)
    first: list[bytes] = []
    try:
        while decoder.head is None:
            piece = next(pieces, None)
            if piece is None:
                break
            first.append(piece)
    except BaseException:
        pieces.close()
        raise
    return itertools.chain(first, pieces)


def _text_chunks(blocks: Iterable[bytes], stats: ReadStats) -> Iterator[list[str]]:
    """Lists of lines (line ends kept) of about :data:`CHUNK_BYTES` from blocks of lines."""
    chunk: list[str] = []
    size = 0
    for block in blocks:
        text = decode_line(block, stats)
        lines = text.split("\n")
        last = lines.pop()
        chunk.extend(line + "\n" for line in lines)
        if last:
            chunk.append(last)
        size += len(text)
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def iter_chunks(source: InputSource, stats: ReadStats) -> Iterator[list[str]]:
    """Yield the physical lines of ``source`` in lists of about ``CHUNK_BYTES``.

    Lines keep their line end (``\\n``, or ``\\r\\n``); consumers strip it where they look at
    the text. Raises :class:`InputError` (at the first ``next``) only if the source cannot
    be opened or is not text; damage found later sets ``stats.error`` and ends the lines.
    """
    raw = open_input(source)
    yield from _text_chunks(_blocks_of(_opened(raw, Decoder(stats, source.path))), stats)


def open_utf8_blocks(source: InputSource, stats: ReadStats) -> Iterator[bytes]:
    """The physical lines of ``source`` as UTF-8 bytes, in blocks of whole lines.

    For the bulk scanner: each block holds about :data:`BLOCK_BYTES` and ends with a
    ``\\n``, except the last one when the input does not end with a line end. A byte order
    mark is removed and UTF-16 is given as UTF-8. Bytes that are not UTF-8 are left as they
    are: decode a line with :func:`decode_line`, which counts them into ``stats``. Raises
    :class:`InputError` at once when the source cannot be opened or is not a text log.
    """
    return _blocks_of(_opened(open_input(source), Decoder(stats, source.path)))


def open_blocks(source: InputSource, stats: ReadStats) -> Iterator[bytes] | Iterator[list[str]]:
    """:func:`open_utf8_blocks`, except that a UTF-16 input (``stats.encoding`` says so)
    gives lists of text lines, as :func:`iter_chunks` does."""
    blocks = open_utf8_blocks(source, stats)
    if stats.encoding == "utf-16":
        return _text_chunks(blocks, stats)
    return blocks


class _RangeReader:
    """Reads at most ``left`` bytes of ``raw`` (a byte range of a file)."""

    def __init__(self, raw: BinaryIO, left: int) -> None:
        self._raw = raw
        self._left = left
        #: the file ended inside the range: it shrank after the ranges were cut
        self.short = False

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._raw.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        if not data:
            self.short = True
        return data

    def close(self) -> None:
        self._raw.close()


def splittable(path: str) -> bool:
    """Whether ``path`` may be read in byte ranges: plain UTF-8 text, not compressed."""
    try:
        with open(path, "rb") as f:
            head = f.read(TEXT_HEAD)
    except OSError:
        return False
    return _packing(head) is None and _binary_kind(head) is None and _encoding(head) != "utf-16"


def open_range_blocks(path: str, start: int, end: int, stats: ReadStats) -> Iterator[bytes]:
    """The lines of the bytes ``[start, end)`` of a :func:`splittable` file, as
    :func:`open_utf8_blocks` gives them (``start`` and ``end`` are line starts)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed at the end of the blocks
    raw.seek(start)
    decoder = Decoder(stats, path, plain=True)
    if start == 0:
        decoder._bom = True  # noqa: SLF001 - the file's first bytes: drop a byte order mark
        with open(path, "rb") as f:
            stats.encoding = _encoding(f.read(4))
    source = InputSource(path)
    ranged = _RangeReader(raw, end - start)
    reader = RawInput(source, ranged, close=True)  # type: ignore[arg-type]
    return _blocks_of(_noting_short_range(_pieces(reader, decoder), ranged, path, stats))


def _noting_short_range(
    pieces: Iterator[bytes], ranged: _RangeReader, path: str, stats: ReadStats
) -> Iterator[bytes]:
    """``pieces``, then the note of a range the file no longer reached (one text for every
    range of the file, so the merged statistics hold it once)."""
    yield from pieces
    if ranged.short:
        stats.notes.append(
            f"{display_path(path)}: the file shrank while it was read (truncated in place, as "
            "logrotate's copytruncate does): the lines read before the cut are analysed, "
            "the rest is gone"
        )


def decode_line(data: bytes, stats: ReadStats) -> str:
    """``data`` as text, as :func:`iter_chunks` would give it (invalid bytes counted)."""
    _COUNT_INTO.stats = stats
    try:
        return data.decode("utf-8", _ERRORS)
    finally:
        _COUNT_INTO.stats = None


def decode_lines(data: bytes, starts: list[int], ends: list[int], stats: ReadStats) -> list[str]:
    """The lines ``data[s:e]`` as text, as :func:`decode_line` gives each."""
    _COUNT_INTO.stats = stats
    try:
        return [data[s:e].decode("utf-8", _ERRORS) for s, e in zip(starts, ends, strict=True)]
    finally:
        _COUNT_INTO.stats = None


def iter_lines(source: InputSource, stats: ReadStats) -> Iterator[str]:
    """Yield the physical lines of ``source`` without their line ends (see iter_chunks)."""
    for chunk in iter_chunks(source, stats):
        for line in chunk:
            yield line.rstrip("\r\n") if line.endswith("\n") else line
