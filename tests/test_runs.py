"""Several inputs: separate runs unless they are parts of one (ranks, rotated logs)."""

from __future__ import annotations

import json
from pathlib import Path

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.runs import find_runs, group_runs, run_key, split_log
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW, CL = str(ROOT / "convnet_nchw_infer.log"), str(ROOT / "convnet_cl_infer.log")


def test_different_logs_are_different_runs() -> None:
    runs = group_runs([NCHW, CL])
    assert [r.paths for r in runs] == [(NCHW,), (CL,)]
    assert [r.how for r in runs] == ["file", "file"]


def test_ranks_and_rotations_are_one_run() -> None:
    ranks = ["job/train.rank0.log", "job/train.rank1.log", "job/other.log"]
    runs = group_runs(ranks)
    assert [(r.how, r.paths) for r in runs] == [
        ("ranks", ("job/train.rank0.log", "job/train.rank1.log")),
        ("file", ("job/other.log",)),
    ]
    assert run_key("rank_3/run.log") == run_key("rank_12/run.log")
    rotated = group_runs(["run.log", "run.log.1", "run.log.2.gz"])
    assert len(rotated) == 1 and rotated[0].how == "rotated"
    # version numbers in names are not ranks or rotations
    legacy = group_runs(["legacy/onednn-2.0.0.log", "legacy/onednn-2.2.0.log"])
    assert len(legacy) == 2


def test_combine_makes_one_run() -> None:
    (run,) = group_runs([NCHW, CL], combine=True)
    assert run.paths == (NCHW, CL) and run.how == "combined"


def test_split_gives_each_run_its_own_analysis() -> None:
    log = load([NCHW, CL])
    runs = group_runs([s.path for s in log.scans])
    parts = split_log(log, runs)
    alone = [Analysis(load([p])) for p in (NCHW, CL)]
    for part, one in zip(parts, alone, strict=True):
        a = Analysis(part)
        assert a.summary.exec_count == one.summary.exec_count
        assert a.typical_iteration_ms == one.typical_iteration_ms
        assert a.steady.passes == 11


def test_a_trace_goes_with_its_log() -> None:
    log = load([str(ROOT / "profile_nchw_infer.log"), str(ROOT / "profile_nchw_infer.trace.json"),
                NCHW])  # fmt: skip
    runs = find_runs(log)
    parts = split_log(log, runs)
    assert parts[0].framework is not None and parts[1].framework is None
    assert parts[0].framework.traces[0].path.endswith("profile_nchw_infer.trace.json")
    json.dumps([r.name for r in runs])
