"""MINIMAL FALLBACK for iterations and reorder classification, used only when
``dnnlens.analysis.iterations`` / ``dnnlens.analysis.graph`` (issue 4) are missing or fail.

This is deliberately small and is not the op graph: it finds the repeating period of the
primitive exec stream, marks leading passes that still create primitives (cache misses) as
warm-up, and classifies each reorder by its memory descriptors:

* ``converts``: ``layout``, ``dtype`` or ``both`` (src md vs dst md);
* ``tensor``: ``weight`` when the reorder's dims are the weight dims of the nearest compute
  primitive that follows it (or precedes it, for weight gradients), else ``activation``;
* ``round_trip``: an activation reorder X->Y when the same iteration also reorders an
  activation Y->X (plain to blocked and back).

The rule context prefers the issue-4 modules and says which one it used
(``RuleContext.graph_source``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dnnlens.parsers.fields import MdList, parse_mds, parse_problem

#: Longest iteration (exec lines) the fallback looks for, and how far back it looks.
MAX_PERIOD = 4096
MAX_WINDOW = 200_000
COMPUTE_KINDS = frozenset(
    {"convolution", "deconvolution", "inner_product", "matmul", "rnn", "lstm", "gru"}
)


@dataclass
class FallbackIterations:
    """Iterations of the exec stream: the shape the rules read (see ``context.IterationView``)."""

    count: int
    warmup: int
    period_exec: int
    iteration: np.ndarray  # per event: iteration number from 0 (warm-up ones too), -1 none
    steady: np.ndarray  # per event: True in steady state


def _best_period(seq: np.ndarray) -> tuple[int, int]:
    """(period, covered) where ``covered`` exec lines at the end repeat with ``period``."""
    n = len(seq)
    best_p, best_cov = 0, 0
    for p in range(1, min(n // 2, MAX_PERIOD) + 1):
        diff = np.flatnonzero(seq[p:] != seq[:-p])
        # seq[i] == seq[i - p] for every i after the last mismatch
        run = (n - p) - (int(diff[-1]) + 1) if len(diff) else n - p
        cov = run + p
        if cov >= 2 * p and (cov // p) * p > best_cov:
            best_p, best_cov = p, (cov // p) * p
        if best_cov == n:
            break
    return best_p, best_cov


def find_iterations_fallback(events: pd.DataFrame) -> FallbackIterations:
    """Iterations of ``events`` by periodicity of the primitive exec records."""
    n_ev = len(events)
    iteration = np.full(n_ev, -1, dtype=np.int64)
    steady = np.zeros(n_ev, dtype=bool)
    is_exec = ((events["operation"] == "exec") & (events["kind"] != "graph_partition")).to_numpy()
    exec_pos = np.flatnonzero(is_exec)
    seq = events["record"].to_numpy()[exec_pos][-MAX_WINDOW:]
    offset = len(exec_pos) - len(seq)
    period, covered = _best_period(seq)
    if period == 0:
        return FallbackIterations(0, 0, 0, iteration, steady)
    start = offset + len(seq) - covered  # first periodic exec (index into exec_pos)
    n_iter = covered // period
    # iteration number of each exec: periodic ones by period, earlier ones form warm-up 0
    lead = 1 if start > 0 else 0
    exec_iter = np.zeros(len(exec_pos), dtype=np.int64)
    exec_iter[start:] = lead + (np.arange(len(exec_pos) - start) // period)
    # creates and other events belong to the iteration of the next exec
    nxt = np.searchsorted(exec_pos, np.arange(n_ev), side="left")
    nxt = np.minimum(nxt, len(exec_pos) - 1)
    iteration[:] = exec_iter[nxt] if len(exec_pos) else -1
    # leading iterations that still miss the primitive cache are warm-up
    miss = (events["cache"] == "cache_miss").to_numpy()
    warm = lead
    for it in range(lead, lead + n_iter - 1):
        if miss[iteration == it].any():
            warm = it + 1
        else:
            break
    steady = iteration >= warm
    return FallbackIterations(lead + n_iter - warm, warm, period, iteration, steady)


def _src_dst(mds: MdList) -> tuple[object | None, object | None]:
    src = mds.get("src") or mds.get("in") or (mds[0] if len(mds) else None)
    dst = mds.get("dst") or mds.get("out") or (mds[-1] if len(mds) > 1 else None)
    return src, dst


def _is_weight(dims: tuple[int, ...], kind: str, problem: str) -> bool:
    """Whether ``dims`` are the weight dims of a compute primitive (from its problem)."""
    d = parse_problem(kind, problem).dims
    if "slc" in d and "dhc" in d and len(dims) == 5:  # rnn: l x dir x (slc|sic) x gates x dhc
        return (
            dims[0] == d.get("l") and dims[2] in (d["slc"], d.get("sic")) and (dims[4] == d["dhc"])
        )
    return dims in _weight_dims(kind, problem)


def _weight_dims(kind: str, problem: str) -> set[tuple[int, ...]]:
    """Possible weight dims of a conv / ip / matmul, from its problem descriptor."""
    p = parse_problem(kind, problem)
    d = p.dims
    out: set[tuple[int, ...]] = set()
    if "oc" in d and "ic" in d:
        spatial = tuple(d[k] for k in ("kd", "kh", "kw") if d.get(k) is not None)
        g = d.get("g") or 1
        oc, ic = d["oc"], d["ic"]
        if oc is not None and ic is not None:
            out.add((oc, ic, *spatial))
            out.add((g, oc // g, ic // g, *spatial))
            out.add((ic, oc, *spatial))
    if len(p.tensors) >= 2:
        out.add(tuple(v for v in p.tensors[1] if v is not None))
    return out


def classify_reorders(
    events: pd.DataFrame, records: list, steady: np.ndarray, iteration: np.ndarray
) -> pd.DataFrame:
    """One row per reorder record seen in steady state (all of them if none is)."""
    execs_mask = (events["operation"] == "exec") & (events["kind"] != "graph_partition")
    execs = events[execs_mask.to_numpy()]
    ex_steady = steady[execs_mask.to_numpy()]
    ex_iter = iteration[execs_mask.to_numpy()]
    use = execs[ex_steady] if ex_steady.any() else execs
    use_iter = ex_iter[ex_steady] if ex_steady.any() else ex_iter
    kinds = use["kind"].astype(str).to_numpy()
    recs = use["record"].to_numpy()
    rows: dict[int, dict] = {}
    for i, (kind, rid) in enumerate(zip(kinds, recs, strict=True)):
        if kind != "reorder":
            continue
        rid = int(rid)
        if rid in rows:
            continue
        rec = records[rid]
        src, dst = _src_dst(parse_mds(rec.mds))
        dims = tuple(int(x) for x in rec.problem.split("x") if x.isdigit())
        tensor = "activation"
        for j in (*range(i + 1, min(i + 8, len(kinds))), *range(i - 1, max(i - 4, -1), -1)):
            if kinds[j] in COMPUTE_KINDS:
                other = records[int(recs[j])]
                if dims and _is_weight(dims, other.kind, other.problem):
                    tensor = "weight"
                    break
        layout_a = getattr(src, "layout", "")
        layout_b = getattr(dst, "layout", "")
        dt_a, dt_b = getattr(src, "dtype", ""), getattr(dst, "dtype", "")
        lay, dt = layout_a != layout_b, dt_a != dt_b
        rows[rid] = {
            "record": rid,
            "tensor": tensor,
            "converts": "both" if lay and dt else ("dtype" if dt else "layout"),
            "src_layout": layout_a,
            "dst_layout": layout_b,
            "src_dtype": dt_a,
            "dst_dtype": dt_b,
            "dims": "x".join(map(str, dims)),
            "iteration": int(use_iter[i]),
        }
    frame = pd.DataFrame(list(rows.values()))
    if frame.empty:
        return pd.DataFrame(columns=["record", "tensor", "converts", "round_trip"])
    act = frame[frame["tensor"] == "activation"]
    pairs = set(zip(act["src_layout"], act["dst_layout"], act["src_dtype"], strict=True))
    frame["round_trip"] = [
        t == "activation" and (b, a, sd) in pairs and a != b
        for t, a, b, sd in zip(
            frame["tensor"],
            frame["src_layout"],
            frame["dst_layout"],
            frame["src_dtype"],
            strict=True,
        )
    ]
    return frame.drop(columns=["iteration"])
