"""Which inputs are one run: several logs, traces or tables are several runs unless they are
parts of one.

``dnnlens analyze a.log b.log`` used to blend two runs into one typical iteration (and an
int8 log beside f32 logs into a dtype-conversion finding); two profiler traces were one run
whose view was the first trace's. Each input is now a run of its own, except inputs that
are parts of one run:

* **ranks**: log names that differ only in a rank number (``train.rank0.log`` and
  ``train.rank1.log``, ``rank_0/run.log`` and ``rank_1/run.log``, ``log-r3.txt``);
* **rotated logs**: a log and its rotations (``run.log``, ``run.log.1``, ``run.log.2.gz``);
* **a profiler trace or table file and the verbose log of the same run**, paired
  (:func:`pair_framework`), in this order:

  1. *by time*: a trace whose profiled span (``baseTimeNanoseconds`` + ``ts``, epoch ms)
     overlaps the span of a log run's ``ONEDNN_VERBOSE_TIMESTAMP`` timestamps (the same
     clock) goes with that run (the largest overlap when it overlaps several); a trace and
     a log that both have times and do not overlap are never one run, whatever their names;
  2. *by name*: else a trace or table file whose stem (the name without its directory and
     ``.trace``/``.table``/``.pt``/``.json``/``.log``/``.txt`` and compression suffixes) is
     the stem of a log run's log (``profile_nchw_infer.trace.json`` and
     ``profile_nchw_infer.log``), the log in the same directory first; two equally good
     logs pair with neither;

  Nothing else pairs them: a trace of another run given beside a log (no shared stem, no
  timestamps that meet) would otherwise re-base the log's findings on a step the log never
  ran. A file that pairs with no log is a run of its own, and its :attr:`Run.note` says so
  (the report's first lines show it); ``--combine`` joins inputs the names cannot.

  A run holds at most one trace file (the framework view is made of one trace), and the
  table files of its stem (a plain and a ``group_by_input_shape`` table of one profile);
  trace and table files of one stem with no log are one run too. Tables printed inside a
  log belong to that log's run.

``--combine`` makes all inputs one run.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dnnlens.analysis.columns import category_mask
from dnnlens.model import ParsedLog

#: A rank number in a file or folder name, with what comes before it.
_RANK = re.compile(r"(?i)(rank|_r|-r|\.r)[-_]?(\d+)")
#: A rotation suffix: ``.1``, ``.2.gz`` after the log's own name.
_ROTATION = re.compile(r"\.(\d+)((?:\.gz|\.bz2|\.xz)?)$")
_COMPRESSED = re.compile(r"\.(gz|bz2|xz)$")
#: Suffixes that say what a file is, not which run: cut from a name to get its stem.
_KIND_SUFFIX = re.compile(
    r"(?i)\.(gz|bz2|xz|json|log|txt|out|trace|table|shapes|pt|prof|profile|verbose|onednn)$"
)

#: A time span in epoch milliseconds, or None for an input without times.
Span = tuple[float, float] | None


@dataclass(frozen=True)
class Run:
    """One run: its name and the input paths it is made of (its logs in the order given,
    then its trace and table files, which are also in ``framework``).

    ``how`` says why its logs are one run ("file", "ranks", "rotated", "combined"; "trace"
    for a run of profiler files alone); ``paired`` how its trace or table file was paired
    with its logs ("time", "name"; "" when it has none or no logs); ``note`` why a run of
    profiler files alone was paired with none of the logs given beside it ("" otherwise).
    """

    name: str
    paths: tuple[str, ...]
    how: str
    framework: tuple[str, ...] = ()
    paired: str = ""
    note: str = ""

    @property
    def logs(self) -> tuple[str, ...]:
        """The verbose logs of the run (its paths that are not trace or table files)."""
        return tuple(p for p in self.paths if p not in self.framework)


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


def rank_in_name(path: str) -> int | None:
    """The rank number a log's name gives it (``train.rank1.log``: 1), None without one:
    what tells the logs of a ``ranks`` run apart."""
    found = list(_RANK.finditer(_COMPRESSED.sub("", path)))
    return int(found[-1].group(2)) if found else None


def stem(path: str) -> str:
    """The name of ``path`` without its directory and the suffixes that say what kind of
    file it is (``profile_nchw_infer.trace.json`` -> ``profile_nchw_infer``)."""
    name = os.path.basename(path)
    while True:
        cut = _KIND_SUFFIX.sub("", name)
        if cut == name or not cut:
            return name
        name = cut


def of_stem(path: str, name: str) -> bool:
    """Whether ``path`` is a file of the run called ``name``: its stem is ``name``, or
    ``name`` and more dotted words (``adamw_bad.top.table.txt`` and
    ``sgd_bad.memory.table.txt``: more tables of the ``adamw_bad`` and ``sgd_bad``
    profiles)."""
    own = stem(path)
    return own == name or own.startswith(name + ".")


def _family(f: FrameworkFile, files: Sequence[FrameworkFile]) -> str:
    """The stem ``f`` is grouped under among profiler files that pair with no log: the
    shortest stem of another file in its directory that it is a file of (its own else)."""
    folder = os.path.dirname(f.path)
    names = [stem(g.path) for g in files if os.path.dirname(g.path) == folder]
    return min((n for n in names if of_stem(f.path, n)), key=len, default=stem(f.path))


def group_runs(paths: list[str], combine: bool = False) -> list[Run]:
    """The runs of some log paths (module docstring), in the order of their first input."""
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


# -- pairing profiler files with logs ---------------------------------------------------------


@dataclass(frozen=True)
class FrameworkFile:
    """A trace or table file among the inputs, with its profiled span (traces only)."""

    path: str
    kind: str  # "trace" or "table"
    span: Span = None


def _overlap(a: Span, b: Span) -> float | None:
    """How long two spans overlap (ms, 0 when they touch); None when they do not, or
    when either is unknown (``nan`` is returned then: no contradiction)."""
    if a is None or b is None:
        return float("nan")
    start, end = max(a[0], b[0]), min(a[1], b[1])
    return end - start if start <= end else None


def _score(f: FrameworkFile, run: Run, span: Span) -> tuple[int, float, int, int] | None:
    """How well ``f`` fits ``run`` (higher is better), None when it cannot be its file."""
    overlap = _overlap(f.span, span)
    if overlap is None:  # both have times and they do not meet: two runs
        return None
    timed = overlap == overlap  # not nan
    same_stem = any(of_stem(f.path, stem(p)) for p in run.paths)
    if not (timed or same_stem):
        return None
    same_dir = any(os.path.dirname(p) == os.path.dirname(f.path) for p in run.paths)
    return (int(timed), overlap if timed else 0.0, int(same_stem), int(same_dir))


def pair_framework(
    runs: Sequence[Run], files: Sequence[FrameworkFile], spans: Sequence[Span] = ()
) -> list[Run]:
    """The log ``runs`` with their trace and table ``files`` (module docstring), then the
    files that pair with no log as runs of their own. ``spans``: each run's timestamps."""
    spans = list(spans) or [None] * len(runs)
    held: list[list[tuple[FrameworkFile, str]]] = [[] for _ in runs]  # (file, how paired)
    alone: list[FrameworkFile] = []
    for f in files:
        scored = [
            (s, i)
            for i, run in enumerate(runs)
            if not (f.kind == "trace" and any(g.kind == "trace" for g, _ in held[i]))
            and (s := _score(f, run, spans[i])) is not None
        ]
        scored.sort(key=lambda x: x[0], reverse=True)
        if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            best, i = scored[0]
            held[i].append((f, "time" if best[0] else "name"))
        else:
            alone.append(f)
    out = []
    for run, mine in zip(runs, held, strict=True):
        if not mine:
            out.append(run)
            continue
        paths = tuple(f.path for f, _ in mine)
        how = ", ".join(dict.fromkeys(h for _, h in mine))
        out.append(dataclasses.replace(run, paths=run.paths + paths, framework=paths, paired=how))
    groups: dict[tuple[str, str], list[FrameworkFile]] = {}
    for f in alone:  # a trace and a table file of one stem: one run
        key = (os.path.dirname(f.path), _family(f, alone))
        group = groups.setdefault(key, [])
        if f.kind == "trace" and any(g.kind == "trace" for g in group):
            key = (key[0], f.path)  # a second trace of the stem: a run of its own
            group = groups.setdefault(key, [])
        group.append(f)
    for group in groups.values():
        paths = tuple(g.path for g in group)
        note = _unpaired_note(group, runs, spans) if runs else ""
        out.append(Run(os.path.basename(paths[0]), paths, "trace", paths, note=note))
    return out


def _unpaired_note(group: Sequence[FrameworkFile], runs: Sequence[Run], spans: list[Span]) -> str:
    """Why profiler files given beside logs are a run of their own (one line)."""
    first = group[0]
    name = stem(first.path)
    what = "a profiler trace" if first.kind == "trace" else "a profiler table"
    same = [r for r in runs if any(of_stem(first.path, stem(p)) for p in r.paths)]
    if len(same) > 1:
        why = f"{len(same)} logs are named {name!r}, equally well"
    elif same:
        why = f"its profiled span meets no timestamp of {os.path.basename(same[0].paths[0])}"
    elif first.span is not None and any(s is not None for s in spans):
        why = f"no log is named {name!r} and its profiled span meets no log's timestamps"
    else:
        why = f"no log is named {name!r} and no timestamps tell which log ran with it"
    return (
        f"{os.path.basename(first.path)} is {what} paired with no log ({why}): it is a run "
        "of its own, and each log is judged on its own basis; --combine makes the inputs one run"
    )


def _log_span(log: ParsedLog, paths: Sequence[str]) -> Span:
    """The first and last ``ONEDNN_VERBOSE_TIMESTAMP`` of some inputs' events, epoch ms."""
    events = log.events
    if not len(events) or "timestamp_ms" not in events:
        return None
    mask = category_mask(events["input"], set(paths).__contains__)
    stamps = events["timestamp_ms"].to_numpy()[mask]
    stamps = stamps[np.isfinite(stamps)]
    return (float(stamps.min()), float(stamps.max())) if len(stamps) else None


def _trace_span(trace: object) -> Span:
    """A trace's profiled span in epoch ms, None without a base time."""
    window = getattr(trace, "window_us", None)
    base = getattr(trace, "base_time_ms", None)
    if window is None or base is None:
        return None
    return (base + window[0] / 1e3, base + window[1] / 1e3)


def find_runs(log: ParsedLog, combine: bool = False) -> list[Run]:
    """The runs of everything ``log`` was read from: its verbose logs (inputs with at
    least one verbose line) grouped by :func:`group_runs`, with their trace and table
    files paired by :func:`pair_framework`. An input without any verbose line that is no
    profiler file (empty, program output only) is in no run: the first run's report
    lists it."""
    logs = [s.path for s in log.scans if s.parsed]
    fw = log.framework
    files = [FrameworkFile(t.path, "trace", _trace_span(t)) for t in fw.traces] if fw else []
    seen = set(logs)
    for table in fw.tables if fw is not None else []:
        if table.source not in seen:  # a table file, not a table printed inside a log
            seen.add(table.source)
            files.append(FrameworkFile(table.source, "table"))
    if combine or len(logs) + len(files) <= 1:
        every = [*logs, *(f.path for f in files)]
        if not every:
            return []
        one = len(every) == 1
        name = os.path.basename(every[0]) if one else "combined"
        how = "file" if one else "combined"
        return [Run(name, tuple(every), how, tuple(f.path for f in files))]
    runs = group_runs(logs)
    return pair_framework(runs, files, [_log_span(log, r.paths) for r in runs])


def plan_runs(paths: Sequence[str], kind_of: Callable[[str], str | None]) -> list[Run]:
    """The runs of files not read yet, by their names and ``kind_of`` each (``"log"``,
    ``"trace"``, ``"table"``; None, a file that holds nothing dnnlens reads, is a log run of
    its own, which reading then refuses with its reason): the grouping :func:`find_runs`
    makes of the same files when their timestamps decide nothing. ``fleet build`` names
    and hashes its runs before it reads them; reading can only split a planned run further
    (a trace whose span meets no timestamp of its log), which that run's analysis then
    refuses rather than blends."""
    logs: list[str] = []
    files: list[FrameworkFile] = []
    for path in paths:
        kind = kind_of(path)
        if kind in ("trace", "table"):
            files.append(FrameworkFile(path, kind))
        else:
            logs.append(path)
    if len(logs) + len(files) <= 1:
        every = [*logs, *(f.path for f in files)]
        framework = tuple(f.path for f in files)
        return [Run(os.path.basename(p), (p,), "file", framework) for p in every]
    return pair_framework(group_runs(logs), files)


def split_log(log: ParsedLog, runs: list[Run]) -> list[ParsedLog]:
    """One parsed log per run: its inputs' scans, events and diagnostics, its traces and
    tables. A run's tables are those printed in its logs and its table files."""
    if len(runs) <= 1:
        return [log]
    out = []
    traces = list(log.framework.traces) if log.framework is not None else []
    tables = list(log.framework.tables) if log.framework is not None else []
    for i, run in enumerate(runs):
        keep = set(run.paths)
        scans = [s for s in log.scans if s.path in keep]
        ev_mask = category_mask(log.events["input"], keep.__contains__)
        dg_mask = category_mask(log.diagnostics["input"], keep.__contains__)
        framework = None
        if log.framework is not None:
            mine_traces = [t for t in traces if t.path in keep]
            mine_tables = [t for t in tables if t.source in keep]
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
