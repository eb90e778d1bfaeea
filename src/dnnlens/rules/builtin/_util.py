"""Small helpers shared by the built-in rules: formatting, implementation-name tests, and fixes
said in the terms of the program that made the log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import pandas as pd

from dnnlens.analysis.producer import LABELS, ONEDNN, PRODUCERS, Producer
from dnnlens.fmt import ms, pct
from dnnlens.parsers.isa import is_reference
from dnnlens.rules.base import Rule

if TYPE_CHECKING:
    from dnnlens.rules.context import RuleContext

__all__ = [
    "TF_ONEDNN_OPS_OFF",
    "Fix",
    "FixedByProducer",
    "is_reference",
    "ms",
    "pct",
    "producer_fix",
    "ratio",
    "top_records",
]


def ratio(part: float, whole: float) -> float:
    """``part / whole``, 0 when ``whole`` is not positive."""
    return float(part) / float(whole) if whole and whole > 0 else 0.0


def top_records(frame: pd.DataFrame, column: str, limit: int = 3) -> list[int]:
    """Record ids of the rows with the largest ``column``."""
    if frame.empty:
        return []
    return [int(r) for r in frame.sort_values(column, ascending=False).index[:limit]]


@dataclass(frozen=True)
class Fix:
    """One fix, said in each producer's terms. ``onednn`` is said with oneDNN's own API: the
    fix for a C++ program, and for a log whose producer is unknown. Texts start lower-case
    (a cause sentence may come before them) and name only what the recordings of
    ``scripts/make_sample_logs.py`` and ``scripts/make_producer_logs.py`` or the programs'
    own sources show."""

    pytorch: str
    tensorflow: str
    openvino: str
    onednn: str

    def text(self, producer: str) -> str:
        """The text for a producer name (``onednn`` for a name this does not know)."""
        return str(getattr(self, producer if producer in PRODUCERS else ONEDNN))


#: Said first to a TensorFlow log whose only oneDNN calls are gemm_api lines.
TF_ONEDNN_OPS_OFF = (
    "this log's only oneDNN calls are gemm_api lines (Eigen's matrix multiplications), as "
    "with `TF_ENABLE_ONEDNN_OPTS=0`: set `TF_ENABLE_ONEDNN_OPTS=1` before TensorFlow is "
    "imported so that its convolutions, pooling and dense layers run as oneDNN primitives "
    "(recorded with TensorFlow 2.21); then "
)


def told(producer: Producer) -> str:
    """`` [PyTorch, told by x.log:9]``: whose terms a fix is in, and which line said so."""
    if producer.known:
        return f" [{producer.label}, told by {producer.clues[0].where}]"
    return f" [oneDNN's own API: {producer.said_by}]"


def producer_fix(ctx: RuleContext, fix: Fix, cause: str = "") -> str:
    """``fix`` in the terms of the log's producer, after an optional cause sentence, ending
    with whose terms they are and the line that told."""
    p = ctx.producer
    body = fix.text(p.name)
    if p.onednn_ops_off:
        body = TF_ONEDNN_OPS_OFF + body
    text = f"{cause}: {body}" if cause else body
    return text[0].upper() + text[1:] + told(p)


class FixedByProducer(Rule):
    """A rule whose fixes depend on the program that made the log.

    ``fixes`` lists each cause the rule tells apart with its :class:`Fix`; ``rules explain``
    prints them after the docstring, per producer, and :meth:`fix_text` (the fix without a
    log) is the first one in oneDNN's terms.
    """

    fixes: ClassVar[tuple[tuple[str, Fix], ...]] = ()

    def describe(self) -> str:
        """The docstring, then every fix in each producer's terms."""
        lines = [super().describe(), "", "Fixes by the program that made the log:"]
        for cause, fix in self.fixes:
            indent = "  " if cause else ""
            if cause:
                lines.append(f"* {cause}:")
            lines += [f"{indent}{LABELS[p]}: {fix.text(p)}" for p in PRODUCERS]
        return "\n".join(lines)

    def fix_text(self) -> str:
        """The first fix in oneDNN's terms, on one line."""
        if not self.fixes:
            return super().fix_text()
        text = self.fixes[0][1].onednn
        return text[0].upper() + text[1:]
