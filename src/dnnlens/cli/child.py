"""The programs dnnlens starts (``dnnlens run``, ``dnnlens capture``): one environment
policy and one way to start, watch and end them.

Environment: the user's (without what the command line set for dnnlens itself), plus
oneDNN's verbose switch for every release family (``ONEDNN_VERBOSE`` from 2.5,
``DNNL_VERBOSE`` 1.1-2.4, ``MKLDNN_VERBOSE`` before): an explicit ``--level`` is set for
all of them; without one, a level the user already exported is kept (and given to the other
families), else 1. Timestamps (``*_VERBOSE_TIMESTAMP=1``) and ``PYTHONUNBUFFERED=1`` (a
Python program's lines come as they are printed) are set unless the user set them.

Life: SIGINT, SIGTERM and SIGHUP reaching dnnlens are passed on to the program (SIGINT only
when the terminal did not send it to the program itself); a program still running
``grace`` seconds later gets SIGTERM, then SIGKILL: it is never left running. Its exit code
is reported as a shell does (128 + N for signal N).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping

import typer

__all__ = [
    "VERBOSE_LEVELS",
    "ChildError",
    "ChildWatch",
    "check_level",
    "shell_code",
    "start",
    "verbose_environment",
]

#: Every release family's verbose switch and timestamp switch.
VERBOSE_SWITCHES = ("ONEDNN_VERBOSE", "DNNL_VERBOSE", "MKLDNN_VERBOSE")
TIMESTAMP_SWITCHES = ("ONEDNN_VERBOSE_TIMESTAMP", "DNNL_VERBOSE_TIMESTAMP")
#: ``ONEDNN_VERBOSE`` values (docs/onednn-verbose-format.md): 0/1/2, and v3.2+ names.
VERBOSE_LEVELS = (
    "0",
    "1",
    "2",
    "none",
    "error",
    "warn",
    "check",
    "profile_create",
    "profile_exec",
    "profile",
    "dispatch",
    "all",
    "profile_externals",
)
_LEVEL_WITH_VALUE = re.compile(r"^(?:debuginfo=[0-9]+|filter=.+)$")
#: How long reading goes on after the program exited while its pipe stays open (a process
#: it started in the background holds it).
_AFTER_EXIT_SECONDS = 1.0
#: What the help of ``--level`` says, for both commands.
LEVEL_HELP = (
    "ONEDNN_VERBOSE for the program: 1 executions, 2 creations too, or a v3.2+ name "
    "(profile_exec, all, ...); default: the level already exported, else 1."
)


def verbose_environment(
    base: Mapping[str, str],
    level: str | None,
    timestamps: bool = True,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``base`` with the verbose switches of the module's policy, then ``extra``."""
    env = dict(base)
    inherited = next((env[n] for n in VERBOSE_SWITCHES if env.get(n)), "1")
    for name in VERBOSE_SWITCHES:
        if level is not None:
            env[name] = level
        else:
            env.setdefault(name, inherited)
    if timestamps:
        for name in TIMESTAMP_SWITCHES:
            env.setdefault(name, "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


def check_level(value: str | None) -> str | None:
    """A typer callback: ``value`` must be an ``ONEDNN_VERBOSE`` level (or a list of them)."""
    if value is None:
        return None
    items = value.split(",")
    if value and all(i in VERBOSE_LEVELS or _LEVEL_WITH_VALUE.match(i) for i in items):
        return value
    raise typer.BadParameter(
        f"{value!r} is not a verbose level: one of {', '.join(VERBOSE_LEVELS)}, "
        "debuginfo=N or filter=REGEX (comma-separated)"
    )


class ChildError(Exception):
    """The program could not be started (one line: which and why)."""


def start(command: list[str], env: Mapping[str, str], merge_stderr: bool) -> subprocess.Popen:
    """Start ``command`` with its standard output on a pipe (its error too, when
    ``merge_stderr``)."""
    try:
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else None,
            env=dict(env),
        )
    except OSError as exc:
        raise ChildError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None


def shell_code(returncode: int) -> int:
    """A process's exit code as a shell reports it: 128 + N when signal N ended it."""
    return 128 - returncode if returncode < 0 else returncode


def _from_terminal() -> bool:
    """Whether a SIGINT came from the terminal: then it went to the program too (same
    foreground process group)."""
    for stream in (sys.stdin, sys.stderr, sys.stdout):
        try:
            if stream is not None and stream.isatty():
                return os.tcgetpgrp(stream.fileno()) == os.getpgrp()
        except (OSError, ValueError, AttributeError):
            continue
    return False


class ChildWatch:
    """The program's life while its output is read: signals passed on, then SIGTERM and
    SIGKILL when it does not end; and, for the reading layer, when to stop reading (its
    truth value: the program ended a while ago and its pipe is still open)."""

    def __init__(self, proc: subprocess.Popen, grace: float) -> None:
        self.proc = proc
        self.grace = grace
        self.signum: int | None = None
        self._asked: float | None = None  # when the last signal was sent to the program
        self._ladder = [signal.SIGTERM, signal.SIGKILL]
        self._ended: float | None = None

    # what the pipeline reads as the stop request
    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum else 0

    def on_signal(self, signum: int, count: int) -> None:
        """SIGINT or SIGTERM reached dnnlens: pass it on, or escalate on the next ones."""
        if count == 1:
            self.signum = signum
            if signum == signal.SIGINT and _from_terminal():
                self._asked = time.monotonic()  # the terminal sent it to the program too
            else:
                self._send(signum)
        else:
            self._escalate()

    def _send(self, signum: int) -> None:
        if signum in self._ladder:
            self._ladder = self._ladder[self._ladder.index(signum) + 1 :]
        self._asked = time.monotonic()
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:  # pragma: no cover - it ended just now
                pass

    def _escalate(self) -> None:
        if self._ladder:
            self._send(self._ladder[0])

    def tick(self) -> None:
        """Escalate when the program outlives its grace; note when it ended."""
        now = time.monotonic()
        if self._ended is None and self.proc.poll() is not None:
            self._ended = now
        if self._ended is None and self._asked is not None and now - self._asked >= self.grace:
            self._escalate()

    def __bool__(self) -> bool:
        self.tick()
        return self._ended is not None and time.monotonic() - self._ended > _AFTER_EXIT_SECONDS

    def wait(self) -> int:
        """Wait for the program (escalating as :meth:`tick` does); its exit code as a shell
        reports it (128 + N for signal N)."""
        while self.proc.poll() is None:
            self.tick()
            try:
                self.proc.wait(0.1)
            except subprocess.TimeoutExpired:
                continue
        return shell_code(self.proc.returncode)

    def kill(self) -> None:
        """Never leave the program running: SIGTERM, then SIGKILL after the grace."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                return
            self.proc.send_signal(signum)
            try:
                self.proc.wait(self.grace)
            except subprocess.TimeoutExpired:
                continue
