"""A log truncated while it is read (logrotate's ``copytruncate`` empties the file under the
reader): the lines read before the cut are kept and counted, and a note says the file
shrank and by how much, so the cut is never silent (docs/input-policy.md, "Reading").

The log is ``sample_logs/convnet_nchw_infer.log`` 20 times (66,043 bytes, 338 lines each:
1,320,860 bytes), more than one read; the file is emptied after the first read returns,
so what was read is the bytes of that read, counted like ``head -c N | wc -l`` (plus the
cut last line).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import EXIT_OK, app
from dnnlens.io import inputs
from dnnlens.io.inputs import InputSource, ReadStats, iter_chunks

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
COPIES, NCHW_BYTES = 20, 66_043


def _big_log(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    path.write_bytes(NCHW.read_bytes() * COPIES)
    assert path.stat().st_size == COPIES * NCHW_BYTES
    return path


def _lines_in(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _truncate_after_first_read(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[bytes]:
    """``RawInput.read`` as it is, but the file is emptied once its first bytes are read;
    what was read is kept in the returned list."""
    read, seen = inputs.RawInput.read, []

    def reading(self: inputs.RawInput, size: int) -> bytes:
        data = read(self, size)
        if not seen and data:
            os.truncate(path, 0)
        seen.append(data)
        return data

    monkeypatch.setattr(inputs.RawInput, "read", reading)
    return seen


def test_a_log_emptied_while_read_keeps_its_lines_and_says_it_shrank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big_log(tmp_path)
    seen = _truncate_after_first_read(monkeypatch, path)
    result = CliRunner().invoke(app, ["analyze", "-j", "1", "-f", "json", str(path)])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exit_code == EXIT_OK, result.stderr
    first = seen[0]
    assert len(first) < COPIES * NCHW_BYTES  # the file was cut under the reader
    doc = json.loads(result.stdout)
    assert doc["inputs"][0]["lines"] == _lines_in(first)
    shrank = [n for n in doc["inputs"][0]["read_notes"] if "shrank while it was read" in n]
    assert shrank == [
        f"{path}: the file shrank while it was read, from {COPIES * NCHW_BYTES:,} to 0 bytes "
        f"(truncated in place, as logrotate's copytruncate does): the {len(first):,} bytes "
        "read before are analysed, the rest is gone"
    ]
    assert any("shrank while it was read" in line for line in result.stderr.splitlines())


def test_the_line_reader_says_so_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_log(tmp_path)
    seen = _truncate_after_first_read(monkeypatch, path)
    stats = ReadStats()
    lines = sum(len(chunk) for chunk in iter_chunks(InputSource(str(path)), stats))
    assert lines == _lines_in(seen[0])
    assert any("shrank while it was read" in n for n in stats.notes), stats.notes


def test_a_log_that_grows_while_read_gives_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live log only grows: nothing to say."""
    path = _big_log(tmp_path)
    read, grown = inputs.RawInput.read, []

    def reading(self: inputs.RawInput, size: int) -> bytes:
        data = read(self, size)
        if not grown and data:
            with open(path, "ab") as log:
                log.write(NCHW.read_bytes())
            grown.append(True)
        return data

    monkeypatch.setattr(inputs.RawInput, "read", reading)
    stats = ReadStats()
    lines = sum(len(chunk) for chunk in iter_chunks(InputSource(str(path)), stats))
    assert lines == (COPIES + 1) * 338
    assert not any("shrank" in n for n in stats.notes), stats.notes


def test_a_byte_range_past_the_new_end_says_the_file_shrank(tmp_path: Path) -> None:
    """``-j``: ranges are cut from the size at the start; a range the emptied file no
    longer reaches reads nothing and says why."""
    path = _big_log(tmp_path)
    stats = ReadStats()
    blocks = inputs.open_range_blocks(str(path), NCHW_BYTES, 2 * NCHW_BYTES, stats)
    os.truncate(path, 0)
    assert list(blocks) == []
    assert any("shrank while it was read" in n for n in stats.notes), stats.notes
    whole = ReadStats()
    assert sum(b.count(b"\n") for b in inputs.open_range_blocks(str(path), 0, 0, whole)) == 0
    assert whole.notes == []
