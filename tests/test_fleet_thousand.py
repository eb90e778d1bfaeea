"""``fleet build`` of a generated fleet of 1,000 logs on a Dask scheduler (TCP, two
single-threaded worker processes: the CI machine's two cores), checked against counts
made while writing the logs.

The logs are cut and varied copies of three sample logs (``convnet_nchw_infer``,
``lstm_infer``, ``convnet_cl_infer``): each keeps its base's header and the first 30 to
79 lines after it, its batch size (``mbN`` of the problem) is 1 to 4, so the runs of one
base are of several shapes, and it ends with a line of program output of its own (every
log is a run of its own content). Every fifth log is gzip-compressed; every fiftieth has
no oneDNN line at all (a run that fails: the ``failures`` table).

It runs with ``DNNLENS_SLOW_TESTS=1`` (``.ci/run`` sets it). The build runs in a process
of its own (a Dask cluster leaves its event loop behind), which
prints the build's wall time; the test fails past ``BUDGET_S``. The build publishes the
runs that end within a second as one group (five files for about 25 runs), so the dataset
has a few dozen files per table and is not compacted.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from test_fleet_logs import SAMPLE_LOGS

pytest.importorskip("distributed")
pytest.importorskip("duckdb")

#: The build takes about 70 s of CPU (some 62 ms a run analysing on a worker, 9 ms in the
#: client), a fifth of the whole suite's: it runs where the CPU is there for it, in CI after
#: the suite, on the cores alone (``.ci/run`` sets the variable), or when asked, so the
#: README's test command stays under five minutes on two loaded cores (docs/development.md).
pytestmark = pytest.mark.skipif(
    os.environ.get("DNNLENS_SLOW_TESTS") != "1",
    reason="the 1,000-log fleet build: set DNNLENS_SLOW_TESTS=1 (CI does)",
)

ROOT = Path(__file__).resolve().parent.parent
BASES = ("convnet_nchw_infer", "lstm_infer", "convnet_cl_infer")
LOGS = 1000
#: The build's wall time may not pass this: a minute, the goal set for it. Measured on the
#: 2-core AMD EPYC VM, idle (load average 2 to 3): 34 to 39 s (workers' CPU 62 s, the
#: client's 9 s); before runs that end together were published as one group, one task
#: hashed many runs and categories became text without a pandas Series, 64 s.
BUDGET_S = 60.0


@dataclass
class Counts:
    """What the logs hold, counted as they are written."""

    runs: int = 0
    failed: int = 0
    gzipped: int = 0
    execs: int = 0
    execs_by_run: dict[str, int] = field(default_factory=dict)


def write_fleet(folder: Path, count: int = LOGS) -> Counts:
    folder.mkdir(parents=True, exist_ok=True)
    lines = {b: (SAMPLE_LOGS / f"{b}.log").read_text().splitlines() for b in BASES}
    counts = Counts()
    for k in range(count):
        name = f"run{k:04d}"
        if k % 50 == 49:
            (folder / f"{name}.log").write_text(f"training started {k}\nno verbose output\n")
            counts.failed += 1
            continue
        base = BASES[k % 3]
        head = [line for line in lines[base] if ",info," in line]
        body = [line for line in lines[base] if ",info," not in line][: 30 + (k * 7) % 50]
        body = [re.sub(r"\bmb\d+", f"mb{1 + (k // 3) % 4}", line) for line in body]
        text = "\n".join([*head, *body, f"job {k} done"]) + "\n"
        execs = sum(",exec," in line for line in body)
        counts.runs += 1
        counts.execs += execs
        counts.execs_by_run[name] = execs
        if k % 5 == 0:
            with gzip.open(folder / f"{name}.log.gz", "wt") as fh:
                fh.write(text)
            counts.gzipped += 1
        else:
            (folder / f"{name}.log").write_text(text)
    return counts


def test_the_generated_fleet_has_its_counts(tmp_path: Path) -> None:
    counts = write_fleet(tmp_path, 100)
    assert (counts.runs, counts.failed, counts.gzipped) == (98, 2, 20)
    assert len(list(tmp_path.iterdir())) == 100


BUILD = """
import json, os, sys, time

import distributed
from typer.testing import CliRunner

from dnnlens.cli import app


def main():
    logs, out = sys.argv[1], sys.argv[2]
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, protocol="tcp",
        host="127.0.0.1", dashboard_address=None, scheduler_kwargs={"dashboard": False},
        worker_dashboard_address=None,
    )
    started = time.perf_counter()
    args = ["fleet", "build", logs + "/*", "-o", out, "--scheduler",
            cluster.scheduler_address]
    result = CliRunner().invoke(app, args)
    seconds = time.perf_counter() - started
    print(json.dumps([result.exit_code, result.stderr, seconds]), flush=True)
    cluster.close()


if __name__ == "__main__":
    main()
"""


def test_a_thousand_logs_on_a_scheduler(tmp_path: Path) -> None:
    counts = write_fleet(tmp_path / "logs")
    out = tmp_path / "ds"
    script = tmp_path / "build.py"  # a file: the worker processes import their __main__
    script.write_text(textwrap.dedent(BUILD))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "logs"), str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    exit_code, stderr, seconds = json.loads(done.stdout.strip().splitlines()[-1])
    assert exit_code == 2, stderr  # the runs without a oneDNN line
    assert (
        f"{counts.runs:,} run(s) written, 0 skipped (already in the dataset), "
        f"{counts.failed} failed"
    ) in stderr
    # runs that end within a second are published as one group: a few dozen files a table
    groups = {t: len(list((out / t).glob("*.parquet"))) for t in ("runs", "primitives")}
    assert all(n <= 100 for n in groups.values()), groups

    from dnnlens.fleet.dataset import Dataset
    from dnnlens.fleet.query import open_query

    def query(sql: str) -> list[tuple]:
        with open_query(Dataset.open(out), sql) as result:
            return [row for block in result.blocks for row in block]

    assert query("SELECT count(*), count(DISTINCT content_hash) FROM runs") == [
        (counts.runs, counts.runs)
    ]
    failures = query("SELECT path, exit_class FROM failures ORDER BY path")
    assert [Path(p).name for p, _ in failures] == [f"run{k:04d}.log" for k in range(49, LOGS, 50)]
    assert {c for _, c in failures} == {"input"}
    assert query("SELECT count(*) FROM inputs WHERE gzip") == [(counts.gzipped,)]
    assert dict(query("SELECT run, exec_count FROM runs")) == counts.execs_by_run
    assert query("SELECT sum(exec_count) FROM runs") == [(counts.execs,)]
    said = [line for line in stderr.splitlines() if ": note: " in line]
    print(f"built in {seconds:.1f} s: {said}")  # pytest -rA shows it
    assert seconds < BUDGET_S, f"the build took {seconds:.1f} s: {said}"
