"""The live view in a real terminal: tmux runs the commands in a pseudo-terminal and its
screen and scrollback are read back (``capture-pane``).

What a user sees is what is checked: every line of the program appears on the screen once
and in order with the live view on, no copy of the live region is left behind, the final
report appears, Ctrl-C gives the report of what was read and exit 130 (it aborted the
interpreter: "Fatal Python error: _enter_buffered_busy"), a line over 1 MiB on a pipe ends,
``<(cat LOG)`` counts what ``LOG`` counts. Every wait polls the screen with a generous
deadline; no test sleeps to decide anything.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338 lines
(``wc -l``) and 165 exec lines (``grep -c ',exec,'``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165
DNNLENS = f"{shlex.quote(sys.executable)} -m dnnlens.cli"
WAIT = 90  # seconds; a loaded 2-core CI machine starts Python slowly

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

# A "training script": 12 steps, each printing its step line and a slice of a real verbose
# log, a pause between steps (so the live view is drawn between them). Given a third
# argument, it waits after step 0 until that file exists: the test lets it go on once the
# live view is on the screen (a loaded machine can start dnnlens after a short program ended).
TRAIN = """
import os, sys, time
lines = open(sys.argv[1]).read().splitlines(keepends=True)
n = len(lines) // 12 + 1
try:
    for i in range(12):
        sys.stdout.write(f"step {i}\\n" + "".join(lines[i * n:(i + 1) * n]))
        sys.stdout.flush()
        while i == 0 and len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):
            time.sleep(0.05)
        time.sleep(float(sys.argv[2]))
except KeyboardInterrupt:
    sys.exit(130)
"""


class Terminal:
    """One tmux session on a private server, running one shell command."""

    def __init__(self, tmp_path: Path, width: int = 250, height: int = 40) -> None:
        self.tmp = tmp_path
        # a server of its own, named (its socket in tmux's own directory: a socket path
        # under a long temporary directory can pass the 107 bytes a socket name may have)
        self.server = f"dnnlens-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.socket = ""
        self.width, self.height = width, height
        config = tmp_path / "tmux.conf"
        config.write_text("set -g history-limit 50000\nset -g status off\n")
        self.config = str(config)

    def _tmux(self, *args: str) -> str:
        # the terminal's own size, not the one the test runner exported
        drop = ("TMUX", "NO_COLOR", "COLUMNS", "LINES")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        proc = subprocess.run(
            ["tmux", "-L", self.server, "-f", self.config, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=WAIT,
        )
        if proc.returncode:
            raise RuntimeError(f"tmux {args[0]}: {proc.stderr.strip()}")
        return proc.stdout

    def start(self, command: str) -> None:
        """Run ``command`` in bash; ``[exit N]`` is printed when it ends, then it waits."""
        script = self.tmp / "command.sh"
        cd = f"cd {shlex.quote(str(self.tmp))}"
        script.write_text(f'{cd}\n{command}\necho "[exit $?]"\nsleep 3600\n')
        self._tmux(
            "new-session", "-d", "-s", "t", "-x", str(self.width), "-y", str(self.height),
            f"bash --norc --noprofile {shlex.quote(str(script))}",
        )  # fmt: skip
        self.socket = self._tmux("display-message", "-p", "#{socket_path}").strip()

    def screen(self) -> str:
        """The scrollback and the screen, wrapped lines joined, trailing blanks cut."""
        text = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "t")
        return "\n".join(line.rstrip() for line in text.splitlines())

    def wait_for(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """Poll the screen until ``pattern`` (a regex) shows; the match."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            m = re.search(pattern, screen, re.M)
            if m is not None:
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{screen}")
            time.sleep(0.1)

    def exit_code(self) -> int:
        return int(self.wait_for(r"^\[exit (\d+)\]$").group(1))

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def close(self) -> None:
        try:
            self._tmux("kill-server")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        if self.socket:
            Path(self.socket).unlink(missing_ok=True)


@pytest.fixture()
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.close()


def _program_lines() -> list[str]:
    """The lines the TRAIN script prints, in order."""
    lines = NCHW.read_text().splitlines()
    n = len(lines) // 12 + 1
    out: list[str] = []
    for i in range(12):
        out += [f"step {i}", *lines[i * n : (i + 1) * n]]
    return out


def _assert_in_order(screen: str, expected: list[str]) -> None:
    """Every expected line appears on its own screen line, once, in order."""
    lines = screen.splitlines()
    pos = 0
    for want in expected:
        try:
            pos = lines.index(want, pos) + 1
        except ValueError:
            message = f"{want!r} is missing or out of order; screen:\n{screen}"
            raise AssertionError(message) from None


def test_piped_program_output_scrolls_above_the_live_view(terminal: Terminal) -> None:
    """``python train.py | dnnlens analyze - --tee``: the program's lines all stay on screen,
    in order (only "step 0" was left: the live view drew over the rest)."""
    (terminal.tmp / "train.py").write_text(TRAIN)
    terminal.start(
        f"python3 -u train.py {shlex.quote(str(NCHW))} 0.15 go | {DNNLENS} analyze - --tee"
    )
    terminal.wait_for(r"dnnlens live: \d+ lines")  # the live view was drawn while it ran
    (terminal.tmp / "go").touch()
    code = terminal.exit_code()
    screen = terminal.screen()
    assert code == 0, screen
    _assert_in_order(screen, _program_lines())
    assert "dnnlens live:" not in screen  # the region is gone, and no stale copy of it
    report = screen[screen.index("done: convnet_nchw_infer") :]
    assert re.search(rf"\b{NCHW_EXECS}\b", report), report  # the final report
    assert "Traceback" not in screen


def test_dnnlens_run_shows_the_program_intact(terminal: Terminal) -> None:
    (terminal.tmp / "train.py").write_text(TRAIN)
    terminal.start(f"{DNNLENS} run -- python3 train.py {shlex.quote(str(NCHW))} 0.15 go")
    terminal.wait_for(r"dnnlens live: \d+ lines")
    (terminal.tmp / "go").touch()
    code = terminal.exit_code()
    screen = terminal.screen()
    assert code == 0, screen
    _assert_in_order(screen, _program_lines())
    assert "dnnlens live:" not in screen
    # the note wraps at the terminal's width where the run's name (its pid) makes it long
    flowed = " ".join(screen.split())
    assert re.search(r"log kept in dnnlens-runs/run-\S+\.log; the program exited with 0", flowed)
    (log,) = (terminal.tmp / "dnnlens-runs").glob("*.log")
    assert log.read_text().splitlines() == _program_lines()


def test_ctrl_c_gives_the_report_of_what_was_read(terminal: Terminal) -> None:
    """Ctrl-C while reading: the report of the lines read, then exit 130 (not SIGABRT)."""
    (terminal.tmp / "train.py").write_text(TRAIN)
    terminal.start(f"python3 -u train.py {shlex.quote(str(NCHW))} 30 | {DNNLENS} analyze -")
    terminal.wait_for(r"dnnlens live: 30 lines")  # step 0 and its 29 lines were read
    terminal.keys("C-c")
    code = terminal.exit_code()
    screen = terminal.screen()
    assert code == 130, screen
    assert "interrupted by SIGINT: the report covers the" in screen
    assert "Fatal Python error" not in screen and "Traceback" not in screen
    assert "primitive executions" in screen  # the report's first line


def test_a_line_over_a_mebibyte_on_a_pipe_ends(terminal: Terminal) -> None:
    terminal.start(f"python3 -c \"print('x' * 1100000)\" | {DNNLENS} analyze -")
    assert terminal.exit_code() == 2  # no verbose line: an input error, said in one line
    assert "no oneDNN verbose line among its 1 line" in terminal.screen()


def test_process_substitution_counts_what_the_file_counts(terminal: Terminal) -> None:
    log = shlex.quote(str(NCHW))
    terminal.start(
        f"{DNNLENS} analyze <(cat {log}) -f json -o piped.json && "
        f"{DNNLENS} analyze {log} -f json -o file.json"
    )
    assert terminal.exit_code() == 0, terminal.screen()
    piped = json.loads((terminal.tmp / "piped.json").read_text())
    plain = json.loads((terminal.tmp / "file.json").read_text())
    assert piped["inputs"][0]["lines"] == plain["inputs"][0]["lines"] == NCHW_LINES
    for key in ("exec_count", "total_time_ms", "by_kind", "by_impl", "create_count"):
        assert piped["summary"][key] == plain["summary"][key], key
    assert piped["summary"]["exec_count"] == NCHW_EXECS
    assert piped["inputs"][0]["onednn_version"] == plain["inputs"][0]["onednn_version"]


def test_tee_into_a_file_keeps_only_the_program_output(terminal: Terminal) -> None:
    """``... | dnnlens analyze - --tee > out.log``: the file is the program's output and
    nothing else (the report went into it); no live view (standard output is not the
    terminal); the report is on the screen."""
    (terminal.tmp / "train.py").write_text(TRAIN)
    terminal.start(
        f"python3 -u train.py {shlex.quote(str(NCHW))} 0.05 | {DNNLENS} analyze - --tee > out.log"
    )
    code = terminal.exit_code()
    screen = terminal.screen()
    assert code == 0, screen
    assert (terminal.tmp / "out.log").read_text().splitlines() == _program_lines()
    assert "primitive executions" in screen and "dnnlens live:" not in screen


@pytest.mark.parametrize("tee", ["", "--tee"])
def test_ctrl_c_at_80_columns_leaves_no_live_line(tmp_path: Path, tee: str) -> None:
    """At 80 columns the live region is cut to the width: Ctrl-C erases all of it (a line
    that wrapped would leave its first half above the report), with the program's lines
    scrolling above it too (``--tee``)."""
    term = Terminal(tmp_path, width=80, height=30)
    try:
        (tmp_path / "train.py").write_text(TRAIN)
        command = f"python3 -u train.py {shlex.quote(str(NCHW))} 30 | {DNNLENS} analyze - {tee}"
        term.start(command)
        term.wait_for(r"dnnlens live: 30 lines")
        term.keys("C-c")
        code = term.exit_code()
        screen = term.screen()
        assert code == 130, screen
        assert "primitive executions" in screen
        assert "dnnlens live:" not in screen, screen
        report = screen[screen.index("primitive executions") :].splitlines()
        assert all(len(line) <= 80 for line in report)
    finally:
        term.close()
