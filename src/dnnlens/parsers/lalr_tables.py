"""LALR parsers of the package's ``.lark`` grammars, from tables analysed ahead of time.

Turning a grammar into LALR tables costs lark about 0.2 s for ``memdesc.lark``, paid by
every process that parses a descriptor. ``python -m dnnlens.parsers.lalr_tables`` writes,
beside each grammar ``grammars/<name>.lark``, its analysed tables ``grammars/<name>.lalr``;
run it after editing a grammar or its options (``tests/test_lalr_tables.py`` fails while a
table is stale).

:func:`lalr_parser` uses a table only when it was made from the same grammar text and
options by the installed lark version, and builds the parser from the grammar otherwise,
or on any error reading the table: a missing or stale table costs time, never a result.

A table is what lark's own ``Lark.save`` writes, except that its rules and terminals are
stored as lark objects rather than as dicts lark would rebuild them from one by one (most
of the loading time). Reading a table constructs builtin values and those few lark grammar
classes only (:data:`_LARK_CLASSES`), never anything else.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Transformer
from lark.grammar import Rule
from lark.lexer import TerminalDef
from lark.utils import SerializeMemoizer

__all__ = [
    "GRAMMAR_OPTIONS",
    "build_parser",
    "grammar_text",
    "lalr_parser",
    "read_table",
    "source_key",
    "table_bytes",
    "write_tables",
]

#: Options of the LALR parser of each grammar (besides ``parser="lalr"`` and the transformer).
GRAMMAR_OPTIONS: dict[str, dict[str, Any]] = {
    "memdesc.lark": {
        "start": ["f0_list", "v1_list", "v32_list", "v36_list", "lt_list"],
        "maybe_placeholders": True,
    },
    "attrs.lark": {
        "start": ["semi_list", "kv_list", "po_plus", "po_semi", "q_plus", "q_under"],
        "maybe_placeholders": True,
    },
    "problem.lark": {"maybe_placeholders": True},
    "onednn_line.lark": {},
}

#: Table layout version, bumped when the fields below change.
_FORMAT = 2

#: The classes a table may hold besides builtin values: lark's rules and terminals.
_LARK_CLASSES = frozenset(
    {
        ("lark.grammar", "Rule"),
        ("lark.grammar", "RuleOptions"),
        ("lark.grammar", "NonTerminal"),
        ("lark.grammar", "Terminal"),
        ("lark.lexer", "TerminalDef"),
        ("lark.lexer", "PatternStr"),
        ("lark.lexer", "PatternRE"),
    }
)


class _TableUnpickler(pickle.Unpickler):
    """Unpickles builtin values and the classes of :data:`_LARK_CLASSES`, nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _LARK_CLASSES:
            raise pickle.UnpicklingError(f"a parser table cannot hold {module}.{name}")
        return super().find_class(module, name)


def grammar_text(name: str) -> str:
    """The text of ``grammars/<name>`` (package data)."""
    return (files("dnnlens.parsers") / "grammars" / name).read_text(encoding="utf-8")


def source_key(name: str) -> str:
    """Digest of a grammar's text and parser options: what its table must be made from."""
    text = grammar_text(name) + "\0" + json.dumps(GRAMMAR_OPTIONS[name], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_parser(name: str, transformer: Transformer | None = None) -> Lark:
    """The parser of ``grammars/<name>``, analysed from the grammar now (slow)."""
    return Lark(grammar_text(name), parser="lalr", transformer=transformer, **GRAMMAR_OPTIONS[name])


def _table_name(name: str) -> str:
    return name.removesuffix(".lark") + ".lalr"


def read_table(name: str) -> dict[str, Any] | None:
    """The stored table of a grammar, or ``None`` when it is missing or unreadable."""
    try:
        raw = (files("dnnlens.parsers") / "grammars" / _table_name(name)).read_bytes()
        table = _TableUnpickler(io.BytesIO(raw)).load()
    except Exception:  # noqa: BLE001 - any unreadable table means: build the parser
        return None
    return table if isinstance(table, dict) and table.get("format") == _FORMAT else None


def lalr_parser(name: str, transformer: Transformer | None = None) -> Lark:
    """The parser of ``grammars/<name>``, from its stored table when that is current."""
    table = read_table(name)
    if (
        table is not None
        and table.get("lark") == lark.__version__
        and table.get("source") == source_key(name)
    ):
        try:
            memo = table["memo"]
            for obj in memo.values():
                if isinstance(obj, Rule):
                    obj._deserialize()  # its hash: of this process's string hashes
            extra = {} if transformer is None else {"transformer": transformer}
            return Lark._load_from_dict(table["data"], memo, **extra)
        except Exception:  # noqa: BLE001 - a table lark cannot load: build instead
            pass
    return build_parser(name, transformer)


def table_bytes(name: str) -> bytes:
    """A freshly analysed table of ``grammars/<name>``, as stored beside the grammar."""
    buf = io.BytesIO()
    build_parser(name).save(buf, exclude_options=("transformer",))
    saved = pickle.loads(buf.getvalue())
    memo = SerializeMemoizer.deserialize(
        saved["memo"], {"Rule": Rule, "TerminalDef": TerminalDef}, {}
    )
    table = {
        "format": _FORMAT,
        "source": source_key(name),
        "lark": lark.__version__,
        "data": saved["data"],
        "memo": memo,
    }
    return pickle.dumps(table, protocol=4)


def write_tables(directory: Path | None = None) -> list[Path]:
    """Write the table of every grammar of :data:`GRAMMAR_OPTIONS`; returns the files."""
    where = directory or Path(__file__).with_name("grammars")
    out = []
    for name in GRAMMAR_OPTIONS:
        path = where / _table_name(name)
        path.write_bytes(table_bytes(name))
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover - the maintainer's regeneration command
    for written in write_tables():
        print(f"wrote {written}", file=sys.stderr)
