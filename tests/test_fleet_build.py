"""``fleet build`` in this process (``--workers 1``): runs, names, NULLs, settings, failures,
byte ranges, progress. The logs are the sample logs and scaled copies of them
(``test_fleet_logs.py``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dnnlens.fleet import work
from dnnlens.fleet.build import BuildOptions, RunReport, build_dataset, plan
from dnnlens.fleet.dataset import Dataset, Settings
from dnnlens.fleet.engine import SMALL_BUILD_BYTES, SerialEngine, choose_engine
from dnnlens.fleet.progress import BuildProgress
from dnnlens.fleet.schema import TABLES
from test_fleet_logs import SAMPLE_LOGS, build, invoke, write_copy

NCHW = SAMPLE_LOGS / "convnet_nchw_infer.log"


def test_each_log_is_a_run_and_a_trace_joins_its_log(tmp_path: Path) -> None:
    for name in ("profile_nchw_infer.log", "profile_nchw_infer.trace.json", "lstm_infer.log"):
        shutil.copy(SAMPLE_LOGS / name, tmp_path / name)
    out = tmp_path / "ds"
    result = build(str(tmp_path / "*.*"), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    dataset = Dataset.open(out)
    assert dataset.run_names() == ["lstm_infer", "profile_nchw_infer"]
    inputs = [r for r in dataset.read("inputs").to_pylist() if r["run"] == "profile_nchw_infer"]
    assert [Path(r["path"]).name for r in inputs] == [
        "profile_nchw_infer.log",
        "profile_nchw_infer.trace.json",
    ]
    # the trace is not a log: no line accounting (NULL), its size and hash all the same
    assert inputs[0]["lines"] == 100 and inputs[1]["lines"] is None
    assert inputs[1]["size_bytes"] == (SAMPLE_LOGS / "profile_nchw_infer.trace.json").stat().st_size


def test_the_dataset_is_not_an_input_of_itself(tmp_path: Path) -> None:
    shutil.copy(NCHW, tmp_path / "a.log")
    for _ in range(2):  # the second time the glob reaches the dataset's own files
        result = build(str(tmp_path / "**" / "*"), "-o", str(tmp_path / "fleet"))
        assert result.exit_code == 0, result.stderr
    assert "0 run(s) written, 1 skipped" in result.stderr


def test_runs_of_one_name_are_told_apart_by_their_content(tmp_path: Path) -> None:
    a = write_copy(tmp_path / "a" / "train.log", "convnet_cl_infer", 1.0)
    b = write_copy(tmp_path / "b" / "train.log", "convnet_cl_infer", 1.001)
    out = tmp_path / "ds"
    assert build(str(a), str(b), "-o", str(out)).exit_code == 0
    hashes = {r["inputs"][0]: r for r in Dataset.open(out).read("runs").to_pylist()}
    for path in (a, b):
        row = hashes[str(path)]
        assert row["run"] == f"train-{row['content_hash'][:12]}"
    # a later train.log, alone of its name in its build and in the dataset, keeps it; the
    # next one finds the name taken
    c = write_copy(tmp_path / "c" / "train.log", "convnet_cl_infer", 1.002)
    assert build(str(c), "-o", str(out)).exit_code == 0
    e = write_copy(tmp_path / "e" / "train.log", "convnet_cl_infer", 1.004)
    assert build(str(e), "-o", str(out)).exit_code == 0
    runs = {r["inputs"][0]: r for r in Dataset.open(out).read("runs").to_pylist()}
    assert runs[str(c)]["run"] == "train"
    assert runs[str(e)]["run"] == f"train-{runs[str(e)]['content_hash'][:12]}"


def test_a_copy_with_the_same_content_is_the_same_run(tmp_path: Path) -> None:
    shutil.copy(NCHW, tmp_path / "one.log")
    shutil.copy(NCHW, tmp_path / "two.log")
    result = build(str(tmp_path / "one.log"), str(tmp_path / "two.log"), "-o", str(tmp_path / "ds"))
    assert result.exit_code == 0
    assert "1 run(s) written, 1 skipped" in result.stderr
    assert Dataset.open(tmp_path / "ds").run_names() == ["one"]


def test_missing_values_are_null(tmp_path: Path) -> None:
    """A log without a header (its ``info`` lines cut) has NULL versions and ISA; an exec
    line prints no cache state; findings that are not about time have no impact."""
    lines = [ln for ln in NCHW.read_text().splitlines() if ",info," not in ln]
    log = tmp_path / "noheader.log"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "ds"
    assert build(str(log), "-o", str(out)).exit_code == 0
    runs = pq.read_table(out / "runs" / "run-noheader.parquet")
    for column in ("onednn_version", "commit", "isa", "threads", "window_events_total"):
        assert runs.column(column).null_count == 1, column
    primitives = pq.read_table(out / "primitives" / "run-noheader.parquet").to_pylist()
    reorders = [p for p in primitives if p["kind"] == "reorder"]
    assert reorders and all(p["wei_dtype"] is None and p["bia_dtype"] is None for p in reorders)
    assert all(p["src_layout"] and p["dst_layout"] for p in reorders)
    convs = [p for p in primitives if p["kind"] == "convolution"]
    assert all(p["wei_layout"] and p["bia_layout"] is None for p in convs)
    for table in TABLES:  # no empty string stands for a missing value anywhere
        for row in Dataset.open(out).read(table).to_pylist():
            assert "" not in row.values(), (table, row)


def test_a_dataset_keeps_its_settings(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert build(str(NCHW), "-o", str(out), "--window", "1000").exit_code == 0
    result = build(str(SAMPLE_LOGS / "lstm_infer.log"), "-o", str(out))
    assert result.exit_code == 2
    assert "built with other settings (window_events: 1000 != 200000)" in result.stderr
    assert (
        build(str(SAMPLE_LOGS / "lstm_infer.log"), "-o", str(out), "--window", "1000").exit_code
        == 0
    )


def test_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    result = build(str(NCHW), "-o", str(tmp_path))
    assert result.exit_code == 2 and "exists and is not a fleet dataset" in result.stderr
    result = invoke("fleet", "query", str(tmp_path), "select 1")
    assert result.exit_code == 2 and "not a fleet dataset" in result.stderr


def test_usage_errors(tmp_path: Path) -> None:
    result = build(str(tmp_path / "nothing*.log"), "-o", str(tmp_path / "ds"))
    assert result.exit_code == 2 and "no file matches it" in result.stderr
    result = invoke("fleet", "build", str(NCHW), "-o", str(tmp_path), "-w", "2", "--scheduler", "x")
    assert result.exit_code == 2 and "give one" in result.stderr
    result = build(str(NCHW), "-o", str(tmp_path / "ds"), "--select", "no-such-rule")
    assert result.exit_code == 2 and "no-such-rule" in result.stderr


def test_an_unreadable_run_is_reported_and_the_others_are_built(tmp_path: Path) -> None:
    os.symlink(tmp_path / "gone.log", tmp_path / "dangling.log")
    shutil.copy(NCHW, tmp_path / "good.log")
    result = build(
        str(tmp_path / "dangling.log"), str(tmp_path / "good.log"), "-o", str(tmp_path / "ds")
    )
    assert result.exit_code == 2
    assert "run dangling.log" not in result.stderr  # a run not yet named shows its files
    assert "dangling.log: cannot read (No such file or directory)" in result.stderr
    assert "1 run(s) written, 0 skipped (already in the dataset), 1 failed" in result.stderr
    assert Dataset.open(tmp_path / "ds").run_names() == ["good"]


def test_a_bug_in_one_run_is_exit_3_and_the_others_are_built(tmp_path, monkeypatch) -> None:
    real = work.run_tables

    def broken(analysis, identity):  # noqa: ANN001, ANN202
        if identity.name == "lstm_infer":
            raise RuntimeError("a bug")
        return real(analysis, identity)

    monkeypatch.setattr(work, "run_tables", broken)
    result = build(str(NCHW), str(SAMPLE_LOGS / "lstm_infer.log"), "-o", str(tmp_path / "ds"))
    assert result.exit_code == 3
    assert "run lstm_infer: internal error: RuntimeError: a bug" in result.stderr
    assert Dataset.open(tmp_path / "ds").run_names() == ["convnet_nchw_infer"]


def test_a_large_file_in_byte_ranges_gives_the_same_rows(tmp_path: Path) -> None:
    """resnet18_nchw_train.log (933,189 bytes) in 200 kB ranges: five scans merged, the
    same rows as the file read whole."""
    log = SAMPLE_LOGS / "resnet18_nchw_train.log"
    specs, _ = plan([str(log)], BuildOptions(Settings(window_events=200_000)))
    tables = {}
    for split in (1 << 30, 200_000):
        options = BuildOptions(Settings(window_events=200_000), split_bytes=split)
        engine = _Counting()
        result = build_dataset(specs, tmp_path / str(split), options, engine)
        assert [r.status for r in result.runs] == ["written"]
        tables[split] = {t: Dataset.open(tmp_path / str(split)).read(t) for t in TABLES}
        assert engine.parts == (0 if split > log.stat().st_size else 5)
    for table in TABLES:
        assert tables[200_000][table].equals(tables[1 << 30][table]), table


class _Counting(SerialEngine):
    """A serial engine that counts the byte ranges it scans."""

    parts = 0

    def submit(self, key, fn, *args, parts=None):  # noqa: ANN001, ANN201
        self.parts += sum(len(p) for p in (parts or {}).values())
        super().submit(key, fn, *args, parts=parts)


def test_progress_lines_off_a_terminal(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr("dnnlens.fleet.progress.LINE_EVERY_S", 0.0)
    progress = BuildProgress(terminal=False)
    progress.start(2, 2_000_000)
    progress.advance(RunReport(("a.log",), "written", "a", size_bytes=1_000_000))
    progress.advance(RunReport(("b.log",), "failed", size_bytes=1_000_000))
    progress.close()
    out, err = capsys.readouterr()
    assert out == ""
    assert "dnnlens: progress: 1/2 runs, " in err and "dnnlens: progress: 2/2 runs, " in err
    assert " MB/s" in err


def test_small_builds_run_in_this_process() -> None:
    assert isinstance(choose_engine(None, None, SMALL_BUILD_BYTES - 1, 8), SerialEngine)
    assert isinstance(choose_engine(1, None, 1 << 40, 8), SerialEngine)
    assert isinstance(choose_engine(None, None, 1 << 40, 1), SerialEngine)


def test_the_command_line_stays_light() -> None:
    """dask, distributed, duckdb and pyarrow are imported by fleet commands only."""
    import subprocess
    import sys

    code = (
        "import sys, dnnlens.cli; "
        "print(sorted(m for m in ('dask', 'distributed', 'duckdb', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    help_text = invoke("--help").stdout
    assert " fleet " in help_text


def test_a_scheduler_that_does_not_answer_is_one_line() -> None:
    """In a process of its own: a client that failed to connect leaves Dask's event loop
    in a state where a cluster started next in the same process may not start."""
    import subprocess
    import sys

    pytest.importorskip("distributed")
    code = """
from dnnlens.fleet.engine import EngineError, scheduler_engine
for address in ("tcp://127.0.0.1:9", "nonsense"):
    try:
        scheduler_engine(address, timeout_s=0.5)
    except EngineError as exc:
        print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("--scheduler tcp://127.0.0.1:9: cannot connect (")
    assert lines[1] == (
        "--scheduler nonsense: cannot connect (missing port number in address 'nonsense')"
    )


def test_a_cluster_without_workers_is_one_line() -> None:
    distributed = pytest.importorskip("distributed")
    from dnnlens.fleet.engine import DaskEngine, EngineError

    with (
        distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c,
        distributed.Client(c) as client,
        pytest.raises(EngineError, match=r"no Dask worker joined the scheduler in 0.2 s"),
    ):
        DaskEngine(client, worker_wait_s=0.2)


def test_rule_files_run_on_every_run_as_analyze_runs_them(tmp_path: Path) -> None:
    """tests/rules/team_rules.yaml expects reorders-between-convs on convnet_nchw_infer.log
    (its first test case); the run's findings are those of analyze --rules with that file."""
    import json

    rules = str(Path(__file__).parent / "rules" / "team_rules.yaml")
    out = tmp_path / "ds"
    assert build(str(NCHW), "-o", str(out), "--rules", rules).exit_code == 0
    analyze = json.loads(invoke("analyze", str(NCHW), "--rules", rules, "-f", "json").stdout)
    rows = sorted(Dataset.open(out).read("findings").to_pylist(), key=lambda r: r["position"])
    assert [(r["rule"], r["message"]) for r in rows] == [
        (f["rule"], f["message"]) for f in analyze["findings"]
    ]
    assert "reorders-between-convs" in [r["rule"] for r in rows]
    result = build(str(SAMPLE_LOGS / "lstm_infer.log"), "-o", str(out))  # without the file
    assert result.exit_code == 2 and "rule_files" in result.stderr
