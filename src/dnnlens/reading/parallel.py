"""Parallel scanning: several files, and large files split into byte ranges, across cores.

Each worker process scans its part with its own :class:`Scanner`; the parent merges the
parts in input order: line numbers are shifted by the lines of the parts before, and the
workers' distinct records and malformed reasons are interned into one table, so the result
is the same :class:`InputScan` a single scanner would have produced (``tests/test_parallel.py``
checks that on real logs).
"""

from __future__ import annotations

import os
from array import array
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

from dnnlens.io.inputs import InputSource, ReadStats, open_range_blocks, splittable
from dnnlens.parsers import bulk
from dnnlens.parsers.merge import merge_header
from dnnlens.parsers.records import LineRecord
from dnnlens.parsers.scanner import MALFORMED_TEXT_KEPT, InputScan, Scanner

#: Files smaller than this are not split (a range per worker costs a process start).
SPLIT_MIN_BYTES = 32 << 20

Part = tuple[InputScan, list[LineRecord], list[str]]


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _boundaries(path: str, parts: int) -> list[int]:
    """Byte offsets that cut ``path`` into ``parts`` ranges, each at a line start."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            f.seek(size * k // parts)
            f.readline()
            pos = f.tell()
            if cuts[-1] < pos < size:
                cuts.append(pos)
    cuts.append(size)
    return cuts


def _scan_range(path: str, start: int, end: int) -> Part:
    scanner = Scanner()
    stats = ReadStats()
    scan = bulk.scan_blocks(scanner, path, open_range_blocks(path, start, end, stats), stats)
    scan.add_reading(stats)
    return scan, scanner.records, scanner.reasons


def _scan_file(path: str) -> Part:
    scanner = Scanner()
    scan = bulk.scan_source(scanner, InputSource(path))
    return scan, scanner.records, scanner.reasons


def _splittable(path: str) -> bool:
    try:
        return os.path.getsize(path) >= SPLIT_MIN_BYTES and splittable(path)
    except OSError:
        return False


def _as_array(code: str, values: np.ndarray) -> array:
    out = array(code)
    out.frombytes(values.tobytes())
    return out


class _Interner:
    """One table of records and reasons for the merged result."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner

    def records(self, records: list[LineRecord]) -> np.ndarray:
        return np.array([self.scanner._intern_record(r) for r in records] or [0], np.int64)

    def reasons(self, reasons: list[str]) -> np.ndarray:
        return np.array([-2 - self.scanner._intern_reason(r) for r in reasons] or [0], np.int64)


def merge_parts(path: str, parts: list[Part], scanner: Scanner) -> InputScan:
    """One :class:`InputScan` for ``path`` from its parts, records interned in ``scanner``."""
    interner = _Interner(scanner)
    out = InputScan(path)
    lines, recs, times, stamps, dlines, drecs = [], [], [], [], [], []
    mlines, mreasons = [], []
    offset = 0
    stamped = any(p[0].has_timestamps for p in parts)
    for scan, records, reasons in parts:
        rmap, wmap = interner.records(records), interner.reasons(reasons)
        n = len(scan.event_line)
        lines.append(np.frombuffer(scan.event_line, np.int64) + offset)
        recs.append(
            rmap[np.frombuffer(scan.event_record, np.int64)] if n else np.zeros(0, np.int64)
        )
        times.append(np.frombuffer(scan.event_time, np.float64))
        if stamped:
            stamps.append(
                np.frombuffer(scan.event_timestamp, np.float64)
                if len(scan.event_timestamp) == n
                else np.full(n, np.nan)
            )
        dlines.append(np.frombuffer(scan.diag_line, np.int64) + offset)
        drecs.append(
            rmap[np.frombuffer(scan.diag_record, np.int64)]
            if len(scan.diag_record)
            else np.zeros(0, np.int64)
        )
        mlines.append(np.frombuffer(scan.malformed_line, np.int64) + offset)
        mreasons.append(
            wmap[np.frombuffer(scan.malformed_reason, np.int64)]
            if len(scan.malformed_reason)
            else np.zeros(0, np.int64)
        )
        for line, text in scan.malformed_text.items():
            if len(out.malformed_text) < MALFORMED_TEXT_KEPT:
                out.malformed_text[line + offset] = text
        if len(out.foreign_examples) < 5:
            out.foreign_examples.extend((k + offset, s) for k, s in scan.foreign_examples)
        for name in (
            "parsed",
            "foreign",
            "malformed",
            "prefixed",
            "slow_events",
            "invalid_utf8_bytes",
            "nul_lines",
        ):
            setattr(out, name, getattr(out, name) + getattr(scan, name))
        out.families.update(scan.families)
        out.info_families.update(scan.info_families)
        scan.header.version_lines = [k + offset for k in scan.header.version_lines]
        merge_header(out.header, scan.header)
        out.read_notes.extend(n for n in scan.read_notes if n not in out.read_notes)
        out.read_error = out.read_error or scan.read_error
        out.gzip = out.gzip or scan.gzip
        offset += scan.lines
    out.lines = offset
    out.event_line = _as_array("q", np.concatenate(lines))
    out.event_record = _as_array("q", np.concatenate(recs))
    out.event_time = _as_array("d", np.concatenate(times))
    if stamped:
        out.has_timestamps = True
        out.event_timestamp = _as_array("d", np.concatenate(stamps))
    out.diag_line = _as_array("q", np.concatenate(dlines))
    out.diag_record = _as_array("q", np.concatenate(drecs))
    out.malformed_line = _as_array("q", np.concatenate(mlines))
    out.malformed_reason = _as_array("q", np.concatenate(mreasons))
    return out


def scan_parallel(paths: list[str], jobs: int, scanner: Scanner) -> list[InputScan]:
    """Scan regular files (not stdin) with ``jobs`` processes; results in ``paths`` order."""
    tasks: list[tuple[int, str, int, int]] = []  # (input index, path, start, end); end<0: whole
    for i, path in enumerate(paths):
        if _splittable(path):
            cuts = _boundaries(path, jobs)
            tasks.extend((i, path, a, b) for a, b in zip(cuts, cuts[1:], strict=False))
        else:
            tasks.append((i, path, 0, -1))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        futures = [
            pool.submit(_scan_file, p) if end < 0 else pool.submit(_scan_range, p, a, end)
            for _, p, a, end in tasks
        ]
        results = [f.result() for f in futures]
    grouped: dict[int, list[Part]] = {}
    for (i, _p, _a, _e), part in zip(tasks, results, strict=True):
        grouped.setdefault(i, []).append(part)
    return [merge_parts(paths[i], grouped[i], scanner) for i in range(len(paths))]
