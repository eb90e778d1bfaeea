"""Streaming analysis: lines in as they arrive, bounded memory, a report at any moment.

:class:`StreamAnalyzer` scans each chunk of lines with one shared :class:`Scanner` (so the
memo of distinct lines carries over), folds the chunk's events into per-record statistics
(:class:`~dnnlens.model.stats.StatsAccumulator`) and keeps only a bounded window of
the most recent raw events. Totals and breakdowns are therefore exact however long the
stream; rules that look at the sequence of events (iterations, op graph) see the window.
"""

from __future__ import annotations

from array import array
from collections import Counter

import numpy as np

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.summary import Summary, summarize_stats
from dnnlens.io.inputs import InputSource, ReadStats, open_blocks
from dnnlens.model import ParsedLog, ReadWindow, build_diagnostics, build_events
from dnnlens.model.stats import StatsAccumulator
from dnnlens.parsers.bulk import BulkScan
from dnnlens.parsers.merge import merge_header
from dnnlens.parsers.scanner import MALFORMED_TEXT_KEPT, InputScan, Scanner
from dnnlens.parsers.torch_table import TableFinder

#: Raw events kept for sequence-based analysis, by default (as for files).
DEFAULT_WINDOW_EVENTS = 200_000
#: Malformed and diagnostic lines kept with their line numbers (all are counted).
KEPT_LINES = 10_000


class StreamAnalyzer:
    """Analyse one stream of lines chunk by chunk, in memory bounded by ``window_events``."""

    def __init__(self, path: str = "-", window_events: int = DEFAULT_WINDOW_EVENTS) -> None:
        self.path = path
        self.window_events = window_events
        self.scanner = Scanner()
        self.stats = StatsAccumulator()
        self.total = InputScan(path)
        self.diagnostic_counts: Counter[str] = Counter()
        self._window: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._window_size = 0
        #: the line of the last event that left the window (-1: none has)
        self.dropped_last_line = -1
        #: issue 3: finds profiler tables printed inside the stream (set it before feeding)
        self.finder: TableFinder | None = None

    @property
    def lines(self) -> int:
        """Physical lines read so far."""
        return self.total.lines

    def feed(self, lines: list[str]) -> None:
        """Scan one chunk of lines (with or without their line ends)."""
        if lines:
            self._merge(self.scanner.scan_chunks(self.path, [lines]))

    def feed_block(self, block: bytes, stats: ReadStats | None = None) -> None:
        """Scan one block of whole lines as bytes (:func:`~dnnlens.io.inputs.open_blocks`);
        ``stats`` counts the invalid bytes of its lines."""
        if block:
            chunk = InputScan(self.path)
            BulkScan(self.scanner, chunk, stats, self.finder).feed(block)
            self.scanner.finish_scan(chunk)
            self._merge(chunk)

    def _merge(self, chunk: InputScan) -> None:
        """Fold the scan of the next lines into the totals, the statistics and the window."""
        offset = self.total.lines
        t = self.total
        t.lines += chunk.lines
        t.parsed += chunk.parsed
        t.foreign += chunk.foreign
        t.malformed += chunk.malformed
        t.prefixed += chunk.prefixed
        t.nul_lines += chunk.nul_lines
        t.families.update(chunk.families)
        t.info_families.update(chunk.info_families)
        chunk.header.version_lines = [n + offset for n in chunk.header.version_lines]
        merge_header(t.header, chunk.header)
        for line, reason in zip(chunk.malformed_line, chunk.malformed_reason, strict=True):
            if len(t.malformed_line) < KEPT_LINES:
                t.malformed_line.append(line + offset)
                t.malformed_reason.append(reason)
        for line, text in chunk.malformed_text.items():
            if len(t.malformed_text) < MALFORMED_TEXT_KEPT:
                t.malformed_text[line + offset] = text
        if len(t.foreign_examples) < 5:
            t.foreign_examples.extend((n + offset, s) for n, s in chunk.foreign_examples)
        records = self.scanner.records
        for rid in chunk.diag_record:
            self.diagnostic_counts[records[rid].operation] += 1
        if len(t.diag_line) < KEPT_LINES:
            room = KEPT_LINES - len(t.diag_line)
            t.diag_line.extend(n + offset for n in chunk.diag_line[:room])
            t.diag_record.extend(chunk.diag_record[:room])
        if chunk.read_error and not t.read_error:
            t.read_error = chunk.read_error
        self._add_events(chunk, offset)

    def _add_events(self, chunk: InputScan, offset: int) -> None:
        n = len(chunk.event_line)
        if not n:
            return
        lines = np.frombuffer(chunk.event_line, dtype=np.int64) + offset
        recs = np.frombuffer(chunk.event_record, dtype=np.int64).copy()
        times = np.frombuffer(chunk.event_time, dtype=np.float64).copy()
        if len(chunk.event_timestamp) == n:
            stamps = np.frombuffer(chunk.event_timestamp, dtype=np.float64).copy()
        else:
            stamps = np.full(n, np.nan)
        self.stats.add(self.path, lines, recs, times)
        if self.window_events <= 0:
            return
        self._window.append((lines, recs, times, stamps))
        self._window_size += n
        while self._window and self._window_size - len(self._window[0][0]) >= self.window_events:
            dropped = self._window.pop(0)[0]
            self._window_size -= len(dropped)
            self.dropped_last_line = max(self.dropped_last_line, int(dropped[-1]))

    def summary(self) -> Summary:
        """The summary of everything read so far (exact, whatever the window)."""
        return summarize_stats(
            self.stats.frame(), self.scanner.records, dict(self.diagnostic_counts)
        )

    def window_scan(self) -> InputScan:
        """An :class:`InputScan` holding the events of the window (the last events read)."""
        w = InputScan(self.path)
        if self._window:
            lines, recs, times, stamps = (
                np.concatenate(parts) for parts in zip(*self._window, strict=True)
            )
            cut = max(0, len(lines) - self.window_events)
            if cut:
                self.dropped_last_line = max(self.dropped_last_line, int(lines[cut - 1]))
            keep = slice(cut, None)
            w.event_line = array("q", lines[keep].tolist())
            w.event_record = array("q", recs[keep].tolist())
            w.event_time = array("d", times[keep].tolist())
            w.event_timestamp = array("d", stamps[keep].tolist())
        w.diag_line, w.diag_record = self.total.diag_line, self.total.diag_record
        return w

    def analysis(self) -> Analysis:
        """Everything so far as an :class:`Analysis`: exact summary, windowed event table."""
        window = self.window_scan()
        t = self.total
        t.event_line, t.event_record = window.event_line, window.event_record
        t.event_time, t.event_timestamp = window.event_time, window.event_timestamp
        lines = window.event_line
        log = ParsedLog(
            scans=[t],
            records=self.scanner.records,
            reasons=self.scanner.reasons,
            events=build_events([window], self.scanner.records),
            diagnostics=build_diagnostics([window], self.scanner.records),
            input_errors=[],
            window=ReadWindow(
                events_total=int(self.stats.frame()["count"].sum()),
                first_line=int(lines[0]) if len(lines) else 0,
                dropped_last_line=self.dropped_last_line,
            ),
            record_stats=self.stats.frame(),
            diagnostic_counts=dict(self.diagnostic_counts),
        )
        analysis = Analysis(log)
        if self.finder is not None:
            self._link_tables(analysis)
        return analysis

    def _link_tables(self, analysis: Analysis) -> None:
        """Link the profiler tables found in the stream whose profiled region is still in
        the window of events; say so for the others (their primitives are gone)."""
        from dnnlens.analysis.linking import table_region_start
        from dnnlens.parsers.torch_trace import FrameworkData

        finder = self.finder
        assert finder is not None
        finder.close()
        if not finder.tables and not finder.markers:
            return
        data = FrameworkData(markers={self.path: list(finder.markers)}, errors=list(finder.errors))
        notes: list[str] = []
        for table in finder.tables:
            start = table_region_start(finder.markers, table.line)
            if self.dropped_last_line < 0 or (start is not None and self.dropped_last_line < start):
                data.tables.append(table)
            else:
                notes.append(
                    f"{table.source}:{table.line}: profiler table not linked: the events of "
                    f"its profiled region were not all kept (the stream keeps the last "
                    f"{self.window_events:,}); give a larger --window"
                )
        data.errors = notes + data.errors
        analysis.log.framework = data if data.tables or notes else None


#: A single log file at least this large is analysed by streaming (bounded memory).
STREAM_FILE_MIN_BYTES = 64 << 20


def analyze_file_streaming(path: str, window_events: int | None = None) -> Analysis:
    """Analyse one log file chunk by chunk, in the memory of the window, not of the file.

    Totals, breakdowns and ``primitives`` are exact; iterations, the op graph, the rules and
    the charts see the last ``window_events`` events (as for a long file in bulk). What
    reading learnt (compression, invalid bytes, a read error) is kept on the input's scan.
    Profiler tables printed inside the log are found and linked when the events of their
    profiled region are all still in the window (a note says so otherwise).
    """
    analyzer = StreamAnalyzer(
        path, DEFAULT_WINDOW_EVENTS if window_events is None else window_events
    )
    analyzer.finder = TableFinder(path)
    stats = ReadStats()
    opened = open_blocks(InputSource(path), stats)
    if stats.encoding == "utf-16":
        for lines in analyzer.finder.watch(opened):  # type: ignore[arg-type]
            analyzer.feed(lines)
    else:
        for block in opened:
            analyzer.feed_block(block, stats)  # type: ignore[arg-type]
    analyzer.total.add_reading(stats)
    return analyzer.analysis()
