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
"""

from __future__ import annotations

import bz2
import codecs
import glob
import gzip
import io
import lzma
import os
import stat
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
STDIN_NAME = "-"
#: Characters of text per chunk handed to the scanner.
CHUNK_BYTES = 1 << 20
#: A verbose line longer than this many characters is not parsed (the scanner's limit).
MAX_LINE_CHARS = 1 << 20
#: Physical lines are cut after this many bytes. Four bytes per character at most, so a cut
#: line always has more than :data:`MAX_LINE_CHARS` characters and the scanner says so.
MAX_LINE_BYTES = 4 * (MAX_LINE_CHARS + 1)
_TEXT_CHUNK = 1 << 20
#: Bytes per block handed to the bulk scanner (whole lines; small enough to stay in cache).
BLOCK_BYTES = 1 << 20

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


def display_path(path: str) -> str:
    """``path`` safe to print on one line: control characters are shown as escapes."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


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


def expand_inputs(specs: list[str]) -> tuple[list[InputSource], list[str]]:
    """Expand paths, globs and directories into sources.

    A directory stands for the regular, non-hidden files directly inside it; a pattern with
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
            files, error = _directory_files(spec)
            if error:
                errors.append(error)
            for name in files:
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


def _open_binary(source: InputSource) -> BinaryIO:
    if source.is_stdin:
        raw = _stdin_binary()
        if not hasattr(raw, "peek"):
            raw = io.BufferedReader(raw)  # type: ignore[arg-type]
        return raw
    shown = display_path(source.path)
    try:
        raw = open(source.path, "rb")  # noqa: SIM115 - closed by iter_chunks
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
        return raw
    if stat.S_ISCHR(mode) and not tty or stat.S_ISBLK(mode):
        raw.close()
        raise InputError(f"{shown}: is a device, not a file")
    return raw


def _peek(stream: BinaryIO, n: int) -> bytes:
    peek = getattr(stream, "peek", None)
    return peek(n)[:n] if peek is not None else b""


def _decompressor(raw: BinaryIO, head: bytes, stats: ReadStats) -> BinaryIO:
    """``raw`` itself, or a decompressing reader over it when ``head`` is a known magic."""
    if head.startswith(GZIP_MAGIC):
        stats.gzip = True
        stats.compression = "gzip"
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (_BZIP2_BLOCK, b"\x17rE8P\x90"):
        stats.compression = "bzip2"
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if head.startswith(_XZ_MAGIC):
        stats.compression = "xz"
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    return raw


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


class _GuardedStream(io.BufferedIOBase):
    """The byte stream under the text layer: it never raises and never yields a huge line.

    Decompression and read errors end the stream cleanly (recorded in ``stats.error``), so
    the text layer returns every line read before the damage, the partial last one
    included. Physical lines longer than :data:`MAX_LINE_BYTES` are cut there, at a
    character boundary, and the rest of them is skipped up to their newline. The text layer
    reads it with ``read1``, which hands blocks over without copying them.
    """

    def __init__(self, stream: BinaryIO, stats: ReadStats, path: str) -> None:
        super().__init__()
        self._read = getattr(stream, "read1", None) or stream.read
        self._stats = stats
        self._path = path
        self._head = b""  # bytes peeked at and not yet read
        self._run = 0  # bytes of the current (unfinished) line passed on so far
        self._skipping = False  # inside the cut-off rest of an overlong line
        self._done = False

    def readable(self) -> bool:
        return True

    def peek(self, size: int = 1) -> bytes:
        """At least ``size`` bytes ahead (fewer at the end), without consuming them."""
        while len(self._head) < size:
            data = self._next(CHUNK_BYTES)
            if not data:
                break
            self._head += data
        return self._head

    def read1(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (one block when ``size`` is negative); ``b""`` at the end."""
        if size < 0:
            size = CHUNK_BYTES
        if self._head:
            data, self._head = self._head[:size], self._head[size:]
            return data
        data = self._next(size)
        if len(data) > size:
            data, self._head = data[:size], data[size:]
        return data

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes, everything left when ``size`` is negative or None."""
        if size is not None and size >= 0:
            return self.read1(size)
        parts = []
        while True:
            data = self.read1()
            if not data:
                return b"".join(parts)
            parts.append(data)

    def _next(self, size: int) -> bytes:
        while not self._done:
            try:
                data = self._read(size)
            except Exception as exc:  # noqa: BLE001 - every stream error ends the input
                self._fail(exc)
                break
            if not data:
                self._done = True
                break
            data = self._cap(data)
            if data:
                return data
        return b""

    def _fail(self, exc: Exception) -> None:
        self._done = True
        shown = display_path(self._path)
        kind = self._stats.compression
        if kind and isinstance(exc, EOFError):
            what = f"truncated {kind} stream (the file ends early)"
        elif kind and isinstance(exc, gzip.BadGzipFile | zlib.error | lzma.LZMAError | OSError):
            what = f"corrupt {kind} stream ({exc})"
        elif isinstance(exc, OSError):
            what = f"read error ({exc.strerror or exc})"
        else:
            what = f"read error ({type(exc).__name__}: {exc})"
        self._stats.error = f"{shown}: {what}; the lines before it were read"

    def _cap(self, data: bytes) -> bytes:
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


def _open_guarded(source: InputSource, stats: ReadStats) -> tuple[_GuardedStream, list[BinaryIO]]:
    """Open ``source`` as guarded bytes, following the policy of this module.

    Returns the byte stream (decompressed, overlong lines cut, never raising) and the
    streams to close after it; ``stats.encoding`` is set from the first bytes. Raises
    :class:`InputError` when the source cannot be opened or is not a text log.
    Decompression and read errors later on do not raise: they end the bytes and set
    ``stats.error``.
    """
    raw = _open_binary(source)
    try:
        stream = _decompressor(raw, _peek(raw, 16), stats)
        guarded = _GuardedStream(stream, stats, source.path)
        head = guarded.peek(512)[:512]
    except BaseException:
        if not source.is_stdin:
            raw.close()
        raise
    shown = display_path(source.path)
    kind = _binary_kind(head)
    if kind is not None:
        if not source.is_stdin:
            raw.close()
        packed = f"{stats.compression}-compressed " if stats.compression else ""
        raise InputError(f"{shown}: {packed}{kind}, not a text log")
    stats.encoding = _encoding(head)
    if stats.encoding == "utf-16":
        stats.notes.append(f"{shown}: read as UTF-16 (byte order mark)")
    if stats.compression and stats.compression != "gzip":
        stats.notes.append(f"{shown}: {stats.compression}-compressed")
    return guarded, ([] if source.is_stdin else [stream, raw])


def _note_cut_lines(source: InputSource, stats: ReadStats) -> None:
    if stats.cut_lines:
        lines = "1 line" if stats.cut_lines == 1 else f"{stats.cut_lines:,} lines"
        stats.notes.append(
            f"{display_path(source.path)}: {lines} longer than {MAX_LINE_BYTES:,} bytes "
            f"cut there ({stats.skipped_bytes:,} bytes skipped)"
        )


def iter_chunks(source: InputSource, stats: ReadStats) -> Iterator[list[str]]:
    """Yield the physical lines of ``source`` in lists of about ``CHUNK_BYTES``.

    Lines keep their line end (``\\n``, or ``\\r\\n``); consumers strip it where they look at
    the text. Raises :class:`InputError` (at the first ``next``) only if the source cannot
    be opened or is not text; damage found later sets ``stats.error`` and ends the lines.
    """
    guarded, closables = _open_guarded(source, stats)
    yield from _text_chunks(source, stats, guarded, closables)


def _text_chunks(
    source: InputSource, stats: ReadStats, guarded: _GuardedStream, closables: list[BinaryIO]
) -> Iterator[list[str]]:
    text = io.TextIOWrapper(guarded, encoding=stats.encoding, errors=_ERRORS, newline="\n")
    text._CHUNK_SIZE = _TEXT_CHUNK  # type: ignore[attr-defined] # fewer trips through Python
    try:
        while True:
            _COUNT_INTO.stats = stats
            try:
                chunk = text.readlines(CHUNK_BYTES)
            finally:
                _COUNT_INTO.stats = None
            if not chunk:
                break
            yield chunk
    except OSError as exc:  # pragma: no cover - the guarded stream turns these into stats
        stats.error = f"{display_path(source.path)}: read error ({exc.strerror or exc})"
    finally:
        _note_cut_lines(source, stats)
        text.close()  # not standard input itself: the guarded layer never closes its stream
        for stream in closables:
            stream.close()


def open_blocks(source: InputSource, stats: ReadStats) -> Iterator[bytes] | Iterator[list[str]]:
    """The physical lines of ``source`` as UTF-8 bytes, in blocks of whole lines.

    For the bulk scanner: each block holds about :data:`BLOCK_BYTES` and ends with a
    ``\\n``, except the last one when the input does not end with a line end. A UTF-8 byte
    order mark is removed. Bytes that are not UTF-8 are left as they are: decode a line with
    :func:`decode_line`, which counts them into ``stats``. A UTF-16 input (``stats.encoding``
    says so) gives lists of text lines instead, as :func:`iter_chunks`. Raises
    :class:`InputError` at once when the source cannot be opened or is not a text log.
    """
    guarded, closables = _open_guarded(source, stats)
    if stats.encoding == "utf-16":
        return _text_chunks(source, stats, guarded, closables)
    return _blocks(source, stats, guarded, closables)


def _blocks(
    source: InputSource, stats: ReadStats, guarded: _GuardedStream, closables: list[BinaryIO]
) -> Iterator[bytes]:
    carry = b""
    first = True
    try:
        while True:
            data = guarded.read1(BLOCK_BYTES)
            if not data:
                break
            if first:
                first = False
                if stats.encoding == "utf-8-sig" and data.startswith(codecs.BOM_UTF8):
                    data = data[len(codecs.BOM_UTF8) :]
            cut = data.rfind(b"\n") + 1
            if not cut:
                carry += data
            elif not carry and cut == len(data):
                yield data
            else:
                yield b"".join((carry, memoryview(data)[:cut]))
                carry = data[cut:]
        if carry:
            yield carry
    finally:
        _note_cut_lines(source, stats)
        for stream in closables:
            stream.close()


class _RangeReader:
    """Reads at most ``left`` bytes of ``raw`` (a byte range of a file)."""

    def __init__(self, raw: BinaryIO, left: int) -> None:
        self._raw = raw
        self._left = left

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._raw.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        return data


def splittable(path: str) -> bool:
    """Whether ``path`` may be read in byte ranges: plain UTF-8 text, not compressed."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    stats = ReadStats()
    _decompressor(io.BytesIO(head), head, stats)  # sets stats.compression
    return stats.compression is None and _binary_kind(head) is None and _encoding(head) != "utf-16"


def open_range_blocks(path: str, start: int, end: int, stats: ReadStats) -> Iterator[bytes]:
    """The lines of the bytes ``[start, end)`` of a :func:`splittable` file, as
    :func:`open_blocks` gives them (``start`` and ``end`` are line starts)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by _blocks
    raw.seek(start)
    guarded = _GuardedStream(_RangeReader(raw, end - start), stats, path)  # type: ignore[arg-type]
    if start == 0:
        stats.encoding = _encoding(guarded.peek(4)[:4])
    return _blocks(InputSource(path), stats, guarded, [raw])


def line_capper(stats: ReadStats, path: str) -> Callable[[bytes], bytes]:
    """A function that cuts the physical lines of consecutive byte chunks at
    :data:`MAX_LINE_BYTES`, as files are cut when read (for streams read elsewhere)."""
    return _GuardedStream(io.BytesIO(), stats, path)._cap


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
