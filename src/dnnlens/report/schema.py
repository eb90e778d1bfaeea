"""The JSON documents as types: the contract of ``--format json``, and its JSON Schema.

Each document (``analyze``, ``diff``, ``project``) is a dataclass here; ``--format json``
serialises one with :func:`to_plain`; :func:`json_schema` derives a JSON Schema from the
same classes, and ``python -m dnnlens.report.schema`` writes them to ``docs/schema/`` (a
test fails while the shipped files are stale, and validates every sample log's output
against them). Keys named in the README are contracts: add keys freely, never rename
them. ``schema_version`` changes its major number when a key changes meaning or goes.

Rows whose keys depend on the table (the summary's breakdowns, framework ops) are typed
as ``dict[str, Any]``; everything a reader compares across views is typed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

from dnnlens.report.json_safe import json_safe

#: 2.1: findings carry their saving (``saving_*``) and are ranked by it.
SCHEMA_VERSION = "2.1"

Row = dict[str, Any]
#: A sum of exec times (a total, an iteration, a pass): ``null`` when it passes the largest
#: float although each time is finite (``1e308`` twice); a note names it
#: (docs/input-policy.md, "Impossible sizes"). The schema says so: every such field is a
#: number or null.
Sum = float | None
#: ``FindingDoc.saving_basis``: the keys of ``analysis.findings.SAVING_BASES``.
#: ``ModelDoc.source``: the keys of ``analysis.model_name.ModelSource``.
ModelSource = Literal["trace", "table", "benchdnn"]
SavingBasis = Literal["measured", "same_shape", "roofline", "removal", "unknown"]


# ---------------------------------------------------------------------------------------
# analyze


@dataclass
class MalformedLineDoc:
    """One malformed line of an input (the first 100 are listed)."""

    line: int
    reason: str
    text: str | None


@dataclass
class InputDoc:
    """One input: its line accounting and what its header said."""

    path: str
    lines: int
    parsed_lines: int
    foreign_lines: int
    malformed_lines: int
    families: list[str]
    onednn_version: str | None
    commit: str | None
    runtime: str | None
    threads: int | None
    isa: str | None
    gpu_runtime: str | None
    header_count: int
    prefixed_lines: int
    gzip: bool
    invalid_utf8_bytes: int
    nul_lines: int
    read_notes: list[str]
    read_error: str | None
    malformed: list[MalformedLineDoc]


@dataclass
class SummaryDoc:
    """Totals over all events (grep/awk reproducible) and the one typical iteration.

    ``typical_iteration_ms``: the sum over the nodes of the op graph (positions of one
    pass) of steady executions per steady pass x typical run of that node
    (:mod:`dnnlens.analysis.timing`); ``steady_iterations`` and
    ``warmup_iterations`` as :mod:`dnnlens.analysis.steady` defines them;
    ``reorder_ms_per_iteration`` / ``reorder_share_of_iteration``: the reorders' part of it
    (the share is ``null`` without a typical iteration to be a part of). ``model``: the
    model the inputs name (:mod:`dnnlens.analysis.model_name`), ``null`` when none does.
    """

    exec_count: int
    untimed_exec_count: int
    total_time_ms: Sum
    graph_exec_count: int
    graph_time_ms: Sum
    create_count: int
    create_time_ms: Sum
    by_kind: list[Row]
    by_impl: list[Row]
    by_shape: list[Row]
    by_direction: list[Row]
    by_cache: list[Row]
    top_primitives: list[Row]
    diagnostics: list[Row]
    iterations: int
    steady_iterations: int
    warmup_iterations: int
    typical_iteration_ms: Sum
    reorder_ms_per_iteration: Sum
    reorder_share_of_iteration: float | None
    model: ModelDoc | None = None


@dataclass
class ModelDoc:
    """The model an input names: ``source`` ``trace`` (the outermost ``nn.Module:`` frames
    of a profiler trace with the most time), ``table`` (the ``nn.Module:`` row of a
    profiler table with the largest CPU total) or ``benchdnn`` (a problem name
    ``n<model>:<layer>``); ``path``: that input. At most 80 characters, a log's text."""

    name: str
    source: ModelSource
    path: str


@dataclass
class EvidenceDoc:
    """One line that shows a finding."""

    path: str
    line: int


@dataclass
class FindingDoc:
    """A rule's verdict, with what it costs per typical iteration.

    ``impact_ms_per_iteration``: the steady time per iteration it accounts for (``None``
    where the finding is not about time), per unit of its ``basis``: the typical iteration
    (``iteration``), or for a framework finding the profiler trace's typical step
    (``step``). ``impact_ms_per_basis`` is that in the report's one basis
    (:class:`BasisDoc`), as the text shows it: in a report on a step, a oneDNN finding's
    impact counts once per typical iteration of the step.

    ``share_of_basis`` is the finding's one share: ``impact_ms_per_basis`` over the report's
    basis, the figure the headline, the message, the HTML and the fleet dataset show.
    ``share_of_iteration`` is the same number (the key older readers know).
    ``share_of_onednn_iteration`` is the second basis, named: a oneDNN finding's impact over
    oneDNN's typical iteration in a report on a step (``null`` in a report on an iteration,
    where the one share is that, and for framework findings). A share in ``data`` is the one
    share under ``share``; any other is named by what it is of
    (``share_of_onednn_iteration``, ``share_of_step`` of a framework finding, which is the
    one share too).

    ``saving_ms_per_iteration``: what fixing it would save, per unit of its ``basis`` like
    the impact and never more (``null``: unknown, or not about time);
    ``saving_ms_per_basis`` that in the report's basis, as the headline shows it;
    ``saving_basis`` what the figure rests on: ``measured`` (a measured pair in the inputs),
    ``same_shape`` (the same shape runs faster elsewhere in the inputs), ``roofline`` (the
    machine model bounds it), ``removal`` (the fix removes the work: its whole time) or
    ``unknown``; ``saving_note`` how it was had, in a few words. ``findings`` are in report
    order (``rules.verdict``): known savings first, largest first; then time with an unknown
    saving, by time; then findings not about time.
    """

    rule: str
    code: str
    severity: str
    title: str
    basis: str
    message: str
    evidence: list[EvidenceDoc]
    data: dict[str, Any]
    fix: str
    impact_ms_per_iteration: float | None
    share_of_iteration: float | None
    saving_ms_per_iteration: float | None
    saving_ms_per_basis: float | None
    saving_basis: SavingBasis
    saving_note: str
    impact_ms_per_basis: float | None = None
    share_of_basis: float | None = None
    share_of_onednn_iteration: float | None = None


@dataclass
class BasisDoc:
    """What every share of the report's text is a part of (one basis per report).

    ``unit`` is ``step`` with a profiler trace or table (``typical_ms`` its typical step;
    oneDNN's part of it ``onednn_ms_per_step`` = ``iterations_per_step`` x
    ``onednn_iteration_ms``, the step's linked executions over a typical iteration's,
    rounded, or one when nothing was linked: ``iterations_per_step_from``), else
    ``iteration`` (``typical_ms`` the oneDNN typical iteration).
    """

    unit: str
    typical_ms: Sum
    onednn_iteration_ms: float | None = None
    iterations_per_step: int | None = None
    onednn_ms_per_step: float | None = None
    iterations_per_step_from: str | None = None


@dataclass
class PrimitiveDoc:
    """One distinct executed primitive: totals over all events, steady timing, roofline.

    ``steady_count`` / ``median_ms`` / ``p95_ms`` / ``run_ms`` are over all its steady
    executions (``None`` when it ran in none); ``iter_ms`` is its part of the typical
    iteration: the sum, over the op-graph nodes that run this line, of executions per
    steady pass x the node's typical run. The same line can cost different amounts at
    different places in a pass, so ``iter_ms`` need not equal steady_count /
    steady_iterations x run_ms; the ``iter_ms`` of all primitives add up to
    ``summary.typical_iteration_ms``. ``gflops``, ``gbs`` and ``efficiency`` are of the
    typical run ``run_ms``, against the roof of ``machine`` (docs/cost-model.md, section 4).
    """

    kind: str
    impl: str
    problem: str
    count: int
    time_ms: float | None
    flops: int | None
    bytes: int | None
    gflops: float | None
    bound: str | None
    efficiency: float | None
    prop_kind: str
    dtype: str
    intensity: float | None
    gbs: float | None
    peak_gflops: float | None
    roof_gflops: float | None
    roof_ms: float | None
    best_gflops: float | None
    best_efficiency: float | None
    #: how the binding roof is known: profile, log header, this machine or assumed
    peak_basis: str | None
    #: why there is no efficiency although the time is known: the call beat its roof
    above_roof: str | None
    record: int
    example: str
    median_ms: float | None
    p95_ms: float | None
    run_ms: float | None
    steady_count: int
    iter_ms: Sum


@dataclass
class PassDoc:
    """One pass (iteration) of an input's exec stream."""

    iteration: int
    input: str
    exec_count: int
    time_ms: Sum
    reorder_ms: Sum
    regular: bool
    warmup: bool
    steady: bool
    first_line: int
    last_line: int
    #: the input's last pass, stopped short (neither warm-up nor steady)
    partial: bool = False


@dataclass
class IterationsDoc:
    """The passes and the steady state (:mod:`dnnlens.analysis.steady`)."""

    count: int
    warmup: int
    warmup_structural: int
    warmup_slow: int
    steady: int
    period_exec: int
    found: bool
    warmup_rule: str
    passes: list[PassDoc]
    #: inputs' last passes that stopped short (Ctrl-C, a program ended mid-pass): in
    #: ``count``, in neither ``warmup`` nor ``steady``
    partial: int = 0
    #: how the passes were cut: ``steps`` (the program's step lines), ``markers`` (the
    #: user's), ``period`` (the repeating exec sequence), ``single`` or ``none``
    method: str = "period"
    #: with ``steps``: the step line's shape, its numbers as ``#``
    step_line: str = ""


@dataclass
class WindowDoc:
    """The last events that the sequence analyses looked at, when not all of them."""

    events_total: int
    events_analysed: int
    first_line: int
    first_input: str
    note: str


@dataclass
class SkippedDoc:
    """The passes ``--skip-iterations`` left out."""

    iterations: int
    found: int
    events_dropped: int
    first_line: int | None


@dataclass
class StreamDoc:
    """The reader kept only the last events of a long or piped input."""

    window_events: int
    events_in_window: int
    events_total: int


@dataclass
class FrameworkLinkDoc:
    """How the framework ops were linked to primitives, per trace or table."""

    runs: list[Row]
    notes: list[str]


@dataclass
class RunDoc:
    """``dnnlens run``: the command, its exit code and the log kept."""

    command: list[str]
    exit_code: int
    log: str
    #: what the machine did while the program ran (``dnnlens.cli.load``): CPU seconds of
    #: the machine, the program, dnnlens and other processes, ``other_share``, the highest
    #: load average, ``busy`` and its ``note``; None when not sampled (``--no-load``, not
    #: Linux)
    load: dict[str, Any] | None = None


@dataclass
class TrainingPartDoc:
    """One part of the typical training step: ms, share of the step, executions per step."""

    part: str
    group: str
    label: str
    ms: Sum
    share: float | None
    per_step: float


@dataclass
class TrainingDoc:
    """The typical steady training step (:mod:`dnnlens.analysis.training`), absent for a
    log without a backward pass.

    ``parts`` (forward, backward_data, backward_weights, backward, the reorders by role:
    weights for forward, for backward-data, weight gradients going back, weights of an
    untold pass, activations; other) are terms of the typical iteration, so their ``ms``
    add up to ``step_ms`` = ``summary.typical_iteration_ms``. ``backward_forward_ratio``:
    backward compute over forward compute, reorders left out.
    """

    step_ms: Sum
    steady_steps: int
    forward_ms: Sum
    backward_ms: Sum
    weight_reorder_ms: Sum
    weight_reorder_share: float | None
    backward_forward_ratio: float | None
    parts: list[TrainingPartDoc]


@dataclass
class TimingConfidenceDoc:
    """Whether the run's times can be trusted (``dnnlens.analysis.timing_trust``): ``low``
    when calls at least ``slow_factor`` times slower than the machine model's roof (and
    ``min_run_ms`` or longer) hold ``min_slow_share`` of the typical iteration or more; then
    every finding's time and share is inflated, and their order is not to be trusted."""

    level: str
    reason: str
    slow_share_of_iteration: float | None
    slow_ms_per_iteration: float
    roof_ms_per_iteration: float
    worst_factor: float | None
    slow_factor: float
    min_run_ms: float
    min_slow_share: float


@dataclass
class ReportDoc:
    """The ``dnnlens analyze --format json`` document."""

    schema_version: str
    dnnlens_version: str
    inputs: list[InputDoc]
    input_errors: list[str]
    summary: SummaryDoc
    findings: list[FindingDoc]
    primitives: list[PrimitiveDoc]
    iterations: IterationsDoc
    notes: list[str] = field(default_factory=list)
    window: WindowDoc | None = None
    skipped: SkippedDoc | None = None
    stream: StreamDoc | None = None
    framework_ops: list[Row] | None = None
    framework_ops_without_onednn: list[Row] | None = None
    framework_link: FrameworkLinkDoc | None = None
    run: RunDoc | None = None
    #: With several runs: the run's name and how its inputs make one run
    #: (``file``, ``ranks``, ``rotated``, ``combined``).
    run_name: str | None = None
    run_inputs: str | None = None
    #: With several runs: the run's input paths, and how its trace or table file was
    #: paired with its logs (``time``, ``name``; "" for none).
    run_paths: list[str] | None = None
    run_paired: str | None = None
    #: With several runs: why a run of profiler files alone is paired with none of the
    #: logs given beside it (the report's first lines say it too); absent otherwise.
    run_note: str | None = None
    training: TrainingDoc | None = None
    #: The machine every peak and efficiency is measured against, with how its clock and
    #: bandwidth are known (:meth:`dnnlens.analysis.machine.Machine.to_json`).
    machine: dict[str, Any] | None = None
    #: The framework view of a profiler trace or table (:mod:`dnnlens.analysis.framework`):
    #: ``steps`` (passes, warm-up, the typical step), ``phases``, ``ops``, ``threads``,
    #: ``aten_outside_onednn``, and with a verbose log ``primitives`` and ``link``.
    framework: dict[str, Any] | None = None
    basis: BasisDoc | None = None
    #: How far the times (and so every finding's cost and order) can be trusted
    timing_confidence: TimingConfidenceDoc | None = None


@dataclass
class RunsDoc:
    """``dnnlens analyze`` of inputs that are several runs: one report per run.

    Inputs are several runs unless they are parts of one (ranks, rotated logs) or
    ``--combine`` is given (:mod:`dnnlens.analysis.runs`).
    """

    schema_version: str
    dnnlens_version: str
    #: every input's line accounting, as in one run's document
    inputs: list[InputDoc]
    input_errors: list[str]
    runs: list[ReportDoc]


# ---------------------------------------------------------------------------------------
# serialising and the JSON Schema


#: per document class: its fields, and whether each is an optional section
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_AS_IS = (str, int, bool, type(None))


def to_plain(doc: Any) -> Any:
    """A document as plain JSON data (``None`` optional sections left out, finite numbers)."""
    kind = type(doc)
    if kind in _AS_IS:  # the leaves of a document, by far the most values
        return doc
    if kind is float:
        return doc if math.isfinite(doc) else None
    fields = _FIELDS.get(kind)
    if fields is None and dataclasses.is_dataclass(doc) and not isinstance(doc, type):
        fields = tuple((f.name, _optional_section(f)) for f in dataclasses.fields(doc))
        _FIELDS[kind] = fields
    if fields is not None:
        out = {}
        for name, optional in fields:
            value = getattr(doc, name)
            if value is None and optional:
                continue
            out[name] = to_plain(value)
        return out
    if isinstance(doc, list | tuple):
        return [to_plain(v) for v in doc]
    if isinstance(doc, dict):
        return {str(k): to_plain(v) for k, v in doc.items()}
    return json_safe(doc)


def _optional_section(f: dataclasses.Field[Any]) -> bool:
    """A field with a ``None`` default is a section that is absent when it does not apply."""
    return f.default is None


_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp in _PRIMITIVES:
        schema: dict[str, Any] = {"type": _PRIMITIVES[tp]}
        if tp is float:  # JSON has one number type; integers are numbers too
            schema = {"type": "number"}
        return schema
    if origin is Literal:
        return {"type": "string", "enum": list(typing.get_args(tp))}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(a, defs) for a in typing.get_args(tp)]}
    if origin in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return {"type": "array", "items": _type_schema(item, defs)}
    if origin is dict:
        _, value = typing.get_args(tp)
        return {"type": "object", "additionalProperties": _type_schema(value, defs)}
    if dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = typing.get_type_hints(tp)
            fields = dataclasses.fields(tp)
            defs[name] = {
                "type": "object",
                "description": " ".join((tp.__doc__ or "").split()),
                "properties": {f.name: _type_schema(hints[f.name], defs) for f in fields},
                "required": [f.name for f in fields if not _optional_section(f)],
            }
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def json_schema(doc_type: type, title: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a document class."""
    defs: dict[str, Any] = {}
    root = _type_schema(doc_type, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "x-schema-version": SCHEMA_VERSION,
        **root,
        "$defs": defs,
    }


#: The shipped schemas: file name in ``docs/schema/`` -> (document class, title).
def documents() -> dict[str, tuple[type, str]]:
    """Every document with a shipped schema."""
    return {
        "analyze.schema.json": (ReportDoc, "dnnlens analyze --format json"),
        "analyze-runs.schema.json": (RunsDoc, "dnnlens analyze --format json, several runs"),
        "diff.schema.json": (DiffDoc, "dnnlens diff --format json"),
        "project.schema.json": (ProjectionDoc, "dnnlens project --format json"),
    }


def schema_texts() -> dict[str, str]:
    """File name -> text of every shipped schema."""
    return {
        name: json.dumps(json_schema(cls, title), indent=2) + "\n"
        for name, (cls, title) in documents().items()
    }


def main(argv: list[str] | None = None) -> int:
    """Write the schemas to the folder given (default ``docs/schema``)."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "docs/schema")
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in schema_texts().items():
        (folder / name).write_text(text, encoding="utf-8")
        print(f"wrote {folder / name}")
    return 0


# -- the documents of diff and project ------------------------------------------------


@dataclass
class DiffStepDoc:
    """One run's framework step (a profiler trace or table), as ``analyze`` shows it."""

    path: str
    method: str
    steps: int
    steady_steps: int
    warmup_steps: int
    typical_step_ms: float
    median_step_ms: float
    mean_step_ms: float | None
    untracked_ms_per_step: float
    phases: dict[str, float]
    onednn_ms_per_step: float | None = None
    iterations_per_step: int | None = None


@dataclass
class DiffSideDoc:
    """One run, with the figures ``analyze`` prints for it."""

    path: str
    exec_count: int
    total_ms: Sum
    iterations: int
    steady_iterations: int
    warmup_iterations: int
    typical_iteration_ms: Sum
    mean_iteration_ms: float | None
    steady_median_ms: float | None
    reorder_share_of_iteration: float | None
    training: TrainingDoc | None = None
    step: DiffStepDoc | None = None


@dataclass
class DiffTotalDoc:
    """The totals and the verdict's comparison."""

    base_ms: Sum
    new_ms: Sum
    speedup: float | None
    base_count: int
    new_count: int
    base_iterations: int
    new_iterations: int
    per_iteration: bool
    base_typical_iteration_ms: Sum
    new_typical_iteration_ms: Sum
    typical_speedup: float | None
    base_mean_iteration_ms: float | None
    new_mean_iteration_ms: float | None
    basis: str
    compared_base_ms: Sum
    compared_new_ms: Sum
    compared_speedup: float | None
    slower_pct: float | None


@dataclass
class DiffConfidenceDoc:
    """How far the verdict can be trusted (``dnnlens.analysis.confidence``): ``high``,
    ``low`` or ``none`` (different workloads: no speed ratio), with its reasons; the
    steady passes' (or steps') ranges of both sides, the chance of their separation if
    nothing changed, and the share of time in work both runs do."""

    level: str
    reason: str
    reasons: list[str]
    different_workloads: bool
    workload_overlap: float | None
    workload_by: str
    unit: str
    base_steady: int
    new_steady: int
    base_range_ms: list[float] | None
    new_range_ms: list[float] | None
    chance: float | None


@dataclass
class DiffDoc:
    """The ``dnnlens diff --format json`` document."""

    schema_version: str
    dnnlens_version: str
    verdict: str
    basis: str
    base: DiffSideDoc
    new: DiffSideDoc
    total: DiffTotalDoc
    kinds: list[Row]
    primitives: list[Row]
    appeared: list[Row]
    vanished: list[Row]
    implementation_changes: list[Row]
    iterations: list[Row]
    fail_if_slower_pct: float | None = None
    #: ``step`` when both sides have a framework step (the verdict compares steps), else
    #: ``iteration``; then ``phases``, ``ops`` and ``steps`` side by side
    unit: str = "iteration"
    phases: list[Row] | None = None
    ops: list[Row] | None = None
    steps: list[Row] | None = None
    notes: list[str] | None = None
    #: how far ``verdict`` can be trusted; ``--fail-if-slower`` gates only on ``high``
    confidence: DiffConfidenceDoc | None = None


@dataclass
class BaselineDoc:
    """The iteration the changes are projected from: the typical iteration of ``analyze``.

    ``creation_ms`` is what the steady passes spend per iteration creating primitives that
    miss the primitive cache (``creation_misses`` lines): not in the typical iteration,
    which holds executions only.
    """

    log: str
    typical_iteration_ms: Sum
    steady_iterations: int
    pass_shown: int
    other_ms: Sum
    statistic: str
    creation_ms: Sum
    creation_misses: int


@dataclass
class HeadlineDoc:
    """The change a report leads with: the measured one that saves the most (``basis``
    ``measured``), or, in ``estimate``, the estimate that saves the most."""

    change: str
    basis: str
    baseline_ms: Sum
    projected_ms: Sum
    saving_ms: Sum


@dataclass
class ProjectionDoc:
    """The ``dnnlens project --format json`` document."""

    schema_version: str
    dnnlens_version: str
    log: str
    baseline: BaselineDoc
    baseline_ms: Sum
    iterations_used: int
    statistic: str
    notes: list[str]
    steps: list[Row]
    machine: dict[str, Any]
    measured_logs: list[Row]
    #: measured changes first, then estimates, then the changes that found nothing to change
    changes: list[Row]
    combined: Row | None
    headline: HeadlineDoc | None
    estimate: HeadlineDoc | None
    benchdnn: list[Row] | None = None


if __name__ == "__main__":
    raise SystemExit(main())
