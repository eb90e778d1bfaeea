"""Read inputs into a :class:`~dnnlens.model.ParsedLog`: the one entry point for parsing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from dnnlens.io.inputs import InputSource, expand_inputs
from dnnlens.model import ParsedLog, build_diagnostics, build_events
from dnnlens.parsers import bulk
from dnnlens.parsers.scanner import InputScan, Scanner
from dnnlens.parsers.torch_table import TableFinder

if TYPE_CHECKING:
    from dnnlens.report.console import InputProgress


def scan_source(
    scanner: Scanner,
    source: InputSource,
    finder: TableFinder | None = None,
    progress: InputProgress | None = None,
) -> InputScan:
    """Scan one source; an unreadable source gives an empty scan carrying its error.

    ``finder`` (issue 3) collects profiler tables inside the log; ``progress`` advances a
    progress bar as blocks are read. The bulk scanner (:mod:`dnnlens.parsers.bulk`) reads
    the source.
    """
    wrap = None
    if progress is not None:

        def wrap(blocks: Iterator[bytes]) -> Iterable[bytes]:
            return progress.track(source, blocks)

    return bulk.scan_source(scanner, source, finder, wrap)


def finish(scanner: Scanner, scans: list[InputScan], errors: list[str]) -> ParsedLog:
    """Build the tables once every input is scanned."""
    return ParsedLog(
        scans=scans,
        records=scanner.records,
        reasons=scanner.reasons,
        events=build_events(scans, scanner.records),
        diagnostics=build_diagnostics(scans, scanner.records),
        input_errors=errors,
    )


def load(specs: list[str], progress: InputProgress | None = None, jobs: int = 1) -> ParsedLog:
    """Parse every input named by ``specs`` (paths, globs, directories, ``-``).

    With ``jobs`` > 1, log files are scanned in that many processes (large files split into
    byte ranges, see :mod:`dnnlens.reading.parallel`); profiler tables printed inside a log are
    then not looked for (give the trace file instead).
    """
    sources, errors = expand_inputs(specs)
    scanner = Scanner()
    # issue 3: chrome traces go to the trace parser, logs are also searched for tables
    from dnnlens.parsers.torch_trace import FrameworkReader

    framework = FrameworkReader()
    logs = [s for s in sources if not framework.take_trace(s.path)]
    if jobs > 1 and logs and not any(s.is_stdin for s in logs):
        from dnnlens.reading.parallel import scan_parallel

        scans = scan_parallel([s.path for s in logs], jobs, scanner)
    else:
        scans = [scan_source(scanner, s, framework.finder(s.path), progress) for s in logs]
    log = finish(scanner, scans, errors)
    log.framework = framework.result()
    log.input_errors += [t.error for t in framework.data.traces if t.error]
    return log


def load_lines(lines: Iterable[str], name: str = "<lines>") -> ParsedLog:
    """Parse lines already in memory (tests, notebooks)."""
    scanner = Scanner()
    return finish(scanner, [scanner.scan(name, lines)], [])


def load_text(text: str, name: str = "<text>") -> ParsedLog:
    """Parse a whole log given as one string."""
    return load_lines(text.splitlines(), name)
