"""``fleet diff``: the runs and primitives of a dataset that got slower than a baseline run.

A run is compared with the baseline by its typical iteration (``runs.typical_iteration_ms``,
the figure ``analyze`` and ``diff --basis typical`` use); it is slower when that is more
than ``threshold`` (a fraction) above the baseline's. A primitive is the same primitive in
two runs when :func:`dnnlens.analysis.diff.primitive_identity` (the one ``diff`` uses) says
so: kind, prop_kind, problem and a reorder's layout flow (the implementation and other
layouts may differ: a changed implementation is a common reason to be slower); it
is compared by its part of the typical iteration (``primitives.ms_per_iteration``, summed
over implementations), and listed when that is more than ``threshold`` above the
baseline's and adds at least ``min_share`` of the baseline's typical iteration (so noise
on a tiny primitive is not a regression). A primitive the baseline does not have counts
from zero.

The runs compared are those of the baseline's workload (:func:`dnnlens.fleet.rows.workload_of`)
unless ``runs`` names them (shell patterns on run names).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass, field

from dnnlens.analysis.diff import primitive_identity
from dnnlens.fleet.dataset import Dataset, DatasetError

#: Dataset columns a primitive's identity is made of (:func:`primitive_identity`).
PRIMITIVE_COLUMNS = ("kind", "prop_kind", "problem", "mds")
#: Columns of the identity itself, one per part of :func:`primitive_identity`.
PRIMITIVE_KEY = ("kind", "prop_kind", "problem", "flow")


@dataclass(frozen=True)
class SlowerRun:
    """A run whose typical iteration is above the baseline's by more than the threshold."""

    run: str
    typical_iteration_ms: float
    baseline_ms: float
    change: float  # (run - baseline) / baseline


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
    runs: list[SlowerRun] = field(default_factory=list)
    primitives: list[SlowerPrimitive] = field(default_factory=list)
    #: the baseline's ``workload`` (hash), ``workload_name`` and ``model`` (None: NULL)
    baseline_workload: dict[str, str | None] = field(default_factory=dict)

    @property
    def slower(self) -> bool:
        """Whether anything got slower (the exit code's verdict)."""
        return bool(self.runs or self.primitives)


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
    names = ["run", "workload", "workload_name", "model", "typical_iteration_ms"]
    table = dataset.read("runs", names).to_pandas()
    twice = table["run"][table["run"].duplicated()].unique().tolist()
    if twice:  # a file of the runs table copied or edited by hand: no one row to compare
        shown = ", ".join(repr(str(r)) for r in twice[:3]) + (", ..." if len(twice) > 3 else "")
        raise DatasetError(
            f"{dataset.root}: the runs table holds run {shown} more than once (a file of "
            "the dataset copied or edited by hand?); each run must be in it once"
        )
    table = table.set_index("run")
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
    out.baseline_workload = {k: v if isinstance(v := base[k], str) else None for k in names[1:4]}
    if not chosen:
        return out
    for run in chosen:
        ms = float(table.loc[run, "typical_iteration_ms"])
        if base_ms > 0 and ms > base_ms * (1 + threshold):
            out.runs.append(SlowerRun(run, ms, base_ms, (ms - base_ms) / base_ms))
    out.primitives = _slower_primitives(dataset, baseline, chosen, out)
    return out


def _slower_primitives(
    dataset: Dataset, baseline: str, chosen: list[str], out: FleetDiff
) -> list[SlowerPrimitive]:
    columns = ["run", *PRIMITIVE_COLUMNS, "impl", "ms_per_iteration"]
    prims = dataset.read("primitives", columns, runs=[baseline, *chosen]).to_pandas()
    prims = prims.fillna(dict.fromkeys(PRIMITIVE_COLUMNS, ""))
    ids = [
        primitive_identity(str(k), str(pk), str(pr), str(m))
        for k, pk, pr, m in zip(
            prims["kind"], prims["prop_kind"], prims["problem"], prims["mds"], strict=True
        )
    ]
    prims["flow"] = [i[3] for i in ids]
    prims["ms_per_iteration"] = prims["ms_per_iteration"].fillna(0.0)
    summed = prims.groupby(["run", *PRIMITIVE_KEY], sort=True).agg(
        ms_per_iteration=("ms_per_iteration", "sum"),
        impl=("impl", lambda s: ",".join(sorted({v for v in s if isinstance(v, str)}))),
    )
    summed = summed.reset_index()
    base = summed[summed["run"] == baseline].set_index(list(PRIMITIVE_KEY))["ms_per_iteration"]
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
        "slower_runs": [asdict(r) for r in d.runs],
        "slower_primitives": [asdict(p) for p in d.primitives],
        "slower": d.slower,
    }
