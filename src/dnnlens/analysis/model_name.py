"""The model a run ran, where its inputs name it: a fact of the run, found once here.

A log of oneDNN's lines names no model; some inputs beside them do. The sources, in the
order they win when several name one (the program's own objects before a label):

1. ``trace``: a PyTorch profiler trace recorded ``with_modules=True`` holds a
   ``python_function`` frame per module call, named ``nn.Module: <Class>_<n>``. The
   model is the class of the outermost module frames (those inside no other module
   frame) with the most time: ``nn.Module: ResNet_0`` -> ``ResNet``. A loss module
   called beside the model (``CrossEntropyLoss_0``) takes less time and loses.
2. ``table``: a ``key_averages().table()`` of such a run lists the same frames as rows;
   the ``nn.Module:`` row with the largest CPU total is the outermost (a module's total
   holds its children's).
3. ``benchdnn``: a benchdnn problem line's name ``n<model>:<layer>``
   (:mod:`dnnlens.parsers.model_lines`), the first one of the first input that has one.

Nothing else is read: no file name, no script name, no guess. A name is cut to
:data:`~dnnlens.parsers.model_lines.MAX_MODEL_CHARS` characters when it is read; it is a
log's text, escaped wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from dnnlens.analysis.columns import category_mask
from dnnlens.parsers.model_lines import bounded_name

if TYPE_CHECKING:
    from dnnlens.model import ParsedLog
    from dnnlens.parsers.torch_table import ProfilerTable
    from dnnlens.parsers.torch_trace import TraceData

#: The name prefix of a module frame (``analysis.framework.names.MODULE_PREFIX``, not
#: imported from there: a log without a trace imports no framework view).
MODULE_PREFIX = "nn.Module: "

ModelSource = Literal["trace", "table", "benchdnn"]

__all__ = ["ModelName", "ModelSource", "model_name", "table_model", "trace_model"]


@dataclass(frozen=True)
class ModelName:
    """A model's name and the input that told it."""

    name: str
    source: ModelSource
    path: str


def model_name(log: ParsedLog) -> ModelName | None:
    """The model the inputs name (the sources in the module docstring's order), or None."""
    framework = log.framework
    if framework is not None:
        for trace in framework.traces:
            name = trace_model(trace)
            if name is not None:
                return ModelName(name, "trace", trace.path)
        for table in framework.tables:
            name = table_model(table)
            if name is not None:
                return ModelName(name, "table", table.source)
    for scan in log.scans:
        if scan.model_line is not None:
            return ModelName(scan.model_line[1], "benchdnn", scan.path)
    return None


def trace_model(trace: TraceData) -> str | None:
    """The class of the outermost module frames with the most time, or None without any."""
    from dnnlens.analysis.framework.names import PYTHON_CATEGORY, module_class
    from dnnlens.analysis.framework.rows import propagate

    ops = trace.ops
    if not len(ops) or not {"name", "cat", "parent", "depth", "dur_us"} <= set(ops.columns):
        return None
    seed = category_mask(ops["name"], lambda n: n.startswith(MODULE_PREFIX))
    seed &= category_mask(ops["cat"], lambda c: c == PYTHON_CATEGORY)
    if not seed.any():
        return None
    outer = propagate(ops["parent"].to_numpy(), ops["depth"].to_numpy(), seed, outermost=True)
    top = np.flatnonzero(outer == np.arange(len(ops)))
    time = ops["dur_us"].to_numpy()[top]
    classes = [module_class(str(n)) for n in ops["name"].to_numpy()[top]]
    return _most_time(classes, time.tolist())


def table_model(table: ProfilerTable) -> str | None:
    """The class of the ``nn.Module:`` row with the largest CPU total, or None."""
    from dnnlens.analysis.framework.names import module_class

    names = table.columns.get("name")
    totals = table.columns.get("cpu_total_ms")
    if names is None or totals is None:
        return None
    rows = [
        (float(t), str(n))
        for n, t in zip(names, totals, strict=True)
        if str(n).startswith(MODULE_PREFIX) and np.isfinite(t)
    ]
    if not rows:
        return None
    return bounded_name(module_class(max(rows)[1]))


def _most_time(classes: list[str], times: list[float]) -> str | None:
    """The class with the most summed time (the first in name order on a tie)."""
    summed: dict[str, float] = {}
    for cls, t in zip(classes, times, strict=True):
        summed[cls] = summed.get(cls, 0.0) + (t if np.isfinite(t) else 0.0)
    best = min(summed, key=lambda c: (-summed[c], c), default=None)
    return bounded_name(best) if best is not None else None
