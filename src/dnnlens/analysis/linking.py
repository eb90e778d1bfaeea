"""Attach each oneDNN primitive execution to the innermost framework op that ran it.

Three ways, strongest first; every link says which one made it:

``timestamp``
    Both sides carry times: exec lines with ``ONEDNN_VERBOSE_TIMESTAMP=1`` (epoch ms, start
    of the execution) and a trace with a base time. A primitive belongs to the innermost op
    whose span holds the middle of its execution. The trace's span is the profiled window.
``shape``
    No common clock: the execs of kinds that framework ops call directly (convolution, rnn,
    matmul ...) are walked in order beside the trace's ops that call them, and a pair is
    made only if the problem fits the op's input dims (``mb4_ic3oc16_ih64..`` against
    ``[[4, 3, 64, 64], [16, 3, 3, 3], ...]``). The profiled window inside a longer log is
    the stretch between ``profiler_start``/``profiler_stop`` lines when the log has them,
    otherwise the position where the most ops pair up (the last one on a tie).
``order``
    As ``shape`` where shapes cannot be compared (a trace without ``record_shapes``, a
    problem dnnlens cannot read), and for reorders and other helper primitives, which go to
    the op before or after them: a reorder into a blocked layout prepares the next op's
    inputs, one back to a plain layout returns the previous op's output. Also how a
    ``key_averages`` table without a trace is linked: by primitive kind, in the window.
"""

from __future__ import annotations

import functools
import json
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.model import MdList, ParsedLog, Problem
from dnnlens.model.regions import marker_ranges
from dnnlens.parsers.records import LINE_EVENT, LineRecord
from dnnlens.parsers.torch_table import ProfilerTable
from dnnlens.parsers.torch_trace import TraceData

METHODS = ("timestamp", "shape", "order")
#: Trace categories that are framework ops (python frames and device work are not).
OP_CATEGORIES = frozenset({"cpu_op", "user_annotation", "operator", "Operator", ""})
#: Framework op names that call a oneDNN primitive of a kind (PyTorch, IPEX, inductor).
ANCHORS: dict[str, re.Pattern[str]] = {
    "convolution": re.compile(
        r"mkldnn_conv|convolution_pointwise|convolution_backward|"
        r"onednn.*conv|qconv|ipex.*conv"
    ),
    "deconvolution": re.compile(
        r"mkldnn_conv|convolution_transpose|convolution_backward|"
        r"onednn.*conv|ipex.*conv"
    ),
    "rnn": re.compile(r"mkldnn_rnn|rnn_layer|ipex.*(?:lstm|rnn|gru)"),
    "matmul": re.compile(
        r"mkldnn_linear|mkldnn_matmul|linear_pointwise|addmm|::mm\b|bmm\b|"
        r"::matmul|qlinear|onednn.*(?:linear|matmul)|ipex.*linear"
    ),
    "inner_product": re.compile(
        r"mkldnn_linear|linear_pointwise|addmm|::mm\b|qlinear|"
        r"ipex.*linear"
    ),
    "pooling": re.compile(r"mkldnn_(?:max|avg|adaptive_avg)_pool"),
    "batch_normalization": re.compile(r"mkldnn_batch_norm|ipex.*batch_norm"),
}
#: Compute-heavy op names: reported when they ran without any oneDNN primitive.
HEAVY = re.compile(r"conv|linear|addmm|::mm\b|bmm\b|matmul|lstm|gru|rnn")
#: PyTorch's own kernels that replace oneDNN's (e.g. bf16 on a CPU without avx512_bf16).
NATIVE_FALLBACK = re.compile(r"_slow_conv|thnn_conv|slow_conv_(?:dilated|transpose)")
_PLAIN_TAG = re.compile(r"[a-z]+")
WINDOW_CANDIDATES = 64
LOOKAHEAD = 4096
#: A walk ends after this many anchor execs in a row found no op.
PATIENCE = 256


@dataclass
class LinkResult:
    """Links of one analysis: per primitive, per op instance, per op name.

    ``links`` and ``instances`` may be given as functions that build the frames: a log that
    prints its profile every few steps links thousands of tables, whose frames are rarely
    read (:attr:`links` and :attr:`instances` build them on first use).
    """

    _links: pd.DataFrame | Callable[[], pd.DataFrame]
    _instances: pd.DataFrame | Callable[[], pd.DataFrame]
    ops: list[dict[str, Any]]
    without_onednn: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def links(self) -> pd.DataFrame:
        """One row per linked primitive execution (see :func:`_links_frame`)."""
        if callable(self._links):
            self._links = self._links()
        return self._links

    @property
    def instances(self) -> pd.DataFrame:
        """One row per op instance with linked primitives (see :func:`_instances`)."""
        if callable(self._instances):
            self._instances = self._instances()
        return self._instances


# --------------------------------------------------------------------------------------------
# the execs


@dataclass
class _Execs:
    """The exec events of the log as plain arrays, in log order."""

    index: np.ndarray
    input: np.ndarray
    line: np.ndarray
    kind: np.ndarray
    prop: np.ndarray
    problem: np.ndarray
    mds: np.ndarray
    time: np.ndarray
    stamp: np.ndarray
    #: each exec's id in ``records`` (-1: none)
    record: np.ndarray

    @classmethod
    def of(cls, log: ParsedLog) -> _Execs:
        return cls.of_events(log.events, log.records)

    @classmethod
    def of_events(cls, events: pd.DataFrame, records: Sequence[LineRecord] | None = None) -> _Execs:
        """The execs of ``events``; ``records`` are the records their ``record`` column
        points into (``ParsedLog.records``), whose parsed descriptors linking reads."""
        ev = events[events["operation"] == "exec"]
        coded = {n: c for n in ("kind", "mds") if (c := _coded(ev[n])) is not None}
        known = records is not None and "record" in ev
        return cls(
            index=ev.index.to_numpy(),
            input=_texts(ev["input"]),
            line=ev["line"].to_numpy(),
            kind=_texts(ev["kind"]),
            prop=_texts(ev["prop_kind"]),
            problem=_texts(ev["problem"]),
            mds=_texts(ev["mds"]),
            time=np.nan_to_num(ev["time_ms"].to_numpy(dtype=np.float64)),
            stamp=ev["timestamp_ms"].to_numpy(dtype=np.float64),
            record=(
                ev["record"].to_numpy(dtype=np.int64)
                if known
                else np.full(len(ev), -1, dtype=np.int64)
            ),
            _coded=coded,
            _records=records if known else None,
        )

    def __len__(self) -> int:
        return len(self.index)

    #: (codes, names) of the kind and mds columns when they were categorical
    _coded: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict, repr=False)
    _records: Sequence[LineRecord] | None = field(default=None, repr=False)

    def record_at(self, pos: int) -> LineRecord:
        """The record of the exec at ``pos`` (its descriptors parsed once): the log's, or
        without one, a record of its printed fields."""
        rid = int(self.record[pos])
        if self._records is not None and rid >= 0:
            return self._records[rid]
        return _printed(str(self.kind[pos]), str(self.prop[pos]), str(self.problem[pos]),
                        str(self.mds[pos]))  # fmt: skip

    @cached_property
    def kind_codes(self) -> tuple[np.ndarray, list[str]]:
        """Each exec's kind as a code, and the kinds."""
        return self._codes("kind", self.kind)

    @cached_property
    def _mds_codes(self) -> tuple[np.ndarray, list[str]]:
        return self._codes("mds", self.mds)

    def _codes(self, name: str, texts: np.ndarray) -> tuple[np.ndarray, list[str]]:
        if name in self._coded:
            return self._coded[name]
        codes, names = pd.factorize(texts)
        return codes.astype(np.int64), [str(k) for k in names]

    def reorders_in(self, positions: np.ndarray) -> np.ndarray:
        """Whether each exec at ``positions`` is a reorder into a blocked layout
        (:func:`reorder_direction` ``in``), decided once per distinct memory descriptors."""
        codes, kinds = self.kind_codes
        if "reorder" not in kinds:
            return np.zeros(len(positions), dtype=bool)
        reorder = codes[positions] == kinds.index("reorder")
        mds_codes, mds_names = self._mds_codes
        into = self.__dict__.setdefault("_into", np.full(len(mds_names), -1, dtype=np.int8))
        at = positions[reorder]
        wanted = mds_codes[at]
        new = into[wanted] < 0
        codes, first = np.unique(wanted[new], return_index=True)
        for c, pos in zip(codes.tolist(), at[new][first].tolist(), strict=True):
            into[c] = reorder_direction(self.record_at(pos).parsed_mds) == "in"
        out = np.zeros(len(positions), dtype=bool)
        out[reorder] = into[wanted] == 1
        return out

    @cached_property
    def by_source(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per input, its exec positions and their lines (in log order), found once."""
        if not len(self.input):
            return {}
        order = np.argsort(self.input, kind="stable")
        names, first = np.unique(self.input[order], return_index=True)
        bounds = [*first.tolist(), len(order)]
        out = {}
        for i, name in enumerate(names.tolist()):
            pos = order[bounds[i] : bounds[i + 1]]
            out[str(name)] = (pos, self.line[pos])
        return out

    def marker_ranges(
        self, markers: list[tuple[int, str]]
    ) -> tuple[list[tuple[int, int]], list[int]]:
        """:func:`marker_ranges` of a log's markers and their stop lines, found once per
        list of markers (every table of a log asks)."""
        cache = self.__dict__.setdefault("_ranges", {})
        key = (id(markers), len(markers))
        if key not in cache:
            ranges = marker_ranges(markers)
            cache[key] = (markers, ranges, [b for _, b in ranges])
        return cache[key][1], cache[key][2]

    def between(self, source: str, after: int, before: int) -> np.ndarray:
        """Positions of the execs of ``source`` on lines strictly between the two."""
        pos, lines = self.by_source.get(source, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        lo = np.searchsorted(lines, after, side="right")
        hi = np.searchsorted(lines, before, side="left")
        return pos[lo:hi]


def _coded(column: pd.Series) -> tuple[np.ndarray, list[str]] | None:
    """A categorical text column's codes and names, as :func:`_texts` reads them (a missing
    value is the last name, "nan"); None for another column."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return None
    names = [str(c) for c in column.cat.categories] + ["nan"]
    codes = column.cat.codes.to_numpy().astype(np.int64)
    codes[codes < 0] = len(names) - 1
    return codes, names


def _texts(column: pd.Series) -> np.ndarray:
    """A text column as an object array; a categorical one shares its category strings
    (one pointer per row, not one string object per row)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        names = np.array([str(c) for c in column.cat.categories] + ["nan"], dtype=object)
        return names[column.cat.codes.to_numpy()]  # code -1 (missing) takes the last: "nan"
    return column.astype(str).to_numpy()


@lru_cache(maxsize=4096)
def _printed(kind: str, prop_kind: str, problem: str, mds: str) -> LineRecord:
    """A record of an exec known only by its printed fields (events without their records),
    one per distinct fields."""
    return LineRecord(LINE_EVENT, "", kind=kind, prop_kind=prop_kind, mds=mds, problem=problem)


def reorder_direction(mds: MdList) -> str:
    """``in`` (plain -> blocked), ``out`` (blocked -> plain) or ``other``, of a reorder's
    parsed memory descriptors."""
    tags = {md.arg: md.tag for md in mds.mds}
    src, dst = tags.get("src", ""), tags.get("dst", "")
    src_plain, dst_plain = bool(_PLAIN_TAG.fullmatch(src)), bool(_PLAIN_TAG.fullmatch(dst))
    if src_plain and not dst_plain and dst:
        return "in"
    if dst_plain and not src_plain and src:
        return "out"
    return "other"


# --------------------------------------------------------------------------------------------
# shapes


@lru_cache(maxsize=65536)
def _tensors(dims_json: str) -> tuple[tuple[int, ...], ...]:
    """The tensor shapes among an op's input dims (nested tensor lists flattened)."""
    try:
        dims = json.loads(dims_json) if dims_json else None
    except ValueError:
        return []
    out: list[tuple[int, ...]] = []

    def walk(value: Any) -> None:
        if isinstance(value, list):
            if value and all(isinstance(v, int) for v in value):
                out.append(tuple(value))
            else:
                for v in value:
                    walk(v)

    walk(dims)
    return tuple(out)


def shape_fits(kind: str, problem: Problem, dims_json: str) -> bool | None:
    """Does the (parsed) problem of a primitive fit an op's input dims? None: cannot tell."""
    tensors = _tensors(dims_json)
    if not tensors:
        return None
    d = problem.dims
    if kind in ("convolution", "deconvolution"):
        spatial = [s for s in ("d", "h", "w") if f"i{s}" in d]
        if "mb" not in d or "ic" not in d or not spatial:
            return None
        src = (d["mb"], d["ic"], *(d[f"i{s}"] for s in spatial))
        kernel = tuple(d.get(f"k{s}") for s in spatial)
        groups = d.get("g") or 1
        # torch weights: conv [oc, ic/g, k...], transposed conv [ic, oc/g, k...]
        lead, per_group = (
            (d.get("oc"), d.get("ic")) if kind == "convolution" else (d.get("ic"), d.get("oc"))
        )
        wei_ok = any(
            len(t) == 2 + len(kernel)
            and t[2:] == kernel
            and t[0] == lead
            and t[1] * groups == per_group
            for t in tensors
        )
        return src in tensors and wei_ok
    if kind == "rnn":
        if not {"t", "mb", "slc"} <= set(d):
            return None
        return (d["t"], d["mb"], d["slc"]) in tensors or (d["mb"], d["t"], d["slc"]) in tensors
    if kind == "inner_product":
        if "mb" not in d or "ic" not in d:
            return None
        return any(
            t[0] == d["mb"] and math.prod(t[1:]) == problem.dims.get("K", d["ic"])
            for t in tensors
            if len(t) >= 2
        )
    if kind == "matmul" and problem.tensors:
        src = problem.tensors[0]
        return any(t == src or t[-2:] == src[-2:] for t in tensors)
    return None


# --------------------------------------------------------------------------------------------
# the trace's ops


def _op_frame(trace: TraceData) -> pd.DataFrame:
    ops = trace.ops
    return ops[ops["cat"].isin(OP_CATEGORIES).to_numpy()]


def _matches(column: pd.Series, pattern: re.Pattern[str]) -> np.ndarray:
    """``pattern.search`` on each row of a text column, tried once per distinct value."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = [bool(pattern.search(str(c))) for c in column.cat.categories] + [False]
        return np.array(cats, dtype=bool)[column.cat.codes.to_numpy()]
    return np.array([bool(pattern.search(str(n))) for n in column], dtype=bool)


def _innermost_matching(ops: pd.DataFrame, pattern: re.Pattern[str]) -> np.ndarray:
    """Row labels of ops matching ``pattern`` with no matching descendant, in time order.

    Labels are rows of the trace's op table; the walk up from each match stops at an
    ancestor outside ``ops`` (a Python frame) or one already marked.
    """
    hit = _matches(ops["name"], pattern)
    if not hit.any():
        return np.zeros(0, dtype=np.int64)
    labels = ops.index.to_numpy()
    parents = ops["parent"].to_numpy()
    size = int(max(labels.max(), parents.max())) + 1  # parents may lie outside ops
    member = np.zeros(size, dtype=bool)
    member[labels] = True
    parent_of = np.full(size, -1, dtype=np.int64)
    parent_of[labels] = parents
    below = np.zeros(size, dtype=bool)  # has a match below it
    cur = parent_of[labels[hit]]
    while len(cur):
        cur = cur[(cur >= 0)]
        cur = cur[member[cur] & ~below[cur]]
        below[np.unique(cur)] = True
        cur = parent_of[cur]
    keep = hit & ~below[labels]
    chosen = ops[keep]
    return chosen.sort_values("ts_us", kind="stable").index.to_numpy()


def _text_at(column: pd.Series) -> Callable[[int], str]:
    """``label -> text`` for a (categorical) text column, without a text copy per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = [str(c) for c in column.cat.categories] + [""]
        codes = pd.Series(column.cat.codes.to_numpy(), index=column.index)
        return lambda label: cats[codes.at[label]]
    return lambda label: str(column.at[label])


# --------------------------------------------------------------------------------------------
# by timestamp


def _by_timestamp(
    execs: _Execs, trace: TraceData, ops: pd.DataFrame
) -> tuple[dict[int, int], np.ndarray]:
    """exec position -> op label for execs inside the trace's window; and those positions."""
    lo_us, hi_us = trace.window_us or (ops["ts_us"].min(), ops["end_us"].max())
    lo, hi = trace.epoch_ms(lo_us), trace.epoch_ms(hi_us)
    mid = execs.stamp + execs.time / 2
    inside = np.flatnonzero((execs.stamp >= lo) & (mid <= hi))
    starts = trace.epoch_ms(ops["ts_us"].to_numpy())
    ends = trace.epoch_ms(ops["end_us"].to_numpy())
    pid = ops["pid"].cat.codes.to_numpy().astype(np.int64)
    thread = pid * (len(ops["tid"].cat.categories) + 1) + ops["tid"].cat.codes.to_numpy()
    labels = ops.index.to_numpy()
    order = np.lexsort((-(ends - starts), starts))
    stacks: dict[int, list[int]] = defaultdict(list)
    result: dict[int, int] = {}
    j = 0
    for pos in inside[np.argsort(mid[inside], kind="stable")]:
        t = mid[pos]
        while j < len(order) and starts[order[j]] <= t:
            k = order[j]
            stack = stacks[thread[k]]
            while stack and ends[stack[-1]] <= starts[k]:
                stack.pop()
            stack.append(k)
            j += 1
        best, best_start = -1, -math.inf
        for stack in stacks.values():
            while stack and ends[stack[-1]] < t:
                stack.pop()
            if stack and starts[stack[-1]] > best_start:
                best, best_start = stack[-1], starts[stack[-1]]
        if best >= 0:
            result[int(pos)] = int(labels[best])
    return result, inside


# --------------------------------------------------------------------------------------------
# by shape and order


@dataclass
class _Walk:
    """One pairing of execs with ops, from one start position."""

    pairs: dict[int, tuple[int, str]] = field(default_factory=dict)
    linked_ops: int = 0
    skipped: int = 0  # anchor execs between the first and last pair left unpaired
    first: int = -1
    last: int = -1


def _walk(
    execs: _Execs, positions: list[int], anchors: dict[str, np.ndarray], ops: pd.DataFrame
) -> _Walk:
    """Pair the anchor execs at ``positions`` (in order) with anchor ops, greedily."""
    dims_of = _text_at(ops["input_dims"])
    pointer = dict.fromkeys(anchors, 0)
    used: dict[int, set[str]] = defaultdict(set)
    walk = _Walk()
    since_pair = 0
    for pos in positions:
        if since_pair > PATIENCE:  # past the end of the profiled window
            break
        since_pair += 1
        kind = execs.kind[pos]
        labels = anchors[kind]
        j = pointer[kind]
        found, method = -1, "order"
        for jj in range(j, min(j + LOOKAHEAD, len(labels))):
            label = int(labels[jj])
            if execs.prop[pos] in used[label]:
                continue
            fits = shape_fits(kind, execs.record_at(pos).parsed_problem, dims_of(label))
            if fits is False:
                continue
            found, method = jj, "shape" if fits else "order"
            break
        if found < 0:
            continue
        label = int(labels[found])
        if not used[label]:
            walk.linked_ops += 1
        used[label].add(execs.prop[pos])
        pointer[kind] = found
        walk.pairs[pos] = (label, method)
        since_pair = 0
        walk.first = pos if walk.first < 0 else walk.first
        walk.last = pos
    if walk.pairs:  # anchor execs left unpaired inside the paired stretch
        inside = positions[positions.index(walk.first) : positions.index(walk.last) + 1]
        walk.skipped = len(inside) - len(walk.pairs)
    return walk


def _by_sequence(
    execs: _Execs,
    trace: TraceData,
    ops: pd.DataFrame,
    markers: dict[str, list[tuple[int, str]]],
    notes: list[str],
) -> tuple[dict[int, tuple[int, str]], list[int]]:
    """exec position -> (op label, method) and the window's exec positions."""
    kinds = set(execs.kind.tolist())
    anchors = {k: _innermost_matching(ops, ANCHORS[k]) for k in kinds if k in ANCHORS}
    anchors = {k: v for k, v in anchors.items() if len(v)}
    if not anchors:
        notes.append(
            "the trace holds no op known to call the primitive kinds of the log; "
            "without timestamps on both sides nothing can be linked"
        )
        return {}, []
    total = sum(len(v) for v in anchors.values())
    scored: list[tuple[tuple[int, int, int], _Walk, list[int]]] = []
    for source in sorted(set(execs.input.tolist())):
        in_source = np.flatnonzero(execs.input == source)
        ranges = marker_ranges(markers.get(source, []))
        windows = (
            [
                in_source[(execs.line[in_source] > a) & (execs.line[in_source] < b)]
                for a, b in ranges
            ]
            if ranges
            else [in_source]
        )
        for window in windows:
            positions = [int(p) for p in window]
            anchor_pos = [p for p in positions if execs.kind[p] in anchors]
            starts = [0] if ranges else _start_candidates(execs, anchor_pos, anchors, ops)
            perfect = 0
            for s in reversed(starts):  # latest first: on a tie the last place wins
                walk = _walk(execs, anchor_pos[s:], anchors, ops)
                scored.append(((walk.linked_ops, -walk.skipped, walk.first), walk, positions))
                if walk.linked_ops == total and walk.skipped == 0:
                    perfect += 1
                    if perfect == 2:  # enough to know the place is not unique
                        break
    best = max(scored, key=lambda x: x[0], default=None)
    if best is None or not best[1].pairs:
        notes.append("no framework op of the trace pairs up with the primitives of the log")
        return {}, []
    _, walk, window = best
    if sum(1 for x in scored if x[0][:2] == best[0][:2]) > 1:
        notes.append(
            "the profiled window fits at more than one place in the log; the last "
            "was taken (timestamps or profiler_start/stop lines remove the doubt)"
        )
    first = window.index(walk.first)
    after = [p for p in window[window.index(walk.last) + 1 :]]
    tail: list[int] = []
    for p in after:  # helpers after the last pair, up to the next unpaired anchor exec
        if execs.kind[p] in anchors:
            break
        tail.append(p)
    lead_kept: list[int] = []
    for p in reversed(window[:first]):  # input reorders of the first op, just before it
        if execs.kind[p] == "reorder" and reorder_direction(execs.record_at(p).parsed_mds) == "in":
            lead_kept.append(p)
        else:
            break
    span = window[first : window.index(walk.last) + 1]
    return walk.pairs, [*reversed(lead_kept), *span, *tail]


def _start_candidates(
    execs: _Execs, anchor_pos: list[int], anchors: dict[str, np.ndarray], ops: pd.DataFrame
) -> list[int]:
    """Positions in ``anchor_pos`` where the trace's first anchor op could start."""
    first_kind = min(anchors, key=lambda k: ops.at[int(anchors[k][0]), "ts_us"])
    label = int(anchors[first_kind][0])
    dims = str(ops.at[label, "input_dims"])
    cands = [
        i
        for i, p in enumerate(anchor_pos)
        if execs.kind[p] == first_kind
        and shape_fits(first_kind, execs.record_at(p).parsed_problem, dims) is not False
    ]
    return cands[-WINDOW_CANDIDATES:] or [0]


def _helper_targets(
    execs: _Execs, window: np.ndarray, label: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The helpers of ``window`` (its positions whose ``label`` is -1) and the op each goes
    to: the op after it for a reorder into a blocked layout (it prepares that op's inputs),
    else the op before it (one back to a plain layout returns its output); the other one
    at the ends of the window. ``label`` holds the op of each paired position."""
    paired = np.flatnonzero(label >= 0)
    helpers = np.flatnonzero(label < 0)
    if not len(paired):
        return helpers[:0], helpers[:0]
    k = np.searchsorted(paired, helpers)
    prev = np.where(k > 0, label[paired[np.maximum(k - 1, 0)]], -1)
    nxt = np.where(k < len(paired), label[paired[np.minimum(k, len(paired) - 1)]], -1)
    into = execs.reorders_in(window[helpers])
    return helpers, np.where((into & (nxt >= 0)) | (prev < 0), nxt, prev)


def _attach_helpers(
    execs: _Execs, window: list[int], pairs: dict[int, tuple[int, str]], ops: pd.DataFrame
) -> dict[int, tuple[int, str]]:
    """Reorders and other helpers in the window go to the op before or after them
    (:func:`_helper_targets`); ``shape`` when the helper's problem is one of the op's
    input shapes, else ``order``."""
    out = dict(pairs)
    if not any(p in pairs for p in window):
        return out
    positions = np.array(window, dtype=np.int64)
    label = np.array([pairs[p][0] if p in pairs else -1 for p in window], dtype=np.int64)
    helpers, targets = _helper_targets(execs, positions, label)
    dims = ops["input_dims"]
    shapes: dict[int, set[str]] = {}  # op label -> its input shapes as problem text
    for h, target in zip(positions[helpers].tolist(), targets.tolist(), strict=True):
        if target not in shapes:
            shapes[target] = {",".join(map(str, t)) for t in _tensors(str(dims.at[target]))}
        fits = execs.problem[h].replace("x", ",") in shapes[target]
        out[h] = (target, "shape" if fits else "order")
    return out


# --------------------------------------------------------------------------------------------
# aggregation


def _links_frame(
    execs: _Execs, links: dict[int, tuple[int, str]], ops: pd.DataFrame
) -> pd.DataFrame:
    pos = np.array(sorted(links), dtype=np.int64)
    op = np.array([links[p][0] for p in pos.tolist()], dtype=np.int64)
    return pd.DataFrame(
        {
            "event": execs.index[pos] if len(pos) else np.zeros(0, dtype=np.int64),
            "input": execs.input[pos],
            "line": execs.line[pos],
            "kind": execs.kind[pos],
            "problem": execs.problem[pos],
            "time_ms": execs.time[pos],
            "op": op,
            "op_name": ops["name"].reindex(op).astype(str).to_numpy() if len(op) else [],
            "method": [links[p][1] for p in pos.tolist()],
        }
    )


def _weakest(methods: Iterable[str]) -> str:
    present = set(methods)
    for m in reversed(METHODS):
        if m in present:
            return m
    return "order"


_RANK = {m: i for i, m in enumerate(METHODS)}


def _instances(links: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """One row per op instance with linked primitives (vectorised: traces can be long)."""
    columns = [
        "op",
        "name",
        "input_dims",
        "ts_us",
        "dur_ms",
        "primitives",
        "reorders",
        "onednn_ms",
        "reorder_ms",
        "method",
    ]
    if links.empty:
        return pd.DataFrame(columns=columns)
    reorder = links["kind"] == "reorder"
    rank = links["method"].map(_RANK)
    g = (
        pd.DataFrame(
            {
                "op": links["op"],
                "reorder": reorder.astype(np.int64),
                "primitive": (~reorder).astype(np.int64),
                "time": links["time_ms"],
                "reorder_time": links["time_ms"].where(reorder, 0.0),
                "main_rank": rank.where(~reorder, -1),
                "rank": rank,
            }
        )
        .groupby("op", sort=True)
        .agg(
            primitives=("primitive", "sum"),
            reorders=("reorder", "sum"),
            onednn_ms=("time", "sum"),
            reorder_ms=("reorder_time", "sum"),
            main_rank=("main_rank", "max"),
            rank=("rank", "max"),
        )
    )
    labels = g.index.to_numpy()
    op = ops.loc[labels]
    worst = np.where(g["main_rank"] >= 0, g["main_rank"], g["rank"]).astype(int)
    return pd.DataFrame(
        {
            "op": labels,
            "name": op["name"].astype(str).to_numpy(),
            "input_dims": op["input_dims"].astype(str).to_numpy(),
            "ts_us": op["ts_us"].to_numpy(),
            "dur_ms": op["dur_us"].to_numpy() / 1e3,
            "primitives": g["primitives"].to_numpy(),
            "reorders": g["reorders"].to_numpy(),
            "onednn_ms": g["onednn_ms"].to_numpy(),
            "reorder_ms": g["reorder_ms"].to_numpy(),
            "method": [METHODS[i] for i in worst],
        },
        columns=columns,
    )


def _kind_rows(group: pd.DataFrame) -> list[dict[str, Any]]:
    by_kind = group.groupby("kind", sort=False)["time_ms"].agg(["count", "sum"])
    by_kind = by_kind.sort_values("sum", ascending=False)
    return [
        {"kind": str(k), "count": int(r["count"]), "time_ms": float(r["sum"])}
        for k, r in by_kind.iterrows()
    ]


def _op_rows(
    links: pd.DataFrame, instances: pd.DataFrame, ops: pd.DataFrame, source: str
) -> list[dict[str, Any]]:
    wanted = set(links["op_name"].astype(str)) if len(links) else set()
    named = ops[ops["name"].isin(wanted).to_numpy()] if wanted else ops.iloc[:0]
    per_name = named.groupby(named["name"].astype(str))[["dur_us", "self_us"]].agg(["size", "sum"])
    rows = []
    for name, group in links.groupby("op_name", sort=False):
        count = int(per_name.at[name, ("dur_us", "size")])
        inst = instances[instances["name"] == name]
        time_ms = float(per_name.at[name, ("dur_us", "sum")]) / 1e3
        onednn_ms = float(group["time_ms"].sum())
        reorder = group["kind"] == "reorder"
        main = inst["method"]
        rows.append(
            {
                "name": str(name),
                "calls": count,
                "time_ms": time_ms,
                "self_ms": float(per_name.at[name, ("self_us", "sum")]) / 1e3,
                "onednn": _kind_rows(group),
                "link": _weakest(main),
                "onednn_time_ms": onednn_ms,
                "onednn_share": onednn_ms / time_ms if time_ms > 0 else None,
                "calls_with_onednn": int(len(inst)),
                "primitive_count": int((~reorder).sum()),
                "reorder_count": int(reorder.sum()),
                "reorder_time_ms": float(group.loc[reorder, "time_ms"].sum()),
                "links": {m: int(c) for m, c in Counter(group["method"]).items()},
                "source": source,
            }
        )
    rows.sort(key=lambda r: -r["onednn_time_ms"])
    return rows


def _without_onednn(ops: pd.DataFrame, linked: set[int], have_log: bool) -> list[dict[str, Any]]:
    """Compute-heavy innermost ops with no primitive linked.

    Without a verbose log only PyTorch's native fallbacks (``aten::_slow_conv2d_forward``
    ...) can be named: they never call oneDNN.
    """
    labels = _innermost_matching(ops, HEAVY)
    chosen = ops.loc[[label for label in labels if int(label) not in linked]]
    linked_names = {str(ops.at[label, "name"]) for label in linked}
    rows = []
    for name, group in chosen.groupby(chosen["name"].astype(str), sort=False):
        fallback = bool(NATIVE_FALLBACK.search(name))
        if name in linked_names or not (have_log or fallback):
            continue
        rows.append(
            {
                "name": name,
                "calls": int(len(group)),
                "time_ms": float(group["dur_us"].sum()) / 1e3,
                "self_ms": float(group["self_us"].sum()) / 1e3,
                "reason": "native fallback" if fallback else "no primitive linked",
            }
        )
    rows.sort(key=lambda r: -r["time_ms"])
    return rows


# --------------------------------------------------------------------------------------------
# entry points


def link_trace(log: ParsedLog, trace: TraceData, events: pd.DataFrame | None = None) -> LinkResult:
    """Link the exec events of ``log`` (or ``events``, some of them) to the ops of ``trace``."""
    markers = log.framework.markers if log.framework is not None else {}
    rows = log.events if events is None else events
    return link_trace_events(rows, trace, markers, have_log=bool(log.scans), records=log.records)


def link_trace_events(
    events: pd.DataFrame,
    trace: TraceData,
    markers: dict[str, list[tuple[int, str]]],
    have_log: bool = True,
    records: Sequence[LineRecord] | None = None,
) -> LinkResult:
    """Link the exec rows of an event table to the ops of ``trace``.

    ``markers`` are the profiler_start/stop lines per input; ``have_log`` says whether a
    verbose log was given at all (for the notes); ``records`` the log's records, whose
    parsed descriptors the events' ``record`` column points to.
    """
    execs = _Execs.of_events(events, records)
    ops = _op_frame(trace)
    notes: list[str] = []
    links: dict[int, tuple[int, str]] = {}
    window: list[int] = []
    method = ""
    has_stamps = len(execs) and np.isfinite(execs.stamp).any()
    if has_stamps and trace.base_time_ms is not None and len(ops):
        by_time, inside = _by_timestamp(execs, trace, ops)
        if len(inside) and len(by_time) >= 0.5 * len(inside):
            links = {p: (op, "timestamp") for p, op in by_time.items()}
            window, method = [int(p) for p in inside], "timestamp"
        elif len(inside):
            notes.append(
                f"only {len(by_time)} of {len(inside)} timestamped primitives fall "
                "inside a framework op: the clocks disagree; linked by shape instead"
            )
        else:
            notes.append(
                "no timestamped primitive falls inside the trace's time span (are "
                "they from the same run?); linked by shape and order instead"
            )
    elif len(execs) and trace.base_time_ms is None:
        notes.append("the trace has no base time: linked by shape and order")
    elif len(execs) and not has_stamps:
        notes.append(
            "the verbose log has no timestamps (ONEDNN_VERBOSE_TIMESTAMP=1 gives "
            "them): linked by shape and order"
        )
    if not method and len(execs) and len(ops):
        pairs, window = _by_sequence(execs, trace, ops, markers, notes)
        links = _attach_helpers(execs, window, pairs, ops)
        method = "shape" if any(m == "shape" for _, m in pairs.values()) else "order"
    if not len(execs) and have_log:
        notes.append("the verbose log holds no primitive executions")
    elif len(execs) and not window:
        notes.append("no primitive execution of the log falls inside the profiled window")
    frame = _links_frame(execs, links, ops)
    instances = _instances(frame, ops)
    rows = _op_rows(frame, instances, ops, trace.path)
    without = _without_onednn(ops, set(frame["op"].tolist()), have_log)
    fallbacks = [r for r in without if r["reason"] == "native fallback"]
    if fallbacks:
        names = ", ".join(f"{r['name']} x{r['calls']}" for r in fallbacks[:4])
        notes.append(
            f"PyTorch ran its native kernels instead of oneDNN: {names} (as for bf16 "
            "on a CPU without avx512_bf16 / avx_ne_convert, or with "
            "torch.backends.mkldnn disabled)"
        )
    if not have_log:
        notes.append("no verbose log among the inputs: nothing to link the ops to")
    window_lines = execs.line[np.array(window, dtype=np.int64)] if window else []
    info = {
        "trace": trace.path,
        "method": method or None,
        "primitives_in_window": len(window),
        "primitives_linked": len(links),
        "unlinked_in_window": len(set(window) - set(links)),
        "outside_window": len(execs) - len(window),
        "by_method": {m: int(c) for m, c in Counter(m for _, m in links.values()).items()},
        "window_lines": [int(min(window_lines)), int(max(window_lines))] if window else None,
        "framework_ops_linked": int(len(instances)),
    }
    return LinkResult(frame, instances, rows, without, info, notes)


def _table_window(
    markers: dict[str, list[tuple[int, str]]],
    execs: _Execs,
    table: ProfilerTable,
    since: int,
    notes: list[str],
) -> np.ndarray:
    """Exec positions the table's profiled window covers.

    A table inside a log covers that log before it: between the last profiler_start/stop
    pair before it when the log has them, else since the line ``since`` (the previous
    table of the log, or its start). A table file covers the other inputs (between their
    profiler_start/stop lines, when they have them). Only the window's own execs are
    touched, so many tables cost what their windows hold.
    """
    sources = [table.source] if table.source in execs.by_source else sorted(execs.by_source)
    window: list[np.ndarray] = []
    for source in sources:
        own = source == table.source
        limit = table.line if own else 1 << 62
        ranges, stops = execs.marker_ranges(markers.get(source, []))
        before = bisect_right(stops, limit)  # the ranges that end before the table
        if before:
            a, b = ranges[before - 1]
            window.append(execs.between(source, a, b))
        else:
            window.append(execs.between(source, since if own else 0, limit))
            notes.append(
                f"{source}: no profiler_start/stop lines; "
                + (
                    "each table was linked to the primitives since the table before it"
                    if own
                    else f"the table {table.source}:{table.line} was linked to all its primitives"
                )
            )
    return np.concatenate(window) if window else np.zeros(0, dtype=np.int64)


def link_table(
    log: ParsedLog,
    table: ProfilerTable,
    execs: _Execs | None = None,
    since: int = 0,
    events: pd.DataFrame | None = None,
) -> LinkResult:
    """Link a key_averages table (no per-call data) to the primitives of its profiled window.

    Each primitive kind goes to the innermost table op that calls it (the one with the least
    CPU total among the matching names); helpers go to the op before or after them.
    ``since`` is the line of the previous table of the same log (see :func:`_table_window`);
    ``events`` the events to link (all of ``log``'s by default).
    """
    markers = log.framework.markers if log.framework is not None else {}
    rows = log.events if events is None else events
    if execs is None:
        execs = _Execs.of_events(rows, log.records)
    return link_table_events(rows, table, markers, execs, since)


def _table_column(table: ProfilerTable, name: str) -> list[Any]:
    """A column of ``table`` as its rows frame gives it (without building the frame when
    nothing differs: pandas reads a missing name beside text as NaN)."""
    values = table.columns[name].tolist()
    if name == "name" and None in values:
        return table.rows[name].tolist()
    return values


def link_table_events(
    events: pd.DataFrame,
    table: ProfilerTable,
    markers: dict[str, list[tuple[int, str]]],
    execs: _Execs | None = None,
    since: int = 0,
) -> LinkResult:
    """:func:`link_table` on an event table and the logs' profiler_start/stop lines.

    Per table, the work is a few array operations over its window: a log that prints its
    profile every few steps links each table to its own stretch at the cost of that stretch.
    """
    execs = _Execs.of_events(events) if execs is None else execs
    notes: list[str] = []
    window = _table_window(markers, execs, table, since, notes)
    if not len(window):
        notes.append(f"{table.source}:{table.line}: no primitive execution to link the table to")
    needed = {"name", "calls", "cpu_total_ms", "self_cpu_ms"}
    if not needed <= set(table.columns):
        notes.append(
            f"{table.source}:{table.line}: the table lacks the columns "
            f"{sorted(needed - set(table.columns))}; not linked"
        )
        return LinkResult(pd.DataFrame(), pd.DataFrame(), [], [], {}, notes)
    grouped: dict[str, list[float]] = {}  # name -> [calls, CPU total, self CPU]
    for name, calls, total, own in zip(
        _table_column(table, "name"),
        _table_column(table, "calls"),
        _table_column(table, "cpu_total_ms"),
        _table_column(table, "self_cpu_ms"),
        strict=True,
    ):
        acc = grouped.setdefault(name, [0, 0.0, 0.0])
        acc[0] += calls
        acc[1] += total
        acc[2] += own
    names = list(grouped)
    codes, kinds = execs.kind_codes
    wcodes = codes[window]
    owner = np.full(len(kinds), -1, dtype=np.int64)  # kind code -> the op that calls it
    for code in np.unique(wcodes).tolist():
        pattern = ANCHORS.get(kinds[code])
        if pattern is None:
            continue
        hits = [i for i, n in enumerate(names) if pattern.search(str(n))]
        if hits:
            owner[code] = min(hits, key=lambda i: grouped[names[i]][1])
    label = owner[wcodes]
    helpers, targets = _helper_targets(execs, window, label)
    label[helpers] = targets
    linked = label >= 0
    # in log order, as the links are kept
    order = np.argsort(window[linked], kind="stable")
    pos = window[linked][order]
    op = label[linked][order]
    frame = functools.partial(_links_frame_of, execs, pos, op, names)
    out = _table_op_rows(execs, pos, op, names, grouped, f"{table.source}:{table.line}")
    window_sources = set(execs.input[window].tolist())
    in_sources = sum(len(execs.by_source[s][0]) for s in window_sources)
    info = {
        "table": f"{table.source}:{table.line}",
        "method": "order" if len(pos) else None,
        "primitives_in_window": len(window),
        "primitives_linked": len(pos),
        "unlinked_in_window": len(window) - len(pos),
        "outside_window": int(in_sources - len(window)),
        "by_method": {"order": len(pos)} if len(pos) else {},
    }
    return LinkResult(frame, pd.DataFrame, out, [], info, notes)


def _links_frame_of(
    execs: _Execs, pos: np.ndarray, op: np.ndarray, names: list[str]
) -> pd.DataFrame:
    """:func:`_links_frame` of a table's links (all by order)."""
    links = {p: (o, "order") for p, o in zip(pos.tolist(), op.tolist(), strict=True)}
    return _links_frame(execs, links, pd.DataFrame({"name": names, "input_dims": ""}))


def _table_op_rows(
    execs: _Execs,
    pos: np.ndarray,
    op: np.ndarray,
    names: list[str],
    grouped: dict[str, list[float]],
    source: str,
) -> list[dict[str, Any]]:
    """One row per table op with linked primitives, ops in order of their first link,
    most oneDNN time first; per kind, count and time (most time first, then in order of
    first appearance). Sums run in log order."""
    if not len(pos):
        return []
    codes, kinds = execs.kind_codes
    kind = codes[pos]
    time = execs.time[pos]
    reorder = kinds.index("reorder") if "reorder" in kinds else -1
    labels, first = np.unique(op, return_index=True)
    out = []
    for label in labels[np.argsort(first)].tolist():
        mine = np.flatnonzero(op == label)
        k, t = kind[mine], time[mine]
        uniq, at, inverse = np.unique(k, return_index=True, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(uniq))
        times = np.bincount(inverse, weights=t, minlength=len(uniq))  # summed in log order
        ranked = sorted(np.argsort(at).tolist(), key=lambda u: -times[u])
        onednn = [
            {"kind": kinds[int(uniq[u])], "count": int(counts[u]), "time_ms": float(times[u])}
            for u in ranked
        ]
        onednn_ms = float(np.add.accumulate(t)[-1])
        is_reorder = k == reorder
        n_reorder = int(is_reorder.sum())
        reorder_ms = float(np.add.accumulate(t[is_reorder])[-1]) if n_reorder else 0.0
        name = names[label]
        calls, time_ms, self_ms = grouped[name]
        out.append(
            {
                "name": str(name),
                "calls": int(calls),
                "time_ms": float(time_ms),
                "self_ms": float(self_ms),
                "onednn": onednn,
                "link": "order",
                "onednn_time_ms": onednn_ms,
                "onednn_share": onednn_ms / time_ms if time_ms > 0 else None,
                "calls_with_onednn": None,
                "primitive_count": len(mine) - n_reorder,
                "reorder_count": n_reorder,
                "reorder_time_ms": reorder_ms,
                "links": {"order": len(mine)},
                "source": source,
            }
        )
    out.sort(key=lambda r: -r["onednn_time_ms"])
    return out


def link_framework(log: ParsedLog, events: pd.DataFrame | None = None) -> list[LinkResult]:
    """Link every trace of ``log`` (or, without traces, every table) to its primitives:
    to ``events`` when given (the analysis passes the events after ``skip_iterations``),
    else to all of the log's events."""
    fw = log.framework
    if fw is None:
        return []
    rows = log.events if events is None else events
    if fw.traces:
        return [link_trace(log, t, rows) for t in fw.traces]
    plain = [t for t in fw.tables if not t.by_input_shape] or fw.tables
    # once for every table: each then costs what its window holds
    execs = _Execs.of_events(rows, log.records)
    lines: dict[str, list[int]] = defaultdict(list)
    for t in plain:
        lines[t.source].append(t.line)
    for v in lines.values():
        v.sort()
    results = []
    for t in plain:
        before = lines[t.source][: bisect_left(lines[t.source], t.line)]
        results.append(link_table(log, t, execs, before[-1] if before else 0, rows))
    return results


def framework_extras(log: ParsedLog, results: list[LinkResult] | None = None) -> dict[str, Any]:
    """The JSON keys of the linking: ``framework_ops`` and its companions, of ``results``
    (the links already made, one per trace or table; made here over all events without)."""
    if results is None:
        results = link_framework(log)
    if not results:
        return {}
    fw = log.framework
    tables = [t for t in fw.tables if not t.by_input_shape] if fw is not None else []
    if fw is not None and fw.traces and tables:  # cross-check the trace with the table
        rows = (
            tables[0]
            .rows.groupby("name")
            .agg(calls=("calls", "sum"), time_ms=("cpu_total_ms", "sum"))
        )
        for r in (row for res in results for row in res.ops):
            if r["name"] in rows.index:
                r["table_calls"] = int(rows.at[r["name"], "calls"])
                r["table_time_ms"] = float(rows.at[r["name"], "time_ms"])
    notes = list(dict.fromkeys(n for r in results for n in r.notes))  # once each, in order
    if log.framework is not None:
        notes = list(log.framework.errors) + notes
    return {
        "framework_ops": [row for r in results for row in r.ops],
        "framework_ops_without_onednn": [row for r in results for row in r.without_onednn],
        "framework_link": {"runs": [r.info for r in results], "notes": notes},
    }
