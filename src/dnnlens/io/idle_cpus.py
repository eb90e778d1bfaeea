"""The CPUs other processes left idle lately, from two looks at the kernel's CPU times.

Linux's ``/proc/stat`` counts, per CPU, the clock ticks spent idle (``idle`` and
``iowait``) and busy (everything else, ``steal`` included: a virtual CPU the hypervisor
gave to another machine is no CPU of ours). Between two looks, a CPU's busy ticks over
its ticks are the share of it that was busy; summed over the CPUs this process may use,
less what this process and its reaped children spent (``os.times``), that is the CPUs
other work kept busy in the interval. The command takes the first look where it starts
(:func:`mark_start`, from ``dnnlens.cli`` before it imports anything else: reading a few
hundred bytes, no module imported), the second when the number of workers is chosen, after
the command's imports (this process busy on one CPU meanwhile, taken out as said).

Why this and not the load average: the load average counts every process that ran in the
last minute, this user's own earlier dnnlens runs included (a loop over files, a
benchmark, a test of the suite just before): right after one run, the next would see an
idle machine as busy. Here only what ran in the interval counts, and this process's
own work is taken out exactly, not as "one running process".

What it misses: work that starts after the second look, or that paused during the whole
interval (a test runner between two tests, a build between two files) counts as idle; a
CPU shared as two hyperthreads counts as two; a container's CPU quota (cgroups) is not
seen, only the CPUs it may run on. Ticks are 10 ms (``SC_CLK_TCK``): over 0.2 s on two
CPUs the measure is good to about a tenth of a CPU.

Where ``/proc/stat`` is absent or unreadable (macOS, Windows, a sandbox hiding it) there
is no measure: :func:`idle_since_start` says None and the caller decides (the reading then
uses one process unless told otherwise, ``dnnlens.reading.parallel.idle_cores``).
"""

from __future__ import annotations

import os
import time

PROC_STAT = "/proc/stat"
#: The shortest interval measured: a look taken later than this after the first is
#: waited for (a caller that did not take one at its start waits this long).
MIN_SECONDS = 0.1
#: The longest interval measured: an older first look (a long-lived process, a second
#: reading of one command) is replaced by a fresh one, waited for: the last minute's
#: average is what the load average already says.
MAX_SECONDS = 5.0


class Look:
    """The kernel's CPU times at one moment: per CPU, ticks busy and ticks in all; and the
    CPU seconds of this process and its reaped children, and when."""

    __slots__ = ("cpus", "own_seconds", "when")

    def __init__(self, cpus: dict[int, tuple[int, int]], own_seconds: float, when: float) -> None:
        self.cpus = cpus
        self.own_seconds = own_seconds
        self.when = when


_start: list[Look] = []


def parse_stat(text: bytes) -> dict[int, tuple[int, int]]:
    """Per CPU of a ``/proc/stat`` text, (busy ticks, all ticks). The fields are user, nice,
    system, idle, iowait, irq, softirq, steal (older kernels stop earlier); guest times are
    inside user and nice already, so they are left out. A line that does not read is not
    a CPU of the result."""
    cpus: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        if not line.startswith(b"cpu") or line[3:4] in (b" ", b""):
            continue  # the first line is all CPUs together
        fields = line.split()
        try:
            cpu = int(fields[0][3:])
            ticks = [int(f) for f in fields[1:9]]
        except ValueError:
            continue
        if len(ticks) < 4:
            continue
        total = sum(ticks)
        cpus[cpu] = (total - ticks[3] - (ticks[4] if len(ticks) > 4 else 0), total)
    return cpus


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def look() -> Look | None:
    """The CPU times now; None without a readable ``/proc/stat``."""
    try:
        with open(PROC_STAT, "rb") as f:
            text = f.read()
    except OSError:
        return None
    cpus = parse_stat(text)
    return Look(cpus, _own_seconds(), time.monotonic()) if cpus else None


def mark_start() -> None:
    """The first look of this process (once; the command line's entry point)."""
    if not _start:
        first = look()
        if first is not None:
            _start.append(first)


def idle_between(
    before: Look, after: Look, cpus: set[int], ticks_per_second: float
) -> float | None:
    """How many of ``cpus`` work other than this process's left idle between the two
    looks, on average (all of them when the busy ticks were all this process's); None when
    no tick passed on them. A CPU missing from either look is not counted."""
    busy = total = 0
    counted = 0
    for cpu in cpus:
        if cpu in before.cpus and cpu in after.cpus:
            busy += after.cpus[cpu][0] - before.cpus[cpu][0]
            total += after.cpus[cpu][1] - before.cpus[cpu][1]
            counted += 1
    if total <= 0:
        return None
    own = (after.own_seconds - before.own_seconds) * ticks_per_second
    per_cpu = total / counted  # the interval, in ticks of one CPU
    others = max(0.0, busy - own) / per_cpu
    return max(0.0, counted - others)


def idle_since_start(cpus: set[int]) -> float | None:
    """How many of ``cpus`` other work left idle since the first look (the command's
    start; a fresh one, waited for :data:`MIN_SECONDS`, when there is none or it is older
    than :data:`MAX_SECONDS`); None without ``/proc/stat``."""
    first = _start[0] if _start else None
    if first is None or time.monotonic() - first.when > MAX_SECONDS:
        first = look()
        if first is None:
            return None
    wait = first.when + MIN_SECONDS - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    last = look()
    if last is None:
        return None
    return idle_between(first, last, cpus, os.sysconf("SC_CLK_TCK"))
