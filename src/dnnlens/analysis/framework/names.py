"""What the names in a PyTorch profiler trace mean: phases, categories, op families.

One place for the vocabulary, so that the framework view and the framework rules agree on
what counts as, say, an optimizer step or a cast.
"""

from __future__ import annotations

import re

#: The phases of a step, in report order.
PHASES = ("data loading", "forward", "backward", "optimizer", "other")

#: Trace categories of framework work on the CPU (device kernels and flows are not).
CPU_CATEGORIES = frozenset(
    {"cpu_op", "user_annotation", "python_function", "operator", "Operator", ""}
)
#: Categories of ops that the framework dispatched (ATen ops, autograd nodes, custom ops).
OP_CATEGORIES = frozenset({"cpu_op", "operator", "Operator", ""})
PYTHON_CATEGORY = "python_function"

STEP_PREFIX = "ProfilerStep#"
MODULE_PREFIX = "nn.Module: "

#: Name prefix -> phase of the annotations and autograd nodes that mark a phase. Anything
#: else the framework dispatched at the top of a step is forward work; the time between
#: them (Python, untracked) is "other".
PHASE_MARKERS: tuple[tuple[str, str], ...] = (
    ("enumerate(DataLoader)#", "data loading"),
    ("Optimizer.step#", "optimizer"),
    ("Optimizer.zero_grad#", "optimizer"),
    ("autograd::engine::evaluate_function:", "backward"),
)
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"
DATALOADER_PREFIX = "enumerate(DataLoader)#"
BACKWARD_PREFIX = "autograd::engine::evaluate_function:"


def marker_phase(name: str) -> str | None:
    """The phase a marker name opens, or None when ``name`` is no phase marker."""
    for prefix, phase in PHASE_MARKERS:
        if name.startswith(prefix):
            return phase
    return None


def module_class(instance: str) -> str:
    """``nn.Module: Conv2d_3`` or ``Conv2d_3`` -> ``Conv2d``."""
    name = instance.removeprefix(MODULE_PREFIX)
    return re.sub(r"_\d+$", "", name)


#: Pointwise math and reductions: each one a pass over memory that a fused kernel
#: (torch.compile, a custom op) would do in one.
ELEMENTWISE = frozenset(
    f"aten::{n}"
    for n in (
        "add add_ sub sub_ rsub mul mul_ div div_ neg neg_ pow pow_ exp exp_ log log_ log1p "
        "sqrt sqrt_ rsqrt rsqrt_ abs sigmoid sigmoid_ tanh tanh_ relu relu_ clamp clamp_ "
        "clamp_min clamp_min_ clamp_max where lerp lerp_ addcmul addcmul_ addcdiv addcdiv_ "
        "reciprocal reciprocal_ square sign eq ne gt lt ge le logical_and logical_or "
        "logical_not masked_fill masked_fill_ minimum maximum softplus "
        "binary_cross_entropy_with_logits binary_cross_entropy sigmoid_backward "
        "threshold_backward mse_loss smooth_l1_loss sum mean amax amin max min prod "
        "norm var std"
    ).split()
)
#: Ops that only describe a tensor (no data pass): they never break a chain.
VIEWS = frozenset(
    f"aten::{n}"
    for n in (
        "view reshape _reshape_alias expand expand_as squeeze unsqueeze permute transpose t "
        "select slice as_strided alias detach detach_ flatten unflatten narrow view_as "
        "_unsafe_view broadcast_to empty empty_like empty_strided ones_like zeros_like "
        "full_like fill_ zero_ lift_fresh item _local_scalar_dense result_type"
    ).split()
)
#: Autograd nodes of the elementwise ops above, as ``autograd::engine::evaluate_function:
#: MulBackward0``: the node's name is the op's in CamelCase, nothing after it (a free suffix
#: would take ``AddmmBackward0``, ``ToCopyBackward0``, ``LogSoftmaxBackward0`` for ``Add``,
#: ``T...``, ``Log...``).
ELEMENTWISE_BACKWARD = re.compile(
    r"^autograd::engine::evaluate_function: (?:Add|Sub|Rsub|Mul|Div|Neg|Pow|Exp|Log|Log1P|"
    r"Sqrt|Rsqrt|Abs|Sigmoid|Tanh|Relu|Clamp|ClampMin|ClampMax|Where|Lerp|Addcmul|Addcdiv|"
    r"Reciprocal|Sign|MaskedFill|Minimum|Maximum|Softplus|BinaryCrossEntropyWithLogits|"
    r"BinaryCrossEntropy|MseLoss|SmoothL1Loss|Sum|Mean|Amax|Amin|Max|Min|Prod|Norm|"
    r"LinalgVectorNorm|Var|Std)Backward\d+$"
)
#: Autograd nodes of the views above (``ViewBackward0``, ``TBackward0`` ...): they reshape
#: a gradient, no pass over its data, so like views they never break a chain.
VIEW_BACKWARD = re.compile(
    r"^autograd::engine::evaluate_function: (?:View|Reshape|ReshapeAlias|Expand|Squeeze|"
    r"Unsqueeze|Permute|Transpose|T|Select|Slice|UnsafeView|Alias|Detach)Backward\d+$"
)

#: The per-parameter math of an unfused optimizer (``foreach=False``).
OPTIMIZER_PER_PARAMETER = frozenset(
    f"aten::{n}"
    for n in (
        "add_ add mul_ mul addcmul_ addcdiv_ lerp_ sqrt sqrt_ div_ div sub_ neg maximum "
        "maximum_ copy_ clone sign_ pow"
    ).split()
)
#: Multi-tensor and fused optimizer kernels.
OPTIMIZER_FUSED = re.compile(r"^aten::_(?:foreach_|fused_)")
#: Fused optimizer kernels (``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_``,
#: ``_fused_adagrad_``): one call updates every parameter; what runs inside is its own.
FUSED_OPTIMIZER = re.compile(r"^aten::_fused_")

#: Casts between dtypes (autocast inserts them before every low-precision op).
CAST_OPS = frozenset({"aten::_to_copy", "aten::copy_"})
#: Ops that can change a tensor's memory format.
LAYOUT_OPS = frozenset({"aten::contiguous", "aten::clone", "aten::copy_"})
#: ATen's own batch norm kernels (oneDNN's is ``aten::mkldnn_batch_norm``).
NATIVE_NORMALIZATION = frozenset(
    {
        "aten::native_batch_norm",
        "aten::native_batch_norm_backward",
        "aten::_native_batch_norm_legit",
        "aten::_native_batch_norm_legit_no_training",
        "aten::batch_norm_backward",
    }
)
#: Module classes that normalise.
NORM_MODULE = re.compile(r"(?:Frozen)?BatchNorm|FrozenBN|GroupNorm|LayerNorm|Norm\d?d?$")
