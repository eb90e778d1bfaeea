"""Run the top primitives alone in benchdnn and put the isolated times beside the log's.

The reproducers are those of ``dnnlens export benchdnn`` (:mod:`dnnlens.report.benchdnn`).
Each runs in its own benchdnn process in performance mode (``--mode=P``) with a performance
template of our own, ``dnnlens-perf,%prb%,%-time%,%0time%``: benchdnn's best and average
time per execution in milliseconds (benchdnn's ``tests/benchdnn/doc/knobs_perf_report.md``).

The difference between the isolated time and the time in the workload is the point: cold
caches, framework work between primitives, oversubscribed threads and layout changes show up
there, not in the kernel. dnnlens never builds benchdnn; the user passes its path.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.benchdnn import top_entries

PERF_PREFIX = "dnnlens-perf"
PERF_TEMPLATE = f"--perf-template={PERF_PREFIX},%prb%,%-time%,%0time%"


@dataclass
class BenchResult:
    """One top primitive: its time in the workload and alone in benchdnn."""

    kind: str
    impl: str
    problem: str
    driver: str
    command: list[str]
    count: int
    workload_mean_ms: float
    isolated_min_ms: float | None = None
    isolated_avg_ms: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def slowdown(self) -> float | None:
        """How many times slower the primitive ran in the workload than alone (best time)."""
        if not self.isolated_min_ms:
            return None
        return self.workload_mean_ms / self.isolated_min_ms

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of one result."""
        return {
            "kind": self.kind,
            "impl": self.impl,
            "problem": self.problem,
            "driver": self.driver,
            "command": self.command,
            "count": self.count,
            "workload_mean_ms": self.workload_mean_ms,
            "isolated_min_ms": self.isolated_min_ms,
            "isolated_avg_ms": self.isolated_avg_ms,
            "slowdown": self.slowdown,
            "error": self.error,
            "notes": self.notes,
        }


def parse_perf_line(text: str) -> tuple[float, float] | None:
    """``(best_ms, avg_ms)`` from our template's line, or ``None`` if ``text`` is not one."""
    line = text.strip()
    if not line.startswith(PERF_PREFIX + ","):
        return None
    parts = line.rsplit(",", 2)  # the problem may hold anything but its last two fields
    try:
        return float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None


def run_benchdnn(
    binary: str,
    analysis: Analysis,
    top: int = 5,
    timeout_s: float = 300.0,
    extra_args: tuple[str, ...] = (),
) -> list[BenchResult]:
    """Run the reproducers of the ``top`` primitives of a run's ``analysis`` (the one
    ``analyze`` reports, :func:`dnnlens.app.session.open_inputs`) with ``binary``.

    A primitive without a reproducer, a benchdnn that fails, times out or prints no
    performance line gives a result carrying ``error``; the others still run. Raises
    ``FileNotFoundError``/``PermissionError`` only when ``binary`` cannot be started at all.
    """
    results: list[BenchResult] = []
    for entry in top_entries(analysis, top):  # the report's ranking
        r = entry.record
        mean = entry.time_ms / entry.count if entry.count else float("nan")
        if entry.case is None:
            results.append(
                BenchResult(
                    r.kind,
                    r.impl,
                    r.problem,
                    "",
                    [],
                    entry.count,
                    mean,
                    error=f"no benchdnn reproducer: {entry.reason}",
                )
            )
            continue
        case = entry.case
        command = [
            binary,
            "--mode=P",
            f"--{case.driver}",
            PERF_TEMPLATE,
            *extra_args,
            *case.options,
            case.problem,
        ]
        result = BenchResult(
            r.kind,
            r.impl,
            r.problem,
            case.driver,
            command,
            entry.count,
            mean,
            notes=list(case.notes),
        )
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            result.error = f"benchdnn did not finish in {timeout_s:g} s"
            results.append(result)
            continue
        times = [t for t in map(parse_perf_line, done.stdout.splitlines()) if t is not None]
        if times:
            result.isolated_min_ms, result.isolated_avg_ms = times[-1]
        else:
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
            result.error = (
                f"benchdnn exited with {done.returncode} and printed no "
                f"performance line: {last[0][:200]}"
            )
        results.append(result)
    return results
