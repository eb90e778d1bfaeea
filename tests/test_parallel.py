"""Parallel scanning must give exactly what one scanner gives, part boundaries notwithstanding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dnnlens.parsers.scanner import Scanner
from dnnlens.reading import parallel
from dnnlens.reading.load import finish

ROOT = Path(__file__).resolve().parent.parent
PIECES = [
    ROOT / "sample_logs" / "convnet_nchw_train.log",
    ROOT / "sample_logs" / "all_timestamps_infer.log",  # timestamps, dispatch and check lines
    ROOT / "tests" / "data" / "corpus" / "05_dnnl1_6_benchdnn_conv_backtick.log",  # malformed
    ROOT / "sample_logs" / "legacy" / "onednn-2.0.0.log",
]


@pytest.fixture()
def big_log(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.log"
    path.write_bytes(b"".join(p.read_bytes() for p in PIECES) * 3)
    return path


def _single(path: Path):
    from dnnlens.io.inputs import InputSource, ReadStats, iter_chunks

    scanner = Scanner()
    scan = scanner.scan_chunks(str(path), iter_chunks(InputSource(str(path)), ReadStats()))
    return finish(scanner, [scan], [])


@pytest.mark.parametrize("jobs", [2, 3, 7])
def test_parallel_equals_single(big_log: Path, jobs: int, monkeypatch) -> None:
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    one = _single(big_log)
    scanner = Scanner()
    scans = parallel.scan_parallel([str(big_log)], jobs, scanner)
    many = finish(scanner, scans, [])
    a, b = one.scans[0], many.scans[0]
    for name in ("lines", "parsed", "foreign", "malformed", "prefixed"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.families == b.families
    assert list(a.malformed_line) == list(b.malformed_line)
    assert [one.reasons[r] for r in a.malformed_reason] == [
        many.reasons[r] for r in b.malformed_reason
    ]
    assert a.header.version == b.header.version
    assert a.header.version_lines == b.header.version_lines
    ev1, ev2 = one.events, many.events
    assert ev1["line"].tolist() == ev2["line"].tolist()
    for col in ("kind", "impl", "problem", "mds", "operation", "cache"):
        assert ev1[col].astype(str).tolist() == ev2[col].astype(str).tolist(), col
    np.testing.assert_array_equal(ev1["time_ms"].to_numpy(), ev2["time_ms"].to_numpy())
    np.testing.assert_array_equal(ev1["timestamp_ms"].to_numpy(), ev2["timestamp_ms"].to_numpy())
    assert one.diagnostics["line"].tolist() == many.diagnostics["line"].tolist()


def test_several_files_keep_their_order(monkeypatch) -> None:
    paths = [str(p) for p in PIECES]
    scanner = Scanner()
    scans = parallel.scan_parallel(paths, 2, scanner)
    assert [s.path for s in scans] == paths
    assert [s.lines for s in scans] == [len(p.read_bytes().splitlines()) for p in PIECES]
