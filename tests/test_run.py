"""``dnnlens run``: the program's output intact, the report apart, signals passed on, the
program never left running, options checked before it starts.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338 lines
(``wc -l``) and 165 exec lines (``grep -c ',exec,'``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165
WAIT = 60


def _run(*args: str) -> subprocess.CompletedProcess:
    """``dnnlens run`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def _run_here(*args: str) -> subprocess.CompletedProcess:
    """``dnnlens run`` in this process (its exit code and both streams, as :func:`_run`
    returns them): for what is about the program and the report, not about dnnlens's own
    process (its start-up environment, signals it gets, several started at once)."""
    result = CliRunner().invoke(app, ["run", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return subprocess.CompletedProcess(
        ["run", *args], result.exit_code, result.stdout, result.stderr
    )


def _print_nchw(code: int = 0) -> list[str]:
    program = f"import sys; sys.stdout.write(open({str(NCHW)!r}).read()); sys.exit({code})"
    return [sys.executable, "-c", program]


def test_run_keeps_log_shows_output_and_passes_exit_code(tmp_path: Path) -> None:
    log = tmp_path / "kept.log"
    proc = _run_here("--log", str(log), "--no-live", "--format", "json", "--", *_print_nchw(3))
    assert proc.returncode == 3
    assert log.read_text() == NCHW.read_text()
    assert proc.stdout == NCHW.read_text()  # the program's output, and nothing else
    doc = json.loads((tmp_path / "kept.json").read_text())  # -f json: beside the log
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["run"]["exit_code"] == 3
    assert f"report written to {tmp_path / 'kept.json'}" in proc.stderr


def test_the_terminal_report_goes_to_standard_error(tmp_path: Path) -> None:
    proc = _run_here("--log", str(tmp_path / "k.log"), "--no-live", "--", *_print_nchw())
    assert proc.returncode == 0
    assert proc.stdout == NCHW.read_text()
    assert "executions" in proc.stderr or "exec" in proc.stderr


def test_run_takes_the_analysis_options(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["--log", str(tmp_path / "k.log"), "-f", "json", "-o", str(out)]
    proc = _run_here(*args, "--select", "layout-round-trip", "--", *_print_nchw())
    assert proc.returncode == 0, proc.stderr
    assert {f["rule"] for f in json.loads(out.read_text())["findings"]} == {"layout-round-trip"}
    proc = _run_here(*args, "--fail-on", "info", "--", *_print_nchw())
    assert proc.returncode == 1  # the program succeeded: the gate decides


def test_run_takes_the_terminal_layout_options(tmp_path: Path) -> None:
    log = ["--log", str(tmp_path / "k.log"), "--no-live"]
    short = _run_here(*log, "--width", "60", "--", *_print_nchw())
    assert short.returncode == 0, short.stderr
    report = [line for line in short.stderr.splitlines() if not line.startswith("dnnlens: ")]
    assert report and max(len(line) for line in report) <= 60  # notes are one line each
    assert "Creations by cache state" not in short.stderr
    full = _run_here(*log, "--width", "100", "--details", "--", *_print_nchw())
    assert full.returncode == 0, full.stderr
    assert "Creations by cache state" in full.stderr  # --details: every table


def test_run_sets_verbose_variables(tmp_path: Path) -> None:
    program = "import os; print(os.environ['ONEDNN_VERBOSE'], os.environ['DNNL_VERBOSE_TIMESTAMP'])"
    proc = _run_here(
        "--log", str(tmp_path / "k.log"), "--no-live", "--level", "2", "--",
        sys.executable, "-c", program,
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == "2 1"


def test_what_dnnlens_sets_for_itself_never_reaches_the_program(tmp_path: Path) -> None:
    """dnnlens gives its own process Arrow's system allocator; the program keeps the user's
    environment (without the variable, or with the user's own value)."""
    program = "import os; print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))"
    args = ["--log", str(tmp_path / "k.log"), "--no-live", "--", sys.executable, "-c", program]
    assert _run(*args).stdout.splitlines()[0] == "None"
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    proc = subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "run", *args],
        capture_output=True, text=True, timeout=WAIT, env=env,
    )  # fmt: skip
    assert proc.stdout.splitlines()[0] == "jemalloc"


def test_run_of_a_missing_program_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run_here("--log", str(tmp_path / "k.log"), "--", "no-such-program-dnnlens")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "cannot run 'no-such-program-dnnlens'" in proc.stderr


def test_run_error_with_markup_in_the_command_is_printed_as_is(tmp_path: Path) -> None:
    proc = _run_here("--log", str(tmp_path / "k.log"), "--", "[/x]no-such")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "dnnlens: error: cannot run '[/x]no-such': No such file or directory"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["-f", "xml"],
        ["--level", "abc"],
        ["--log", "missing-dir/x.log"],
        ["-o", "missing-dir/r.json"],
        ["--rules", "missing.yaml"],
        ["--select", "no-such-rule"],
    ],
    ids=["format", "level", "log-dir", "output-dir", "rules", "select"],
)
def test_options_are_checked_before_the_program_starts(
    tmp_path: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    program = f"open({str(marker)!r}, 'w').close()"
    monkeypatch.chdir(tmp_path)
    proc = _run_here(*args, "--", sys.executable, "-c", program)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()  # the program never ran
    assert not list(tmp_path.glob("dnnlens-runs/*.log"))  # no empty log left behind


def test_runs_started_together_keep_their_own_logs(tmp_path: Path) -> None:
    """Four runs in the same second: four logs, each with its own program's output (they
    shared one name, and three logs were lost)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "dnnlens.cli", "run", "-q", "--", "echo", f"run {i}"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    for p in procs:
        p.communicate(timeout=WAIT)
    logs = sorted((tmp_path / "dnnlens-runs").glob("*.log"))
    assert len(logs) == 4
    assert sorted(p.read_text() for p in logs) == [f"run {i}\n" for i in range(4)]


def test_a_program_killed_by_a_signal_gives_128_plus_n(tmp_path: Path) -> None:
    program = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    proc = _run_here("--log", str(tmp_path / "k.log"), "--", sys.executable, "-c", program)
    assert proc.returncode == 128 + signal.SIGTERM  # as a shell reports it (was 241)
    assert "the program exited with 143" in proc.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_waiting(tmp_path: Path, program: str, *args: str) -> tuple[subprocess.Popen, int]:
    """``dnnlens run`` of a program that prints its pid and waits; returns both, once the
    program's first line has come through dnnlens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dnnlens.cli", "run", "--log", str(tmp_path / "k.log"), *args,
         "--", sys.executable, "-u", "-c", program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the program's pid, passed through
    return proc, int(line)


PRINT_PID_AND_WAIT = "import os, time; print(os.getpid(), flush=True); time.sleep(120)"
IGNORE_SIGINT = (
    "import os, signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "print(os.getpid(), flush=True); time.sleep(120)"
)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("program", "signum", "expected"),
    [
        (PRINT_PID_AND_WAIT, signal.SIGTERM, 128 + signal.SIGTERM),
        (PRINT_PID_AND_WAIT, signal.SIGINT, 128 + signal.SIGINT),
        (IGNORE_SIGINT, signal.SIGINT, 128 + signal.SIGTERM),  # SIGTERM after the grace
    ],
    ids=["sigterm", "sigint", "child-ignores-sigint"],
)
def test_signals_reach_the_program_and_it_is_never_orphaned(
    tmp_path: Path, program: str, signum: int, expected: int
) -> None:
    """SIGTERM left the program running; a program that ignores SIGINT deadlocked dnnlens."""
    proc, child = _start_waiting(tmp_path, program, "--grace", "0.5")
    try:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == expected, err
    assert b"Traceback" not in err
    deadline = time.monotonic() + WAIT
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_run_html_report_goes_beside_the_log(tmp_path: Path) -> None:
    """``run -f html`` ran the program, then printed a 30-line traceback."""
    log = tmp_path / "k.log"
    proc = _run_here("--log", str(log), "--no-live", "-f", "html", "--", *_print_nchw())
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == NCHW.read_text()
    assert (tmp_path / "k.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_a_log_that_cannot_be_written_is_said_and_the_program_goes_on(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    proc = _run_here("--log", "/dev/full", "--no-live", "--", *_print_nchw())
    assert proc.returncode == 0  # the program's code
    assert proc.stdout == NCHW.read_text()
    assert "/dev/full: cannot write the copy of the input (No space left on device)" in proc.stderr
    assert "Traceback" not in proc.stderr
