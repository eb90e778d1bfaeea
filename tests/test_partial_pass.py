"""A log that stops mid-pass (Ctrl-C, a program that ended early) has a partial last pass:
it is neither warm-up nor steady, so every per-iteration figure is of whole passes.

Hand counts on ``sample_logs/convnet_nchw_infer.log`` (338 lines, 165 exec lines: 11 passes
of 15, MANIFEST ``warmup_calls`` 1 + ``timed`` 10): every pass runs 11 reorders
(``grep -c ',exec,.*,reorder,'`` over any one pass's 15 exec lines). Without its last 12
lines the log stops 9 exec lines into its 11th pass, as a Ctrl-C would leave it; before,
that pass counted as steady and the report said 10.43 reorders per iteration (73 / 7).
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.cli import app

NCHW = Path(__file__).resolve().parents[1] / "sample_logs" / "convnet_nchw_infer.log"


def _cut(tmp_path: Path, drop: int) -> Path:
    lines = NCHW.read_text().splitlines(keepends=True)
    out = tmp_path / "cut.log"
    out.write_text("".join(lines[:-drop]))
    return out


def _doc(path: Path, *args: str) -> dict:
    result = CliRunner().invoke(app, ["analyze", str(path), "-f", "json", "-q", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_cut_pass_is_partial_and_whole_passes_make_the_figures(tmp_path: Path) -> None:
    lines = NCHW.read_text().splitlines()
    execs = [i for i, line in enumerate(lines) if ",exec," in line]
    assert len(execs) == 165
    last_pass = execs[-15]
    kept = [i for i in execs if last_pass <= i < len(lines) - 12]
    assert len(kept) == 9  # the 11th pass stops after 9 of its 15 executions

    doc = _doc(_cut(tmp_path, 12))
    it = doc["iterations"]
    assert (it["count"], it["warmup"], it["partial"], it["steady"]) == (11, 4, 1, 6)
    last = it["passes"][-1]
    assert (last["exec_count"], last["partial"], last["warmup"], last["steady"]) == (
        9,
        True,
        False,
        False,
    )
    # reorder-overhead's own figures (all rules: folded into layout-round-trip)
    alone = _doc(_cut(tmp_path, 12), "--select", "reorder-overhead")
    (reorders,) = [f for f in alone["findings"] if f["rule"] == "reorder-overhead"]
    assert reorders["data"]["reorders_per_iteration"] == 11.0
    assert reorders["data"]["iterations"] == 6


def test_the_terminal_names_the_partial_pass(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(_cut(tmp_path, 12))])
    assert "11 passes (4 warm-up, 1 partial)" in result.stdout


def test_a_whole_log_has_no_partial_pass() -> None:
    it = _doc(NCHW)["iterations"]
    assert (it["count"], it["warmup"], it["partial"], it["steady"]) == (11, 4, 0, 7)
    assert not any(p["partial"] for p in it["passes"])
