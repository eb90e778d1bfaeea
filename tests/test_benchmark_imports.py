"""The benchmarks and recording scripts name dnnlens code that exists.

They are not run by the suite (minutes each), and several hold the code of a child process
as a string, which no linter reads: a rename in ``src`` broke ``bench_speed.py``'s stage
timing (``from dnnlens.app.session import _analyses``) without a test failing. Every
``from dnnlens... import name`` in them, in strings too, must name a module or attribute.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")])
#: ``from dnnlens.x import a, b`` on one line, or ``(a,\n b)`` over several.
_IMPORT = re.compile(r"from (dnnlens[\w.]*) import (?:\(([\w,\s]+)\)|([\w ,]+))")


def _names(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _IMPORT.finditer(text):
        for part in (m.group(2) or m.group(3)).split(","):
            name = part.split()[0] if part.split() else ""  # "a as b": a
            if name:
                out.append((m.group(1), name))
    return out


def test_the_pattern_reads_imports_in_code_and_in_strings() -> None:
    text = 'from dnnlens.a import b, c\nX = "from dnnlens.d import (e,\\n f)"\n'
    assert _names(text.replace("\\n", "\n")) == [
        ("dnnlens.a", "b"), ("dnnlens.a", "c"), ("dnnlens.d", "e"), ("dnnlens.d", "f"),
    ]  # fmt: skip


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_dnnlens_name_they_import_exists(path: Path) -> None:
    missing = []
    for module, name in _names(path.read_text()):
        found = importlib.import_module(module)
        if hasattr(found, name):
            continue
        try:
            importlib.import_module(f"{module}.{name}")
        except ImportError:
            missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports what dnnlens no longer has: {missing}"
