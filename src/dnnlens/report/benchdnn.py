"""benchdnn reproducers for the primitives that cost the most time.

Each primitive becomes one benchdnn batch line (driver options, then the problem), following
oneDNN's own docs (``tests/benchdnn/doc/driver_*.md``, ``knobs_attr.md``, ``knobs_common.md``,
``knobs_tag.md``) and the conventions of oneDNN's ``scripts/verbose_converter`` (its
``benchdnn_generator.py``): ``--reset`` first so one line does not inherit another's
options; a memory descriptor the framework created with format ``any`` (property ``a``)
becomes tag ``any``, so the library picks the layout it picked in the run; scale and zero
point values, which verbose does not print, get the converter's placeholders.

A benchdnn run takes one driver (``benchdnn --conv ...``), so lines are grouped per driver:
save a group to a file and run ``benchdnn --mode=P --conv --batch=conv.batch``.

A batch line is a command for benchdnn, and its values come from a log: every token is
checked (:func:`check_tokens`) against what the knobs docs allow, so a problem descriptor
``mb1ic3 --batch=/etc/passwd`` or ``--engine=gpu`` is not reproduced rather than copied.
Comment lines carry log text shown terminal-safe (:func:`dnnlens.textsafe.safe`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.shares import share
from dnnlens.fmt import pct_cell
from dnnlens.model import DATA_TYPES, Attrs, LineRecord, MdList, MemDesc
from dnnlens.textsafe import safe

#: The knobs this module writes (benchdnn ``knobs_*.md`` and the driver docs); a token
#: with any other name never reaches a batch line.
KNOBS = frozenset(
    {
        "--reset", "--allow-enum-tags-only", "--engine", "--dir", "--prop", "--alg", "--dt",
        "--sdt", "--ddt", "--bia-dt", "--tag", "--stag", "--wtag", "--dtag", "--strides",
        "--bia_mask", "--runtime_dims_masks", "--runtime-dim-mask", "--cross-engine",
        "--iflag", "--oflag", "--alpha", "--beta", "--flags", "--axis", "--direction",
        "--activation", "--cfg", "--with-projection", "--with-peephole", "--attr-post-ops",
        "--attr-scales", "--attr-zero-points", "--attr-scratchpad", "--attr-fpmath",
        "--attr-acc-mode", "--attr-rounding-mode", "--attr-deterministic",
    }
)  # fmt: skip
#: A knob's value: names, numbers, and the separators of tags, post-ops and scales.
_VALUE = re.compile(r"[A-Za-z0-9_.:+*-]*", re.ASCII)
#: A problem descriptor: dims (``2x16x7x7``, ``:``-joined) or named values (``mb1_ic3oc16``).
_PROBLEM = re.compile(r"[A-Za-z0-9_.:*]+", re.ASCII)

#: prop_kind -> benchdnn ``--dir`` (benchdnn knobs: FWD_D, FWD_I, FWD_B, BWD_D, BWD_W ...).
DIRS = {
    "forward_training": "FWD_D",
    "forward": "FWD_D",
    "forward_inference": "FWD_I",
    "forward_scoring": "FWD_I",
    "backward_data": "BWD_D",
    "backward_weights": "BWD_W",
    "backward": "BWD_DW",
    "backward_bias": "BWD_W",
}
#: verbose primitive kind -> benchdnn driver.
DRIVERS = {
    "convolution": "conv",
    "deconvolution": "deconv",
    "inner_product": "ip",
    "matmul": "matmul",
    "gemm_api": "matmul",
    "reorder": "reorder",
    "pooling": "pool",
    "pooling_v2": "pool",
    "eltwise": "eltwise",
    "batch_normalization": "bnorm",
    "binary": "binary",
    "sum": "sum",
    "softmax": "softmax",
    "softmax_v2": "softmax",
    "logsoftmax": "softmax",
    "rnn": "rnn",
}
POOL_ALGS = {
    "pooling_max": "max",
    "pooling_avg_exclude_padding": "avg_np",
    "pooling_avg_include_padding": "avg_p",
    "pooling_avg": "avg_np",
}
RNN_ALGS = {
    "vanilla_rnn": "VANILLA_RNN",
    "vanilla_lstm": "VANILLA_LSTM",
    "vanilla_gru": "VANILLA_GRU",
    "lbr_gru": "LBR_GRU",
    "vanilla_augru": "VANILLA_AUGRU",
    "lbr_augru": "LBR_AUGRU",
}
RNN_DIRECTIONS = {
    "unidirectional_left2right": "left2right",
    "unidirectional": "left2right",
    "unidirectional_right2left": "right2left",
    "bidirectional_concat": "concat",
    "bidirectional_sum": "sum",
}
RNN_ACTIVATIONS = {"eltwise_relu": "RELU", "eltwise_logistic": "LOGISTIC", "eltwise_tanh": "TANH"}
#: bnorm numeric flags of v1.x - v2.x (dnnl_normalization_flags_t) -> benchdnn letters.
BNORM_FLAG_BITS = ((0x1, "G"), (0x2, "CH"), (0x4, "R"), (0x8, "C"), (0x10, "H"), (0x20, "A"))
SCALE_PLACEHOLDER = "0.5"
ZERO_POINT_PLACEHOLDER = "1"


class Unsupported(ValueError):
    """A primitive this module cannot turn into a benchdnn line; the message says why."""


@dataclass
class Case:
    """One benchdnn problem: driver, options, problem descriptor, and notes for the reader."""

    driver: str
    options: list[str]
    problem: str
    notes: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The batch line (without the driver, which a benchdnn run takes once)."""
        return " ".join([*self.options, self.problem])


# ---------------------------------------------------------------------------------------
# small helpers


def _find(mds: MdList, *args: str) -> MemDesc | None:
    for name in args:
        md = mds.get(name)
        if md is not None:
            return md
    return None


def _present(md: MemDesc | None) -> bool:
    return md is not None and not md.is_absent


def _tag(md: MemDesc) -> str:
    """benchdnn tag of a descriptor: ``any`` when the user asked for any, else its layout."""
    if "a" in md.props or md.format_kind in ("any", "wino", "rnn_packed"):
        return "any"
    return md.layout or "any"


def _dts(*mds: MemDesc | None) -> str:
    """``f32`` when all present types agree (benchdnn broadcasts one value), else joined."""
    dts = [md.dtype for md in mds if md is not None and md.dtype]
    if dts and all(d == dts[0] for d in dts):
        return dts[0]
    return ":".join(dts)


def _direction(prop_kind: str, kind: str) -> str:
    if prop_kind not in DIRS:
        raise Unsupported(f"prop_kind {prop_kind!r} has no benchdnn direction")
    return DIRS[prop_kind]


def _alg(aux: Mapping[str, str], prefix: str) -> str | None:
    alg = aux.get("alg")
    if not alg:
        return None
    return alg[len(prefix) :] if alg.startswith(prefix) else alg


def _has_compensation(md: MemDesc) -> bool:
    return md.flags not in ("", "0") or "s8m" in md.extra or "zpm" in md.extra


def _strides_or_tags(named: list[tuple[str, MemDesc | None]]) -> list[str]:
    """``--stag/--wtag/--dtag`` and, for plain layouts with non-dense strides, ``--strides``."""
    tags, strides = [], []
    for arg, md in named:
        if md is None:
            continue
        tag = _tag(md)
        if arg == "w" and _has_compensation(md):
            tag = "any"
        if md.strides and tag != "any" and tag.lower() == tag:
            strides.append(md.strides)
        else:
            tags.append(f"--{arg}tag={tag}")
            strides.append("")
    if any(strides):
        tags.append("--strides=" + ":".join(strides))
    return tags


# ---------------------------------------------------------------------------------------
# attributes (benchdnn knobs_attr.md)


def _policy(mask: str, driver: str) -> str:
    if not mask.isdigit():
        return mask or "common"
    m = int(mask)
    if m == 0:
        return "common"
    if driver == "reorder":
        return {1: "per_dim_0", 2: "per_dim_1", 3: "per_dim_01"}.get(m, "per_tensor")
    if driver == "matmul":
        if m in (1, 2, 4, 8):
            return "per_oc"
        return "per_ocic" if m in (3, 6, 12) else "per_tensor"
    return "per_oc" if m in (1, 2, 3) else "per_tensor"


def _quant(
    entries: tuple[Any, ...],
    driver: str,
    placeholder: str,
    default_dt: str,
    notes: list[str],
    what: str,
) -> str:
    parts = []
    for q in entries:
        arg = q.arg
        if arg == "oscale":  # <= v3.0 output scales: the nearest v3 attribute
            arg = "dst" if _policy(q.mask, driver) == "common" else "wei"
            notes.append("output scales (attr-oscale) reproduced as " + arg + " scales")
        policy = _policy(q.mask, driver)
        text = f"{arg}:{policy}"
        if policy == "common":
            value = q.value.rstrip("*") if q.value and q.value != "*" else ""
            if not value:
                value = placeholder
                notes.append(f"{what} values are not in the log: {placeholder} is a placeholder")
            text += f":{value}"
        if (q.dtype and q.dtype != default_dt) or q.groups:
            text += f":{q.dtype or default_dt}"
        if q.groups:
            text += f":{q.groups}"
        parts.append(text)
    return "+".join(parts)


def _post_op(po: Any, driver: str, notes: list[str]) -> str | None:
    if po.kind == "eltwise":
        alg = po.short_alg.replace("_use_dst_for_bwd", "_dst")
        return ":".join([alg, *po.args])
    if po.kind == "sum":
        return ":".join(["sum", *po.args])
    if po.kind == "binary":
        return ":".join([po.short_alg, *po.args[:3]])
    if po.kind == "dw":
        spec = po.args[0] if po.args else ""
        dt = next((a for a in po.args[1:] if a in DATA_TYPES), "")
        return f"dw:{spec}" + (f":{dt}" if dt else "")
    if po.kind == "prelu":
        mask = po.args[0] if po.args else "0"
        return "prelu" if mask == "0" else f"prelu:{_policy(mask, driver)}"
    notes.append(f"post-op {po.raw!r} is not reproduced")
    return None


def attr_options(attrs: Attrs, driver: str, notes: list[str]) -> list[str]:
    """benchdnn ``--attr-*`` options for a parsed attributes field."""
    out = []
    if attrs.post_ops:
        ops = [p for p in (_post_op(po, driver, notes) for po in attrs.post_ops) if p]
        if ops:
            out.append("--attr-post-ops=" + "+".join(ops))
    if attrs.scales:
        out.append(
            "--attr-scales="
            + _quant(attrs.scales, driver, SCALE_PLACEHOLDER, "f32", notes, "scale")
        )
    if attrs.zero_points:
        out.append(
            "--attr-zero-points="
            + _quant(attrs.zero_points, driver, ZERO_POINT_PLACEHOLDER, "s32", notes, "zero-point")
        )
    simple = {
        "scratchpad": "scratchpad",
        "scratchpad_mode": "scratchpad",
        "fpmath": "fpmath",
        "fpmath_mode": "fpmath",
        "acc-mode": "acc-mode",
        "rounding-mode": "rounding-mode",
        "deterministic": "deterministic",
    }
    handled = {"post-ops", "post_ops", "scales", "zero-points", "zero_points", "oscale"}
    for name, value in attrs.items.items():
        if name in simple:
            if name == "deterministic":
                value = "true" if value in ("1", "true") else "false"
            out.append(f"--attr-{simple[name]}={value}")
        elif name not in handled:
            notes.append(f"attribute {name}:{value} is not reproduced")
    return out


# ---------------------------------------------------------------------------------------
# one function per driver


def _conv_like(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], driver: str, notes: list[str]
) -> tuple[list[str], str]:
    src = _find(mds, "src", "diff_src")
    wei = _find(mds, "wei", "diff_wei")
    bia = _find(mds, "bia", "diff_bia", "bias")
    dst = _find(mds, "dst", "diff_dst")
    if src is None or wei is None or dst is None:
        raise Unsupported("missing src, weights or dst descriptor")
    d = _direction(r.prop_kind, r.kind)
    opts: list[str] = []
    if _present(bia):
        assert bia is not None
        if d == "FWD_D":
            d = "FWD_B"
        elif d == "BWD_W":
            d = "BWD_WB"
        if d in ("FWD_I", "BWD_D") or bia.dtype != "f32":
            opts.append(f"--bia-dt={bia.dtype}")
    opts.insert(0, f"--dir={d}")
    if driver in ("conv", "deconv"):
        alg = _alg(aux, "deconvolution_" if driver == "deconv" else "convolution_")
        if alg:
            opts.append(f"--alg={alg}")
    opts.append(f"--dt={_dts(src, wei, dst)}")
    opts += _strides_or_tags([("s", src), ("w", wei), ("d", dst)])
    return opts, r.problem


def _matmul(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    src, wei, dst = _find(mds, "src"), _find(mds, "wei"), _find(mds, "dst")
    bia = _find(mds, "bia")
    if src is None or wei is None or dst is None:
        raise Unsupported("missing src, weights or dst descriptor")
    opts = [f"--dt={_dts(src, wei, dst)}"]
    if _present(bia):
        assert bia is not None
        opts.append(f"--bia-dt={bia.dtype}")
        if bia.mask:
            opts.append(f"--bia_mask={bia.mask}")
    if aux.get("runtime_dims_masks"):
        opts.append(f"--runtime_dims_masks={aux['runtime_dims_masks']}")
    opts += _strides_or_tags([("s", src), ("w", wei), ("d", dst)])
    problem = r.problem
    prb = r.parsed_problem
    if prb.form == "named":  # v1.2 - v2.1 [b<B>]m<M>n<N>k<K>
        m, n, k, b = (prb.get(x) for x in ("M", "N", "K", "B"))
        if None in (m, n, k):
            raise Unsupported(f"matmul problem {r.problem!r} has runtime dimensions")
        batch = f"{b}x" if b and b > 1 else ""
        problem = f"{batch}{m}x{k}:{batch}{k}x{n}"
    if r.kind == "gemm_api":
        notes.append(
            "gemm_api call (dnnl_sgemm and friends) reproduced as a matmul; "
            "leading dimensions and alpha/beta are not"
        )
    return opts, problem


def _reorder(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    src, dst = _find(mds, "src", "in"), _find(mds, "dst", "out")
    if src is None or dst is None:
        raise Unsupported("missing src or dst descriptor")
    opts = []
    if "2" in r.engine:  # cpu2gpu / gpu2cpu
        opts.append(f"--cross-engine={r.engine}")
    opts += [f"--sdt={src.dtype}", f"--ddt={dst.dtype}"]
    opts += _strides_or_tags([("s", src), ("d", dst)])
    for md, flag in ((src, "--iflag="), (dst, "--oflag=")):
        comp = []
        for extra in md.extra.split(":"):
            if extra.startswith("s8m"):
                comp.append(f"s8s8_comp:{extra[3:]}")
            elif extra.startswith("zpm"):
                comp.append(f"zp_comp:{extra[3:]}")
        if comp:
            opts.append(flag + "+".join(comp))
    if aux.get("runtime-dim-mask"):
        opts.append(f"--runtime-dim-mask={aux['runtime-dim-mask']}")
    return opts, r.problem


def _pool(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    src, dst = _find(mds, "src", "diff_src"), _find(mds, "dst", "diff_dst")
    if src is None or dst is None:
        raise Unsupported("missing src or dst descriptor")
    opts = [
        f"--dir={_direction(r.prop_kind, r.kind)}",
        f"--dt={_dts(src, dst)}",
        f"--tag={_tag(src)}",
    ]
    alg = aux.get("alg", "")
    if alg:
        opts.append(f"--alg={POOL_ALGS.get(alg, alg)}")
    return opts, r.problem


def _eltwise(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    data = _find(mds, "src", "data", "diff_src", "dst")
    if data is None:
        raise Unsupported("missing data descriptor")
    opts = [f"--dir={_direction(r.prop_kind, r.kind)}", f"--dt={data.dtype}", f"--tag={_tag(data)}"]
    alg = _alg(aux, "eltwise_")
    if alg:
        opts.append(f"--alg={alg.replace('_use_dst_for_bwd', '_dst')}")
    for key in ("alpha", "beta"):
        if aux.get(key) not in (None, "", "0"):
            opts.append(f"--{key}={aux[key]}")
    return opts, r.problem


def _bnorm(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    data = _find(mds, "src", "data", "diff_src")
    if data is None:
        raise Unsupported("missing data descriptor")
    opts = [f"--dir={_direction(r.prop_kind, r.kind)}", f"--dt={data.dtype}", f"--tag={_tag(data)}"]
    flags = aux.get("flags", "")
    if flags.isdigit():
        value = int(flags)
        flags = "".join(letters for bit, letters in BNORM_FLAG_BITS if value & bit)
        notes.append(f"numeric bnorm flags {aux['flags']} read as {flags or 'none'}")
    if flags:
        opts.append(f"--flags={flags}")
    return opts, r.problem


def _sources(mds: MdList) -> list[MemDesc]:
    names = ("src", "src0", "src1", "src2", "src_0", "src_1", "src_2")
    return [
        md for md in mds if md.arg in names or (md.arg.startswith("src") and md.arg[3:].isdigit())
    ]


def _binary_or_sum(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], driver: str, notes: list[str]
) -> tuple[list[str], str]:
    srcs, dst = _sources(mds), _find(mds, "dst")
    if not srcs or dst is None:
        raise Unsupported("missing source or dst descriptors")
    opts = [
        "--sdt=" + ":".join(md.dtype for md in srcs),
        f"--ddt={dst.dtype}",
        "--stag=" + ":".join(_tag(md) for md in srcs),
        f"--dtag={_tag(dst)}",
    ]
    problem = r.problem.split(" ", 1)[0]
    if driver == "binary":
        alg = _alg(aux, "binary_")
        if alg:
            opts.insert(0, f"--alg={alg}")
    return opts, problem


def _softmax(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    src = _find(mds, "src", "diff_src", "data")
    dst = _find(mds, "dst", "diff_dst") or src
    if src is None or dst is None:
        raise Unsupported("missing src or dst descriptor")
    opts = [
        f"--dir={_direction(r.prop_kind, r.kind)}",
        f"--sdt={src.dtype}",
        f"--ddt={dst.dtype}",
        f"--stag={_tag(src)}",
        f"--dtag={_tag(dst)}",
    ]
    alg = aux.get("alg") or ("softmax_log" if r.kind == "logsoftmax" else "")
    if alg:
        opts.append(f"--alg={alg}")
    if aux.get("axis"):
        opts.append(f"--axis={aux['axis']}")
    return opts, r.problem


def _rnn(
    r: LineRecord, mds: MdList, aux: Mapping[str, str], notes: list[str]
) -> tuple[list[str], str]:
    opts = [f"--prop={_direction(r.prop_kind, r.kind)}"]
    alg = RNN_ALGS.get(aux.get("alg", ""))
    if alg:
        opts.append(f"--alg={alg}")
    direction = RNN_DIRECTIONS.get(aux.get("direction", ""))
    if direction:
        opts.append(f"--direction={direction}")
    activation = RNN_ACTIVATIONS.get(aux.get("activation", ""))
    if activation and alg == "VANILLA_RNN":
        opts.append(f"--activation={activation}")
    states = [
        md
        for md in mds
        if md.arg in ("src_iter", "src_iter_c", "src_layer", "dst_iter", "dst_layer")
        and not md.is_absent
    ]
    bias = _find(mds, "bias")
    dts = {md.dtype for md in states}
    if len(dts) == 1 and dts <= {"f32", "f16"}:
        cfg = dts.pop()
    elif dts == {"bf16"}:
        cfg = "bf16" + (bias.dtype if _present(bias) and bias and bias.dtype != "bf16" else "")
    else:
        cfg = "".join(md.dtype for md in states)
    opts.append(f"--cfg={cfg}")
    diff = any(md.arg.startswith("diff_") for md in mds)
    names = ("src_layer", "wei_layer", "dst_layer")
    layer = [_find(mds, f"diff_{n}" if diff else n) for n in names]
    if all(md is not None for md in layer):
        opts.append("--tag=" + ":".join(_tag(md) for md in layer if md is not None))
    if _present(_find(mds, "wei_proj")):
        opts.append("--with-projection=true")
    if _present(_find(mds, "wei_peephole")):
        opts.append("--with-peephole=true")
    return opts, r.problem


def benchdnn_case(r: LineRecord) -> Case:
    """The benchdnn problem reproducing one primitive; raises :class:`Unsupported`."""
    driver = DRIVERS.get(r.kind)
    if driver is None:
        raise Unsupported(f"no benchdnn conversion for primitive kind {r.kind!r}")
    mds = r.parsed_mds
    if mds.overflow or not len(mds):
        raise Unsupported("memory descriptors were not printed (or overflowed)")
    aux = r.parsed_aux
    notes: list[str] = []
    if driver in ("conv", "deconv", "ip"):
        opts, problem = _conv_like(r, mds, aux, driver, notes)
    elif driver == "matmul":
        opts, problem = _matmul(r, mds, aux, notes)
    elif driver == "reorder":
        opts, problem = _reorder(r, mds, aux, notes)
    elif driver == "pool":
        opts, problem = _pool(r, mds, aux, notes)
    elif driver == "eltwise":
        opts, problem = _eltwise(r, mds, aux, notes)
    elif driver == "bnorm":
        opts, problem = _bnorm(r, mds, aux, notes)
    elif driver in ("binary", "sum"):
        opts, problem = _binary_or_sum(r, mds, aux, driver, notes)
    elif driver == "softmax":
        opts, problem = _softmax(r, mds, aux, notes)
    else:
        opts, problem = _rnn(r, mds, aux, notes)
    if not problem or "*" in problem or problem == "#":
        raise Unsupported(f"problem descriptor {r.problem!r} cannot be reproduced")
    attrs = attr_options(r.parsed_attrs, driver, notes) if r.kind != "gemm_api" else []
    engine = r.engine.split("2")[-1] if "2" in r.engine else (r.engine or "cpu")
    head = ["--reset", "--allow-enum-tags-only=false", f"--engine={engine}"]
    options = head + opts + attrs
    check_tokens(options, problem)
    return Case(driver, options, problem, list(dict.fromkeys(notes)))


def check_tokens(options: list[str], problem: str) -> None:
    """:class:`Unsupported` unless every option is a known knob with a plain value and the
    problem is one descriptor token (no space, no ``--``, no path, no quote)."""
    for option in options:
        name, _, value = option.partition("=")
        if name not in KNOBS or not _VALUE.fullmatch(value) or "--" in value:
            raise Unsupported(f"option {option[:60]!r} is not one benchdnn takes from a log")
    if not _PROBLEM.fullmatch(problem):
        raise Unsupported(f"problem descriptor {problem[:60]!r} is not one benchdnn token")


# ---------------------------------------------------------------------------------------
# the batch


@dataclass
class Entry:
    """One top primitive and its reproducer (or why there is none)."""

    record: LineRecord
    count: int
    time_ms: float
    #: of the summed exec time (``None``: nothing timed)
    share: float | None
    example: str
    case: Case | None
    reason: str = ""


def top_entries(analysis: Analysis, top: int) -> list[Entry]:
    """The ``top`` primitives of the analysis's ranking (``Analysis.primitives``: total exec
    time over all events, the report's order), each with its benchdnn case.

    Distinct log lines that give the same benchdnn line (same problem, two
    implementations) are merged.
    """
    total = analysis.summary.total_time_ms
    out: list[Entry] = []
    by_line: dict[tuple[str, str], Entry] = {}
    for p in analysis.primitives:
        r = analysis.log.records[int(p["record"])]
        try:
            case: Case | None = benchdnn_case(r)
            reason = ""
        except Unsupported as exc:
            case, reason = None, str(exc)
        # an untimed primitive (no time field on its lines) adds no time, as in the summary
        count, ms = int(p["count"]), float(p["time_ms"]) if p["time_ms"] == p["time_ms"] else 0.0
        if case is not None and (case.driver, case.line) in by_line:
            e = by_line[(case.driver, case.line)]
            e.count += count
            e.time_ms += ms
            e.share = share(e.time_ms, total)
            continue
        if len(out) >= top:
            continue
        e = Entry(r, count, ms, share(ms, total), str(p["example"]), case, reason)
        out.append(e)
        if case is not None:
            by_line[(case.driver, case.line)] = e
    return out


def _entry_comment(e: Entry) -> list[str]:
    """Comment lines about one entry; log text in them is terminal-safe and one line."""
    r = e.record
    lines = [
        f"# {e.time_ms:.3f} ms ({pct_cell(e.share)}), {e.count} executions, "
        f"{safe(r.kind)} {safe(r.impl or '-')} {safe(r.prop_kind)}, first at {safe(e.example)}"
    ]
    if e.case is not None:
        lines += [f"#   note: {safe(n)}" for n in e.case.notes]
    return lines


def batches(analysis: Analysis, top: int = 10) -> dict[str, str]:
    """One batch file text per driver (``{"conv": "...", "reorder": "..."}``)."""
    groups: dict[str, list[Entry]] = {}
    for e in top_entries(analysis, top):
        if e.case is not None:
            groups.setdefault(e.case.driver, []).append(e)
    out = {}
    for driver, entries in groups.items():
        ms = sum(e.time_ms for e in entries)
        text = [
            f"# --{driver}: {len(entries)} primitive(s), {ms:.3f} ms",
            f"# run: benchdnn --mode=P --{driver} --batch={driver}.batch",
        ]
        for e in entries:
            assert e.case is not None
            text += _entry_comment(e)
            text.append(e.case.line)
        out[driver] = "\n".join(text) + "\n"
    return out


def render_batch(analysis: Analysis, top: int = 10) -> str:
    """All reproducers as text, grouped per driver, with the ones that could not be made."""
    entries = top_entries(analysis, top)
    inputs = ", ".join(safe(s.path) for s in analysis.log.scans)
    out = [
        f"# dnnlens: benchdnn reproducers for the top {len(entries)} primitives of "
        f"{inputs} (by total exec time)",
        "# A benchdnn run takes one driver: save each section below to <driver>.batch and run",
        "#   benchdnn --mode=P --<driver> --batch=<driver>.batch",
        "# (dnnlens export benchdnn LOG -o DIR writes those files for you)",
    ]
    for driver, text in batches(analysis, top).items():
        out += ["", f"# ==== {driver} ====", text.rstrip("\n")]
    skipped = [e for e in entries if e.case is None]
    if skipped:
        out += ["", "# ==== not reproduced ===="]
        for e in skipped:
            out += _entry_comment(e)
            out.append(f"#   {safe(e.reason)}")
    return "\n".join(out) + "\n"
