"""A Python plugin's budget holds whatever the plugin does: blocked in C code
(``sum(range(10**11))``, which neither ``SIGALRM`` nor SIGTERM's handler can interrupt) it
becomes an error finding naming the plugin and its budget and the rest of the report is
written; SIGTERM meanwhile ends dnnlens with 143 and the report of what finished; in a
``fleet build`` on Dask workers (threads, where no alarm can be set) the plugin is stopped
at its budget too (docs/rules.md, "Limits").

Each case runs in a process of its own, bounded by ``WAIT``: without an enforced budget it
would run for hours. ``convnet_nchw_infer.log`` gives layout-round-trip (reorder-overhead
folded into it) and weight-reorder-per-iteration (tests/test_rules_builtin.py).
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

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
BUILTIN = {"layout-round-trip", "weight-reorder-per-iteration"}  # DL001 folded into DL002
WAIT = 90

BLOCKING = '''
import os
import sys
from dnnlens.rules import Rule


class Blocking(Rule):
    """Blocks in C code after writing its process id to MARK."""

    name = "blocking-plugin"
    code = "T100"

    def check(self, ctx):
        with open(os.environ["MARK"], "w") as fh:
            fh.write(str(os.getpid()))
        print("about to block", flush=True)
        sum(range(10**11))
        yield self.finding("never")
'''

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


def _env(mark: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MARK": str(mark)}


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has ended too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def test_a_plugin_blocked_in_c_code_is_an_error_finding_at_its_budget(tmp_path: Path) -> None:
    plugin, mark = tmp_path / "blocking.py", tmp_path / "mark"
    plugin.write_text(BLOCKING)
    code = textwrap.dedent(f"""
        import json
        from dnnlens.analysis.analysis import Analysis
        from dnnlens.reading import load
        from dnnlens.rules.budget import RuleBudget
        from dnnlens.rules.engine import RuleOptions, run_rules

        options = RuleOptions(rule_paths=[{str(plugin)!r}], search_config=False,
                              announce_python=False, budget=RuleBudget(seconds=0.5))
        found = run_rules(Analysis(load([{str(NCHW)!r}])), options)
        print(json.dumps([[f.rule, f.severity, f.message] for f in found]))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(mark), capture_output=True, text=True, timeout=WAIT
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    mine = [f for f in found if f[0] == "blocking-plugin"]
    assert mine == [
        [
            "blocking-plugin",
            "error",
            f"rule blocking-plugin failed while running ({plugin}): ran longer than its "
            "limit of 0.5 s",
        ]
    ]
    assert BUILTIN <= {f[0] for f in found}
    assert "rule blocking-plugin printed: about to block" in out.stderr
    assert _gone(int(mark.read_text()))


def _wait_for(mark: Path, proc: subprocess.Popen) -> None:
    for _ in range(WAIT * 10):
        if mark.exists() and mark.read_text():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the plugin never started")


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda n: signal.Signals(n).name
)
def test_a_stop_signal_while_a_plugin_blocks_in_c_code_ends_with_the_report(
    tmp_path: Path, signum: int
) -> None:
    """SIGTERM ends with 143, SIGHUP (treated as SIGTERM) with 129."""
    name = signal.Signals(signum).name
    blocking, quiet, mark = tmp_path / "blocking.py", tmp_path / "quiet.py", tmp_path / "mark"
    blocking.write_text(BLOCKING)
    quiet.write_text(
        "from dnnlens.rules import Rule\n\n\nclass Quiet(Rule):\n    '''Never runs.'''\n\n"
        "    name = 'quiet-plugin'\n\n    def check(self, ctx):\n        return []\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "dnnlens.cli", "analyze", "-f", "json", str(NCHW)]
        + ["--rules", str(blocking), "--rules", str(quiet)],
        env=_env(mark),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(mark, proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    doc = json.loads(out)
    rules = {f["rule"]: f for f in doc["findings"]}
    assert BUILTIN <= set(rules)
    assert rules["blocking-plugin"]["severity"] == "error"
    assert rules["blocking-plugin"]["message"].endswith(f"stopped by {name} before it finished")
    assert rules["quiet-plugin"]["message"].endswith(f"not run: dnnlens was stopped by {name}")
    assert b"Traceback" not in err
    assert _gone(int(mark.read_text()))


def test_a_looping_plugin_in_a_fleet_build_on_dask_is_stopped_at_its_budget(
    tmp_path: Path,
) -> None:
    """The workers of a local cluster are threads of the building process: there no alarm
    can be set, and the plugin used to spin on after the build was given up."""
    plugin, mark = tmp_path / "looping.py", tmp_path / "mark"
    plugin.write_text(LOOPING)
    code = textwrap.dedent(f"""
        import json
        from pathlib import Path
        import distributed
        from dnnlens.fleet.build import BuildOptions, build_dataset, plan
        from dnnlens.fleet.dataset import Dataset, Settings
        from dnnlens.fleet.engine import DaskEngine
        from dnnlens.rules import budget

        budget.DEFAULT_SECONDS = 0.5
        ds = Path({str(tmp_path / "ds")!r})
        options = BuildOptions(Settings(200_000, rule_files=[{str(plugin)!r}]))
        specs, _ = plan([{str(NCHW)!r}], options)
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
            scheduler_kwargs={{"dashboard": False}}, worker_dashboard_address=None,
        ) as cluster, distributed.Client(cluster) as client:
            result = build_dataset(specs, ds, options, DaskEngine(client))
        rows = Dataset.open(ds).read("findings").to_pylist()
        print(json.dumps([[r.status for r in result.runs], [[f["rule"], f["severity"],
              f["message"]] for f in rows]]))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(mark), capture_output=True, text=True, timeout=WAIT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    statuses, rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert statuses == ["written"]
    mine = [r for r in rows if r[0] == "looping-plugin"]
    assert mine == [
        [
            "looping-plugin",
            "error",
            f"rule looping-plugin failed while running ({plugin}): ran longer than its "
            "limit of 0.5 s",
        ]
    ]
    assert BUILTIN <= {r[0] for r in rows}
    assert _gone(int(mark.read_text()))
