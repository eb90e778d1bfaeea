"""Normalization in a trace: which norms are trained, which are frozen and could be folded.

A batch norm whose statistics and affine never change (a frozen norm: ``FrozenBatchNorm2d``
of torchvision and detection models, or ``nn.BatchNorm2d`` in eval mode, at inference or
frozen in training) is a per-channel scale and shift: folded into the convolution before
it, it costs nothing. A batch norm being trained is the normal cost of training it. This
module tells them apart from the trace:

* **ATen's batch-norm kernels** (``aten::native_batch_norm`` and its backward): their
  ``training`` argument (``Concrete Inputs``) says whether the statistics are being
  trained; an eval-mode norm whose backward computes weight gradients (``output_mask``)
  has a trained affine, which is not foldable in training either.
* **Norm modules** (``nn.Module: FrozenBatchNorm2d_3`` frames, ``with_modules=True``) that
  run elementwise ops only.
* **Per-channel affines written as elementwise ops** (no module frames needed): a
  ``mul(x, s)`` then ``add(x * s, b)`` of an activation ``x`` (``[N, C, ...]``) with
  ``[1, C, 1, ...]`` tensors, right after a run of elementwise ops on per-channel tensors
  (``[C]`` or ``[1, C, 1, ...]``) that holds an ``rsqrt`` (or ``sqrt``): ``scale = w * (rv +
  eps).rsqrt(); bias = b - rm * scale; x * scale + bias``. It is frozen when none of the
  per-channel ops has an autograd node of its own (ops that need no gradient share the
  sequence number of the next op that does, the activation ``mul``).

The backward nodes of a frozen elementwise norm's ops (by sequence number) are its backward
cost. Found in the first steady step, the same segments (name, shapes, occurrence) in every
steady step, like the elementwise chains of :mod:`.patterns`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dnnlens.analysis.framework.args import column_codes, flag, flags, json_list
from dnnlens.analysis.framework.names import (
    BACKWARD_PREFIX,
    ELEMENTWISE,
    ELEMENTWISE_BACKWARD,
    NATIVE_NORMALIZATION,
    NORM_MODULE,
    PHASES,
    VIEW_BACKWARD,
    VIEWS,
    module_class,
)
from dnnlens.analysis.framework.rows import OpRows

if TYPE_CHECKING:
    from dnnlens.analysis.framework.view import FrameworkAnalysis

#: Where ATen's batch-norm kernels take their ``training`` flag (``Concrete Inputs``).
TRAINING_ARG = {
    "aten::native_batch_norm": 5,
    "aten::_native_batch_norm_legit": 5,
    "aten::native_batch_norm_backward": 7,
    "aten::batch_norm_backward": 7,
}
#: Where the backward kernels take ``output_mask`` (input, weight, bias gradients).
OUTPUT_MASK_ARG = {"aten::native_batch_norm_backward": 9, "aten::batch_norm_backward": 9}
#: Ops that make the ``x * scale + bias`` of a per-channel affine.
_AFFINE_MUL = frozenset({"aten::mul", "aten::mul_"})
_AFFINE_ADD = frozenset({"aten::add", "aten::add_"})
#: The op that makes a per-channel scale a normalisation: 1 / sqrt(var + eps).
_NORMALISING = frozenset({"aten::rsqrt", "aten::rsqrt_", "aten::sqrt", "aten::sqrt_"})

NORMALIZATION_COLUMNS = ("kind", "foldable", "calls_per_step", "ms_per_step", "share")


def elementwise_names(rows: OpRows) -> tuple[np.ndarray, np.ndarray]:
    """Per name code: counts as elementwise work; is a view (neutral in a chain)."""
    work = np.array(
        [n in ELEMENTWISE or bool(ELEMENTWISE_BACKWARD.match(n)) for n in rows.names], dtype=bool
    )
    view = np.array([n in VIEWS or bool(VIEW_BACKWARD.match(n)) for n in rows.names], dtype=bool)
    return work, view


@dataclass
class Normalization:
    """The norms of a trace, by kind (row masks aligned with ``analysis.rows``)."""

    native: np.ndarray  # ATen's batch-norm kernels (outermost), forward and backward
    trained: np.ndarray  # of those: statistics trained, or an eval-mode norm's affine trained
    frozen_native: np.ndarray  # of those: eval mode, nothing trained (foldable)
    unknown: np.ndarray  # of those: no training flag in the trace (record_shapes=False)
    modules: np.ndarray  # norm module frames made of elementwise ops
    inside: np.ndarray  # the ops inside those frames
    per_channel: np.ndarray  # segments of frozen per-channel affines outside those frames
    backward: np.ndarray  # autograd nodes of the ops of both
    module_classes: list[str]
    #: per-channel norms found in the first steady step: channels of each
    per_channel_channels: list[int] = field(default_factory=list)

    @property
    def elementwise(self) -> np.ndarray:
        """The forward rows of the frozen norms made of elementwise ops (frames, segments)."""
        return self.modules | self.per_channel


def _native_modes(rows: OpRows, native: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per row: the ``training`` flag was recorded, its value; and whether an eval-mode
    backward kernel computes weight or bias gradients (a trained affine)."""
    codes, texts = column_codes(rows, "concrete_inputs")
    n = len(rows)
    known = np.zeros(n, dtype=bool)
    training = np.zeros(n, dtype=bool)
    affine = False
    at = np.flatnonzero(native)
    pairs = rows.name[at].astype(np.int64) * (len(texts) + 1) + codes[at] + 1
    for pair in np.unique(pairs).tolist():  # each distinct (name, arguments) once
        name = str(rows.names[pair // (len(texts) + 1)])
        code = pair % (len(texts) + 1) - 1
        args = json_list(texts[code]) if code >= 0 else ()
        here = at[pairs == pair]
        if name == "aten::_native_batch_norm_legit_no_training":
            known[here] = True
            continue
        index = TRAINING_ARG.get(name)
        value = flag(args[index]) if index is not None and len(args) > index else None
        if value is None:
            continue
        known[here], training[here] = True, value
        mask_at = OUTPUT_MASK_ARG.get(name)
        if not value and mask_at is not None and len(args) > mask_at:
            wanted = flags(args[mask_at])
            affine |= bool(wanted and any(wanted[1:]))
    return known, training, affine


def _channels(shape: object) -> int | None:
    """C of a per-channel tensor: ``[C]`` or ``[1, C, 1, ...]``; else None."""
    if not isinstance(shape, list) or not all(isinstance(v, int) for v in shape):
        return None
    if len(shape) == 1:
        return shape[0]
    if len(shape) >= 3 and shape[0] == 1 and all(v == 1 for v in shape[2:]):
        return shape[1]
    return None


def _affine(dims: tuple) -> tuple[int, str] | None:
    """(C, activation shape) when the first input is an activation ``[N, C, ...]`` and the
    second a ``[1, C, 1, ...]`` tensor of the same rank."""
    if len(dims) < 2 or not isinstance(dims[0], list) or len(dims[0]) < 3:
        return None
    act, other = dims[0], dims[1]
    if not isinstance(other, list) or len(other) != len(act):
        return None
    c = _channels(other)
    return (c, str(act)) if c is not None and len(other) >= 3 and c == act[1] else None


def _on_channels(dims: tuple, c: int) -> bool:
    """Every tensor input is per-channel with ``c`` channels or 0-d; at least one is."""
    tensors = [d for d in dims if isinstance(d, list) and d]
    return bool(tensors) and all(_channels(d) == c for d in tensors)


def _per_channel_runs(
    fw: FrameworkAnalysis, rows: OpRows, exclude: np.ndarray
) -> tuple[list[np.ndarray], list[int]]:
    """The frozen per-channel affines of the first steady step: the segment rows of each
    (its per-channel ops, the views among them, the mul and the add), and its channels."""
    first = fw.first_steady_step()
    own = rows.main & (rows.step == first) & (rows.segment == np.arange(len(rows)))
    segs = np.flatnonzero(own & ~exclude)
    segs = segs[np.argsort(rows.ts[segs], kind="stable")]
    work, view = elementwise_names(rows)
    sequence = rows.trace.ops["sequence"].to_numpy()
    nodes = fw.steady_rows(rows.mask_prefix(BACKWARD_PREFIX))
    with_node = set(np.unique(sequence[nodes & (sequence >= 0)]).tolist())
    names = [str(n) for n in rows.name_of(segs)]
    dims = [json_list(str(rows.dims_names[rows.dims[r]])) for r in segs.tolist()]
    runs: list[np.ndarray] = []
    channels: list[int] = []
    used = -1
    for k, name in enumerate(names):
        if k <= used or name not in _AFFINE_MUL:
            continue
        found = _affine(dims[k])
        if found is None:
            continue
        c = found[0]
        nxt = k + 1
        while nxt < len(names) and view[rows.name[segs[nxt]]]:
            nxt += 1
        if nxt >= len(names) or names[nxt] not in _AFFINE_ADD or _affine(dims[nxt]) != found:
            continue
        back = k - 1
        while back > used and (
            (work[rows.name[segs[back]]] or view[rows.name[segs[back]]])
            and _on_channels(dims[back], c)
        ):
            back -= 1
        before = list(range(back + 1, k))
        if not any(names[j] in _NORMALISING for j in before):
            continue
        mul_seq = sequence[segs[k]]
        trained = any(
            sequence[segs[j]] >= 0
            and sequence[segs[j]] != mul_seq
            and int(sequence[segs[j]]) in with_node
            for j in before
            if work[rows.name[segs[j]]]
        )
        if trained:  # the per-channel parameters get gradients: a norm being trained
            continue
        runs.append(segs[back + 1 : nxt + 1])
        channels.append(int(c))
        used = nxt
    return runs, channels


def normalization(fw: FrameworkAnalysis) -> Normalization:
    """Every norm of the trace, by kind (module docstring)."""
    rows = fw.rows
    assert rows is not None
    n = len(rows)
    native = rows.outermost(rows.mask_names(NATIVE_NORMALIZATION))
    known, training, affine_trained = _native_modes(rows, native)
    trained = native & known & (training | affine_trained)
    frozen_native = native & known & ~training & ~affine_trained
    unknown = native & ~known

    frames = rows.main & (rows.module == np.arange(n))
    is_norm = np.array([bool(NORM_MODULE.search(module_class(x))) for x in rows.names], bool)
    frames &= is_norm[rows.name] if len(rows.names) else frames
    work, view = elementwise_names(rows)
    inside = (rows.module >= 0) & ~rows.python & frames[np.maximum(rows.module, 0)]
    plain = np.ones(n, dtype=bool)  # frame -> only elementwise ops inside
    own = rows.segment == np.arange(n)  # the module's ops, not their insides
    bad = inside & own & ~(work[rows.name] | view[rows.name])
    plain[rows.module[bad]] = False
    frames &= plain
    inside &= frames[np.maximum(rows.module, 0)]

    runs, channels = _per_channel_runs(fw, rows, inside)
    per_channel = np.zeros(n, dtype=bool)
    if runs:
        keys = rows.key(np.arange(n))
        chosen = np.concatenate(runs)
        per_channel = np.isin(keys, keys[chosen]) & own & rows.main & ~inside

    sequence = rows.trace.ops["sequence"].to_numpy()
    forward = np.unique(sequence[(inside | per_channel) & (sequence >= 0)])
    node = rows.mask_prefix(BACKWARD_PREFIX) & rows.main
    backward = node & np.isin(sequence, forward) & (sequence >= 0)
    classes = sorted({module_class(str(x)) for x in rows.name_of(np.flatnonzero(frames))})
    return Normalization(
        native=native,
        trained=trained,
        frozen_native=frozen_native,
        unknown=unknown,
        modules=frames,
        inside=inside,
        per_channel=per_channel,
        backward=backward,
        module_classes=classes,
        per_channel_channels=channels,
    )


def normalization_table(fw: FrameworkAnalysis, found: Normalization) -> pd.DataFrame:
    """The view's line per kind of norm: norms per step (forward calls), typical ms per
    step (forward and backward), share of the step, and whether folding it applies (a
    norm of unknown mode only at inference)."""
    rows = fw.rows
    assert rows is not None
    forward = rows.phase == PHASES.index("forward")
    elementwise = fw.calls_per_step(found.modules) + len(found.per_channel_channels)
    kinds = [
        ("batch norm, trained (ATen kernels)", found.trained, False, None),
        ("batch norm, eval mode (ATen kernels)", found.frozen_native, True, None),
        ("batch norm, mode not recorded (ATen kernels)", found.unknown, not fw.is_training, None),
        ("frozen norm as elementwise ops", found.elementwise | found.backward, True, elementwise),
    ]
    out = []
    for kind, mask, foldable, calls in kinds:
        ms = fw.typical_ms(mask)
        if not ms:
            continue
        out.append(
            {
                "kind": kind,
                "foldable": foldable,
                "calls_per_step": fw.calls_per_step(mask & forward) if calls is None else calls,
                "ms_per_step": ms,
                "share": fw.share(ms),
            }
        )
    return pd.DataFrame(out, columns=list(NORMALIZATION_COLUMNS))
