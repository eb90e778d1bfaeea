"""The pre-analysed LALR tables beside the grammars match the grammars they were made from."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import lark
import pytest
from lark.exceptions import UnexpectedInput

from dnnlens.parsers import lalr_tables
from dnnlens.parsers.attrs import AttrsTransformer
from dnnlens.parsers.common import lark_error
from dnnlens.parsers.lalr_tables import GRAMMAR_OPTIONS
from dnnlens.parsers.memdesc import MemdescTransformer
from dnnlens.parsers.problem import ProblemTransformer

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
REGENERATE = "stale: run `python -m dnnlens.parsers.lalr_tables`"


@pytest.fixture(params=sorted(GRAMMAR_OPTIONS))
def grammar(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _current_table(name: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The stored table of ``name``; one made now when another lark made the stored one
    (its loader is then tested with the installed lark, never skipped)."""
    table = lalr_tables.read_table(name)
    assert table is not None, f"grammars/{name}: no readable table; {REGENERATE}"
    if table["lark"] != lark.__version__:
        fresh = lalr_tables._TableUnpickler(io.BytesIO(lalr_tables.table_bytes(name))).load()
        monkeypatch.setattr(lalr_tables, "read_table", lambda _: fresh)
        return fresh
    return table


def test_table_is_made_from_the_grammar(grammar: str) -> None:
    table = lalr_tables.read_table(grammar)
    assert table is not None, f"grammars/{grammar}: no readable table; {REGENERATE}"
    assert table["source"] == lalr_tables.source_key(grammar), f"grammars/{grammar}: {REGENERATE}"


def test_table_is_used_and_equals_a_fresh_analysis(
    grammar: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _current_table(grammar, monkeypatch)
    fresh = lalr_tables.build_parser(grammar)

    def refuse(*_: object) -> None:
        raise AssertionError("the parser was analysed again instead of loaded")

    monkeypatch.setattr(lalr_tables, "build_parser", refuse)
    loaded = lalr_tables.lalr_parser(grammar)

    def rules(parser: lark.Lark) -> list[tuple]:
        return sorted((str(r), str(r.alias), r.order, repr(r.options)) for r in parser.rules)

    assert rules(loaded) == rules(fresh)
    assert sorted((t.name, repr(t.pattern), t.priority) for t in loaded.terminals) == sorted(
        (t.name, repr(t.pattern), t.priority) for t in fresh.terminals
    )
    assert {hash(r) for r in loaded.rules} == {hash(r) for r in fresh.rules}


def _parse(parser: lark.Lark, text: str, start: str) -> tuple:
    try:
        return ("ok", repr(parser.parse(text, start=start)))
    except UnexpectedInput as exc:
        return ("error", type(exc).__name__, lark_error(exc))


def _sample_fields() -> dict[str, set[str]]:
    from dnnlens.reading import load

    log = load([str(p) for p in sorted(SAMPLES.glob("*.log"))])
    return {
        "memdesc.lark": {r.mds for r in log.records},
        "attrs.lark": {r.attrs for r in log.records},
        "problem.lark": {r.problem for r in log.records},
    }


@pytest.mark.parametrize(
    "name,transformer",
    [
        ("memdesc.lark", MemdescTransformer),
        ("attrs.lark", AttrsTransformer),
        ("problem.lark", ProblemTransformer),
    ],
)
def test_loaded_parser_parses_like_a_fresh_one(
    name: str, transformer: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    _current_table(name, monkeypatch)
    loaded = lalr_tables.lalr_parser(name, transformer())
    fresh = lalr_tables.build_parser(name, transformer())
    starts = GRAMMAR_OPTIONS[name].get("start", ["start"])
    texts = _sample_fields()[name] | {"", "garbage ::", "src:f32::blocked:abcd:f0"}
    for text in sorted(texts):
        for start in starts:
            assert _parse(loaded, text, start) == _parse(fresh, text, start), (text, start)


def test_missing_or_foreign_table_falls_back_to_the_grammar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Boom:
        def __reduce__(self) -> tuple:
            return (print, ("must not run",))

    evil = pickle.dumps({"format": 2, "memo": Boom()})
    with pytest.raises(pickle.UnpicklingError):
        lalr_tables._TableUnpickler(io.BytesIO(evil)).load()
    monkeypatch.setattr(lalr_tables, "read_table", lambda name: None)
    parser = lalr_tables.lalr_parser("problem.lark", ProblemTransformer())
    assert parser.parse("mb2ic3oc4") is not None
