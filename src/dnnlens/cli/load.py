"""How busy the machine was while ``dnnlens run`` ran a program, besides the program.

A run slowed by other processes shows it in its rates (:mod:`dnnlens.analysis.timing_trust`)
only when the slowdown is large; ``dnnlens run`` can also watch the machine. While the
program runs, a thread samples every :data:`INTERVAL` seconds:

* ``/proc/stat``: the CPU time of the whole machine, busy (user, nice, system, irq,
  softirq, steal) and all (idle and iowait too), read as :mod:`dnnlens.io.idle_cpus` reads
  it for ``-j``;
* ``/proc/<pid>/stat`` of the program and every process below it (utime + stime, the last
  value seen of each, so a worker that ended still counts; one that lived less than an
  interval is missed and counts as other);
* dnnlens's own CPU time (reading the output, the live view): not "other" either;
* ``os.getloadavg()``: the 1-minute load average, its highest sample.

What the machine's CPUs spent on other processes is the busy time less the program's and
dnnlens's; its share of all CPU time of the period is ``other_share``. At
:data:`BUSY_SHARE` (a quarter) or more the report gets a note: on a quiet machine other
processes use a few percent, and a quarter of the machine is a whole core of four (half of
one of two), enough to take a core from a program that uses them all, so its times are
those of a shared machine. Linux only (``/proc``); elsewhere nothing is sampled.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Seconds between samples.
INTERVAL = 0.25
#: Other processes' share of all CPU time at which the report gets a note (docstring).
BUSY_SHARE = 0.25

__all__ = ["BUSY_SHARE", "INTERVAL", "LoadSampler", "MachineLoad", "machine_cpu", "tree_cpu"]


def machine_cpu(proc: Path = Path("/proc")) -> tuple[int, int] | None:
    """(busy, all) CPU ticks of the whole machine since boot: ``/proc/stat``'s CPUs read
    as :func:`dnnlens.io.idle_cpus.parse_stat` reads them (busy: all but idle and iowait,
    steal included), summed."""
    from dnnlens.io.idle_cpus import parse_stat

    try:
        cpus = parse_stat((proc / "stat").read_bytes())
    except OSError:
        return None
    if not cpus:
        return None
    return sum(b for b, _ in cpus.values()), sum(a for _, a in cpus.values())


def _stat_fields(text: str) -> list[str]:
    """The fields of a ``/proc/<pid>/stat`` line after the command name (which may hold
    spaces and parentheses): state first, then ppid ..."""
    return text[text.rfind(")") + 2 :].split()


def tree_cpu(root: int, proc: Path = Path("/proc")) -> dict[int, int]:
    """utime + stime (ticks) of ``root`` and every process below it, by pid."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat_fields((entry / "stat").read_text())
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            ticks[pid] = int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in ticks and pid not in out:
            out[pid] = ticks[pid]
            todo.extend(children.get(pid, ()))
    return out


@dataclass(frozen=True)
class MachineLoad:
    """What the machine did while the program ran."""

    seconds: float
    cpus: int
    #: CPU seconds: all the machine had (CPUs x seconds, from /proc/stat), the whole
    #: machine busy, the program (and its processes), dnnlens
    all_s: float
    busy_s: float
    program_s: float
    dnnlens_s: float
    #: the highest 1-minute load average sampled
    loadavg_max: float | None
    samples: int

    @property
    def other_s(self) -> float:
        """CPU seconds of other processes."""
        return max(self.busy_s - self.program_s - self.dnnlens_s, 0.0)

    @property
    def other_share(self) -> float | None:
        """Other processes' share of all CPU time of the period (CPUs x seconds)."""
        return min(self.other_s / self.all_s, 1.0) if self.all_s > 0 else None

    @property
    def busy(self) -> bool:
        """Whether other processes took a large share of the CPUs (:data:`BUSY_SHARE`)."""
        share = self.other_share
        return share is not None and share >= BUSY_SHARE

    def note(self) -> str | None:
        """The report's note when the machine was busy, else None."""
        if not self.busy:
            return None
        load = f", 1-minute load average up to {self.loadavg_max:.1f}" if self.loadavg_max else ""
        return (
            f"other processes used {100 * (self.other_share or 0):.0f}% of the machine's CPU "
            f"time ({self.other_s:.1f} CPU s of {self.all_s:.1f} on "
            f"{self.cpus} CPUs{load}) while the program ran: its times are those of a shared "
            "machine; measure on a quiet one before trusting them"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "cpus": self.cpus,
            "all_cpu_s": self.all_s,
            "busy_cpu_s": self.busy_s,
            "program_cpu_s": self.program_s,
            "dnnlens_cpu_s": self.dnnlens_s,
            "other_cpu_s": self.other_s,
            "other_share": self.other_share,
            "loadavg_max": self.loadavg_max,
            "samples": self.samples,
            "busy": self.busy,
            "note": self.note(),
        }


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class LoadSampler:
    """Samples the machine's load while the program ``pid`` runs (module docstring)."""

    def __init__(
        self,
        pid: int,
        interval: float = INTERVAL,
        proc: Path = Path("/proc"),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pid = pid
        self.interval = interval
        self.proc = proc
        self.clock = clock
        self.tick_s = 1.0 / float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 0.01
        self.cpus = os.cpu_count() or 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: dict[int, int] = {}
        self._base: dict[int, int] | None = None  # the ticks of the first sample
        self._load: float | None = None
        self._samples = 0
        self._start: tuple[float, tuple[int, int], float] | None = None

    def start(self) -> LoadSampler:
        first = machine_cpu(self.proc)
        if first is None:  # not Linux: nothing to sample
            return self
        self._start = (self.clock(), first, _own_cpu_s())
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="dnnlens-load", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        tree = tree_cpu(self.pid, self.proc)
        if self._base is None:
            self._base = dict(tree)
        for pid, ticks in tree.items():
            self._seen[pid] = max(ticks, self._seen.get(pid, 0))
        load = _loadavg()
        if load is not None:
            self._load = load if self._load is None else max(self._load, load)
        self._samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> MachineLoad | None:
        """Stop sampling; what the machine did since :meth:`start` (None off Linux)."""
        if self._start is None:
            return None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        began, (busy0, all0), own0 = self._start
        end = machine_cpu(self.proc)
        if end is None:
            return None
        return MachineLoad(
            seconds=max(self.clock() - began, 0.0),
            cpus=self.cpus,
            all_s=max(end[1] - all0, 0) * self.tick_s,
            busy_s=max(end[0] - busy0, 0) * self.tick_s,
            program_s=sum(
                max(t - (self._base or {}).get(pid, 0), 0) for pid, t in self._seen.items()
            )
            * self.tick_s,
            dnnlens_s=max(_own_cpu_s() - own0, 0.0),
            loadavg_max=self._load,
            samples=self._samples,
        )
