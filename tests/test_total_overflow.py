"""Exec times whose sum passes the largest float: each time is finite, their totals are not.
Such a total has no value in any view (``-`` on the terminal, ``null`` in JSON), exit 0, and
one note names the totals that overflowed (docs/input-policy.md, "Impossible sizes").

The input is the first exec line of ``sample_logs/convnet_nchw_infer.log`` (line 17, a
reorder) four times, each with the time ``1e308``: a pass is one exec, four passes, and
any sum of two of them (1e308 + 1e308 > 1.797e308) overflows.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.cli import EXIT_OK, app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"


def _huge_log(tmp_path: Path, time: str = "1e308") -> Path:
    first = next(line for line in NCHW.read_text().splitlines() if ",exec," in line)
    head = first.rsplit(",", 1)[0]
    path = tmp_path / "huge.log"
    path.write_text("".join(f"{head},{time}\n" for _ in range(4)))
    return path


def _analyze(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["analyze", *args])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


def _notes(doc: dict) -> list[str]:
    return [n for n in doc["notes"] if "past the largest float" in n]


def test_overflowing_totals_are_named_in_a_note_in_json(tmp_path: Path) -> None:
    code, out, err = _analyze("-f", "json", str(_huge_log(tmp_path)))
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["summary"]["exec_count"] == 4
    assert doc["summary"]["total_time_ms"] is None
    assert doc["summary"]["typical_iteration_ms"] is None
    notes = _notes(doc)
    assert len(notes) == 1, doc["notes"]
    assert "the summed exec time" in notes[0] and "the typical iteration" in notes[0]
    assert "the summed creation time" not in notes[0]  # no creation line: 0 ms, finite


def test_overflowing_totals_are_named_on_the_terminal(tmp_path: Path) -> None:
    code, out, err = _analyze(str(_huge_log(tmp_path)))
    assert code == EXIT_OK, err
    text = " ".join(out.split())
    assert "past the largest float" in text and "the summed exec time" in text


def test_large_finite_totals_give_no_note(tmp_path: Path) -> None:
    code, out, err = _analyze("-f", "json", str(_huge_log(tmp_path, "1e300")))
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["summary"]["total_time_ms"] == 4e300
    assert _notes(doc) == []
