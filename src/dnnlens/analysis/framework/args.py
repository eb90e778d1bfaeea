"""What a trace event's arguments say: dtypes, memory formats, shapes, scalar arguments.

The profiler writes an op's arguments (``record_shapes=True``) as ``Input Dims``, ``Input
type``, ``Input Strides`` and ``Concrete Inputs``; the trace reader keeps each distinct text
once as a category (:mod:`dnnlens.parsers.torch_trace`). These helpers read them per
distinct text and spread the answer to the rows, so a million ops cost a few hundred
decodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from dnnlens.analysis.framework.rows import OpRows

#: ScalarType codes as printed in ``Concrete Inputs`` and the names of ``Input type``.
SCALAR_TYPES = {
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
INPUT_TYPES = {
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
FORMATS = {"0": "contiguous", "1": "preserve", "2": "channels_last", "3": "channels_last_3d"}


def column_codes(rows: OpRows, column: str) -> tuple[np.ndarray, list[str]]:
    """Per row the category code of ``column`` (-1 for none), and the category texts."""
    cat = rows.trace.ops[column]
    return cat.cat.codes.to_numpy(), [str(c) for c in cat.cat.categories]


@lru_cache(maxsize=4096)
def json_list(text: str) -> tuple:
    """A JSON list argument as a tuple (``()`` for none or anything else)."""
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(value) if isinstance(value, list) else ()


def per_category(rows: OpRows, column: str, fn: Callable[[tuple], Any]) -> np.ndarray:
    """``fn`` applied to each distinct text of ``column`` (a JSON list), spread to rows."""
    codes, texts = column_codes(rows, column)
    values = np.array([fn(json_list(t)) for t in texts] + [fn(())], dtype=object)
    return values[codes]


def dtype(name: object) -> str:
    """``float32``, ``bfloat16`` ... for an ``Input type`` name, "" for anything else."""
    return INPUT_TYPES.get(str(name), "")


def memory_format(dims: object, strides: object) -> str:
    """``contiguous``, ``channels_last`` (or ``_3d``), or "" for a 4-D/5-D tensor's strides
    (a tensor that is both, with size-1 dimensions, or neither gives "")."""
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


def int_list(text: object) -> list[int] | None:
    """``"[1, 1]"`` (an int-list argument of ``Concrete Inputs``) as a list, else None."""
    if not isinstance(text, str) or not text.startswith("["):
        return None
    value = json_list(text)
    return list(value) if value and all(isinstance(v, int) for v in value) else None


def flag(text: object) -> bool | None:
    """``"True"``/``"False"`` (a bool argument of ``Concrete Inputs``), else None."""
    return {"True": True, "False": False}.get(str(text)) if isinstance(text, str) else None


def flags(text: object) -> list[bool] | None:
    """``"[True, False, False]"`` (a bool-list argument, ``output_mask``), else None."""
    if not isinstance(text, str) or not (text.startswith("[") and text.endswith("]")):
        return None
    parts = [flag(p.strip()) for p in text[1:-1].split(",")]
    return None if not parts or any(p is None for p in parts) else [bool(p) for p in parts]
