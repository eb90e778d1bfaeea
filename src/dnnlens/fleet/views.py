"""The views ``fleet query`` defines over the tables (docs/fleet.md lists them).

Each is plain SQL over the five tables, so a reader with DuckDB alone can define them too
(``dnnlens fleet query DATASET --views`` prints them).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    """One view: its name, what it shows, and its SQL."""

    name: str
    doc: str
    sql: str


VIEWS = (
    View(
        "slowest_primitives",
        "per run, its primitives by their part of the typical iteration, largest first "
        "(position 1 is the one that costs the most)",
        """
        SELECT run,
               row_number() OVER (
                   PARTITION BY run ORDER BY ms_per_iteration DESC NULLS LAST, example
               ) AS position,
               kind, impl, prop_kind, problem, ms_per_iteration, share_of_iteration,
               median_ms, p95_ms, steady_exec_count, exec_count, total_time_ms,
               gflop_per_s, efficiency
        FROM primitives
        ORDER BY run, position
        """,
    ),
    View(
        "findings_by_rule",
        "per rule, how many findings in how many runs, and the time per iteration they account for",
        """
        SELECT rule, code, any_value(title) AS title,
               count(*) AS findings,
               count(DISTINCT run) AS runs,
               count(*) FILTER (WHERE severity = 'error') AS error_findings,
               count(*) FILTER (WHERE severity = 'warning') AS warning_findings,
               count(*) FILTER (WHERE severity = 'info') AS info_findings,
               sum(impact_ms_per_iteration) AS impact_ms_per_iteration_sum,
               max(impact_ms_per_iteration) AS impact_ms_per_iteration_max,
               avg(share_of_iteration) AS share_of_iteration_mean
        FROM findings
        GROUP BY rule, code
        ORDER BY runs DESC, findings DESC, rule
        """,
    ),
    View(
        "run_trend",
        "the runs of each workload in the order their inputs were last modified, each with "
        "the run before it and the change of the typical iteration since",
        """
        SELECT workload, workload_name, model, run, modified_at, typical_iteration_ms,
               lag(run) OVER w AS previous_run,
               lag(typical_iteration_ms) OVER w AS previous_typical_iteration_ms,
               typical_iteration_ms / nullif(lag(typical_iteration_ms) OVER w, 0) - 1
                   AS change_vs_previous,
               exec_count, finding_count
        FROM runs
        WINDOW w AS (PARTITION BY workload ORDER BY modified_at, run)
        ORDER BY workload, modified_at, run
        """,
    ),
)


def view_sql(view: View) -> str:
    """``CREATE VIEW name AS ...`` of ``view``, as DuckDB runs it."""
    return f"CREATE VIEW {view.name} AS\n{textwrap.dedent(view.sql).strip()};"
