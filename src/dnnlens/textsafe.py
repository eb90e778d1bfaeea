"""Terminal-safe text: how every string from a log, a trace or a file name is shown.

A log line can carry anything a program printed: ``ESC [2J`` (clear the screen), OSC 52 (write
the clipboard), OSC 0 (set the window title), C1 controls (``\\x9b`` is CSI on some
terminals), a carriage return that hides the text before it, bidi overrides (U+202E) that
make text read backwards. None of it may reach a terminal as it is. :func:`safe` shows every
character that is not printable (Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp and every
space but U+0020) as a Python-style escape: ``\\x1b``, ``\\r``, ``\\u202e``, so a reader sees
what was there and nothing acts on it. Printable text, the common case, is returned as it is
(one C-level check). :func:`safe_lines` does the same but keeps line ends, for text whose
newlines are its own (a rule's description).

File names are bytes on Linux, and a name that is not UTF-8 (``bad\\xff\\xfe.log``) reaches
Python as text holding lone surrogates (U+DC80 to U+DCFF, PEP 383), which no encoder takes:
the terminal, JSON, Arrow and Parquet all fail on them. :func:`safe` shows each as the byte
it stands for (``\\xff``), and :func:`path_text` does only that, for a path kept as data (an
input's name in the event table, a JSON field, a CSV or Parquet cell, a fleet dataset):
every name an input carries past reading is ``path_text`` of its path, so it can be written
anywhere and reads as the bytes of the name. :func:`markdown_text` is the one escaping of
text from an input put into Markdown (a table cell or a heading).

No imports beyond the standard library: the bottom layer, beside :mod:`dnnlens.errors`.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["markdown_text", "path_text", "safe", "safe_lines"]

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c: str) -> str:
    if c.isprintable():
        return c
    short = _SHORT.get(c)
    if short is not None:
        return short
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe(value: Any) -> str:
    """``value`` as text with every non-printable character shown as an escape (no line
    ends either: the result is always one line)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def _surrogate_bytes(c: str) -> str:
    code = ord(c)
    if 0xD800 <= code <= 0xDFFF:
        return _escape(c)
    return c


def path_text(value: Any) -> str:
    """A path (``str``, ``bytes`` or ``os.PathLike``) as text every encoder takes: each
    lone surrogate, a byte of the name that is not UTF-8, becomes the text ``\\xNN``;
    everything else is kept as it is (control characters included: JSON and CSV escape
    them themselves, and :func:`safe` shows them on a terminal)."""
    text = os.fsdecode(value) if isinstance(value, bytes | os.PathLike) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(map(_surrogate_bytes, text))
    return text


def safe_lines(value: Any) -> str:
    """Like :func:`safe`, but ``\\n`` stays a line end (``\\r`` and the rest are escaped)."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(safe(part) for part in text.split("\n"))


#: Characters Markdown (CommonMark, GitHub's flavour) gives a meaning inside a line: code,
#: emphasis, strikethrough, link and image text (a link needs ``[``: parentheses alone are
#: none), table cells, escapes.
_MARKDOWN_PUNCT = frozenset("\\`*_[]|~")
#: HTML inside Markdown is passed through as HTML: ``<`` starts every tag and autolink, ``&``
#: every entity; both become entities (``>`` alone starts nothing inside a line).
_HTML_ENTITY = {"&": "&amp;", "<": "&lt;"}
#: What starts a block at the start of a line: a list, a heading, a quote, a setext line.
_LINE_START = ("-", "+", "=", "#", ">")


def _markdown_char(c: str) -> str:
    entity = _HTML_ENTITY.get(c)
    if entity is not None:
        return entity
    return "\\" + c if c in _MARKDOWN_PUNCT else c


def markdown_text(value: Any, starts_line: bool = False) -> str:
    """Text from an input for Markdown: one table cell, a heading, a list item or a line
    of prose, always read as the text it is. :func:`safe` first (one line, escapes shown),
    then ``&`` and ``<`` as HTML entities (``<img onerror=...>``, ``</details>`` stay text)
    and every character with a meaning inside a line backslash-escaped (``[x](javascript:
    ...)`` is no link, ``**`` no emphasis, ``|`` no new cell, a backtick no code).
    ``starts_line``: the text starts a line of its own, so a leading ``-``, ``+``, ``=``,
    ``#`` or ``>`` is escaped too (no list, heading or quote). The one escaping of every
    text from an input in the Markdown dnnlens writes (``diff -f markdown``)."""
    text = "".join(map(_markdown_char, safe(value)))
    if starts_line and text.startswith(_LINE_START):
        text = "\\" + text
    return text
