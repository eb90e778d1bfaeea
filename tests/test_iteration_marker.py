"""``--iteration-marker``: the program's marker lines are kept as the log is read, so the
passes they mark are found in one reading, from a file, from standard input (which cannot
be read twice) and with ``-j 2``.

The log: ``sample_logs/convnet_nchw_infer.log`` with the program printing ``=== pass k
done`` after the last exec line of each pass (lines 37, 67, ..., 337 of the original: 11
passes of 15 exec lines), so the markers land on lines 38, 69, ..., 348 (hand count: the
k-th marker follows 37 + 30 k original lines and k earlier markers).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.reading import read

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "sample_logs" / "convnet_nchw_infer.log"
MARKER = r"^=== pass \d+ done"
#: where the markers land (see the module doc)
MARKER_LINES = [38 + 31 * k for k in range(11)]


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out: list[str] = []
    for i, line in enumerate(SOURCE.read_text().splitlines(), 1):
        out.append(line)
        if i >= 37 and (i - 37) % 30 == 0:
            out.append(f"=== pass {(i - 37) // 30} done")
    path = tmp_path_factory.mktemp("marker") / "marked.log"
    path.write_text("\n".join(out) + "\n")
    return path


def _iterations(result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["iterations"]


def test_the_markers_are_the_hand_counted_lines(marked: Path) -> None:
    text = marked.read_text().splitlines()
    assert [i for i, line in enumerate(text, 1) if line.startswith("=== pass")] == MARKER_LINES
    log = read([str(marked)], jobs=1, marker=MARKER)
    assert np.frombuffer(log.scans[0].marker_line, dtype=np.int64).tolist() == MARKER_LINES


def test_from_a_file_and_from_standard_input_alike(marked: Path) -> None:
    runner = CliRunner()
    args = ["--iteration-marker", MARKER, "--format", "json"]
    from_file = _iterations(runner.invoke(app, ["analyze", str(marked), *args]))
    piped = runner.invoke(app, ["analyze", "-", *args], input=marked.read_bytes())
    assert "not applied" not in piped.stderr
    from_stdin = _iterations(piped)
    # 11 marked passes of 15 exec lines: the passes the detection finds without a marker
    # (and so the same warm-up: the cache misses, then the slow first passes)
    plain = _iterations(runner.invoke(app, ["analyze", str(SOURCE), "--format", "json"]))
    assert (from_file["count"], from_file["period_exec"]) == (11, 15)
    assert from_file["warmup"] == plain["warmup"]
    for passes in (from_file["passes"], from_stdin["passes"]):
        for p in passes:
            p.pop("input")
    assert from_stdin == from_file


def test_oneDNN_lines_are_never_markers(marked: Path) -> None:
    # every exec line matches ",exec,": a marker is the program's own line, so none is kept
    log = read([str(marked)], jobs=1, marker=",exec,")
    assert len(log.scans[0].marker_line) == 0


def test_with_two_workers(marked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dnnlens.reading.parallel as parallel

    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    monkeypatch.setattr(parallel, "WARM_BYTES", 2_000)
    monkeypatch.setattr(parallel, "RANGE_BYTES", 4_000)
    log = read([str(marked)], jobs=2, marker=MARKER)
    assert np.frombuffer(log.scans[0].marker_line, dtype=np.int64).tolist() == MARKER_LINES


def test_a_log_read_without_the_marker_is_refused() -> None:
    from dnnlens.app.session import Settings, analyse

    log = read([str(SOURCE)], jobs=1)
    with pytest.raises(ValueError, match="read without a marker"):
        analyse(log, Settings(iteration_marker=MARKER))
