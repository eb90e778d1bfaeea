"""Text laid out for a terminal of any width, from untrusted strings.

Prose wraps between words and a word longer than the line is cut with an ellipsis, never
split; :class:`Grid` tables keep every digit of a number and give up room in their text
columns first, so no cell wraps; paths are shortened from the left to the shortest suffix
that still tells them apart. Every string goes through :func:`~dnnlens.textsafe.safe`.

Widths are display widths (terminal cells, rich's ``cell_len``), not characters: a CJK
character or an emoji from a log takes two columns, so a cell is measured, cut and padded in
cells and the columns of a table stay aligned. Text of one-column characters only (the
common case) is laid out as before, by ``len``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console

from dnnlens.textsafe import safe

__all__ = ["Grid", "cut_middle", "fit_words", "prose", "unique_suffixes", "width_of", "wrap"]


def width_of(text: str) -> int:
    """The columns ``text`` takes on a terminal (its display width)."""
    return len(text) if text.isascii() else cell_len(text)


def _head_cells(text: str, cells: int) -> str:
    """The longest start of ``text`` that takes at most ``cells`` columns."""
    if text.isascii():
        return text[: max(cells, 0)]
    used = 0
    for k, c in enumerate(text):
        used += get_character_cell_size(c)
        if used > cells:
            return text[:k]
    return text


def _tail_cells(text: str, cells: int) -> str:
    """The longest end of ``text`` that takes at most ``cells`` columns."""
    if cells <= 0:
        return ""
    if text.isascii():
        return text[-cells:]
    used = 0
    for k in range(len(text) - 1, -1, -1):
        used += get_character_cell_size(text[k])
        if used > cells:
            return text[k + 1 :]
    return text


def _pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` columns (on the left when ``right``)."""
    fill = " " * max(width - width_of(text), 0)
    return fill + text if right else text + fill


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


def cut_middle(text: str, width: int, head: int | None = None) -> str:
    """``text`` cut to ``width`` by taking out its middle: the start says what it is, the end
    tells it from its neighbours (``brg_conv_fwd:…avx512_core``, ``run.log:…:1234``).

    ``head`` is how many leading columns to keep (about 60% of the room by default)."""
    if width_of(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    room = width - 1
    keep = min(room, (room * 3 + 4) // 5) if head is None else max(0, min(head, room))
    start = _head_cells(text, keep)
    return start + "…" + _tail_cells(text, room - width_of(start))


def fit_words(text: str, width: int) -> str:
    """``text`` with every word longer than ``width`` cut to it in the middle, so that
    wrapping never has to split a word and a word's end (a file's line number) stays."""
    width = max(width, 8)
    return " ".join(cut_middle(w, width) for w in text.split(" "))


def wrap(text: str, width: int, indent: int = 0, hang: int = 0) -> list[str]:
    """``text`` (terminal-safe) wrapped between words to ``width`` columns, the first line
    indented by ``indent``, the others by ``indent + hang``; words longer than a line are
    cut with an ellipsis, never split."""
    import textwrap

    room = max(width - indent - hang, 8)
    words = fit_words(safe(text), room)
    if words.isascii():
        return textwrap.wrap(
            words,
            width=max(width, 16),
            initial_indent=" " * indent,
            subsequent_indent=" " * (indent + hang),
            break_long_words=False,
            break_on_hyphens=False,
        ) or [""]
    return _wrap_cells(words, max(width, 16), indent, indent + hang)


def _wrap_cells(text: str, width: int, first: int, rest: int) -> list[str]:
    """Greedy wrapping between words by display width (text with wide characters)."""
    lines: list[str] = []
    line, used = " " * first, first
    fresh = True
    for word in text.split():
        w = width_of(word)
        if not fresh and used + 1 + w > width:
            lines.append(line)
            line, used, fresh = " " * rest, rest, True
        line, used = (line + word, used + w) if fresh else (f"{line} {word}", used + 1 + w)
        fresh = False
    if not fresh:
        lines.append(line)
    return lines or [""]


def prose(console: Console, text: str, indent: int = 0, style: str = "", hang: int = 0) -> None:
    """One paragraph from untrusted text: wrapped between words, never as markup."""
    from rich.text import Text

    for line in wrap(text, console.width, indent, hang):
        console.print(Text(line, style=style or ""), soft_wrap=True)


_PAIR = " -> "


def _cut_cell(text: str, width: int, head: int | None) -> str:
    """One cell cut to ``width``: a ``base -> new`` pair keeps both sides, each cut in its
    middle; any other text is cut in its middle at ``head`` (a sentence, ``head`` = width,
    at its end)."""
    if width_of(text) <= width:
        return text
    if head is not None and head >= width - 1:
        return _head_cells(text, width - 1) + "…"
    if _PAIR in text and width >= 2 * 3 + len(_PAIR):
        left, right = text.split(_PAIR, 1)
        room = width - len(_PAIR)
        # the shorter side keeps what it can; each side is cut in its middle (half and half:
        # an implementation's family starts it and its ISA ends it)
        side = max(room // 2, room - width_of(right))
        side = min(side, width_of(left))
        a = cut_middle(left, side, (side - 1) // 2)
        b = cut_middle(right, room - width_of(a), (room - width_of(a) - 1) // 2)
        return a + _PAIR + b
    return cut_middle(text, width, head)


def _best_head(values: list[str], width: int) -> int | None:
    """Where to cut a column's values so that the most of them stay told apart (ties: the
    default cut, then the one nearest to it)."""
    long = [v for v in dict.fromkeys(values) if width_of(v) > width]
    if len(long) < 2 or width < 3:
        return None
    default = min(width - 1, (3 * (width - 1) + 4) // 5)

    def score(head: int) -> tuple[int, int]:
        return (len({_cut_cell(v, width, head) for v in long}), -abs(head - default))

    return max(range(width), key=score)


@dataclass
class Grid:
    """A table laid out to the console width by hand: numbers keep every digit, text
    columns give up room first (cut in the middle), no cell ever wraps, and two rows that
    differ never look the same.

    ``columns`` are ``(header, justify)`` or ``(header, justify, leave)``. Justify is
    ``left``, ``right`` (a number: never cut), ``flex`` (a name that shrinks first, cut in
    its middle), ``text`` (a sentence that shrinks first, cut at its end) or ``whole`` (text
    never cut, such as ``file:line``). When a row cannot fit otherwise, columns are left
    out: those with ``leave`` > 0 first (highest first), then the rightmost; the caption
    says which were.
    """

    title: str
    columns: list[tuple[str, str]] | list[tuple[str, str, int]]
    caption: str = ""
    rows: list[tuple[list[str], str]] = field(default_factory=list)

    def add_row(self, *cells: str, style: str = "") -> None:
        """One row of terminal-safe cells."""
        self.rows.append(([safe(c) for c in cells], style))

    def _justify(self, i: int) -> str:
        return self.columns[i][1]

    def _leave(self, i: int) -> int:
        spec = self.columns[i]
        return int(spec[2]) if len(spec) > 2 else 0  # type: ignore[misc]

    def _head(self, i: int, width: int) -> int | None:
        if self._justify(i) == "text":
            return width  # a sentence reads from its start: cut at the end
        return _best_head([r[0][i] for r in self.rows], width)

    def _natural(self, i: int) -> int:
        return max([width_of(self.columns[i][0]), *(width_of(r[0][i]) for r in self.rows)])

    def _floor(self, i: int) -> int:
        # a ``base -> new`` column keeps room for a little of both sides
        least = 14 if any(_PAIR in r[0][i] for r in self.rows) else 6
        return min(self._natural(i), max(least, width_of(self.columns[i][0])))

    def _fit(self, shown: list[int], width: int) -> dict[int, int]:
        """Widths of the ``shown`` columns so that a row fits ``width``, if it can."""
        out = {i: self._natural(i) for i in shown}
        room = width - (len(shown) - 1)
        for kinds in (("flex", "text"), ("flex", "text", "left")):
            shrink = [i for i in shown if self._justify(i) in kinds]
            floor = {i: self._floor(i) for i in shrink}
            # the widest text column gives up room first, down to the next widest
            while sum(out.values()) > room:
                wide = [i for i in shrink if out[i] > floor[i]]
                if not wide:
                    break
                top = max(wide, key=lambda i: out[i])
                others = [out[i] for i in wide if i != top] or [floor[top]]
                target = max(floor[top], max(others), out[top] - (sum(out.values()) - room))
                out[top] = target if target < out[top] else out[top] - 1
            if sum(out.values()) <= room:
                break
        return out

    def layout(self, width: int) -> tuple[list[int], dict[int, int], dict[int, int | None]]:
        """The columns shown, their widths and where each is cut."""
        shown = list(range(len(self.columns)))
        w = self._fit(shown, width)
        # leave columns out, highest ``leave`` first (the rightmost of equals), until it fits
        # (then the rightmost but the first: a table always fits)
        while sum(w.values()) + len(shown) - 1 > width and len(shown) > 1:
            can = [i for i in shown if self._leave(i) > 0] or shown[1:]
            shown.remove(max(can, key=lambda i: (self._leave(i), i)))
            w = self._fit(shown, width)
        heads = {i: self._head(i, w[i]) for i in shown}
        self._untangle(shown, w, heads)
        return shown, w, heads

    def _shown(self, cells: list[str], shown: list[int], w: dict[int, int],
               heads: dict[int, int | None]) -> tuple[str, ...]:  # fmt: skip
        return tuple(_cut_cell(cells[i], w[i], heads[i]) for i in shown)

    def _untangle(self, shown: list[int], w: dict[int, int], heads: dict[int, int | None]) -> None:
        """Widen the text columns where rows that differ look the same, taking the room
        from text columns that stay told apart, so that no two distinct rows print alike."""
        # what tells rows apart is their text (what a primitive is), not their numbers
        text = [i for i in shown if self._justify(i) in ("flex", "text", "left")]
        for _ in range(4 * sum(w.values()) + 4):
            seen: dict[tuple[str, ...], list[str]] = {}
            clash = None
            for cells, _style in self.rows:
                key = self._shown(cells, text, w, heads)
                other = seen.setdefault(key, cells)
                if other is not cells and [other[i] for i in text] != [cells[i] for i in text]:
                    clash = (other, cells)
                    break
            if clash is None:
                return
            a, b = clash
            grow = [i for i in text if a[i] != b[i] and max(map(width_of, (a[i], b[i]))) > w[i]]
            if not grow:
                return
            need = grow[0]
            texts = [i for i in text if i not in grow]

            def distinct(i: int, width: int) -> int:
                return len({_cut_cell(r[0][i], width, heads[i]) for r in self.rows})

            give = [i for i in texts if w[i] > 4 and distinct(i, w[i] - 1) == distinct(i, w[i])]
            if not give:
                return
            donor = max(give, key=lambda i: w[i])
            w[donor] -= 1
            heads[donor] = self._head(donor, w[donor])
            w[need] += 1
            heads[need] = self._head(need, w[need])

    def widths(self, width: int) -> list[int]:
        """Each column's width so that the row (one space between columns) fits ``width``
        (0 for a column left out)."""
        shown, w, _ = self.layout(width)
        return [w.get(i, 0) for i in range(len(self.columns))]

    def lines(self, width: int) -> list[tuple[str, str]]:
        """``(text, style)`` of every line: title, header, rows, caption."""
        shown, w, heads = self.layout(width)

        def row(cells: list[str], cut: bool = True) -> str:
            out = []
            for i in shown:
                text = _cut_cell(cells[i], w[i], heads[i]) if cut else _head_cells(cells[i], w[i])
                out.append(_pad(text, w[i], right=self._justify(i) == "right"))
            return " ".join(out).rstrip()

        out = [(line, "bold") for line in wrap(self.title, width)]
        out.append((row([h for h, *_ in self.columns], cut=False), "bold"))
        out += [(row(cells), style) for cells, style in self.rows]
        left = [self.columns[i][0] for i in range(len(self.columns)) if i not in shown]
        caption = self.caption
        if left:
            more = f"left out at {width} columns: {', '.join(left)} (--width or --format json)"
            caption = f"{caption}; {more}" if caption else more
        if caption:
            out += [(line, "dim") for line in wrap(caption, width)]
        return out

    def print(self, console: Console) -> None:
        """Print it at the console's width."""
        from rich.text import Text

        for text, style in self.lines(console.width):
            console.print(Text(text, style=style), soft_wrap=True)
