"""DL008 missed-fusion."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from dnnlens.analysis.columns import category_mask, str_values
from dnnlens.analysis.findings import Finding
from dnnlens.rules.base import Saving
from dnnlens.rules.builtin._util import Fix, FixedByProducer, producer_fix, ratio
from dnnlens.rules.context import RuleContext

PRODUCERS = ("convolution", "deconvolution", "inner_product", "matmul")
CONSUMERS = ("eltwise", "binary", "sum")

FUSION_FIX = Fix(
    pytorch=(
        "let PyTorch fuse them: `torch.compile` with `torch._inductor.config.freezing = True` "
        "at inference (recorded: the ReLUs and the residual add became post-ops of the "
        "convolutions), or `torch.jit.freeze(torch.jit.trace(model, x))` in eval mode"
    ),
    tensorflow=(
        "call the model inside a `tf.function` (Keras `predict` and `fit` do): Grappler's "
        "remapper fuses Conv2D or MatMul with BiasAdd and the activation into one oneDNN "
        "primitive with post-ops (recorded: the convolution's ReLU is an "
        "`attr-post-ops:eltwise_relu`)"
    ),
    openvino=(
        "the CPU plugin fuses these itself (recorded: the bias Add and the Relu became "
        "post-ops of the convolution), so one left separate has a pattern its fusion does "
        "not take, often a second consumer of the output: "
        "`compiled_model.get_runtime_model()` lists in each node's `originalLayersNames` the "
        "model's ops fused into it"
    ),
    onednn=(
        "add the op to the producing primitive's `primitive_attr` post-ops "
        "(`post_ops::append_eltwise`, `append_binary`, `append_sum`), so that the result is "
        "written once"
    ),
)


class MissedFusion(FixedByProducer):
    """An eltwise, binary or sum runs right after a convolution or matmul, on its output.

    oneDNN can apply eltwise (relu, gelu, tanh ...), binary (add, mul) and sum as
    post-ops of the convolution, matmul or inner product that produced the tensor: the
    result is written once instead of being read and written again by a separate
    primitive. The rule looks at the exec stream: a forward producer followed by such an
    op whose input has the producer's output dims, directly or through one layout-only
    reorder (a framework converting the output back to plain first). Cost is the
    consumer's (and that reorder's) median time per iteration.

    Saving (``removal``): the consumers' (and those reorders') whole part: fused, the op is
    applied in registers before the producer's store and its own pass goes (recorded:
    ``compile_freezing_infer``, the ReLUs and the residual add became post-ops); the
    post-op's arithmetic inside the producer, a few FLOPs an element, is not counted.
    A reader's figure: ``ms_per_iteration``.

    Fix: let the program fuse them, in its own terms: ``torch.compile`` with freezing in
    PyTorch, a ``tf.function`` in TensorFlow (Grappler's remapper), OpenVINO's plugin fuses by
    itself; with oneDNN's own API add the op to the producer's ``primitive_attr`` post-ops
    (``append_eltwise``, ``append_binary``, ``append_sum``).
    """

    name = "missed-fusion"
    code = "DL008"
    severity = "info"
    defaults = {"min_share": 0.0}
    fixes = (("", FUSION_FIX),)

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        ex = ctx.steady_execs
        if ex.empty:
            return
        recs = ex["record"].to_numpy()
        paths = str_values(ex["input"])
        found: Counter = Counter()
        cost: dict[tuple, float] = {}
        lines: dict[tuple, int] = {}
        med = ctx.steady_stats["run_ms"]
        for i in np.flatnonzero(category_mask(ex["kind"], lambda v: v in CONSUMERS)):
            rec = ctx.log.records[int(recs[i])]
            if i == 0 or rec.prop_kind.startswith("backward"):
                continue
            want = self._dims(ctx, int(recs[i]), "in")
            j, via = i - 1, None
            prev = ctx.log.records[int(recs[j])]
            if prev.kind == "reorder" and j > 0 and paths[j - 1] == paths[i]:
                if self._dims(ctx, int(recs[j]), "in") == want and not self._converts_dtype(
                    ctx, int(recs[j])
                ):
                    via, j = int(recs[j]), j - 1
                    prev = ctx.log.records[int(recs[j])]
            if paths[j] != paths[i] or prev.kind not in PRODUCERS:
                continue
            if prev.prop_kind.startswith("backward") or not want:
                continue
            if self._dims(ctx, int(recs[j]), "out") != want:
                continue
            key = (int(recs[j]), via, int(recs[i]))
            found[key] += 1
            cost[key] = float(med.get(key[2], 0.0)) + (float(med.get(via, 0.0)) if via else 0.0)
            lines.setdefault(key, int(ex["line"].iloc[i]))
        if not found:
            return
        iters = ctx.steady_iterations
        per_iter = sum(cost[k] * n for k, n in found.items()) / iters
        share = ratio(per_iter, ctx.typical_iteration_ms)
        if share < self.options["min_share"]:
            return
        pairs = []
        for (p, via, c), n in found.most_common(4):
            rp, rc = ctx.log.records[p], ctx.log.records[c]
            alg = rc.aux.split()[0].removeprefix("alg:") if rc.aux else rc.kind
            pairs.append(f"{rp.kind} -> {'reorder -> ' if via else ''}{rc.kind} {alg} ({n} times)")
        msg = (
            f"{sum(found.values())} ops could have been post-ops of the convolution/matmul "
            f"before them: {'; '.join(pairs)}; they cost {ctx.cost_text(per_iter)}"
        )
        yield self.finding(
            msg,
            ctx.record_evidence([k[2] for k, _ in found.most_common(3)]),
            fix=producer_fix(ctx, FUSION_FIX),
            impact_ms=per_iter,
            saving=Saving.removal(per_iter, "fused as post-ops, their own passes go"),
            data={
                "occurrences": int(sum(found.values())),
                "pairs": len(found),
                "ms_per_iteration": per_iter,
                "share": ctx.share(per_iter),
                "share_of_onednn_iteration": share,
                "through_reorder": int(sum(n for k, n in found.items() if k[1] is not None)),
                "producer": ctx.producer.to_json(),
            },
        )

    @staticmethod
    def _converts_dtype(ctx: RuleContext, rid: int) -> bool:
        types = {md.dtype for md in ctx.mds(rid) if md.dtype}
        return len(types) > 1

    @staticmethod
    def _dims(ctx: RuleContext, rid: int, side: str) -> tuple[int, ...] | None:
        """Sorted dims of a primitive's output (``out``) or first input (``in``)."""
        rec = ctx.log.records[rid]
        p = ctx.problem(rid)
        d = p.dims
        dims: tuple | None = None
        if side == "in" and p.tensors:
            dims = p.tensors[0]
        elif rec.kind in ("convolution", "deconvolution") and "oc" in d:
            dims = tuple(d.get(k) for k in ("mb", "oc", "od", "oh", "ow") if k in d)
        elif rec.kind == "inner_product" and "oc" in d:
            dims = (d.get("mb"), d.get("oc"))
        elif rec.kind == "matmul" and p.tensors and len(p.tensors) >= 2:
            src, wei = p.tensors[0], p.tensors[1]
            dims = (*src[:-1], wei[-1])
        elif rec.kind == "matmul" and "M" in d:
            dims = (d.get("M"), d.get("N"))
        if not dims or any(v is None for v in dims):
            return None
        return tuple(sorted(int(v) for v in dims if v != 1))
