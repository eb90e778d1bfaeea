"""A log of only dispatch diagnostics (``ONEDNN_VERBOSE=dispatch``) is reported as that.

Its title says what it is and how to get times, and its reasons are counted: which
implementations oneDNN skipped and why. Two recordings: sample_logs/dispatch_only_infer.log
(``ONEDNN_VERBOSE=dispatch``, 26 ``create:dispatch`` lines) and the 29 ``create:dispatch``
lines of sample_logs/all_timestamps_infer.log (``ONEDNN_VERBOSE=all`` with timestamps, the
same convnet) taken alone. Counts by hand: ``grep create:dispatch LOG | grep -c REASON``.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.reading import read

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
DISPATCH = SAMPLES / "dispatch_only_infer.log"
ALL = SAMPLES / "all_timestamps_infer.log"
TITLE = "Only dispatch diagnostics: set ONEDNN_VERBOSE=1 for times"

#: (kind, impl, reason, lines) of dispatch_only_infer.log, most lines first
DISPATCH_REASONS = [
    ("reorder", "", "src has a bad number of dimensions 4", 7),
    ("reorder", "jit_direct_copy:uni", "memory formats for src and dst tensors do not match", 7),
    ("convolution", "", "unsupported format tag", 6),
    ("convolution", "brdgmm_dw:undef", "unsupported feature for implementation: non-grouped "
     "convolution in depthwise convolution implementation", 3),
    ("convolution", "", "unsupported feature for padding: f,t,l padding not supported", 3),
]  # fmt: skip


def _json(path: Path) -> dict:
    result = CliRunner().invoke(app, ["analyze", str(path), "-f", "json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _reasons(doc: dict) -> list[tuple[str, str, str, int]]:
    (f,) = [f for f in doc["findings"] if f["data"].get("dispatch_only")]
    assert f["title"] == TITLE
    return [(r["kind"], r["impl"], r["reason"], r["lines"]) for r in f["data"]["dispatch_reasons"]]


def test_dispatch_only_log_is_titled_and_counted() -> None:
    doc = _json(DISPATCH)
    assert _reasons(doc) == DISPATCH_REASONS
    (f,) = doc["findings"]
    assert f["data"]["dispatch_lines"] == 26
    assert "no oneDNN primitive lines" not in f["message"]
    result = CliRunner().invoke(app, ["analyze", str(DISPATCH)], env={"COLUMNS": "100"})
    out = result.stdout
    assert out.splitlines()[0].startswith("dispatch_only_infer.log: only dispatch diagnostics (26")
    assert f"First: {TITLE}." in out
    assert "Implementations oneDNN skipped, and why" in out
    assert "No oneDNN primitive events" not in out


def test_the_page_opens_with_what_the_log_is(tmp_path: Path) -> None:
    page = tmp_path / "d.html"
    result = CliRunner().invoke(
        app, ["analyze", str(DISPATCH), "-q", "-f", "html", "-o", str(page)]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "only dispatch diagnostics (26 create:dispatch lines, no times)" in text
    assert "0 primitive executions" not in text


def test_the_dispatch_lines_of_another_recording(tmp_path: Path) -> None:
    lines = [x for x in ALL.read_text().splitlines(keepends=True) if "create:dispatch" in x]
    assert len(lines) == 29
    log = tmp_path / "dispatch.log"
    log.write_text("".join(lines))
    got = _reasons(_json(log))
    assert got[:3] == DISPATCH_REASONS[:3]
    assert sum(n for *_, n in got) == 29
    assert ("convolution", "", "blocking heuristic fail: bad blocking parameters", 3) in got
    assert ("convolution", "", "unsupported feature for padding: inconsistent i/o dimensions",
            1) in got  # fmt: skip


def test_the_short_form_names_its_primitive_kind() -> None:
    log = read([str(DISPATCH)])
    d = log.diagnostics
    line9 = int(d.index[d["line"] == 9][0])
    rec = log.records[int(d["record"][line9])]
    assert (rec.kind, rec.text) == ("convolution", "unsupported format tag")
    assert rec.location == "src/cpu/x64/jit_brgemm_conv_utils.cpp:261"


def test_dispatch_lines_beside_times_are_not_a_dispatch_only_log() -> None:
    doc = _json(ALL)
    assert not any(f["data"].get("dispatch_only") for f in doc["findings"])
    assert doc["summary"]["exec_count"] > 0
