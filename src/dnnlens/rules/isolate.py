"""Python plugins run in a child process of their own, where their budget can be enforced.

``SIGALRM`` (:mod:`dnnlens.rules.budget`) stops Python-level loops only: a plugin blocked in
C code (``sum(range(10**11))``, a NumPy call on a huge array) holds the interpreter, and
neither the alarm's handler nor SIGTERM's runs until it returns. So each plugin rule runs in
a forked child: the child shares the analysis as it is (nothing is serialised), runs the
rule and sends its checked findings back through a pipe (their length first: a process the
plugin started may hold the pipe open); dnnlens waits until the budget's time is gone, then
kills the child (and anything it started) and makes the error finding.

* What the plugin prints (file descriptors 1 and 2, so C code too) is captured and said on
  stderr escaped, one line each, prefixed by the rule's name: ``-f json`` stays JSON.
* Whatever the plugin changes (``ctx.execs``, ``ctx.stats``, the analysis) changes in the
  child only: later rules and the reports see the analysis as it was.
* SIGINT, SIGTERM and SIGHUP reaching dnnlens meanwhile kill the child at once and then go to
  the handler that was there (``StopRequest``: the report of what finished, then 130/143).
* The child dies with the thread that started it (``PR_SET_PDEATHSIG``, Linux): a Dask
  worker that is killed leaves no plugin spinning.
* **The whole tree is killed**, whatever the plugin started. The child has a process group
  of its own (``setpgid``), which catches what it starts plainly; a process that starts a
  session of its own (``os.setsid``) or a group of its own leaves that group, so the child
  is also a *child subreaper* (``PR_SET_CHILD_SUBREAPER``, Linux, set by the child on
  itself, so dnnlens itself adopts nothing): every descendant whose parent ends is
  re-parented to the child rather than to init, and so stays below it in
  ``/proc/<pid>/task/*/children``. The child never ends on its own once it has sent its
  result: it waits to be killed. At the end the parent walks that tree, stops every
  process in it (``SIGSTOP``, until a walk finds no new one: nothing forks out of reach
  meanwhile), then kills them all, their groups and the child's group. Chosen over a
  subreaper on dnnlens's side, which would make dnnlens adopt the orphans of every other
  process it started (a ``-j`` worker's, a Dask worker's) while a plugin runs. Out of
  reach still: a plugin that ends its own child process (``os._exit``) or crashes it, after
  starting a session of its own.
* **A signal while the child starts** is not lost: SIGINT, SIGTERM and SIGHUP are blocked
  from before ``fork`` until the parent's handler that kills the child is in place (and, in
  the child, until their default action is back), so one that lands in between is
  delivered then, and the child is killed (no orphan).

Without ``os.fork`` (Windows) plugins run in this process within the ``SIGALRM`` budget.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NoReturn

from dnnlens.analysis.analysis import AnalysisError
from dnnlens.errors import say
from dnnlens.rules.budget import RuleBudget

if TYPE_CHECKING:
    from dnnlens.analysis.findings import Finding
    from dnnlens.rules.base import Rule
    from dnnlens.rules.context import RuleContext

#: Signals that end dnnlens: while a plugin runs they kill it first.
_ENDING = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
#: What a plugin may print that is shown: lines, bytes kept, characters of one line.
SHOWN_LINES = 20
KEPT_BYTES = 16 << 10
LINE_CHARS = 500

#: The length of the pickled result, sent before it.
_LENGTH = struct.Struct("<Q")

RunHere = Callable[["Rule", "RuleContext", RuleBudget], "list[Finding]"]


def available() -> bool:
    """Whether plugins can run in a child process here (POSIX ``fork``)."""
    return hasattr(os, "fork")


@dataclass
class Outcome:
    """How a plugin's run in its child ended."""

    #: its findings (an error finding of its own when it broke within its budget)
    findings: list[Finding] | None = None
    #: why it gave none: over time, killed, ended without a result
    failure: str = ""
    #: a signal that reached dnnlens while it ran (the child was killed)
    signum: int | None = None
    #: a fact of the analysis failed in the child: a bug of dnnlens, raised as such
    bug: str = ""


def run_isolated(rule: Rule, ctx: RuleContext, budget: RuleBudget, run_here: RunHere) -> Outcome:
    """Run ``run_here(rule, ctx, budget)`` in a child; its findings, or why there are none."""
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    blocked = _block(_ENDING)  # until the handler that kills the child is in place
    try:
        pid = os.fork()
    except BaseException:
        _unblock(blocked)
        raise
    if pid == 0:  # pragma: no cover - the child; coverage does not follow it
        os.close(res_r)
        os.close(out_r)
        _child(rule, ctx, budget, run_here, res_w, out_w, blocked)
    os.close(res_w)
    os.close(out_w)
    child = _Child(pid, res_r, out_r)
    try:
        with _ending_signals() as wake:
            _unblock(blocked)  # a signal that came meanwhile is delivered now: it wakes us
            blocked = ()
            outcome = child.wait(budget.seconds, wake)
    finally:
        _unblock(blocked)
        child.end()
    _show_output(rule, child.output, child.dropped)
    return outcome


def _block(signums: tuple[int, ...]) -> tuple[int, ...]:
    """Block ``signums`` in this thread; those that were not blocked already."""
    if not signums or not hasattr(signal, "pthread_sigmask"):
        return ()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signums)
    return tuple(n for n in signums if n not in before)


def _unblock(signums: tuple[int, ...]) -> None:
    if signums:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signums)


def _children(pid: int) -> set[int]:
    """The children of ``pid`` (Linux ``/proc``; none where it cannot be read)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.update(int(p) for p in fh.read().split())
    return found


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid``."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()) - found:
            found.add(child)
            todo.append(child)
    return found


def _signal_all(pids: set[int], signum: int) -> None:
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(p, signum)


class _Child:
    """The parent's side of one child: its pipes, what it sent, its end."""

    def __init__(self, pid: int, res: int, out: int) -> None:
        self.pid = pid
        self.res, self.out = res, out
        self.result = bytearray()
        self.output = bytearray()
        self.dropped = 0
        self.status: int | None = None

    def wait(self, seconds: float | None, wake: _Wake) -> Outcome:
        """Read until the child has sent its result (the end of its result pipe), its time is
        up or a signal came."""
        deadline = None if seconds is None else time.monotonic() + seconds
        open_fds = [self.res, self.out]
        while self.res in open_fds and not self._complete():
            if wake.signum is not None:
                return Outcome(signum=wake.signum)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return Outcome(failure=f"ran longer than its limit of {seconds:g} s")
            ready, _, _ = select.select([*open_fds, *wake.fds], [], [], left)
            for fd in ready:
                if fd in wake.fds:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.remove(fd)
                elif fd == self.res:
                    self.result += chunk
                else:
                    self._keep(chunk)
        self.end()  # its result is in: the child has nothing left to do
        return self._outcome()

    def _complete(self) -> bool:
        """Whether the whole result is in: its length first, then as many bytes (a process
        the plugin started holds the pipe open too, so its end may never come)."""
        if len(self.result) < _LENGTH.size:
            return False
        return len(self.result) >= _LENGTH.size + _LENGTH.unpack_from(self.result)[0]

    def _keep(self, chunk: bytes) -> None:
        room = KEPT_BYTES - len(self.output)
        self.output += chunk[: max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def _drain(self) -> None:
        """What the child printed and is still in the pipe (no wait: a grandchild that
        left the child's process group may hold it open)."""
        while select.select([self.out], [], [], 0)[0]:
            chunk = os.read(self.out, 1 << 16)
            if not chunk:
                return
            self._keep(chunk)

    def _outcome(self) -> Outcome:
        try:
            if not self._complete():
                raise ValueError("a part of the result")
            kind, value = pickle.loads(bytes(self.result[_LENGTH.size :]))
        except Exception:  # noqa: BLE001 - a child that ended early sent nothing whole
            return Outcome(failure=f"ended without its findings ({_how(self.status)})")
        if kind == "bug":
            return Outcome(bug=str(value))
        if kind == "failed":
            return Outcome(failure=str(value))
        return Outcome(findings=list(value))

    def end(self) -> None:
        """The child and anything it started are gone, what it printed read, the pipes
        closed (again: nothing)."""
        if self.res < 0:
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGSTOP)  # the child forks no more
        stopped: set[int] = set()
        for _ in range(1000):  # a tree that forks while it is walked: until no new one
            fresh = _descendants(self.pid) - stopped
            if not fresh:
                break
            _signal_all(fresh, signal.SIGSTOP)
            stopped |= fresh
        groups = {self.pid}
        for p in stopped:
            with contextlib.suppress(OSError):
                groups.add(os.getpgid(p))
        groups.discard(os.getpgrp())  # never dnnlens's own group
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
        _signal_all(stopped | {self.pid}, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            self.status = os.waitpid(self.pid, 0)[1]
        self._drain()
        for fd in (self.res, self.out):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.res = self.out = -1


def _how(status: int | None) -> str:
    if status is None:
        return "still running"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


class _Wake:
    """A signal that came while a plugin ran, and the pipe that wakes the wait for it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.fds: list[int] = []


@contextlib.contextmanager
def _ending_signals() -> Iterator[_Wake]:
    """While the block runs (main thread), SIGINT/SIGTERM/SIGHUP end the wait; afterwards
    the signal goes to the handler that was installed (or its default action)."""
    wake = _Wake()
    if threading.current_thread() is not threading.main_thread():
        yield wake
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    wake.fds = [r]
    old: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        if wake.signum is None:
            wake.signum = signum
        with contextlib.suppress(OSError):
            os.write(w, b"\0")

    try:
        for signum in _ENDING:
            before = signal.getsignal(signum)
            if before is not signal.SIG_IGN:
                old[signum] = before
                signal.signal(signum, on_signal)
        yield wake
    finally:
        for signum, before in old.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)
        os.close(r)
        os.close(w)
    if wake.signum is not None:
        _pass_on(wake.signum, old.get(wake.signum))


def _pass_on(signum: int, handler: Any) -> None:
    """Deliver ``signum`` to ``handler``, as if the plugin had not been running."""
    if callable(handler):
        handler(signum, None)
    else:  # the default action: end as the signal ends a process
        signal.raise_signal(signum)


def _show_output(rule: Rule, output: bytes, dropped: int) -> None:
    """What the plugin printed, escaped, on stderr: one line each, its name first."""
    if not output:
        return
    name = rule.rule_name if isinstance(rule.rule_name, str) else "?"
    lines = output.decode("utf-8", "backslashreplace").splitlines()
    for line in lines[:SHOWN_LINES]:
        say("note", f"rule {name} printed: {line[:LINE_CHARS]}")
    more = len(lines) - SHOWN_LINES
    if more > 0 or dropped:
        left = f"{max(more, 0):,} lines, {dropped:,} bytes"
        say("note", f"rule {name} printed more ({left}) not shown")


def _child(
    rule: Rule,
    ctx: RuleContext,
    budget: RuleBudget,
    run_here: RunHere,
    res: int,
    out: int,
    blocked: tuple[int, ...] = (),
) -> NoReturn:  # pragma: no cover - runs in the child
    """Run the rule and send its findings, then wait to be killed (the parent walks the
    tree below this process first); never return into the parent's code."""
    try:
        for signum in _ENDING:
            signal.signal(signum, signal.SIG_DFL)
        _unblock(blocked)  # a stop signal that came while forking ends this child now
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        os.setpgid(0, 0)
        _die_with_parent()
        _adopt_orphans()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        for fd in (null, out):
            os.close(fd)
        text = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False), "utf-8", "backslashreplace", write_through=True
        )
        sys.stdout = sys.stderr = text
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        message: tuple[str, Any]
        try:
            message = ("ok", run_here(rule, ctx, replace(budget, seconds=None)))
        except AnalysisError as exc:
            message = ("bug", str(exc))
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt raised by the plugin
            message = ("failed", f"{type(exc).__name__}: {_first_line(exc)}")
        try:
            payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - said as the rule's failure
            detail = f"its findings cannot be sent back: {type(exc).__name__}: {_first_line(exc)}"
            payload = pickle.dumps(("failed", detail), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_LENGTH.pack(len(payload)) + payload)
        while view:
            view = view[os.write(res, view) :]
        os.close(res)  # the parent reads the end of the result, then kills this process
        while True:
            signal.pause()
    finally:
        os._exit(0)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def _adopt_orphans() -> None:  # pragma: no cover - runs in the child
    """Make this child the subreaper of what the plugin starts (Linux prctl), so that a
    process whose parent ends stays below it, where :meth:`_Child.end` finds it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """SIGKILL when the thread that forked this child ends (Linux prctl)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent was already gone
        os._exit(0)
