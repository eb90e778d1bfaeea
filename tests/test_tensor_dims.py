"""Tensor dims (dnnlens.analysis.tensor_dims), the one mapping the cost model and the op
graph share, on problem strings read from real logs: named descriptors and dims lists.

Every line is taken from sample_logs/, sample_logs/legacy/ or tests/data/corpus/ (the test
finds it there) unless marked *synthetic*: no log here has a convolution with more than one
group, so the depthwise case is the format doc's example (§4.3); no log has a concat or a
softmax line, nor a runtime dim in a dims list, so those are built from the format.
"""

from __future__ import annotations

import glob
from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.costmodel import padded_elements, primitive_cost
from dnnlens.analysis.graph import build_graph, op_tensors
from dnnlens.analysis.tensor_dims import (
    Dims,
    broadcast_dims,
    conv_weights_grouped,
    list_dst_dims,
    list_groups,
    list_tensor_dims,
    named_tensor_dims,
)
from dnnlens.parsers.attrs import parse_aux
from dnnlens.parsers.memdesc import MemDesc, parse_mds
from dnnlens.parsers.problem import parse_problem
from dnnlens.parsers.records import LineRecord
from dnnlens.reading import load

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
LEGACY = SAMPLES / "legacy"
CORPUS = ROOT / "tests" / "data" / "corpus"
ALL_LOGS = sorted(
    glob.glob(str(SAMPLES / "*.log"))
    + glob.glob(str(LEGACY / "*.log"))
    + glob.glob(str(CORPUS / "*.log"))
)


@cache
def _records(path: Path) -> tuple[LineRecord, ...]:
    return tuple(load([str(path)]).records)


def line(path: Path, kind: str, problem: str) -> LineRecord:
    """The first record of ``path`` with this kind and problem (the line is real)."""
    found = [r for r in _records(path) if r.kind == kind and r.problem == problem]
    assert found, f"no {kind} {problem} in {path.name}"
    return found[0]


def dims_by_arg(r: LineRecord) -> dict[str, Dims | None]:
    """``named_tensor_dims`` of every present md of a record, by arg."""
    kind = r.kind.strip().lower().removesuffix("_v2")
    named = dict(parse_problem(kind, r.problem).dims)
    aux = parse_aux(r.aux)
    return {
        md.arg: named_tensor_dims(kind, named, md, aux)
        for md in parse_mds(r.mds)
        if not md.is_absent
    }


def md(arg: str, tag: str) -> MemDesc:
    """A blocked f32 md with this tag (``""``: no tag, rank unknown)."""
    return MemDesc(arg, "f32", "", "blocked" if tag else "any", tag, "", "0", "", None)


# ---------------------------------------------------------------------------------------
# convolutions


CONV1 = "mb50_g1ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3"


def test_grouped_g1_mkldnn0x_weights_have_the_group_dim():
    # 01_mkldnn0x_benchdnn_resnet_conv1.log: `g1` printed (old group position) with
    # fwei:gOhwi8o, a 5D tag: oneDNN prints g only for weights with the group dim.
    r = line(CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log", "convolution", CONV1)
    assert dims_by_arg(r) == {
        "src": (50, 3, 224, 224),
        "wei": (1, 64, 3, 7, 7),
        "dst": (50, 64, 112, 112),
    }
    # the reorder that makes those weights prints them: 1x64x3x7x7, goihw -> gOhwi8o
    reorder = line(CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log", "reorder", "1x64x3x7x7")
    assert parse_problem("reorder", reorder.problem).tensors == ((1, 64, 3, 7, 7),)
    assert "gOhwi8o" in reorder.mds


def test_grouped_g1_cost_model_and_graph_agree():
    # The cost model used g > 1 alone and gave these weights (64, 3, 7, 7), rank 4 against
    # the rank-5 tag; the graph gave (1, 64, 3, 7, 7). Same count: the numbers of this line
    # do not change (F0 names such as gOhwi8o are not letter-coded: no padding is read).
    r = line(CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log", "convolution", CONV1)
    c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
    assert c is not None
    wei = next(t for t in c.tensors if t.arg == "wei")
    ins, _ = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
    assert wei.dims == next(t.dims for t in ins if t.arg == "wei") == (1, 64, 3, 7, 7)
    assert wei.elements == 9_408
    assert c.bytes == 190_706_432


def test_grouped_g1_blocked_tag_now_pads():
    # synthetic: a v2.3+ `g1` line whose weights are aBcde8b (oc per group blocked by 8).
    # The old cost model gave the weights 4 dims, so the rank-5 tag did not apply and oc 60
    # was counted unpadded (60*3*3*3 = 1620); the blocks pad it to 64: 64*3*3*3 = 1728.
    problem = "g1mb2_ic3oc60_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1"
    mds = (
        "src:f32::blocked:abcd::f0 wei:f32::blocked:aBcde8b::f0 bia:undef::undef::: "
        "dst:f32::blocked:aBcd8b::f0"
    )
    c = primitive_cost("convolution", problem, mds, "forward_inference", "", "")
    assert c is not None
    wei = next(t for t in c.tensors if t.arg == "wei")
    assert wei.dims == (1, 60, 3, 3, 3)
    assert wei.elements == padded_elements(wei.dims, "aBcde8b") == 1_728
    # src 2*3*14*14 = 1176, dst 2*60*14*14 = 23520 padded to 64 channels = 25088
    assert c.bytes == (1_176 + 1_728 + 25_088) * 4


@pytest.mark.parametrize(
    "problem",
    [
        "g32mb1_ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v2.3+ group position
        "mb1_g32ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v0.x - v2.2
    ],
)
@pytest.mark.parametrize("tag", ["Abcde8a", "abcde", "", "abcd"])
def test_depthwise_synthetic(problem, tag):
    # synthetic (format doc §4.3): depthwise, g == ic == oc == 32. Grouped whatever the
    # tag: by its rank (5), by g > 1 (no rank; or a rank-4 tag, which oneDNN never prints
    # for g > 1: the element count must still be oc * ic / g * taps).
    d = dict(parse_problem("convolution", problem).dims)
    assert conv_weights_grouped(d, md("wei", tag))
    assert named_tensor_dims("convolution", d, md("wei", tag), {}) == (32, 1, 1, 3, 3)
    assert named_tensor_dims("convolution", d, md("diff_wei", tag), {}) == (32, 1, 1, 3, 3)
    assert named_tensor_dims("convolution", d, md("src", "aBcd8b"), {}) == (1, 32, 112, 112)
    assert named_tensor_dims("convolution", d, md("bia", "a"), {}) == (32,)


@pytest.mark.parametrize(
    ("tag", "grouped"),
    [
        ("gOhwi8o", True),  # rank 5: grouped, g = 1 (the corpus line)
        ("abcde", True),
        ("", True),  # rank unknown: `g` printed, so the weights have the group dim
        ("OIhw8i8o", False),  # rank 4: the tag says no group dim, and g = 1 changes no count
    ],
)
def test_g1_follows_the_weights_rank(tag, grouped):
    d = dict(parse_problem("convolution", CONV1).dims)
    assert conv_weights_grouped(d, md("wei", tag)) is grouped
    want = (1, 64, 3, 7, 7) if grouped else (64, 3, 7, 7)
    assert named_tensor_dims("convolution", d, md("wei", tag), {}) == want


def test_plain_conv():
    # convnet_nchw_infer.log: wei Acdb8a (rank 4), no g printed
    problem = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
    r = line(SAMPLES / "convnet_nchw_infer.log", "convolution", problem)
    assert dims_by_arg(r) == {"src": (4, 3, 64, 64), "wei": (16, 3, 3, 3), "dst": (4, 16, 64, 64)}
    d = dict(parse_problem("convolution", problem).dims)
    assert not conv_weights_grouped(d, md("wei", "Acdb8a"))
    assert not conv_weights_grouped(d, md("wei", ""))
    # a rank-5 tag is the group dim even without `g`
    assert named_tensor_dims("convolution", d, md("wei", "abcde"), {}) == (1, 16, 3, 3, 3)


def test_plain_conv_legacy_with_bias():
    # legacy/onednn-2.0.0.log: v1 md syntax, bias present
    r = line(
        LEGACY / "onednn-2.0.0.log",
        "convolution",
        "mb2_ic8oc16_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1",
    )
    assert "bia_f32" in r.mds
    assert dims_by_arg(r) == {
        "src": (2, 8, 14, 14),
        "wei": (16, 8, 3, 3),
        "bia": (16,),
        "dst": (2, 16, 14, 14),
    }


# ---------------------------------------------------------------------------------------
# other kinds


def test_inner_product():
    # legacy/onednn-2.0.0.log: mb2ic16ih7iw7oc10, wei BcdA8b10a
    r = line(LEGACY / "onednn-2.0.0.log", "inner_product", "mb2ic16ih7iw7oc10")
    assert dims_by_arg(r) == {
        "src": (2, 16, 7, 7),
        "wei": (10, 16, 7, 7),
        "bia": (10,),
        "dst": (2, 10),
    }


def test_matmul_named_problem_now_in_the_graph():
    # legacy/onednn-2.0.0.log: the v1.2 - v2.1 `m<M>n<N>k<K>` problem. The op graph had no
    # dims for it (only the cost model read this form).
    r = line(LEGACY / "onednn-2.0.0.log", "matmul", "m32n48k64")
    assert dims_by_arg(r) == {"src": (32, 64), "wei": (64, 48), "dst": (32, 48)}
    ins, outs = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
    assert [t.dims for t in ins] == [(32, 64), (64, 48)]
    assert [t.dims for t in outs] == [(32, 48)]


def test_rnn_bias_now_in_the_graph():
    # lstm_infer.log: vanilla_lstm (4 gates), one layer, one direction. The op graph had
    # no dims for `bias` (nor wei_peephole / wei_proj).
    r = line(SAMPLES / "lstm_infer.log", "rnn", "l1t20mb4sic64slc32dhc64dic64")
    got = dims_by_arg(r)
    assert got["src_layer"] == (20, 4, 32)
    assert got["src_iter"] == (1, 1, 4, 64)
    assert got["wei_layer"] == (1, 1, 32, 4, 64)
    assert got["wei_iter"] == (1, 1, 64, 4, 64)
    assert got["bias"] == (1, 1, 4, 64)
    assert got["dst_layer"] == (20, 4, 64)
    ins, _ = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
    assert next(t.dims for t in ins if t.arg == "bias") == (1, 1, 4, 64)


def test_pooling_and_batch_norm():
    # legacy/onednn-3.0.0.log pooling (ws undef), legacy/onednn-2.0.0.log batch norm `data`
    r = line(
        LEGACY / "onednn-3.0.0.log", "pooling", "mb2ic16_ih14oh7kh2sh2dh0ph0_iw14ow7kw2sw2dw0pw0"
    )
    assert dims_by_arg(r) == {"src": (2, 16, 14, 14), "dst": (2, 16, 7, 7)}
    r = line(LEGACY / "onednn-2.0.0.log", "batch_normalization", "mb2ic16ih14iw14")
    assert dims_by_arg(r) == {"data": (2, 16, 14, 14)}


def test_reorder_is_a_dims_list_not_named():
    # all_timestamps_infer.log: a reorder prints its dims (`16x3x3x3`): no named values,
    # list_tensor_dims shapes it; the named mapping has nothing to say about it
    r = line(SAMPLES / "all_timestamps_infer.log", "reorder", "16x3x3x3")
    p = parse_problem("reorder", r.problem)
    assert p.tensors == ((16, 3, 3, 3),)
    assert not p.dims
    assert set(dims_by_arg(r).values()) == {None}
    c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
    assert c is not None
    assert [t.dims for t in c.tensors] == [(16, 3, 3, 3), (16, 3, 3, 3)]


def test_data_kinds_need_mb():
    # synthetic: a named problem without mb gives no data dims
    assert named_tensor_dims("eltwise", {"ic": 16}, md("data", "abcd"), {}) is None
    assert named_tensor_dims(
        "eltwise", {"mb": 2, "ic": 16, "ih": 4, "iw": 4}, md("diff", "abcd"), {}
    ) == (2, 16, 4, 4)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: Path(p).name)
def test_cost_model_and_graph_shape_every_line_alike(path):
    # on every line of every log, named or dims list: where both know a tensor's dims,
    # they are the same
    for r in {
        (r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs): r
        for r in _records(Path(path))
        if r.kind
    }.values():
        c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
        if c is None:
            continue
        ins, outs = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
        # by arg, in md order (a binary has two `src`)
        graph: dict[str, list[Dims | None]] = {}
        for t in (*ins, *outs):
            graph.setdefault(t.arg, []).append(t.dims)
        cost: dict[str, list[Dims | None]] = {}
        for t in c.tensors:
            cost.setdefault(t.arg, []).append(t.dims)
        for arg, dims in cost.items():
            if len(graph.get(arg, ())) != len(dims):
                continue  # the cost model adds tensors (sum `num:`, post-ops ...)
            for g, d in zip(graph[arg], dims, strict=True):
                assert g is None or g == d, (path, r.problem, arg)


# ---------------------------------------------------------------------------------------
# dims-list descriptors


def list_dims(r: LineRecord) -> list[tuple[str, Dims | None]]:
    """``list_tensor_dims`` of every present md of a record, as (arg, dims) in md order."""
    kind = r.kind.strip().lower().removesuffix("_v2")
    mdl = [md for md in parse_mds(r.mds) if not md.is_absent]
    dims = list_tensor_dims(kind, list_groups(r.problem), mdl, parse_aux(r.aux))
    return [(md.arg, d) for md, d in zip(mdl, dims, strict=True)]


def graph_dims(r: LineRecord) -> list[tuple[str, str]]:
    """The op graph's (arg, dims text) of the inputs then the outputs of a record."""
    ins, outs = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
    return [(t.arg, t.dims_text) for t in (*ins, *outs)]


def cost_of(r: LineRecord) -> tuple[int, int, list[tuple[str, Dims]]]:
    """FLOPs, bytes and (arg, dims) of the tensors of a record, per the cost model."""
    c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
    assert c is not None
    return c.flops, c.bytes, [(t.arg, t.dims) for t in c.tensors]


SRC0, SRC1 = (2, 16, 14, 14), (1, 16, 1, 1)


def test_list_groups_reads_space_separated_words():
    assert list_groups("2x16x14x14:1x16x1x1 2x16x14x14") == ((SRC0, SRC1), (SRC0,))
    assert list_groups("16x3x3x3") == (((16, 3, 3, 3),),)
    # runtime dims are unknown dims; a piece that is not dims is unknown as a whole
    assert list_groups("*x64:64x48") == (((None, 64), (64, 48)),)
    assert list_groups("2x16:mb2") == (((2, 16), None),)
    assert list_groups("") == ()
    # the problem grammar has no spaces: its tensors run the dst into src1
    assert parse_problem("binary", "2x16x14x14:1x16x1x1 2x16x14x14").tensors[1] != SRC1


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (LEGACY / "onednn-3.2.0.log", "2x16x14x14:1x16x1x1"),  # src0:src1
        (LEGACY / "onednn-2.2.0.log", "2x16x14x14:1x16x1x1"),
        (LEGACY / "onednn-2.0.0.log", "2x16x14x14:1x16x1x1 2x16x14x14"),  # src0:src1 dst
    ],
)
def test_binary_every_version(path, problem):
    # src1 broadcast over mb, h, w; the dst is src0's shape, printed or not
    r = line(path, "binary", problem)
    assert list_dims(r) == [("src", SRC0), ("src", SRC1), ("dst", SRC0)]
    assert graph_dims(r) == [("src", "2x16x14x14"), ("src", "1x16x1x1"), ("dst", "2x16x14x14")]
    # docs/cost-model.md §2.8: 6,272 FLOPs, (6,272 + 16 + 6,272) * 4 bytes, in both forms
    assert cost_of(r) == (6_272, 50_240, [("src", SRC0), ("src", SRC1), ("dst", SRC0)])


def test_binary_v2_0_dst_now_feeds_the_sum_in_the_graph():
    # legacy/onednn-2.0.0.log lines 34-35: binary `src0:src1 dst`, then a sum of two
    # 2x16x14x14 abcd sources. The graph's old copy had no dst for the binary, so the
    # sum's second source went to an older reorder (n3) with the same dims; it is the
    # binary's output, the nearest producer.
    g = build_graph(load([str(LEGACY / "onednn-2.0.0.log")]).events)
    preds = sorted(g.digraph.predecessors("n11_sum"))
    assert preds == ["n10_binary", "n4_eltwise"]
    assert g.digraph.node("n10_binary")["kind"] == "binary"
    reorder = g.reorders.set_index("node").loc["n3_reorder"]
    assert reorder.consumer == "n4_eltwise"


@pytest.mark.parametrize(
    ("path", "problem", "flops", "nbytes"),
    [
        (LEGACY / "onednn-3.2.0.log", "2x16x14x14", 18_816, 75_264),
        (LEGACY / "onednn-2.0.0.log", "2x16x14x14", 18_816, 75_264),
    ],
)
def test_sum_prints_its_dst_which_every_source_matches(path, problem, flops, nbytes):
    r = line(path, "sum", problem)
    assert list_dims(r) == [("src", SRC0), ("src", SRC0), ("dst", SRC0)]
    assert cost_of(r)[:2] == (flops, nbytes)
    assert graph_dims(r) == [("src", "2x16x14x14"), ("src", "2x16x14x14"), ("dst", "2x16x14x14")]


def test_sum_mkldnn0x_in_out():
    # 03_mkldnn0x_tf_sum_reorder_loop_truncated.log: one `in` md, `num:2`, the dst dims
    r = line(CORPUS / "03_mkldnn0x_tf_sum_reorder_loop_truncated.log", "sum", "128x128")
    assert list_dims(r) == [("in", (128, 128)), ("out", (128, 128))]
    assert cost_of(r)[:2] == (49_152, 196_608)  # docs/cost-model.md §2.8


@pytest.mark.parametrize(
    ("path", "problem", "dims"),
    [
        (LEGACY / "onednn-3.2.0.log", "2x16x14x14", SRC0),
        (LEGACY / "onednn-2.0.0.log", "2x16x14x14", SRC0),
        (CORPUS / "07_dnnl1x_tf23_osx_backward_data.log", "128x14x14x64", (128, 14, 14, 64)),
        (CORPUS / "09_dnnl1_95_dpcpp_engine_header.log", "2x3x4x5", (2, 3, 4, 5)),
    ],
)
def test_eltwise_data(path, problem, dims):
    # `data` has the printed dims; the undef `diff` md is absent
    r = line(path, "eltwise", problem)
    assert list_dims(r) == [("data", dims)]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (SAMPLES / "all_timestamps_infer.log", "16x3x3x3"),
        (CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log", "1x64x3x7x7"),
        (LEGACY / "onednn-2.0.0.log", "10x16x7x7"),
    ],
)
def test_reorder_src_and_dst(path, problem):
    r = line(path, "reorder", problem)
    dims = list_groups(problem)[0][0]
    assert [d for _, d in list_dims(r)] == [dims, dims]


@pytest.mark.parametrize(
    ("path", "problem", "want"),
    [
        # v3.2+ src:wei
        (LEGACY / "onednn-3.2.0.log", "32x64:64x48", [(32, 64), (64, 48), (32, 48)]),
        # v2.2 - v3.1 src:wei:dst
        (LEGACY / "onednn-2.2.0.log", "32x64:64x48:32x48", [(32, 64), (64, 48), (32, 48)]),
        (
            CORPUS / "15_onednn2x_tf_opt_gemm_api_markdown_bold.log",
            "1536x384x64:1536x64x384:1536x384x384",
            [(1536, 384, 64), (1536, 64, 384), (1536, 384, 384)],
        ),
        (
            CORPUS / "27_onednn3x_amx_bf16_matmul_ellipses.log",
            "256x4096:4096x11008",
            [(256, 4096), (4096, 11008), (256, 11008)],
        ),
    ],
)
def test_matmul(path, problem, want):
    r = line(path, "matmul", problem)
    assert [d for _, d in list_dims(r)] == want


def test_gemm_src_a_src_b_now_in_the_graph():
    # 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log: the nested gemm names its operands
    # src_a/src_b. The graph's old copy knew only matmul and gemm_api, so it gave src_b and
    # dst the first piece (2x2); the cost model had them right.
    r = line(CORPUS / "29_onednn3_8rc_xpu_gpu_gemm_info_postops.log", "gemm", "2x2:2x3")
    assert list_dims(r) == [("src_a", (2, 2)), ("src_b", (2, 3)), ("dst", (2, 3))]
    assert graph_dims(r) == [("src_a", "2x2"), ("src_b", "2x3"), ("dst", "2x3")]
    assert cost_of(r)[:2] == (42, 88)  # docs/cost-model.md: the matmul line of this log
    r = line(CORPUS / "17_onednn2x_tf_gemm_api_acl_single.log", "gemm_api", "1x512:512x512")
    assert list_dims(r) == [("src", (1, 512)), ("wei", (512, 512)), ("dst", (1, 512))]


def test_sdpa_now_in_the_graph():
    # 31_onednn_v1_sdpa_gpu0_no_time.log: q:k:v, k printed transposed (D x Sk). The graph's
    # old copy gave key, val and the mask the query's dims.
    r = line(
        CORPUS / "31_onednn_v1_sdpa_gpu0_no_time.log", "sdpa", "1x2x1x128:1x2x128x384:1x2x384x128"
    )
    assert list_dims(r) == [
        ("query", (1, 2, 1, 128)),
        ("key", (1, 2, 128, 384)),
        ("val", (1, 2, 384, 128)),
        ("msk", (384,)),
        ("dst", (1, 2, 1, 128)),
    ]
    # the 1d mask md is 4D (abcd): the graph drops dims of another rank, the cost model
    # counts its 384 elements
    assert graph_dims(r) == [
        ("query", "1x2x1x128"),
        ("key", "1x2x128x384"),
        ("val", "1x2x384x128"),
        ("msk", "?"),
        ("dst", "1x2x1x128"),
    ]
    # the first such line has s8 key/val: 256*2 + 98,304 + 98,304 + 384*2 + 256*2 bytes
    assert "key:s8" in r.mds
    assert cost_of(r)[:2] == (397_056, 198_400)


# synthetic: forms the logs here do not have


def test_binary_select_third_piece_is_a_source_synthetic():
    # `src0:src1:src2` (select): the graph's old copy took src2 for the dst
    mds = parse_mds(
        "src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 "
        "src:s8::blocked:abcd::f0 dst:f32::blocked:abcd::f0"
    )
    groups = list_groups("2x16x1x1:1x16x14x14:2x1x14x14")
    assert list_tensor_dims("binary", groups, mds, {})[-1] == (2, 16, 14, 14)


@pytest.mark.parametrize(
    ("problem", "aux", "dst"),
    [
        ("2x16x7x7:2x8x7x7", {"axis": "1"}, (2, 24, 7, 7)),  # v3.x: no dst printed
        ("2x16x7x7:2x8x7x7 2x24x7x7", {"axis": "1"}, (2, 24, 7, 7)),  # v2.x: dst after a space
        ("2x16x7x7:2x8x7x7", {"axis": "-3"}, (2, 24, 7, 7)),  # counted from the end
        ("2x16x7x7:2x16x7x7", {"axis": "4"}, None),  # past the rank (the cost model wrapped)
        ("2x16x7x7:2x8x7x7", {}, None),  # no axis
        ("2x16x7x7", {}, (2, 16, 7, 7)),  # one source
        ("2x*x7x7:2x8x7x7", {"axis": "1"}, (2, None, 7, 7)),
    ],
)
def test_concat_dst_synthetic(problem, aux, dst):
    assert list_dst_dims("concat", list_groups(problem), aux) == dst


def test_concat_cost_counts_the_sources_without_an_axis_synthetic():
    # the cost model alone gives a dst of unknown shape the sources' element count
    mds = "src_f32::blocked:abcd::f0 src_f32::blocked:abcd::f0 dst_f32::blocked:abcd::f0"
    c = primitive_cost("concat", "2x16x7x7:2x8x7x7", mds, "undef", "axis:1", "")
    assert c is not None
    assert [t.dims for t in c.tensors] == [(2, 16, 7, 7), (2, 8, 7, 7), (2, 24, 7, 7)]
    c = primitive_cost("concat", "2x16x7x7:2x8x7x7", mds, "undef", "", "")
    assert c is not None
    assert [t.dims for t in c.tensors] == [(2, 16, 7, 7), (2, 8, 7, 7), (2352,)]
    assert c.bytes == 2 * 2352 * 4
    ins, outs = op_tensors("concat", "undef", mds, "2x16x7x7:2x8x7x7", "")
    assert outs[0].dims is None


def test_softmax_and_resampling_synthetic():
    mds = parse_mds("src_f32::blocked:abcd::f0 dst_f32::blocked:abcd::f0")
    assert list_tensor_dims("softmax", list_groups("2x16x7x7"), mds, {}) == [
        (2, 16, 7, 7),
        (2, 16, 7, 7),
    ]
    # resampling of the v2.0 era printed `src dst`
    assert list_tensor_dims("resampling", list_groups("2x16x7x7 2x16x14x14"), mds, {}) == [
        (2, 16, 7, 7),
        (2, 16, 14, 14),
    ]


@pytest.mark.parametrize(
    ("shapes", "want"),
    [
        (((2, 16, 14, 14), (1, 16, 1, 1)), (2, 16, 14, 14)),
        (((3, 1, 5), (4, 5)), (3, 4, 5)),  # right aligned (the graph's old copy refused)
        (((2, None, 7), (1, 16, 1)), (2, 16, 7)),  # runtime dim vs 16: 16 (graph's: unknown)
        (((2, None, 7), (1, 1, 1)), (2, None, 7)),
        (((), ()), ()),
    ],
)
def test_broadcast_dims(shapes, want):
    assert broadcast_dims(*shapes) == want


def test_runtime_dims_synthetic():
    # the graph keeps the known dims of `*`; the cost model needs them all
    mds = "src_f32::blocked:ab::f0 wei_f32::blocked:ab::f0 dst_f32::blocked:ab::f0"
    ins, outs = op_tensors("matmul", "undef", mds, "*x64:64x48", "")
    assert [t.dims for t in (*ins, *outs)] == [(None, 64), (64, 48), (None, 48)]
    assert primitive_cost("matmul", "*x64:64x48", mds, "undef", "", "") is None
