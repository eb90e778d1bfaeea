"""Limits of one rule's run: time, memory and findings, so a broken rule cannot stop the run.

A Python plugin is code the user chose to run, and code can do anything; these limits guard
against the mistakes such code makes (``while True``, a generator that never ends, a table
that grows without bound), not against malice. Built-in rules run without them.

* **time**: a Python plugin runs in a child process that is killed after ``seconds``
  (:mod:`dnnlens.rules.isolate`), whatever it is doing; a rule-file rule (and a plugin
  where there is no ``fork``) is interrupted by ``SIGALRM`` (POSIX, main thread), which
  stops Python code but not a call into C. The interruption is a ``BaseException``, so
  ``except Exception`` in the rule does not swallow it.
* **memory**: the address space may grow by ``memory_bytes`` while the rule runs
  (``RLIMIT_AS``, Linux); past it allocations fail with ``MemoryError``.
* **findings**: at most ``max_findings`` per rule; the rule's iterator is not read further.

Any breach, like any exception the rule raises (``SystemExit`` too), becomes
:class:`RuleFailure`: one error finding for that rule, and the other rules run.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

try:
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]


#: A plugin's or rule-file rule's time, s, unless its budget says otherwise.
DEFAULT_SECONDS = 60.0


def _default_seconds() -> float | None:
    return DEFAULT_SECONDS


@dataclass(frozen=True)
class RuleBudget:
    """What one plugin or rule-file rule may use; ``None`` means no limit."""

    seconds: float | None = field(default_factory=_default_seconds)
    memory_bytes: int | None = 4 << 30
    max_findings: int = 1000


class RuleFailure(Exception):
    """A rule broke (raised, overran its budget, returned something that is not findings);
    the message says how, in one line."""


class _OutOfTime(BaseException):
    """Raised inside a rule by the alarm (BaseException: ``except Exception`` keeps out)."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` with :class:`RuleFailure`."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _OutOfTime

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))  # type: ignore[arg-type]
    try:
        yield
    except _OutOfTime:
        raise RuleFailure(f"ran longer than its limit of {seconds:g} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


@contextmanager
def memory_limit(extra_bytes: int | None) -> Iterator[None]:
    """Let the address space grow by at most ``extra_bytes`` inside the block (Linux)."""
    if extra_bytes is None or resource is None or not sys.platform.startswith("linux"):
        yield
        return
    used = _address_space()
    if used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = used + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    except MemoryError:
        raise RuleFailure(f"used more than its memory limit of {extra_bytes >> 20:,} MiB") from None
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def collect(produced: Any, max_findings: int) -> list[Any]:
    """The items of what ``check`` returned, at most ``max_findings`` of them."""
    if produced is None:
        return []
    if isinstance(produced, str | bytes) or not hasattr(produced, "__iter__"):
        raise RuleFailure(
            f"check() returned a {type(produced).__name__}, not findings (yield or return "
            "a list of self.finding(...))"
        )
    items = []
    for item in produced:
        if len(items) >= max_findings:
            raise RuleFailure(f"produced more than {max_findings:,} findings")
        items.append(item)
    return items
