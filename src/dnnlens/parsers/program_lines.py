"""The program's own lines between oneDNN's, by shape, with where each shape occurs.

Training scripts print a line per step (``step 12/100 loss 2.31 time 41.2 ms``), Keras a
line per batch; such a line, repeated between passes of the exec stream, is the best
iteration boundary there is: the program says where its steps are. The scanner keeps no
foreign line, so this keeps, per input, the *shape* of each foreign line (its text with every
number replaced by ``#``, see :func:`line_shape`) and the line numbers where it occurred.

Memory is bounded whatever the input: at most :data:`MAX_SHAPES` shapes per input (when
full, shapes seen once are dropped to make room, as one-off warnings are never markers) and
the last :data:`MAX_LINES_PER_SHAPE` line numbers of each (a step marker every few events
needs no more inside the analysis window of 200,000 events).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field

__all__ = ["MAX_LINES_PER_SHAPE", "MAX_SHAPES", "ProgramLines", "line_shape"]

#: Distinct shapes kept per input: a script prints a few dozen kinds of lines.
MAX_SHAPES = 256
#: Line numbers kept per shape (the most recent ones).
MAX_LINES_PER_SHAPE = 200_000
#: Characters of a line that make its shape (a progress bar's tail does not tell steps apart).
SHAPE_CHARS = 160

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def line_shape(line: str) -> str:
    """The shape of a program line: stripped, terminal escapes removed, numbers as ``#``.

    ``step 3/13 loss 2.3012 time 4.21 ms`` -> ``step #/# loss # time # ms``. A line carried
    over with carriage returns (a progress bar) is shaped by its last part.
    """
    text = line.rstrip("\r\n")
    if "\r" in text:
        text = text.rstrip("\r").rpartition("\r")[2]
    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    return _NUMBER.sub("#", text.strip()[:SHAPE_CHARS])


@dataclass
class ProgramLines:
    """Shapes of the foreign lines of one input and their line numbers (1-based)."""

    lines: dict[str, array] = field(default_factory=dict)
    #: shapes that were not kept because the table was full of repeated shapes
    dropped_shapes: int = 0
    full: bool = False

    def add(self, line: str, lineno: int) -> None:
        """Note one foreign line."""
        shape = line_shape(line)
        if not shape:
            return
        at = self.lines.get(shape)
        if at is None:
            if len(self.lines) >= MAX_SHAPES and not self._make_room():
                self.dropped_shapes += 1
                return
            at = self.lines[shape] = array("q")
        at.append(lineno)
        if len(at) > 2 * MAX_LINES_PER_SHAPE:
            del at[: len(at) - MAX_LINES_PER_SHAPE]

    def _make_room(self) -> bool:
        """Drop the shapes seen once; False (and no more tries) when that frees too little."""
        if self.full:
            return False
        for shape in [s for s, at in self.lines.items() if len(at) == 1]:
            del self.lines[shape]
            self.dropped_shapes += 1
        if len(self.lines) > MAX_SHAPES * 3 // 4:
            self.full = True
        return len(self.lines) < MAX_SHAPES

    def merge(self, part: ProgramLines, offset: int) -> None:
        """Add the shapes of ``part``, the next lines of the same input (``offset`` lines on)."""
        for shape, at in part.lines.items():
            mine = self.lines.get(shape)
            if mine is None:
                if len(self.lines) >= MAX_SHAPES and not self._make_room():
                    self.dropped_shapes += 1
                    continue
                mine = self.lines[shape] = array("q")
            mine.extend(n + offset for n in at)
            if len(mine) > MAX_LINES_PER_SHAPE:
                del mine[: len(mine) - MAX_LINES_PER_SHAPE]
        self.dropped_shapes += part.dropped_shapes
