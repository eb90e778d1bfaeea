"""The benchdnn bridge, against a stand-in benchdnn that answers as benchdnn does.

The stand-in reads ``--perf-template=`` and the problem from its arguments, as benchdnn
does, and prints one line in that template with fixed times, so the test checks the
command lines dnnlens builds and how it reads the answers (no real benchdnn here).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.app.session import Settings, open_inputs
from dnnlens.cli import app
from dnnlens.tools.benchdnn_run import PERF_PREFIX, parse_perf_line, run_benchdnn

NCHW = Path(__file__).resolve().parent.parent / "sample_logs" / "convnet_nchw_infer.log"

FAKE = """#!{python}
import sys
args = sys.argv[1:]
template = next(a for a in args if a.startswith("--perf-template=")).split("=", 1)[1]
if "--reorder" in args and {fail_reorder}:
    print("error: unimplemented", file=sys.stderr)
    sys.exit(1)
prb = args[-1]
print("some benchdnn chatter")
print(template.replace("%prb%", prb).replace("%-time%", "0.0125").replace("%0time%", "0.02"))
"""


def _run(path: Path):  # -> Analysis
    """The run of ``path`` as every command opens it."""
    return open_inputs([str(path)], Settings()).single(str(path))


def _fake(tmp_path: Path, fail_reorder: bool = False) -> Path:
    path = tmp_path / "benchdnn"
    path.write_text(FAKE.format(python=sys.executable, fail_reorder=fail_reorder))
    path.chmod(0o755)
    return path


def test_perf_line_reading() -> None:
    assert parse_perf_line(f"{PERF_PREFIX},--dt=f32 mb4ic16,x,0.5,0.75") == (0.5, 0.75)
    assert parse_perf_line("perf,cpu,jit:avx2,0.5,0.75") is None
    assert parse_perf_line(f"{PERF_PREFIX},prb,nan-ish,zz") is None


def test_top_primitives_run_alone(tmp_path: Path) -> None:
    results = run_benchdnn(str(_fake(tmp_path)), _run(NCHW), top=3)
    assert len(results) == 3
    for r in results:
        assert r.error is None
        assert r.isolated_min_ms == 0.0125 and r.isolated_avg_ms == 0.02
        assert r.command[1:3] == ["--mode=P", f"--{r.driver}"]
        assert r.slowdown == r.workload_mean_ms / 0.0125
    # the top primitive of the NCHW log is the 4x16x32x32 reorder (tests/test_sample_logs.py)
    assert results[0].kind == "reorder" and results[0].command[-1].endswith("4x16x32x32")


def test_a_failing_reproducer_is_reported_and_the_rest_run(tmp_path: Path) -> None:
    results = run_benchdnn(str(_fake(tmp_path, fail_reorder=True)), _run(NCHW), top=3)
    failed = [r for r in results if r.error]
    assert failed and all(r.kind == "reorder" for r in failed)
    assert "exited with 1" in failed[0].error and "unimplemented" in failed[0].error
    assert any(r.isolated_min_ms == 0.0125 for r in results if r.kind == "convolution")


def test_project_with_benchdnn_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "project",
            str(NCHW),
            "--benchdnn",
            str(_fake(tmp_path)),
            "--benchdnn-top",
            "2",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert len(doc["benchdnn"]) == 2
    assert doc["benchdnn"][0]["isolated_min_ms"] == 0.0125


def test_project_with_a_missing_benchdnn_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["project", str(NCHW), "--benchdnn", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "cannot run benchdnn" in result.output
