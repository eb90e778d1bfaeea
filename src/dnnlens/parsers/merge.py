"""Merging what several scans of one stream learnt (chunks of a pipe, ranges of a file)."""

from __future__ import annotations

from dnnlens.parsers.header import Header

_SINGLE = ("version", "commit", "runtime", "threads", "isa", "gpu_runtime")


def merge_header(into: Header, other: Header) -> None:
    """Add what ``other`` (a later part of the same input) says to ``into``.

    Single values keep the first one printed (the first process's header); lists are
    concatenated.
    """
    for name in _SINGLE:
        if getattr(into, name) is None and getattr(other, name) is not None:
            setattr(into, name, getattr(other, name))
    into.engines.extend(other.engines)
    for key, value in other.templates.items():
        into.templates.setdefault(key, value)
    into.graph_backends.extend(other.graph_backends)
    into.version_lines.extend(other.version_lines)
    into.other.extend(other.other[: max(0, 50 - len(into.other))])
