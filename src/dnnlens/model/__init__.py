"""The event and diagnostic tables: one place defines every column.

``events`` has one row per event line (primitive create/exec, graph partition
compile/exec), in input order. Repeated strings are categoricals (1M events fit in tens of
MiB); times are float64 milliseconds, ``NaN`` where the line printed none.

=============== ==========================================================================
column          meaning
=============== ==========================================================================
input           the input path the line came from
line            1-based physical line number in that input
record          id of the distinct line (without time/timestamp) in ``ParsedLog.records``
family          release family of the line (``records.FAMILIES``)
operation       exec, create, create_nested, compile
cache           cache state of a create line (cache_miss, cache_hit, from_cache_blob, ...)
component       primitive, graph, ukernel or empty (before v3.3)
engine          cpu, gpu, gpu:0, cpu2gpu ...
kind            primitive kind (convolution, reorder, ...), ``graph_partition`` for graph
impl            implementation name as printed (jit:avx2, brg_conv_fwd:avx2_vnni_2, ...)
impl_family     implementation name up to its ISA (jit, brg_conv_fwd, gemm, ref, ...)
isa             ISA part of the implementation name (avx2, avx512_core, uni, any, ...)
prop_kind       forward_training, forward_inference, backward_data, ..., undef
direction       forward, backward or none (from prop_kind)
mds             memory descriptors as printed
attrs           attributes as printed
aux             auxiliary field as printed (alg:..., flags:...)
problem         problem descriptor as printed (mb4_ic3oc32_..., 128x256:256x512, ...)
extra           fields after the problem that this version of dnnlens does not know
time_ms         the line's time field (execution or creation time), ms
timestamp_ms    the line's timestamp (ms since epoch on Linux), NaN without one
=============== ==========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

# The parsed forms a record carries (LineRecord.parsed_*) and the scan of an input, named
# here for the layers above, which read them and never import a parser.
from dnnlens.parsers.common import DATA_TYPES
from dnnlens.parsers.isa import split_impl
from dnnlens.parsers.records import LineRecord
from dnnlens.parsers.scanner import InputScan
from dnnlens.parsers.torch_table import ProfilerTable

if TYPE_CHECKING:
    import pandas as pd

    from dnnlens.parsers.attrs import Attrs, PostOp
    from dnnlens.parsers.memdesc import MdList, MemDesc
    from dnnlens.parsers.problem import Problem
    from dnnlens.parsers.torch_trace import FrameworkData

#: The types of the parsed descriptors, imported on first use: reading parses none, and
#: their modules would add a few ms to the start of every read.
_PARSED_TYPES = {
    "Attrs": "dnnlens.parsers.attrs",
    "PostOp": "dnnlens.parsers.attrs",
    "MdList": "dnnlens.parsers.memdesc",
    "MemDesc": "dnnlens.parsers.memdesc",
    "Problem": "dnnlens.parsers.problem",
}


def __getattr__(name: str) -> object:
    module = _PARSED_TYPES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "DATA_TYPES",
    "Attrs",
    "EventWindow",
    "InputScan",
    "LineRecord",
    "MdList",
    "MemDesc",
    "ParsedLog",
    "PostOp",
    "Problem",
    "ProfilerTable",
    "build_diagnostics",
    "build_events",
    "direction_of",
]

#: Record attributes copied into string (categorical) columns.
RECORD_COLUMNS = (
    "family",
    "operation",
    "cache",
    "component",
    "engine",
    "kind",
    "impl",
    "prop_kind",
    "mds",
    "attrs",
    "aux",
    "problem",
    "extra",
)
DERIVED_COLUMNS = ("impl_family", "isa", "direction")
EVENT_COLUMNS = (
    "input",
    "line",
    "record",
    *RECORD_COLUMNS,
    *DERIVED_COLUMNS,
    "time_ms",
    "timestamp_ms",
)
DIAGNOSTIC_COLUMNS = ("input", "line", "record", "operation", "component", "text", "location")


def direction_of(prop_kind: str) -> str:
    """forward / backward / none, from a prop_kind string."""
    if prop_kind.startswith("forward"):
        return "forward"
    if prop_kind.startswith("backward"):
        return "backward"
    return "none"


def _record_values(records: list[LineRecord], column: str) -> list[str]:
    if column == "impl_family":
        return [split_impl(r.impl)[0] for r in records]
    if column == "isa":
        return [split_impl(r.impl)[1] for r in records]
    if column == "direction":
        return [direction_of(r.prop_kind) for r in records]
    return [getattr(r, column) for r in records]


def _categorical(values: list[str], record_ids: np.ndarray) -> pd.Categorical:
    import pandas as pd

    if not values:
        return pd.Categorical.from_codes(np.zeros(0, dtype=np.int32), categories=[])
    categories, codes = np.unique(np.asarray(values, dtype=object), return_inverse=True)
    # codes index the unique values by construction: no range check over every event
    return pd.Categorical.from_codes(
        codes.astype(np.int32)[record_ids], categories=categories, validate=False
    )


def _concat(scans: list[InputScan], name: str, dtype: type) -> np.ndarray:
    parts = [np.frombuffer(getattr(s, name), dtype=dtype) for s in scans if len(getattr(s, name))]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _timestamps(scans: list[InputScan]) -> np.ndarray:
    parts = []
    for s in scans:
        if len(s.event_timestamp) == len(s.event_line):
            parts.append(np.frombuffer(s.event_timestamp, dtype=np.float64))
        else:  # no line of this input had a timestamp
            parts.append(np.full(len(s.event_line), np.nan))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)


def _input_column(scans: list[InputScan], name: str) -> pd.Categorical:
    import pandas as pd

    sizes = [len(getattr(s, name)) for s in scans]
    codes = np.repeat(np.arange(len(scans), dtype=np.int32), sizes)
    return pd.Categorical.from_codes(codes, categories=pd.Index([s.path for s in scans]))


def build_events(scans: list[InputScan], records: list[LineRecord]) -> pd.DataFrame:
    """The event table of all inputs, in input order then line order."""
    import pandas as pd

    rec = _concat(scans, "event_record", np.int64)
    data: dict[str, object] = {
        "input": _input_column(scans, "event_record") if scans else pd.Categorical([]),
        "line": _concat(scans, "event_line", np.int64),
        "record": rec.astype(np.int32),
    }
    for column in (*RECORD_COLUMNS, *DERIVED_COLUMNS):
        data[column] = _categorical(_record_values(records, column), rec)
    data["time_ms"] = _concat(scans, "event_time", np.float64)
    data["timestamp_ms"] = _timestamps(scans)
    return pd.DataFrame(data, columns=list(EVENT_COLUMNS))


def build_diagnostics(scans: list[InputScan], records: list[LineRecord]) -> pd.DataFrame:
    """The diagnostics table: create:check, create:dispatch, exec:check, error, warning."""
    import pandas as pd

    rec = _concat(scans, "diag_record", np.int64)
    data: dict[str, object] = {
        "input": _input_column(scans, "diag_record") if scans else pd.Categorical([]),
        "line": _concat(scans, "diag_line", np.int64),
        "record": rec.astype(np.int32),
    }
    for column in ("operation", "component", "text", "location"):
        data[column] = _categorical(_record_values(records, column), rec)
    return pd.DataFrame(data, columns=list(DIAGNOSTIC_COLUMNS))


@dataclass
class EventWindow:
    """What :attr:`ParsedLog.events` holds when reading kept only the last events.

    Reading keeps every event unless the inputs are large (see ``dnnlens.reading``); then it
    folds every event into per-record statistics and keeps the last ``size`` raw events.
    """

    #: the most events kept (``--window``)
    size: int
    #: events read, in all inputs
    events_total: int
    #: events in :attr:`ParsedLog.events`
    events_kept: int
    #: per input path: the line of the last event that left the window (absent: none left)
    dropped_last_line: dict[str, int] = field(default_factory=dict)
    #: one line per profiler table found inside a log and left out of
    #: :attr:`ParsedLog.framework`, because events of its profiled region left the window
    notes: list[str] = field(default_factory=list)


@dataclass
class ParsedLog:
    """The parsed form of a set of inputs: per-input scans, distinct records, tables.

    ``scans`` count every line of every input (``parsed + foreign + malformed == lines``).
    When the inputs were too large to keep every event (``window`` is set), ``events`` holds
    the last ``window.size`` of them and the figures over all events are carried beside it:

    * ``record_stats``: the per-record statistics of every event read (the
      :data:`~dnnlens.model.stats.STATS_COLUMNS` frame); None means "compute them from
      ``events``", which then holds every event;
    * ``diagnostic_counts``: diagnostic lines by operation over every line read
      (``diagnostics`` then keeps the first ones only); None means "count ``diagnostics``";
    * ``window``: how many events were read and kept, and the last line that left it;
    * ``framework``: the profiler tables found inside the logs whose profiled region is still
      in the window (``window.notes`` names the others); linking them is the analysis's job.

    A live snapshot (``dnnlens.reading.read(on_snapshot=...)``) is a ParsedLog of what was
    read so far: exact ``scans``, ``record_stats`` and ``diagnostic_counts``, the last few
    events, no diagnostics table.
    """

    scans: list[InputScan]
    records: list[LineRecord]
    reasons: list[str]
    events: pd.DataFrame
    diagnostics: pd.DataFrame
    input_errors: list[str]
    #: PyTorch profiler traces and key_averages tables found among the inputs
    framework: FrameworkData | None = None
    #: what expanding the inputs left out, one line each (files of a directory that hold no run)
    input_notes: list[str] = field(default_factory=list)
    #: the ``--iteration-marker`` regex looked for while reading (its matches:
    #: ``InputScan.marker_line``), None when none was
    marker: str | None = None
    record_stats: pd.DataFrame | None = None
    diagnostic_counts: dict[str, int] | None = None
    window: EventWindow | None = None

    def event_records(self) -> np.ndarray:
        """The ids of the distinct event lines this log's events ran (sorted), over every
        event read: ``records`` is one table for all inputs read together, so a run split
        from them (:func:`dnnlens.analysis.runs.split_log`) holds other runs' lines too, and
        what is said about *this* run's lines must start from here."""
        if self.record_stats is not None and len(self.record_stats):
            return np.sort(self.record_stats.index.to_numpy(dtype=np.int64))
        if not len(self.events):
            return np.zeros(0, dtype=np.int64)
        return np.unique(self.events["record"].to_numpy(dtype=np.int64))
