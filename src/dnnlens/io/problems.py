"""What to tell the user about the inputs after they are read (``docs/input-policy.md``).

The command line prints these after the report: errors (exit code 2) and notes (the exit
code is unchanged). Each message is one line that starts with the input's path. The
objects are read duck-typed (``ParsedLog`` and its scans), so this module imports nothing
from the parsers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dnnlens.io.inputs import STDIN_NAME, display_path


@dataclass
class InputProblems:
    """Errors make the run exit 2 (after the report); notes are information."""

    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plural(n: int, word: str) -> str:
    return f"1 {word}" if n == 1 else f"{n:,} {word}s"


def _no_verbose_output(scan: Any) -> str:
    """Why an input gave no verbose line: empty, program output, binary data or JSON."""
    shown = "standard input" if scan.path == STDIN_NAME else display_path(scan.path)
    if scan.lines == 0:
        if scan.path == STDIN_NAME:
            return "standard input was empty: nothing to analyse"
        return f"{shown}: empty file, nothing to analyse"
    what = f"no oneDNN verbose line among its {_plural(scan.lines, 'line')}"
    invalid = getattr(scan, "invalid_utf8_bytes", 0)
    examples = [text.lstrip() for _, text in getattr(scan, "foreign_examples", [])]
    if invalid and invalid >= scan.lines:  # text has far fewer bad bytes than lines
        hint = f"it looks like binary data ({invalid:,} bytes are not text)"
    elif examples and examples[0][:1] in ("{", "["):
        hint = "it looks like JSON, not a log (a cut or unrecognised profiler trace?)"
    else:
        hint = "was ONEDNN_VERBOSE=1 (DNNL_VERBOSE=1 before v2.5) set when it was written?"
    return f"{shown}: {what}; {hint}"


def input_problems(log: Any) -> InputProblems:
    """Errors and notes about the inputs of ``log`` (a :class:`dnnlens.model.ParsedLog`).

    Errors: inputs that could not be read (``input_errors``, ``read_error``) and, when no
    input holds a verbose line, inputs with no verbose line at all (empty, program output
    only, binary data), unless the input held something else dnnlens reads (a profiler
    table). Notes: such inputs beside real logs, NUL bytes removed, lines cut, encodings
    and compression other than the default.
    """
    problems = InputProblems()
    seen: set[str] = set()

    def error(message: str) -> None:
        if message not in seen:
            seen.add(message)
            problems.errors.append(message)

    for message in getattr(log, "input_errors", []):
        error(message)
    problems.notes.extend(getattr(log, "input_notes", []))
    framework = getattr(log, "framework", None)
    table_sources = {getattr(t, "source", None) for t in getattr(framework, "tables", [])}
    # An input without a single verbose line is an input error when it is all there is;
    # beside inputs that do hold oneDNN lines (a directory of logs and notes) it is a note.
    anything = any(s.parsed + s.malformed for s in log.scans) or bool(
        getattr(framework, "traces", None)
    )
    for scan in log.scans:
        if scan.read_error:
            error(scan.read_error)
        elif scan.parsed + scan.malformed == 0 and scan.path not in table_sources:
            if anything:
                problems.notes.append(_no_verbose_output(scan))
            else:
                error(_no_verbose_output(scan))
        problems.notes.extend(getattr(scan, "read_notes", []))
        nul_lines = getattr(scan, "nul_lines", 0)
        if nul_lines:
            problems.notes.append(
                f"{display_path(scan.path)}: {_plural(nul_lines, 'line')} held NUL bytes; "
                "they were removed before the line was read"
            )
    return problems


def strict_problem(log: Any) -> str | None:
    """The ``--strict`` error: how many malformed verbose lines, and where the first one is."""
    total = sum(scan.malformed for scan in log.scans)
    if not total:
        return None
    first = next(scan for scan in log.scans if scan.malformed)
    where = f"{display_path(first.path)}:{first.malformed_line[0]}"
    reason = log.reasons[first.malformed_reason[0]]
    lines = "1 malformed verbose line" if total == 1 else f"{total:,} malformed verbose lines"
    return f"{lines} (--strict); the first: {where}: {reason}"
