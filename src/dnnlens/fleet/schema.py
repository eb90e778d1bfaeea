"""The tables of a fleet dataset: every column, its type and what it holds.

One Parquet dataset per table under ``DATASET/<table>/``, partitioned by run: one file per
run, ``run-<run>.parquet``, with ``run`` as a column of the file (a Hive directory
``run=<name>`` would make pandas, pyarrow and Spark guess the type of a run named ``2024``
from its directory name). Every file of a table has the schema given here, so any reader
sees one table. A value that does not apply or was not printed is NULL; units are in the
column names (``_ms``, ``_bytes``, ``_per_s``); passes are numbered per run from 0.

``DATASET_SCHEMA_VERSION`` changes its major number when a column changes meaning or
goes; columns may be added under the same major number. 2.0: a finding's
``share_of_iteration`` is its one share, of the report's basis (1.0 stored a oneDNN
finding's share of oneDNN's typical iteration, also in a report on a profiler step).
2.1: a finding's saving (``saving_ms_per_iteration``, ``saving_ms_per_basis``,
``saving_basis``), and findings placed in the report's order by it (``position``); then
``runs.labels`` (:data:`ADDED_COLUMNS`: a file written before one reads it as NULL, so a
build goes on adding to a 2.1 dataset); then ``runs.timing_confidence`` and its reason
(``fleet diff`` refuses to gate on a run whose times are not to be trusted), ``runs.model``
and ``runs.workload_name``. The ``failures`` table is not a table of runs: one file per
build that had failures.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

DATASET_SCHEMA_VERSION = "2.1"


@dataclass(frozen=True)
class Column:
    """One column: name, Arrow type, and what it holds (the docs list these)."""

    name: str
    type: pa.DataType
    doc: str


_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_RUN = Column("run", _S, "the run's name (unique in the dataset)")

#: The run's header facts, from its first input that printed a header.
HEADER_COLUMNS = ("onednn_version", "commit", "runtime", "isa", "gpu_runtime", "threads")

RUNS = (
    _RUN,
    Column("content_hash", _S, "SHA-256 over the SHA-256 of each input file, in input order"),
    Column("workload", _S, "hash of the distinct primitives (kind, prop_kind, problem) run"),
    Column(
        "workload_name",
        _S,
        "the workload read: distinct primitives by kind, prop kinds, the minibatch most "
        "share; the same for every run of one workload hash",
    ),
    Column("model", _S, "the model an input names (analyze's summary.model); NULL: none"),
    Column("schema_version", _S, "the dataset schema version the row was written with"),
    Column("dnnlens_version", _S, "the dnnlens version that analysed the run"),
    Column("modified_at", pa.timestamp("us", tz="UTC"), "newest modification time of its inputs"),
    Column("input_count", _I, "number of input files (logs, ranks, profiler traces)"),
    Column("inputs", pa.list_(_S), "the input files, in the order they were analysed"),
    Column("input_bytes", _I, "bytes of all input files"),
    Column("onednn_version", _S, "oneDNN version of the first input with a header"),
    Column("commit", _S, "oneDNN commit of that header"),
    Column("runtime", _S, "CPU runtime of that header (OpenMP, TBB ...)"),
    Column("isa", _S, "ISA line of that header"),
    Column("gpu_runtime", _S, "GPU runtime of that header"),
    Column("threads", _I, "threads (nthr) of that header"),
    Column("lines", _I, "lines of all inputs"),
    Column("parsed_lines", _I, "oneDNN verbose lines parsed"),
    Column("foreign_lines", _I, "lines that are not oneDNN verbose output"),
    Column("malformed_lines", _I, "verbose lines that could not be read"),
    Column("exec_count", _I, "primitive executions (all events)"),
    Column("untimed_exec_count", _I, "executions that printed no time"),
    Column("total_time_ms", _F, "summed execution time of all events"),
    Column("graph_exec_count", _I, "graph partition executions"),
    Column("graph_time_ms", _F, "summed graph partition execution time"),
    Column("create_count", _I, "primitive creations"),
    Column("create_time_ms", _F, "summed creation time"),
    Column("iterations", _I, "passes found in the analysed window"),
    Column("steady_iterations", _I, "steady passes (the typical iteration's divisor)"),
    Column("warmup_iterations", _I, "warm-up passes left out of the steady state"),
    Column("typical_iteration_ms", _F, "the typical steady iteration"),
    Column("reorder_ms_per_iteration", _F, "the reorders' part of the typical iteration"),
    Column("reorder_share_of_iteration", _F, "that part over the typical iteration (0-1)"),
    Column("finding_count", _I, "findings of the rules"),
    Column("error_findings", _I, "findings of severity error"),
    Column("warning_findings", _I, "findings of severity warning"),
    Column("info_findings", _I, "findings of severity info"),
    Column("window_events_total", _I, "events read when only a window was analysed, else NULL"),
    Column("window_events_analysed", _I, "events in that window, else NULL"),
    Column(
        "labels",
        _S,
        "the build's --label key=value pairs (CI job, commit, date), a JSON object; NULL: none",
    ),
    Column(
        "timing_confidence",
        _S,
        "whether its times can be trusted: high, or low (slowed as a whole); NULL: older runs",
    ),
    Column("timing_confidence_reason", _S, "why, in one sentence (analyze's timing_confidence)"),
)

INPUTS = (
    _RUN,
    Column("position", _I, "0-based order of the input in the run"),
    Column("path", _S, "the input file"),
    Column("size_bytes", _I, "its size"),
    Column("sha256", _S, "SHA-256 of its bytes"),
    Column("lines", _I, "its lines"),
    Column("parsed_lines", _I, "oneDNN verbose lines parsed"),
    Column("foreign_lines", _I, "lines that are not oneDNN verbose output"),
    Column("malformed_lines", _I, "verbose lines that could not be read"),
    Column("onednn_version", _S, "oneDNN version of its header"),
    Column("commit", _S, "oneDNN commit of its header"),
    Column("runtime", _S, "CPU runtime of its header"),
    Column("isa", _S, "ISA line of its header"),
    Column("gpu_runtime", _S, "GPU runtime of its header"),
    Column("threads", _I, "threads of its header"),
    Column("header_count", _I, "headers it printed (more than one: several processes)"),
    Column("prefixed_lines", _I, "verbose lines after a prefix ([rank0]:, a timestamp ...)"),
    Column("gzip", _B, "whether it was gzip-compressed"),
    Column("invalid_utf8_bytes", _I, "bytes that were not UTF-8"),
    Column("nul_lines", _I, "lines that held NUL bytes"),
    Column("read_error", _S, "why it could not be read, else NULL"),
)

#: Memory-descriptor arguments whose data type and layout get columns in ``primitives``.
PRIMITIVE_MD_ARGS = ("src", "wei", "bia", "dst")

PRIMITIVES = (
    _RUN,
    Column("kind", _S, "primitive kind"),
    Column("impl", _S, "implementation as printed"),
    Column("prop_kind", _S, "propagation kind"),
    Column("problem", _S, "problem descriptor as printed"),
    Column("mds", _S, "memory descriptors as printed"),
    Column("compute_dtype", _S, "the data type its arithmetic runs in"),
    Column("src_dtype", _S, "data type of the src tensor (NULL: none)"),
    Column("src_layout", _S, "layout of the src tensor (tag, or format kind)"),
    Column("wei_dtype", _S, "data type of the weights"),
    Column("wei_layout", _S, "layout of the weights"),
    Column("bia_dtype", _S, "data type of the bias (NULL: no bias)"),
    Column("bia_layout", _S, "layout of the bias"),
    Column("dst_dtype", _S, "data type of the dst tensor"),
    Column("dst_layout", _S, "layout of the dst tensor"),
    Column("exec_count", _I, "executions (all events)"),
    Column("total_time_ms", _F, "their summed time"),
    Column("steady_exec_count", _I, "executions in steady passes"),
    Column("median_ms", _F, "median execution time over the steady passes"),
    Column("p95_ms", _F, "95th percentile over the steady passes"),
    Column("run_ms", _F, "the typical execution the typical iteration counts"),
    Column("ms_per_iteration", _F, "its part of the typical iteration"),
    Column("share_of_iteration", _F, "that part over the typical iteration (0-1)"),
    Column("flops_per_exec", _I, "floating-point operations per execution"),
    Column("bytes_per_exec", _I, "bytes moved per execution (cost model)"),
    Column("flop_per_byte", _F, "arithmetic intensity"),
    Column("gflop_per_s", _F, "attained GFLOP/s"),
    Column("gb_per_s", _F, "attained GB/s"),
    Column("peak_gflop_per_s", _F, "the machine's compute peak for its data type"),
    Column("roof_gflop_per_s", _F, "the roofline at its intensity"),
    Column("roof_ms", _F, "the time per execution the roofline allows"),
    Column("bound", _S, "compute or memory"),
    Column("efficiency", _F, "roof_ms over the measured time per execution"),
    Column("best_gflop_per_s", _F, "GFLOP/s of the fastest execution"),
    Column("best_efficiency", _F, "efficiency of the fastest execution"),
    Column("example", _S, "path:line of one of its lines"),
)

EVIDENCE = pa.struct([("path", _S), ("line", _I)])

FINDINGS = (
    _RUN,
    Column(
        "position",
        _I,
        "0-based place in report order (largest known saving first, then time with an "
        "unknown saving)",
    ),
    Column("rule", _S, "the rule's name"),
    Column("code", _S, "the rule's code (DL001 ...)"),
    Column("severity", _S, "info, warning or error"),
    Column("title", _S, "the rule's one-line description"),
    Column("message", _S, "the verdict"),
    Column("impact_ms_per_iteration", _F, "time per typical iteration it accounts for"),
    Column(
        "impact_ms_per_basis",
        _F,
        "that per unit of the report's basis (per step beside a profiler trace), as printed",
    ),
    Column(
        "share_of_iteration",
        _F,
        "its one share: its impact over the report's basis (the step with a profiler "
        "trace, else the typical iteration), the headline's figure (0-1)",
    ),
    Column(
        "saving_ms_per_iteration",
        _F,
        "what the fix would save, per unit of the finding's basis (NULL: unknown)",
    ),
    Column("saving_ms_per_basis", _F, "that per unit of the report's basis, as printed"),
    Column(
        "saving_basis",
        _S,
        "what the saving rests on: measured, same_shape, roofline, removal or unknown",
    ),
    Column("fix", _S, "what to do about it"),
    Column("evidence", pa.list_(EVIDENCE), "lines that show it (path, line)"),
    Column("data_json", _S, "the numbers behind the verdict, as JSON"),
)

ITERATIONS = (
    _RUN,
    Column("iteration", _I, "0-based pass number within the run"),
    Column("input", _S, "the input the pass was read from"),
    Column("exec_count", _I, "primitive executions in the pass"),
    Column("time_ms", _F, "their summed time"),
    Column("reorder_ms", _F, "the reorders' part of it"),
    Column("regular", _B, "whether the pass has the run's regular structure"),
    Column("warmup", _B, "a warm-up pass"),
    Column("steady", _B, "a steady pass (counted in the typical iteration)"),
    Column("first_line", _I, "its first line"),
    Column("last_line", _I, "its last line"),
)

#: Every table, in writing order (``runs`` last: a run is in the dataset once its row is).
TABLES: dict[str, tuple[Column, ...]] = {
    "inputs": INPUTS,
    "primitives": PRIMITIVES,
    "findings": FINDINGS,
    "iterations": ITERATIONS,
    "runs": RUNS,
}


#: Exit classes of a run that failed: what ``fleet build``'s exit code says of it.
FAILURE_CLASSES = ("input", "name", "partial", "internal", "output", "unfinished")

#: Runs that failed (one file per build that had failures, ``failures/failures-*.parquet``):
#: not a table of runs (a failed run has no rows in them).
FAILURES = (
    Column("path", _S, "the run's first input file"),
    Column("inputs", pa.list_(_S), "the run's input files"),
    Column("content_hash", _S, "the run's content hash (NULL: its files could not be read)"),
    Column("reason", _S, "why it failed, as the build said it"),
    Column(
        "exit_class",
        _S,
        "input (could not be analysed, exit 2), name (too long, exit 2), partial (stored, "
        "its readable part only, exit 2), internal (exit 3), output (exit 4), unfinished "
        "(exit 2)",
    ),
    Column("failed_at", pa.timestamp("us", tz="UTC"), "when the build found it"),
    Column("dnnlens_version", _S, "the dnnlens version of that build"),
)

_ALL = {**TABLES, "failures": FAILURES}

#: Columns added under the same major schema version: a file written before one was added
#: lacks it, and readers see NULL there.
ADDED_COLUMNS = {
    ("runs", "labels"),
    ("runs", "timing_confidence"),
    ("runs", "timing_confidence_reason"),
    ("runs", "workload_name"),
    ("runs", "model"),
}


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table`` (one of :data:`TABLES`, or ``failures``)."""
    return pa.schema([(c.name, c.type) for c in _ALL[table]])


def make_table(table: str, rows: list[dict[str, object]]) -> pa.Table:
    """``rows`` (one dict per row, every column named) as a table of ``table``'s schema.

    An empty string in a text column is NULL: the dataset has missing values, never
    empty strings standing for them.
    """
    names = {c.name for c in _ALL[table]}
    text = [c.name for c in _ALL[table] if c.type == pa.string()]
    for row in rows:
        if row.keys() != names:
            missing, extra = names - row.keys(), row.keys() - names
            raise ValueError(f"{table} row: missing {sorted(missing)}, extra {sorted(extra)}")
        for name in text:
            if row[name] == "":
                row[name] = None
    return pa.Table.from_pylist(rows, schema=arrow_schema(table))
