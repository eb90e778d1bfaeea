"""``fleet build``: analyse every run named by the paths into the dataset, on an engine.

For each run: hash its files (a task, for up to :data:`HASH_BATCH_RUNS` runs); a run whose
content hash is in the dataset already is skipped; else it gets its name
(:class:`~dnnlens.fleet.discover.RunNames`) and is analysed (a task, after one task per
byte range of each large file), and its rows are published whole
(:meth:`~dnnlens.fleet.dataset.Dataset.publish_many`) with the runs that finished in the
same second or so (:data:`BATCH_SECONDS`, :data:`BATCH_RUNS`). A run that fails is reported
and the others go on: its inputs could not be analysed
(:class:`~dnnlens.fleet.work.RunFailure`) or its name cannot be a file name there (too
long), its files could not be written (``output``), a task raised (a bug, ``internal``), or
the engine was lost before it finished (``unfinished``: build again to add it).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from dnnlens.app.session import Settings as SessionSettings
from dnnlens.errors import OutputError
from dnnlens.fleet.dataset import Compacted, Dataset, DatasetError, Pending, Settings
from dnnlens.fleet.discover import RunNames, RunSpec, discover
from dnnlens.fleet.engine import DaskEngine, EngineLost, SerialEngine
from dnnlens.fleet.rows import RunFile, RunIdentity
from dnnlens.fleet.work import (
    RunFailure,
    RunJob,
    RunTables,
    analyse_run,
    content_hash,
    hash_runs,
    scan_range,
)
from dnnlens.io.inputs import splittable
from dnnlens.reading.parallel import SPLIT_MIN_BYTES, line_ranges
from dnnlens.rules.config import load_config
from dnnlens.rules.engine import RuleOptions, build_registry, selected_rules

#: Files per table holding a run of its own or a small group (below
#: :data:`~dnnlens.fleet.dataset.MERGE_BELOW` runs) at which a build ends by compacting the
#: dataset. ``fleet query`` pays about 0.3 ms per file it opens (1,078 runs: 2.14 s over
#: 5,390 files, 0.36 s compacted into 5): 200 a table are 1,000 files, about 0.3 s more on
#: every query, while compacting them takes one to two seconds, once; fewer would make
#: the build pay those seconds for less. Small groups are merged as later builds compact.
COMPACT_AT = 200
#: On a cluster, the longest a finished run waits to be published with others, so that the
#: build writes five Parquet files per batch of runs, not per run. This process publishes
#: for every worker: at about 9 ms a run (five files of about 1 ms whatever their rows, the
#: lock, the index), it would cap any cluster at some 110 small runs a second, and on a
#: machine of few cores it takes that time from the workers. A second holds the 25 runs two
#: workers finish on small logs, keeps progress lines current, and is what a SIGKILL can
#: lose (SIGINT and SIGTERM publish what is held first). A build in this process publishes
#: each run alone as it ends (publishing is a seventh of its time, and a run keeps files of
#: its own until a compaction).
BATCH_SECONDS = 1.0
#: At most this many runs a batch: a run's rows are some 100 KB in memory, so a batch
#: stays under about 50 MB, and its group (below the 1,000 runs
#: :data:`~dnnlens.fleet.dataset.MERGE_BELOW` keeps) is merged when a build compacts.
BATCH_RUNS = 500
#: Runs whose files one task hashes: at most this many, and no more bytes than
#: :data:`HASH_BATCH_BYTES` (unless one run alone has more). A task costs a Dask scheduler
#: some 4 ms on a machine of two busy cores, 40 times what hashing a 60-line log does; 32
#: runs make it 1% of theirs, while the runs of a batch still start their analysis within
#: a few milliseconds of each other.
HASH_BATCH_RUNS = 32
#: 64 MiB is about 0.2 s of SHA-256 on one core: a batch of large logs stays one of many
#: tasks the workers share, not the whole hashing of a build on one worker.
HASH_BATCH_BYTES = 64 << 20


class BuildError(Exception):
    """Nothing to build (no input at all): one line, a usage error."""


@dataclass(frozen=True)
class BuildOptions:
    """How to build: the settings every run is analysed with, grouping, splitting."""

    settings: Settings
    group: str = "file"
    #: A plain file at least this large is scanned in byte ranges of about this size.
    split_bytes: int = SPLIT_MIN_BYTES
    #: ``--label key=value`` pairs stored with every run this build writes (``runs.labels``)
    labels: tuple[tuple[str, str], ...] = ()
    #: compact the dataset as the build ends once this many files per table hold a run of
    #: its own or a small group (``None``: never, ``--no-compact``); see :data:`COMPACT_AT`
    compact_at: int | None = None

    def session_settings(self) -> SessionSettings:
        """What every run is analysed with: ``analyze``'s settings for these options
        (``--window``, ``--skip-iterations``, rules), the configuration only the one named,
        never searched for (a worker's current directory is not the user's)."""
        s = self.settings
        return SessionSettings(
            skip_iterations=s.skip_iterations,
            window=s.window_events or 0,
            rules=list(s.rule_files),
            select=list(s.select),
            ignore=list(s.ignore),
            config=s.config,
            search_config=False,
            announce_python=False,
        )

    def rule_options(self) -> RuleOptions:
        """The rule options of every run (of :meth:`session_settings`)."""
        return self.session_settings().rule_options()


@dataclass
class RunReport:
    """What became of one run."""

    files: tuple[str, ...]
    status: str  # written, skipped, failed, unfinished, known (a known failure, skipped)
    name: str | None = None
    message: str = ""
    internal: bool = False
    size_bytes: int = 0
    #: its files could not be written (a full disk, no permission): exit 4, not 2
    output: bool = False
    #: inputs of the run that were rejected (one line each); the run is of the others
    rejected: tuple[str, ...] = ()
    #: the failure's class (:data:`~dnnlens.fleet.schema.FAILURE_CLASSES`), for a failure
    #: (``partial``: written from the inputs that were not rejected)
    failure: str = ""
    content_hash: str | None = None


@dataclass
class BuildResult:
    """Every run's outcome, in the order of the runs."""

    runs: list[RunReport] = field(default_factory=list)
    seconds: float = 0.0
    engine: str = ""
    #: why the failures could not be recorded in the dataset, or ""
    failures_not_recorded: str = ""
    #: what compacting the dataset as the build ended did (``None``: not compacted)
    compacted: Compacted | None = None
    #: why compacting it failed, or ""
    compact_failed: str = ""

    def count(self, status: str) -> int:
        """Runs with that status."""
        return sum(r.status == status for r in self.runs)

    @property
    def input_bytes(self) -> int:
        """Bytes of every run's files."""
        return sum(r.size_bytes for r in self.runs)


class Progress(Protocol):
    """What a build tells as it goes (see :mod:`dnnlens.fleet.progress`)."""

    def start(self, runs: int, total_bytes: int) -> None: ...

    def advance(self, report: RunReport) -> None: ...


class _Silent:
    def start(self, runs: int, total_bytes: int) -> None:
        pass

    def advance(self, report: RunReport) -> None:
        pass


def check_rules(options: BuildOptions) -> None:
    """Read the rule setup once here, so a mistake in it stops the build before any run
    (:class:`~dnnlens.rules.engine.RuleSetupError`) and a Python rule file is announced
    once, not by every worker."""
    announcing = replace(options.rule_options(), announce_python=True)
    config = load_config(announcing.config_path, search=False)
    selected_rules(build_registry(announcing, config), announcing, config)


def plan(
    paths: list[str],
    options: BuildOptions,
    dataset: Path | None = None,
    notes: list[str] | None = None,
) -> tuple[list[RunSpec], list[str]]:
    """The runs named by ``paths`` (files inside ``dataset`` left out) and the paths that
    name nothing; none at all is an error (:class:`BuildError`). ``notes`` gets what the
    directories and globs left out."""
    specs, errors = discover(paths, options.group, dataset, notes)
    if not specs:
        raise BuildError("; ".join(errors) or "no input")
    return specs, errors


def build_dataset(
    specs: list[RunSpec],
    root: Path,
    options: BuildOptions,
    engine: SerialEngine | DaskEngine,
    progress: Progress | None = None,
) -> BuildResult:
    """Analyse the runs ``specs`` (see :func:`plan`) into the dataset at ``root``."""
    started = time.perf_counter()
    check_rules(options)
    dataset = Dataset.for_build(root, options.settings)
    build = _Build(specs, dataset, options, engine, progress or _Silent())
    result = BuildResult(engine=engine.description)
    result.runs = build.run()
    try:
        dataset.record_failures([_failure_row(r) for r in result.runs if r.failure])
    except OutputError as exc:
        result.failures_not_recorded = str(exc)
    at = options.compact_at
    if at is not None and dataset.small_files() >= at:
        try:
            result.compacted = dataset.compact()
        except (OutputError, DatasetError) as exc:  # the runs are written: they stay as they are
            result.compact_failed = str(exc)
    result.seconds = time.perf_counter() - started
    return result


class _Build:
    """The state of one build: runs hashed, named, analysed, written."""

    def __init__(
        self,
        specs: list[RunSpec],
        dataset: Dataset,
        options: BuildOptions,
        engine: SerialEngine | DaskEngine,
        progress: Progress,
    ) -> None:
        self.specs = specs
        self.dataset = dataset
        self.options = options
        self.engine = engine
        self.progress = progress
        self.names = RunNames(specs, set(dataset.run_names()))
        self.reports: dict[int, RunReport] = {}
        self.jobs: dict[int, RunJob] = {}
        self.pending: dict[str, int] = {}  # content hash -> the run being analysed
        self.waiting: dict[str, list[int]] = {}  # content hash -> runs of it, waiting
        self.digests: dict[int, str] = {}
        self.known = dataset.known_failures()
        self.rejected: dict[int, tuple[str, ...]] = {}  # a run's rejected inputs
        self._hash_batches = _hash_batches(specs)  # the runs each hashing task takes
        self._batch: list[tuple[int, dict[str, Any]]] = []  # runs analysed, to publish
        # on a cluster, this process publishes for every worker: it holds runs to publish
        # together; a build in this process publishes each run as it ends
        self.batch_seconds = BATCH_SECONDS if engine.remote else 0.0
        self.batch_runs = BATCH_RUNS if engine.remote else 1
        self._held_since = 0.0  # when the first run of the batch was held

    def run(self) -> list[RunReport]:
        self.progress.start(len(self.specs), sum(s.size_bytes for s in self.specs))
        for n, batch in enumerate(self._hash_batches):
            self.engine.submit(f"hash:{n}", hash_runs, tuple(self.specs[i].files for i in batch))
        try:
            for key, result, error in self.engine.completed(self._patience):
                if key:
                    self._outcome(key, result, error)
                if self._batch and (not key or len(self._batch) >= self.batch_runs):
                    self._publish()
        finally:  # a stop signal too: the runs finished are published first
            self._publish()
        return [self.reports[i] for i in range(len(self.specs))]

    def _outcome(self, key: str, result: Any, error: BaseException | None) -> None:
        step, index = key.split(":")
        if step == "hash":
            batch = self._hash_batches[int(index)]
            results = result if error is None else [None] * len(batch)
            for i, files in zip(batch, results, strict=True):
                self._run_outcome(step, i, files, error)
        else:
            self._run_outcome(step, int(index), result, error)

    def _run_outcome(self, step: str, i: int, result: Any, error: BaseException | None) -> None:
        if isinstance(error, EngineLost):
            self._done(i, "unfinished", str(error), failure="unfinished")
        elif error is not None:
            self._done(i, "failed", _internal(error), internal=True, failure="internal")
        elif isinstance(result, RunFailure):
            self._done(i, "failed", result.message, failure="input")
        elif step == "hash":
            self._hashed(i, result)
        else:
            self._hold(i, result)

    def _patience(self) -> float | None:
        """How long the engine may wait for a task before the runs held are published."""
        if not self._batch:
            return None
        return self._held_since + self.batch_seconds - time.monotonic()

    def _hold(self, i: int, result: RunTables) -> None:
        """Keep run ``i``'s rows to publish with the next batch."""
        if not self._batch:
            self._held_since = time.monotonic()
        self.rejected[i] = result.rejected
        tables = result.tables
        if self.options.labels:
            tables = {**tables, "runs": _labelled(tables["runs"], self.options.labels)}
        self._batch.append((i, tables))

    def _publish(self) -> None:
        """Publish the runs held, whole, in one batch; each is reported."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        pending = [self._pending(i, tables) for i, tables in batch]
        try:
            placed = self.dataset.publish_many(pending)
        except OutputError as exc:
            for (i, _), item in zip(batch, pending, strict=True):
                self._done(i, "failed", str(exc), name=item.run, output=True, failure="output")
            return
        for (i, _), done in zip(batch, placed, strict=True):
            rejected = self.rejected.get(i, ())
            if done.written and rejected:  # a partial run: its rejected inputs are said
                self._done(i, "written", "; ".join(rejected), name=done.name, failure="partial")
            elif done.written:
                self._done(i, "written", name=done.name)
            else:
                self._done(i, "skipped", f"same content as run {done.name}", name=done.name)

    def _pending(self, i: int, tables: dict[str, Any]) -> Pending:
        spec, identity = self.specs[i], self.jobs[i].identity
        return Pending(
            identity.name,
            identity.content_hash,
            tables,
            lambda taken: self.names.name(spec, identity.content_hash, taken),
        )

    def _hashed(self, i: int, files: tuple[RunFile, ...]) -> None:
        spec = self.specs[i]
        digest = self.digests[i] = content_hash(files)
        same = self.dataset.run_with(digest)
        if same is not None:
            self._done(i, "skipped", f"same content as run {same}", name=same)
            return
        if digest in self.pending:  # a run of this content is being analysed: as it goes
            self.waiting.setdefault(digest, []).append(i)
            return
        known = self.known.get(digest)
        if known is not None:
            message = f"failed before ({known['exit_class']}): {known['reason']}"
            self._done(i, "known", message)
            return
        name = self.names.name(spec, digest)
        problem = self.dataset.name_problem(name)
        if problem is not None:
            self._done(i, "failed", problem, failure="name")
            return
        identity = RunIdentity(name, digest, files)
        self.pending[digest] = i
        job = RunJob(identity, self.options.session_settings())
        self.jobs[i] = job
        parts = self._ranges(files)
        self.engine.submit(f"run:{i}", analyse_run, job, parts=parts or None)

    def _ranges(self, files: tuple[RunFile, ...]) -> dict[str, list[tuple[Any, tuple]]]:
        """Byte-range scan tasks of each file large enough to split."""
        size = self.options.split_bytes
        out = {}
        for f in files:
            if f.size_bytes >= size and splittable(f.path):
                spans = line_ranges(f.path, f.size_bytes, max(1, math.ceil(f.size_bytes / size)))
                out[f.path] = [(scan_range, (f.path, a, b)) for a, b in spans]
        return {p: tasks for p, tasks in out.items() if len(tasks) > 1}

    def _done(
        self, i: int, status: str, message: str = "", name: str | None = None,
        internal: bool = False, output: bool = False, failure: str = "",
    ) -> None:  # fmt: skip
        spec = self.specs[i]
        job = self.jobs.pop(i, None)
        if job is not None and name is None:
            name = job.identity.name
        digest = self.digests.get(i)
        report = RunReport(
            spec.files, status, name, message, internal, spec.size_bytes, output,
            rejected=self.rejected.pop(i, ()), failure=failure, content_hash=digest,
        )  # fmt: skip
        self.reports[i] = report
        self.progress.advance(report)
        if digest is not None and self.pending.get(digest) == i:
            del self.pending[digest]
            for other in self.waiting.pop(digest, []):
                self._same_as(other, report)

    def _same_as(self, i: int, first: RunReport) -> None:
        """Run ``i`` has the content of run ``first``, which was analysed meanwhile: it is
        in the dataset as that run, or it fails as that run failed."""
        if first.status in ("written", "skipped"):
            self._done(i, "skipped", f"same content as run {first.name}", name=first.name)
            return
        message = f"same content as {first.files[0]}: {first.message}"
        self._done(
            i, first.status, message, internal=first.internal, output=first.output,
            failure=first.failure,
        )  # fmt: skip


def _hash_batches(specs: list[RunSpec]) -> list[list[int]]:
    """The runs, in order, cut into the batches one hashing task takes each
    (:data:`HASH_BATCH_RUNS`, :data:`HASH_BATCH_BYTES`)."""
    out: list[list[int]] = []
    size = 0
    for i, spec in enumerate(specs):
        if not out or len(out[-1]) >= HASH_BATCH_RUNS or size + spec.size_bytes > HASH_BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(i)
        size += spec.size_bytes
    return out


def _labelled(rows: Any, labels: tuple[tuple[str, str], ...]) -> Any:
    """The ``runs`` rows with ``labels`` as their ``labels`` column (a JSON object)."""
    import pyarrow as pa

    text = json.dumps(dict(labels), sort_keys=True)
    index = rows.schema.get_field_index("labels")
    return rows.set_column(index, "labels", pa.array([text] * len(rows), pa.string()))


def parse_labels(values: list[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` words as pairs (a key given twice: the last value); a word without
    ``=`` or with an empty key is a :class:`BuildError`."""
    out: dict[str, str] = {}
    for word in values:
        key, equals, value = word.partition("=")
        if not equals or not key.strip():
            raise BuildError(f"--label {word!r}: give key=value (job=nightly, commit=abc123)")
        out[key.strip()] = value
    return tuple(out.items())


def _failure_row(report: RunReport) -> dict[str, Any]:
    """The ``failures`` row of a run that failed (its time and version added on writing)."""
    return {
        "path": report.files[0],
        "inputs": list(report.files),
        "content_hash": report.content_hash,
        "reason": report.message,
        "exit_class": report.failure,
    }


def _internal(error: BaseException) -> str:
    detail = (str(error).strip().splitlines() or [""])[0][:300]
    return f"internal error: {type(error).__name__}: {detail}"
