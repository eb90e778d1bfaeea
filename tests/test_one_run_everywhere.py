"""One run, one verdict, whatever the command and whatever else is given with it.

The same runs go through ``analyze`` (of the group and of each run alone), the Python API,
``diff`` (a run against itself), ``project``, ``graph``, ``export perfetto`` and ``fleet
build``; each must say the same warm-up, steady passes, typical time, findings (rule,
severity, share) and run grouping as ``analyze`` of the group. The groups are a directory
of nine producers' logs and multi-file inputs: a log with its own trace and tables beside
another log, and a log beside a trace of another run (RetinaNet's) that must stay apart.

Hand counts: ``sample_logs/producers/`` holds nine logs with verbose lines and a MANIFEST
(9 runs); ``profile_nchw_infer.*`` is one recording (log, trace, table, shapes table: one
run of 4 inputs); ``framework_tables/`` holds 7 scenarios x bad/fixed, each a trace and
3 or 5 tables of its stem (``adamw_bad.top.table.txt`` is a table of ``adamw_bad``: 14 runs);
``convnet_nchw_infer.log`` has 11 passes, 4 of them warm-up (1 creating
primitives, 3 slower than 3x the steady median: ``docs/walk.md``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import dnnlens
from dnnlens.cli import app

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_logs"

GROUPS = {
    "producers directory": (str(S / "producers"),),
    "a log with its trace, beside a log": (
        str(S / "profile_nchw_infer.log"),
        str(S / "profile_nchw_infer.trace.json"),
        str(S / "profile_nchw_infer.table.txt"),
        str(S / "profile_nchw_infer.shapes.txt"),
        str(S / "convnet_cl_infer.log"),
    ),
    "a log beside another run's trace": (
        str(S / "convnet_nchw_infer.log"),
        str(S / "retinanet" / "baseline.trace.json.gz"),
    ),
    "profiles directory": (str(S / "framework_tables"),),
}
RUN_COUNTS = {
    "producers directory": 9,
    "a log with its trace, beside a log": 2,
    "a log beside another run's trace": 2,
    "profiles directory": 14,
}


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


@cache
def _json(*args: str) -> dict[str, Any]:
    result = _invoke(*args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["runs"] if "runs" in doc else [doc]


def verdict(doc: dict[str, Any]) -> dict[str, Any]:
    """What must not change with the command or the company: warm-up, steady passes, the
    basis, and each finding's rule, severity and share."""
    it = doc["iterations"]
    return {
        "passes": (it["count"], it["warmup"], it["steady"]),
        "basis": (doc["basis"]["unit"], round(doc["basis"]["typical_ms"], 9)),
        "findings": [
            (
                f["rule"],
                f["severity"],
                None if f.get("share_of_basis") is None else round(f["share_of_basis"], 9),
            )
            for f in doc["findings"]
        ],
        "fixes": [f["fix"] for f in doc["findings"]],
    }


@pytest.fixture(params=sorted(GROUPS))
def group(request: pytest.FixtureRequest) -> tuple[str, tuple[str, ...], list[dict[str, Any]]]:
    name = request.param
    doc = _json("analyze", *GROUPS[name], "-f", "json", "-q")
    return name, GROUPS[name], _runs(doc)


def test_the_grouping_is_the_hand_count(group) -> None:
    name, _, runs = group
    assert len(runs) == RUN_COUNTS[name]


def test_a_run_alone_says_what_it_says_among_others(group) -> None:
    _, _, runs = group
    for run in runs:
        alone = _runs(_json("analyze", *run["run_paths"], "-f", "json", "-q"))
        assert len(alone) == 1, run["run_name"]
        assert verdict(alone[0]) == verdict(run), run["run_name"]


def test_the_api_says_what_the_command_says(group) -> None:
    _, paths, runs = group
    report = dnnlens.analyze(list(paths))
    assert [verdict(r.to_dict()) for r in report.runs] == [verdict(r) for r in runs]


def _one_spec(run: dict[str, Any]) -> str | None:
    """A single argument that names exactly this run (a file, or its recording's glob)."""
    paths = run["run_paths"]
    if len(paths) == 1:
        return paths[0]
    stem = Path(paths[0]).name.split(".")[0]
    glob = str(Path(paths[0]).parent / f"{stem}.*")
    return (
        glob
        if sorted(Path(paths[0]).parent.glob(f"{stem}.*")) == sorted(map(Path, paths))
        else None
    )


def test_diff_project_graph_and_export_see_the_run_analyze_sees(group, tmp_path: Path) -> None:
    _, _, runs = group
    for run in runs:
        spec = _one_spec(run)
        if spec is None:
            continue
        name = run["run_name"]
        it = run["iterations"]
        d = _json("diff", spec, spec, "-f", "json", "-q")
        if run["summary"]["exec_count"]:
            base = d["base"]
            assert (base["iterations"], base["warmup_iterations"], base["steady_iterations"]) == (
                it["count"],
                it["warmup"],
                it["steady"],
            ), name
            p = _json("project", spec, "-f", "json")
            assert p["iterations_used"] == it["steady"], name
            assert p["baseline_ms"] == pytest.approx(run["summary"]["typical_iteration_ms"]), name
            g = _json("graph", spec)["iterations"]
            assert (g["count"], g["warmup"], g["steady"]) == (
                it["count"],
                it["warmup"],
                it["steady"],
            )
            out = tmp_path / f"{name}.json"
            result = _invoke("export", "perfetto", spec, "-o", str(out), "-q")
            assert result.exit_code == 0, result.output
            trace = json.loads(out.read_text())
            events = trace["traceEvents"] if isinstance(trace, dict) else trace
            rules = [e["args"]["rule"] for e in events if "rule" in (e.get("args") or {})]
            assert sorted(set(rules)) == sorted({f["rule"] for f in run["findings"]}), name


def test_fleet_builds_the_runs_analyze_reports(group, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from dnnlens.fleet.dataset import Dataset

    _, paths, runs = group
    out = tmp_path / "ds"
    result = _invoke("fleet", "build", *paths, "-o", str(out), "-w", "1", "-q")
    assert result.exit_code == 0, result.output
    ds = Dataset.open(out)
    rows = ds.read("runs").to_pylist()
    assert len(rows) == len(runs)
    by_inputs = {tuple(sorted(r["inputs"])): r for r in rows}
    findings = ds.read("findings").to_pylist()
    for run in runs:
        row = by_inputs[tuple(sorted(run["run_paths"]))]
        it = run["iterations"]
        assert (row["iterations"], row["warmup_iterations"], row["steady_iterations"]) == (
            it["count"],
            it["warmup"],
            it["steady"],
        ), run["run_name"]
        mine = sorted(
            (f["position"], f["rule"], f["severity"], f["share_of_iteration"])
            for f in findings
            if f["run"] == row["run"]
        )
        assert [(r, s) for _, r, s, _ in mine] == [
            (f["rule"], f["severity"]) for f in run["findings"]
        ]
        shares = [f.get("share_of_basis") for f in run["findings"]]
        assert [x for *_, x in mine] == pytest.approx(shares, nan_ok=True), run["run_name"]


def test_a_directory_of_runs_is_not_blended_into_one_side() -> None:
    """``diff DIR DIR`` compares one run with one: a side that analyze splits into runs is
    refused with their names (it was one blended analysis), ``--combine`` joins them."""
    producers = str(S / "producers")
    result = _invoke("diff", producers, producers, "-q")
    assert result.exit_code == 2
    assert "BASE" in result.stderr and "holds 9 runs (openvino_cnn_f32_infer.log" in result.stderr
    assert "--combine" in result.stderr
    combined = _invoke("diff", producers, producers, "--combine", "-q", "-f", "json")
    assert combined.exit_code == 0, combined.output
    assert json.loads(combined.stdout)["base"]["path"]


def test_project_and_graph_refuse_several_runs() -> None:
    producers = str(S / "producers")
    for args in (("project", producers), ("graph", producers)):
        result = _invoke(*args)
        assert result.exit_code == 2, args
        assert "holds 9 runs" in result.stderr and "--combine" not in result.stderr


def test_the_table_export_has_the_runs_and_passes_analyze_has(group, tmp_path: Path) -> None:
    """``export csv`` of the same inputs writes one ``run=`` partition per run analyze shows
    (a trace's ops under its log's run), and each run's events carry the passes analyze
    counts, warm-up included (the export looks at every event; these logs are within
    analyze's window, so the two are the same)."""
    pytest.importorskip("pyarrow")
    import pandas as pd

    _, paths, runs = group
    out = tmp_path / "tables"
    result = _invoke("export", "csv", *paths, "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    event_runs = sorted(p.name.split("=", 1)[1] for p in (out / "events").glob("run=*"))
    with_events = [r for r in runs if r["summary"]["exec_count"] + r["summary"]["create_count"]]
    assert len(event_runs) == len(with_events)
    for run in with_events:
        it = run["iterations"]
        stem = Path(run["run_name"]).name
        for suffix in (".gz", ".json", ".log", ".txt"):
            stem = stem.removesuffix(suffix)
        parts = [pd.read_csv(f) for f in (out / "events" / f"run={stem}").glob("rank=*/*.csv")]
        frame = pd.concat(parts)
        execs = frame[(frame["operation"] == "exec") & (frame["iteration"] >= 0)]
        assert execs["iteration"].nunique() == it["count"], run["run_name"]
        steady = execs[execs["steady"]]["iteration"].nunique()
        assert steady == it["steady"], run["run_name"]
    ops = sorted(p.name.split("=", 1)[1] for p in (out / "ops").glob("run=*"))
    assert set(ops) <= set(event_runs) | {
        Path(r["run_name"]).name.removesuffix(".gz").removesuffix(".json")
        for r in runs
        if not r["summary"]["exec_count"] + r["summary"]["create_count"]
    }
