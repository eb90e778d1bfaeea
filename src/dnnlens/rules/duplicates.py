"""One cause, one finding: a finding that is all but the whole of a broader one takes its
place.

``reorder-overhead`` counts every reorder of the typical iteration; ``layout-round-trip``,
``weight-reorder-per-iteration``, ``weight-reorder-training`` and ``dtype-conversion`` each
count the reorders of one cause (a rule's ``part_of`` names the broader rule). On a log
where one cause holds nearly all the reorder time the two findings print nearly the same
time and the same fix (0.68 and 0.65 ms on ``convnet_nchw_infer.log``; 9.26 and 9.26 ms on
``resnet18_cl_train.log``): the broader finding then says nothing the part does not. So when
a part's time is at least :data:`FOLD_AT` of the broader finding's, on the same basis, and
the parts found save what the broader finding saves (``saving_ms_per_iteration``: in a
training step the weights hold the time and no fix removes them, the activation round trips
are what a fix saves), the broader finding is left out and the part says so: its
``data.includes`` names the broader rule's code and time, and its message ends with the share
of the reorder time it is. Below
that, the broader finding stays: the rest of its time is another cause's, which the reader
needs to see.

:data:`FOLD_AT` is 90%: the rest is then under a tenth of the broader finding's time (on
``convnet_nchw_infer.log``, where reorders are 32% of the iteration, at most 3 points of it),
and the two headlines print the same figure within that; a part that holds less leaves a
second cause in the broader finding, which the reader must see. A rule run alone
(``--select``) is never folded.
"""

from __future__ import annotations

from collections.abc import Mapping

from dnnlens.analysis.findings import Finding
from dnnlens.fmt import ms, pct

FOLD_AT = 0.9


def _saving_kept(whole: Finding, findings: list[Finding], part_of: Mapping[str, str]) -> bool:
    """Whether the parts of ``whole`` among ``findings`` save what it saves (within
    :data:`FOLD_AT`): a broader finding whose saving no part states (the activation reorders
    of a training step whose round trips fired no finding) is not left out."""
    saving = whole.saving_ms_per_iteration
    if not saving:
        return True
    parts = [f for f in findings if part_of.get(f.rule) == whole.rule]
    return sum(f.saving_ms_per_iteration or 0.0 for f in parts) >= FOLD_AT * saving


def fold(findings: list[Finding], part_of: Mapping[str, str]) -> list[Finding]:
    """``findings`` with each broader finding left out where one of its parts holds at least
    :data:`FOLD_AT` of its time (module docstring); ``part_of`` maps a rule's name to its
    broader rule's name."""
    wholes = {f.rule: f for f in findings if f.rule in set(part_of.values())}
    gone: set[int] = set()
    for part in findings:
        whole = wholes.get(part_of.get(part.rule, ""))
        if whole is None or id(whole) in gone or whole.basis != part.basis:
            continue
        if not whole.impact_ms_per_iteration or part.impact_ms_per_iteration is None:
            continue
        covered = part.impact_ms_per_iteration / whole.impact_ms_per_iteration
        if covered < FOLD_AT or not _saving_kept(whole, findings, part_of):
            continue
        gone.add(id(whole))
        part.data["includes"] = {
            "rule": whole.rule,
            "code": whole.code,
            "impact_ms_per_iteration": whole.impact_ms_per_iteration,
            "share_of_it": covered,
        }
        part.message = (
            part.message.rstrip(". ") + f"; {pct(min(covered, 1.0))} of the reorder time "
            f"({ms(whole.impact_ms_per_iteration)}: {whole.rule} {whole.code} is this finding)"
        )
    return [f for f in findings if id(f) not in gone]
