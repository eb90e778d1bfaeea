"""Parsing lines already in memory (tests, notebooks): no input to open."""

from __future__ import annotations

from collections.abc import Iterable

from dnnlens.model import ParsedLog, build_diagnostics, build_events
from dnnlens.parsers.scanner import Scanner


def load_lines(lines: Iterable[str], name: str = "<lines>") -> ParsedLog:
    """Parse lines already in memory (tests, notebooks)."""
    scanner = Scanner()
    scans = [scanner.scan(name, lines)]
    return ParsedLog(
        scans=scans,
        records=scanner.records,
        reasons=scanner.reasons,
        events=build_events(scans, scanner.records),
        diagnostics=build_diagnostics(scans, scanner.records),
        input_errors=[],
    )


def load_text(text: str, name: str = "<text>") -> ParsedLog:
    """Parse a whole log given as one string."""
    return load_lines(text.splitlines(), name)
