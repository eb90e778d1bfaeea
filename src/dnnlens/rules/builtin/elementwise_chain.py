"""DL102 elementwise-chain."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dnnlens.analysis.findings import Finding
from dnnlens.analysis.framework.patterns import elementwise_chains, normalization
from dnnlens.rules.base import Rule
from dnnlens.rules.builtin._framework import cost, impact, trace_view
from dnnlens.rules.builtin._util import ms
from dnnlens.rules.context import RuleContext


class ElementwiseChain(Rule):
    """Runs of small elementwise and reduction ops cost a meaningful share of the step.

    A loss written in eager ops (a sigmoid focal loss: ``sigmoid``, ``binary_cross_entropy_
    with_logits``, ``mul``, ``rsub``, ``pow``, ``mean`` ...), a normalisation or an
    activation made of pointwise ops runs one kernel per op, each a full pass over memory,
    and autograd adds as many backward nodes. The rule walks the outermost ops of the first
    steady step in order and finds runs of at least ``min_ops`` elementwise or reduction ops
    (forward ops and their backward nodes; views inside a run do not break it) between
    heavier ops; it fires when all runs together take at least ``min_share`` of a typical
    step. Their impact is the typical time of those ops in every steady step. Norm modules
    made of elementwise ops are left to ``aten-normalization``.

    Fix: fuse the chain: ``torch.compile`` the function or module (inductor generates one
    C++ kernel for the forward and one for the backward), or a custom fused op (C++
    extension, a ``torch.library`` kernel); for a loss, a fused library version.
    """

    name = "elementwise-chain"
    code = "DL102"
    severity = "warning"
    defaults = {"min_ops": 5, "min_share": 0.05}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = trace_view(ctx)
        if fw is None:
            return
        norms = normalization(fw)  # frozen norms made of elementwise ops: that rule's
        chains, mask = elementwise_chains(
            fw, int(self.options["min_ops"]), exclude=norms.inside | norms.backward
        )
        if not chains:
            return
        total = fw.typical_ms(mask)
        if fw.share(total) < self.options["min_share"]:
            return
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
        yield self.finding(
            message,
            fw.evidence(mask, 3),
            data=impact(fw, total, chains=described, ops_per_step=sum(c["ops"] for c in described)),
            impact_ms=total,
            basis="step",
        )
