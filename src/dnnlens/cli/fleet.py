"""``dnnlens fleet build|query|diff|compact``: many runs into one dataset, queried, compared
and compacted.

Exit codes: 0 done; 1 ``fleet diff`` found a run slower than the baseline by more than
``--fail-if-slower``, told from the noise as ``dnnlens diff`` tells it (a high-confidence
slowdown); 2 usage or input error (no input, a dataset built with other settings or
damaged, an unknown baseline, SQL that fails, Dask or DuckDB missing, a run whose inputs
cannot be analysed or whose name is too long for a file name, runs left unfinished by a
lost Dask scheduler: the other runs are built first), and a ``fleet diff`` that cannot
decide (no run fails, but one looks slower beyond the limit within the noise, is another
workload or has untrustworthy times: one line naming them); 3 a run failed inside
dnnlens (a bug; the other runs are built first); 4 a run's files could not be written (the
other runs are built first); 130 and 143 a build or query stopped by Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from dnnlens.defaults import DEFAULT_WINDOW_EVENTS
from dnnlens.errors import (
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OUTPUT,
    EXIT_USAGE,
    say,
)

fleet_app = typer.Typer(
    name="fleet",
    help="Many runs into one dataset: build it (Dask), query it (DuckDB), compare its runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class GroupBy(StrEnum):
    """What makes one run."""

    file = "file"
    directory = "directory"


class QueryFormat(StrEnum):
    """Output formats of ``fleet query``."""

    table = "table"
    csv = "csv"
    json = "json"


class DiffFormat(StrEnum):
    """Output formats of ``fleet diff``."""

    terminal = "terminal"
    json = "json"


def _command(name: str, **settings: Any):  # noqa: ANN202 - a decorator
    """``fleet_app.command(name)`` under the command line's last-resort handler."""
    from dnnlens.cli import _last_resort

    def wrap(function):  # noqa: ANN001, ANN202
        return fleet_app.command(name, **settings)(_last_resort(function))

    return wrap


def _fail(message: str) -> typer.Exit:
    say("error", message)
    return typer.Exit(EXIT_USAGE)


def _absolute(path: str | Path) -> str:
    return os.path.abspath(os.fspath(path))


# -- build --------------------------------------------------------------------------------


@_command("build")
def build(
    paths: list[str] = typer.Argument(
        ..., help="Log files, globs or directories: each log file is a run (see --group-by)."
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The dataset directory."),
    group_by: GroupBy = typer.Option(
        GroupBy.file,
        "--group-by",
        help="file: each log file is a run (with its profiler trace); directory: the files "
        "of one directory are one run (the ranks of one job).",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        "-w",
        min=1,
        help="Worker processes of a local Dask cluster (1: this process, no Dask). "
        "Default: this process for a small build, else one per core.",
    ),
    scheduler: str | None = typer.Option(
        None, "--scheduler", help="Address of an existing Dask scheduler (tcp://host:8786)."
    ),
    window: int = typer.Option(
        DEFAULT_WINDOW_EVENTS, "--window", min=0, help="As analyze --window (0: every event)."
    ),
    skip: int = typer.Option(0, "--skip-iterations", min=0, help="As analyze."),
    rules: list[str] = typer.Option([], "--rules", help="A rule file to run too; repeatable."),
    select: list[str] = typer.Option([], "--select", help="Run only these rules."),
    ignore: list[str] = typer.Option([], "--ignore", help="Do not run these rules."),
    config: Path | None = typer.Option(
        None, "--config", help="Rule configuration (never searched for: name it here)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress, no summary."),
    labels: list[str] = typer.Option(
        [],
        "--label",
        help="key=value stored with every run written (runs.labels: CI job, commit, date); "
        "repeatable.",
    ),
    no_compact: bool = typer.Option(
        False,
        "--no-compact",
        help="Do not compact the dataset as the build ends (default: once 200 runs have "
        "files of their own; see fleet compact).",
    ),
) -> None:
    """Analyse every run into a Parquet dataset (runs already in it are skipped)."""
    from dnnlens.fleet.build import (
        COMPACT_AT,
        BuildError,
        BuildOptions,
        build_dataset,
        parse_labels,
        plan,
    )
    from dnnlens.fleet.dataset import DatasetError, Settings
    from dnnlens.fleet.engine import EngineError, choose_engine
    from dnnlens.fleet.progress import BuildProgress, rate
    from dnnlens.reading.parallel import default_jobs
    from dnnlens.report.console import progress_enabled
    from dnnlens.rules.engine import RuleSetupError

    if workers is not None and scheduler:
        raise _fail("--workers and --scheduler: give one (the cluster's workers are its own)")
    if str(output) == "-":
        raise _fail("-o -: a dataset is a directory of files, so it cannot be standard output")
    settings = Settings(
        window_events=window or None,
        skip_iterations=skip,
        rule_files=[_absolute(r) for r in rules],
        select=list(select),
        ignore=list(ignore),
        config=_absolute(config) if config else None,
    )
    left_out: list[str] = []  # what directories and globs left out
    try:
        options = BuildOptions(
            settings,
            group_by.value,
            labels=parse_labels(labels),
            compact_at=None if no_compact else COMPACT_AT,
        )
        specs, input_errors = plan(paths, options, output, left_out)
        engine = choose_engine(workers, scheduler, sum(s.size_bytes for s in specs), default_jobs())
    except (BuildError, EngineError) as exc:
        raise _fail(str(exc)) from None
    progress = BuildProgress(terminal=progress_enabled(quiet)) if not quiet else None
    stopped: int | None = None
    try:
        with _stop_signals():
            result = build_dataset(specs, output, options, engine, progress)
    except (DatasetError, RuleSetupError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        stopped = signal.SIGINT
    except _Stopped as exc:
        stopped = exc.signum
    finally:
        if progress is not None:
            progress.close()
        engine.close()  # an owned cluster's workers end here, a looping plugin with them
    if stopped is not None:
        say(
            "error",
            f"build stopped by {signal.Signals(stopped).name}: the runs written so far are "
            "in the dataset (building again adds the others)",
        )
        raise typer.Exit(128 + stopped)
    for message in left_out if not quiet else []:
        say("note", message)
    for message in input_errors:
        say("error", message)
    rejected = 0
    for run in result.runs:
        if run.status in ("failed", "unfinished"):
            say("error", f"run {run.name or ', '.join(run.files)}: {run.message}")
        for message in run.rejected:  # the run is written from its other inputs
            say("error", f"run {run.name or ', '.join(run.files)}: {message}")
        rejected += len(run.rejected)
    if not quiet:
        unfinished = result.count("unfinished")
        say(
            "note",
            f"{result.count('written'):,} run(s) written, {result.count('skipped'):,} "
            f"skipped (already in the dataset), {result.count('failed'):,} failed"
            + (f", {unfinished:,} not finished" if unfinished else "")
            + (
                f", {len(input_errors) + rejected:,} input(s) rejected"
                if input_errors or rejected
                else ""
            )
            + (f", files of {len(left_out):,} path(s) left out" if left_out else "")
            + f", to {output} in {result.seconds:.1f} s "
            f"({rate(result.input_bytes, result.seconds)}; {result.engine})",
        )
        known = result.count("known")
        if known:
            say(
                "note",
                f"{known:,} known failure(s) skipped: their content failed in an earlier "
                "build (SELECT * FROM failures)",
            )
    if result.failures_not_recorded:
        say("error", f"failures not recorded: {result.failures_not_recorded}")
    if result.compacted is not None and not quiet:
        say("note", _compacted_text(result.compacted))
    if result.compact_failed:  # the runs are in the dataset; only the compaction is missing
        say("warning", f"not compacted: {result.compact_failed}")
    if any(r.internal for r in result.runs):
        raise typer.Exit(EXIT_INTERNAL)
    if any(r.output for r in result.runs):
        raise typer.Exit(EXIT_OUTPUT)
    if input_errors or rejected or result.count("failed") or result.count("unfinished"):
        raise typer.Exit(EXIT_USAGE)


def _compacted_text(done: Any) -> str:
    return (
        f"compacted {done.runs:,} run(s): {done.files_before:,} files "
        f"({done.bytes_before / 1e6:.1f} MB) into {done.files_after:,} "
        f"({done.bytes_after / 1e6:.1f} MB) in {done.seconds:.1f} s"
    )


# -- compact ------------------------------------------------------------------------------


@_command("compact")
def compact(
    dataset: Path = typer.Argument(..., help="The dataset directory."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary."),
) -> None:
    """Rewrite the runs' own files into a few large files per table (queries open fewer
    files); safe beside a build and a query of the same dataset."""
    from dnnlens.errors import OutputError
    from dnnlens.fleet.dataset import Dataset, DatasetError

    try:
        done = Dataset.open(dataset).compact()
    except DatasetError as exc:
        raise _fail(str(exc)) from None
    except OutputError as exc:
        say("error", str(exc))
        raise typer.Exit(EXIT_OUTPUT) from None
    if not quiet:
        say("note", _compacted_text(done) if done.runs else "nothing to compact")


class _Stopped(BaseException):
    """SIGTERM reached a build (a BaseException, as KeyboardInterrupt for SIGINT)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stop_signals() -> Iterator[None]:
    """SIGTERM raises :class:`_Stopped` in the build (SIGINT raises KeyboardInterrupt), so
    that the cluster is closed; a second signal while it closes ends the process at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_DFL)
        raise _Stopped(signum) if signum != signal.SIGINT else KeyboardInterrupt

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


# -- query --------------------------------------------------------------------------------


#: A word the command line would take for an option (``--fromat``), not SQL that starts
#: with a comment (``-- the slowest runs``).
_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?")


@_command("query", context_settings={"ignore_unknown_options": True})
def query(
    dataset: Path = typer.Argument(..., help="The dataset directory."),
    sql: str | None = typer.Argument(
        None,
        help="SQL over runs, inputs, primitives, ... ('-': read it from standard input; "
        "@FILE: from FILE).",
    ),
    sql_file: Path | None = typer.Option(
        None, "--file", help="Read the SQL from this file ('-': standard input)."
    ),
    fmt: QueryFormat = typer.Option(QueryFormat.table, "--format", "-f", help="Output format."),
    views: bool = typer.Option(False, "--views", help="Print the views' SQL and exit."),
    width: int | None = typer.Option(None, "--width", min=40, help="Table: line width."),
    allow_files: bool = typer.Option(
        False, "--allow-files", help="Let the SQL read and write files (off: dataset only)."
    ),
) -> None:
    """Run SQL on the dataset with DuckDB (tables and views defined; see docs/fleet.md)."""
    from dnnlens.fleet.dataset import Dataset, DatasetError
    from dnnlens.fleet.query import QueryError, open_query, table_lines, write_csv, write_json
    from dnnlens.fleet.views import VIEWS, view_sql
    from dnnlens.report.console import make_console, report_width

    if views:
        for view in VIEWS:
            sys.stdout.write(f"-- {view.name}: {view.doc}\n{view_sql(view)}\n\n")
        return
    if sql is not None and _OPTION_LIKE.fullmatch(sql):
        raise _fail(f"no such option: {sql} (SQL that starts with a comment: -- and a space)")
    if sql_file is not None and sql is not None:
        raise _fail("--file and SQL: give one")
    if sql_file is not None:
        sql = _read_sql(str(sql_file))
    elif sql == "-" or (sql is not None and sql.startswith("@")):
        sql = _read_sql(sql if sql == "-" else sql[1:])
    if not sql or not sql.strip():
        raise _fail("give the SQL to run (or --views)")
    try:
        with open_query(Dataset.open(dataset), sql, allow_files=allow_files) as result:
            if fmt is QueryFormat.csv:
                write_csv(result, sys.stdout)
            elif fmt is QueryFormat.json:
                write_json(result, sys.stdout)
            elif result.columns:
                console = make_console(width=width)
                from rich.text import Text

                lines = table_lines(result, report_width(sys.stdout, width) or console.width)
                for text, style in lines:
                    console.print(Text(text, style=style), soft_wrap=True)
    except (DatasetError, QueryError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        say("error", "query interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _read_sql(where: str) -> str:
    """The SQL in file ``where`` (``-``: standard input)."""
    try:
        if where == "-":
            return sys.stdin.read()
        return Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise _fail(f"{where}: cannot read the SQL ({reason})") from None


# -- diff ---------------------------------------------------------------------------------


@_command("diff")
def diff(
    dataset: Path = typer.Argument(..., help="The dataset directory."),
    baseline: str = typer.Option(
        ...,
        "--baseline",
        help="The run to compare the others with, by name or by its build's labels: "
        "label=commit=abc123 (several: comma-separated key=value).",
    ),
    fail_if_slower: str = typer.Option(
        "5%",
        "--fail-if-slower",
        help="Exit 1 for a run slower than the baseline by more than this (5% or 5) "
        "beyond the noise (every steady pass slower, as dnnlens diff); exit 2 when a run "
        "looks slower but the noise, another workload or its timing cannot tell.",
    ),
    min_share: float = typer.Option(
        1.0,
        "--min-share",
        min=0.0,
        help="A primitive counts only if it adds at least this percent of the baseline's "
        "typical iteration.",
    ),
    runs: list[str] = typer.Option(
        [],
        "--run",
        help="Runs to compare (shell pattern; repeatable). Default: the "
        "runs of the baseline's workload.",
    ),
    fmt: DiffFormat = typer.Option(DiffFormat.terminal, "--format", "-f", help="Output format."),
    top: int = typer.Option(
        20, "--top", min=1, help="Terminal: rows of runs, and primitives per run, listed."
    ),
    width: int | None = typer.Option(None, "--width", min=40, help="Terminal: line width."),
) -> None:
    """Runs and primitives slower than a baseline run; exit 1 if a run is, beyond the noise
    (CI)."""
    from dnnlens.cli.diff import parse_percent
    from dnnlens.fleet.dataset import Dataset, DatasetError
    from dnnlens.fleet.diff import baseline_run, diff_dataset
    from dnnlens.fleet.diff_text import FLEET_DIFF_RENDERERS
    from dnnlens.report.renderers.base import RenderOptions, renderer

    try:
        threshold = parse_percent(fail_if_slower)
        opened = Dataset.open(dataset)
        baseline = baseline_run(opened, baseline)
        found = diff_dataset(opened, baseline, threshold, min_share / 100, runs)
    except (ValueError, DatasetError) as exc:
        raise _fail(str(exc)) from None
    chosen = renderer(fmt.value, FLEET_DIFF_RENDERERS)
    chosen.write(found, None, RenderOptions(top=top, width=width))
    if found.gate != "pass":  # one line: the failed runs, else those it cannot decide on
        say("error", found.verdict())
        raise typer.Exit(EXIT_FINDINGS if found.gate == "fail" else EXIT_USAGE)


def register(app: typer.Typer) -> None:
    """Add ``dnnlens fleet ...`` to the command line."""
    app.add_typer(fleet_app, name="fleet")
