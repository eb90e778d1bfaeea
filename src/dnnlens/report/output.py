"""Where a report goes: a file named with ``-o``, or standard output.

One place for the policy every command follows: text reports are written as they are; a
terminal report written to a file gets no colour and a fixed width; on standard output it
gets colour only on a terminal without ``NO_COLOR`` (``dnnlens.report.console``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

FILE_WIDTH = 160


def emit_text(text: str, output: Path | None) -> None:
    """Write ``text`` to ``output``, or to standard output when there is none."""
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def report_console(output: Path | None, width: int | None = None) -> Console:
    """A console for a terminal report: the file ``output``, or standard output."""
    from dnnlens.report.console import make_console

    if output is not None:
        return make_console(file=output.open("w", encoding="utf-8"), width=width or FILE_WIDTH)
    return make_console(width=width)


def render_analysis(
    analysis: Any,
    fmt: str,
    output: Path | None,
    top: int = 10,
    details: bool = False,
    width: int | None = None,
) -> None:
    """An :class:`~dnnlens.analysis.analysis.Analysis` in a registered format
    (:mod:`dnnlens.report.renderers`).

    Raises ``ValueError`` for an unknown format, or ``html`` without ``output`` (a page is
    not for a terminal).
    """
    from dnnlens.report.renderers import RenderOptions, renderer

    chosen = renderer(fmt)
    if not chosen.to_terminal and output is None:
        raise ValueError(f"--format {fmt} needs --output FILE")
    chosen.write(analysis, output, RenderOptions(top=top, details=details, width=width))
