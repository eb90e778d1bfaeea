"""Reading policy of files and pipes alike (docs/input-policy.md, "Reading").

The hand counts come from ``sample_logs/convnet_nchw_infer.log``: ``wc -l`` gives 338 lines,
``grep -c ',exec,' `` 165 exec lines (tests/test_sample_logs.py).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

from dnnlens.io.inputs import InputSource, ReadStats, open_utf8_blocks
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165


def _execs(log) -> int:  # noqa: ANN001 - a ParsedLog
    return int((log.events["operation"] == "exec").sum())


def test_utf16_file_whose_first_line_is_over_the_cap(tmp_path: Path) -> None:
    """The cut of an overlong line falls after decoding, never inside a UTF-16 code unit:
    the 338 lines after it are read (a byte-level cut read the file as 1 line)."""
    path = tmp_path / "powershell.log"
    path.write_bytes(("x" * (5 << 20) + "\n" + NCHW.read_text()).encode("utf-16"))
    log = load([str(path)])
    (scan,) = log.scans
    assert scan.lines == NCHW_LINES + 1
    assert _execs(log) == NCHW_EXECS
    assert scan.foreign == 2  # the long line and the last line of the program's output
    assert any("1 line longer than" in n for n in scan.read_notes)


def _same_scan(a, b) -> None:  # noqa: ANN001 - two ParsedLogs
    x, y = a.scans[0], b.scans[0]
    for name in ("lines", "parsed", "foreign", "malformed", "prefixed", "families"):
        assert getattr(x, name) == getattr(y, name), name
    for column in ("line", "kind", "impl", "problem", "time_ms"):
        assert a.events[column].astype(str).tolist() == b.events[column].astype(str).tolist()


def test_utf16_reads_like_utf8(tmp_path: Path) -> None:
    """UTF-16 is decoded, then scanned by the same bulk scanner as UTF-8."""
    for data in (
        NCHW.read_text().encode("utf-16"),
        b"\xfe\xff" + NCHW.read_text().encode("utf-16-be"),
    ):
        path = tmp_path / "u16.log"
        path.write_bytes(data)
        _same_scan(load([str(NCHW)]), load([str(path)]))


@pytest.mark.parametrize(
    ("pack", "kind"),
    [
        (lambda b: gzip.compress(b[:5000]) + gzip.compress(b[5000:]), "gzip members"),
        (lambda b: bz2.compress(b[:5000]) + bz2.compress(b[5000:]), "bzip2 streams"),
        (lambda b: lzma.compress(b[:5000]) + lzma.compress(b[5000:]), "xz streams"),
        (lambda b: bz2.compress(b) + b"trailing junk", "bzip2 then junk"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_concatenated_compressed_streams(tmp_path: Path, pack, kind: str) -> None:  # noqa: ANN001
    """``cat a.gz b.gz``, as log rotation leaves them: every stream is read (after a whole
    bzip2 or xz stream, bytes that start none are ignored, as Python's readers do)."""
    path = tmp_path / "joined.log.z"
    path.write_bytes(pack(NCHW.read_bytes()))
    log = load([str(path)])
    _same_scan(load([str(NCHW)]), log)
    assert log.scans[0].read_error is None, kind


def test_gzip_then_junk_is_a_corrupt_stream_after_every_line(tmp_path: Path) -> None:
    path = tmp_path / "junk.log.gz"
    path.write_bytes(gzip.compress(NCHW.read_bytes()) + b"junk")
    log = load([str(path)])
    assert log.scans[0].lines == NCHW_LINES
    assert "corrupt gzip stream" in log.scans[0].read_error


def test_a_gzip_bomb_is_decompressed_in_pieces(tmp_path: Path) -> None:
    """64 MiB of line ends in a 64 KiB gzip: read a piece at a time, never whole."""
    import tracemalloc

    path = tmp_path / "bomb.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        block = b"\n" * (1 << 20)
        for _ in range(64):
            out.write(block)
    tracemalloc.start()
    try:
        stats = ReadStats()
        lines = sum(b.count(b"\n") for b in open_utf8_blocks(InputSource(str(path)), stats))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == 64 << 20
    assert peak < 16 << 20, f"{peak / 2**20:.1f} MiB"
