"""A run's rows in every table of the dataset, copied from the JSON report of its analysis.

Nothing is computed here that the analysis owns: the rows are the ``analyze --format
json`` document (:func:`dnnlens.report.json_report.to_json_dict`) under the dataset's
column names (:mod:`dnnlens.fleet.schema`), with NULL where the document has ``null``
(NaN and infinities included). What the document does not have comes from the run's files
(sizes, hashes, modification times), from the log's records (the memory descriptors split
per argument, :func:`dnnlens.report.tables_export.md_columns`) and two things only a fleet
needs: the ``workload`` a run belongs to (its hash and its readable name, both of the
distinct primitives) and its findings counted by severity. The
report's record ids are left out: they number the distinct lines of one parse, and a file
scanned in byte ranges numbers them in another order (``example``, the first line of each,
is the same).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from dnnlens.analysis.analysis import Analysis
from dnnlens.fleet import schema
from dnnlens.model import LineRecord
from dnnlens.report.json_report import to_json_dict
from dnnlens.report.tables_export import md_columns
from dnnlens.textsafe import path_text


@dataclass(frozen=True)
class RunFile:
    """One input file of a run, as it was when it was hashed."""

    path: str
    size_bytes: int
    sha256: str
    modified_at: float  # seconds since the epoch


@dataclass(frozen=True)
class RunIdentity:
    """What names a run in the dataset: its name, content hash and files."""

    name: str
    content_hash: str
    files: tuple[RunFile, ...]


#: ``primitives`` columns taken from a report's ``primitives`` entry: column -> key.
_PRIMITIVE_KEYS = {
    "kind": "kind", "impl": "impl", "prop_kind": "prop_kind",
    "problem": "problem", "compute_dtype": "dtype", "exec_count": "count",
    "total_time_ms": "time_ms", "steady_exec_count": "steady_count",
    "median_ms": "median_ms", "p95_ms": "p95_ms", "run_ms": "run_ms",
    "ms_per_iteration": "iter_ms", "flops_per_exec": "flops", "bytes_per_exec": "bytes",
    "flop_per_byte": "intensity", "gflop_per_s": "gflops", "gb_per_s": "gbs",
    "peak_gflop_per_s": "peak_gflops", "roof_gflop_per_s": "roof_gflops",
    "roof_ms": "roof_ms", "bound": "bound", "efficiency": "efficiency",
    "best_gflop_per_s": "best_gflops", "best_efficiency": "best_efficiency",
    "example": "example",
}  # fmt: skip

#: ``runs`` columns taken from the report's ``summary``.
_SUMMARY_KEYS = (
    "exec_count", "untimed_exec_count", "total_time_ms", "graph_exec_count", "graph_time_ms",
    "create_count", "create_time_ms", "iterations", "steady_iterations", "warmup_iterations",
    "typical_iteration_ms", "reorder_ms_per_iteration", "reorder_share_of_iteration",
)  # fmt: skip

#: ``inputs`` columns taken from the report's ``inputs`` entry of the file.
_INPUT_KEYS = (
    "lines", "parsed_lines", "foreign_lines", "malformed_lines", "onednn_version", "commit",
    "runtime", "isa", "gpu_runtime", "threads", "header_count", "prefixed_lines", "gzip",
    "invalid_utf8_bytes", "nul_lines", "read_error",
)  # fmt: skip

_ITERATION_KEYS = (
    "iteration", "input", "exec_count", "time_ms", "reorder_ms", "regular", "warmup",
    "steady", "first_line", "last_line",
)  # fmt: skip


def workload_of(primitives: list[dict[str, Any]]) -> str:
    """A short hash of the distinct primitives (kind, prop_kind, problem) a run executed:
    runs of one model and shape share it, whatever their timing or layout choices."""
    keys = sorted("\t".join(key) for key in _workload_keys(primitives))
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def _workload_keys(primitives: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """The distinct (kind, prop_kind, problem) of a run: what its workload is made of."""
    return {(str(p["kind"]), str(p["prop_kind"]), str(p["problem"])) for p in primitives}


#: Kinds and prop kinds a workload's name lists; more are shown as ``…``.
NAME_KINDS = 3
#: Characters of one kind or prop kind in a workload's name (a log's text).
NAME_FIELD_CHARS = 40
_MINIBATCH = re.compile(r"mb(\d+)")


def workload_name(primitives: list[dict[str, Any]]) -> str:
    """A readable name of the workload :func:`workload_of` hashes, from the same keys, so
    runs of one hash share it: the distinct primitives counted by kind (most first), the
    prop kinds, and the minibatch most of the problems that print one share.

    ``53 convolution, 1 inner_product, 1 pooling · forward_inference · mb32``.
    """
    keys = _workload_keys(primitives)
    if not keys:
        return "no primitives"
    kinds = _most_first(Counter(k for k, _, _ in keys), with_counts=True)
    props = _most_first(Counter(pk for _, pk, _ in keys if pk not in ("", "undef")))
    batch = _minibatch([problem for _, _, problem in keys])
    return " · ".join(part for part in (kinds, props, batch) if part)


def _most_first(counts: Counter[str], with_counts: bool = False) -> str:
    """The :data:`NAME_KINDS` most counted names (ties in name order), ``…`` for more."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [
        f"{n} {name[:NAME_FIELD_CHARS]}" if with_counts else name[:NAME_FIELD_CHARS]
        for name, n in ranked[:NAME_KINDS]
    ]
    return ", ".join(shown + (["…"] if len(ranked) > NAME_KINDS else []))


def _minibatch(problems: list[str]) -> str:
    """``mb<N>`` when more than half the problems that start ``mb<N>`` share N, else ""."""
    batches = Counter(m.group(1) for p in problems if (m := _MINIBATCH.match(p)))
    if not batches:
        return ""
    batch, n = min(batches.items(), key=lambda kv: (-kv[1], int(kv[0])))
    return f"mb{batch}" if 2 * n > sum(batches.values()) else ""


def run_tables(analysis: Analysis, run: RunIdentity) -> dict[str, pa.Table]:
    """Every table's rows of one analysed run (its findings already set by the rules)."""
    doc = to_json_dict(analysis)
    records = analysis.log.records
    rows = {
        "inputs": _input_rows(doc, run),
        "primitives": [
            _primitive_row(p, records[p["record"]], analysis.typical.share(p["iter_ms"]), run)
            for p in doc["primitives"]
        ],
        "findings": [_finding_row(i, f, run) for i, f in enumerate(doc["findings"])],
        "iterations": [
            {"run": run.name, **{k: p[k] for k in _ITERATION_KEYS}}
            for p in doc["iterations"]["passes"]
        ],
        "runs": [_run_row(doc, run)],
    }
    return {table: schema.make_table(table, rows[table]) for table in schema.TABLES}


def _run_row(doc: dict[str, Any], run: RunIdentity) -> dict[str, Any]:
    summary = doc["summary"]
    header = next((i for i in doc["inputs"] if i["header_count"]), None)
    severities = Counter(f["severity"] for f in doc["findings"])
    window = doc.get("window")
    newest = max((f.modified_at for f in run.files), default=None)
    return {
        "run": run.name,
        "content_hash": run.content_hash,
        "workload": workload_of(doc["primitives"]),
        "workload_name": workload_name(doc["primitives"]),
        "model": (summary.get("model") or {}).get("name"),
        "schema_version": schema.DATASET_SCHEMA_VERSION,
        "dnnlens_version": doc["dnnlens_version"],
        "modified_at": datetime.fromtimestamp(newest, UTC) if newest is not None else None,
        "input_count": len(run.files),
        "inputs": [path_text(f.path) for f in run.files],
        "input_bytes": sum(f.size_bytes for f in run.files),
        **{k: header[k] if header else None for k in schema.HEADER_COLUMNS},
        **{k: sum(i[k] for i in doc["inputs"]) for k in _LINE_KEYS},
        **{k: summary[k] for k in _SUMMARY_KEYS},
        "finding_count": len(doc["findings"]),
        "error_findings": severities["error"],
        "warning_findings": severities["warning"],
        "info_findings": severities["info"],
        "window_events_total": window["events_total"] if window else None,
        "window_events_analysed": window["events_analysed"] if window else None,
        "labels": None,  # the build's, set when the run is published
        "timing_confidence": doc["timing_confidence"]["level"],
        "timing_confidence_reason": doc["timing_confidence"]["reason"],
    }


_LINE_KEYS = ("lines", "parsed_lines", "foreign_lines", "malformed_lines")


def _input_rows(doc: dict[str, Any], run: RunIdentity) -> list[dict[str, Any]]:
    """One row per file; a file the scanner did not read (a profiler trace) has NULL line
    accounting."""
    scanned = {i["path"]: i for i in doc["inputs"]}
    rows = []
    for position, f in enumerate(run.files):
        entry = scanned.get(path_text(f.path))
        rows.append(
            {
                "run": run.name,
                "position": position,
                "path": path_text(f.path),
                "size_bytes": f.size_bytes,
                "sha256": f.sha256,
                **{k: entry[k] if entry else None for k in _INPUT_KEYS},
            }
        )
    return rows


def _primitive_row(
    p: dict[str, Any], record: LineRecord, share: float, run: RunIdentity
) -> dict[str, Any]:
    return {
        "run": run.name,
        "mds": record.mds,
        "share_of_iteration": share,
        **{column: p[key] for column, key in _PRIMITIVE_KEYS.items()},
        **md_columns(record.parsed_mds, schema.PRIMITIVE_MD_ARGS),
    }


def _finding_row(position: int, f: dict[str, Any], run: RunIdentity) -> dict[str, Any]:
    return {
        "run": run.name,
        "position": position,
        **{k: f[k] for k in ("rule", "code", "severity", "title", "message", "fix")},
        "impact_ms_per_iteration": f["impact_ms_per_iteration"],
        "impact_ms_per_basis": f.get("impact_ms_per_basis"),
        "share_of_iteration": f["share_of_iteration"],
        "saving_ms_per_iteration": f.get("saving_ms_per_iteration"),
        "saving_ms_per_basis": f.get("saving_ms_per_basis"),
        "saving_basis": f.get("saving_basis", "unknown"),
        "evidence": [{"path": e["path"], "line": e["line"]} for e in f["evidence"]],
        "data_json": json.dumps(f["data"], sort_keys=True),
    }
