"""DL106 dataloader-stall."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.builtin._framework import QUIET_BELOW_SHARE, cost, impact, step_finding
from dnnlens.rules.context import RuleContext


class DataloaderStall(Rule):
    """The training loop waits for data: ``enumerate(DataLoader)`` takes a share of each step.

    Every step starts by taking a batch from the ``DataLoader`` (the
    ``enumerate(DataLoader)#...__next__`` span). With ``num_workers=0`` the main thread runs
    ``__getitem__`` and the collation itself; with workers it waits when they cannot keep up.
    Either way the compute threads are idle meanwhile. The rule fires when the data-loading
    phase takes at least ``min_share`` of a typical step (from a trace, or from the
    annotation's CPU total in a key_averages table), graded by that share like every
    framework rule.

    Saving (``removal``): the data-loading phase's whole time, the most workers that keep
    up can hide (a batch made while the model computes costs the loop nothing; recorded:
    RetinaNet's ``slow_loader`` against its ``baseline``, 11.4 ms against 0.1 ms a step).
    A reader's figure: the finding's ``impact_ms_per_step``.

    Fix: ``num_workers > 0`` (with ``persistent_workers=True`` and ``prefetch_factor``) so
    batches are made while the model computes; make ``__getitem__`` cheap (decode, resize and
    augment once, cache the result, or use a faster decoder); ``pin_memory`` only for GPUs.
    """

    name = "dataloader-stall"
    code = "DL106"
    severity = "warning"
    defaults = {"min_share": QUIET_BELOW_SHARE}

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        fw = ctx.framework
        if fw is None or not fw.steady_count:
            return
        data_ms = fw.phase_ms("data loading")
        data_share = fw.share(data_ms)
        if data_share is None or data_share < self.options["min_share"]:
            return  # (before the evidence is looked up)
        # imported here, not at the top: a log without a trace or table never needs it
        from dnnlens.analysis.framework.names import DATALOADER_PREFIX

        idle = None
        if fw.rows is not None:
            evidence = fw.evidence(fw.rows.mask_prefix(DATALOADER_PREFIX), 1)
            main = fw.threads[fw.threads["role"] == "main"] if len(fw.threads) else fw.threads
            idle = float(main["idle_ms_per_step"].iloc[0]) if len(main) else None
        else:
            names = [n for n in fw.ops["name"] if str(n).startswith(DATALOADER_PREFIX)]
            evidence = fw.table_evidence(names, 1)
        yield from step_finding(
            self,
            fw,
            f"waiting for data (enumerate(DataLoader)): {cost(fw, data_ms)}",
            evidence,
            data_ms,
            impact(fw, data_ms, main_thread_idle_ms_per_step=idle),
            saving=Saving.removal(
                data_ms, "workers that keep up make batches while the model computes"
            ),
        )
