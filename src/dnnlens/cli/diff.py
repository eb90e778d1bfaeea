"""``dnnlens diff BASE NEW``: what changed between two runs, as text, markdown or JSON.

Each side is the one run ``dnnlens analyze`` reports for it (a glob or a directory may hold
a verbose log and the profiler trace of the same run); a side that ``analyze`` splits into
several runs is refused with their names, unless ``--combine`` makes it one. The verdict
compares what the reports are based on: the typical steps when both sides have a profiler
trace (or a table with steps), with the phases and ops side by side and the oneDNN
iterations as a part of the step; else the typical steady iterations. ``--basis mean``
compares the mean step (all steps' wall time / steps) or total / passes instead. Exit
codes: 0 compared; 1 ``--fail-if-slower`` was given and NEW is slower than BASE by more than
that; 2 usage or input error, including a BASE or NEW that cannot be read or has neither
primitive executions nor a profiler trace or table to compare, and two sides with nothing
in common to compare (a trace alone against a log alone), whatever the other flags; and
``--fail-if-slower`` that cannot answer (:meth:`dnnlens.analysis.diff.Diff.gate`: different
workloads, times slowed as a whole by the machine's load, or a slowdown beyond the limit
that is within the pass-to-pass noise) says why in one line and neither passes nor fails.
The gate is one-sided: a NEW that is not slower beyond the limit passes, also when the
two runs' passes overlap (no measurable change).
"""

from __future__ import annotations

import math
from enum import StrEnum

import typer

from dnnlens.errors import EXIT_FINDINGS, EXIT_USAGE

EXIT_SLOWER = EXIT_FINDINGS  # a failed gate: the code of findings at --fail-on


class DiffFormat(StrEnum):
    """Output formats of ``diff``."""

    terminal = "terminal"
    markdown = "markdown"
    json = "json"
    github = "github"
    junit = "junit"


def parse_percent(text: str) -> float:
    """``"5%"`` or ``"5"`` -> 0.05. Raises ``ValueError`` with a readable message."""
    body = text.strip().removesuffix("%").strip()
    try:
        value = float(body)
    except ValueError:
        raise ValueError(f"--fail-if-slower {text!r}: expected a percentage such as 5%") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--fail-if-slower {text!r}: expected a percentage >= 0")
    return value / 100.0


# ---------------------------------------------------------------------------------------
# the command


def diff(
    base: str = typer.Argument(
        ..., help="The reference run: a log or profiler trace (file, glob, directory or -)."
    ),
    new: str = typer.Argument(..., help="The run to compare with it."),
    fmt: DiffFormat = typer.Option(DiffFormat.terminal, "--format", "-f", help="Output format."),
    fail_if_slower: str | None = typer.Option(
        None,
        "--fail-if-slower",
        help="Exit 1 if NEW is slower than BASE by more than this (5% or 5), per step "
        "(both sides with a profiler trace) or per iteration; exit 2 when the diff's "
        "confidence is not high (noise, too few passes, different workloads).",
    ),
    basis: str = typer.Option(
        "typical",
        "--basis",
        help="What the verdict and --fail-if-slower compare: typical (the typical steady "
        "step or iteration, robust to warm-up and outliers) or mean (steps' wall time / "
        "steps, or total / passes).",
    ),
    top: int = typer.Option(15, "--top", min=1, help="Rows per table (terminal, markdown)."),
    combine: bool = typer.Option(
        False,
        "--combine",
        help="Make all inputs of a side one run (a side that holds several runs is refused).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Compare two runs: typical step (phases, ops) or iteration, kinds, primitives, passes."""
    from dnnlens.app.compare import compare
    from dnnlens.app.session import SessionError
    from dnnlens.report.console import error
    from dnnlens.report.renderers.base import RenderOptions, renderer
    from dnnlens.report.renderers.diff import DIFF_RENDERERS

    try:
        limit = parse_percent(fail_if_slower) if fail_if_slower is not None else None
    except ValueError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    try:
        d = compare(base, new, basis, quiet, combine)
    except SessionError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    renderer(fmt.value, DIFF_RENDERERS).write(d, None, RenderOptions(top=top, fail_if_slower=limit))
    decided = d.gate(limit)  # one decision: this exit code and every format's verdict
    if decided.outcome == "refused":
        error(decided.why)
        raise typer.Exit(EXIT_USAGE)
    if decided.outcome == "fail":
        error(decided.why)
        raise typer.Exit(EXIT_SLOWER)


def register(app: typer.Typer) -> None:
    """Add ``dnnlens diff`` to the command line (one line and its exit code on any failure)."""
    from dnnlens.cli import _last_resort

    app.command("diff")(_last_resort(diff))
