"""Fuzzing the line scanner with mutated real lines (hypothesis, bounded time).

Real lines come from ``tests/data/corpus`` and ``sample_logs``; each example applies a few
mutations (truncation, dropped, inserted or duplicated fields, swapped markers and
operations, random bytes, huge fields, stray commas and colons, unicode, NULs, glued lines,
prefixes). The properties:

* scanning never raises and parsed + foreign + malformed equals the line count;
* a line is classified the same whatever the scanner saw before (cold or warm memo, fast
  path or slow path) and when it is fed twice;
* a line with a timestamp classifies like the same line without one, and a prefixed line
  like the bare line.

``DNNLENS_FUZZ_EXAMPLES`` raises the number of examples for a long local run; the default
keeps the whole file well under a minute on two cores.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dnnlens.io.inputs import MAX_LINE_CHARS
from dnnlens.parsers.scanner import Scanner

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "tests" / "data" / "corpus").glob("*.log")),
    *sorted((ROOT / "sample_logs").glob("*.log")),
    *sorted((ROOT / "sample_logs" / "legacy").glob("*.log")),
]


def _real_lines() -> list[str]:
    verbose: dict[str, str] = {}
    other: dict[str, None] = {}
    for path in SOURCES:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "_verbose" in line:
                # one line per distinct head: the memo makes repeats uninteresting
                verbose.setdefault(line.rpartition(",")[0], line)
            elif line.strip():
                other.setdefault(line[:300])
    return sorted(verbose.values()) + sorted(other)[:200]


LINES = _real_lines()
EXAMPLES = int(os.environ.get("DNNLENS_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

MARKERS = [
    "onednn_verbose",
    "dnnl_verbose",
    "mkldnn_verbose",
    "onednn_verbose,v1",
    "onednn_verbose,v2",
    "ov_cpu_verbose",
    "onednn_verb",
    "ONEDNN_VERBOSE",
]
OPERATIONS = [
    "exec",
    "create",
    "create:cache_hit",
    "create:cache_miss",
    "create_nested",
    "create:check",
    "create:dispatch",
    "exec:check",
    "info",
    "error",
    "warning",
    "compile",
    "exec:external",
    "primitive",
    "graph",
    "common",
    "ukernel",
    "",
]
PREFIXES = [
    "[rank0]: ",
    "> ",
    "[2026-01-01 00:00:00.000] [oneDNN] [info] ",
    "`",
    "  ",
    "INFO:root:",
    "\x1b[32m",
    "\ufeff",
    "Epoch 1: 10%\r",
]
ALPHABET = st.characters(codec="utf-8", exclude_categories=["Cs"])
# the marker, and the field the scanner takes as the version (any field starting with v)
_MARK = re.compile(r"(onednn|mkldnn|dnnl)_verbose,(v[^,]*,)?")


# -- mutations ----------------------------------------------------------------------------


@st.composite
def mutation(draw: st.DrawFn, line: str) -> str:
    """One random change to ``line``."""
    fields = line.split(",")
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "drop",
                "insert",
                "duplicate",
                "marker",
                "operation",
                "bytes",
                "huge",
                "punct",
                "unicode",
                "nul",
                "glue",
                "cr",
                "prefix",
                "time",
                "swap",
                "grow",
            ]
        )
    )
    pos = draw(st.integers(0, len(line)))
    at = draw(st.integers(0, max(0, len(fields) - 1)))
    if kind == "truncate":
        return line[:pos]
    if kind == "drop" and len(fields) > 1:
        return ",".join(fields[:at] + fields[at + 1 :])
    if kind == "insert":
        new = draw(st.text(alphabet=st.sampled_from("abc019:_.-x+e ;*#/"), max_size=12))
        return ",".join(fields[:at] + [new] + fields[at:])
    if kind == "duplicate":
        return ",".join(fields[:at] + [fields[at]] + fields[at:])
    if kind == "marker":
        return ",".join([draw(st.sampled_from(MARKERS))] + fields[1:])
    if kind == "operation":
        return ",".join(fields[:at] + [draw(st.sampled_from(OPERATIONS))] + fields[at + 1 :])
    if kind == "bytes":
        raw = draw(st.binary(min_size=1, max_size=16))
        return line[:pos] + raw.decode("utf-8", "replace") + line[pos:]
    if kind == "huge":
        size = draw(st.sampled_from([300, 5_000, 80_000, MAX_LINE_CHARS + 5]))
        fill = draw(st.sampled_from(["x", "9", "a:", "ab_", " "]))
        return ",".join(fields[:at] + [fill * (size // len(fill))] + fields[at + 1 :])
    if kind == "grow" and fields[at]:  # a field's last character repeated: nthr:2222...
        size = draw(st.sampled_from([20, 5_000, 80_000]))
        return ",".join(fields[:at] + [fields[at] + fields[at][-1] * size] + fields[at + 1 :])
    if kind == "punct":
        return line[:pos] + draw(st.sampled_from([",", ":", ",,", "::", ", ", ",:,"])) + line[pos:]
    if kind == "unicode":
        return line[:pos] + draw(st.text(alphabet=ALPHABET, min_size=1, max_size=6)) + line[pos:]
    if kind == "nul":
        return line[:pos] + "\x00" * draw(st.integers(1, 4)) + line[pos:]
    if kind == "glue":
        return line[:pos] + draw(st.sampled_from(LINES))
    if kind == "cr":
        return line[:pos] + "\r" + line[pos:]
    if kind == "prefix":
        return draw(st.sampled_from(PREFIXES)) + line
    if kind == "time":
        value = draw(
            st.sampled_from(
                [
                    "inf",
                    "-inf",
                    "nan",
                    "-1",
                    "1e400",
                    "1e-400",
                    "0.5.",
                    "0.5 ms",
                    "1_0",
                    " 2",
                    "٣",
                    "",
                    "0x10",
                    "1e5",
                    "1_000",
                    "\u0661\u0660",
                    "\uff11\uff12",
                    "0.5ms",
                    "1.5e",
                    "\u0663.\u0665",
                ]
            )
        )
        return ",".join(fields[:-1] + [value])
    if kind == "swap" and len(fields) > 2:
        i, j = at, draw(st.integers(0, len(fields) - 1))
        fields[i], fields[j] = fields[j], fields[i]
        return ",".join(fields)
    return line


@st.composite
def mutated_line(draw: st.DrawFn) -> str:
    """A real line with one to four mutations."""
    line = draw(st.sampled_from(LINES))
    for _ in range(draw(st.integers(1, 4))):
        line = draw(mutation(line))
    return line


# -- per-line outcome -----------------------------------------------------------------------


def outcome(scanner: Scanner, line: str) -> tuple:
    """How ``scanner`` classifies ``line`` (alone in an input), as comparable values."""
    scan = scanner.scan("<fuzz>", [line])
    assert scan.lines == 1
    assert scan.parsed + scan.foreign + scan.malformed == 1
    if scan.malformed:
        return ("malformed", scanner.reasons[scan.malformed_reason[0]])
    if len(scan.event_line):
        t = scan.event_time[0]
        return ("event", scanner.records[scan.event_record[0]], "nan" if math.isnan(t) else t)
    if len(scan.diag_line):
        return ("diagnostic", scanner.records[scan.diag_record[0]])
    return ("info",) if scan.parsed else ("foreign",)


def warm_scanner() -> Scanner:
    """A scanner that has seen every real line once (memo and fast path filled)."""
    scanner = Scanner()
    scanner.scan("<warm>", LINES)
    return scanner


WARM = warm_scanner()


def with_timestamp(line: str, ts: str) -> str | None:
    """``line`` with a timestamp field after its marker (and version), None if no marker.

    NUL bytes go first, as the scanner removes them before it looks for the version field.
    """
    line = line.replace("\x00", "")
    m = _MARK.search(line)
    if m is None:
        return None
    return line[: m.end()] + ts + "," + line[m.end() :]


# -- properties ----------------------------------------------------------------------------


@FUZZ
@given(st.lists(mutated_line(), min_size=1, max_size=12), st.booleans())
def test_never_raises_and_every_line_is_accounted(lines: list[str], newline: bool) -> None:
    scanner = Scanner()
    if newline:
        lines = [line + "\n" for line in lines]
    scan = scanner.scan("<fuzz>", lines)
    assert scan.lines == len(lines)
    assert scan.parsed + scan.foreign + scan.malformed == scan.lines
    assert len(scan.malformed_line) == scan.malformed
    assert len(scan.event_line) == len(scan.event_record) == len(scan.event_time)
    assert len(scan.event_timestamp) in (0, len(scan.event_line))
    assert list(scan.malformed_line) == sorted(scan.malformed_line)
    # a second pass over the same lines (now all memoised) gives the same accounting
    again = scanner.scan("<fuzz>", lines)
    assert (again.parsed, again.foreign, again.malformed) == (
        scan.parsed,
        scan.foreign,
        scan.malformed,
    )
    assert list(again.event_record) == list(scan.event_record)


@FUZZ
@given(mutated_line())
def test_same_line_same_outcome_cold_warm_and_twice(line: str) -> None:
    cold = Scanner()
    first = outcome(cold, line)
    assert outcome(cold, line) == first  # fed twice: memo or fast path now
    assert outcome(WARM, line) == first  # a scanner that has seen the real lines


@FUZZ
@given(mutated_line(), st.sampled_from(["1700000000123.456", "1700000000123", "0", "17.5"]))
@example(line="onednn_verbose,\x00v1,1796010103264.634033,", ts="17.5")
@example(line="onednn_verbose,v1,1e5,primitive,exec,cpu,reorder,jit:uni,undef,,,,1x2,1", ts="0")
def test_timestamp_does_not_change_the_outcome(line: str, ts: str) -> None:
    stamped = with_timestamp(line, ts)
    if stamped is None:
        return
    assert outcome(Scanner(), stamped) == outcome(Scanner(), line)


@FUZZ
@given(mutated_line(), st.sampled_from(PREFIXES[:3]))
def test_prefix_does_not_change_the_outcome(line: str, prefix: str) -> None:
    if _MARK.search(line) is None or "\x00" in line:
        return
    assert outcome(Scanner(), prefix + line) == outcome(Scanner(), line)


# what awk reads of a field: the longest ASCII number at its start (after blanks)
_AWK_NUMBER = re.compile(r"[ \t]*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)")


@FUZZ
@given(mutated_line())
@example(line=LINES[0].rpartition(",")[0] + ",1_000")
@example(line=LINES[0].rpartition(",")[0] + ",\uff11\uff12")
def test_a_time_is_what_awk_reads(line: str) -> None:
    """The time of a timed event is the number ``awk -F, '{print $NF+0}'`` reads from the
    line's last field: nothing Python's ``float`` alone would take (``1_000``, other
    scripts' digits) makes a time (README, "How the numbers are computed")."""
    scanner = Scanner()
    scan = scanner.scan("<fuzz>", [line])
    if not len(scan.event_line) or math.isnan(scan.event_time[0]):
        return
    last = line.replace("\x00", "").rstrip().rpartition(",")[2]
    m = _AWK_NUMBER.match(last)
    assert m is not None, last
    assert scan.event_time[0] == float(m.group(1))
