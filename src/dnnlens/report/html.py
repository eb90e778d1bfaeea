"""The self-contained HTML report (stub until the HTML reporter lands)."""

from __future__ import annotations

import html

from dnnlens.analysis.result import Analysis


def render_html(analysis: Analysis) -> str:
    """The whole report as one HTML document."""
    total = analysis.summary.total_time_ms
    return f"<!doctype html><title>dnnlens</title><p>{html.escape(f'{total:.3f}')} ms</p>"
