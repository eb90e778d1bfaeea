"""The bulk scanner must give exactly what the line scanner gives, on every kind of input.

The line scanner (``Scanner.scan_chunks`` over ``iter_chunks``) is the reference: it is the
straightforward classification, line by line, that the golden hand counts were first checked
against. The bulk scanner is the fast path ``dnnlens analyze`` uses; here both read the same
real logs (sample logs, legacy logs, the public corpus), hostile bytes and fuzzed lines, with
blocks as small as a few lines so block edges fall everywhere.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.io import inputs
from dnnlens.io.inputs import InputSource, ReadStats, iter_chunks
from dnnlens.parsers import bulk
from dnnlens.parsers.common import ascii_float
from dnnlens.parsers.scanner import InputScan, Scanner
from torchrun_log import HAND_COUNTS, torchrun_log

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted(
    [
        *ROOT.glob("sample_logs/*.log"),
        *ROOT.glob("sample_logs/legacy/*.log"),
        *ROOT.glob("sample_logs/*.txt"),
        *ROOT.glob("tests/data/corpus/*"),
    ],
)


def by_lines(path: Path) -> tuple[InputScan, Scanner]:
    scanner = Scanner()
    stats = ReadStats()
    scan = scanner.scan_chunks(str(path), iter_chunks(InputSource(str(path)), stats))
    scan.read_error, scan.gzip = stats.error, stats.gzip
    scan.invalid_utf8_bytes, scan.read_notes = stats.invalid_utf8_bytes, list(stats.notes)
    return scan, scanner


def by_blocks(path: Path) -> tuple[InputScan, Scanner]:
    scanner = Scanner()
    return bulk.scan_source(scanner, InputSource(str(path))), scanner


def assert_same(path: Path) -> InputScan:
    """Both scanners on ``path``: every count, line, record, time and note must agree."""
    a, sa = by_lines(path)
    b, sb = by_blocks(path)
    for f in dataclasses.fields(InputScan):
        name = f.name
        x, y = getattr(a, name), getattr(b, name)
        if name == "slow_events":  # how many went the slow way: the point of the bulk path
            continue
        if name in ("event_record", "diag_record"):
            assert [sa.records[r] for r in x] == [sb.records[r] for r in y], name
        elif name == "malformed_reason":
            assert [sa.reasons[r] for r in x] == [sb.reasons[r] for r in y], name
        elif name in ("event_time", "event_timestamp"):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
        elif name == "header":
            assert dataclasses.asdict(x) == dataclasses.asdict(y)
        else:
            assert x == y, name
    assert a.accounted == a.lines
    return b


@pytest.fixture(params=[1 << 20, 4096, 97])
def block_bytes(request, monkeypatch) -> int:
    """Blocks of the real size, of a few lines, and of under one line; header and
    diagnostic lines looked at as shapes whenever there is one."""
    monkeypatch.setattr(inputs, "BLOCK_BYTES", request.param)
    monkeypatch.setattr(bulk, "UNTIMED_SHARE", 1 << 30)
    return request.param


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_real_logs(path: Path, block_bytes: int) -> None:
    assert_same(path)


def test_logs_joined_and_repeated(tmp_path: Path, block_bytes: int) -> None:
    """Headers of several processes, shapes seen before, families mixed in one input."""
    path = tmp_path / "joined.log"
    path.write_bytes(b"".join(p.read_bytes() for p in LOGS[:12]) * 2)
    scan = assert_same(path)
    assert scan.parsed > 1000


HOSTILE = {
    "crlf": b"onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
    b"data_f32::blocked:a::f0 diff_undef::undef:::,,alg:eltwise_relu,8,0.5\r\n" * 3,
    "no_final_newline": b"onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,"
    b"forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n"
    * 2
    + b"onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
    b"data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.25",
    "nul_and_latin1": b"caf\xe9\nonednn_verbose,v1,primitive,exec,cpu,eltwise,jit:av\x00x2,"
    b"forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n\xff\xfe\n",
    "odd_numbers": b"".join(
        b"onednn_verbose,v1,%s,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
        b"data_f32::blocked:a::f0,,alg:eltwise_relu,8,%s\n" % (ts, t)
        for ts, t in [
            (b"12.5", b"0.5"),
            (b"1e999", b"1"),
            (b"12", b"1e999"),
            (b"1_0", b"2"),
            (b"7", b"1_0"),
            (b"8", b"-1"),
            (b"9", b"nan"),
            (b"10", b"0.5 ms"),
            (b"11", b"1e5"),
            (b"12", b"3.0."),
            (b"13", b"1.2.3"),
            (b"14", b" 5"),
            (b"15", b"1e123"),
            (b"16", b"00.25"),
            (b"17", b"5."),
            (b"18", b"1_000"),
            (b"19", "\u0661\u0660".encode()),
            (b"20", "\uff11\uff12".encode()),
            (b"21", b"0.5ms"),
            (b"22", b"1.5e"),
            ("\u0661\u0662".encode(), b"0.5"),
        ]
    ),
    "junk_prefix": b"[rank 0] onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,"
    b"forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n"
    * 3
    + b"x,y,z onednn_verbose,v1,123.5,primitive,exec,cpu,eltwise,jit:avx2,"
    b"forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n" * 3,
    "rank_prefixes": b"".join(
        prefix + b"onednn_verbose,v1," + stamp + b"primitive,exec,cpu,eltwise,jit:avx2,"
        b"forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n"
        for prefix, stamp in [
            (b"", b""),
            (b"[rank0]:", b""),
            (b"[rank3]:", b"17.5,"),
            (b"[rank1234567890]:", b""),
            (b"x [rank2] [rank5]:", b""),
            (b"[rank 1] ", b""),
            (b"[rank0]:", b""),
            (b"", b""),
        ]
    )
    + b"[rank4]:onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2\n"
    + b"[rank4]:onednn_verbose,v1,primitive,create:dispatch,convolution,cpu,x,y,z\n",
    "glued": b"onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_inference,"
    b"data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5onednn_verbose,v1,primitive,exec,cpu,"
    b"eltwise,jit:avx2,forward_inference,data_f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n",
    "bom": b"\xef\xbb\xbfonednn_verbose,v1,info,oneDNN v3.12.0 (commit abc)\n",
    "empty_lines": b"\n\n\r\n,,,,\n,,,,,,0.5\n",
    "info_with_time_like_tail": b"onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2\n" * 4,
    "version_lines_with_commas": (
        b"junk\n" + b"onednn_verbose,v1,info,oneDNN v3.12.0 (commit "
        b"abc),a,b,c\nonednn_verbose,v1,12.5,primitive,create:dispatch,"
        b"convolution,cpu,x,y,z\n"
    )
    * 5,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bytes(tmp_path: Path, name: str, block_bytes: int) -> None:
    path = tmp_path / f"{name}.log"
    path.write_bytes(HOSTILE[name])
    assert_same(path)


def test_torchrun_ranks(tmp_path: Path, block_bytes: int) -> None:
    """A two-rank torchrun log: both scanners keep each event's rank, as counted by hand."""
    path = tmp_path / "ddp.log"
    path.write_text(torchrun_log())
    scan = assert_same(path)
    ranks = np.frombuffer(scan.event_rank, dtype=np.int32)
    assert {r: int((ranks == r).sum()) for r in (0, 1)} == {
        r: events for r, (_, events, _, _) in HAND_COUNTS.items()
    }


def test_plain_logs_carry_no_rank_column(block_bytes: int) -> None:
    assert len(assert_same(ROOT / "sample_logs" / "convnet_nchw_infer.log").event_rank) == 0


def test_gzip_and_cut(tmp_path: Path) -> None:
    """A truncated gzip file: both keep every line before the damage and say so."""
    data = gzip.compress((ROOT / "sample_logs" / "convnet_nchw_infer.log").read_bytes())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    scan = assert_same(path)
    assert scan.read_error and scan.gzip


def test_utf16_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "u16.log"
    text = (ROOT / "sample_logs" / "convnet_nchw_infer.log").read_text()
    path.write_bytes(text.encode("utf-16"))
    scan = assert_same(path)
    assert scan.lines == text.count("\n")


@pytest.mark.parametrize("name", ["profile_combined_infer.log", "profile_nchw_infer.log"])
def test_finder_sees_tables_and_markers(block_bytes: int, name: str, tmp_path: Path) -> None:
    """Profiler tables and profiler_start/stop lines inside a log are found as the line
    scanner's caller finds them, repeated logs included."""
    from dnnlens.parsers.torch_table import TableFinder

    path = tmp_path / name
    path.write_bytes((ROOT / "sample_logs" / name).read_bytes() * 3)
    lines_finder = TableFinder(str(path))
    for _chunk in lines_finder.watch(iter_chunks(InputSource(str(path)), ReadStats())):
        pass
    blocks_finder = TableFinder(str(path))
    bulk.scan_source(Scanner(), InputSource(str(path)), blocks_finder)
    assert len(lines_finder.tables) + len(lines_finder.markers) >= 3
    assert [(t.line, len(t.rows)) for t in lines_finder.tables] == [
        (t.line, len(t.rows)) for t in blocks_finder.tables
    ]
    assert lines_finder.markers == blocks_finder.markers


# -- fuzzing: real lines, mutated ------------------------------------------------------------

SEED_LINES = [
    line
    for p in (
        ROOT / "sample_logs" / "all_timestamps_infer.log",
        ROOT / "sample_logs" / "convnet_nchw_train.log",
        ROOT / "sample_logs" / "legacy" / "onednn-2.0.0.log",
    )
    for line in p.read_bytes().splitlines(keepends=True)[:60]
]
PIECES = [
    b",",
    b"\n",
    b"\r",
    b"0",
    b"1.5",
    b"e5",
    b"-",
    b"v1,",
    b"12345.678,",
    b" ",
    b"\x00",
    b"\xe9",
    b"onednn_verbose,",
    b"dnnl_verbose,",
    b"_verbose,",
    b"inf",
    b"nan",
    b"[rank1]:",
    b"[rank",
]


@st.composite
def mutated_logs(draw) -> bytes:
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines = [rng.choice(SEED_LINES) for _ in range(draw(st.integers(1, 40)))]
    for _ in range(draw(st.integers(0, 12))):
        i = rng.randrange(len(lines))
        line = lines[i]
        at = rng.randrange(len(line) + 1)
        if rng.random() < 0.5:
            lines[i] = line[:at] + rng.choice(PIECES) + line[at:]
        else:
            lines[i] = line[:at] + line[at + rng.randrange(1, 8) :]
    return b"".join(lines)


@settings(max_examples=60, deadline=None)
@given(
    data=mutated_logs(),
    block=st.sampled_from([64, 300, 1 << 20]),
    share=st.sampled_from([bulk.UNTIMED_SHARE, 1 << 30]),
)
def test_fuzzed_logs(tmp_path_factory, data: bytes, block: int, share: int) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.log"
    path.write_bytes(data)
    old = inputs.BLOCK_BYTES, bulk.UNTIMED_SHARE
    inputs.BLOCK_BYTES, bulk.UNTIMED_SHARE = block, share
    try:
        assert_same(path)
    finally:
        inputs.BLOCK_BYTES, bulk.UNTIMED_SHARE = old


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.eE+-_ ", min_size=1, max_size=12))
def test_arrow_reads_numbers_as_python_does(text: str) -> None:
    """Where the bulk scanner lets Arrow read a number (it starts and ends with a digit), the
    value is Python's, or Arrow refuses it and the line takes the slow path."""
    if not (text[0].isdigit() and text[-1].isdigit()):
        return
    try:
        value = pc.cast(pa.array([text]), pa.float64())[0].as_py()
    except pa.ArrowInvalid:
        return
    expected = ascii_float(text)  # Arrow took it: the line scanner must too, with its value
    assert value == expected or (math.isnan(value) and math.isnan(expected))


def test_a_block_that_ends_in_a_comma(tmp_path, monkeypatch) -> None:
    """Found by the fuzzer: two lines glued, the last one cut right after a comma, at the end
    of a 64-byte block; the bulk scanner read one byte past the block."""
    data = (
        b"dnnl_verbose,create:cache_miss,cpu,re,order,jit:uni,undef,src_f32::blocked:abcd:f0 "
        b"dst_f32::blocked:ABcd8b8a:f0,,,16x8x3x3,0.1191onednn_verbose,"
    )
    path = tmp_path / "glued.log"
    path.write_bytes(data)
    monkeypatch.setattr(inputs, "BLOCK_BYTES", 64)
    monkeypatch.setattr(bulk, "UNTIMED_SHARE", 8)
    assert_same(path)
