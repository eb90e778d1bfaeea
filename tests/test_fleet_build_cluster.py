"""``fleet build`` on Dask when the cluster or the build goes away midway: a scheduler that
dies leaves the finished runs and one line per run not finished (exit 2); a build stopped
while a plugin loops on its workers leaves no worker process behind (exit 143).

Each case runs in a process of its own, bounded by ``WAIT``: a Dask client that lost its
scheduler, or a cluster being torn down, leaves the event loop of its process unusable for
the next test. The logs are four small copies of ``dispatch_only_infer.log`` (6,131 bytes),
each with a line of its own so that each is a run of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from test_fleet_logs import SAMPLE_LOGS

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
WAIT = 120

LOOPING = '''
import os
from dnnlens.rules import Rule


class Looping(Rule):
    """Loops in Python after writing its process id to MARK."""

    name = "looping-plugin"
    code = "T101"

    def check(self, ctx):
        with open(os.environ["MARK"], "w") as fh:
            fh.write(str(os.getpid()))
        while True:
            pass
'''


def logs(folder: Path, count: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    text = (SAMPLE_LOGS / "dispatch_only_infer.log").read_text()
    out = []
    for k in range(count):
        path = folder / f"r{k}.log"
        path.write_text(f"{text}job {k}\n")
        out.append(str(path))
    return out


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}


def test_a_scheduler_lost_midway_keeps_the_finished_runs(tmp_path: Path) -> None:
    """The scheduler (TCP, as a remote one) is closed as soon as the first run is written:
    the three others are one line each, no Dask traceback (the client logs one as it
    tries to reconnect), exit 2, and the written run is in the dataset."""
    inputs = logs(tmp_path / "logs", 4)
    out = tmp_path / "ds"
    code = textwrap.dedent(f"""
        import json, os
        import distributed
        from typer.testing import CliRunner
        from dnnlens.cli import app
        from dnnlens.fleet import progress

        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
            host="127.0.0.1", dashboard_address=None, scheduler_kwargs={{"dashboard": False}},
            worker_dashboard_address=None,
        )
        import time
        from dnnlens.fleet import build

        def slow_after_the_first(*args, **kwargs):
            # every run after the first still runs when the scheduler goes: their results
            # cannot have arrived before it did, whatever the machine's speed (the count
            # lives on a module: the task itself is sent by value)
            from dnnlens.fleet import work

            work.calls_seen = getattr(work, "calls_seen", 0) + 1
            if work.calls_seen > 1:
                time.sleep(3)
            return work.analyse_run(*args, **kwargs)

        build.analyse_run = slow_after_the_first
        real = progress.BuildProgress.advance

        def advance(self, report):
            real(self, report)
            if report.status == "written":
                cluster.sync(cluster.scheduler.close)

        progress.BuildProgress.advance = advance
        args = ["fleet", "build", *{inputs!r}, "-o", {str(out)!r},
                "--scheduler", cluster.scheduler_address]
        result = CliRunner().invoke(app, args)
        print(json.dumps([result.exit_code, result.stderr]), flush=True)
        os._exit(0)  # the cluster's scheduler is gone: closing it would wait for it
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    exit_code, stderr = json.loads(done.stdout.strip().splitlines()[-1])
    assert "Traceback" not in stderr and "Traceback" not in done.stderr
    lines = stderr.splitlines()
    lost = [line for line in lines if ": error: " in line]
    assert len(lost) == 3, stderr
    assert all(
        line.startswith("dnnlens: error: run ")
        and ": not finished: the Dask scheduler at tcp://127.0.0.1:" in line
        and line.endswith(" went away")
        for line in lost
    ), stderr
    assert "1 run(s) written, 0 skipped (already in the dataset), 0 failed, 3 not finished" in (
        stderr
    )
    assert exit_code == 2
    assert lines[0].startswith("dnnlens: progress: first failure: run ")  # told at once
    assert len(lines) == 5  # the first failure told at once, three runs and the summary
    assert len(list((out / "runs").glob("run-*.parquet"))) == 1


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc)."""
    out: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for c in map(int, children):
                if c not in out:
                    out.add(c)
                    todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_a_build_stopped_while_a_plugin_loops_leaves_no_worker(tmp_path: Path) -> None:
    """``--workers 2`` starts worker processes; a plugin loops on one of them (its budget
    is 60 s); SIGTERM to the build ends it with 143 and one line, and every process it
    started (workers, their plugin children) ends with it."""
    plugin, mark = tmp_path / "looping.py", tmp_path / "mark"
    plugin.write_text(LOOPING)
    inputs = logs(tmp_path / "logs", 2)
    cmd = [sys.executable, "-m", "dnnlens", "fleet", "build", "--workers", "2", "-q",
           "--rules", str(plugin), *inputs, "-o", str(tmp_path / "ds")]  # fmt: skip
    build = subprocess.Popen(
        cmd, env=env(MARK=str(mark)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + WAIT
        while not (mark.exists() and mark.read_text()) and time.monotonic() < deadline:
            assert build.poll() is None, build.communicate()
            time.sleep(0.2)
        assert mark.read_text(), "the plugin never ran"
        started = descendants(build.pid)
        assert int(mark.read_text()) in started
        build.send_signal(signal.SIGTERM)
        _, stderr = build.communicate(timeout=WAIT)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    assert build.returncode == 143, stderr
    said = [line for line in stderr.splitlines() if "running the Python rule file" not in line]
    assert said == [
        "dnnlens: error: build stopped by SIGTERM: the runs written so far are in the "
        "dataset (building again adds the others)"
    ]
    deadline = time.monotonic() + 30
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in started if alive(p)] == []


class _Future:
    def __init__(self, key: str, status: str) -> None:
        self.key, self.status = key, status

    def release(self) -> None:
        pass


def test_a_result_that_arrived_counts_whatever_the_future_says_later() -> None:
    """A scheduler lost after a task's result arrived marks its future cancelled: the run
    finished and is written (it was an internal error, "the task did not finish ({...})");
    a cancelled task without a result is not finished."""
    from collections import deque

    from dnnlens.fleet.engine import DaskEngine

    class Lost(Exception):
        reason = "scheduler-connection-lost"

    engine = DaskEngine.__new__(DaskEngine)
    report = {"inputs": "the run's tables"}
    engine._done = iter(
        [(_Future("f1", "cancelled"), report), (_Future("f2", "cancelled"), Lost())]
    )
    engine._keys = {"f1": "run:1", "f2": "run:2"}
    engine._lost = None
    engine._unsent = deque()
    engine.client = type("Client", (), {"scheduler": type("S", (), {"address": "tcp://x:1"})})()
    outcomes = list(engine.completed())
    assert outcomes[0] == ("run:1", report, None)
    key, result, error = outcomes[1]
    assert (key, result) == ("run:2", None)
    assert str(error) == "not finished: the Dask scheduler at tcp://x:1 went away"
