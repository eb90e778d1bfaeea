"""Several traces or tables are several runs; a trace and the log of its run are one.

Hand counts, from the recordings of ``sample_logs/framework`` (``scripts/make_traces.py``)
with the standard library only::

    d = json.load(gzip.open("sample_logs/framework/NAME.trace.json.gz"))
    steps = [e for e in d["traceEvents"] if e.get("ph") == "X"
             and e["name"].startswith("ProfilerStep#")]
    base = d["baseTimeNanoseconds"] / 1e6                     # epoch ms of ts 0
    span = base + min(e["ts"] for e in steps) / 1e3, base + max(e["ts"] + e["dur"]) / 1e3

* every trace holds 4 ``ProfilerStep#`` spans (``ProfilerStep#2`` .. ``#5``);
* ``layout_bad`` spans epoch ms 1796149523529.66 .. 1796149523572.04, and the
  timestamps of ``layout_bad.log``'s 72 ``exec`` lines (``grep ,exec,``, third field) run
  from 1796149523505.72 to 1796149523571.69: they overlap;
* ``layout_fixed`` spans 1796149526891.14 .. 1796149526919.30, its log's exec lines
  1796149526855.31 .. 1796149526918.94: they overlap, and neither overlaps the other run;
* the two key_averages table files end with ``Self CPU time total: 20.667ms``
  (``profile_nchw_infer.table.txt``) and ``6.797ms`` (``profile_lstm_infer.table.txt``);
  neither has a ``ProfilerStep#`` row, so each profiled window is one step of that time.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dnnlens.analysis.runs import FrameworkFile, Run, find_runs, pair_framework, stem
from dnnlens.cli import app
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"
FW = ROOT / "framework"
runner = CliRunner()


def analyze_json(*paths: Path | str, extra: tuple[str, ...] = ()) -> dict:
    result = runner.invoke(app, ["analyze", *map(str, paths), "-f", "json", "-q", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_two_traces_are_two_runs() -> None:
    """Each trace is a run with its own framework view (4 steps each, hand count above),
    not the first trace's view with a note."""
    doc = analyze_json(FW / "sgd_bad.trace.json.gz", FW / "sgd_fixed.trace.json.gz")
    runs = doc["runs"]
    assert [r["run_name"] for r in runs] == ["sgd_bad.trace.json.gz", "sgd_fixed.trace.json.gz"]
    assert [r["run_inputs"] for r in runs] == ["trace", "trace"]
    for r, name in zip(runs, ("sgd_bad", "sgd_fixed"), strict=True):
        assert r["framework"]["source"]["path"].endswith(f"{name}.trace.json.gz")
        assert r["framework"]["steps"]["count"] == 4
        assert not any("traces among the inputs" in n for n in r["framework"]["notes"])
        assert r["basis"]["unit"] == "step"
    # DL101 fires on the unfused SGD only
    assert [f["code"] for f in runs[0]["findings"]] == ["DL101"]
    assert runs[1]["findings"] == []


def test_two_table_files_are_two_runs() -> None:
    """Each table is its own run; a table without step rows is one step of its total CPU
    time (hand count above), not the last table's figures for both."""
    doc = analyze_json(ROOT / "profile_nchw_infer.table.txt", ROOT / "profile_lstm_infer.table.txt")
    steps = [r["framework"]["steps"]["typical_step_ms"] for r in doc["runs"]]
    assert steps == [20.667, 6.797]
    assert [r["run_paths"] for r in doc["runs"]] == [
        [str(ROOT / "profile_nchw_infer.table.txt")],
        [str(ROOT / "profile_lstm_infer.table.txt")],
    ]


def test_traces_pair_with_their_logs_by_time() -> None:
    """Two logs and two traces are two joined runs; the spans (hand count above) pair them,
    whatever order they are given in."""
    paths = [FW / "layout_fixed.trace.json.gz", FW / "layout_bad.log",
             FW / "layout_bad.trace.json.gz", FW / "layout_fixed.log"]  # fmt: skip
    doc = analyze_json(*paths)
    runs = {r["run_name"]: r for r in doc["runs"]}
    assert sorted(runs) == ["layout_bad.log", "layout_fixed.log"]
    for name in ("layout_bad", "layout_fixed"):
        r = runs[f"{name}.log"]
        assert r["run_paired"] == "time"
        assert r["framework"]["source"]["path"].endswith(f"{name}.trace.json.gz")
        assert r["summary"]["exec_count"] == 72  # grep -c ,exec, NAME.log
        assert r["framework"]["link"] is not None


def test_times_that_do_not_meet_are_two_runs() -> None:
    """One log and one trace whose spans do not overlap (layout_bad's trace ends at
    ...523572.04, layout_fixed's log starts at ...526855.31) are two runs, though they are
    the only log and the only trace."""
    doc = analyze_json(FW / "layout_fixed.log", FW / "layout_bad.trace.json.gz")
    assert [(r["run_name"], r["run_inputs"]) for r in doc["runs"]] == [
        ("layout_fixed.log", "file"),
        ("layout_bad.trace.json.gz", "trace"),
    ]
    assert doc["runs"][0]["basis"]["unit"] == "iteration"


def test_combine_makes_one_run_of_traces() -> None:
    """--combine joins the two traces into one run (its framework view says which trace it
    is made of)."""
    doc = analyze_json(
        FW / "sgd_bad.trace.json.gz", FW / "sgd_fixed.trace.json.gz", extra=("--combine",)
    )
    assert "runs" not in doc
    assert any("2 traces among the inputs" in n for n in doc["framework"]["notes"])


def test_a_trace_and_a_table_of_one_profile_stay_with_their_log() -> None:
    """profile_nchw_infer.{log,trace.json,table.txt,shapes.txt} are one run: one stem."""
    log = load([str(p) for p in sorted(ROOT.glob("profile_nchw_infer.*"))])
    (run,) = find_runs(log)
    assert len(run.paths) == 4 and run.logs == (str(ROOT / "profile_nchw_infer.log"),)


def test_pairing_rules() -> None:
    """The order of the rules: time, then stem (same directory first, ties pair neither);
    nothing else pairs (not even the only log with the only trace); a run takes one trace."""
    a, b = Run("a.log", ("x/a.log",), "file"), Run("b.log", ("x/b.log",), "file")
    assert stem("x/a.pt.trace.json.gz") == "a" and stem("run.log.gz") == "run"
    # by name
    runs = pair_framework([a, b], [FrameworkFile("y/b.trace.json", "trace")])
    assert runs[1].framework == ("y/b.trace.json",) and runs[1].paired == "name"
    # time beats the name; times that do not meet forbid the name
    spans = [(0.0, 10.0), (20.0, 30.0)]
    late = FrameworkFile("x/a.trace.json", "trace", (22.0, 25.0))
    runs = pair_framework([a, b], [late], spans)
    assert runs[1].framework == (late.path,) and runs[1].paired == "time"
    apart = FrameworkFile("x/a.trace.json", "trace", (40.0, 50.0))
    runs = pair_framework([a, b], [apart], spans)
    assert [r.how for r in runs] == ["file", "file", "trace"]
    # the only log and the only file of other names: two runs, the file's note says why
    log_run, alone = pair_framework([a], [FrameworkFile("z/prof.json", "trace")])
    assert log_run.framework == () and alone.how == "trace"
    assert alone.note.startswith("prof.json is a profiler trace paired with no log")
    # two logs of one stem in other directories: a tie pairs neither
    c = Run("a.log", ("w/a.log",), "file")
    runs = pair_framework([a, c], [FrameworkFile("v/a.trace.json", "trace")])
    assert runs[-1].how == "trace"
    # a second trace of a paired run is a run of its own
    two = [FrameworkFile("x/a.trace.json", "trace"), FrameworkFile("x/a.json", "trace")]
    runs = pair_framework([a], two)
    assert runs[0].framework == ("x/a.trace.json",) and runs[1].paths == ("x/a.json",)
