"""The framework-level patterns the framework rules blame, found once in a trace's rows.

Each function takes a :class:`~.view.FrameworkAnalysis` of a trace and returns row masks
(aligned with ``analysis.rows``) or small tables; the rules turn them into findings with
``analysis.typical_ms(mask)`` as their time per step. Definitions are in the docstrings
and in ``docs/framework.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.args import (
    FORMATS,
    LOW_PRECISION,
    SCALAR_TYPES,
    dtype,
    json_list,
    memory_format,
    per_category,
)
from dnnlens.analysis.framework.names import (
    FUSED_OPTIMIZER,
    OPTIMIZER_FUSED,
    OPTIMIZER_PER_PARAMETER,
    OPTIMIZER_STEP_PREFIX,
)
from dnnlens.analysis.framework.norms import Normalization, elementwise_names, normalization
from dnnlens.analysis.framework.rows import OpRows, propagate
from dnnlens.analysis.framework.view import FrameworkAnalysis

__all__ = [
    "Chain",
    "Normalization",
    "OptimizerOps",
    "casts",
    "elementwise_chains",
    "callers",
    "layout_changes",
    "normalization",
    "optimizer_ops",
]

# --------------------------------------------------------------------------------------------
# optimizer


@dataclass
class OptimizerOps:
    """The per-parameter math inside the optimizer steps."""

    steps: np.ndarray  # rows of the Optimizer.step# spans
    per_parameter: np.ndarray  # rows of per-parameter math ops inside them
    inside_foreach: np.ndarray  # of those, the ones run inside a _foreach_ op
    fused: np.ndarray  # rows of _fused_ / _foreach_ kernels inside them
    names: list[str]  # the optimizer step names (Optimizer.step#SGD.step ...)
    inside_fused: np.ndarray  # rows run inside a fused kernel (its own copies: not dispatch)


def _on_scalar(rows: OpRows) -> np.ndarray:
    """Rows whose first input is a 0-d tensor (``[[], ...]``)."""
    scalar = np.array([d.startswith("[[]") for d in rows.dims_names], dtype=bool)
    return scalar[rows.dims] if len(scalar) else np.zeros(len(rows), dtype=bool)


def optimizer_ops(fw: FrameworkAnalysis) -> OptimizerOps:
    """Ops inside ``Optimizer.step#`` spans: the per-parameter math
    (:data:`.names.OPTIMIZER_PER_PARAMETER` on tensors of one dimension or more, outermost
    among themselves, including the ones a ``_foreach_`` op runs one tensor at a time) and
    the multi-tensor kernels. Ops inside a fused kernel's call (``aten::_fused_sgd_``,
    ``_fused_adamw_`` ...: the ``.contiguous()`` copies it makes of channels_last weights)
    are the kernel's own work, not per-parameter dispatch."""
    rows = fw.rows
    assert rows is not None
    step = rows.mask_prefix(OPTIMIZER_STEP_PREFIX) & rows.main
    inside_step = propagate(rows.parent, rows.depth, step, outermost=True) >= 0
    fused_kernel = inside_step & rows.mask_match(FUSED_OPTIMIZER)
    top_fused = propagate(rows.parent, rows.depth, fused_kernel, outermost=True)
    inside_fused = (top_fused >= 0) & (top_fused != np.arange(len(rows)))
    math = inside_step & rows.mask_names(OPTIMIZER_PER_PARAMETER) & ~inside_fused
    math = rows.outermost(math) & ~_on_scalar(rows)  # step counters are 0-d tensors
    kernels = inside_step & rows.mask_match(OPTIMIZER_FUSED)
    foreach = inside_step & rows.mask_prefix("aten::_foreach_")
    in_foreach = propagate(rows.parent, rows.depth, foreach, outermost=True) >= 0
    names = sorted({str(n) for n in rows.name_of(np.flatnonzero(fw.steady_rows(step)))})
    return OptimizerOps(step, math, math & in_foreach, kernels, names, inside_fused)


# --------------------------------------------------------------------------------------------
# elementwise chains


@dataclass
class Chain:
    """A run of elementwise and reduction segments of a step, in time order."""

    rows: np.ndarray  # the segment rows of the chain in the representative step
    names: list[str]


def elementwise_chains(
    fw: FrameworkAnalysis, min_ops: int, exclude: np.ndarray | None = None
) -> tuple[list[Chain], np.ndarray]:
    """Chains of at least ``min_ops`` elementwise segments in the first steady step (views
    inside a chain do not break it; segments in ``exclude``, blamed elsewhere, do), and the
    mask of the rows of every steady step that are the same segments (same name, shapes and
    occurrence in their step)."""
    rows = fw.rows
    assert rows is not None
    first = fw.first_steady_step()
    segs = np.flatnonzero(rows.main & (rows.step == first) & (rows.segment == np.arange(len(rows))))
    segs = segs[np.argsort(rows.ts[segs], kind="stable")]
    work, view = elementwise_names(rows)
    chains: list[Chain] = []
    run: list[int] = []
    count = 0

    def close() -> None:
        nonlocal run, count
        while run and not work[rows.name[run[-1]]]:
            run.pop()  # trailing views are no part of the chain
        if count >= min_ops:
            at = np.array(run, dtype=np.int64)
            chains.append(Chain(at, [str(n) for n in rows.name_of(at)]))
        run, count = [], 0

    skip = np.zeros(len(rows), dtype=bool) if exclude is None else exclude
    for r in segs.tolist():
        code = rows.name[r]
        if skip[r]:
            close()
        elif work[code]:
            run.append(r)
            count += 1
        elif view[code] and run:
            run.append(r)
        else:
            close()
    close()
    mask = np.zeros(len(rows), dtype=bool)
    if chains:
        chosen = np.concatenate([c.rows for c in chains])
        keys = rows.key(np.arange(len(rows)))
        mask = np.isin(keys, keys[chosen]) & (rows.segment == np.arange(len(rows)))
    return chains, mask


# --------------------------------------------------------------------------------------------
# casts


def casts(fw: FrameworkAnalysis) -> np.ndarray:
    """Casts between float32 and a low-precision type that the framework issues itself:
    ``aten::_to_copy`` (and ``aten::copy_`` not inside one) that change the dtype to or from
    bfloat16/float16, called from the top of an op (what autocast does, and ``.to(dtype)``
    in the program) or from an autograd ``ToCopyBackward`` node, not from inside another
    ATen kernel (an internal up-cast for accumulation). ``_to_copy`` goes from its input's
    type to its dtype argument (``Concrete Inputs``), ``copy_(self, src)`` between its two
    inputs' types."""
    rows = fw.rows
    assert rows is not None
    to_copy = rows.mask_names({"aten::_to_copy"})
    copy = rows.mask_names({"aten::copy_"})
    first = per_category(rows, "input_types", lambda a: dtype(a[0]) if a else "")
    second = per_category(rows, "input_types", lambda a: dtype(a[1]) if len(a) > 1 else "")
    target = per_category(
        rows, "concrete_inputs", lambda a: SCALAR_TYPES.get(str(a[1]), "") if len(a) > 1 else ""
    )

    def changes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.array(
            [
                bool(x and y and x != y and (x in LOW_PRECISION or y in LOW_PRECISION))
                for x, y in zip(a, b, strict=True)
            ],
            dtype=bool,
        )

    cast = (to_copy & changes(first, target)) | (copy & changes(first, second))
    wrapper = rows.mask_names({"aten::to", "aten::_to_copy"})
    caller = rows.parent.copy()
    for _ in range(4):  # skip the aten::to / _to_copy wrappers above a cast
        up = (caller >= 0) & wrapper[np.maximum(caller, 0)]
        if not up.any():
            break
        caller = np.where(up, rows.parent[np.maximum(caller, 0)], caller)
    top = caller < 0
    safe = np.maximum(caller, 0)
    from_op = ~top & ((rows.segment[safe] == safe) | ~rows.candidate[safe])
    from_node = ~top & rows.mask_match(_TO_COPY_BACKWARD)[safe]
    return rows.outermost(cast & (top | from_op | from_node))


_TO_COPY_BACKWARD = re.compile(r"ToCopyBackward")


# --------------------------------------------------------------------------------------------
# memory-format changes


def _change(name: str, dims: tuple, strides: tuple, concrete: tuple) -> bool:
    """Whether an op call changes the memory format of its (first) input."""
    first = memory_format(dims[0] if dims else None, strides[0] if strides else None)
    if name == "aten::copy_":
        second = memory_format(
            dims[1] if len(dims) > 1 else None, strides[1] if len(strides) > 1 else None
        )
        return bool(first and second and first != second)
    at = 6 if name == "aten::_to_copy" else 1
    code = str(concrete[at]) if len(concrete) > at else ""
    target = FORMATS.get(code or ("0" if name == "aten::contiguous" else "1"), "")
    if target == "preserve" or not target or not first:
        return False
    return target != first


def layout_changes(fw: FrameworkAnalysis) -> np.ndarray:
    """Calls of ``aten::contiguous``, ``aten::clone``, ``aten::copy_`` and ``aten::_to_copy``
    that change a 4-D or 5-D tensor's memory format (NCHW <-> channels_last), outermost
    among themselves; judged from the input strides and the memory-format argument."""
    rows = fw.rows
    assert rows is not None
    ops = rows.trace.ops
    cols = [ops[c].cat.codes.to_numpy() for c in ("input_dims", "input_strides", "concrete_inputs")]
    cats = [
        [str(x) for x in ops[c].cat.categories]
        for c in ("input_dims", "input_strides", "concrete_inputs")
    ]
    names = rows.names
    wanted = {"aten::contiguous", "aten::clone", "aten::copy_", "aten::_to_copy"}
    candidates = np.flatnonzero(rows.mask_names(wanted))
    keys = pd.DataFrame(
        {
            "n": rows.name[candidates],
            "d": cols[0][candidates],
            "s": cols[1][candidates],
            "c": cols[2][candidates],
        }
    )
    verdict: dict[tuple[int, int, int, int], bool] = {}
    for key in keys.drop_duplicates().itertuples(index=False):
        args = [
            json_list(cats[i][k]) if k >= 0 else () for i, k in enumerate((key.d, key.s, key.c))
        ]
        verdict[tuple(key)] = _change(str(names[key.n]), *args)
    hit = np.array([verdict[tuple(k)] for k in keys.itertuples(index=False)], dtype=bool)
    mask = np.zeros(len(rows), dtype=bool)
    mask[candidates[hit]] = True
    return rows.outermost(mask)


#: Ops that only wrap a copy (``to`` -> ``_to_copy`` -> ``copy_``): never the caller.
_COPY_WRAPPERS = frozenset(
    {"aten::to", "aten::_to_copy", "aten::copy_", "aten::contiguous", "aten::clone"}
)


def callers(fw: FrameworkAnalysis, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of ``mask`` by the op that made them: the nearest enclosing op that is not
    a copy wrapper (``aten::convolution_backward``, ``aten::_fused_sgd_`` ...), or ``"the
    program"`` when none is (a call at the top of a step, or from Python)."""
    rows = fw.rows
    assert rows is not None
    at = np.flatnonzero(mask)
    wrapper = rows.mask_names(_COPY_WRAPPERS)
    cur = rows.parent[at].astype(np.int64)
    for _ in range(8):  # to -> _to_copy -> copy_: a few levels at most
        up = (cur >= 0) & wrapper[np.maximum(cur, 0)]
        if not up.any():
            break
        cur = np.where(up, rows.parent[np.maximum(cur, 0)], cur)
    safe = np.maximum(cur, 0)
    top = (cur < 0) | rows.is_step[safe] | rows.python[safe] | ~rows.candidate[safe]
    names = np.where(top, "the program", rows.names[rows.name[safe]]).astype(str)
    out: dict[str, np.ndarray] = {}
    for name in np.unique(names).tolist():
        own = np.zeros(len(rows), dtype=bool)
        own[at[names == name]] = True
        out[str(name)] = own
    return out
