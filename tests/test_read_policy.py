"""Reading policy of files and pipes alike (docs/input-policy.md, "Reading").

The hand counts come from ``sample_logs/convnet_nchw_infer.log``: ``wc -l`` gives 338 lines,
``grep -c ',exec,' `` 165 exec lines (tests/test_sample_logs.py).
"""

from __future__ import annotations

from pathlib import Path

from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165


def _execs(log) -> int:  # noqa: ANN001 - a ParsedLog
    return int((log.events["operation"] == "exec").sum())


def test_utf16_file_whose_first_line_is_over_the_cap(tmp_path: Path) -> None:
    """The cut of an overlong line falls after decoding, never inside a UTF-16 code unit:
    the 338 lines after it are read (a byte-level cut read the file as 1 line)."""
    path = tmp_path / "powershell.log"
    path.write_bytes(("x" * (5 << 20) + "\n" + NCHW.read_text()).encode("utf-16"))
    log = load([str(path)])
    (scan,) = log.scans
    assert scan.lines == NCHW_LINES + 1
    assert _execs(log) == NCHW_EXECS
    assert scan.foreign == 2  # the long line and the last line of the program's output
    assert any("1 line longer than" in n for n in scan.read_notes)
