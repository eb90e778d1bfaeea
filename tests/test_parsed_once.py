"""Each distinct record parses its descriptors once, and only the record parses them.

A record (``LineRecord``) carries its memory descriptors, attributes, auxiliary field and
problem descriptor parsed (``parsed_mds``, ``parsed_attrs``, ``parsed_aux``,
``parsed_problem``), each on first use. Reading parses none of them; the analysis, the
rules and every renderer read the record's, and never call a parser themselves.

Hand-checked line: line 8 of ``sample_logs/convnet_nchw_train.log``::

    onednn_verbose,v1,primitive,create:cache_miss,cpu,convolution,jit:avx2,forward_training,
    src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef:::
    dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,alg:convolution_direct,
    mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1,0.320801
"""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import dnnlens
from dnnlens.analysis import costmodel, graph, linking
from dnnlens.analysis.analysis import Analysis
from dnnlens.parsers import attrs as attrs_module
from dnnlens.parsers import memdesc, problem
from dnnlens.parsers.attrs import parse_attrs, parse_aux
from dnnlens.parsers.memdesc import parse_mds
from dnnlens.parsers.onednn_line import parse_line
from dnnlens.parsers.problem import parse_problem
from dnnlens.parsers.records import LineRecord
from dnnlens.reading import read
from dnnlens.report.renderers import ALL_RENDERERS, RenderOptions
from dnnlens.rules import RuleOptions
from dnnlens.rules.verdict import apply_rules

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
LOGS = ("convnet_nchw_infer.log", "convnet_nchw_train.log")
PARSERS = {
    "parse_mds": (memdesc, parse_mds),
    "parse_attrs": (attrs_module, parse_attrs),
    "parse_aux": (attrs_module, parse_aux),
    "parse_problem": (problem, parse_problem),
}
#: the parsers' own caches: a miss is one run of a grammar
GRAMMAR_CACHES = (
    memdesc._parse_mds_cached,
    attrs_module._parse_attrs_cached,
    attrs_module._parse_aux_cached,
    problem._parse_problem_cached,
)
#: what keeps records, or results made from them, for the rest of the process: a line
#: parsed before is the same record (parse_line), whose descriptors earlier tests of the
#: process may have parsed already
RECORD_CACHES = (
    parse_line,
    costmodel._record_cost_or_reason,
    graph.record_tensors,
    linking._printed,
)
#: the layers that read records (every module of them is imported before counting, so a
#: ``from dnnlens.parsers... import parse_mds`` of any of them is counted too)
READERS = ("dnnlens.model", "dnnlens.analysis", "dnnlens.rules", "dnnlens.report")


@dataclass(frozen=True)
class Call:
    parser: str
    args: tuple[str, ...]
    caller: str  # the module that called
    record: LineRecord | None  # the record whose property called, if one did


def _import_readers() -> None:
    for info in pkgutil.walk_packages(dnnlens.__path__, "dnnlens."):
        if info.name.startswith(READERS):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional dependency that is not installed
                continue


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every call of the four parsers from now on, wherever it was imported."""
    _import_readers()
    calls: list[Call] = []

    def counted(name: str, real: Any) -> Any:
        def parser(*args: str) -> Any:
            frame = sys._getframe(1)
            me = frame.f_locals.get("self")
            calls.append(
                Call(
                    name,
                    args,
                    str(frame.f_globals.get("__name__")),
                    me if isinstance(me, LineRecord) else None,
                )
            )
            return real(*args)

        return parser

    for name, (_, real) in PARSERS.items():
        wrapper = counted(name, real)
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("dnnlens") and getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, wrapper)
    return calls


def _render_everything(a: Analysis, tmp_path: Path) -> None:
    options = RenderOptions(width=200, details=True)
    for name, r in ALL_RENDERERS.items():
        if name in ("csv", "parquet"):
            r.write(a, tmp_path / name, options)
        else:
            assert r.render(a, options)


@pytest.mark.parametrize("name", LOGS)
def test_only_records_parse_and_each_record_once(name, monkeypatch, tmp_path):
    for cache in (*GRAMMAR_CACHES, *RECORD_CACHES):
        cache.cache_clear()
    calls = _count_calls(monkeypatch)
    log = read([str(SAMPLES / name)])
    assert calls == [], "reading parses no descriptor"

    a = Analysis(log)
    apply_rules(a, RuleOptions(search_config=False))
    _render_everything(a, tmp_path)

    assert calls, "the analysis and the renderers read parsed descriptors"
    elsewhere = sorted({c.caller for c in calls if c.record is None})
    assert elsewhere == [], "called outside a record"
    # each record parses each of its fields once
    per_record = Counter((id(c.record), c.parser) for c in calls)
    assert max(per_record.values()) == 1
    # a string is parsed once per distinct record that carries it (lines that say the same
    # are one record), and by each grammar at most once
    records = {c.record for c in calls}
    for (parser, args), n in Counter((c.parser, c.args) for c in calls).items():
        field = {
            "parse_mds": "mds", "parse_attrs": "attrs", "parse_aux": "aux",
            "parse_problem": "problem",
        }[parser]  # fmt: skip
        carriers = {r for r in records if getattr(r, field) == args[-1]}
        assert n <= len(carriers), (parser, args)
    for cache in GRAMMAR_CACHES:
        info = cache.cache_info()
        assert info.misses == info.currsize  # none parsed twice for want of room


@pytest.mark.parametrize("name", [*LOGS, "all_timestamps_infer.log", "lstm_train.log"])
def test_parsed_fields_are_the_parsed_raw_fields(name):
    log = read([str(SAMPLES / name)])
    events = [r for r in log.records if r.line_kind == "event"]
    assert events
    for r in events:
        assert r.parsed_mds == parse_mds(r.mds)
        assert r.parsed_attrs == parse_attrs(r.attrs)
        assert dict(r.parsed_aux) == parse_aux(r.aux)
        assert r.parsed_problem == parse_problem(r.kind, r.problem)
        assert r.parsed_mds is r.parsed_mds  # kept, not parsed again


def test_one_line_by_hand():
    log = read([str(SAMPLES / "convnet_nchw_train.log")])
    rid = int(log.events["record"].iloc[0])  # the first event: line 8
    assert int(log.events["line"].iloc[0]) == 8
    r = log.records[rid]
    assert (r.operation, r.kind, r.prop_kind) == ("create", "convolution", "forward_training")
    mds = r.parsed_mds
    assert [(md.arg, md.dtype, md.layout) for md in mds] == [
        ("src", "f32", "abcd"),
        ("wei", "f32", "Acdb8a"),
        ("bia", "undef", "undef"),
        ("dst", "f32", "aBcd8b"),
    ]
    assert mds.get("bia").is_absent and mds.error is None
    assert dict(r.parsed_attrs.items) == {"scratchpad": "user"}
    assert r.parsed_attrs.post_ops == ()
    assert dict(r.parsed_aux) == {"alg": "convolution_direct"}
    p = r.parsed_problem
    assert p.form == "named" and p.error is None
    assert dict(p.dims) == {
        "mb": 4, "ic": 3, "oc": 16,
        "ih": 64, "oh": 64, "kh": 3, "sh": 1, "dh": 0, "ph": 1,
        "iw": 64, "ow": 64, "kw": 3, "sw": 1, "dw": 0, "pw": 1,
    }  # fmt: skip


def test_a_record_crosses_processes_as_its_printed_fields():
    log = read([str(SAMPLES / "convnet_nchw_train.log")])
    r = next(r for r in log.records if r.kind == "convolution")
    assert r.parsed_attrs.items  # a read-only mapping, which does not pickle
    back = pickle.loads(pickle.dumps(r))
    assert back == r and hash(back) == hash(r) and back.raw == r.raw
    assert back.parsed_problem == r.parsed_problem
