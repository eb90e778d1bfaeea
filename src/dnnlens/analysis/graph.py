"""The primitive-level op graph of one steady-state iteration, with stats from all of them.

:func:`build_graph` turns an event table (:mod:`dnnlens.model`) into an :class:`OpGraph`:

* **nodes** are primitives at their position in the iteration: position ``k`` of the
  iteration template (see :mod:`dnnlens.analysis.iterations`) is node ``n<k>_<kind>``.
  Every exec row of every iteration is aligned to a position, so a node's ``count``,
  ``time_ms`` (total), ``mean_ms``, ``p50_ms`` and ``p95_ms`` cover all iterations (warm-up
  included). Exec rows that fit no position (one-time weight reorders in a warm-up pass,
  rows outside every iteration, inputs with another template) become *extra* nodes, one per
  distinct line and occurrence within its iteration (the 2nd identical weight reorder of a
  warm-up pass is a node of its own; 16 at most), ``x<k>_<kind>`` with ``position == -1``
  and ``steady == False``. A million
  events therefore give a graph of one iteration's size.
* **edges** are tensors: each input tensor of a primitive (``src``, ``wei``, ``diff_dst`` ...
  by role, in forward and backward passes alike) is matched to the nearest preceding
  primitive in the same iteration whose output tensor has the same dims, data type and
  layout (an empty data type, as in MKL-DNN 0.x, matches any; a dim printed ``*`` matches
  any value). Edges are found on one steady iteration plus the irregular ones (so extra
  nodes get theirs). Framework ops that print nothing sit invisibly on edges: a reorder
  back to plain followed by PyTorch's batch norm and a reorder to blocked is an edge
  between the two reorders.
* **reorder nodes** are classified: ``converts`` is ``layout``, ``dtype``, ``both`` or
  ``none`` (a plain copy); ``tensor`` is ``weight`` when the reorder feeds a ``wei``/``bia``
  slot (conv, deconv, inner product, matmul, rnn ...), reads one (weight gradients after
  ``backward_weights``), or, with no consumer found, has the dims of a weight of the
  iteration; ``activation`` otherwise. ``round_trip`` is set on both reorders of a pair
  where a later reorder, reached downstream through non-reorder ops only, converts the
  tensor back (its source layout/type is the first one's destination and vice versa), e.g.
  plain->blocked, convolution, blocked->plain.
* ``role`` says what the reorder does in the step, from the edges: which slot of which
  primitive, with which prop_kind, it feeds or reads (:data:`REORDER_ROLES`). A weight
  reorder that reads a weight-gradient output (``diff_wei*``/``diff_bia*``, or ``wei`` of a
  ``backward_weights`` primitive) is ``weight_gradient``: the gradient going back to the
  framework's layout (tested first: a gradient's layout can also match a weight slot of a
  later primitive). One that feeds a ``wei``/``bia`` slot is ``weight_forward`` when its
  first such consumer runs a forward prop_kind, ``weight_backward_data`` when it runs
  ``backward_data`` or ``backward`` (rnn: data and weight gradients in one call, the weights
  read for the data gradient); ``weight`` when the pass is not told (a consumer with prop
  kind ``undef``, or a weight found by its dims alone). Activation reorders are
  ``activation_round_trip`` (``round_trip``), ``activation_copy`` (same layout and data
  type: ``converts == "none"``) or ``activation_one_way`` (a conversion nothing undoes).

``OpGraph.reorders`` (read by the rules engine) has one row per reorder node with exactly
the columns of :data:`REORDER_COLUMNS`:

================ ========================================================================
column           meaning
================ ========================================================================
node             node id (``n7_reorder``, ``x0_reorder``)
position         position in the iteration template, -1 for extra nodes
steady           True when the reorder is part of every steady iteration (a template node)
count            executions aligned to this node over the whole log
steady_count     of which in steady-state passes (:mod:`dnnlens.analysis.steady`)
iterations       distinct iterations it ran in
time_ms          total execution time, ms
mean_ms          mean execution time, ms
p50_ms           median execution time, ms
p95_ms           95th percentile of the execution time, ms
dims             tensor dims as printed (``4x16x32x32``)
src_layout       layout (tag) of the reorder's source, i.e. what the producer left
dst_layout       layout (tag) of the reorder's destination, i.e. what the consumer wants
src_dtype        source data type
dst_dtype        destination data type
converts         layout, dtype, both or none
tensor           weight or activation
role             what it does in the step (:data:`REORDER_ROLES`)
round_trip       True when a later reorder converts the tensor back (or this one undoes one)
round_trip_with  comma-joined ids of the partner reorders of those round trips
producer         comma-joined ids of the nodes whose output it reads ('' if none seen)
consumer         comma-joined ids of the nodes that read its output ('' if none seen)
consumer_kind    primitive kind of the first consumer ('' if none)
consumer_arg     argument slot it feeds in the first consumer (src, wei, diff_dst ...)
impl             implementation name
example          ``file:line`` of its first execution
record           id of its line in ``ParsedLog.records`` (the ``record`` event column)
================ ========================================================================

``OpGraph.nodes`` has one row per node with the columns of :data:`NODE_COLUMNS`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import category_mask, with_dtypes
from dnnlens.analysis.digraph import Digraph
from dnnlens.analysis.iterations import Iterations, find_iterations
from dnnlens.analysis.tensor_dims import (
    DATA_KINDS,
    Dims,
    list_groups,
    list_tensor_dims,
    named_tensor_dims,
)
from dnnlens.parsers.records import LINE_EVENT, LineRecord

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "NODE_COLUMNS",
    "REORDER_COLUMNS",
    "REORDER_ROLES",
    "WEIGHT_ROLES",
    "OpGraph",
    "Tensor",
    "build_graph",
    "op_tensors",
    "record_tensors",
]

REORDER_COLUMNS: tuple[str, ...] = (
    "node", "position", "steady", "count", "steady_count", "iterations", "time_ms", "mean_ms",
    "p50_ms",
    "p95_ms", "dims", "src_layout", "dst_layout", "src_dtype", "dst_dtype", "converts",
    "tensor", "role", "round_trip", "round_trip_with", "producer", "consumer", "consumer_kind",
    "consumer_arg", "impl", "example", "record",
)  # fmt: skip
NODE_COLUMNS: tuple[str, ...] = (
    "node", "position", "steady", "kind", "impl", "prop_kind", "count", "steady_count",
    "iterations",
    "time_ms", "mean_ms", "p50_ms", "p95_ms", "src_layout", "dst_layout", "dtype", "post_ops",
    "problem", "mds", "example", "record",
)  # fmt: skip

#: Values of the reorders' ``role`` column (see the module docstring), weights first.
REORDER_ROLES: tuple[str, ...] = (
    "weight_forward", "weight_backward_data", "weight_gradient", "weight",
    "activation_round_trip", "activation_one_way", "activation_copy",
)  # fmt: skip
#: The roles of reorders that move weights (or their gradients).
WEIGHT_ROLES = frozenset(r for r in REORDER_ROLES if r.startswith("weight"))
#: A template longer than this (an input that never repeats) gets one node per distinct line.
MAX_POSITION_NODES = 20_000
#: Irregular iterations scanned for edges (besides one steady iteration).
_MAX_EDGE_SEQUENCES = 32
#: Occurrences of one line in one iteration that get extra nodes of their own.
_MAX_EXTRA_OCCURRENCE = 16
#: Largest alignment table (rows x template positions) for an irregular iteration.
_MAX_LCS_CELLS = 4_000_000
#: Irregular iterations aligned exactly (LCS); later ones are aligned greedily.
_MAX_LCS_ITERATIONS = 256
#: Longest jump ahead in the template when aligning an irregular iteration.
_ALIGN_WINDOW = 8
#: Primitive kinds whose ``wei`` slot holds weights.
WEIGHTED_KINDS = frozenset(
    {"convolution", "deconvolution", "inner_product", "matmul", "rnn", "lstm", "gru",
     "prelu", "gemm_api"}
)  # fmt: skip
_BY_ROLE_KINDS = frozenset(
    {"convolution", "deconvolution", "inner_product", "pooling", "resampling"}
)


# ---------------------------------------------------------------------------------------
# tensors of one primitive line


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor of a primitive: role ``arg``, data type, layout (tag) and dims.

    ``dims`` is ``None`` when the problem descriptor does not tell them; ``strides`` are the
    non-dense strides (v3.2+), ``""`` when dense.
    """

    arg: str
    dtype: str
    layout: str
    strides: str
    dims: Dims | None

    @property
    def dims_text(self) -> str:
        """Dims as oneDNN prints them (``4x16x32x32``), ``?`` for unknown."""
        if self.dims is None:
            return "?"
        return "x".join("*" if d is None else str(d) for d in self.dims)


def _kind(kind: str) -> str:
    return (kind or "").strip().lower().removesuffix("_v2")


def _role(kind: str, prop_kind: str, arg: str) -> tuple[bool, bool]:
    """``(is_input, is_output)`` of a tensor slot."""
    if arg == "in":
        return True, False
    if arg == "out":
        return False, True
    if prop_kind == "backward_weights":
        if arg.startswith(("wei", "bia", "diff_wei", "diff_bia")):
            return False, True
        return True, False
    if prop_kind.startswith("backward"):
        if arg.startswith(("diff_src", "diff_wei", "diff_bia", "diff_scale", "diff_shift")):
            return False, True
        if arg == "diff":
            return True, True
        if arg == "src" and kind in _BY_ROLE_KINDS:
            return False, True
        return True, False
    if arg.startswith("dst") or arg == "ws":
        return False, True
    if arg == "data":
        return True, kind in DATA_KINDS
    if arg.startswith("diff"):
        return False, False
    return True, False


def op_tensors(
    kind: str, prop_kind: str, mds: str, problem: str, aux: str
) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """:func:`record_tensors` of a primitive line given as its printed fields."""
    return record_tensors(_as_record(kind, prop_kind, mds, problem, aux))


def _as_record(
    kind: str, prop_kind: str, mds: str, problem: str, aux: str, attrs: str = ""
) -> LineRecord:
    return LineRecord(
        LINE_EVENT, "", kind=kind, prop_kind=prop_kind, mds=mds, attrs=attrs, aux=aux,
        problem=problem,
    )  # fmt: skip


@lru_cache(maxsize=1 << 14)
def record_tensors(record: LineRecord) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """``(inputs, outputs)`` tensors of a primitive line, from the descriptors its record
    parsed."""
    kind, prop_kind = record.kind, record.prop_kind
    k = _kind(kind)
    mdl = [md for md in record.parsed_mds if not md.is_absent]
    prob = record.parsed_problem
    aux_map = record.parsed_aux
    if prob.form == "dims":
        dims = list_tensor_dims(k, list_groups(record.problem), mdl, aux_map)
    else:
        named = dict(prob.dims)
        dims = [named_tensor_dims(k, named, md, aux_map) if named else None for md in mdl]
    ins: list[Tensor] = []
    outs: list[Tensor] = []
    for md, dm in zip(mdl, dims, strict=True):
        if dm is not None and md.ndims is not None and len(dm) != md.ndims:
            dm = None
        t = Tensor(md.arg, md.dtype, md.layout, md.strides, dm)
        is_in, is_out = _role(k, prop_kind, md.arg)
        if is_in:
            ins.append(t)
        if is_out:
            outs.append(t)
    return tuple(ins), tuple(outs)


def _matches(a: Tensor, b: Tensor) -> bool:
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return False
    if a.layout != b.layout or a.strides != b.strides:
        return False
    if a.dtype and b.dtype and a.dtype != b.dtype:
        return False
    return all(x is None or y is None or x == y for x, y in zip(a.dims, b.dims, strict=True))


# ---------------------------------------------------------------------------------------
# the graph


@dataclass
class OpGraph:
    """The op graph of one steady iteration (see the module docstring).

    ``digraph`` (a :class:`~dnnlens.analysis.digraph.Digraph`) has as node attributes the
    :data:`NODE_COLUMNS` (plus ``reorder_tensor``, ``reorder_converts``,
    ``reorder_round_trip`` on reorders) and as edge attributes ``dims``, ``dtype``,
    ``layout``, ``src_arg`` (the producer's output slot) and ``dst_arg`` (the consumer's
    input slot); ``graph`` is the same as a :class:`networkx.DiGraph`, made on first use.
    ``nodes`` and ``reorders`` are the same facts as tables.
    """

    digraph: Digraph
    iterations: Iterations
    nodes: pd.DataFrame
    reorders: pd.DataFrame
    #: Event-table rows of the exec events, and the node (a ``nodes`` row number) of each.
    exec_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    exec_node: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def node_of_rows(self, rows: np.ndarray) -> list[str]:
        """The node name of each of some exec rows of the event table."""
        at = np.searchsorted(self.exec_rows, rows)
        names = self.nodes["node"].tolist()
        return [names[int(self.exec_node[k])] for k in at]

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The op graph as a ``networkx.DiGraph`` (imports networkx on first use)."""
        return self.digraph.to_networkx()


def _column(events: pd.DataFrame, name: str, rows: np.ndarray) -> list[str]:
    """Values of a column at ``rows`` as strings, without converting the whole column."""
    col = events[name]
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()[rows].tolist()
        cats = [str(c) for c in col.cat.categories]
        return ["" if c < 0 else cats[c] for c in codes]
    return [str(v) for v in col.iloc[rows]]


def _align_irregular(
    seq: np.ndarray, template: np.ndarray, where: dict[int, np.ndarray], exact: bool = True
) -> np.ndarray:
    """Template position of each row of one irregular iteration (-1: extra row).

    A longest-common-subsequence alignment (numpy, row by row) when ``exact`` and the table
    is small enough, else a greedy walk that never jumps more than a few positions ahead.
    """
    n, p = len(seq), len(template)
    out = np.full(n, -1, dtype=np.int64)
    if exact and n * p <= _MAX_LCS_CELLS:
        table = np.zeros((n + 1, p + 1), dtype=np.int32)
        for i in range(1, n + 1):
            eq = template == seq[i - 1]
            cand = np.maximum(table[i - 1, 1:], table[i - 1, :-1] + eq)
            table[i, 1:] = np.maximum.accumulate(cand)
        i, j = n, p
        while i > 0 and j > 0:
            if seq[i - 1] == template[j - 1] and table[i, j] == table[i - 1, j - 1] + 1:
                out[i - 1] = j - 1
                i, j = i - 1, j - 1
            elif table[i - 1, j] >= table[i, j - 1]:
                i -= 1
            else:
                j -= 1
        return out
    j = 0
    for i, r in enumerate(seq.tolist()):
        pos = where.get(r)
        if pos is None:
            continue
        k = np.searchsorted(pos, j)
        if k < len(pos) and pos[k] - j <= _ALIGN_WINDOW:
            out[i] = pos[k]
            j = int(pos[k]) + 1
    return out


def _assign_nodes(
    rec: np.ndarray,
    itr: np.ndarray,
    ex_input: np.ndarray,
    input_names: list[str],
    iters: Iterations,
) -> tuple[np.ndarray, int]:
    """Template position of every exec row (or -1) and the number of position nodes."""
    template = iters.template
    p = len(template)
    node = np.full(len(rec), -1, dtype=np.int64)
    if p == 0 or p > MAX_POSITION_NODES:
        return node, 0
    same_names = {i.input for i in iters.inputs if np.array_equal(i.template, template)}
    same = [code for code, name in enumerate(input_names) if name in same_names]
    times = iters.times
    regular = np.zeros(iters.count, dtype=bool)
    regular[times["iteration"].to_numpy()] = times["regular"].to_numpy(dtype=bool)
    aligned = (itr >= 0) & np.isin(ex_input, same)
    if not aligned.any():
        return node, p
    first = np.full(iters.count, -1, dtype=np.int64)
    idx = np.flatnonzero(aligned)
    uniq, first_idx = np.unique(itr[idx], return_index=True)
    first[uniq] = idx[first_idx]
    reg_rows = idx[regular[itr[idx]]]
    node[reg_rows] = reg_rows - first[itr[reg_rows]]
    where: dict[int, list[int]] = {}
    for pos, r in enumerate(template.tolist()):
        where.setdefault(int(r), []).append(pos)
    where_arr = {r: np.asarray(v) for r, v in where.items()}
    # rows of one iteration are contiguous in idx (iterations follow the stream order)
    bounds = np.append(first_idx, len(idx))
    for done, k in enumerate(np.flatnonzero(~regular[uniq])):
        rows = idx[bounds[k] : bounds[k + 1]]
        exact = done < _MAX_LCS_ITERATIONS
        node[rows] = _align_irregular(rec[rows], template, where_arr, exact)
    return node, p


def _stats(
    node: np.ndarray, times: np.ndarray, itr: np.ndarray, n_nodes: int
) -> dict[str, np.ndarray]:
    """Per node ``0 .. n_nodes - 1``: count, iterations, time_ms, mean/p50/p95_ms."""
    g = pd.Series(times).groupby(node, sort=True)
    total = g.sum(min_count=0)
    at = total.index.to_numpy()
    inside = itr >= 0
    iters = pd.Series(itr[inside]).groupby(node[inside]).nunique()
    out = {
        "count": np.bincount(node, minlength=n_nodes).astype(np.int64),
        "iterations": np.zeros(n_nodes, dtype=np.int64),
        "time_ms": np.zeros(n_nodes),
    }
    out["iterations"][iters.index.to_numpy()] = iters.to_numpy()
    out["time_ms"][at] = total.to_numpy()
    for name, values in (
        ("mean_ms", g.mean()),
        ("p50_ms", g.median()),
        ("p95_ms", g.quantile(0.95)),
    ):
        out[name] = np.full(n_nodes, np.nan)
        out[name][at] = values.to_numpy()
    return out


def _is_weight_slot(arg: str) -> bool:
    return arg.removeprefix("diff_").startswith(("wei", "bia"))


def _edges_for(
    seq_nodes: list[int],
    tensors: dict[int, tuple[tuple[Tensor, ...], tuple[Tensor, ...]]],
    graph: Digraph,
    names: list[str],
) -> None:
    """Add the tensor edges of one iteration (node indices in stream order).

    Each input takes the nearest preceding matching output, except that one consumer never
    reads two slots from one producer output when another candidate exists, and a weight
    slot prefers an output no other weight slot has read (a reordered weight buffer belongs
    to one primitive; see :func:`_search`).
    """
    produced: list[tuple[int, Tensor]] = []
    by_layout: dict[tuple[str, str, int], list[int]] = {}
    weight_taken: set[int] = set()
    for n in seq_nodes:
        ins, outs = tensors[n]
        used: set[int] = set()
        for t in ins:
            if t.dims is None:
                continue
            wslot = _is_weight_slot(t.arg)
            cands = by_layout.get((t.layout, t.strides, len(t.dims)), [])
            k = _search(produced, cands, t, n, used, weight_taken if wslot else None)
            if k is None:
                continue
            used.add(k)
            if wslot:
                weight_taken.add(k)
            pn, pt = produced[k]
            if not graph.has_edge(names[pn], names[n]):
                graph.add_edge(
                    names[pn], names[n], dims=t.dims_text, dtype=t.dtype or pt.dtype,
                    layout=t.layout, src_arg=pt.arg, dst_arg=t.arg,
                )  # fmt: skip
        for t in outs:
            if t.dims is not None:
                by_layout.setdefault((t.layout, t.strides, len(t.dims)), []).append(len(produced))
                produced.append((n, t))


def _search(
    produced: list[tuple[int, Tensor]],
    cands: list[int],
    t: Tensor,
    n: int,
    used: set[int],
    taken: set[int] | None,
) -> int | None:
    """Index (into ``produced``) of the output an input reads, scanning ``cands`` back.

    Activation slots (``taken is None``): the nearest match outside ``used``. Weight slots:
    the *oldest* match of the nearest run of matches no weight slot has read yet (weights
    reordered in a batch ahead of their consumers are read in order), else the nearest.
    """
    fallback = None
    best = None
    for k in reversed(cands):
        pn, pt = produced[k]
        if pn == n or k in used or not _matches(t, pt):
            continue
        if taken is None:
            return k
        if fallback is None:
            fallback = k
        if k in taken:
            if best is not None:
                break
            continue
        best = k
    return best if best is not None else fallback


def build_graph(
    events: pd.DataFrame,
    iterations: Iterations | None = None,
    steady: np.ndarray | None = None,
    records: Sequence[LineRecord] | None = None,
) -> OpGraph:
    """The op graph of one steady iteration of an event table, with stats from all passes.

    ``iterations`` defaults to :func:`~dnnlens.analysis.iterations.find_iterations` of the
    events (pass one found with marker lines to override the detection); ``steady`` is the
    steady-state mask of the event rows (:mod:`dnnlens.analysis.steady`) that
    ``steady_count`` counts (every row by default). ``records`` are the records the
    ``record`` column points into (``ParsedLog.records``), whose parsed descriptors the
    nodes read; without them each node is read from its printed fields.
    """
    iters = iterations if iterations is not None else find_iterations(events)
    is_exec = category_mask(events["operation"], lambda v: v == "exec")
    ex_rows = np.flatnonzero(is_exec)
    rec = events["record"].to_numpy(dtype=np.int64)[ex_rows]
    itr = (
        iters.iteration[ex_rows]
        if len(iters.iteration) == len(events)
        else np.full(len(ex_rows), -1, dtype=np.int64)
    )
    inputs = events["input"].astype("category")
    ex_input = inputs.cat.codes.to_numpy()[ex_rows]
    node, n_pos = _assign_nodes(rec, itr, ex_input, [str(c) for c in inputs.cat.categories], iters)
    # extra nodes: one per (distinct line, occurrence within its iteration), first seen first
    left = np.flatnonzero(node < 0)
    occ = pd.DataFrame({"i": itr[left], "r": rec[left]}).groupby(["i", "r"]).cumcount()
    keys = rec[left] * _MAX_EXTRA_OCCURRENCE + np.minimum(occ.to_numpy(), _MAX_EXTRA_OCCURRENCE - 1)
    extra_keys, first_left, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(len(extra_keys), dtype=np.int64)
    rank[np.argsort(first_left, kind="stable")] = np.arange(len(extra_keys))
    node[left] = n_pos + rank[inverse]
    n_nodes = n_pos + len(extra_keys)

    times = events["time_ms"].to_numpy(dtype=np.float64)[ex_rows]
    st = _stats(node, times, itr, n_nodes)
    in_steady = np.ones(len(ex_rows), dtype=bool) if steady is None else steady[ex_rows]
    st["steady_count"] = np.bincount(node[in_steady], minlength=n_nodes).astype(np.int64)
    # representative row of each node: its first execution
    first_row = np.full(n_nodes, -1, dtype=np.int64)
    uniq, first_idx = np.unique(node, return_index=True)
    first_row[uniq] = ex_rows[first_idx]
    if n_pos:  # positions never executed (cannot happen for a real template): use template
        missing = np.flatnonzero(first_row[:n_pos] < 0)
        if missing.size:
            by_rec = {int(r): int(ex_rows[i]) for i, r in enumerate(rec.tolist())}
            for m in missing:
                first_row[m] = by_rec.get(int(iters.template[m]), int(ex_rows[0]))
    cols = {
        c: _column(events, c, first_row)
        for c in ("kind", "impl", "prop_kind", "mds", "attrs", "aux", "problem", "input")
    }
    lines = events["line"].to_numpy()[first_row]
    node_records = events["record"].to_numpy()[first_row]
    names = [
        (f"n{i}_" if i < n_pos else f"x{i - n_pos}_") + (cols["kind"][i] or "op")
        for i in range(n_nodes)
    ]
    node_lines = (
        [records[int(r)] for r in node_records]
        if records is not None
        else [
            _as_record(cols["kind"][i], cols["prop_kind"][i], cols["mds"][i],
                       cols["problem"][i], cols["aux"][i], cols["attrs"][i])
            for i in range(n_nodes)
        ]
    )  # fmt: skip
    tensors = {i: record_tensors(node_lines[i]) for i in range(n_nodes)}

    graph = Digraph(name="dnnlens op graph")
    records: list[dict[str, object]] = []
    for i in range(n_nodes):
        ins, outs = tensors[i]
        src_t = ins[0] if ins else None
        dst_t = outs[0] if outs else None
        post_ops = "+".join(po.short_alg or po.kind for po in node_lines[i].parsed_attrs.post_ops)
        row = {
            "node": names[i],
            "position": i if i < n_pos else -1,
            "steady": i < n_pos,
            "kind": cols["kind"][i],
            "impl": cols["impl"][i],
            "prop_kind": cols["prop_kind"][i],
            "count": int(st["count"][i]),
            "steady_count": int(st["steady_count"][i]),
            "iterations": int(st["iterations"][i]),
            "time_ms": float(st["time_ms"][i]),
            "mean_ms": float(st["mean_ms"][i]),
            "p50_ms": float(st["p50_ms"][i]),
            "p95_ms": float(st["p95_ms"][i]),
            "src_layout": src_t.layout if src_t else "",
            "dst_layout": dst_t.layout if dst_t else "",
            "dtype": (dst_t or src_t).dtype if (dst_t or src_t) else "",
            "post_ops": post_ops,
            "problem": cols["problem"][i],
            "mds": cols["mds"][i],
            "example": f"{cols['input'][i]}:{int(lines[i])}",
            "record": int(node_records[i]),
        }
        records.append(row)
        graph.add_node(names[i], **row)

    # edges: one steady iteration + the irregular ones
    for seq in _edge_sequences(node, itr, iters, n_pos, n_nodes):
        _edges_for(seq, tensors, graph, names)

    reorders = _classify_reorders(graph, names, tensors, records)
    nodes_df = pd.DataFrame(records, columns=list(NODE_COLUMNS))
    return OpGraph(
        digraph=graph, iterations=iters, nodes=nodes_df, reorders=reorders,
        exec_rows=ex_rows, exec_node=node,
    )  # fmt: skip


def _edge_sequences(
    node: np.ndarray, itr: np.ndarray, iters: Iterations, n_pos: int, n_nodes: int
) -> list[list[int]]:
    """Node sequences scanned for edges: a steady iteration, then irregular ones."""
    seqs: list[list[int]] = []
    if n_pos:
        seqs.append(list(range(n_pos)))
    t = iters.times
    irregular = t["iteration"].to_numpy()[~t["regular"].to_numpy(dtype=bool)]
    for g in irregular[:_MAX_EDGE_SEQUENCES]:
        seqs.append(node[itr == g].tolist())
    outside = node[itr < 0]
    if outside.size:
        seqs.append(outside[: max(n_nodes, 1) * 4].tolist())
    if not seqs and node.size:
        seqs.append(node[: max(n_nodes, 1) * 4].tolist())
    return seqs


def _converts(src: Tensor | None, dst: Tensor | None) -> str:
    if src is None or dst is None:
        return "none"
    layout = (src.layout, src.strides) != (dst.layout, dst.strides)
    dtype = bool(src.dtype and dst.dtype and src.dtype != dst.dtype)
    return "both" if layout and dtype else "layout" if layout else "dtype" if dtype else "none"


def _weight_role(reads_gradient: bool, consumer_prop: str) -> str:
    """The role of a weight reorder: gradient back, or weights for a pass."""
    if reads_gradient:
        return "weight_gradient"
    if consumer_prop.startswith("forward"):
        return "weight_forward"
    if consumer_prop in ("backward_data", "backward"):
        return "weight_backward_data"
    return "weight"


def _activation_role(round_trip: bool, converts: str) -> str:
    """The role of an activation reorder: round trip, plain copy or one-way conversion."""
    if round_trip:
        return "activation_round_trip"
    return "activation_copy" if converts == "none" else "activation_one_way"


def _classify_reorders(
    graph: Digraph,
    names: list[str],
    tensors: dict[int, tuple[tuple[Tensor, ...], tuple[Tensor, ...]]],
    records: list[dict[str, object]],
) -> pd.DataFrame:
    index = {n: i for i, n in enumerate(names)}
    weight_dims = {
        t.dims
        for i, rec in enumerate(records)
        if _kind(str(rec["kind"])) in WEIGHTED_KINDS
        for t in (*tensors[i][0], *tensors[i][1])
        if t.arg.removeprefix("diff_").startswith("wei") and t.dims
    }
    reorder_ids = [i for i, rec in enumerate(records) if rec["kind"] == "reorder"]
    info: dict[int, dict[str, object]] = {}
    for i in reorder_ids:
        name = names[i]
        ins, outs = tensors[i]
        src, dst = (ins[0] if ins else None), (outs[0] if outs else None)
        succ = list(graph.successors(name))
        pred = list(graph.predecessors(name))
        weight_consumers = [
            s
            for s in succ
            if str(graph.edge(name, s)["dst_arg"]).startswith(("wei", "bia"))
            and _kind(str(graph.node(s)["kind"])) in WEIGHTED_KINDS
        ]
        reads_weight = any(
            str(graph.edge(p_, name)["src_arg"]).removeprefix("diff_").startswith(("wei", "bia"))
            for p_ in pred
        )
        dims = (src or dst).dims if (src or dst) else None
        looks_weight = not succ and dims is not None and dims in weight_dims
        first_consumer = succ[0] if succ else ""
        is_weight = bool(weight_consumers) or reads_weight or looks_weight
        consumer_prop = (
            str(graph.node(weight_consumers[0])["prop_kind"]) if weight_consumers else ""
        )
        info[i] = {
            "src": src,
            "dst": dst,
            "tensor": "weight" if is_weight else "activation",
            "weight_role": _weight_role(reads_weight, consumer_prop) if is_weight else "",
            "converts": _converts(src, dst),
            "producer": ",".join(pred),
            "consumer": ",".join(succ),
            "consumer_kind": str(graph.node(first_consumer)["kind"]) if succ else "",
            "consumer_arg": str(graph.edge(name, first_consumer)["dst_arg"]) if succ else "",
            "partners": set(),
        }
    # round trips: a later reorder, through non-reorder ops only, undoes the conversion
    for i in reorder_ids:
        a = info[i]
        src, dst = a["src"], a["dst"]
        if not isinstance(src, Tensor) or not isinstance(dst, Tensor) or a["converts"] == "none":
            continue
        for j in _next_reorders(graph, names[i], index, records):
            b = info.get(j)
            if b is None or j == i:
                continue
            bs, bd = b["src"], b["dst"]
            if not isinstance(bs, Tensor) or not isinstance(bd, Tensor):
                continue
            if (bs.layout, bs.dtype) == (dst.layout, dst.dtype) and (bd.layout, bd.dtype) == (
                src.layout,
                src.dtype,
            ):
                a["partners"].add(names[j])  # type: ignore[union-attr]
                b["partners"].add(names[i])  # type: ignore[union-attr]
    rows: list[dict[str, object]] = []
    for i in reorder_ids:
        a, rec = info[i], records[i]
        src, dst = a["src"], a["dst"]
        partners = sorted(a["partners"], key=lambda n: index[n])  # type: ignore[arg-type]
        role = str(a["weight_role"]) or _activation_role(bool(partners), str(a["converts"]))
        row = {
            "node": rec["node"], "position": rec["position"], "steady": rec["steady"],
            "count": rec["count"], "steady_count": rec["steady_count"],
            "iterations": rec["iterations"], "time_ms": rec["time_ms"],
            "mean_ms": rec["mean_ms"], "p50_ms": rec["p50_ms"], "p95_ms": rec["p95_ms"],
            "dims": (src or dst).dims_text if (src or dst) else "?",  # type: ignore[union-attr]
            "src_layout": src.layout if isinstance(src, Tensor) else "",
            "dst_layout": dst.layout if isinstance(dst, Tensor) else "",
            "src_dtype": src.dtype if isinstance(src, Tensor) else "",
            "dst_dtype": dst.dtype if isinstance(dst, Tensor) else "",
            "converts": a["converts"], "tensor": a["tensor"], "role": role,
            "round_trip": bool(partners),
            "round_trip_with": ",".join(partners), "producer": a["producer"],
            "consumer": a["consumer"], "consumer_kind": a["consumer_kind"],
            "consumer_arg": a["consumer_arg"], "impl": rec["impl"], "example": rec["example"],
            "record": rec["record"],
        }  # fmt: skip
        rows.append(row)
        graph.node(str(rec["node"])).update(
            reorder_tensor=row["tensor"], reorder_role=role, reorder_converts=row["converts"],
            reorder_round_trip=row["round_trip"], reorder_round_trip_with=row["round_trip_with"],
        )  # fmt: skip
    df = pd.DataFrame(rows, columns=list(REORDER_COLUMNS))
    return with_dtypes(
        df,
        {
            "position": "int64",
            "count": "int64",
            "steady_count": "int64",
            "iterations": "int64",
            "steady": "bool",
            "round_trip": "bool",
            "record": "int64",
        },
    )


def _next_reorders(
    graph: Digraph, start: str, index: dict[str, int], records: list[dict[str, object]]
) -> list[int]:
    """Reorders reached downstream of ``start`` through non-reorder nodes only."""
    found: list[int] = []
    seen = {start}
    queue = deque(graph.successors(start))
    while queue:
        n = queue.popleft()
        if n in seen:
            continue
        seen.add(n)
        i = index[n]
        if records[i]["kind"] == "reorder":
            found.append(i)
            continue
        if len(seen) > 256:
            break
        queue.extend(graph.successors(n))
    return found
