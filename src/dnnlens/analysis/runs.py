"""Which inputs are one run: several logs are several runs unless they are parts of one.

``dnnlens analyze a.log b.log`` used to blend two runs into one typical iteration (and an
int8 log beside f32 logs into a dtype-conversion finding). Each input is now a run of its
own, except inputs that are parts of one run:

* **ranks**: file names that differ only in a rank number (``train.rank0.log`` and
  ``train.rank1.log``, ``rank_0/run.log`` and ``rank_1/run.log``, ``log-r3.txt``);
* **rotated logs**: a log and its rotations (``run.log``, ``run.log.1``, ``run.log.2.gz``).

``--combine`` makes all inputs one run. A profiler trace or table file goes with the run
whose log name shares the longest prefix with its own (``profile_nchw_infer.trace.json``
with ``profile_nchw_infer.log``), or with the only run there is.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass

from dnnlens.analysis.columns import category_mask
from dnnlens.model import ParsedLog

#: A rank number in a file or folder name, with what comes before it.
_RANK = re.compile(r"(?i)(rank|_r|-r|\.r)[-_]?(\d+)")
#: A rotation suffix: ``.1``, ``.2.gz`` after the log's own name.
_ROTATION = re.compile(r"\.(\d+)((?:\.gz|\.bz2|\.xz)?)$")
_COMPRESSED = re.compile(r"\.(gz|bz2|xz)$")


@dataclass(frozen=True)
class Run:
    """One run: its name and the input paths it is made of, in the order given."""

    name: str
    paths: tuple[str, ...]
    how: str  # "file", "ranks", "rotated" or "combined"


def run_key(path: str) -> tuple[str, str]:
    """``(key, how)``: inputs with the same key are parts of one run."""
    base = _COMPRESSED.sub("", path)
    rotated = _ROTATION.search(base)
    if rotated and not re.search(r"\.\d+$", base[: rotated.start()]):
        return base[: rotated.start()], "rotated"
    ranked = _RANK.sub(lambda m: m.group(1) + "#", base)
    if ranked != base:
        return ranked, "ranks"
    return base, "file"


def group_runs(paths: list[str], combine: bool = False) -> list[Run]:
    """The runs of some input paths (module docstring), in the order of their first input."""
    if not paths:
        return []
    if combine or len(paths) == 1:
        name = os.path.basename(paths[0]) if len(paths) == 1 else "combined"
        return [Run(name, tuple(paths), "combined" if len(paths) > 1 else "file")]
    groups: dict[str, list[str]] = {}
    hows: dict[str, str] = {}
    for p in paths:
        key, how = run_key(p)
        groups.setdefault(key, []).append(p)
        hows[key] = how
    runs = []
    for key, members in groups.items():
        how = hows[key] if len(members) > 1 else "file"
        name = (
            os.path.basename(key.replace("#", "*"))
            if len(members) > 1
            else os.path.basename(members[0])
        )
        runs.append(Run(name, tuple(members), how))
    return runs


def _common_prefix(a: str, b: str) -> int:
    a, b = os.path.basename(a), os.path.basename(b)
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def split_log(log: ParsedLog, runs: list[Run]) -> list[ParsedLog]:
    """One parsed log per run: its inputs' scans, events and diagnostics, and its traces."""
    if len(runs) <= 1:
        return [log]
    out = []
    traces = list(log.framework.traces) if log.framework is not None else []
    tables = list(log.framework.tables) if log.framework is not None else []
    owner_of = {}
    for item in [*(t.path for t in traces), *(t.source for t in tables)]:
        best = max(
            range(len(runs)),
            key=lambda i: max(_common_prefix(item, p) for p in runs[i].paths),
        )
        owner_of[item] = best
    for i, run in enumerate(runs):
        keep = set(run.paths)
        scans = [s for s in log.scans if s.path in keep]
        ev_mask = category_mask(log.events["input"], keep.__contains__)
        dg_mask = category_mask(log.diagnostics["input"], keep.__contains__)
        framework = None
        if log.framework is not None:
            mine_traces = [t for t in traces if owner_of[t.path] == i]
            mine_tables = [t for t in tables if owner_of[t.source] == i]
            if mine_traces or mine_tables:
                framework = dataclasses.replace(
                    log.framework,
                    traces=mine_traces,
                    tables=mine_tables,
                    markers={k: v for k, v in log.framework.markers.items() if k in keep},
                )
        out.append(
            dataclasses.replace(
                log,
                scans=scans,
                events=log.events[ev_mask].reset_index(drop=True),
                diagnostics=log.diagnostics[dg_mask].reset_index(drop=True),
                input_errors=list(log.input_errors) if i == 0 else [],
                framework=framework,
            )
        )
    return out
