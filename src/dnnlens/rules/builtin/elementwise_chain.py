"""DL102 elementwise-chain."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import (
    QUIET_BELOW_SHARE,
    cost,
    counted,
    impact,
    step_finding,
    table_finding,
    table_view,
    trace_view,
)
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext

#: The shortest run that is a chain: five passes over memory that one fused kernel makes
#: in one (at least 4/5 of the run's traffic saved). Shorter runs (``x * s + b``, a
#: residual add and its ReLU) are in every network and leave little to fuse.
MIN_OPS = 5


class ElementwiseChain(Rule):
    """Runs of small elementwise and reduction ops cost a meaningful share of the step.

    A loss written in eager ops (a sigmoid focal loss: ``sigmoid``, ``binary_cross_entropy_
    with_logits``, ``mul``, ``rsub``, ``pow``, ``mean`` ...), a normalisation or an
    activation made of pointwise ops runs one kernel per op, each a full pass over memory,
    and autograd adds as many backward nodes. The rule walks the outermost ops of the first
    steady step in order and finds runs of at least ``min_ops`` elementwise or reduction ops
    (forward ops and their backward nodes; views inside a run do not break it) between
    heavier ops; it fires when all runs together take at least ``min_share`` of a typical
    step, graded by that share like every framework rule. Their impact is the typical time
    of those ops in every steady step. Frozen norms made of elementwise ops (norm modules,
    and per-channel ``rsqrt``/``mul``/``sub`` then ``x * scale + bias``, found by their
    shapes) are left to ``aten-normalization``: their fix is folding, not fusing. A
    key_averages table has no order: there the figure is ``table_patterns.elementwise``
    (elementwise backward nodes and forward ops, activations and norm modules left out,
    each side only with ``min_ops`` calls per step), said "as far as a table tells".

    Saving (``unknown``): a fused kernel still makes one pass over the tensors, and
    compiling is not always faster (RetinaNet's ``compiled_loss``: the focal loss took
    9.5 ms against 4.5-6.9 ms eager); the inputs hold no fused run of the same chain, so
    the finding ranks by its time after the findings whose saving is known.

    Fix: fuse the chain: ``torch.compile`` the function or module (inductor generates one
    C++ kernel for the forward and one for the backward), or a custom fused op (C++
    extension, a ``torch.library`` kernel); for a loss, a fused library version.
    """

    name = "elementwise-chain"
    code = "DL102"
    severity = "warning"
    defaults = {"min_ops": MIN_OPS, "min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        table = table_view(ctx)
        if table is not None:
            # imported here, not at the top: a log without a trace or table never needs it
            from dnnlens.analysis.framework import table_patterns

            found = table_patterns.elementwise(table, int(self.options["min_ops"]))
            calls = found.calls_per_step
            count = sum(calls.values())
            yield from table_finding(
                self,
                table,
                f"{count:g} elementwise ops and backward nodes per step "
                f"({counted(list(calls), list(calls.values()))})",
                found,
            )
            return
        fw = trace_view(ctx)
        if fw is None:
            return
        from dnnlens.analysis.framework.patterns import elementwise_chains

        norms = fw.norms  # frozen norms made of elementwise ops: aten-normalization's
        exclude = None if norms is None else norms.inside | norms.per_channel | norms.backward
        chains, mask = elementwise_chains(fw, int(self.options["min_ops"]), exclude=exclude)
        if not chains:
            return
        total = fw.typical_ms(mask)
        rows = fw.rows
        assert rows is not None
        described = []
        keys = rows.key(np.arange(len(rows)))
        for chain in chains:
            own = np.isin(keys, keys[chain.rows]) & (rows.segment == np.arange(len(rows)))
            described.append(
                {
                    "ops": len(chain.names),
                    "first": chain.names[0],
                    "last": chain.names[-1],
                    "names": chain.names,
                    "ms_per_step": fw.typical_ms(own),
                }
            )
        described.sort(key=lambda c: -c["ms_per_step"])
        top = described[0]
        message = (
            f"{len(described)} chain(s) of elementwise ops, {sum(c['ops'] for c in described)} "
            f"ops per step: {cost(fw, total)}; the largest, {top['ops']} ops from "
            f"{top['first']} to {top['last']}, takes {ms(top['ms_per_step'])}"
        )
        for c in described:
            c["share_of_step"] = fw.share(c["ms_per_step"])
        yield from step_finding(
            self,
            fw,
            message,
            fw.evidence(mask, 3),
            total,
            impact(fw, total, chains=described, ops_per_step=sum(c["ops"] for c in described)),
        )
