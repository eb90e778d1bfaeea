"""Which profiler tables found inside the logs can still be linked once events were dropped.

A ``key_averages()`` table printed into a log covers the events of its profiled region: the
lines between the last ``profiler_start``/``profiler_stop`` pair before it, or the whole log
before it when there is no pair. Linking it (``dnnlens.analysis.linking``) needs all those
events; when reading kept only a window of the last events, a table whose region lost events
is left out, with a note that says so. The analysis layer links the tables that are left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dnnlens.model.regions import marker_ranges

if TYPE_CHECKING:
    from dnnlens.parsers.torch_trace import FrameworkData


def table_region_start(markers: list[tuple[int, str]], table_line: int) -> int | None:
    """The line of the ``profiler_start`` that opens the profiled region of a table printed
    at ``table_line``; None when the log has no marker pair before it (the table then covers
    the whole log before it)."""
    ranges = [r for r in marker_ranges(markers) if r[1] <= table_line]
    return ranges[-1][0] if ranges else None


def keep_linkable_tables(
    framework: FrameworkData, dropped: dict[str, int], window: int, logs: set[str]
) -> tuple[FrameworkData | None, list[str]]:
    """``framework`` without the tables whose profiled region lost events, and a note for
    each of them. ``dropped`` gives, per input, the line of the last event dropped; ``logs``
    are the inputs that hold events (a table printed in another file covers them all)."""
    kept, notes = [], []
    for table in framework.tables:
        last = dropped.get(table.source)
        if table.source in logs:
            start = table_region_start(framework.markers.get(table.source, []), table.line)
            ok = last is None or (start is not None and last < start)
        else:  # a table file: it covers the other inputs
            ok = not dropped
        if ok:
            kept.append(table)
        else:
            notes.append(
                f"{table.source}:{table.line}: profiler table not linked: the events of its "
                f"profiled region were not all kept (reading keeps the last {window:,} "
                "events of a large input); give a larger --window"
            )
    framework.tables = kept
    return (framework if framework else None), notes
