"""Regular expressions a user gives (``--iteration-marker``, a rule's ``matches()``), run
by RE2: its matching time is linear in the text, so no pattern can make a line take
seconds (``(a+)+$`` against a long line of ``a`` backtracks for ever in Python's ``re``,
and a signal cannot interrupt one match). RE2 has no backreferences or lookaround; a
pattern that needs them is refused with one line."""

from __future__ import annotations

from functools import cache
from typing import Any

#: The longest pattern taken: a marker or a rule's pattern is a line's worth of text, and a
#: longer one is more likely pasted by mistake than meant.
MAX_PATTERN_CHARS = 1000
#: The memory RE2 may use for one compiled pattern (its default, 8 MiB, named here).
MAX_MEMORY = 8 << 20


class PatternError(ValueError):
    """A pattern RE2 cannot take, or one too long: the message is one line."""


@cache
def compile_linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (``search``/``match`` as ``re``'s); :class:`PatternError`
    when it is too long or not RE2 syntax. Compiled patterns pickle (worker processes)."""
    import re2

    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"regular expression longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own lines on stderr
    options.max_mem = MAX_MEMORY
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternError(
            "bad regular expression (RE2 syntax, linear-time: no backreferences or "
            f"lookaround): {detail}"
        ) from None
