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

No imports beyond the standard library: the bottom layer, beside :mod:`dnnlens.errors`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["markdown_cell", "safe", "safe_lines"]

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c: str) -> str:
    if c.isprintable():
        return c
    short = _SHORT.get(c)
    if short is not None:
        return short
    code = ord(c)
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


def safe_lines(value: Any) -> str:
    """Like :func:`safe`, but ``\\n`` stays a line end (``\\r`` and the rest are escaped)."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(safe(part) for part in text.split("\n"))


def markdown_cell(value: Any) -> str:
    """Text for one markdown table cell or inline code: :func:`safe`, with ``\\``, ``|``
    and backticks escaped so that the cell stays one cell."""
    return safe(value).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
