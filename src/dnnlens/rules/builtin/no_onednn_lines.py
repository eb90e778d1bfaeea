"""DL012 no-onednn-lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from dnnlens.analysis.columns import str_values
from dnnlens.analysis.dispatch import DispatchReason
from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.builtin._util import Fix, FixedByProducer, producer_fix
from dnnlens.rules.context import RuleContext

_VERBOSE = (
    "export `ONEDNN_VERBOSE=1` before the program starts (oneDNN reads it once) and capture "
    "its stdout"
)
NO_LINES_FIX = Fix(
    pytorch=(
        _VERBOSE + "; check `torch.backends.mkldnn.is_available()` and that the ops and data "
        "types you run go through oneDNN (for bf16, a CPU with AVX-512 BF16 or AMX; otherwise "
        "PyTorch runs its own kernels)"
    ),
    tensorflow=(
        _VERBOSE + "; and `TF_ENABLE_ONEDNN_OPTS=1` (TensorFlow then prints 'oneDNN custom "
        "operations are on'): with `=0` only Eigen's matrix multiplications call oneDNN, "
        "as gemm_api lines (recorded)"
    ),
    openvino=(
        _VERBOSE + "; the CPU plugin prints oneDNN lines only for the nodes it runs through "
        "oneDNN (convolutions, pooling, some MatMuls): others run its own kernels and print "
        "nothing (recorded: at f32 the MatMul printed no line)"
    ),
    onednn=(
        _VERBOSE + ", or call `dnnl::set_verbose(1)` before the first primitive is created; "
        "a framework may run its own kernels instead of oneDNN's for the ops and data types "
        "you use"
    ),
)


class NoOnednnLines(FixedByProducer):
    """An input has no oneDNN primitive lines at all: there is nothing to analyse.

    An input that holds a PyTorch profiler table (``key_averages().table()``) is framework
    input, read by the framework view, and is not reported here.

    Usual reasons: verbose mode was not on (``ONEDNN_VERBOSE=1`` or ``2``; ``DNNL_VERBOSE``
    before oneDNN 2.5, ``MKLDNN_VERBOSE`` for 0.x) or was set after the library was loaded;
    the framework ran its own kernels instead of oneDNN's (PyTorch bf16 on CPUs without
    avx512_core/avx_ne_convert, ops or dtypes it does not route to mkldnn, a build without
    oneDNN); or the output went elsewhere (stdout not captured, a subprocess, Python
    logging). When the header was printed, oneDNN was loaded with verbose on, so the
    framework simply did not call it.

    Saving: none stated (the finding is not about time: ``unknown``).

    Fix: export ``ONEDNN_VERBOSE=1`` before the program starts and capture its stdout; then
    check, in the terms of the program that made the log, that the ops and data types you
    run go through oneDNN.
    """

    name = "no-onednn-lines"
    code = "DL012"
    severity = "warning"
    defaults: dict = {}
    fixes = (("", NO_LINES_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        # every event the reader kept, not the analysis window or the passes left after
        # --skip-iterations: the question is whether the input has any at all
        ev = ctx.log.events
        with_events = set(str_values(ev["input"].drop_duplicates())) if len(ev) else set()
        diag = ctx.log.diagnostics
        diag_inputs = set(str_values(diag["input"].drop_duplicates())) if len(diag) else set()
        # a PyTorch profiler table is framework input, analysed in the framework view
        fw = ctx.log.framework
        with_tables = {t.source for t in fw.tables} if fw is not None else set()
        for scan in ctx.log.scans:
            if scan.path in with_events or scan.path in with_tables or scan.read_error:
                continue
            h = scan.header
            first_bad = (
                f"line {scan.malformed_line[0]}: {ctx.log.reasons[scan.malformed_reason[0]]}"
                if scan.malformed
                else ""
            )
            dispatch = ctx.analysis.dispatch.get(scan.path, [])
            if dispatch:
                yield self._dispatch_only(ctx, scan, dispatch)
                continue
            if scan.path in diag_inputs:
                why = (
                    "oneDNN printed only diagnostics (create:dispatch/create:check lines: why "
                    "it skipped implementations), the output of ONEDNN_VERBOSE=dispatch or "
                    "check; set ONEDNN_VERBOSE=1 for exec lines with times, 2 for creations too"
                )
            elif scan.malformed:
                why = (
                    f"{scan.malformed} lines carry a verbose marker (so verbose was on) but "
                    f"none parses (first at {first_bad}): a damaged log, or a format this "
                    "version of dnnlens does not read"
                )
            elif h.version:
                why = (
                    f"oneDNN {h.version} printed its header (verbose was on) but no "
                    "primitive ran: the framework used its own kernels, or the program "
                    "stopped before the first one"
                )
            elif scan.lines == 0:
                why = "the input is empty"
            else:
                why = (
                    "not even a header: verbose was off (ONEDNN_VERBOSE / DNNL_VERBOSE "
                    "unset or set too late), the framework used its own kernels, or the "
                    "output was redirected"
                )
            example = scan.foreign_examples[0][1][:80] if scan.foreign_examples else ""
            msg = f"{scan.path}: no oneDNN primitive lines in {scan.lines} lines; {why}" + (
                f" (first line: {example!r})" if example else ""
            )
            first = (
                [int(n) for n in diag["line"][str_values(diag["input"]) == scan.path][:1]]
                if (scan.path in diag_inputs)
                else list(scan.malformed_line[:1])
            )
            evidence = [Evidence(scan.path, first[0] if first else 1)] if scan.lines else []
            yield self.finding(
                msg,
                evidence,
                fix=producer_fix(ctx, NO_LINES_FIX),
                data={
                    "path": scan.path,
                    "lines": scan.lines,
                    "header": bool(h.version),
                    "onednn_version": h.version,
                    "malformed_lines": scan.malformed,
                    "diagnostic_only": scan.path in diag_inputs,
                    "foreign_lines": scan.foreign,
                    "producer": ctx.producer.to_json(),
                },
            )

    def _dispatch_only(self, ctx: RuleContext, scan: Any, reasons: list[DispatchReason]) -> Finding:
        """An input of only ``create:dispatch`` lines: titled for what it is, its reasons
        counted (which implementations were skipped and why)."""
        lines = sum(r.lines for r in reasons)
        shown = "; ".join(_reason_text(r) for r in reasons[:DISPATCH_SHOWN])
        more = f"; {len(reasons) - DISPATCH_SHOWN} more in --format json" if (
            len(reasons) > DISPATCH_SHOWN
        ) else ""  # fmt: skip
        msg = (
            f"{scan.path}: only dispatch diagnostics ({lines} create:dispatch lines in "
            f"{scan.lines} lines, no primitive ran with a time): ONEDNN_VERBOSE=dispatch "
            "says why oneDNN skipped implementations; set ONEDNN_VERBOSE=1 for exec lines "
            f"with times, 2 for creations too. Skipped, most lines first: {shown}{more}"
        )
        finding = self.finding(
            msg,
            [Evidence(scan.path, r.first_line) for r in reasons[:3]],
            fix=producer_fix(ctx, NO_LINES_FIX),
            data={
                "path": scan.path,
                "lines": scan.lines,
                "header": bool(scan.header.version),
                "onednn_version": scan.header.version,
                "malformed_lines": scan.malformed,
                "diagnostic_only": True,
                "foreign_lines": scan.foreign,
                "dispatch_only": True,
                "dispatch_lines": lines,
                "dispatch_reasons": [r.to_json() for r in reasons],
                "producer": ctx.producer.to_json(),
            },
        )
        return dataclasses.replace(finding, title=DISPATCH_TITLE)


#: The title of a finding on a log of only dispatch lines (``ONEDNN_VERBOSE=dispatch``).
DISPATCH_TITLE = "Only dispatch diagnostics: set ONEDNN_VERBOSE=1 for times"
#: Reasons named in the message; the JSON's ``dispatch_reasons`` has them all.
DISPATCH_SHOWN = 6


def _reason_text(r: DispatchReason) -> str:
    what = f"{r.kind} {r.impl}".strip() or "a primitive"
    return f"{what}: {r.reason!r} x{r.lines}" + (f" ({r.source})" if r.source else "")
