"""How the reading layer reports its progress, without knowing who shows it.

The reading layer calls a :class:`Progress`; the terminal layer implements it with a bar
(``dnnlens.report.console``). Amounts are raw bytes as read from each input (compressed
bytes for a compressed file), so a file's size is the total to expect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from dnnlens.io.inputs import InputSource


class Progress(Protocol):
    """Told when reading starts, as bytes of each input are read, and when it is done."""

    def start(self, sources: Sequence[InputSource]) -> None:
        """Reading of ``sources`` begins (in this order)."""

    def advance(self, source: InputSource, nbytes: int) -> None:
        """``nbytes`` more raw bytes of ``source`` were read."""

    def finish(self) -> None:
        """Reading is over (also when it stopped early)."""


class NoProgress:
    """A :class:`Progress` that shows nothing."""

    def start(self, sources: Sequence[InputSource]) -> None:
        """Nothing to show."""

    def advance(self, source: InputSource, nbytes: int) -> None:
        """Nothing to show."""

    def finish(self) -> None:
        """Nothing to show."""
