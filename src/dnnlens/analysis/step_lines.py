"""The program's own step lines: a line it prints once per pass marks the iterations.

A training script prints a line per step (``step 3/13 loss 2.30 time 4.2 ms``), a Keras
callback one per batch. Such a line, repeated between passes, says where the program's
steps begin and end better than any structure of the exec stream can: a pass of four
identical layers repeats with the layer's period too, and a pass whose shapes change does
not repeat at all. The scanner keeps each foreign line's shape and line numbers
(:mod:`dnnlens.parsers.program_lines`); this picks, per input, the shape that cuts the exec
stream into passes, if one does:

* it occurs :data:`MIN_MARKERS` times at least between the input's first and last exec line;
* the stretches between two of its lines hold exec rows: at most :data:`EMPTY_SHARE` of them
  are empty (a step that ran nothing in oneDNN, an evaluation step);
* the stretches repeat: at least half of them run the same primitives (sizes and order
  aside), so that a warning printed now and then does not cut the run at random;
* of the shapes that qualify, the one with the most stretches wins: a line per step beats
  a line per epoch.

Lines inside a profiler table printed in the log (one row per op, repeated with every
table) are never step lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dnnlens.parsers.program_lines import ProgramLines

__all__ = ["EMPTY_SHARE", "MIN_MARKERS", "StepLines", "find_step_lines"]

#: Step lines needed: two steady passes and the one before them.
MIN_MARKERS = 3
#: Share of stretches between step lines that may hold no exec row.
EMPTY_SHARE = 0.1
#: Share of the stretches that must run the most common sequence.
REPEAT_SHARE = 0.5


@dataclass(frozen=True)
class StepLines:
    """The step lines found in one input: their shape (numbers as ``#``) and line numbers."""

    shape: str
    lines: np.ndarray


def _outside(lines: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """``lines`` outside every span of ``spans`` (``(first, last)`` rows sorted by first and
    not overlapping, as the tables of a log are): one search, not a pass per span."""
    at = np.searchsorted(spans[:, 0], lines, side="right") - 1
    inside = (at >= 0) & (lines <= spans[np.maximum(at, 0), 1])
    return lines[~inside]


def find_step_lines(
    program: ProgramLines,
    exec_lines: np.ndarray,
    shapeless: np.ndarray,
    excluded: Iterable[tuple[int, int]] = (),
) -> StepLines | None:
    """The step lines of one input (module docstring), or ``None``.

    ``exec_lines`` are the input's exec rows' line numbers in order, ``shapeless`` their
    primitive ids without sizes; ``excluded`` spans of lines (first, last) never count.
    """
    if len(exec_lines) < 2 or not program.lines:
        return None
    spans = np.asarray(sorted(excluded), dtype=np.int64).reshape(-1, 2)
    lo, hi = int(exec_lines[0]), int(exec_lines[-1])
    best: tuple[int, int, str, np.ndarray] | None = None
    for shape, at in program.lines.items():
        if len(at) < MIN_MARKERS:
            continue
        lines = np.frombuffer(at, dtype=np.int64) if len(at) else np.zeros(0, np.int64)
        lines = lines[(lines > lo) & (lines < hi)]
        if len(spans):
            lines = _outside(lines, spans)
        if len(lines) < MIN_MARKERS - 1:  # the first pass ends at the first line
            continue
        stretches = _stretches(exec_lines, lines)
        sizes = stretches[:, 1] - stretches[:, 0]
        inner = sizes[1:-1]
        if len(inner) and (inner == 0).mean() > EMPTY_SHARE:
            continue
        full = stretches[sizes > 0]
        if len(full) < MIN_MARKERS or not _repeats(shapeless, full):
            continue
        score = (len(full), -int(lines[0]))
        if best is None or score > best[:2]:
            best = (*score, shape, lines)
    if best is None:
        return None
    return StepLines(best[2], best[3].copy())


def _stretches(exec_lines: np.ndarray, markers: np.ndarray) -> np.ndarray:
    """``[begin, end)`` exec-row ranges before, between and after the markers."""
    cuts = np.searchsorted(exec_lines, markers)
    edges = np.concatenate([[0], cuts, [len(exec_lines)]]).astype(np.int64)
    return np.column_stack([edges[:-1], edges[1:]])


#: Odd 64-bit multipliers that spread primitive ids before they are summed per stretch.
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _repeats(shapeless: np.ndarray, stretches: np.ndarray) -> bool:
    """Whether most stretches run the same primitives (sizes and order aside: a threadpool
    may run independent ops of a step in another order).

    A stretch's primitives as a multiset are fingerprinted by its length and two sums of
    its mixed ids (wrapping 64-bit arithmetic), all stretches at once: no Python work per
    stretch, however many steps the log holds.
    """
    ids = shapeless.astype(np.uint64) + np.uint64(1)
    begins, ends = stretches[:, 0], stretches[:, 1]
    prints = [ends - begins]
    with np.errstate(over="ignore"):
        for mix in _MIX:
            mixed = ids * mix
            mixed ^= mixed >> np.uint64(29)
            csum = np.concatenate([[np.uint64(0)], np.cumsum(mixed, dtype=np.uint64)])
            prints.append((csum[ends] - csum[begins]).astype(np.int64))
    _, counts = np.unique(np.column_stack(prints), axis=0, return_counts=True)
    return int(counts.max()) >= REPEAT_SHARE * len(stretches)
