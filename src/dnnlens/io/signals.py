"""SIGINT, SIGTERM and SIGHUP as a request to stop reading, so that what was read is still
reported.

While a :class:`StopRequest` is installed (``with StopRequest() as stop:``, in the main
thread), the first SIGINT, SIGTERM or SIGHUP only sets :attr:`StopRequest.signum`: the
reading layer looks at it between blocks, stops, and the command reports what was read and
exits with :attr:`StopRequest.exit_code` (130, 143 or 129, as a shell reports a process ended
by the signal). SIGHUP (the terminal closed, an ssh session dropped, ``kill -HUP``) is a
request to end like SIGTERM: without a handler it would end dnnlens with no report.
A second signal ends the command at once (``KeyboardInterrupt`` for SIGINT, ``SystemExit``
with the same code for SIGTERM), unless ``on_signal`` handles every signal itself (``dnnlens
run`` passes them on to its program).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

#: SIGHUP is missing on Windows.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class StopCheck(Protocol):
    """What reading looks at between blocks: true when it should stop now."""

    def __bool__(self) -> bool: ...


class StopRequest:
    """The first SIGINT, SIGTERM or SIGHUP received while installed (see the module doc)."""

    def __init__(self, on_signal: Callable[[int, int], None] | None = None) -> None:
        #: the first signal received, None while there was none
        self.signum: int | None = None
        #: how many stop signals were received
        self.count = 0
        self._on_signal = on_signal
        self._old: dict[int, Any] = {}

    def __bool__(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP); 0 without one."""
        return 128 + self.signum if self.signum is not None else 0

    @property
    def name(self) -> str:
        """The signal's name (``SIGINT``), empty without one."""
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def request(self, signum: int) -> None:
        """Stop as if ``signum`` had been received (a closed pipe, a test)."""
        self._handle(signum, None)

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._old[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        first = self.signum is None
        if first:
            self.signum = signum
        if self._on_signal is not None:
            self._on_signal(signum, self.count)
        elif not first:
            self.__exit__()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + signum)
