"""Which files make up which run, and what each run is called in the dataset.

Paths, globs and directories expand as for ``analyze`` (:func:`dnnlens.io.inputs.expand_inputs`).
Then, grouped ``by file`` (the default), the runs are the ones ``dnnlens analyze`` makes of
the same files (:func:`dnnlens.analysis.runs.plan_runs`: ranks and rotations of one log, a
profiler trace and tables of the log's stem, each file's kind told by its first bytes),
named after their first file (:func:`dnnlens.report.tables_export.run_name`); grouped ``by
directory``, the files directly in one directory are one run (the ranks of one job), named
after the directory.

A name is the run's own when no other run has it; two runs of one name (``a/train.log``
and ``b/train.log``, or a new ``train.log`` beside an older one in the dataset) are told
apart by their content hash: ``train-3f2a9c0d1e4b``. So a name never depends on the order
runs finish in.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dnnlens.analysis.runs import plan_runs
from dnnlens.io.content import head_kind
from dnnlens.io.inputs import display_path, expand_inputs, left_out_note
from dnnlens.report.tables_export import run_name
from dnnlens.textsafe import path_text

GROUPS = ("file", "directory")
_HASH_CHARS = 12


@dataclass(frozen=True)
class RunSpec:
    """One run to build: the name it would like, its files (sorted) and their size."""

    stem: str
    files: tuple[str, ...]
    size_bytes: int


def discover(
    paths: list[str],
    group: str = "file",
    dataset: Path | None = None,
    notes: list[str] | None = None,
) -> tuple[list[RunSpec], list[str]]:
    """The runs named by ``paths``, and one error line per path that names nothing.

    Files inside ``dataset`` (the build's output, when a glob reaches into it) are not
    inputs. ``notes`` gets one line per directory or glob that left out files holding a
    log, a trace or a table (as ``analyze`` notes a directory's), or files that hold none.
    """
    if group not in GROUPS:
        raise ValueError(f"unknown grouping {group!r} (file or directory)")
    sources, errors = expand_inputs(paths, notes)
    if notes is not None:
        for spec in paths:
            if spec and not os.path.lexists(spec) and glob.has_magic(spec):
                matched = glob.glob(spec, recursive=True)
                note = left_out_note(spec, matched) if matched else None
                if note is not None:
                    notes.append(note)
    inside = os.path.join(os.path.abspath(dataset), "") if dataset is not None else None
    chosen: list[str] = []
    within: list[str] = []  # inputs inside the dataset's own directory: never read
    for source in sources:
        if source.is_stdin:
            errors.append("-: a fleet is built from files, not standard input")
            continue
        if inside is not None and os.path.abspath(source.path).startswith(inside):
            within.append(source.path)
            continue
        chosen.append(source.path)
    if within and not chosen:
        errors.append(_all_within(within, dataset))
    grouped: dict[tuple[str, str], list[str]] = {}
    if group == "directory":
        for path in chosen:
            folder = os.path.dirname(os.path.abspath(path))
            key = (folder, run_name(path_text(Path(folder).name) or "run", set()))
            grouped.setdefault(key, []).append(path)
    else:
        for run in plan_runs(chosen, head_kind):
            folder = os.path.dirname(os.path.abspath(run.paths[0]))
            grouped[(folder, run_name(path_text(run.name), set()))] = list(run.paths)
    specs = [
        RunSpec(stem, tuple(sorted(files)), sum(_size(f) for f in files))
        for (_, stem), files in sorted(grouped.items())
    ]
    return specs, errors


def _all_within(paths: list[str], dataset: Path | None) -> str:
    """The error when every input is inside the dataset's own directory (``-o``)."""
    shown = ", ".join(display_path(p) for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
    count = "the input" if len(paths) == 1 else f"all {len(paths):,} inputs"
    verb = "is" if len(paths) == 1 else "are"
    return (
        f"{display_path(str(dataset))}: {count} ({shown}) {verb} inside the dataset's own "
        "directory (-o), whose files are never read as inputs; write the dataset to another "
        "directory"
    )


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # reading it says why (the run fails with that reason)
        return 0


class RunNames:
    """Names for new runs: unique in the dataset and in this build."""

    def __init__(self, specs: list[RunSpec], taken: set[str]) -> None:
        self._stems = Counter(s.stem for s in specs)
        self._taken = set(taken)

    def name(self, spec: RunSpec, content_hash: str, taken: set[str] | None = None) -> str:
        """The name of ``spec``'s run with that content hash (and take it); ``taken``: names
        found taken since (by another build into the same dataset)."""
        self._taken |= taken or set()
        name = spec.stem
        if self._stems[spec.stem] > 1 or name in self._taken:
            name = f"{spec.stem}-{content_hash[:_HASH_CHARS]}"
        if name in self._taken:
            name = f"{spec.stem}-{content_hash}"
        self._taken.add(name)
        return name
