"""Text laid out for a terminal of any width, from untrusted strings.

Prose wraps between words and a word longer than the line is cut with an ellipsis, never
split; :class:`Grid` tables keep every digit of a number and give up room in their text
columns first, so no cell wraps; paths are shortened from the left to the shortest suffix
that still tells them apart. Every string goes through :func:`~dnnlens.textsafe.safe`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from rich.console import Console

from dnnlens.textsafe import safe

__all__ = ["Grid", "fit_words", "prose", "unique_suffixes", "wrap"]


def unique_suffixes(paths: list[str]) -> dict[str, str]:
    """Each path as the shortest run of trailing components no other path ends with.

    ``a/nchw/run.log`` and ``b/cl/run.log`` become ``nchw/run.log`` and ``cl/run.log``; a
    name alone when it is unique; the whole path when nothing shorter tells them apart.
    """
    parts = {p: PurePath(p).parts or (p,) for p in dict.fromkeys(paths)}
    out = {}
    for p, mine in parts.items():
        # a bare number (/dev/fd/63 of a process substitution) says nothing alone
        first = 2 if mine[-1].isdigit() and len(mine) > 1 else 1
        for k in range(first, len(mine) + 1):
            tail = mine[-k:]
            if not any(o != p and other[-k:] == tail for o, other in parts.items()):
                out[p] = str(PurePath(*tail)) if k < len(mine) else p
                break
        else:
            out[p] = p
    return out


def fit_words(text: str, width: int) -> str:
    """``text`` with every word longer than ``width`` cut to it with an ellipsis, so that
    wrapping never has to split a word."""
    width = max(width, 8)
    return " ".join(w if len(w) <= width else w[: width - 1] + "…" for w in text.split(" "))


def wrap(text: str, width: int, indent: int = 0, hang: int = 0) -> list[str]:
    """``text`` (terminal-safe) wrapped between words to ``width`` columns, the first line
    indented by ``indent``, the others by ``indent + hang``; words longer than a line are
    cut with an ellipsis, never split."""
    import textwrap

    room = max(width - indent - hang, 8)
    return textwrap.wrap(
        fit_words(safe(text), room),
        width=max(width, 16),
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_long_words=False,
        break_on_hyphens=False,
    ) or [""]


def prose(console: Console, text: str, indent: int = 0, style: str = "", hang: int = 0) -> None:
    """One paragraph from untrusted text: wrapped between words, never as markup."""
    from rich.text import Text

    for line in wrap(text, console.width, indent, hang):
        console.print(Text(line, style=style or ""), soft_wrap=True)


@dataclass
class Grid:
    """A table laid out to the console width by hand: numbers keep every digit, text
    columns give up room first (cut with an ellipsis), no cell ever wraps.

    ``columns`` are ``(header, justify)`` with justify ``left``, ``right`` or ``flex`` (a
    left-aligned text column that shrinks first).
    """

    title: str
    columns: list[tuple[str, str]]
    caption: str = ""
    rows: list[tuple[list[str], str]] = field(default_factory=list)

    def add_row(self, *cells: str, style: str = "") -> None:
        """One row of terminal-safe cells."""
        self.rows.append(([safe(c) for c in cells], style))

    def widths(self, width: int) -> list[int]:
        """Each column's width so that the row (one space between columns) fits ``width``."""
        natural = [
            max([len(h), *(len(r[0][i]) for r in self.rows)])
            for i, (h, _) in enumerate(self.columns)
        ]
        room = width - (len(self.columns) - 1)
        out = list(natural)
        for kinds in (("flex",), ("flex", "left")):
            shrink = [i for i, (_, j) in enumerate(self.columns) if j in kinds]
            floor = {i: min(out[i], max(6, len(self.columns[i][0]))) for i in shrink}
            # the widest text column gives up room first, down to the next widest
            while sum(out) > room:
                wide = [i for i in shrink if out[i] > floor[i]]
                if not wide:
                    break
                top = max(wide, key=lambda i: out[i])
                others = [out[i] for i in wide if i != top] or [floor[top]]
                target = max(floor[top], max(others), out[top] - (sum(out) - room))
                out[top] = target if target < out[top] else out[top] - 1
            if sum(out) <= room:
                break
        return out

    def lines(self, width: int) -> list[tuple[str, str]]:
        """``(text, style)`` of every line: title, header, rows, caption."""
        w = self.widths(width)

        def cell(text: str, i: int) -> str:
            if len(text) > w[i]:
                text = text[: max(w[i] - 1, 0)] + "…"
            return text.rjust(w[i]) if self.columns[i][1] == "right" else text.ljust(w[i])

        def row(cells: list[str]) -> str:
            return " ".join(cell(c, i) for i, c in enumerate(cells)).rstrip()

        out = [(line, "bold") for line in wrap(self.title, width)]
        out.append((row([h for h, _ in self.columns]), "bold"))
        out += [(row(cells), style) for cells, style in self.rows]
        if self.caption:
            out += [(line, "dim") for line in wrap(self.caption, width)]
        return out

    def print(self, console: Console) -> None:
        """Print it at the console's width."""
        from rich.text import Text

        for text, style in self.lines(console.width):
            console.print(Text(text, style=style), soft_wrap=True)
