"""Reading inputs into a :class:`~dnnlens.model.ParsedLog`: the one front door for parsing.

:func:`read` is the front door (bulk, streamed, live and parallel reading are chosen inside
it); :func:`load` is the same keeping every event; :func:`load_lines` and :func:`load_text`
parse lines already in memory.
"""

from dnnlens.reading.front import load, read
from dnnlens.reading.memory import load_lines, load_text

__all__ = ["load", "load_lines", "load_text", "read"]
