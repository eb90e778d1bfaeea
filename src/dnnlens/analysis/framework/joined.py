"""The framework view joined with a oneDNN verbose log of the same run.

Each primitive execution is linked to the innermost framework op that ran it
(:mod:`dnnlens.analysis.linking`); here the links of the steady steps become typical
milliseconds per step, with the same statistic as the rest of the view (per primitive and
op: executions per steady step x median time), per op name and per phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import str_values
from dnnlens.analysis.framework.names import PHASES
from dnnlens.analysis.framework.rows import OpRows
from dnnlens.analysis.framework.typical import compose, split, typical
from dnnlens.analysis.linking import LinkResult, link_trace_events

PRIMITIVE_COLUMNS = ("name", "phase", "kind", "calls_per_step", "ms_per_step")


@dataclass
class Joined:
    """oneDNN time per steady step by (op name, phase, primitive kind), and the link run."""

    primitives: pd.DataFrame
    link: LinkResult
    notes: list[str] = field(default_factory=list)

    def by_name(self) -> pd.Series:
        """oneDNN ms per step of each op name."""
        return self.primitives.groupby("name")["ms_per_step"].sum()

    def by_phase(self) -> pd.Series:
        """oneDNN ms per step of each phase."""
        return self.primitives.groupby("phase")["ms_per_step"].sum()

    def kinds_of(self, name: str) -> list[dict[str, Any]]:
        """Primitive kinds an op name runs: calls and ms per step, largest first."""
        rows = self.primitives[self.primitives["name"] == name]
        g = rows.groupby("kind")[["calls_per_step", "ms_per_step"]].sum()
        g = g.sort_values("ms_per_step", ascending=False)
        return [
            {
                "kind": str(k),
                "calls_per_step": float(r.calls_per_step),
                "ms_per_step": float(r.ms_per_step),
            }
            for k, r in g.iterrows()
        ]


def join(
    rows: OpRows,
    steady: np.ndarray,
    steady_steps: int,
    events: pd.DataFrame,
    markers: dict[str, list[tuple[int, str]]],
    link: LinkResult | None = None,
) -> Joined:
    """Sum the steady links of ``events`` to the trace of ``rows`` per step. ``link`` is
    the linking already made of those events (the analysis's one); made here without."""
    if link is None:
        link = link_trace_events(events, rows.trace, markers)
    frame = link.links
    if frame.empty:
        empty = pd.DataFrame({c: [] for c in PRIMITIVE_COLUMNS})
        return Joined(empty, link, list(link.notes))
    op = frame["op"].to_numpy(dtype=np.int64)
    keep = steady[op] & rows.main[op]
    op = op[keep]
    record = events.loc[frame["event"].to_numpy()[keep], "record"].to_numpy(dtype=np.int64)
    kinds = str_values(frame["kind"])[keep]
    kind_names, kind_codes = np.unique(kinds, return_inverse=True)
    sizes = (len(PHASES), len(rows.names), len(kind_names), int(record.max(initial=0)) + 1)
    key = compose(
        (rows.phase[op], sizes[0]),
        (rows.name[op], sizes[1]),
        (kind_codes, sizes[2]),
        (record, sizes[3]),
    )
    table = typical(key, frame["time_ms"].to_numpy()[keep] * 1e3, steady_steps)
    phase, name, kind, _ = split(table["key"].to_numpy(), *sizes)
    primitives = pd.DataFrame(
        {
            "name": rows.names[name] if len(name) else [],
            "phase": [PHASES[i] for i in phase],
            "kind": kind_names[kind] if len(kind) else [],
            "calls_per_step": table["calls_per_step"].to_numpy(),
            "ms_per_step": table["ms_per_step"].to_numpy(),
        },
        columns=list(PRIMITIVE_COLUMNS),
    )
    notes = list(link.notes)
    dropped = int((~keep).sum())
    if dropped:
        notes.append(
            f"{dropped:,} linked primitive executions ran in warm-up or partial steps or off "
            "the main thread; they are not in the per-step figures"
        )
    return Joined(primitives, link, notes)
