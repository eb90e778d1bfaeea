"""Named tensor dims (dnnlens.analysis.tensor_dims), the one mapping the cost model and the
op graph share, on problem strings read from real logs.

Every line is taken from sample_logs/, sample_logs/legacy/ or tests/data/corpus/ (the test
finds it there) unless marked *synthetic*: no log here has a convolution with more than one
group, so the depthwise case is the format doc's example (§4.3).
"""

from __future__ import annotations

import glob
from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.costmodel import padded_elements, primitive_cost
from dnnlens.analysis.graph import op_tensors
from dnnlens.analysis.tensor_dims import Dims, conv_weights_grouped, named_tensor_dims
from dnnlens.load import load
from dnnlens.parsers.fields import MemDesc, parse_aux, parse_mds, parse_problem
from dnnlens.parsers.records import LineRecord

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
LEGACY = SAMPLES / "legacy"
CORPUS = ROOT / "tests" / "data" / "corpus"
ALL_LOGS = sorted(
    glob.glob(str(SAMPLES / "*.log")) + glob.glob(str(LEGACY / "*.log"))
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
    return {md.arg: named_tensor_dims(kind, named, md, aux)
            for md in parse_mds(r.mds) if not md.is_absent}


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
    assert dims_by_arg(r) == {"src": (50, 3, 224, 224), "wei": (1, 64, 3, 7, 7),
                              "dst": (50, 64, 112, 112)}
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
    mds = ("src:f32::blocked:abcd::f0 wei:f32::blocked:aBcde8b::f0 bia:undef::undef::: "
           "dst:f32::blocked:aBcd8b::f0")
    c = primitive_cost("convolution", problem, mds, "forward_inference", "", "")
    assert c is not None
    wei = next(t for t in c.tensors if t.arg == "wei")
    assert wei.dims == (1, 60, 3, 3, 3)
    assert wei.elements == padded_elements(wei.dims, "aBcde8b") == 1_728
    # src 2*3*14*14 = 1176, dst 2*60*14*14 = 23520 padded to 64 channels = 25088
    assert c.bytes == (1_176 + 1_728 + 25_088) * 4


@pytest.mark.parametrize("problem", [
    "g32mb1_ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v2.3+ group position
    "mb1_g32ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v0.x - v2.2
])
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


@pytest.mark.parametrize(("tag", "grouped"), [
    ("gOhwi8o", True),   # rank 5: grouped, g = 1 (the corpus line)
    ("abcde", True),
    ("", True),          # rank unknown: `g` printed, so the weights have the group dim
    ("OIhw8i8o", False),  # rank 4: the tag says no group dim, and g = 1 changes no count
])
def test_g1_follows_the_weights_rank(tag, grouped):
    d = dict(parse_problem("convolution", CONV1).dims)
    assert conv_weights_grouped(d, md("wei", tag)) is grouped
    want = (1, 64, 3, 7, 7) if grouped else (64, 3, 7, 7)
    assert named_tensor_dims("convolution", d, md("wei", tag), {}) == want


def test_plain_conv():
    # convnet_nchw_infer.log: wei Acdb8a (rank 4), no g printed
    problem = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
    r = line(SAMPLES / "convnet_nchw_infer.log", "convolution", problem)
    assert dims_by_arg(r) == {"src": (4, 3, 64, 64), "wei": (16, 3, 3, 3),
                              "dst": (4, 16, 64, 64)}
    d = dict(parse_problem("convolution", problem).dims)
    assert not conv_weights_grouped(d, md("wei", "Acdb8a"))
    assert not conv_weights_grouped(d, md("wei", ""))
    # a rank-5 tag is the group dim even without `g`
    assert named_tensor_dims("convolution", d, md("wei", "abcde"), {}) == (1, 16, 3, 3, 3)


def test_plain_conv_legacy_with_bias():
    # legacy/onednn-2.0.0.log: v1 md syntax, bias present
    r = line(LEGACY / "onednn-2.0.0.log", "convolution",
             "mb2_ic8oc16_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1")
    assert "bia_f32" in r.mds
    assert dims_by_arg(r) == {"src": (2, 8, 14, 14), "wei": (16, 8, 3, 3), "bia": (16,),
                              "dst": (2, 16, 14, 14)}


# ---------------------------------------------------------------------------------------
# other kinds


def test_inner_product():
    # legacy/onednn-2.0.0.log: mb2ic16ih7iw7oc10, wei BcdA8b10a
    r = line(LEGACY / "onednn-2.0.0.log", "inner_product", "mb2ic16ih7iw7oc10")
    assert dims_by_arg(r) == {"src": (2, 16, 7, 7), "wei": (10, 16, 7, 7), "bia": (10,),
                              "dst": (2, 10)}


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
    r = line(LEGACY / "onednn-3.0.0.log", "pooling",
             "mb2ic16_ih14oh7kh2sh2dh0ph0_iw14ow7kw2sw2dw0pw0")
    assert dims_by_arg(r) == {"src": (2, 16, 14, 14), "dst": (2, 16, 7, 7)}
    r = line(LEGACY / "onednn-2.0.0.log", "batch_normalization", "mb2ic16ih14iw14")
    assert dims_by_arg(r) == {"data": (2, 16, 14, 14)}


def test_reorder_is_a_dims_list_not_named():
    # all_timestamps_infer.log: a reorder prints its dims (`16x3x3x3`): no named values,
    # the list readers of the cost model and the graph shape it; the named mapping has
    # nothing to say about it
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
    assert named_tensor_dims("eltwise", {"mb": 2, "ic": 16, "ih": 4, "iw": 4},
                             md("diff", "abcd"), {}) == (2, 16, 4, 4)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: Path(p).name)
def test_cost_model_and_graph_shape_every_named_line_alike(path):
    # on every line of every log: where both know a tensor's dims, they are the same
    for r in {(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs): r
              for r in _records(Path(path)) if r.kind}.values():
        if parse_problem(r.kind, r.problem).tensors:
            continue
        c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
        if c is None:
            continue
        ins, outs = op_tensors(r.kind, r.prop_kind, r.mds, r.problem, r.aux)
        graph = {t.arg: t.dims for t in (*ins, *outs) if t.dims is not None}
        for t in c.tensors:
            if t.arg in graph:
                assert graph[t.arg] == t.dims, (path, r.problem, t.arg)
