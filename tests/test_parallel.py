"""Parallel scanning must give exactly what one scanner gives, part boundaries notwithstanding;
it is bounded by the CPUs, by memory, and leaves no worker behind."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from dnnlens.io.inputs import InputSource, ReadStats, iter_chunks
from dnnlens.parsers.scanner import Scanner
from dnnlens.reading import load, parallel
from dnnlens.reading.memory import load_lines

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


def _single(path: Path):  # noqa: ANN202 - a ParsedLog
    """The reference: the line scanner over the whole file."""
    scanner = Scanner()
    scan = scanner.scan_chunks(str(path), iter_chunks(InputSource(str(path)), ReadStats()))
    log = load_lines([])
    log.scans, log.records, log.reasons = [scan], scanner.records, scanner.reasons
    from dnnlens.model import build_diagnostics, build_events

    log.events = build_events([scan], scanner.records)
    log.diagnostics = build_diagnostics([scan], scanner.records)
    return log


@pytest.fixture()
def many_cores(monkeypatch) -> None:
    """Split small files as if they were large, and allow more workers than CPUs here."""
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 8)


#: Every way a worker process can start here; fork is the one used on Linux, spawn the one
#: of macOS and Windows (and forkserver Python 3.14's default on Linux).
START_METHODS = [m for m in ("fork", "spawn", "forkserver") if m in mp.get_all_start_methods()]


@pytest.fixture(params=START_METHODS)
def start_method(request, monkeypatch) -> str:
    """Workers started by each method: what a worker knows comes from its arguments."""
    monkeypatch.setattr(parallel, "START_METHOD", request.param)
    return request.param


@pytest.mark.parametrize(
    ("jobs", "method"),
    [(2, "fork"), (3, "fork"), (7, "fork"), (2, "spawn"), (3, "forkserver")],
)
def test_parallel_equals_single(
    big_log: Path, jobs: int, method: str, many_cores, monkeypatch
) -> None:
    if method not in START_METHODS:
        pytest.skip(f"no {method} here")
    monkeypatch.setattr(parallel, "START_METHOD", method)
    one = _single(big_log)
    many = load([str(big_log)], jobs=jobs)
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
    assert a.foreign_examples == b.foreign_examples
    ev1, ev2 = one.events, many.events
    assert ev1["line"].tolist() == ev2["line"].tolist()
    for col in ("kind", "impl", "problem", "mds", "operation", "cache"):
        assert ev1[col].astype(str).tolist() == ev2[col].astype(str).tolist(), col
    np.testing.assert_array_equal(ev1["time_ms"].to_numpy(), ev2["time_ms"].to_numpy())
    np.testing.assert_array_equal(ev1["timestamp_ms"].to_numpy(), ev2["timestamp_ms"].to_numpy())
    assert one.diagnostics["line"].tolist() == many.diagnostics["line"].tolist()


def test_several_files_keep_their_order(many_cores, tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "packed.log.gz"  # read in this process, in its place in the order
    packed.write_bytes(gzip.compress(PIECES[0].read_bytes()))
    paths = [str(PIECES[0]), str(packed), *map(str, PIECES[1:])]
    log = load(paths, jobs=2)
    assert [s.path for s in log.scans] == paths
    counts = [len(p.read_bytes().splitlines()) for p in PIECES]
    assert [s.lines for s in log.scans] == [counts[0], counts[0], *counts[1:]]
    assert log.scans[1].gzip


def test_jobs_are_bounded_by_the_cpus(monkeypatch, big_log: Path) -> None:
    """``-j 100000`` started that many processes (over 1,040 before the machine refused)."""
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    started: list[int] = []
    real = mp.get_context

    class Context:
        def __init__(self, method: str | None) -> None:
            self.method = method

        def Pool(self, processes: int, **kwargs):  # noqa: ANN003, ANN201, N802 - the mp API
            started.append(processes)
            return real(self.method).Pool(processes, **kwargs)

    monkeypatch.setattr(mp, "get_context", Context)
    log = load([str(big_log)], jobs=100_000)
    assert log.scans[0].lines == _single(big_log).scans[0].lines
    assert started and max(started) <= parallel.default_jobs()
    assert parallel.bounded_jobs(100_000) == parallel.default_jobs()
    assert parallel.bounded_jobs(0) == parallel.default_jobs()


def test_a_file_without_line_ends_is_not_read_into_memory_to_cut_it(
    monkeypatch, tmp_path: Path
) -> None:
    """Cutting a file into ranges looks for line ends a block at a time (``readline()``
    without a limit read a 6 GiB file without newlines whole: 3.3 GB, MemoryError). Here
    48 MiB, split as if large: what this process allocates stays far below that."""
    from typer.testing import CliRunner

    from dnnlens.cli import app

    path = tmp_path / "nonl.log"
    with path.open("wb") as out:
        for _ in range(48):
            out.write(b"z" * (1 << 20))
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    tracemalloc.start()
    try:
        result = CliRunner().invoke(app, ["analyze", str(path), "-j", "2", "-f", "json"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2, result.stderr  # no verbose line: an input error
    assert "no oneDNN verbose line among its 1 line" in result.stderr
    assert peak < 16 << 20, f"{peak / 2**20:.1f} MiB"


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_workers(tmp_path: Path, signum: int) -> None:
    """SIGTERM (or SIGINT) while workers scan: exit 143 (130) after the report of what was
    read, and no worker left (SIGTERM left them running; SIGINT was ignored)."""
    path = tmp_path / "big.log"
    block = (ROOT / "sample_logs" / "convnet_nchw_infer.log").read_bytes()
    path.write_bytes(block * 3000)  # about 180 MiB: several seconds of scanning
    proc = subprocess.Popen(
        [sys.executable, "-m", "dnnlens.cli", "analyze", str(path), "-j", "2", "-f", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not _children(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert workers, "no worker was started"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert b"interrupted by" in err
    for pid in workers:
        assert not os.path.exists(f"/proc/{pid}") or pid not in _children(proc.pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone
        assert state == "Z", f"worker {pid} still running"


def _same_reading(one, many) -> None:  # noqa: ANN001 - two ParsedLogs
    """Two readings of the same inputs agree line for line (sums to the last bits aside)."""
    for a, b in zip(one.scans, many.scans, strict=True):
        for name in ("path", "lines", "parsed", "foreign", "malformed", "prefixed"):
            assert getattr(a, name) == getattr(b, name), name
        assert a.families == b.families
        assert list(a.malformed_line) == list(b.malformed_line)
        assert list(a.diag_line) == list(b.diag_line)
        assert a.foreign_examples == b.foreign_examples
        assert a.header.version_lines == b.header.version_lines
    cols = ["input", "line", "kind", "impl", "problem", "operation"]
    assert one.events[cols].astype(str).equals(many.events[cols].astype(str))
    np.testing.assert_array_equal(one.events["time_ms"], many.events["time_ms"])
    np.testing.assert_array_equal(one.events["timestamp_ms"], many.events["timestamp_ms"])


def test_streamed_parallel_reading_folds_in_the_workers(
    big_log: Path, many_cores, monkeypatch, start_method: str
) -> None:
    """Once the inputs stream, workers fold their ranges' events (in parts, as one process
    streams an input) and send only the last ones: the window, the totals, the diagnostics
    and the kept lines are those of one process reading it all (sums equal to the last bits
    of a float)."""
    import dnnlens.reading.stream as stream
    from dnnlens.reading import read

    monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", 1)
    monkeypatch.setattr(stream, "KEPT_LINES", 40)
    monkeypatch.setattr(parallel, "FOLDED_RANGE_BYTES", 40_000)  # many ranges, past the window
    monkeypatch.setattr(parallel, "PART_BYTES", 7_000)  # each read in parts
    other = big_log.parent / "second.log"
    other.write_bytes(PIECES[1].read_bytes() * 2)
    paths = [str(big_log), str(other)]
    one = read(paths, window_events=300)
    many = read(paths, window_events=300, jobs=3)
    _same_reading(one, many)
    assert one.window.events_total == many.window.events_total
    assert one.window.dropped_last_line == many.window.dropped_last_line
    assert one.diagnostic_counts == many.diagnostic_counts
    # record ids are the order each scanner met the lines in: compare by record
    a = one.record_stats.set_axis([one.records[r] for r in one.record_stats.index])
    b = many.record_stats.set_axis([many.records[r] for r in many.record_stats.index])
    b = b.loc[a.index]
    assert len(a) == len(many.record_stats)
    for col in ("count", "timed", "min_ms", "max_ms", "first_input", "first_line"):
        assert a[col].tolist() == b[col].tolist(), col
    np.testing.assert_allclose(a["time_ms"], b["time_ms"], rtol=1e-12)


def test_tables_inside_a_log_are_found_across_ranges(
    many_cores, monkeypatch, tmp_path, start_method: str
) -> None:
    """Profiler tables and profiler_start/stop lines of a log cut into ranges of about 1 KB
    (so that cuts fall inside tables, their heads and their footers) are found as one
    process finds them; the log ends with a table cut off, which swallows the lines after
    it as the line scanner's finder does."""
    monkeypatch.setattr(parallel, "RANGE_BYTES", 1_000)
    monkeypatch.setattr(parallel, "WARM_BYTES", 500)
    text = (ROOT / "sample_logs" / "profile_combined_infer.log").read_text()
    cut = text[: text.rindex("---")]  # the last table without its closing rule and footer
    path = tmp_path / "tables.log"
    path.write_text(text * 5 + cut + text[:2000])
    one, many = load([str(path)]), load([str(path)], jobs=3)
    _same_reading(one, many)
    a, b = one.framework, many.framework
    assert len(a.tables) == 6
    assert [(t.line, t.size, t.totals_ms) for t in a.tables] == [
        (t.line, t.size, t.totals_ms) for t in b.tables
    ]
    assert a.tables[0].rows.equals(b.tables[0].rows)
    assert a.markers == b.markers and len(a.markers[str(path)]) == 12
    assert a.errors == b.errors and any("cut off" in e for e in a.errors)


def test_jobs_are_chosen_by_size_and_idle_cpus(monkeypatch, big_log: Path) -> None:
    """Without ``-j``: one process for small inputs (the idle CPUs not even measured), one
    per idle CPU for large ones (a CPU other work keeps busy gives a worker little)."""
    from dnnlens.io.inputs import InputSource

    sources = [InputSource(str(big_log)), InputSource("-")]
    busy = {"now": 0}
    asked: list[int] = []

    def idle() -> int:
        asked.append(1)
        return max(1, 4 - busy["now"])

    monkeypatch.setattr(parallel, "idle_cores", idle)
    assert parallel.choose_jobs(sources) == 1  # a few hundred KiB
    assert asked == []
    monkeypatch.setattr(parallel, "AUTO_MIN_BYTES", big_log.stat().st_size // 3)
    assert parallel.choose_jobs(sources) == 4
    busy["now"] = 2
    assert parallel.choose_jobs(sources) == 2
    busy["now"] = 3
    assert parallel.choose_jobs(sources) == 1
    monkeypatch.setattr(parallel, "AUTO_MIN_BYTES", big_log.stat().st_size // 2 + 1)
    busy["now"] = 0
    assert parallel.choose_jobs(sources) == 2  # the size asks for two


@pytest.mark.parametrize(
    ("idle", "cores"),
    [
        (None, 1),  # no /proc/stat: one process
        (2.0, 2),
        (1.5, 2),  # others kept half of a CPU busy: still idle enough
        (1.4, 1),
        (0.2, 1),  # never fewer than one
    ],
)
def test_idle_cores_round_what_others_left_idle(monkeypatch, idle, cores: int) -> None:
    """A CPU counts as idle when other work left at least half of it idle; without a
    measure (no ``/proc/stat``) the default is one process."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(parallel, "idle_since_start", lambda cpus: idle)
    assert parallel.idle_cores() == cores


def test_parts_scanned_elsewhere_merge_as_workers_parts(tmp_path) -> None:
    """Byte ranges scanned elsewhere, each with a scanner of its own (another machine's
    tasks), merged by the front door: the reading of one process, tables included."""
    from dnnlens.reading import read

    text = (ROOT / "sample_logs" / "profile_combined_infer.log").read_text()
    path = tmp_path / "tables.log"
    path.write_text(text * 4 + PIECES[1].read_text())
    size = path.stat().st_size
    spans = parallel.line_ranges(str(path), size, 9)
    assert len(spans) == 9
    parts = {str(path): [(parallel.scan_range(str(path), a, b), b - a) for a, b in spans]}
    one, given = load([str(path)]), read([str(path)], window_events=None, parts=parts)
    _same_reading(one, given)
    assert [(t.line, t.size) for t in one.framework.tables] == [
        (t.line, t.size) for t in given.framework.tables
    ]
    assert one.framework.markers == given.framework.markers


def test_the_help_of_jobs_names_the_size_from_which_workers_are_chosen() -> None:
    """``analyze --help`` says the size the code uses (it cannot import the constant: the
    help must not import numpy)."""
    from typer.testing import CliRunner

    from dnnlens.cli import app

    result = CliRunner().invoke(app, ["analyze", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert f"add up to {parallel.AUTO_MIN_BYTES >> 20} MiB or more" in " ".join(
        result.output.split()
    )
