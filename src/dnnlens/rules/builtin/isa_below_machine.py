"""DL005 isa-below-machine."""

from __future__ import annotations

from collections.abc import Iterator

from dnnlens.analysis.columns import row_dicts
from dnnlens.analysis.findings import Finding
from dnnlens.parsers.isa import split_impl
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._util import Fix, FixedByProducer, ms, producer_fix, ratio
from dnnlens.rules.context import RuleContext
from dnnlens.rules.flops import ISA_CLASS_RANK, isa_class

_LOW_PRECISION = {"bf16", "f16", "s8", "u8"}
_UNCAP = (
    "unset `ONEDNN_MAX_CPU_ISA` (or `DNNL_MAX_CPU_ISA`) or raise it, and expose the CPU's "
    "flags to the VM or container (e.g. `-cpu host`); for one primitive below the header ISA, "
    "`ONEDNN_VERBOSE=dispatch` says why its faster kernels were skipped"
)
ISA_FIX = Fix(
    pytorch=_UNCAP + "; PyTorch's own kernels have a separate cap, `ATEN_CPU_CAPABILITY`",
    tensorflow=_UNCAP + " (TensorFlow's bundled oneDNN reads the same variables)",
    openvino=_UNCAP + " (OpenVINO's oneDNN fork reads `ONEDNN_MAX_CPU_ISA` too)",
    onednn=_UNCAP + "; in the program, `dnnl::set_max_cpu_isa` sets the same cap",
)


class IsaBelowMachine(FixedByProducer):
    """Kernels use an older instruction set than the CPU has.

    The header's ``isa:`` line says which ISA oneDNN may use; each implementation name ends
    with the ISA its kernel was built for (``jit:avx2``, ``brg_conv_fwd:avx512_core``). A
    kernel below the header ISA (``jit:sse41`` on an AVX-512 machine) leaves vector width
    unused: the shape, data type or attributes had no kernel at the higher ISA. The header
    ISA itself is what oneDNN was *allowed* to use: ``ONEDNN_MAX_CPU_ISA`` (or
    ``DNNL_MAX_CPU_ISA``) caps it, so a header below ``expected_isa`` (AVX2 by default;
    almost every x86-64 server CPU of the last decade has it) most likely means a cap, or a
    VM hiding CPU flags. Set ``machine_isa`` (``avx512_core``, ``avx2`` ...) to compare
    against the real machine. ISAs are compared by class (SSE4, AVX, AVX2, AVX-512, AMX);
    AMX only counts for bf16/f16/int8 primitives. Only primitives taking ``min_share`` of
    the time (by median times) count.

    Saving (``unknown``): the same primitives at the machine's ISA are not in the inputs,
    and the gain of a wider ISA differs by primitive (memory-bound ones gain little), so
    the finding ranks by its time after the findings whose saving is known.

    Fix: unset ``ONEDNN_MAX_CPU_ISA`` / ``DNNL_MAX_CPU_ISA`` (and ``MKLDNN_MAX_CPU_ISA``)
    or raise it; expose the CPU flags to the VM or container (e.g. ``-cpu host``); for a
    single primitive below the header ISA, check its data type, layout and attributes with
    ``ONEDNN_VERBOSE=dispatch``. Each program's own caps follow.
    """

    name = "isa-below-machine"
    code = "DL005"
    severity = "warning"
    defaults = {"expected_isa": "avx2", "machine_isa": "", "min_share": 0.01}
    fixes = (("", ISA_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        headers = [h for h in ctx.headers if isa_class(h["isa"])]
        machine = str(self.options["machine_isa"])
        top = machine or (
            max((h["isa"] for h in headers), key=lambda i: ISA_CLASS_RANK[isa_class(i)])
            if headers
            else ""
        )
        if not isa_class(top):
            return
        low = self._below(ctx, top)
        expected = str(self.options["expected_isa"])
        capped = [
            h
            for h in headers
            if isa_class(expected)
            and (ISA_CLASS_RANK[isa_class(h["isa"])] < ISA_CLASS_RANK[isa_class(expected)])
        ]
        if machine:
            capped = [
                h
                for h in headers
                if ISA_CLASS_RANK[isa_class(h["isa"])] < ISA_CLASS_RANK[isa_class(machine)]
            ]
        if not low and not capped:
            return
        low_ms = sum(r["typical_ms"] for r in low) / ctx.steady_iterations
        share = ratio(low_ms, ctx.typical_iteration_ms)
        # under a cap, the cost is the time of every kernel that runs below the ISA it
        # should have had (the header's own ISA is then the cap, so ``low`` is empty)
        under_cap = self._below(ctx, machine or expected) if capped else []
        capped_ms = sum(r["typical_ms"] for r in under_cap) / ctx.steady_iterations
        parts = []
        if capped:
            h = capped[0]
            kernels = sorted(
                {
                    f"{k} {i}"
                    for k, i in zip(ctx.stats["kind"], ctx.stats["impl"], strict=True)
                    if isa_class(split_impl(i)[1])
                }
            )
            parts.append(
                f"the header says oneDNN may only use {h['isa_text'] or h['isa']} "
                f"({h['isa']}), below {machine or expected}: ONEDNN_MAX_CPU_ISA (or "
                "DNNL_MAX_CPU_ISA) capping it is the likely cause, or a VM hiding CPU flags"
                + (f"; kernels run at that ISA: {', '.join(kernels[:3])}" if kernels else "")
            )
        if low:
            listed = ", ".join(f"{r['kind']} {r['impl']}" for r in low[:3])
            parts.append(
                f"{len(low)} primitives run kernels below {top} ({listed}): "
                + (ctx.cost_text(low_ms) if low_ms >= capped_ms else f"{ms(low_ms)} per iteration")
            )
        used = sorted({split_impl(i)[1] for i in ctx.stats["impl"] if split_impl(i)[1]})
        msg = "; ".join(parts) + (f". Kernel ISAs in the log: {', '.join(used)}" if used else "")
        with_isa = [int(r) for r, i in ctx.stats["impl"].items() if isa_class(split_impl(i)[1])]
        evidence_records = (
            [r["record"] for r in low] or with_isa or [int(r) for r in ctx.stats.index[:3]]
        )
        yield self.finding(
            msg[0].upper() + msg[1:],
            ctx.record_evidence(evidence_records),
            fix=producer_fix(ctx, ISA_FIX),
            impact_ms=max(low_ms, capped_ms) if (low or under_cap) else None,
            saving=Saving.unknown("the same primitives at the machine's ISA are not in the log"),
            data={
                "header_isa": [h["isa"] for h in headers],
                "compared_with": top,
                "capped": bool(capped),
                "expected_isa": machine or expected,
                "below": [{k: r[k] for k in ("kind", "impl", "isa", "typical_ms")} for r in low],
                "share": ctx.share(max(low_ms, capped_ms)) if (low or under_cap) else None,
                "share_of_onednn_iteration": share,
                "capped_ms_per_iteration": capped_ms,
                "kernel_isas": used,
                "producer": ctx.producer.to_json(),
            },
        )

    def _below(self, ctx: RuleContext, top: str) -> list[dict]:
        """Primitives whose kernel ISA class is below what ``top`` offers for their dtype."""
        out = []
        top_rank = ISA_CLASS_RANK[isa_class(top)]
        for rid, row in row_dicts(ctx.steady_stats):
            isa = split_impl(str(row["impl"]))[1]
            cls = isa_class(isa)
            if not cls:
                continue
            dtypes = {md.dtype for md in ctx.mds(int(rid))}
            want = top_rank if dtypes & _LOW_PRECISION else min(top_rank, ISA_CLASS_RANK["avx512"])
            share = ratio(ctx.per_iteration_ms([rid]), ctx.typical_iteration_ms)
            if ISA_CLASS_RANK[cls] < want and share >= self.options["min_share"]:
                out.append(
                    {
                        "record": int(rid),
                        "kind": row["kind"],
                        "impl": row["impl"],
                        "isa": isa,
                        "typical_ms": float(row["typical_ms"]),
                    }
                )
        return sorted(out, key=lambda r: -r["typical_ms"])
