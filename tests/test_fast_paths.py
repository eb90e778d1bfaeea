"""The array fast paths of the analysis equal the straightforward code they replaced."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.analysis.columns import category_mask, row_dicts, str_values
from dnnlens.analysis.digraph import Digraph
from dnnlens.analysis.iterations import (
    _candidates,
    _choose,
    _row_iterations,
    _segments_by_period,
    _template_begins,
    find_period,
    period_score,
)
from dnnlens.model.stats import first_rows


def _segments_reference(s: np.ndarray, t: np.ndarray) -> list[tuple[int, int]]:
    """The piece-by-piece walk ``_segments_by_period`` replaced (kept as the definition)."""
    n, p = len(s), len(t)
    begins = _template_begins(s, t)
    if not begins.size:
        return [(0, n)]
    csum = np.concatenate([[0], np.cumsum(np.isin(s, t))])
    edges = np.concatenate([[0], begins[begins > 0], [n]])
    segments: list[tuple[int, int]] = []
    pending = 0
    for i in range(len(edges) - 1):
        b, e = int(edges[i]), int(edges[i + 1])
        if e <= b:
            continue
        k = int(round((csum[e] - csum[b]) / p))
        if k == 0:
            if i == len(edges) - 2:
                break
            if segments:
                segments[-1] = (segments[-1][0], e)
                pending = e
            continue
        if k == 1:
            segments.append((pending, e))
        else:
            cuts = np.linspace(pending, e, k + 1).round().astype(int)
            segments.extend((int(cuts[j]), int(cuts[j + 1])) for j in range(k))
        pending = e
    return segments or [(0, n)]


@st.composite
def _streams(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    period = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    s: list[int] = draw(st.lists(st.integers(0, 7), max_size=8))  # a warm-up of sorts
    s.extend(period)  # the template is one clean pass of the stream
    for _ in range(draw(st.integers(0, 12))):
        piece = list(period)
        if draw(st.booleans()):  # an irregular pass: a row dropped, changed or added
            at = draw(st.integers(0, len(piece)))
            action = draw(st.sampled_from(["drop", "change", "add", "double"]))
            if action == "drop" and at < len(piece):
                del piece[at]
            elif action == "change" and at < len(piece):
                piece[at] = draw(st.integers(0, 7))
            elif action == "add":
                piece.insert(at, draw(st.integers(0, 7)))
            else:
                piece = piece * 2
        s.extend(piece)
    s.extend(draw(st.lists(st.integers(0, 7), max_size=8)))
    return np.asarray(s, dtype=np.int64), np.asarray(period, dtype=np.int64)


@settings(max_examples=400, deadline=None)
@given(_streams())
def test_segments_by_period_equal_the_walk(stream: tuple[np.ndarray, np.ndarray]) -> None:
    s, t = stream
    got = _segments_by_period(s, t)
    assert [tuple(map(int, row)) for row in got] == _segments_reference(s, t)
    iters = _row_iterations(got, len(s), 7)
    expected = np.full(len(s), -1)
    for k, (b, e) in enumerate(_segments_reference(s, t)):
        expected[b:e] = 7 + k
    assert np.array_equal(iters, expected)


def _period_reference(s: np.ndarray) -> tuple[int, int] | None:
    """``find_period`` scoring every candidate before choosing (it may stop early)."""
    scored = [sc for p in _candidates(s) if (sc := period_score(s, p)) is not None]
    return _choose(scored) if scored else None


@settings(max_examples=400, deadline=None)
@given(_streams())
def test_find_period_equals_scoring_every_candidate(
    stream: tuple[np.ndarray, np.ndarray],
) -> None:
    s, _ = stream
    if len(s) >= 2:
        assert find_period(s) == _period_reference(s)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=20_000))
def test_first_rows_are_the_first_occurrences(values: list[int]) -> None:
    records = np.asarray(values)
    ids, first = np.unique(records, return_index=True)
    assert np.array_equal(first_rows(records, ids), first)
    assert np.array_equal(first_rows(records, ids[::-2]), first[::-2])


def test_column_helpers_match_pandas() -> None:
    col = pd.Series(pd.Categorical(["b", None, "a", "b", "c"], categories=["a", "b", "c", "z"]))
    expected = col.astype(str).to_numpy()
    got = str_values(col)
    assert [type(v) for v in got] == [type(v) for v in expected]
    assert all(x == y or (x != x and y != y) for x, y in zip(got, expected, strict=True))
    assert category_mask(col, lambda v: v in ("a", "b")).tolist() == [
        True,
        False,
        True,
        True,
        False,
    ]
    plain = pd.Series(["x", "y"])
    assert list(str_values(plain)) == ["x", "y"]
    frame = pd.DataFrame({"n": [1, 2], "t": [0.5, np.nan], "s": ["u", "v"]}, index=[7, 3])
    for (k1, r1), (k2, r2) in zip(frame.iterrows(), row_dicts(frame), strict=True):
        assert k1 == k2
        assert {c: type(r1[c]) for c in frame} == {c: type(r2[c]) for c in frame}
        assert all(r1[c] == r2[c] or (r1[c] != r1[c] and r2[c] != r2[c]) for c in frame)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 3)), max_size=40))
def test_digraph_is_networkx_in_the_same_order(edges: list[tuple[int, int, int]]) -> None:
    mine, ref = Digraph(name="g"), nx.DiGraph(name="g")
    for n in range(0, 6, 2):
        mine.add_node(f"n{n}", kind=n)
        ref.add_node(f"n{n}", kind=n)
    for u, v, w in edges:
        a, b = f"n{u}", f"n{v}"
        if not mine.has_edge(a, b):
            assert not ref.has_edge(a, b)
            mine.add_edge(a, b, w=w)
            ref.add_edge(a, b, w=w)
        else:
            assert ref.has_edge(a, b)
    for n in ref.nodes:
        assert list(mine.successors(n)) == list(ref.successors(n))
        assert list(mine.predecessors(n)) == list(ref.predecessors(n))
        assert mine.node(n) == ref.nodes[n]
    assert list(mine.edges()) == list(ref.edges())
    out = mine.to_networkx()
    assert out.graph == ref.graph
    assert list(out.nodes(data=True)) == list(ref.nodes(data=True))
    assert list(out.edges(data=True)) == list(ref.edges(data=True))
    assert all(list(out.predecessors(n)) == list(ref.predecessors(n)) for n in ref.nodes)
