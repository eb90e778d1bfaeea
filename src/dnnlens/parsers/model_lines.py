"""A model's name where a log line tells it: benchdnn's problem names.

benchdnn prints the problem it ran after each case (``0:PASSED __REPRO: --dir=FWD_I
mb50ic3ih224oc64oh112kh7sh2ph3nresnet_50:conv1``). Its shapes files name each problem
``<model>:<layer>`` (``n"resnet_50:conv1"``, quoted or not), so the text before the colon
is the model the problem came from. Only that shape is read: a name without a colon is a
layer's, not a model's, and says nothing here.

The scanner sees each of the program's own lines once (:meth:`Scanner.program_line
<dnnlens.parsers.scanner.Scanner.program_line>`); a cheap substring test comes first, so
the lines of other programs cost one ``in``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_MODEL_CHARS", "REPRO_MARK", "benchdnn_model", "bounded_name"]

#: Characters of a model name kept: a name is a label, and the text is a log's (untrusted).
MAX_MODEL_CHARS = 80
#: What every benchdnn problem line holds; lines without it are not looked at further.
REPRO_MARK = "__REPRO:"

# The name follows a descriptor's last number: ``...ph3nresnet_50:conv1`` or
# ``...ph3n"resnet_50:conv1"``; the model is the part before the first colon.
_PROBLEM_NAME = re.compile(r'\dn"?([A-Za-z][^":\s]{0,200}):[^"\s]*"?\s*$')


def bounded_name(text: str) -> str | None:
    """``text`` stripped and cut to :data:`MAX_MODEL_CHARS` characters; None if empty."""
    name = text.strip()[:MAX_MODEL_CHARS].strip()
    return name or None


def benchdnn_model(line: str) -> str | None:
    """The model of a benchdnn problem line (``__REPRO: ... n<model>:<layer>``), or None."""
    at = line.find(REPRO_MARK)
    if at < 0:
        return None
    found = _PROBLEM_NAME.search(line[at : at + 4096].rstrip())
    return bounded_name(found.group(1)) if found else None
