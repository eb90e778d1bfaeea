"""Numbers exactly as oneDNN prints them: ASCII digits (``%g``), nothing Python's ``float``
also happens to read (docs/input-policy.md, "Numbers").

A time field that is not such a number, in the place of the time of a whole event, makes
the line malformed with a reason, on the line scanner and on the bulk scanner alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnlens.io import inputs
from dnnlens.parsers.common import ascii_float, ascii_int
from dnnlens.parsers.problem import parse_problem
from dnnlens.parsers.scanner import Scanner
from dnnlens.reading import load, load_lines

# a reorder line of sample_logs/convnet_nchw_infer.log, without its time
HEAD = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0"
    " dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,16x3x3x3,"
)
LENIENT = ["1_000", "\u0661\u0660", "\uff11\uff12", "0.5ms", "1.5e", "\u0663.\u0665", "0x10"]
REASON = "time field is not a number as oneDNN prints it (ASCII digits, %g)"


@pytest.mark.parametrize("time", LENIENT)
def test_a_time_python_would_read_is_malformed(time: str) -> None:
    scanner = Scanner()
    # the good line first: the bad one then meets the fast path's memo too
    scan = scanner.scan("<t>", [HEAD + "0.25", HEAD + time, HEAD + time])
    assert (scan.parsed, scan.malformed, scan.lines) == (1, 2, 3)
    assert list(scan.event_time) == [0.25]
    assert [scanner.reasons[r] for r in scan.malformed_reason] == [REASON, REASON]


@pytest.mark.parametrize("time", ["0.25", "2", "1e-05", "1.21704e-05", "5.", "0.5 ms", "0.5."])
def test_times_as_printed_still_read(time: str) -> None:
    scan = Scanner().scan("<t>", [HEAD + time])
    assert scan.parsed == 1 and scan.malformed == 0


def test_a_non_ascii_timestamp_is_malformed() -> None:
    line = "onednn_verbose,v1,\u0661\u0662," + HEAD[len("onednn_verbose,v1,") :] + "0.5"
    scanner = Scanner()
    scan = scanner.scan("<t>", [line])
    assert scan.malformed == 1
    assert scanner.reasons[scan.malformed_reason[0]].startswith("number field after the marker")


def test_an_untimed_line_ending_in_digits_is_still_an_untimed_event() -> None:
    """A v1.0 GPU exec line has no time: its last field is the problem, which may start
    with a digit; the fields before it are not a whole event, so it is no bad time."""
    line = "onednn_verbose,v1,primitive,exec,gpu,reorder,ocl:simple,undef,src:f32 dst:f32,,,2x3"
    scan = Scanner().scan("<t>", [line])
    assert (scan.parsed, scan.malformed) == (1, 0)


@pytest.mark.parametrize("block", [1 << 20, 97])
def test_both_scanners_agree_and_totals_are_the_awk_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Hand count of the file written below::

        grep -E ',[0-9.]+$' n.log | awk -F, '{s+=$NF} END {print s}'    # 0.25 + 2 + 0.5 = 2.75

    (the lines whose time is a plain number; awk would read ``1_000`` as 1 and ``0.5ms`` as
    0.5, which is why such lines are malformed rather than guessed at)."""
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    lines = [HEAD + t for t in ["0.25", *LENIENT, "2", "0.5"]]
    path = tmp_path / "n.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    by_blocks = load([str(path)])
    by_lines = load_lines(lines)
    for log in (by_blocks, by_lines):
        scan = log.scans[0]
        assert (scan.parsed, scan.malformed) == (3, len(LENIENT))
        assert float(log.events["time_ms"].sum()) == pytest.approx(2.75)
    assert list(by_blocks.scans[0].malformed_line) == list(by_lines.scans[0].malformed_line)


def test_ascii_helpers() -> None:
    assert ascii_float(" 1.5e3\n") == 1500.0 and ascii_int("12") == 12
    for text in ["1_0", "\u0661", "\uff11", "\u0663.\u0665"]:
        with pytest.raises(ValueError):
            ascii_float(text)
        with pytest.raises(ValueError):
            ascii_int(text)


def test_problem_dims_in_other_scripts_are_not_read() -> None:
    """``int`` reads Arabic-Indic digits; a problem descriptor never holds them."""
    prb = parse_problem("reorder", "\u0661\u0666x3x3x3")
    assert prb.error is not None
    assert all(d is None for t in prb.tensors for d in t[:1])
