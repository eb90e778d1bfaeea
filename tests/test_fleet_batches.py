"""Runs published together: a build on a cluster holds the runs that end within a second and
publishes them as one group (five files for all of them, not five each).

Dataset level: :meth:`Dataset.publish_many` with copies of one real run (the small pair
dataset's ``dispatch_only_infer``, as ``test_fleet_index`` makes them). Build level: an
engine that runs its tasks in this process but says it is remote, so the build batches as
it does on a cluster, with the three sample logs named below.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dnnlens.errors import OutputError
from dnnlens.fleet import build as build_module
from dnnlens.fleet.build import BuildOptions, build_dataset, plan
from dnnlens.fleet.dataset import Dataset, Pending, Settings
from dnnlens.fleet.engine import SerialEngine
from dnnlens.fleet.schema import TABLES
from test_fleet_index import copies, rows_of
from test_fleet_logs import SAMPLE_LOGS, invoke, small_dataset

pytest.importorskip("duckdb")

LOGS = [
    SAMPLE_LOGS / "dispatch_only_infer.log",
    SAMPLE_LOGS / "profile_lstm_infer.log",
    SAMPLE_LOGS / "convnet_nchw_infer.log",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory)


def pending(pair: Path, n: int, name: str | None = None) -> Pending:
    """Copy ``n`` of the run (content hash ``n``), under ``name`` (``copy-<n>``)."""
    run = name or f"copy-{n}"
    return Pending(run, f"{n:064x}", rows_of(pair, run, f"{n:064x}"), lambda taken: f"{run}-2")


def files(root: Path) -> dict[str, list[str]]:
    """Every table's files a reader sees."""
    return {t: sorted(p.name for p in (root / t).glob("[!.]*.parquet")) for t in TABLES}


def hidden(root: Path) -> list[str]:
    return sorted(p.name for t in TABLES for p in (root / t).glob(".*"))


def test_runs_published_together_are_one_group(pair: Path, tmp_path: Path) -> None:
    """Three runs in one call: one ``part-`` file per table holds them; every reader gets
    each run's rows as they were given; a fresh open (the index) and a listing of the
    directory (no index) find the same three runs."""
    data = copies(pair, tmp_path / "ds", 0)
    given = [pending(pair, n) for n in range(3)]
    done = data.publish_many(given)
    assert [(d.name, d.written) for d in done] == [(f"copy-{n}", True) for n in range(3)]
    seen = files(tmp_path / "ds")
    assert all(len(names) == 1 and names[0].startswith("part-") for names in seen.values())
    again = Dataset.open(tmp_path / "ds")
    assert sorted(again.run_names()) == ["copy-0", "copy-1", "copy-2"]
    for table in TABLES:
        want = pa.concat_tables([p.tables[table] for p in given])
        assert again.read(table).equals(want), table
        assert again.read(table, runs=["copy-1"]).equals(given[1].tables[table]), table
    (tmp_path / "ds" / ".runs-index").unlink()  # read from the files alone
    assert sorted(Dataset.open(tmp_path / "ds").run_names()) == ["copy-0", "copy-1", "copy-2"]
    answer = invoke("fleet", "query", str(tmp_path / "ds"), "SELECT count(*) AS n FROM runs")
    assert answer.exit_code == 0 and answer.stdout.split()[-1] == "3", answer.stdout


def test_a_known_content_is_left_out_and_a_taken_name_replaced(pair: Path, tmp_path: Path) -> None:
    """Copy 0 is in the dataset already; a new run named ``copy-0`` of another content takes
    its other name; copy 5 twice in one batch is written once."""
    data = copies(pair, tmp_path / "ds", 1)  # copy-0
    done = data.publish_many(
        [pending(pair, 0, "again"), pending(pair, 7, "copy-0"), pending(pair, 5), pending(pair, 5)]
    )
    assert [(d.name, d.written) for d in done] == [
        ("copy-0", False),
        ("copy-0-2", True),
        ("copy-5", True),
        ("copy-5", False),
    ]
    runs = Dataset.open(tmp_path / "ds").read("runs", ["run", "content_hash"]).to_pylist()
    assert sorted((r["run"], r["content_hash"][-1]) for r in runs) == [
        ("copy-0", "0"),
        ("copy-0-2", "7"),
        ("copy-5", "5"),
    ]


def test_a_batch_that_fails_midway_leaves_none_of_its_runs(
    pair: Path, tmp_path: Path, monkeypatch
) -> None:
    """The disk fills up while the group's ``findings`` file is written: none of its runs
    is read, nothing hidden stays, and the next publish writes them."""
    data = copies(pair, tmp_path / "ds", 1)
    real = pq.write_table

    def full_disk(table: pa.Table, where: Any, *args: Any, **kwargs: Any) -> None:
        if "findings" in str(where):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_disk)
    with pytest.raises(OutputError, match="No space left on device"):
        data.publish_many([pending(pair, n) for n in (1, 2)])
    monkeypatch.setattr(pq, "write_table", real)
    assert files(tmp_path / "ds") == {t: ["run-copy-0.parquet"] for t in TABLES}
    assert hidden(tmp_path / "ds") == []
    assert Dataset.open(tmp_path / "ds").run_names() == ["copy-0"]
    assert [d.written for d in data.publish_many([pending(pair, n) for n in (1, 2)])] == [1, 1]


def test_groups_count_toward_compacting_and_are_merged(pair: Path, tmp_path: Path) -> None:
    """A build compacts once files of few runs pile up: two groups of two runs and one run
    of its own are three such files per table; compacting makes them one group of five."""
    data = copies(pair, tmp_path / "ds", 1)
    data.publish_many([pending(pair, n) for n in (1, 2)])
    data.publish_many([pending(pair, n) for n in (3, 4)])
    assert data.small_files() == 3
    before = {t: data.read(t).sort_by("run") for t in TABLES}
    done = data.compact()
    assert done.runs == 5 and data.small_files() == 1
    after = Dataset.open(tmp_path / "ds")
    assert all(len(names) == 1 for names in files(tmp_path / "ds").values())
    assert all(after.read(t).sort_by("run").equals(before[t]) for t in TABLES)


class RemoteHere(SerialEngine):
    """Runs the tasks in this process but says it is remote (so the build batches as on a
    cluster); raises KeyboardInterrupt once ``stop_after`` runs were analysed."""

    remote = True

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.stop_after = stop_after
        self.ticks = 0

    def completed(self, patience: Any = None) -> Iterator[Any]:
        analysed = 0
        for outcome in super().completed(patience) if patience else super().completed():
            if not outcome[0]:
                self.ticks += 1
            yield outcome
            analysed += outcome[0].startswith("run:")
            if analysed == self.stop_after:
                raise KeyboardInterrupt


def built(tmp_path: Path, engine: SerialEngine) -> tuple[list[str], dict[str, list[str]]]:
    specs, _ = plan([str(p) for p in LOGS], BuildOptions(Settings(None)))
    result = build_dataset(specs, tmp_path / "ds", BuildOptions(Settings(None)), engine)
    return [r.status for r in result.runs], files(tmp_path / "ds")


def test_runs_that_end_within_a_second_are_one_group(tmp_path: Path, monkeypatch) -> None:
    """The three logs take well under the minute held: one group holds all three, written
    when no task is left."""
    monkeypatch.setattr(build_module, "BATCH_SECONDS", 60.0)
    statuses, seen = built(tmp_path, RemoteHere())
    assert statuses == ["written"] * 3
    assert all(len(names) == 1 and names[0].startswith("part-") for names in seen.values())
    assert len(Dataset.open(tmp_path / "ds").run_names()) == 3


def test_runs_held_past_their_time_are_published_before_the_next_task(
    tmp_path: Path, monkeypatch
) -> None:
    """With no time to hold (0 s), the engine's tick comes before each next task and each
    run is published alone, in files of its own."""
    monkeypatch.setattr(build_module, "BATCH_SECONDS", 0.0)
    engine = RemoteHere()
    statuses, seen = built(tmp_path, engine)
    assert statuses == ["written"] * 3 and engine.ticks >= 2
    assert all(len(names) == 3 and names[0].startswith("run-") for names in seen.values())


def test_a_stopped_build_publishes_the_runs_it_holds(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C after two runs were analysed (held for a minute): both are in the dataset
    as the interrupt goes on, the third is not."""
    monkeypatch.setattr(build_module, "BATCH_SECONDS", 60.0)
    with pytest.raises(KeyboardInterrupt):
        built(tmp_path, RemoteHere(stop_after=2))
    assert len(Dataset.open(tmp_path / "ds").run_names()) == 2
    assert hidden(tmp_path / "ds") == []


# -- hashing several runs in one task ---------------------------------------------------------


def test_hash_batches_hold_32_runs_or_64_mib() -> None:
    """70 small runs: 32, 32, 6. Runs of 40 MiB: one a batch (two pass 64 MiB); a run of
    100 MiB alone still makes a batch."""
    from dnnlens.fleet.build import _hash_batches
    from dnnlens.fleet.discover import RunSpec

    small = [RunSpec(f"r{i}", (f"r{i}.log",), 1_000) for i in range(70)]
    assert [len(b) for b in _hash_batches(small)] == [32, 32, 6]
    mib = 1 << 20
    large = [RunSpec(f"l{i}", (f"l{i}.log",), s * mib) for i, s in enumerate((40, 40, 100, 10))]
    assert _hash_batches(large) == [[0], [1], [2], [3]]
    assert _hash_batches([*small[:3], *large[:1]]) == [[0, 1, 2, 3]]
    assert _hash_batches([]) == []


class Counting(SerialEngine):
    """Counts the tasks submitted, by their step (``hash``, ``run``)."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks: dict[str, int] = {}

    def submit(self, key: str, *args: Any, **kwargs: Any) -> None:
        step = key.split(":")[0]
        self.tasks[step] = self.tasks.get(step, 0) + 1
        super().submit(key, *args, **kwargs)


def test_one_task_hashes_many_runs_and_a_failure_stays_its_runs(tmp_path: Path) -> None:
    """35 logs (copies of the small sample, each of its own content, and one that cannot be
    read): 2 hashing tasks for 35 runs, 34 analysed and written, the unreadable one failed
    alone with its reason."""
    logs = tmp_path / "logs"
    logs.mkdir()
    text = LOGS[0].read_text()
    for k in range(34):
        (logs / f"c{k:02d}.log").write_text(text + f"copy {k}\n")
    unreadable = logs / "zz.log"  # a link to nothing, named on the command line
    unreadable.symlink_to(tmp_path / "nowhere.log")
    engine = Counting()
    names = [*sorted(str(p) for p in logs.glob("c*.log")), str(unreadable)]
    specs, _ = plan(names, BuildOptions(Settings(None)))
    result = build_dataset(specs, tmp_path / "ds", BuildOptions(Settings(None)), engine)
    assert engine.tasks == {"hash": 2, "run": 34}
    assert result.count("written") == 34 and result.count("failed") == 1
    failed = next(r for r in result.runs if r.status == "failed")
    assert failed.files[0].endswith("zz.log") and "cannot read" in failed.message
