"""Text from a log, a trace or a file name, made safe for where it is shown.

A log is untrusted input: a line can carry ESC and OSC sequences (a clipboard write, a
window title, ``ESC[2J``), C1 controls or bidirectional overrides that make a terminal do
things or show text that is not there. Every string from an input that reaches a terminal
goes through :func:`terminal` (or :func:`terminal_markup` for rich's markup): control and
format characters are shown as visible escapes (``\\x1b``, ``\\u202e``), never passed on.
"""

from __future__ import annotations

import re

__all__ = ["markdown_cell", "terminal", "terminal_markup"]

#: C0 controls (tab included: it moves the cursor), DEL, C1 controls, and the invisible
#: format characters that reorder or hide text (bidi embeddings, overrides, isolates, marks,
#: zero-width characters, the BOM, line and paragraph separators).
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object) -> str:
    """``text`` with every control and invisible format character shown as an escape."""
    return UNSAFE.sub(_visible, str(text))


def terminal_markup(text: object) -> str:
    """:func:`terminal`, then escaped for rich's console markup (``[bold]`` stays text)."""
    from rich.markup import escape

    return escape(terminal(text))


def markdown_cell(text: object) -> str:
    """Text for one markdown table cell or inline code: terminal-safe, ``|`` and ``\\``
    escaped, one line."""
    return terminal(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
