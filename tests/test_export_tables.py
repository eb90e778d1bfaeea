"""Parquet / CSV export: one dataset partitioned by run and rank."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.model import EVENT_COLUMNS
from dnnlens.reading import load
from dnnlens.report.tables_export import ExportError, run_name
from dnnlens.report.tables_export import export_tables as _export_runs
from torchrun_log import HAND_COUNTS, LINES, torchrun_log

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
CL = str(LOGS / "convnet_cl_infer.log")

LINE = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,"
    "src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0,,,2x16x7x7,{t}"
)


def export_tables(log, out_dir, fmt):
    """The export of ``log``'s runs as ``dnnlens export`` makes it: the runs and analyses
    of the session (every event, no rules)."""
    from dnnlens.app.session import Settings, run_analyses

    analyses, runs = run_analyses(log, Settings(window=0))
    return _export_runs(analyses, runs, out_dir, fmt)


def _read_csv_dataset(root: Path) -> pd.DataFrame:
    parts = []
    for path in sorted(root.glob("run=*/rank=*/part-0.csv")):
        df = pd.read_csv(path)
        df["run"] = path.parent.parent.name.split("=", 1)[1]
        df["rank"] = int(path.parent.name.split("=", 1)[1])
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def test_csv_two_runs(tmp_path):
    log = load([NCHW, CL])
    result = export_tables(log, tmp_path, "csv")
    assert result.runs == ["convnet_nchw_infer", "convnet_cl_infer"]
    assert sorted(str(p.relative_to(tmp_path)) for p in result.files) == [
        "events/run=convnet_cl_infer/rank=0/part-0.csv",
        "events/run=convnet_nchw_infer/rank=0/part-0.csv",
    ]
    df = _read_csv_dataset(tmp_path / "events")
    assert len(df) == len(log.events) == result.rows
    assert set(EVENT_COLUMNS) | {"iteration"} <= set(df.columns)
    execs = df[(df["operation"] == "exec")]
    totals = execs.groupby("run")["time_ms"].sum()
    assert totals["convnet_nchw_infer"] == pytest.approx(356.084723, abs=1e-5)
    assert totals["convnet_cl_infer"] == pytest.approx(180.342063, abs=1e-5)
    assert execs.groupby("run")["iteration"].nunique().to_dict() == {
        "convnet_cl_infer": 11,
        "convnet_nchw_infer": 11,
    }


def test_parquet_dataset(tmp_path):
    log = load([NCHW, CL])
    export_tables(log, tmp_path, "parquet")
    df = pd.read_parquet(tmp_path / "events")  # hive partitions become columns
    assert {"run", "rank"} <= set(df.columns)
    assert len(df) == len(log.events)
    execs = df[df["operation"] == "exec"]
    got = execs.groupby("run", observed=True)["time_ms"].sum()
    assert got["convnet_nchw_infer"] == pytest.approx(356.084723, abs=1e-5)
    assert df["kind"].astype(str).isin(["reorder", "convolution"]).all()


def test_ranks_from_prefixes(tmp_path):
    log_path = tmp_path / "ddp.log"
    log_path.write_text(
        "\n".join(
            [
                "[rank0]:" + LINE.format(t="1.0"),
                "[rank1]:" + LINE.format(t="2.0"),
                "some program output",
                "[rank1]:" + LINE.format(t="3.0"),
                "[rank0]:" + LINE.format(t="4.0"),
            ]
        )
        + "\n"
    )
    result = export_tables(load([str(log_path)]), tmp_path / "out", "csv")
    assert sorted(str(p.relative_to(tmp_path / "out")) for p in result.files) == [
        "events/run=ddp/rank=0/part-0.csv",
        "events/run=ddp/rank=1/part-0.csv",
    ]
    df = _read_csv_dataset(tmp_path / "out" / "events")
    assert df.groupby("rank")["time_ms"].sum().to_dict() == {0: 5.0, 1: 5.0}
    assert df.sort_values("line")["rank"].tolist() == [0, 1, 1, 0]


def test_no_rank_prefix_is_rank_zero(tmp_path):
    log_path = tmp_path / "plain.log.gz"
    import gzip

    with gzip.open(log_path, "wt") as fh:
        fh.write("> " + LINE.format(t="1.5") + "\n")
    result = export_tables(load([str(log_path)]), tmp_path / "o", "csv")
    assert [str(p.relative_to(tmp_path / "o")) for p in result.files] == [
        "events/run=plain/rank=0/part-0.csv"
    ]


def test_run_names():
    seen: set[str] = set()
    assert run_name("a/b/train.log", seen) == "train"
    assert run_name("c/train.log.gz", seen) == "train-2"
    assert run_name("-", seen) == "stdin"
    assert run_name("x/we=ird name.txt", seen) == "we_ird_name"


def test_unknown_format(tmp_path):
    with pytest.raises(ExportError):
        export_tables(load([NCHW]), tmp_path, "xlsx")


def test_cli_csv(tmp_path):
    result = CliRunner().invoke(app, ["export", "csv", NCHW, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "events" / "run=convnet_nchw_infer" / "rank=0" / "part-0.csv").is_file()
    assert "wrote 330 events of 1 run(s)" in result.stderr


def test_cli_parquet(tmp_path):
    result = CliRunner().invoke(app, ["export", "parquet", NCHW, CL, "-o", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert len(pd.read_parquet(tmp_path / "events")) == 330 + 176


def test_profiler_ops_join_the_log_run(tmp_path):
    trace = LOGS / "profile_nchw_infer.trace.json"
    log = load([str(LOGS / "profile_nchw_infer.log"), str(trace)])
    assert log.framework is not None and len(log.framework.traces) == 1  # the trace was read
    result = export_tables(log, tmp_path, "csv")
    names = sorted(str(p.relative_to(tmp_path)) for p in result.files)
    assert names == [
        "events/run=profile_nchw_infer/rank=0/part-0.csv",
        "ops/run=profile_nchw_infer/rank=0/part-0.csv",
    ]
    ops = pd.read_csv(tmp_path / names[1])
    assert len(ops) == len(log.framework.traces[0].ops) and "name" in ops.columns


def test_iterations_are_numbered_per_run(tmp_path):
    """Each run is analysed alone: both logs (11 passes each, ``done: ... passes=11`` at
    their end) number their iterations 0..10; the second is not 11..21."""
    export_tables(load([NCHW, CL]), tmp_path, "parquet")
    df = pd.read_parquet(tmp_path / "events")
    execs = df[df["operation"] == "exec"]
    by_run = execs.groupby("run", observed=True)["iteration"].agg(["min", "max"])
    assert by_run.to_dict("index") == {
        "convnet_cl_infer": {"min": 0, "max": 10},
        "convnet_nchw_infer": {"min": 0, "max": 10},
    }


def test_missing_values_are_null(tmp_path):
    """A field the line did not print is NULL, not an empty string. Hand counts of
    convnet_nchw_infer.log: ``grep -c ',exec,'`` 165 exec lines (no cache state),
    ``grep -c ',reorder,'`` 242 reorder lines (empty aux field), no timestamps."""
    export_tables(load([NCHW]), tmp_path, "parquet")
    table = pq.read_table(tmp_path / "events" / "run=convnet_nchw_infer" / "rank=0")
    assert table.num_rows == 330
    assert table.column("cache").null_count == 165
    assert table.column("aux").null_count == 242
    assert table.column("timestamp_ms").null_count == 330
    assert "" not in set(table.column("cache").to_pylist())


def test_memory_descriptors_split_per_argument(tmp_path):
    """``<arg>_dtype``/``<arg>_layout`` per argument. Hand counts of convnet_nchw_infer.log
    (``grep ',exec,' | grep ',reorder,' | awk -F, '{print $9}' | sort | uniq -c``): 33 exec
    reorders abcd->aBcd8b; 88 convolution lines (``grep -c ',convolution,'``) with a weight,
    66 of them ABcd8b8a; the bias is ``bia:undef`` everywhere (absent: NULL)."""
    export_tables(load([NCHW]), tmp_path, "parquet")
    df = pd.read_parquet(tmp_path / "events")
    assert {"src_dtype", "src_layout", "wei_layout", "bia_dtype", "dst_layout"} <= set(df.columns)
    execs = df[(df["operation"] == "exec") & (df["kind"] == "reorder")]
    flows = execs.groupby(["src_layout", "dst_layout"], observed=True).size()
    assert flows[("abcd", "aBcd8b")] == 33
    assert (df["wei_layout"].notna() == (df["kind"] == "convolution")).all()
    assert (df["wei_layout"] == "ABcd8b8a").sum() == 66
    assert df["bia_dtype"].isna().all() and df["bia_layout"].isna().all()
    assert set(df["src_dtype"].astype(str)) == {"f32"}
    assert df["mds"].notna().all()  # the field as printed stays


def test_md_columns_of_one_field():
    from dnnlens.parsers.memdesc import parse_mds
    from dnnlens.report.tables_export import md_args, md_columns

    mds = parse_mds(
        "src:f32:a:blocked:abcd::f0 wei:bf16::blocked:Acdb8a::f0 bia:undef::undef::: "
        "dst:f32:a:any:any::f0"
    )
    assert md_args([mds, parse_mds("diff_dst:f32::blocked:ab::f0")]) == [
        "src",
        "wei",
        "bia",
        "dst",
        "diff_dst",
    ]
    assert md_columns(mds, ["src", "wei", "bia", "dst", "diff_dst"]) == {
        "src_dtype": "f32",
        "src_layout": "abcd",
        "wei_dtype": "bf16",
        "wei_layout": "Acdb8a",
        "bia_dtype": None,
        "bia_layout": None,
        "dst_dtype": "f32",
        "dst_layout": "any",
        "diff_dst_dtype": None,
        "diff_dst_layout": None,
    }


def test_ranks_are_kept_by_the_reader(tmp_path):
    """The ranks are the reader's: a prefixed log whose file is gone after reading keeps
    them (the input is not read again), and says nothing about it."""
    log_path = tmp_path / "ddp.log"
    log_path.write_text("[rank1]:" + LINE.format(t="1.0") + "\n")
    log = load([str(log_path)])
    log_path.unlink()
    result = export_tables(log, tmp_path / "out", "csv")
    assert [str(p.relative_to(tmp_path / "out")) for p in result.files] == [
        "events/run=ddp/rank=1/part-0.csv"
    ]
    assert result.notes == []


def test_prefixes_without_a_rank_are_rank_zero_and_a_note(tmp_path):
    """Prefixed event lines none of which names a rank (``[rank 1]``, a rank of 10 digits):
    rank 0, and the export says so."""
    log_path = tmp_path / "odd.log"
    log_path.write_text(
        "[rank 1] " + LINE.format(t="1.0") + "\n[rank1234567890]:" + LINE.format(t="2.0") + "\n"
    )
    result = export_tables(load([str(log_path)]), tmp_path / "out", "csv")
    assert [str(p.relative_to(tmp_path / "out")) for p in result.files] == [
        "events/run=odd/rank=0/part-0.csv"
    ]
    assert result.notes == [f"{log_path}: no event line has a [rankN] prefix; rank=0"]


def _per_rank(events: Path) -> dict[int, tuple[int, int, float]]:
    """rank -> (event rows, exec rows, exec time) of a CSV dataset's events."""
    df = _read_csv_dataset(events)
    execs = df[df["operation"] == "exec"]
    return {
        rank: (
            int((df["rank"] == rank).sum()),
            int((execs["rank"] == rank).sum()),
            round(float(execs.loc[execs["rank"] == rank, "time_ms"].sum()), 6),
        )
        for rank in sorted(set(df["rank"]))
    }


HAND = {rank: (events, execs, ms) for rank, (_, events, execs, ms) in HAND_COUNTS.items()}


@pytest.fixture
def torchrun_file(tmp_path) -> Path:
    path = tmp_path / "ddp.log"
    path.write_text(torchrun_log())
    return path


def test_torchrun_ranks_from_a_file(torchrun_file, tmp_path):
    """Rows per rank of a two-rank torchrun log equal its hand counts (tests/torchrun_log.py)."""
    log = load([str(torchrun_file)])
    assert log.scans[0].lines == LINES
    assert log.scans[0].prefixed == sum(lines for lines, *_ in HAND_COUNTS.values()) - 2
    result = export_tables(log, tmp_path / "out", "csv")
    assert result.notes == []
    assert _per_rank(tmp_path / "out" / "events") == HAND


def test_torchrun_ranks_from_stdin(torchrun_file, tmp_path):
    """Standard input, read once, has its ranks too."""
    with open(torchrun_file, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "dnnlens", "export", "csv", "-", "-o", str(tmp_path / "out")],
            stdin=stdin,
            capture_output=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert b"[rankN]" not in done.stderr  # no note about ranks
    assert _per_rank(tmp_path / "out" / "events") == HAND
    assert (tmp_path / "out" / "events" / "run=stdin" / "rank=1").is_dir()


@pytest.mark.parametrize("streamed", [False, True], ids=["kept", "streamed"])
def test_torchrun_ranks_with_two_workers(torchrun_file, tmp_path, monkeypatch, streamed):
    """``-j 2`` over ranges of about 4 KB (their events merged, or folded in the workers
    with a window that holds them all): the same rows per rank."""
    import dnnlens.reading.parallel as parallel
    import dnnlens.reading.stream as stream
    from dnnlens.reading import read

    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    monkeypatch.setattr(parallel, "WARM_BYTES", 2_000)
    monkeypatch.setattr(parallel, "RANGE_BYTES", 4_000)
    monkeypatch.setattr(parallel, "FOLDED_RANGE_BYTES", 4_000)
    monkeypatch.setattr(parallel, "PART_BYTES", 1_500)
    if streamed:
        monkeypatch.setattr(stream, "STREAM_FILE_MIN_BYTES", 1)
    log = read([str(torchrun_file)], window_events=10_000, jobs=2)
    assert (log.window is not None) == streamed
    export_tables(log, tmp_path / "out", "csv")
    assert _per_rank(tmp_path / "out" / "events") == HAND
