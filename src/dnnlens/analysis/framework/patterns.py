"""The framework-level patterns the framework rules blame, found once in a trace's rows.

Each function takes a :class:`~.view.FrameworkAnalysis` of a trace and returns row masks
(aligned with ``analysis.rows``) or small tables; the rules turn them into findings with
``analysis.typical_ms(mask)`` as their time per step. Definitions are in the docstrings
and in ``docs/framework.md``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.names import (
    ELEMENTWISE,
    ELEMENTWISE_BACKWARD,
    NATIVE_NORMALIZATION,
    NORM_MODULE,
    OPTIMIZER_FUSED,
    OPTIMIZER_PER_PARAMETER,
    OPTIMIZER_STEP_PREFIX,
    VIEWS,
    module_class,
)
from dnnlens.analysis.framework.rows import OpRows, propagate
from dnnlens.analysis.framework.view import FrameworkAnalysis

#: ScalarType codes as printed in ``Concrete Inputs`` and the names of ``Input type``.
_SCALAR_TYPES = {
    "0": "uint8",
    "1": "int8",
    "2": "int16",
    "3": "int32",
    "4": "int64",
    "5": "float16",
    "6": "float32",
    "7": "float64",
    "11": "bool",
    "15": "bfloat16",
}
_INPUT_TYPES = {
    "unsigned char": "uint8",
    "signed char": "int8",
    "short int": "int16",
    "int": "int32",
    "long int": "int64",
    "c10::Half": "float16",
    "float": "float32",
    "double": "float64",
    "bool": "bool",
    "c10::BFloat16": "bfloat16",
}
LOW_PRECISION = frozenset({"bfloat16", "float16"})
#: MemoryFormat codes in ``Concrete Inputs``.
_FORMATS = {"0": "contiguous", "1": "preserve", "2": "channels_last", "3": "channels_last_3d"}


def _column_codes(rows: OpRows, column: str) -> tuple[np.ndarray, list[str]]:
    cat = rows.trace.ops[column]
    return cat.cat.codes.to_numpy(), [str(c) for c in cat.cat.categories]


@lru_cache(maxsize=4096)
def _json_list(text: str) -> tuple:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(value) if isinstance(value, list) else ()


def _per_category(rows: OpRows, column: str, fn) -> np.ndarray:  # noqa: ANN001
    """``fn`` applied to each distinct text of ``column`` (a JSON list), spread to rows."""
    codes, texts = _column_codes(rows, column)
    values = np.array([fn(_json_list(t)) for t in texts] + [fn(())], dtype=object)
    return values[codes]


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


def _on_scalar(rows: OpRows) -> np.ndarray:
    """Rows whose first input is a 0-d tensor (``[[], ...]``)."""
    scalar = np.array([d.startswith("[[]") for d in rows.dims_names], dtype=bool)
    return scalar[rows.dims] if len(scalar) else np.zeros(len(rows), dtype=bool)


def optimizer_ops(fw: FrameworkAnalysis) -> OptimizerOps:
    """Ops inside ``Optimizer.step#`` spans: the per-parameter math
    (:data:`.names.OPTIMIZER_PER_PARAMETER` on tensors of one dimension or more, outermost
    among themselves, including the ones a ``_foreach_`` op runs one tensor at a time) and
    the multi-tensor kernels."""
    rows = fw.rows
    assert rows is not None
    step = rows.mask_prefix(OPTIMIZER_STEP_PREFIX) & rows.main
    inside_step = propagate(rows.parent, rows.depth, step, outermost=True) >= 0
    math = inside_step & rows.mask_names(OPTIMIZER_PER_PARAMETER)
    math = rows.outermost(math) & ~_on_scalar(rows)  # step counters are 0-d tensors
    kernels = inside_step & rows.mask_match(OPTIMIZER_FUSED)
    foreach = inside_step & rows.mask_prefix("aten::_foreach_")
    in_foreach = propagate(rows.parent, rows.depth, foreach, outermost=True) >= 0
    names = sorted({str(n) for n in rows.name_of(np.flatnonzero(fw.steady_rows(step)))})
    return OptimizerOps(step, math, math & in_foreach, kernels, names)


# --------------------------------------------------------------------------------------------
# elementwise chains


@dataclass
class Chain:
    """A run of elementwise and reduction segments of a step, in time order."""

    rows: np.ndarray  # the segment rows of the chain in the representative step
    names: list[str]


def _elementwise_names(rows: OpRows) -> tuple[np.ndarray, np.ndarray]:
    """Per name code: counts as elementwise work; is a view (neutral in a chain)."""
    work = np.array(
        [n in ELEMENTWISE or bool(ELEMENTWISE_BACKWARD.match(n)) for n in rows.names], dtype=bool
    )
    view = np.array([n in VIEWS for n in rows.names], dtype=bool)
    return work, view


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
    work, view = _elementwise_names(rows)
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
# normalization


@dataclass
class Normalization:
    """Normalization done by ATen rather than oneDNN."""

    native: np.ndarray  # rows of ATen's batch-norm kernels (outermost)
    modules: np.ndarray  # rows of norm module frames made of elementwise ops
    inside: np.ndarray  # rows of the ops inside those frames
    backward: np.ndarray  # rows of the autograd nodes of those modules' ops
    module_classes: list[str]


def normalization(fw: FrameworkAnalysis) -> Normalization:
    """ATen's native batch norm kernels, and norm modules (``FrozenBatchNorm2d`` ...) that
    run elementwise ops only, with the backward nodes of their ops (by sequence number)."""
    rows = fw.rows
    assert rows is not None
    native = rows.outermost(rows.mask_names(NATIVE_NORMALIZATION))
    frames = rows.main & (rows.module == np.arange(len(rows)))
    is_norm = np.array([bool(NORM_MODULE.search(module_class(n))) for n in rows.names], dtype=bool)
    frames &= is_norm[rows.name] if len(rows.names) else frames
    work, view = _elementwise_names(rows)
    inside = (rows.module >= 0) & ~rows.python & frames[np.maximum(rows.module, 0)]
    plain = np.ones(len(rows), dtype=bool)  # frame -> only elementwise ops inside
    own = rows.segment == np.arange(len(rows))  # the module's ops, not their insides
    bad = inside & own & ~(work[rows.name] | view[rows.name])
    plain[rows.module[bad]] = False
    frames &= plain
    inside &= frames[np.maximum(rows.module, 0)]
    sequence = rows.trace.ops["sequence"].to_numpy()
    forward = np.unique(sequence[inside & (sequence >= 0)])
    node = rows.mask_prefix("autograd::engine::evaluate_function:") & rows.main
    backward = node & np.isin(sequence, forward) & (sequence >= 0)
    classes = sorted({module_class(str(n)) for n in rows.name_of(np.flatnonzero(frames))})
    return Normalization(native, frames, inside, backward, classes)


# --------------------------------------------------------------------------------------------
# casts


def _dtype(name: object) -> str:
    return _INPUT_TYPES.get(str(name), "")


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
    first = _per_category(rows, "input_types", lambda a: _dtype(a[0]) if a else "")
    second = _per_category(rows, "input_types", lambda a: _dtype(a[1]) if len(a) > 1 else "")
    target = _per_category(
        rows, "concrete_inputs", lambda a: _SCALAR_TYPES.get(str(a[1]), "") if len(a) > 1 else ""
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


def _format(dims: object, strides: object) -> str:
    """``contiguous``, ``channels_last`` (or ``_3d``), or "" for a 4-D/5-D tensor's strides."""
    if not (isinstance(dims, list) and isinstance(strides, list)) or len(dims) not in (4, 5):
        return ""
    if len(strides) != len(dims) or not all(isinstance(v, int) for v in dims + strides):
        return ""

    def expect(order: list[int]) -> list[int]:
        out = [0] * len(dims)
        step = 1
        for axis in reversed(order):
            out[axis] = step
            step *= dims[axis]
        return out

    def same(want: list[int]) -> bool:
        return all(d == 1 or s == w for d, s, w in zip(dims, strides, want, strict=True))

    plain = list(range(len(dims)))
    last = [0, *range(2, len(dims)), 1]
    is_plain, is_last = same(expect(plain)), same(expect(last))
    if is_plain and not is_last:
        return "contiguous"
    if is_last and not is_plain:
        return "channels_last" if len(dims) == 4 else "channels_last_3d"
    return ""


def _change(name: str, dims: tuple, strides: tuple, concrete: tuple) -> bool:
    """Whether an op call changes the memory format of its (first) input."""
    first = _format(dims[0] if dims else None, strides[0] if strides else None)
    if name == "aten::copy_":
        second = _format(
            dims[1] if len(dims) > 1 else None, strides[1] if len(strides) > 1 else None
        )
        return bool(first and second and first != second)
    at = 6 if name == "aten::_to_copy" else 1
    code = str(concrete[at]) if len(concrete) > at else ""
    target = _FORMATS.get(code or ("0" if name == "aten::contiguous" else "1"), "")
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
            _json_list(cats[i][k]) if k >= 0 else () for i, k in enumerate((key.d, key.s, key.c))
        ]
        verdict[tuple(key)] = _change(str(names[key.n]), *args)
    hit = np.array([verdict[tuple(k)] for k in keys.itertuples(index=False)], dtype=bool)
    mask = np.zeros(len(rows), dtype=bool)
    mask[candidates[hit]] = True
    return rows.outermost(mask)
