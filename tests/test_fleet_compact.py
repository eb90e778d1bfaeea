"""``fleet compact``: the runs' own files rewritten into a few files per table.

The dataset is the fleet of ``test_fleet_logs.make_fleet`` (sixteen runs of real sample
logs, with the run that fails, ``broken``, in the ``failures`` table), built once without
compacting. Every test works on a copy. A compaction stopped at any of its points (a test
raises where ``Dataset.compact`` calls ``step``, as a killed process would stop there) must
leave a dataset whose every table and view holds what it held before, every run once.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from dnnlens.fleet.build import BuildOptions, build_dataset, plan
from dnnlens.fleet.dataset import Dataset, Settings, part_name
from dnnlens.fleet.engine import SerialEngine
from dnnlens.fleet.query import open_query
from dnnlens.fleet.schema import TABLES
from dnnlens.fleet.views import VIEWS
from test_fleet_logs import invoke, make_fleet, write_copy

pytest.importorskip("duckdb")

SETTINGS = Settings(window_events=200_000)
#: Every table and view of ``fleet query``.
RELATIONS = (*TABLES, "failures", *(view.name for view in VIEWS))
_BUILT: dict[str, Path] = {}


def _build(paths: list[str], out: Path, compact_at: int | None = None, group: str = "directory"):  # noqa: ANN202
    options = BuildOptions(SETTINGS, group, compact_at=compact_at)
    specs, _ = plan(paths, options, out)
    return build_dataset(specs, out, options, SerialEngine())


@pytest.fixture
def fleet(tmp_path_factory, tmp_path: Path) -> Path:  # noqa: ANN001
    """A copy of the fleet's dataset, built once per test process without compacting."""
    if "fleet" not in _BUILT:
        where = tmp_path_factory.mktemp("compact")
        runs = make_fleet(where / "logs")
        named = [str(where / "logs" / run) for run in runs if run != "broken"]
        result = _build([*named, str(runs["broken"][0])], where / "ds")  # a file: read
        assert result.count("written") == 15 and result.count("failed") == 1
        _BUILT["fleet"] = where / "ds"
    copy = tmp_path / "ds"
    shutil.copytree(_BUILT["fleet"], copy)
    (copy / ".runs-index").unlink()  # a copy has other inodes: its index is listed again
    return copy


def rows(root: Path) -> dict[str, list[str]]:
    """Every table and view, each row as text, sorted (NaN and lists compare as text; a
    float to 12 digits: a view's sum over rows read in another order may differ in its
    last bit, 0.03650816200605561 and ...562)."""
    out = {}
    for relation in RELATIONS:
        with open_query(Dataset.open(root), f"SELECT * FROM {relation}") as result:
            out[relation] = sorted(_text(row) for block in result.blocks for row in block)
    return out


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    if isinstance(value, list | tuple):
        return "(" + ", ".join(_text(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def own_files(root: Path) -> list[Path]:
    return sorted(p for t in TABLES for p in (root / t).glob("run-*.parquet"))


def test_queries_are_equal_after_and_the_files_few(fleet: Path) -> None:
    before = rows(fleet)
    assert len(before["runs"]) == 15 and len(before["failures"]) == 1
    assert all(before[r] for r in RELATIONS), [r for r in RELATIONS if not before[r]]
    assert len(own_files(fleet)) == 15 * 5
    done = Dataset.open(fleet).compact()
    assert (done.runs, done.files_before, done.files_after) == (15, 75, 5)
    assert done.bytes_after < done.bytes_before
    assert own_files(fleet) == []
    assert [len(list((fleet / t).glob("part-*.parquet"))) for t in TABLES] == [1] * 5
    assert rows(fleet) == before
    assert Dataset.open(fleet).compact().runs == 0  # nothing left to compact


def test_groups_hold_at_most_the_runs_asked(fleet: Path) -> None:
    before = rows(fleet)
    done = Dataset.open(fleet).compact(runs_per_file=4)
    assert (done.runs, done.files_after) == (15, 4 * 5)
    assert rows(fleet) == before


STOPS = [
    ("staged", 1),
    ("placed", 1),
    ("placed", 4),  # every table's file placed but the runs file
    ("placed", 5),
    ("switched", 1),
    ("switched", 2),  # a second group switched, the first one's index not written
    ("indexed", 1),
    ("alone", 1),
    ("removing", 1),
    ("removing", 40),
]


class Stop(BaseException):
    """A process killed there (no handler of the compaction runs)."""


@pytest.mark.parametrize("merging", [False, True], ids=["own files", "merging groups"])
@pytest.mark.parametrize(("where", "nth"), STOPS)
def test_a_compaction_stopped_anywhere_leaves_every_run_once(
    fleet: Path, where: str, nth: int, merging: bool
) -> None:
    """Stopped while it rewrites the runs' own files, or while it merges groups of 4
    runs (and of 3) into groups of 8 (and of 7)."""
    before = rows(fleet)
    if merging:
        Dataset.open(fleet).compact(runs_per_file=4)
        nth = min(nth, 12) if where == "removing" else nth  # 4 groups of 5 files to remove
    seen: list[str] = []

    def step(name: str) -> None:
        seen.append(name)
        if seen.count(where) == nth:
            raise Stop(name)

    with pytest.raises(Stop):
        Dataset.open(fleet).compact(runs_per_file=8, step=step, merge_below=5)
    assert Dataset.open(fleet).run_names() == sorted(r["run"] for r in _runs(fleet))
    assert rows(fleet) == before
    # a build cleans up what was left, and a compaction finishes the work
    Dataset.for_build(fleet, SETTINGS)
    assert rows(fleet) == before
    Dataset.open(fleet).compact(runs_per_file=8, merge_below=5)
    assert rows(fleet) == before
    assert own_files(fleet) == []
    assert len(list((fleet / "runs").iterdir())) == 2  # 8 runs and 7
    left = [p.name for t in TABLES for p in (fleet / t).iterdir()]
    assert all(n.startswith("part-") for n in left), left
    groups = {p.name for p in (fleet / "runs").iterdir()}
    assert all({p.name for p in (fleet / t).iterdir()} == groups for t in TABLES)


def _runs(root: Path) -> list[dict]:
    return Dataset.open(root).read("runs", ["run"]).to_pylist()


def test_a_later_build_adds_to_a_compacted_dataset_and_diff_works(
    fleet: Path, tmp_path: Path
) -> None:
    Dataset.open(fleet).compact()
    new = write_copy(tmp_path / "new" / "convnet_nchw_infer.log", "convnet_nchw_infer", 3.0)
    again = write_copy(tmp_path / "again" / "convnet_nchw_infer.log", "convnet_nchw_infer", 1.0)
    result = _build([str(new.parent), str(again.parent)], fleet)
    # the unchanged copy is the compacted run convnet_nchw_infer-00: skipped by its hash
    assert (result.count("written"), result.count("skipped")) == (1, 1)
    dataset = Dataset.open(fleet)
    assert "new" in dataset.run_names() and len(dataset.run_names()) == 16
    assert dataset.loose_runs() == ["new"]
    diff = invoke("fleet", "diff", str(fleet), "--baseline", "convnet_nchw_infer-00")
    assert diff.exit_code == 1, diff.stderr  # the slowed copy and the new one are slower
    assert "convnet_nchw_infer-slow" in diff.stdout and "new" in diff.stdout
    before = rows(fleet)
    assert Dataset.open(fleet).compact().runs == 16  # the group of 15 is merged with it
    assert rows(fleet) == before
    assert len(list((fleet / "runs").iterdir())) == 1
    assert len(Dataset.open(fleet).run_names()) == 16
    same = invoke("fleet", "diff", str(fleet), "--baseline", "convnet_nchw_infer-00")
    assert same.stdout == diff.stdout


def test_a_build_compacts_as_it_ends_past_the_threshold(tmp_path: Path) -> None:
    logs = [
        write_copy(tmp_path / "logs" / f"r{k}.log", "lstm_infer", 1 + k / 1000) for k in range(3)
    ]
    out = tmp_path / "ds"
    first = _build([str(logs[0]), str(logs[1])], out, compact_at=3, group="file")
    assert first.compacted is None and len(own_files(out)) == 10
    second = _build([str(p) for p in logs], out, compact_at=3, group="file")
    assert second.compacted is not None and second.compacted.runs == 3
    assert own_files(out) == [] and Dataset.open(out).run_names() == ["r0", "r1", "r2"]


def test_the_command_line_compacts_and_can_leave_it(tmp_path: Path) -> None:
    log = write_copy(tmp_path / "logs" / "a.log", "dispatch_only_infer", 1.0)
    out = tmp_path / "ds"
    built = invoke("fleet", "build", "-w", "1", "--no-compact", str(log), "-o", str(out))
    assert built.exit_code == 0, built.stderr
    assert "compacted" not in built.stderr
    done = invoke("fleet", "compact", str(out))
    assert done.exit_code == 0, done.stderr
    assert "compacted 1 run(s): 5 files" in done.stderr
    assert invoke("fleet", "compact", str(out)).stderr.strip().endswith("nothing to compact")
    missing = invoke("fleet", "compact", str(tmp_path / "nothing"))
    assert missing.exit_code == 2 and "not a fleet dataset" in missing.stderr


def test_a_reader_keeps_the_files_it_listed_until_it_is_done(fleet: Path) -> None:
    """A query open while a compaction runs: the compaction publishes its group, then waits
    for the query to end before it removes the files the query reads."""
    before = rows(fleet)
    sql = "SELECT * FROM primitives"
    with open_query(Dataset.open(fleet), sql, block_rows=5) as result:
        compacting = threading.Thread(target=lambda: Dataset.open(fleet).compact())
        compacting.start()
        deadline = time.monotonic() + 30
        while not list((fleet / "runs").glob(part_name("*"))) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        assert compacting.is_alive() and len(own_files(fleet)) == 75  # waits for the query
        got = sorted(_text(row) for block in result.blocks for row in block)
    compacting.join(30)
    assert not compacting.is_alive() and own_files(fleet) == []
    assert got == before["primitives"]
    assert rows(fleet) == before


def test_a_build_publishing_while_a_compaction_writes_waits_for_it(
    fleet: Path, tmp_path: Path
) -> None:
    """The build's run is published once the compaction lets the lock go: it is a run of its
    own files beside the group, and both are in the dataset once."""
    log = write_copy(tmp_path / "late" / "late.log", "dispatch_only_infer", 1.0)
    started, outcome = threading.Event(), {}

    def step(name: str) -> None:
        if name == "staged" and not started.is_set():
            started.set()
            time.sleep(0.5)  # the build below is waiting for the lock meanwhile

    def build() -> None:
        started.wait(30)
        outcome["result"] = _build([str(log.parent)], fleet)

    other = threading.Thread(target=build)
    other.start()
    Dataset.open(fleet).compact(step=step)
    other.join(60)
    assert outcome["result"].count("written") == 1
    dataset = Dataset.open(fleet)
    assert dataset.loose_runs() == ["late"] and len(dataset.run_names()) == 16
    names = [r["run"] for r in _runs(fleet)]
    assert sorted(names) == sorted(set(names)) == dataset.run_names()


def test_a_compaction_reading_while_another_waits_to_remove_does_not_wait_for_it(
    fleet: Path, tmp_path: Path
) -> None:
    """One compaction holds the readers' lock and waits for the dataset's lock to remove
    what it rewrote; another holds the dataset's lock and reads the runs it rewrites: it
    reads them under the dataset's lock alone, so both finish."""
    log = write_copy(tmp_path / "late" / "late.log", "lstm_infer", 5.0)
    second_staged = threading.Event()

    def first_step(name: str) -> None:
        if name == "alone":  # the readers' lock held, the dataset's lock not yet
            _build([str(log.parent)], fleet)  # a run for the second compaction
            second.start()
            second_staged.wait(20)

    def second_step(name: str) -> None:
        if name == "staged":
            second_staged.set()

    second = threading.Thread(
        target=lambda: Dataset.open(fleet).compact(step=second_step), daemon=True
    )
    first = threading.Thread(
        target=lambda: Dataset.open(fleet).compact(step=first_step), daemon=True
    )
    first.start()
    first.join(60)
    second.join(60)
    assert not first.is_alive() and not second.is_alive()
    assert second_staged.is_set()
    dataset = Dataset.open(fleet)
    assert dataset.loose_runs() == [] and len(dataset.run_names()) == 16
    assert own_files(fleet) == []


def test_an_index_without_hashes_learns_each_run_from_its_group(fleet: Path) -> None:
    """Index lines of a group's runs with no content hash (as a run's line before its
    file was read): a build reads each run's own hash from the group's runs file."""
    import json

    Dataset.open(fleet).compact()
    expected = {r["run"]: r["content_hash"] for r in Dataset.open(fleet).read("runs").to_pylist()}
    index = fleet / ".runs-index"
    lines = []
    for line in index.read_text().splitlines():
        value = json.loads(line)
        if isinstance(value, list):
            value[1] = None
        lines.append(json.dumps(value, separators=(",", ":")))
    index.write_text("\n".join(lines) + "\n")
    dataset = Dataset.for_build(fleet, SETTINGS)
    assert {run: dataset.run_with(h) for run, h in expected.items()} == {r: r for r in expected}


def test_a_write_that_fails_leaves_nothing_of_the_group(fleet: Path, monkeypatch) -> None:  # noqa: ANN001
    """The runs file of the group cannot be renamed into place (a full disk): exit 4, the
    group's files are gone and the runs are read from their own files as before."""
    import os as os_module

    before = rows(fleet)
    real = os_module.replace

    def replace(source, target) -> None:  # noqa: ANN001
        if Path(target).parent.name == "runs" and Path(target).name.startswith("part-"):
            raise OSError(28, "No space left on device")
        real(source, target)

    monkeypatch.setattr("dnnlens.fleet.dataset.os.replace", replace)
    failed = invoke("fleet", "compact", str(fleet))
    assert failed.exit_code == 4, failed.stderr
    assert "cannot write (No space left on device)" in failed.stderr
    monkeypatch.undo()
    left = [p.name for t in TABLES for p in (fleet / t).iterdir() if not p.name.startswith("run-")]
    assert left == []
    assert len(own_files(fleet)) == 75 and rows(fleet) == before


def test_small_groups_are_merged_with_the_next_runs(fleet: Path, tmp_path: Path) -> None:
    before_runs = Dataset.open(fleet).run_names()
    Dataset.open(fleet).compact(runs_per_file=4)
    assert len(list((fleet / "runs").iterdir())) == 4  # 4, 4, 4 and 3 runs
    new = write_copy(tmp_path / "new" / "convnet_nchw_infer.log", "convnet_nchw_infer", 3.0)
    assert _build([str(new.parent)], fleet).count("written") == 1
    before = rows(fleet)
    done = Dataset.open(fleet).compact(merge_below=5)
    assert (done.runs, done.files_before, done.files_after) == (16, 4 * 5 + 5, 5)
    assert [len(list((fleet / t).iterdir())) for t in TABLES] == [1] * 5
    assert rows(fleet) == before
    assert Dataset.open(fleet).run_names() == sorted([*before_runs, "new"])
    # a single group, even a small one, is not rewritten for nothing
    assert Dataset.open(fleet).compact(merge_below=100).runs == 0
