"""Hostile and broken input at the library level: the reader and the scanner.

Each test names the damage it feeds in; docs/input-policy.md says what should happen.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import math
import os
import zlib
from pathlib import Path

import pytest

import dnnlens.io.inputs as inputs
from dnnlens.io.inputs import (
    InputError,
    InputSource,
    ReadStats,
    expand_inputs,
    iter_chunks,
    iter_lines,
)
from dnnlens.io.problems import input_problems
from dnnlens.parsers.header import Header
from dnnlens.parsers.scanner import Scanner
from dnnlens.reading import load, load_lines

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES = 338
HEAD = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0"
    " dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,16x3x3x3"
)
LINE = HEAD + ",0.25"
CONV = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,"
    "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef::: "
    "dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,alg:convolution_direct,"
    "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1,5.94189"
)


def scan_one(lines: list[str], scanner: Scanner | None = None):  # noqa: ANN201 - test helper
    scanner = scanner or Scanner()
    scan = scanner.scan("<test>", lines)
    assert scan.parsed + scan.foreign + scan.malformed == scan.lines == len(lines)
    return scanner, scan


def reasons(scanner: Scanner, scan) -> dict[int, str]:  # noqa: ANN001
    return {
        int(line): scanner.reasons[r]
        for line, r in zip(scan.malformed_line, scan.malformed_reason, strict=True)
    }


def read_all(path: Path) -> tuple[list[str], ReadStats]:
    stats = ReadStats()
    lines = [line for chunk in iter_chunks(InputSource(str(path)), stats) for line in chunk]
    return lines, stats


# -- prefixes, glued lines, unknown fields, odd times ---------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [
        "[rank0]: ",
        "> ",
        "[2026-01-01 00:00:00.000] [oneDNN] [info] ",
        "`",
        "\ufeff",
        "Epoch 1: 10%|#         |\r",
    ],
)
def test_prefixed_lines_parse_like_bare_ones(prefix: str) -> None:
    scanner, scan = scan_one([prefix + LINE, prefix + LINE, LINE])
    assert (scan.parsed, scan.prefixed) == (3, 2)
    assert len(set(scan.event_record)) == 1
    assert list(scan.event_time) == [0.25] * 3


def test_interleaved_line_is_malformed_not_misread() -> None:
    glued = LINE[:70] + CONV  # a line cut by another process's complete line
    scanner, scan = scan_one([LINE, glued, CONV])
    assert (scan.parsed, scan.malformed) == (2, 1)
    assert "glued together" in reasons(scanner, scan)[2]
    # not an event with the first line's kind and the second line's time
    assert [scanner.records[r].kind for r in scan.event_record] == ["reorder", "convolution"]


@pytest.mark.parametrize(
    "glued",
    [
        HEAD + ",0.5onednn_verbose,0.7",  # marker before the time
        HEAD + "dnnl_verbose,0.5",
        LINE + LINE,
    ],
)
def test_glued_lines_on_both_paths(glued: str) -> None:
    for scanner in (Scanner(), scan_one([LINE])[0]):  # cold; warm
        scanner, scan = scan_one([glued, glued], scanner)
        assert scan.malformed == 2
        assert "glued together" in reasons(scanner, scan)[1]


def test_look_alike_marker_before_a_real_one() -> None:
    _, scan = scan_one(["ov_cpu_verbose,exec,x ... " + LINE])
    assert (scan.parsed, scan.prefixed) == (1, 1)


def test_unknown_future_fields_are_kept_in_extra() -> None:
    scanner, scan = scan_one([HEAD + ",future:1,more:x,0.5"])
    assert scan.parsed == 1
    record = scanner.records[scan.event_record[0]]
    assert (record.kind, record.problem, record.extra) == ("reorder", "16x3x3x3", "future:1,more:x")
    assert scan.event_time[0] == 0.5


@pytest.mark.parametrize("tail", ["0.5.", "0.5 ms", "0.5`", "0.5**", "0.5) and more"])
def test_time_followed_by_pasted_prose(tail: str) -> None:
    scanner, scan = scan_one([HEAD + "," + tail])
    assert scan.parsed == 1
    assert scan.event_time[0] == 0.5
    assert scanner.records[scan.event_record[0]].extra == ""


@pytest.mark.parametrize("value", ["inf", "-inf", "-1", "1e400", "-0.5"])
def test_negative_or_infinite_time_is_malformed_on_both_paths(value: str) -> None:
    for scanner in (Scanner(), scan_one([LINE])[0]):  # cold; warm (fast path hit)
        scanner, scan = scan_one([LINE, HEAD + "," + value, LINE], scanner)
        assert (scan.parsed, scan.malformed) == (2, 1)
        assert reasons(scanner, scan) == {2: "time field is negative or infinite"}
        assert list(scan.event_line) == [1, 3]
        assert list(scan.event_time) == [0.25, 0.25]


def test_nan_time_is_an_untimed_event_on_both_paths() -> None:
    cold_scanner, cold = scan_one([HEAD + ",nan"])
    warm_scanner, warm = scan_one([LINE, HEAD + ",nan"])
    cold_record = cold_scanner.records[cold.event_record[0]]
    warm_record = warm_scanner.records[warm.event_record[1]]
    assert cold_record == warm_record  # not a record with extra="nan" on one path only
    assert math.isnan(cold.event_time[0]) and math.isnan(warm.event_time[1])


def test_timestamp_and_a_second_number_field() -> None:
    # "1e5" is a number float() reads but the grammar's timestamp is not: both lines must
    # agree whether the first number field is taken as the timestamp or not
    bare = "onednn_verbose,v1,1e5,primitive,exec" + LINE.partition(",exec")[2]
    stamped = "onednn_verbose,v1,1700000000123.5,1e5,primitive,exec" + LINE.partition(",exec")[2]
    a_scanner, a = scan_one([bare])
    b_scanner, b = scan_one([stamped])
    assert (a.parsed, a.malformed) == (b.parsed, b.malformed)
    assert b.event_timestamp[0] == 1700000000123.5


def test_cut_marker_is_found_only_at_the_end() -> None:
    scanner, scan = scan_one(
        [
            "mkldnn_verbose,exec,reorder,simple:any,undef,in:f32_nchw out:f32"
            "_nChw8c,num:1,1x2x3x4,0.1",
            "some text then onednn_verb",
            "onednn_verb in the middle",
        ]
    )
    assert (scan.parsed, scan.malformed, scan.foreign) == (1, 1, 1)
    assert "marker cut off" in reasons(scanner, scan)[2]


def test_very_long_lines_are_not_parsed() -> None:
    long_line = HEAD.replace("16x3x3x3", "x" * (inputs.MAX_LINE_CHARS + 1)) + ",0.5"
    scanner, scan = scan_one([long_line, "y" * (inputs.MAX_LINE_CHARS + 1), LINE])
    assert (scan.parsed, scan.malformed, scan.foreign) == (1, 1, 1)
    assert reasons(scanner, scan)[1].startswith("line too long")
    assert not any(len(key) > inputs.MAX_LINE_CHARS for key in scanner._memo)


def test_nul_bytes_inside_lines() -> None:
    scanner, scan = scan_one(
        ["\x00" * 5000 + LINE, LINE + "\x00\x00", "\x00" * 10, LINE[:30] + "\x00" + LINE[30:]]
    )
    assert (scan.parsed, scan.foreign, scan.nul_lines) == (3, 1, 4)
    assert list(scan.event_time) == [0.25] * 3


def test_header_with_absurd_thread_count() -> None:
    header = Header()
    header.add("cpu,runtime:OpenMP,nthr:" + "9" * 5000, "", 1)  # int() refuses 4300+ digits
    assert header.threads is None
    _, scan = scan_one(["onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:" + "2" * 5000])
    assert scan.parsed == 1


def test_accounting_on_a_mixed_hostile_file() -> None:
    lines = NCHW.read_text().splitlines()
    lines[10] = lines[10][:40]
    lines[20] = "[rank1]: " + lines[20]
    lines[30] = lines[30] + lines[31]
    lines.insert(40, "\x00\x00")
    lines.insert(50, "\ufffd\ufffdgarbage")
    log = load_lines(lines)
    (scan,) = log.scans
    assert scan.lines == len(lines)
    assert scan.parsed + scan.foreign + scan.malformed == scan.lines


# -- the reader ------------------------------------------------------------------------------


def test_crlf_lines_scan_like_lf(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(NCHW.read_bytes().replace(b"\n", b"\r\n"))
    a, b = load([str(NCHW)]), load([str(crlf)])
    assert a.scans[0].lines == b.scans[0].lines == NCHW_LINES
    assert list(a.events["time_ms"]) == list(b.events["time_ms"])
    assert all(line.endswith("\r\n") for line in read_all(crlf)[0])  # kept for --tee
    assert not any(line.endswith("\r") for line in iter_lines(InputSource(str(crlf)), ReadStats()))


def test_truncated_gzip_keeps_every_line_before_the_cut(tmp_path: Path) -> None:
    text = NCHW.read_bytes() * 40
    packed = gzip.compress(text)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    lines, stats = read_all(cut)
    assert stats.error is not None and "truncated gzip stream" in stats.error
    # what zlib can still decompress from the cut stream, line by line
    inflated = zlib.decompressobj(31).decompress(cut.read_bytes())
    assert "".join(lines).encode() == inflated
    assert len(lines) == inflated.count(b"\n") + (not inflated.endswith(b"\n"))


def test_corrupt_gzip(tmp_path: Path) -> None:
    packed = bytearray(gzip.compress(NCHW.read_bytes() * 5))
    packed[-6] ^= 0xFF  # the CRC
    bad = tmp_path / "bad.gz"
    bad.write_bytes(bytes(packed))
    lines, stats = read_all(bad)
    assert stats.error is not None and "corrupt gzip stream" in stats.error
    assert len(lines) == 5 * NCHW_LINES


@pytest.mark.parametrize(("pack", "kind"), [(bz2.compress, "bzip2"), (lzma.compress, "xz")])
def test_other_compressions_by_content(tmp_path: Path, pack, kind: str) -> None:  # noqa: ANN001
    path = tmp_path / "log.txt"
    path.write_bytes(pack(NCHW.read_bytes()))
    lines, stats = read_all(path)
    assert (len(lines), stats.compression, stats.error) == (NCHW_LINES, kind, None)
    path.write_bytes(pack(NCHW.read_bytes())[:2000])
    lines, stats = read_all(path)
    assert stats.error is not None and f"truncated {kind} stream" in stats.error


def test_byte_order_marks(tmp_path: Path) -> None:
    text = NCHW.read_text()
    for name, data, encoding in [
        ("u8.log", b"\xef\xbb\xbf" + text.encode(), "utf-8-sig"),
        ("u16.log", text.encode("utf-16"), "utf-16"),
        ("u16be.log", b"\xfe\xff" + text.encode("utf-16-be"), "utf-16"),
    ]:
        (tmp_path / name).write_bytes(data)
        lines, stats = read_all(tmp_path / name)
        assert stats.encoding == encoding
        assert "".join(lines) == text
        assert stats.invalid_utf8_bytes == 0


def test_invalid_utf8_is_counted_per_source(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"ok\n\xff\xfe\xfd\n")
    (tmp_path / "b.log").write_bytes(b"\xe9t\xe9\n")
    a_stats, b_stats = ReadStats(), ReadStats()
    a = iter_chunks(InputSource(str(tmp_path / "a.log")), a_stats)
    b = iter_chunks(InputSource(str(tmp_path / "b.log")), b_stats)
    next(b)  # interleaved generators count into their own stats
    assert next(a) == ["ok\n", "\ufffd\ufffd\ufffd\n"]
    assert (a_stats.invalid_utf8_bytes, b_stats.invalid_utf8_bytes) == (3, 2)


def test_a_multibyte_character_split_across_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "_TEXT_CHUNK", 7)
    path = tmp_path / "u.log"
    path.write_text("é" * 50 + "\n" + "日本" * 30 + "\n", encoding="utf-8")
    lines, stats = read_all(path)
    assert lines == ["é" * 50 + "\n", "日本" * 30 + "\n"]
    assert stats.invalid_utf8_bytes == 0


def test_overlong_lines_are_cut_and_reading_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "MAX_LINE_BYTES", 100)
    path = tmp_path / "long.log"
    path.write_bytes(b"a" * 1000 + b"\n" + b"short\n" + "é".encode() * 300 + b"\nend")
    lines, stats = read_all(path)
    assert [len(line) for line in lines] == [102, 6, 51, 3]
    assert lines[0] == "a" * 101 + "\n"
    assert lines[2] == "é" * 50 + "\n"  # cut at a character boundary, nothing replaced
    assert (stats.cut_lines, stats.invalid_utf8_bytes) == (2, 0)
    assert stats.skipped_bytes == (1000 - 101) + (600 - 100)
    assert "2 lines longer than" in stats.notes[0]


def test_a_line_without_end_cannot_fill_memory(tmp_path: Path) -> None:
    path = tmp_path / "nonl.bin"
    with path.open("wb") as fh:
        for _ in range(12):
            fh.write(b"z" * (1 << 20))
    lines, stats = read_all(path)
    assert len(lines) == 1 and len(lines[0]) == inputs.MAX_LINE_BYTES + 1
    assert stats.cut_lines == 1


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"\x7fELF\x02\x01\x01" + bytes(100), "an ELF executable"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "a PNG image"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"\x28\xb5\x2f\xfd" + bytes(20), "zstd-compressed"),
        (bytes(257) + b"ustar\x0000" + bytes(300), "a tar archive"),
        (gzip.compress(b"PK\x03\x04" + bytes(100), mtime=0), "gzip-compressed a zip archive"),
    ],
)
def test_known_binary_formats_are_refused(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(data)
    with pytest.raises(InputError, match=what):
        read_all(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_devices_are_refused() -> None:
    with pytest.raises(InputError, match="is a device"):
        read_all(Path("/dev/zero"))


def test_read_error_mid_file_keeps_the_lines_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(NCHW.read_bytes())
    real_open = open

    class Flaky:
        def __init__(self, fh) -> None:  # noqa: ANN001
            self.fh, self.calls = fh, 0

        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(self.fh, name)

        def read1(self, n: int) -> bytes:
            self.calls += 1
            if self.calls > 1:
                raise OSError(5, "Input/output error")
            return self.fh.read1(1000)

    monkeypatch.setattr(inputs, "open", lambda p, m: Flaky(real_open(p, m)), raising=False)
    lines, stats = read_all(path)
    assert stats.error == f"{path}: read error (Input/output error); the lines before it were read"
    assert "".join(lines) == NCHW.read_text()[:1000]


# -- naming inputs -----------------------------------------------------------------------------


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(LINE + "\n")
    (tmp_path / "link.log").symlink_to(log)
    sources, errors = expand_inputs([str(log), str(log), str(tmp_path), str(tmp_path / "*.log")])
    assert [s.path for s in sources] == [str(log)]
    assert errors == []


def test_unlistable_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def deny(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(inputs.os, "listdir", deny)
    sources, errors = expand_inputs([str(tmp_path)])
    assert sources == []
    assert errors == [f"{tmp_path}: permission denied (cannot list the directory)"]


def test_empty_path_and_glob_without_match(tmp_path: Path) -> None:
    sources, errors = expand_inputs(["", str(tmp_path / "*.nothing")])
    assert sources == []
    assert errors == [
        "'': an empty path names no file",
        f"{tmp_path}/*.nothing: no such file, and no file matches it as a pattern",
    ]


def test_scan_source_carries_what_reading_learnt(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(bz2.compress(b"\xff" + LINE.encode() + b"\n"))
    from dnnlens.parsers import bulk

    scan = bulk.scan_source(Scanner(), InputSource(str(path)))
    assert (scan.parsed, scan.invalid_utf8_bytes, scan.read_error) == (1, 1, None)
    assert scan.read_notes == [f"{path}: bzip2-compressed"]
    scan = bulk.scan_source(Scanner(), InputSource(str(tmp_path / "missing.log")))
    assert scan.read_error is not None and "no such file" in scan.read_error


def test_input_problems_one_message_per_input(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "prog.log").write_text("hello\n")
    (tmp_path / "trace.txt").write_text('{"traceEvents": [\n{"name": "x"}\n')
    (tmp_path / "good.log").write_text(LINE + "\n")
    log = load(
        [str(tmp_path / n) for n in ("empty.log", "prog.log", "good.log", "trace.txt")]
        + [str(tmp_path / "missing.log")]
    )
    problems = input_problems(log)
    # beside a real log (good.log), inputs without a verbose line are notes, not errors
    assert len(problems.errors) == 2
    assert problems.errors[0].endswith("missing.log: no such file or directory")
    assert any("trace.txt" in e for e in problems.errors)
    assert any("empty file" in n for n in problems.notes)
    assert any("ONEDNN_VERBOSE=1" in n for n in problems.notes)
    alone = input_problems(load([str(tmp_path / "empty.log"), str(tmp_path / "prog.log")]))
    assert len(alone.errors) == 2  # with no real log at all, they are errors


def test_standard_input_gzip_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    class Stdin:
        buffer = io.BytesIO(gzip.compress(NCHW.read_bytes()))

    monkeypatch.setattr(sys, "stdin", Stdin())
    stats = ReadStats()
    lines = [line for chunk in iter_chunks(InputSource("-"), stats) for line in chunk]
    assert (len(lines), stats.gzip) == (NCHW_LINES, True)
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(InputError, match="standard input is closed"):
        list(iter_chunks(InputSource("-"), ReadStats()))
