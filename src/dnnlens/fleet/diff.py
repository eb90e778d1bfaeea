"""``fleet diff``: the runs and primitives of a dataset that got slower than a baseline run.

A run is compared with the baseline by its typical iteration (``runs.typical_iteration_ms``,
the figure ``analyze`` and ``diff --basis typical`` use). Whether a difference is the run or
the noise of the machine is judged as ``dnnlens diff`` judges it, by the same functions
(:mod:`dnnlens.analysis.confidence`), the baseline as BASE and the run as NEW:

* the steady passes of each (the ``iterations`` rows marked ``steady``;
  :func:`dnnlens.analysis.diff.steady_times`);
* the work both share (:func:`dnnlens.analysis.diff.primitive_work` over the
  ``primitives`` rows: kind, forward or backward, and problem, by part of the typical
  iteration): full for runs of one workload, less for a run of another that ``--run``
  names;
* whether each side's times can be trusted (``runs.timing_confidence``; NULL, a run built
  before that column, is not distrusted).

Each run gets a :class:`~dnnlens.analysis.confidence.Confidence` and the decision of
``--fail-if-slower`` (:func:`dnnlens.analysis.diff.gate_decision`, the one ``diff`` takes):
``fail`` (a high-confidence slowdown beyond the threshold), ``refused`` (a slowdown beyond
it within the noise, a different workload, untrustworthy times) or ``pass``. The dataset's
verdict (:attr:`FleetDiff.gate`): ``fail`` if any run fails, else ``refused`` if any run is
refused, else ``pass``.

A primitive is the same primitive in two runs when
:func:`dnnlens.analysis.diff.primitive_identity` (the one ``diff`` uses) says so: kind,
prop_kind, problem and a reorder's layout flow (the implementation and other layouts may
differ: a changed implementation is a common reason to be slower); it is compared by its
part of the typical iteration (``primitives.ms_per_iteration``, summed over
implementations), and listed when that is more than ``threshold`` above the baseline's and
adds at least ``min_share`` of the baseline's typical iteration (so noise on a tiny
primitive is not a regression). A primitive the baseline does not have counts from zero.
The dataset has no per-pass time of a primitive, so no test of its own: a primitive's
slowdown is informational, the cause to look at, unless its run failed the gate.

The runs compared are those of the baseline's workload (:func:`dnnlens.fleet.rows.workload_of`)
unless ``runs`` names them (shell patterns on run names).
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from dnnlens.analysis.confidence import Confidence, assess, overlap_share
from dnnlens.analysis.diff import (
    Gate,
    distrust,
    gate_decision,
    primitive_identity,
    primitive_work,
    ratio,
    steady_times,
)
from dnnlens.fleet.dataset import Dataset, DatasetError

#: Dataset columns a primitive's identity is made of (:func:`primitive_identity`).
PRIMITIVE_COLUMNS = ("kind", "prop_kind", "problem", "mds")
#: Columns of the identity itself, one per part of :func:`primitive_identity`.
PRIMITIVE_KEY = ("kind", "prop_kind", "problem", "flow")


#: What a run's verdict compares, in words (the figure of ``diff --basis typical``).
BASIS_TEXT = "per typical steady iteration"
#: ``runs`` columns a compared run's figures come from.
RUN_COLUMNS = [
    "run", "workload", "workload_name", "model", "typical_iteration_ms", "steady_iterations",
    "total_time_ms", "exec_count", "timing_confidence", "timing_confidence_reason",
]  # fmt: skip


@dataclass(frozen=True)
class ComparedRun:
    """One run against the baseline: its typical iteration, the confidence of the
    comparison and what ``--fail-if-slower`` decides on it."""

    run: str
    typical_iteration_ms: float
    baseline_ms: float
    change: float | None  # (run - baseline) / baseline; None: not a number
    confidence: Confidence
    gate: Gate
    #: slower than the baseline by more than the threshold, told from noise or not
    beyond: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "typical_iteration_ms": self.typical_iteration_ms,
            "baseline_ms": self.baseline_ms,
            "change": self.change,
            "confidence": self.confidence.to_json(),
            "gate": self.gate.outcome,
            "gate_reason": self.gate.why,
            "beyond_threshold": self.beyond,
        }


@dataclass(frozen=True)
class SlowerPrimitive:
    """A primitive whose part of the typical iteration grew by more than the threshold."""

    run: str
    kind: str
    prop_kind: str
    problem: str
    impl: str
    ms_per_iteration: float
    baseline_ms_per_iteration: float
    added_ms: float
    change: float | None  # None: the baseline does not run it


@dataclass
class FleetDiff:
    """What ``fleet diff`` found."""

    baseline: str
    baseline_typical_ms: float
    threshold: float
    min_share: float
    compared: list[str] = field(default_factory=list)
    #: every compared run, with its confidence and gate, in :attr:`compared`'s order
    results: list[ComparedRun] = field(default_factory=list)
    primitives: list[SlowerPrimitive] = field(default_factory=list)
    #: the baseline's ``workload`` (hash), ``workload_name`` and ``model`` (None: NULL)
    baseline_workload: dict[str, str | None] = field(default_factory=dict)

    @property
    def runs(self) -> list[ComparedRun]:
        """The runs slower than the baseline by more than the threshold, told from noise or
        not (their gate says which)."""
        return [r for r in self.results if r.beyond]

    @property
    def failed(self) -> list[ComparedRun]:
        """The runs that fail the gate: a high-confidence slowdown beyond the threshold."""
        return [r for r in self.results if r.gate.outcome == "fail"]

    @property
    def refused(self) -> list[ComparedRun]:
        """The runs the gate cannot decide on (within the noise, different workloads,
        untrustworthy times)."""
        return [r for r in self.results if r.gate.outcome == "refused"]

    @property
    def gate(self) -> str:
        """The dataset's verdict, the exit code's: ``fail`` (exit 1) if any run fails,
        else ``refused`` (exit 2, cannot decide) if any run is refused, else ``pass``. A
        failed run is evidence enough, whatever the others; a refused one must not pass
        silently."""
        if self.failed:
            return "fail"
        return "refused" if self.refused else "pass"

    @property
    def slower(self) -> bool:
        """Whether a run is a high-confidence slowdown beyond the threshold (exit 1)."""
        return self.gate == "fail"

    def verdict(self) -> str:
        """The gate's decision in one line (stderr, and the end of the text): the runs that
        fail it, else those it cannot decide on, each with why; empty when it passes."""
        limit = f"--fail-if-slower {100 * self.threshold:g}%"
        if self.failed:
            named = _named([f"{r.run} ({_signed(r.change)})" for r in self.failed])
            also = f"; {len(self.refused)} more not decided" if self.refused else ""
            return (
                f"{len(self.failed)} run(s) slower than {self.baseline} by more than "
                f"{100 * self.threshold:g}% {BASIS_TEXT}, beyond the noise ({limit}): "
                f"{named}{also}"
            )
        if self.refused:
            whys = _named([f"{r.run}: {r.gate.why}" for r in self.refused], 3, " | ")
            return f"{limit} cannot decide on {len(self.refused)} run(s): {whys}"
        return ""

    def informational(self, p: SlowerPrimitive) -> bool:
        """Whether a primitive's slowdown is only a pointer: its run did not fail the gate
        (the dataset has no per-pass time of a primitive to test it alone)."""
        return all(r.run != p.run for r in self.failed)


def _named(items: list[str], most: int = 10, sep: str = ", ") -> str:
    """``items`` joined, the first ``most`` of them and how many more."""
    more = f"{sep}and {len(items) - most} more" if len(items) > most else ""
    return sep.join(items[:most]) + more


def _signed(change: float | None) -> str:
    return "-" if change is None else f"{100 * change:+.1f}%"


#: How ``--baseline`` names a run by its build's labels: ``label=key=value[,key=value]``.
LABEL_PREFIX = "label="


def baseline_run(dataset: Dataset, baseline: str) -> str:
    """The run ``baseline`` names: a run of that name, or the one run whose labels hold
    every ``key=value`` of ``label=key=value[,key=value...]`` (none or several: a
    :class:`DatasetError` naming them)."""
    if not baseline.startswith(LABEL_PREFIX):
        return baseline
    table = dataset.read("runs", ["run", "labels"]).to_pylist()
    if any(row["run"] == baseline for row in table):
        return baseline
    wanted = {}
    for pair in baseline[len(LABEL_PREFIX) :].split(","):
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise DatasetError(f"--baseline {baseline!r}: give label=key=value[,key=value]")
        wanted[key] = value
    found = []
    for row in table:
        try:
            labels = json.loads(row["labels"]) if row["labels"] else {}
        except ValueError:
            labels = {}
        if isinstance(labels, dict) and all(labels.get(k) == v for k, v in wanted.items()):
            found.append(row["run"])
    if len(found) == 1:
        return found[0]
    if not found:
        raise DatasetError(f"--baseline {baseline!r}: no run in {dataset.root} has these labels")
    shown = ", ".join(sorted(found)[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    raise DatasetError(
        f"--baseline {baseline!r}: {len(found)} runs have these labels ({shown}): "
        "add a label that tells them apart"
    )


def diff_dataset(
    dataset: Dataset,
    baseline: str,
    threshold: float,
    min_share: float = 0.01,
    runs: list[str] | None = None,
) -> FleetDiff:
    """Compare the runs of ``dataset`` with the run named ``baseline``."""
    table = _runs_table(dataset)
    if baseline not in table.index:
        raise DatasetError(f"--baseline {baseline!r}: no such run in {dataset.root}")
    base = table.loc[baseline]
    base_ms = float(base["typical_iteration_ms"])
    if runs:
        chosen = [r for r in table.index if any(fnmatch.fnmatchcase(r, p) for p in runs)]
    else:
        chosen = list(table.index[table["workload"] == base["workload"]])
    chosen = sorted(r for r in chosen if r != baseline)
    out = FleetDiff(baseline, base_ms, threshold, min_share, compared=chosen)
    names = ("workload", "workload_name", "model")
    out.baseline_workload = {k: v if isinstance(v := base[k], str) else None for k in names}
    if not chosen:
        return out
    passes = _steady_passes(dataset, table, [baseline, *chosen])
    prims = _primitives(dataset, [baseline, *chosen])
    work = _works(prims, [baseline, *chosen])
    for run in chosen:
        out.results.append(
            _compare(
                run,
                table.loc[run],
                base,
                passes,
                overlap_share(work[baseline], work[run]),
                threshold,
            )  # fmt: skip
        )
    out.primitives = _slower_primitives(prims, baseline, out)
    return out


def _runs_table(dataset: Dataset) -> pd.DataFrame:
    """The ``runs`` rows by run name (a run in it twice: a :class:`DatasetError`)."""
    table = dataset.read("runs", RUN_COLUMNS).to_pandas()
    twice = table["run"][table["run"].duplicated()].unique().tolist()
    if twice:  # a file of the runs table copied or edited by hand: no one row to compare
        shown = ", ".join(repr(str(r)) for r in twice[:3]) + (", ..." if len(twice) > 3 else "")
        raise DatasetError(
            f"{dataset.root}: the runs table holds run {shown} more than once (a file of "
            "the dataset copied or edited by hand?); each run must be in it once"
        )
    return table.set_index("run")


def _steady_passes(
    dataset: Dataset, table: pd.DataFrame, runs: list[str]
) -> dict[str, list[float]]:
    """Each run's steady pass times (ms), as ``diff`` takes them from an analysis."""
    rows = dataset.read("iterations", ["run", "iteration", "time_ms", "steady"], runs=runs)
    frame = rows.to_pandas().sort_values(["run", "iteration"], kind="stable")
    at = _slices(frame["run"])
    times = [float(t) if pd.notna(t) else math.nan for t in frame["time_ms"]]
    steady = [bool(s) for s in frame["steady"].fillna(False)]
    out = {}
    for run in runs:
        mine = at.get(run, slice(0, 0))
        r = table.loc[run]
        out[run] = steady_times(
            times[mine],
            steady[mine],
            int(_number(r["steady_iterations"])),
            _number(r["total_time_ms"]),
            int(_number(r["exec_count"])),
        )
    return out


def _slices(runs: pd.Series) -> dict[str, slice]:
    """Where each run's rows are in a frame sorted by run: split once, so that a diff of N
    runs reads its rows in one pass, not one mask (a pass over every row) per run."""
    names = runs.astype(str).to_numpy()
    if not len(names):
        return {}
    starts = [0, *(i for i in range(1, len(names)) if names[i] != names[i - 1]), len(names)]
    return {str(names[a]): slice(a, b) for a, b in zip(starts, starts[1:], strict=False)}


def _number(value: Any) -> float:
    """A cell as a float, 0 for NULL."""
    return float(value) if pd.notna(value) else 0.0


def _untrusted(row: pd.Series) -> str | None:
    """Why a run's times are not to be trusted, or None (NULL: a run built before
    ``timing_confidence`` was stored is not distrusted)."""
    if row["timing_confidence"] != "low":
        return None
    reason = row["timing_confidence_reason"]
    return str(reason) if isinstance(reason, str) and reason else "slowed as a whole"


def _compare(
    run: str,
    row: pd.Series,
    base: pd.Series,
    passes: dict[str, list[float]],
    overlap: float | None,
    threshold: float,
) -> ComparedRun:
    """One run against the baseline: ``diff``'s confidence and gate on the dataset's rows."""
    base_ms, run_ms = _number(base["typical_iteration_ms"]), _number(row["typical_iteration_ms"])
    confidence = assess(
        passes[str(base.name)],
        passes[run],
        (base_ms, run_ms),
        overlap,
        distrust=distrust(_untrusted(base), _untrusted(row)),
    )
    q = ratio(run_ms, base_ms)
    change = None if q is None else q - 1.0
    gate = gate_decision(confidence, change, threshold, BASIS_TEXT, run, "the baseline")
    beyond = change is not None and change > threshold
    return ComparedRun(run, run_ms, base_ms, change, confidence, gate, beyond)


def _primitives(dataset: Dataset, runs: list[str]) -> pd.DataFrame:
    """The ``primitives`` rows of ``runs``, each with its identity's layout flow."""
    columns = ["run", *PRIMITIVE_COLUMNS, "impl", "ms_per_iteration", "total_time_ms"]
    prims = dataset.read("primitives", columns, runs=runs).to_pandas()
    prims = prims.fillna(dict.fromkeys(PRIMITIVE_COLUMNS, ""))
    ids = [
        primitive_identity(str(k), str(pk), str(pr), str(m))
        for k, pk, pr, m in zip(
            prims["kind"], prims["prop_kind"], prims["problem"], prims["mds"], strict=True
        )
    ]
    prims["flow"] = [i[3] for i in ids]
    prims["ms_per_iteration"] = prims["ms_per_iteration"].fillna(0.0)
    prims["total_time_ms"] = prims["total_time_ms"].fillna(0.0)
    return prims


def _works(prims: pd.DataFrame, runs: list[str]) -> dict[str, dict[tuple, float]]:
    """Each run's time per unit of work, as ``diff`` measures the work two runs share."""
    prims = prims.sort_values("run", kind="stable")
    at = _slices(prims["run"])
    columns = [
        prims["kind"].astype(str).tolist(),
        prims["prop_kind"].astype(str).tolist(),
        prims["problem"].astype(str).tolist(),
        prims["ms_per_iteration"].astype(float).tolist(),
        prims["total_time_ms"].astype(float).tolist(),
    ]
    out = {}
    for run in runs:
        mine = at.get(run, slice(0, 0))
        out[run] = primitive_work(zip(*(c[mine] for c in columns), strict=True))
    return out


def _slower_primitives(prims: pd.DataFrame, baseline: str, out: FleetDiff) -> list[SlowerPrimitive]:
    keys = ["run", *PRIMITIVE_KEY]
    summed = prims.groupby(keys, sort=True)["ms_per_iteration"].sum().reset_index()
    impls: dict[tuple, set[str]] = {}  # a Python pass: a lambda per group costs far more
    for *key, impl in zip(*(prims[k] for k in keys), prims["impl"], strict=True):
        if isinstance(impl, str):
            impls.setdefault(tuple(key), set()).add(impl)
    summed["impl"] = [
        ",".join(sorted(impls.get(key, ()))) for key in zip(*(summed[k] for k in keys), strict=True)
    ]
    mine = summed[summed["run"] == baseline]
    base_keys = zip(*(mine[k] for k in PRIMITIVE_KEY), strict=True)
    base = dict(zip(base_keys, mine["ms_per_iteration"].tolist(), strict=True))
    floor = out.min_share * out.baseline_typical_ms
    found = []
    for row in summed[summed["run"] != baseline].itertuples(index=False):
        key = tuple(getattr(row, k) for k in PRIMITIVE_KEY)
        before = float(base.get(key, 0.0))
        now = float(row.ms_per_iteration)
        added = now - before
        if added <= 0 or added < floor or now <= before * (1 + out.threshold):
            continue
        found.append(
            SlowerPrimitive(
                run=row.run,
                kind=row.kind,
                prop_kind=row.prop_kind,
                problem=row.problem,
                impl=row.impl,
                ms_per_iteration=now,
                baseline_ms_per_iteration=before,
                added_ms=added,
                change=added / before if before > 0 else None,
            )
        )
    return sorted(found, key=lambda p: (p.run, -p.added_ms))


def to_doc(d: FleetDiff) -> dict[str, object]:
    """The comparison as JSON data."""
    return {
        "baseline": d.baseline,
        "baseline_typical_iteration_ms": d.baseline_typical_ms,
        "threshold": d.threshold,
        "min_share": d.min_share,
        "compared": d.compared,
        "baseline_workload": d.baseline_workload,
        "runs": [r.to_json() for r in d.results],
        "slower_runs": [r.to_json() for r in d.runs],
        "slower_primitives": [
            {**asdict(p), "informational": d.informational(p)} for p in d.primitives
        ],
        "gate": d.gate,
        "slower": d.slower,
    }
