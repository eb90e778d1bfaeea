"""Start-up stays light: each command imports only what its input needs, when it needs it.

The command line, ``--help`` and ``--version`` import none of the analysis stack; a small
log analysed to JSON imports what the analysis is built on (pandas, and the bulk scanner's
numpy and Arrow), but no torch, no process pool, no terminal or live-view rendering (rich)
and no YAML parser unless a YAML rule file is given. Times are measured in
``benchmarks/bench_speed.py`` (``-X importtime``), never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "pandas", "numpy", "pyarrow", "lark", "networkx", "yaml", "multiprocessing.pool")


def _imported_after(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` are imported once ``code`` ran in a fresh interpreter."""
    probe = (
        f"{code}\nprint(__import__('json').dumps(sorted(m for m in {names!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _command(*argv: str) -> str:
    """Code that runs ``dnnlens ARGV`` in this interpreter and goes on after it exits (the
    app, not ``main``, which ends the process)."""
    return (
        "import sys\n"
        f"sys.argv = ['dnnlens', *{list(argv)!r}]\n"
        "import dnnlens.cli\n"
        "try:\n    dnnlens.cli.app()\nexcept SystemExit:\n    pass"
    )


def test_cli_import_pulls_in_nothing_heavy() -> None:
    assert _imported_after("import sys, dnnlens, dnnlens.cli", HEAVY) == []


def test_help_and_version_import_nothing_heavy() -> None:
    assert _imported_after(_command("--help"), HEAVY) == []
    assert _imported_after(_command("analyze", "--help"), HEAVY) == []
    assert _imported_after(_command("--version"), HEAVY) == []


def test_a_small_log_to_json_imports_only_what_it_needs(tmp_path: Path) -> None:
    """``sample_logs/convnet_nchw_infer.log`` (338 lines) analysed to JSON: no torch, no
    worker pool, no rich console (nothing goes to a terminal), no YAML parser, and no
    framework view nor linking (there is no trace or table: every rule ran, the framework
    rules found nothing to look at)."""
    log = ROOT / "sample_logs" / "convnet_nchw_infer.log"
    out = tmp_path / "report.json"
    framework = ("dnnlens.analysis.framework", "dnnlens.analysis.linking")
    names = (*HEAVY, "rich.console", "rich.progress", "dnnlens.report.terminal", *framework)
    code = _command("analyze", str(log), "--format", "json", "-o", str(out))
    assert _imported_after(code, names) == ["lark", "numpy", "pandas", "pyarrow"]
    assert json.loads(out.read_text())["summary"]["exec_count"] == 165  # grep -c ',exec,'


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in (
        "analyze",
        "run",
        "capture",
        "graph",
        "diff",
        "project",
        "export",
        "rules",
        "machine",
    ):
        assert f" {command} " in out


def test_scanning_imports_no_pandas(tmp_path: Path) -> None:
    """The reading stack scans a log, folded or not, without pandas: worker processes
    never import it (0.4 s of a core), and the command imports it while they scan."""
    log = ROOT / "sample_logs" / "convnet_nchw_train.log"
    code = (
        "import sys\n"
        "from dnnlens.reading import parallel\n"
        "from dnnlens.parsers.scanner import Scanner\n"
        f"path = {str(log)!r}\n"
        "import os\n"
        "size = os.path.getsize(path)\n"
        "scanner = Scanner()\n"
        "parallel.scan_task(parallel.Task(path, 0, size), scanner)\n"
        "parallel.scan_task(parallel.Task(path, 0, size, keep=100), scanner)\n"
    )
    assert _imported_after(code, ("pandas",)) == []


def test_the_report_is_imported_while_workers_scan(tmp_path: Path) -> None:
    """With workers, the command's ``meanwhile`` runs once, before the first worker's part
    is taken; pandas is not imported before it."""
    log = ROOT / "sample_logs" / "convnet_nchw_train.log"
    code = (
        "import sys\n"
        "from dnnlens.reading import parallel, read\n"
        "parallel.SPLIT_MIN_BYTES = 1\n"
        "parallel.default_jobs = lambda: 2\n"
        "seen = []\n"
        "def meanwhile():\n"
        "    seen.append('pandas' in sys.modules)\n"
        "    import pandas\n"
        f"log = read([{str(log)!r}] * 2, jobs=2, meanwhile=meanwhile)\n"
        "assert seen == [False], seen\n"
        "assert sum(s.parsed for s in log.scans) > 0\n"
    )
    assert _imported_after(code, ("pandas",)) == ["pandas"]
