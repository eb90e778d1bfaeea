"""The JSON report: the :class:`~dnnlens.report.schema.ReportDoc` of one analysis.

Every figure is the analysis's own (:class:`~dnnlens.analysis.analysis.Analysis`): this
module only copies facts into the typed document, it computes none.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from dnnlens._version import __version__
from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Finding
from dnnlens.analysis.training import TrainingStep
from dnnlens.model import InputScan
from dnnlens.report import schema as s

MALFORMED_LISTED = 100


def input_doc(scan: InputScan, reasons: list[str]) -> s.InputDoc:
    """One entry of ``inputs``: the line accounting and header of one input."""
    h = scan.header
    malformed = [
        s.MalformedLineDoc(int(line), reasons[int(r)], scan.malformed_text.get(line))
        for line, r in zip(
            scan.malformed_line[:MALFORMED_LISTED],
            scan.malformed_reason[:MALFORMED_LISTED],
            strict=True,
        )
    ]
    return s.InputDoc(
        path=scan.path,
        lines=scan.lines,
        parsed_lines=scan.parsed,
        foreign_lines=scan.foreign,
        malformed_lines=scan.malformed,
        families=list(scan.family_names),
        onednn_version=h.version,
        commit=h.commit,
        runtime=h.runtime,
        threads=h.threads,
        isa=h.isa,
        gpu_runtime=h.gpu_runtime,
        header_count=h.header_count,
        prefixed_lines=scan.prefixed,
        gzip=bool(scan.gzip),
        invalid_utf8_bytes=scan.invalid_utf8_bytes,
        nul_lines=scan.nul_lines,
        read_notes=list(scan.read_notes),
        read_error=scan.read_error,
        malformed=malformed,
    )


def summary_doc(analysis: Analysis) -> s.SummaryDoc:
    """``summary``: the totals, and the typical iteration with its reorder part."""
    st = analysis.steady
    part = analysis.reorder_part
    model = analysis.model
    return s.SummaryDoc(
        **asdict(analysis.summary),
        iterations=st.passes,
        steady_iterations=st.divisor,
        warmup_iterations=st.warmup_left_out,
        typical_iteration_ms=analysis.typical_iteration_ms,
        reorder_ms_per_iteration=part.ms,
        reorder_share_of_iteration=part.share,
        model=s.ModelDoc(model.name, model.source, model.path) if model is not None else None,
    )


def finding_doc(f: Finding, analysis: Analysis) -> s.FindingDoc:
    """One finding with its cost per typical iteration."""
    impact = f.impact_ms_per_iteration
    return s.FindingDoc(
        rule=f.rule,
        code=f.code,
        severity=f.severity,
        title=f.title,
        basis=f.basis,
        message=f.message,
        evidence=[s.EvidenceDoc(e.path, e.line) for e in f.evidence],
        data=dict(f.data),
        fix=f.fix,
        impact_ms_per_iteration=impact,
        share_of_iteration=analysis.share_of(f),
        impact_ms_per_basis=analysis.impact_per_basis(f),
        share_of_basis=analysis.share_of(f),
        share_of_onednn_iteration=analysis.onednn_iteration_share(f),
        saving_ms_per_iteration=f.saving_ms_per_iteration,
        saving_ms_per_basis=analysis.saving_per_basis(f),
        saving_basis=f.saving_basis,
        saving_note=f.saving_note,
    )


def iterations_doc(analysis: Analysis) -> s.IterationsDoc:
    """``iterations``: every pass, and the steady state."""
    st, it = analysis.steady, analysis.iterations
    t = st.times
    passes = [
        s.PassDoc(
            iteration=int(r.iteration),
            input=str(r.input),
            exec_count=int(r.exec_count),
            time_ms=float(r.time_ms),
            reorder_ms=float(r.reorder_ms),
            regular=bool(r.regular),
            warmup=not (bool(r.steady) or bool(r.partial)),
            steady=bool(r.steady),
            first_line=int(r.first_line),
            last_line=int(r.last_line),
            partial=bool(r.partial),
        )  # fmt: skip
        for r in t.itertuples(index=False)
    ]
    return s.IterationsDoc(
        count=st.passes,
        warmup=st.warmup,
        warmup_structural=st.warmup_structural,
        warmup_slow=st.warmup_slow,
        steady=st.divisor,
        period_exec=st.period_exec,
        found=st.found,
        warmup_rule=st.rule,
        passes=passes,
        partial=st.partial,
        method=it.method,
        step_line=it.step_line,
    )


def training_doc(step: TrainingStep | None) -> s.TrainingDoc | None:
    """``training``: the typical step by pass and reorder role, or ``None``."""
    if step is None:
        return None
    return s.TrainingDoc(
        step_ms=step.step_ms,
        steady_steps=step.steady_steps,
        forward_ms=step.forward_ms,
        backward_ms=step.backward_ms,
        weight_reorder_ms=step.weight_reorder_ms,
        weight_reorder_share=step.share(step.weight_reorder_ms),
        backward_forward_ratio=step.backward_forward_ratio,
        parts=[
            s.TrainingPartDoc(p.name, p.group, p.label, p.ms, step.share(p.ms), p.per_step)
            for p in step.parts
        ],
    )


def report_doc(analysis: Analysis) -> s.ReportDoc:
    """The whole ``analyze`` document of one analysis."""
    log = analysis.log
    links = analysis.framework_links
    window, skipped = analysis.window, analysis.skipped
    stream = None
    if log.window is not None:
        stream = s.StreamDoc(
            window_events=log.window.size,
            events_in_window=log.window.events_kept,
            events_total=log.window.events_total,
        )
    link = links.get("framework_link")
    trust = analysis.timing_trust  # first: a run it distrusts has a note that says so
    return s.ReportDoc(
        schema_version=s.SCHEMA_VERSION,
        dnnlens_version=__version__,
        inputs=[input_doc(scan, log.reasons) for scan in log.scans],
        input_errors=list(log.input_errors),
        summary=summary_doc(analysis),
        findings=[finding_doc(f, analysis) for f in analysis.findings],
        primitives=[s.PrimitiveDoc(**p) for p in analysis.primitives],
        iterations=iterations_doc(analysis),
        notes=list(analysis.notes),
        window=s.WindowDoc(**asdict(window)) if window is not None else None,
        skipped=s.SkippedDoc(**asdict(skipped)) if skipped is not None else None,
        stream=stream,
        framework_ops=links.get("framework_ops"),
        framework_ops_without_onednn=links.get("framework_ops_without_onednn"),
        framework_link=s.FrameworkLinkDoc(**link) if link is not None else None,
        run=s.RunDoc(**analysis.run_info) if analysis.run_info is not None else None,
        framework=analysis.framework.to_json() if analysis.framework is not None else None,
        training=training_doc(analysis.training),
        machine=analysis.machine.to_json() if analysis.primitives else None,
        basis=s.BasisDoc(**analysis.report_basis.to_json()),
        timing_confidence=s.TimingConfidenceDoc(**trust.to_json()),
    )


def runs_doc(analyses: list[Analysis], runs: list[Any], log: Any = None) -> s.RunsDoc:
    """The document of several runs: one report each, named; ``inputs`` and
    ``input_errors`` of every input (``log``: all of them, those in no run too)."""
    docs = []
    for analysis, run in zip(analyses, runs, strict=True):
        doc = report_doc(analysis)
        doc.run_name, doc.run_inputs = run.name, run.how
        doc.run_paths, doc.run_paired = list(run.paths), getattr(run, "paired", "")
        doc.run_note = getattr(run, "note", "") or None
        docs.append(doc)
    if log is not None:
        inputs = [input_doc(scan, log.reasons) for scan in log.scans]
        errors = list(log.input_errors)
    else:
        inputs = [i for d in docs for i in d.inputs]
        errors = [e for d in docs for e in d.input_errors]
    return s.RunsDoc(s.SCHEMA_VERSION, __version__, inputs, errors, docs)


def to_json_dict(analysis: Analysis) -> dict[str, Any]:
    """The whole report as plain data."""
    return s.to_plain(report_doc(analysis))


def render_json(analysis: Analysis) -> str:
    """The JSON report as text."""
    return json.dumps(to_json_dict(analysis), indent=2)
