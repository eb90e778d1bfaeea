"""A fleet of sixteen real runs built on a Dask LocalCluster of two workers, every table
checked against the single-process analysis of the same logs, and ``fleet diff`` finding
the slowed copy (and that doubling is within the sample's own noise).

The logs are copies of the sample logs with their runs varied (``test_fleet_logs.py``):
four workloads, three copies each, two two-rank jobs, a copy with every time doubled and
a log with no oneDNN line. The cluster runs its workers as threads of this process (its
start costs nothing); ``test_real_worker_processes`` builds a few runs with worker
processes, as ``fleet build`` does by default.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.fleet.dataset import Dataset
from dnnlens.fleet.rows import RunFile, RunIdentity, run_tables
from dnnlens.fleet.schema import TABLES
from dnnlens.reading import load
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules
from test_fleet_logs import BASES, COPIES, SLOW_FACTOR, make_fleet

distributed = pytest.importorskip("distributed")
pytest.importorskip("duckdb")

SLOW = "convnet_nchw_infer-slow"
BASELINE = "convnet_nchw_infer-00"


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False},
        worker_dashboard_address=None,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, dict[str, list[Path]]]:
    root = tmp_path_factory.mktemp("fleet")
    return root, make_fleet(root / "logs")


@pytest.fixture(scope="module")
def built(fleet, cluster) -> tuple[Path, Any]:
    """The dataset, built through the command line on the cluster (``--scheduler``)."""
    root, _ = fleet
    out = root / "dataset"
    result = invoke(
        "fleet", "build", str(root / "logs" / "*" / "*"), "-o", str(out),
        "--group-by", "directory", "--scheduler", cluster.scheduler_address,
    )  # fmt: skip
    return out, result


@pytest.fixture(scope="module")
def reference(fleet) -> dict[str, Analysis]:
    """Each run analysed alone in this process, as ``dnnlens analyze FILES`` does."""
    _, runs = fleet
    out = {}
    for run, files in runs.items():
        if run == "broken" or run.endswith("-01"):  # -01: as -02, another near copy
            continue
        analysis = Analysis(load(sorted(str(f) for f in files)))
        apply_rules(analysis.prepare(), RuleOptions(search_config=False))
        out[run] = analysis
    return out


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    return result


def rows(dataset: Path, table: str) -> dict[str, list[dict[str, Any]]]:
    """The table's rows per run."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in Dataset.open(dataset).read(table).to_pylist():
        out.setdefault(row["run"], []).append(row)
    return out


def same(a: Any, b: Any) -> bool:
    """Equal, NULL standing for NaN (the dataset has no NaN)."""
    if isinstance(b, float) and math.isnan(b):
        return a is None
    return a == b


# -- the build ------------------------------------------------------------------------------


def test_the_failed_run_is_reported_and_the_others_are_built(built, fleet) -> None:
    out, result = built
    _, runs = fleet
    assert result.exit_code == 2, result.stderr
    assert "run broken: " in result.stderr and "no oneDNN verbose line" in result.stderr
    assert "15 run(s) written, 0 skipped (already in the dataset), 1 failed" in result.stderr
    assert "Dask at inproc://" in result.stderr
    assert Dataset.open(out).run_names() == sorted(r for r in runs if r != "broken")


def test_runs_equal_the_single_process_analysis(built, fleet, reference) -> None:
    out, _ = built
    _, runs = fleet
    table = rows(out, "runs")
    for run, a in reference.items():
        (row,) = table[run]
        files = sorted(str(f) for f in runs[run])
        header = a.log.scans[0].header
        assert row["inputs"] == files and row["input_count"] == len(files)
        digests = [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files]
        assert row["content_hash"] == hashlib.sha256("\n".join(digests).encode()).hexdigest()
        assert row["input_bytes"] == sum(Path(f).stat().st_size for f in files)
        assert row["exec_count"] == a.summary.exec_count
        assert row["total_time_ms"] == a.summary.total_time_ms
        assert row["create_count"] == a.summary.create_count
        assert row["typical_iteration_ms"] == a.typical_iteration_ms
        assert row["iterations"] == a.steady.passes
        assert row["steady_iterations"] == a.steady.divisor
        assert row["warmup_iterations"] == a.steady.warmup_left_out
        assert row["reorder_ms_per_iteration"] == a.reorder_part.ms
        assert row["lines"] == sum(s.lines for s in a.log.scans)
        assert (row["isa"], row["threads"], row["onednn_version"]) == (
            header.isa, header.threads, header.version,
        )  # fmt: skip
        assert row["finding_count"] == len(a.findings)
        assert row["warning_findings"] == sum(f.severity == "warning" for f in a.findings)
        assert row["window_events_total"] is None  # every log is smaller than the window
        assert row["schema_version"] == "2.1"


def test_hand_counts_of_the_varied_runs(built) -> None:
    """convnet_nchw_infer.log: 165 exec lines (``grep -c ',exec,'``); convnet_cl_infer.log:
    183 verbose lines (``grep -c onednn_verbose``), each prefixed in a rank file; the slowed
    copy's typical iteration is exactly twice the original's (every time doubled)."""
    out, _ = built
    runs = {r["run"]: r for r in Dataset.open(out).read("runs").to_pylist()}
    assert runs[BASELINE]["exec_count"] == runs[SLOW]["exec_count"] == 165
    assert (
        runs[SLOW]["typical_iteration_ms"] == SLOW_FACTOR * runs[BASELINE]["typical_iteration_ms"]
    )
    assert runs[SLOW]["total_time_ms"] == SLOW_FACTOR * runs[BASELINE]["total_time_ms"]
    assert runs[SLOW]["workload"] == runs[BASELINE]["workload"]
    assert len({runs[f"{b}-00"]["workload"] for b in BASES}) == len(BASES)
    inputs = rows(out, "inputs")["ddp-0"]
    assert [Path(i["path"]).name for i in inputs] == ["rank0.log", "rank1.log"]
    assert [i["prefixed_lines"] for i in inputs] == [183, 183]
    assert runs["ddp-0"]["exec_count"] == 2 * runs["convnet_cl_infer-00"]["exec_count"]


def test_primitives_equal_the_single_process_analysis(built, reference) -> None:
    out, _ = built
    table = rows(out, "primitives")
    for run, a in reference.items():
        record_of = {p["example"]: p["record"] for p in a.primitives}  # its first line
        got = {record_of[r["example"]]: r for r in table[run]}
        assert len(got) == len(table[run]) == len(a.primitives)
        stats = a.steady_stats
        for rid, row in got.items():
            record = a.log.records[rid]
            assert (row["kind"], row["impl"], row["problem"], row["mds"]) == (
                record.kind,
                record.impl or None,
                record.problem or None,
                record.mds or None,
            )  # fmt: skip (an empty field is NULL)
            assert row["exec_count"] == a.record_totals.loc[rid, "count"]
            assert row["total_time_ms"] == a.record_totals.loc[rid, "time_ms"]
            assert row["ms_per_iteration"] == a.typical.by_record.get(rid, 0.0)
            if rid in stats.index:
                assert row["median_ms"] == stats.loc[rid, "median_ms"]
                assert row["p95_ms"] == stats.loc[rid, "p95_ms"]
                assert row["steady_exec_count"] == stats.loc[rid, "count"]
            else:
                assert row["median_ms"] is None and row["steady_exec_count"] == 0
            doc = next(p for p in a.primitives if p["record"] == rid)
            assert same(row["flops_per_exec"], doc["flops"])
            assert same(row["gflop_per_s"], doc["gflops"])


def test_findings_equal_the_single_process_analysis(built, reference) -> None:
    out, _ = built
    table = rows(out, "findings")
    for run, a in reference.items():
        got = sorted(table.get(run, []), key=lambda r: r["position"])
        assert [
            (r["rule"], r["severity"], r["message"], r["impact_ms_per_iteration"]) for r in got
        ] == [(f.rule, f.severity, f.message, f.impact_ms_per_iteration) for f in a.findings]
        for r, f in zip(got, a.findings, strict=True):
            assert r["evidence"] == [{"path": e.path, "line": e.line} for e in f.evidence]
            assert json.loads(r["data_json"]) == json.loads(json.dumps(f.data))


def test_iterations_equal_the_single_process_analysis(built, reference) -> None:
    out, _ = built
    table = rows(out, "iterations")
    for run, a in reference.items():
        got = sorted(table[run], key=lambda r: r["iteration"])
        times = a.steady.times
        assert [r["iteration"] for r in got] == list(range(len(times)))  # per run, from 0
        assert [(r["time_ms"], r["reorder_ms"], r["steady"], r["input"]) for r in got] == [
            (t.time_ms, t.reorder_ms, bool(t.steady), t.input) for t in times.itertuples()
        ]


def test_every_table_equals_the_rows_of_the_single_process_analysis(built, reference) -> None:
    """Run on the cluster or here, a run's rows are the same, to the bit."""
    out, _ = built
    dataset = Dataset.open(out)
    written = {r["run"]: r for r in dataset.read("runs").to_pylist()}
    files = {r["run"]: [] for r in written.values()}
    for row in dataset.read("inputs").to_pylist():
        files[row["run"]].append(row)
    for run in (BASELINE, SLOW, "ddp-1", "lstm_infer-02"):
        identity = RunIdentity(
            run,
            written[run]["content_hash"],
            tuple(
                RunFile(i["path"], i["size_bytes"], i["sha256"], Path(i["path"]).stat().st_mtime)
                for i in sorted(files[run], key=lambda i: i["position"])
            ),
        )
        expected = run_tables(reference[run], identity)
        for table in TABLES:
            whole = dataset.read(table)
            got = whole.filter(pc.equal(whole["run"], run))
            assert got.equals(expected[table]), (run, table)


# -- what comes after a build -----------------------------------------------------------------


def test_fleet_diff_cannot_tell_the_doubled_copy_from_noise(built) -> None:
    """The slowed copy is 100% slower by its typical iteration, but the NCHW sample's steady
    passes take 1.99 to 4.26 ms (tests/test_diff_confidence.py) and the copy's 3.98 to
    8.52 ms: the ranges overlap, so the gate cannot decide (exit 2, one line), and its
    primitives are informational. The near copies (x1.001, x1.002) pass."""
    out, _ = built
    result = invoke("fleet", "diff", str(out), "--baseline", BASELINE, "--format", "json")
    assert result.exit_code == 2, result.stderr
    doc = json.loads(result.stdout)
    assert doc["compared"] == sorted(
        [f"convnet_nchw_infer-{k:02d}" for k in range(1, COPIES)] + [SLOW]
    )
    assert [(r["run"], r["change"]) for r in doc["slower_runs"]] == [(SLOW, 1.0)]
    assert {r["run"]: r["gate"] for r in doc["runs"]} == {
        "convnet_nchw_infer-01": "pass", "convnet_nchw_infer-02": "pass", SLOW: "refused",
    }  # fmt: skip
    slow = doc["slower_runs"][0]["confidence"]
    assert slow["level"] == "low" and "within the noise" in slow["reason"]
    assert slow["new_range_ms"] == [2 * t for t in slow["base_range_ms"]]  # x2 is exact
    assert {p["run"] for p in doc["slower_primitives"]} == {SLOW}
    assert all(p["change"] == 1.0 and p["informational"] for p in doc["slower_primitives"])
    assert doc["gate"] == "refused" and doc["slower"] is False
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"cannot decide on 1 run(s): {SLOW}:" in result.stderr


def test_fleet_diff_without_the_slowed_copy_passes(built) -> None:
    out, _ = built
    result = invoke(
        "fleet", "diff", str(out), "--baseline", BASELINE, "--run", "convnet_nchw_infer-0*"
    )
    assert result.exit_code == 0, result.stderr
    assert "Gate pass: no run is slower than the baseline by more than 5%" in result.stdout


def test_a_second_build_skips_every_run_it_has(built, fleet, cluster) -> None:
    out, _ = built
    root, _ = fleet
    result = invoke(
        "fleet", "build", str(root / "logs" / "*" / "*"), "-o", str(out),
        "--group-by", "directory", "--scheduler", cluster.scheduler_address,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr  # the broken run is a known failure
    assert "0 run(s) written, 15 skipped (already in the dataset), 0 failed" in result.stderr
    assert "1 known failure(s) skipped" in result.stderr


def test_real_worker_processes(fleet, built, tmp_path) -> None:
    """``--workers 2`` starts a LocalCluster of two worker processes; their rows are the
    rows the threads wrote (a cluster build publishes runs that end together as one group,
    in the order they ended: the rows compared run by run)."""
    root, _ = fleet
    out, _ = built
    picked = [root / "logs" / run for run in (BASELINE, SLOW, "ddp-0")]
    result = invoke(
        "fleet", "build", *(str(p / "*") for p in picked), "-o", str(tmp_path / "ds"),
        "--group-by", "directory", "--workers", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "3 run(s) written" in result.stderr and "(2 worker(s))" in result.stderr
    mine, theirs = Dataset.open(tmp_path / "ds"), Dataset.open(out)
    names = pa.array([p.name for p in picked])
    for table in TABLES:
        whole = theirs.read(table).sort_by("run")  # a stable sort: a run's rows in order
        wanted = whole.filter(pc.is_in(whole["run"], names))
        assert mine.read(table).sort_by("run").equals(wanted), table


def test_byte_ranges_of_a_large_file_on_the_cluster(cluster, tmp_path) -> None:
    """resnet18_nchw_train.log (933,189 bytes) in 200 kB ranges, scanned by five tasks on
    the workers and merged by a sixth: the rows of the file read whole in this process."""
    from dnnlens.fleet.build import BuildOptions, build_dataset, plan
    from dnnlens.fleet.dataset import Settings
    from dnnlens.fleet.engine import DaskEngine, SerialEngine
    from test_fleet_logs import SAMPLE_LOGS

    specs, _ = plan([str(SAMPLE_LOGS / "resnet18_nchw_train.log")], BuildOptions(Settings(200_000)))
    whole = BuildOptions(Settings(200_000))
    build_dataset(specs, tmp_path / "whole", whole, SerialEngine())
    with distributed.Client(cluster) as client:
        split = BuildOptions(Settings(200_000), split_bytes=200_000)
        result = build_dataset(specs, tmp_path / "split", split, DaskEngine(client))
    assert [r.status for r in result.runs] == ["written"]
    for table in TABLES:
        got = Dataset.open(tmp_path / "split").read(table)
        assert got.equals(Dataset.open(tmp_path / "whole").read(table)), table


def test_a_run_that_raises_on_the_cluster_fails_alone(
    cluster, fleet, tmp_path, monkeypatch
) -> None:
    """The workers are threads of this process, so the patched function is theirs too."""
    from dnnlens.fleet import work
    from dnnlens.fleet.build import BuildOptions, build_dataset, plan
    from dnnlens.fleet.dataset import Settings
    from dnnlens.fleet.engine import DaskEngine

    real = work.run_tables

    def broken(analysis, identity):  # noqa: ANN001, ANN202
        if identity.name == SLOW:
            raise RuntimeError("a bug")
        return real(analysis, identity)

    monkeypatch.setattr(work, "run_tables", broken)
    root, _ = fleet
    options = BuildOptions(Settings(200_000), group="directory")
    paths = [str(root / "logs" / run / "*") for run in (BASELINE, SLOW)]
    specs, _ = plan(paths, options)
    with distributed.Client(cluster) as client:
        result = build_dataset(specs, tmp_path / "ds", options, DaskEngine(client))
    assert [(r.name, r.status, r.internal) for r in result.runs] == [
        (BASELINE, "written", False),
        (SLOW, "failed", True),
    ]
    assert result.runs[1].message == "internal error: RuntimeError: a bug"
