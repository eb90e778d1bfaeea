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


def report_console(output: Path | None) -> Console:
    """A console for a terminal report: the file ``output``, or standard output."""
    from dnnlens.report.console import make_console

    if output is not None:
        return make_console(file=output.open("w", encoding="utf-8"), width=FILE_WIDTH)
    return make_console()


def render_analysis(analysis: Any, fmt: str, output: Path | None, top: int = 10) -> None:
    """An :class:`~dnnlens.analysis.analysis.Analysis` as ``terminal``, ``json`` or ``html``.

    Raises ``ValueError`` for ``html`` without ``output`` (a page is not for a terminal).
    """
    if fmt == "html":
        from dnnlens.report.html import render_html

        if output is None:
            raise ValueError("--format html needs --output FILE")
        emit_text(render_html(analysis), output)
    elif fmt == "json":
        from dnnlens.report.json_report import render_json

        emit_text(render_json(analysis) + "\n", output)
    else:
        from dnnlens.report.terminal import render_terminal

        render_terminal(analysis, report_console(output), top=top)
