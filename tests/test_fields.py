"""Golden tests of the sub-field parsers (dnnlens.parsers memdesc, attrs, problem, isa).

Every input is copied from a real log: the public corpus (file name and original source in
the comment) or logs generated on this machine ("torch 2.13.0 / oneDNN 3.12 on this
machine": ONEDNN_VERBOSE=all with conv, int8, rnn, pooling, bnorm, linear workloads).
Strings marked "format doc" come from the format document's examples; a few are marked
"synthetic" where no real log shows the form (expected values are written from the doc).
Expected values were written by hand from reading each string.
"""

from __future__ import annotations

import pytest

from dnnlens.parsers.attrs import Attrs, parse_attrs, parse_aux
from dnnlens.parsers.isa import AARCH64_ISA_RANK, ISA_RANK, isa_from_header, isa_rank, split_impl
from dnnlens.parsers.memdesc import MdList, MemDesc, parse_graph_tensors, parse_mds
from dnnlens.parsers.problem import Problem, parse_problem


def md(arg, dtype, props, kind, tag, strides, flags, extra="", mask=None) -> tuple:
    return (arg, dtype, props, kind, tag, strides, flags, extra, mask)


def fields_of(mds: MdList) -> list[tuple]:
    return [
        (m.arg, m.dtype, m.props, m.format_kind, m.tag, m.strides, m.flags, m.extra, m.mask)
        for m in mds
    ]


# ---------------------------------------------------------------------------------------
# memory descriptors, F0 (format doc §3.1)


def test_md_f0_conv_format_names():
    # corpus: 01_mkldnn0x_benchdnn_resnet_conv1.log (uxlfoundation/oneDNN issue #359)
    r = parse_mds("fsrc:nchw fwei:gOhwi8o fbia:undef fdst:nChw8c")
    assert r.family == "f0"
    assert r.error is None
    assert fields_of(r) == [
        md("src", "", "", "blocked", "nchw", "", ""),
        md("wei", "", "", "blocked", "gOhwi8o", "", ""),
        md("bia", "", "", "undef", "", "", ""),
        md("dst", "", "", "blocked", "nChw8c", "", ""),
    ]
    assert r.get("bia").is_absent
    assert r.get("wei").is_blocked_layout
    assert not r.get("src").is_blocked_layout
    assert r.get("dst").layout == "nChw8c"


def test_md_f0_reorder_in_out():
    # corpus: 01_mkldnn0x_benchdnn_resnet_conv1.log (uxlfoundation/oneDNN issue #359)
    r = parse_mds("in:f32_goihw out:f32_gOhwi8o")
    assert r.family == "f0"
    assert fields_of(r) == [
        md("in", "f32", "", "blocked", "goihw", "", ""),
        md("out", "f32", "", "blocked", "gOhwi8o", "", ""),
    ]


def test_md_f0_blocked_without_name():
    # corpus: 03_mkldnn0x_tf_sum_reorder_loop_truncated.log (tensorflow/tensorflow #24781)
    r = parse_mds("in:f32_blocked out:f32_blocked")
    assert fields_of(r) == [
        md("in", "f32", "", "blocked", "", "", ""),
        md("out", "f32", "", "blocked", "", "", ""),
    ]
    assert r[0].layout == "blocked"


def test_md_f0_shuffle_dt_fmt():
    # format doc §3.1 (shuffle prints `dt:<dt> fmt:<format>`)
    r = parse_mds("dt:f32 fmt:nchw")
    assert r.family == "f0"
    assert fields_of(r) == [md("data", "f32", "", "blocked", "nchw", "", "")]


# ---------------------------------------------------------------------------------------
# memory descriptors, v1.0 - v3.1 (format doc §3.2)


def test_md_v1_conv_with_absent_bias_f0():
    # corpus: 05_dnnl1_6_benchdnn_conv_backtick.log (uxlfoundation/oneDNN issue #832)
    r = parse_mds(
        "src_f32::blocked:abcd:f0 wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 "
        "dst_f32::blocked:aBcd16b:f0"
    )
    assert r.family == "v1"
    assert r.error is None
    assert fields_of(r) == [
        md("src", "f32", "", "blocked", "abcd", "", "0"),
        md("wei", "f32", "", "blocked", "Acdb16a", "", "0"),
        md("bia", "undef", "", "undef", "", "", "0"),
        md("dst", "f32", "", "blocked", "aBcd16b", "", "0"),
    ]
    assert r.args == ("src", "wei", "bia", "dst")
    assert r.get("bia").is_absent
    assert r.get("dst").is_blocked_layout
    assert r.get("dst").ndims == 4
    assert r.get("wei").flags_value == 0
    assert r[0].raw == "src_f32::blocked:abcd:f0"


def test_md_v1_eltwise_data_and_absent_diff():
    # corpus: 07_dnnl1x_tf23_osx_backward_data.log (tensorflow/tensorflow issue #43578)
    r = parse_mds("data_f32::blocked:abcd:f0 diff_undef::undef::f0")
    assert r.family == "v1"
    assert fields_of(r) == [
        md("data", "f32", "", "blocked", "abcd", "", "0"),
        md("diff", "undef", "", "undef", "", "", "0"),
    ]


def test_md_v1_reorder_to_blocked_weights():
    # corpus: 07_dnnl1x_tf23_osx_backward_data.log (tensorflow/tensorflow issue #43578)
    r = parse_mds("src_f32::blocked:cdba:f0 dst_f32::blocked:ABcd8a8b:f0")
    assert [m.layout for m in r] == ["cdba", "ABcd8a8b"]
    assert [m.is_blocked_layout for m in r] == [False, True]


def test_md_v1_gemm_api_legacy_form():
    # corpus: 15_onednn2x_tf_opt_gemm_api_markdown_bold.log (uxlfoundation/oneDNN issue #1729)
    r = parse_mds("src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0")
    assert r.family == "v1"
    assert [m.arg for m in r] == ["src", "wei", "dst"]
    assert all(m.dtype == "f32" and m.tag == "ab" for m in r)


def test_md_markdown_bold_is_stripped_and_noted():
    # corpus: 15_onednn2x_tf_opt_gemm_api_markdown_bold.log (uxlfoundation/oneDNN issue #1729)
    r = parse_mds("src_f32::blocked:**abcd**:f0 dst_f32::blocked:**acbd**:f0")
    assert r.error is None
    assert r.notes == ("markdown-bold",)
    assert fields_of(r) == [
        md("src", "f32", "", "blocked", "abcd", "", "0"),
        md("dst", "f32", "", "blocked", "acbd", "", "0"),
    ]
    assert r.raw == "src_f32::blocked:**abcd**:f0 dst_f32::blocked:**acbd**:f0"


def test_md_emoji_damage_is_repaired():
    # synthetic, format doc §10.10: GitHub turns `:abcd:` into an emoji in pasted logs
    r = parse_mds("src_f32::blocked\U0001f521f0 wei_f32::blocked\U0001f18ef0")
    assert r.notes == ("emoji",)
    assert [m.tag for m in r] == ["abcd", "ab"]


def test_md_v1_matmul_bias_mask_suffix():
    # format doc §3.2 (matmul bias adds `_mask<m>` after the bias md)
    r = parse_mds("bia_f32::blocked:ab:f0_mask2")
    assert fields_of(r) == [md("bia", "f32", "", "blocked", "ab", "", "0", "", "2")]


def test_md_v1_int8_weights_with_extras_and_padding():
    # format doc §3.2 example `wei_s8:p:blocked:OIhw4i16o4i:f3` + v2.3+ `:s8m<mask>` extra
    r = parse_mds("wei_s8:p:blocked:aBCd4c16b4c:f3:s8m2 bia_undef::undef::")
    assert r.family == "v1"
    assert fields_of(r) == [
        md("wei", "s8", "p", "blocked", "aBCd4c16b4c", "", "3", "s8m2"),
        md("bia", "undef", "", "undef", "", "", ""),
    ]
    assert r[0].flags_value == 3
    assert r[1].flags_value is None


def test_md_v1_hex_flags_best_effort_int():
    # synthetic, format doc §3.2: v1.0 - v2.2 print the flags with %lx
    r = parse_mds("wei_s8::blocked:OIhw4i16o4i:fb")
    assert r[0].flags == "b"
    assert r[0].flags_value == 11


def test_md_v1_zero_pad_without_arg_name():
    # format doc §6 (GPU zero_pad before v3.6 prints the md without an arg name)
    r = parse_mds("f32::blocked:aBcd16b:f0")
    assert fields_of(r) == [md("", "f32", "", "blocked", "aBcd16b", "", "0")]


def test_md_arg_and_dtype_with_underscores():
    # format doc §3.2 (args and data types both contain `_`)
    r = parse_mds("diff_src_layer_f8_e5m2::blocked:abc:f0 src_iter_c_f4_e2m1::blocked:abcd:f0")
    assert [(m.arg, m.dtype) for m in r] == [
        ("diff_src_layer", "f8_e5m2"),
        ("src_iter_c", "f4_e2m1"),
    ]


# ---------------------------------------------------------------------------------------
# memory descriptors, v3.2 - v3.5 (format doc §3.3)


def test_md_v32_reorder():
    # corpus: 21_onednn3_3_pytorch_aarch64_header_truncated.log (pytorch/pytorch #123143)
    r = parse_mds("src_f32::blocked:abcd::f0 dst_f32::blocked:acdb::f0")
    assert r.family == "v32"
    assert fields_of(r) == [
        md("src", "f32", "", "blocked", "abcd", "", "0"),
        md("dst", "f32", "", "blocked", "acdb", "", "0"),
    ]


def test_md_v32_conv_with_bias():
    # corpus: 25_onednn3x_windows_gtest_exec_check_b.log (uxlfoundation/oneDNN issue #1845)
    r = parse_mds(
        "src_f32::blocked:abcd::f0 wei_f32::blocked:abcd::f0 bia_f32::blocked:a::f0 "
        "dst_f32::blocked:abcd::f0"
    )
    assert r.family == "v32"
    assert r.get("bia").tag == "a"
    assert r.get("bia").ndims == 1


def test_md_v32_amx_matmul():
    # corpus: 27_onednn3x_amx_bf16_matmul_ellipses.log (public LLM performance notes)
    r = parse_mds("src_bf16::blocked:ab::f0 wei_bf16::blocked:ba::f0 dst_bf16::blocked:ab::f0")
    assert [(m.arg, m.dtype, m.tag) for m in r] == [
        ("src", "bf16", "ab"),
        ("wei", "bf16", "ba"),
        ("dst", "bf16", "ab"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # format doc §3.3 examples
        (
            "src_f32::blocked:abc:4096x64x1:f0",
            md("src", "f32", "", "blocked", "abc", "4096x64x1", "0"),
        ),
        ("src_u8:a:any:any::f0", md("src", "u8", "a", "any", "any", "", "0")),
        ("wei_s8::wino:::f0", md("wei", "s8", "", "wino", "", "", "0")),
        ("src_f32::sparse:csr::f0", md("src", "f32", "", "sparse", "csr", "", "0")),
        ("bia_undef::undef:::", md("bia", "undef", "", "undef", "", "", "")),
        ("src_f32::blocked:*:*x256:f0", md("src", "f32", "", "blocked", "*", "*x256", "0")),
        ("wei_f32:ap:blocked:Acdb16a::f0", md("wei", "f32", "ap", "blocked", "Acdb16a", "", "0")),
    ],
)  # fmt: skip
def test_md_v32_forms(text, expected):
    r = parse_mds(text)
    assert r.family == "v32"
    assert r.error is None
    assert fields_of(r) == [expected]


def test_md_v32_format_any_layout():
    # format doc §3.3
    r = parse_mds("src_u8:a:any:any::f0")
    assert r[0].layout == "any"
    assert r[0].ndims is None


# ---------------------------------------------------------------------------------------
# memory descriptors, v3.6+ (format doc §3.4)


def test_md_v36_torch_conv_fwd():
    # torch 2.13.0 / oneDNN 3.12 on this machine (nn.Conv2d(3, 8, 3, padding=1))
    r = parse_mds(
        "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:f32:a:blocked:a::f0 "
        "dst:f32:a:blocked:aBcd8b::f0"
    )
    assert r.family == "v36"
    assert fields_of(r) == [
        md("src", "f32", "a", "blocked", "abcd", "", "0"),
        md("wei", "f32", "a", "blocked", "Acdb8a", "", "0"),
        md("bia", "f32", "a", "blocked", "a", "", "0"),
        md("dst", "f32", "a", "blocked", "aBcd8b", "", "0"),
    ]


def test_md_v36_absent_bias_three_colons():
    # torch 2.13.0 / oneDNN 3.12 on this machine (grouped conv backward_data)
    r = parse_mds(
        "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:abcde::f0 bia:undef::undef::: "
        "dst:f32:a:blocked:abcd::f0"
    )
    assert r.family == "v36"
    assert fields_of(r)[2] == md("bia", "undef", "", "undef", "", "", "")
    assert r.get("bia").is_absent
    assert r.get("wei").ndims == 5


def test_md_v36_int8_conv_zero_point_compensation():
    # torch 2.13.0 / oneDNN 3.12 on this machine (quantized nn.Conv2d, onednn engine)
    r = parse_mds(
        "src:u8::blocked:acdb::f0 wei:s8:ap:blocked:ABcd2b8a4b::f8:zpm1 "
        "bia:f32:a:blocked:a::f0 dst:u8::blocked:acdb::f0"
    )
    assert fields_of(r) == [
        md("src", "u8", "", "blocked", "acdb", "", "0"),
        md("wei", "s8", "ap", "blocked", "ABcd2b8a4b", "", "8", "zpm1"),
        md("bia", "f32", "a", "blocked", "a", "", "0"),
        md("dst", "u8", "", "blocked", "acdb", "", "0"),
    ]
    assert r.get("wei").flags_value == 8


def test_md_v36_brg_conv_doc_example():
    # format doc §9 F4 (oneDNN PR #5246, create_nested line)
    r = parse_mds(
        "src:u8:a:blocked:acb::f0 wei:s8:a:blocked:AcB8a4b::f8:zpm1 bia:undef::undef::: "
        "dst:s8:a:blocked:acb::f0"
    )
    assert [m.arg for m in r] == ["src", "wei", "bia", "dst"]
    assert r.get("wei").extra == "zpm1"


def test_md_v36_matmul_bias_mask():
    # torch 2.13.0 / oneDNN 3.12 on this machine (quantized nn.Linear -> matmul gemm:jit)
    r = parse_mds(
        "src:u8:a:blocked:ab::f0 wei:s8::blocked:ab::f0 bia:f32::blocked:ab::f0_mask2 "
        "dst:u8::blocked:ab::f0"
    )
    assert r.get("bia").mask == "2"
    assert r.get("bia").flags == "0"
    assert r.get("src").mask is None


def test_md_v36_rnn_args_with_underscores_and_any():
    # torch 2.13.0 / oneDNN 3.12 on this machine (nn.LSTM)
    r = parse_mds(
        "src_layer:f32::blocked:abc::f0 src_iter:f32::blocked:abcd::f0 "
        "wei_layer:f32:a:any:any::f0 wei_iter:f32:a:any:any::f0 bias:f32::blocked:abcd::f0 "
        "dst_layer:f32::blocked:abc::f0 dst_iter:f32::blocked:abcd::f0"
    )
    assert r.family == "v36"
    assert r.args == (
        "src_layer", "src_iter", "wei_layer", "wei_iter", "bias", "dst_layer", "dst_iter",
    )  # fmt: skip
    assert r.get("wei_layer").format_kind == "any"
    assert r.get("wei_layer").layout == "any"


def test_md_v36_sum_two_sources_and_depthwise_tag():
    # torch 2.13.0 / oneDNN 3.12 on this machine (mkldnn add; depthwise conv weights)
    r = parse_mds("src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0")
    assert r.args == ("src", "src", "dst")
    w = parse_mds("wei:f32:a:blocked:debcA8a::f0")[0]
    assert w.is_blocked_layout
    assert w.ndims == 5


def test_md_v36_gpu_nested_gemm_and_sdpa_args():
    # corpus: 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log (intel/torch-xpu-ops issue #1612)
    r = parse_mds("src_a:f32::blocked:ab::f0 src_b:f32::blocked:ab::f0 dst:f32::blocked:ab::f0")
    assert r.family == "v36"
    assert r.args == ("src_a", "src_b", "dst")
    # corpus: 31_onednn_v1_sdpa_gpu0_no_time.log (uxlfoundation/oneDNN PR #3205)
    s = parse_mds(
        "query:f16::blocked:abcd::f0 key:s8::blocked:abcd::f0 val:s8::blocked:abcd::f0 "
        "msk:f16::blocked:abcd::f0 dst:f16::blocked:abcd::f0"
    )
    assert [(m.arg, m.dtype) for m in s] == [
        ("query", "f16"), ("key", "s8"), ("val", "s8"), ("msk", "f16"), ("dst", "f16"),
    ]  # fmt: skip


def test_md_v36_cublaslt_has_no_strides_slot():
    # synthetic from oneDNN src/common/verbose.cpp md2fmt_str (cublaslt_blocked case)
    r = parse_mds("src:s8::cublaslt_blocked:col32_2r_4r4:f0")
    assert r.error is None
    assert fields_of(r) == [md("src", "s8", "", "cublaslt_blocked", "col32_2r_4r4", "", "0")]


def test_md_v36_grouped_sparse():
    # synthetic, format doc §3.4 (grouped sparse encoding)
    r = parse_mds("src:f32::sparse:grouped:1:4::f0")
    assert r.error is None
    assert r[0].format_kind == "sparse"
    assert r[0].tag == "grouped:1:4"


def test_md_gpu_zero_point_extras():
    # synthetic from oneDNN src/common/verbose.cpp (GPU asymmetric src compensation extras)
    r = parse_mds("wei:s8:p:blocked:ABcd8a4b::f32:zid1:zih2:ziw3:zs64")
    assert r[0].flags == "32"
    assert r[0].extra == "zid1:zih2:ziw3:zs64"


# ---------------------------------------------------------------------------------------
# memory descriptors: damage


def test_md_empty_and_overflow():
    assert len(parse_mds("")) == 0
    assert parse_mds("").error is None
    r = parse_mds("#")  # format doc §3.2 (v1.x buffer overflow)
    assert r.overflow
    assert len(r) == 0
    assert r.error is None


def test_md_damaged_entry_is_reported_not_dropped():
    r = parse_mds("src:f32::blocked:abcd::f0 wei:f32::blo?ked:abcd::f0 dst:f32::blocked:ab::f0")
    assert r.error is not None
    assert "wei" in r.error
    assert r.args == ("src", "wei", "dst")
    assert r.get("dst").tag == "ab"
    assert r.get("wei").dtype == "f32"


def test_md_truncated_entry():
    # corpus: 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log, last line cut at `src:f32::`
    r = parse_mds("src:f32::")
    assert isinstance(r, MdList)
    assert r.get("src").dtype == "f32"


def test_md_is_memoised():
    text = "src:f32::blocked:abcd::f0 dst:f32::blocked:acdb::f0"
    assert parse_mds(text) is parse_mds(text)


def test_memdesc_is_frozen():
    m = parse_mds("src:f32::blocked:abcd::f0")[0]
    assert isinstance(m, MemDesc)
    with pytest.raises(AttributeError):
        m.arg = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# attributes (format doc §4.1)


def test_attrs_empty():
    a = parse_attrs("")
    assert a == Attrs()
    assert a.post_ops == ()
    assert a.scratchpad is None


def test_attrs_v23_trailing_space():
    # corpus: 21_onednn3_3_pytorch_aarch64_header_truncated.log (pytorch/pytorch #123143)
    a = parse_attrs("attr-scratchpad:user ")
    assert a.family == "v2.3-v3.5"
    assert a.items == {"scratchpad": "user"}
    assert a.scratchpad == "user"
    assert a.error is None


def test_attrs_v36_no_trailing_space():
    # torch 2.13.0 / oneDNN 3.12 on this machine
    a = parse_attrs("attr-scratchpad:user")
    assert a.family == "v3.6+"
    assert a.scratchpad == "user"


def test_attrs_v36_post_op_chain():
    # corpus: 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log (intel/torch-xpu-ops issue #1612)
    a = parse_attrs(
        "attr-scratchpad:user attr-post-ops:eltwise_linear:3+binary_add:f32:3:ab+eltwise_linear:0.2"
    )
    assert a.error is None
    assert a.scratchpad == "user"
    assert [(p.kind, p.alg, p.args) for p in a.post_ops] == [
        ("eltwise", "eltwise_linear", ("3",)),
        ("binary", "binary_add", ("f32", "3", "ab")),
        ("eltwise", "eltwise_linear", ("0.2",)),
    ]
    assert a.post_ops[1].short_alg == "add"
    assert a.post_ops[1].dtype == "f32"


def test_attrs_v36_quantization():
    # torch 2.13.0 / oneDNN 3.12 on this machine (quantized nn.Conv2d)
    a = parse_attrs("attr-scratchpad:user attr-scales:src0:0:f32 attr-zero-points:src0:0:s32")
    assert [(q.arg, q.mask, q.dtype) for q in a.scales] == [("src0", "0", "f32")]
    assert [(q.arg, q.mask, q.dtype) for q in a.zero_points] == [("src0", "0", "s32")]
    # format doc §9 F4 (oneDNN PR #5246)
    b = parse_attrs(
        "attr-scratchpad:user attr-scales:src0:0:f32+dst:0:f32+wei:1:f32 "
        "attr-zero-points:src0:0:s32 attr-post-ops:binary_mul:f32:0"
    )
    assert [(q.arg, q.mask) for q in b.scales] == [("src0", "0"), ("dst", "0"), ("wei", "1")]
    assert [p.alg for p in b.post_ops] == ["binary_mul"]


def test_attrs_sdpa_scales_and_zero_points():
    # corpus: 31_onednn_v1_sdpa_gpu0_no_time.log (uxlfoundation/oneDNN PR #3205)
    a = parse_attrs("attr-scales:kq:11:f16+vs:7:f16 attr-zero-points:kq:11:s8+vs:7:s8")
    assert [(q.arg, q.mask, q.dtype) for q in a.scales] == [("kq", "11", "f16"), ("vs", "7", "f16")]
    assert [(q.arg, q.dtype) for q in a.zero_points] == [("kq", "s8"), ("vs", "s8")]


def test_attrs_grouped_scales():
    # format doc §4.1 (`attr-scales:wei:3:f16:32x1`)
    a = parse_attrs("attr-scales:wei:3:f16:32x1")
    q = a.scales[0]
    assert (q.arg, q.mask, q.dtype, q.groups) == ("wei", "3", "f16", "32x1")


def test_attrs_torch_fused_gelu():
    # torch 2.13.0 / oneDNN 3.12 on this machine (mkldnn._linear_pointwise gelu tanh)
    a = parse_attrs("attr-scratchpad:user attr-post-ops:eltwise_gelu_tanh")
    assert [(p.kind, p.alg, p.short_alg) for p in a.post_ops] == [
        ("eltwise", "eltwise_gelu_tanh", "gelu_tanh")
    ]


def test_attrs_exponent_values_stay_whole():
    # synthetic, format doc §4.1 (alpha/beta printed with %g can carry `e+06`)
    a = parse_attrs("attr-post-ops:eltwise_linear:1e+06:-2.5e-05+sum:0.5:0:s8+dw:k3s1p1:u8+prelu:2")
    assert a.error is None
    assert [(p.kind, p.args) for p in a.post_ops] == [
        ("eltwise", ("1e+06", "-2.5e-05")),
        ("sum", ("0.5", "0", "s8")),
        ("dw", ("k3s1p1", "u8")),
        ("prelu", ("2",)),
    ]


def test_attrs_v11_semicolon_and_quoted():
    # format doc §4.1 (v1.1 - v2.2 syntax)
    a = parse_attrs(
        "oscale:2:*;post_ops:'eltwise_relu;sum:0.5;dw_k3s2p1:s8:0;';scratchpad_mode:user;"
        "zero_points:'src:0:*_dst:0:1';"
    )
    assert a.family == "v1.1-v2.2"
    assert a.error is None
    assert a.scratchpad == "user"
    assert a.oscale == "2:*"
    assert [(p.kind, p.alg, p.args) for p in a.post_ops] == [
        ("eltwise", "eltwise_relu", ()),
        ("sum", "sum", ("0.5",)),
        ("dw", "dw", ("k3s2p1", "s8", "0")),
    ]
    assert [(q.arg, q.mask, q.value) for q in a.scales] == [("oscale", "2", "*")]
    assert [(q.arg, q.mask, q.value) for q in a.zero_points] == [
        ("src", "0", "*"),
        ("dst", "0", "1"),
    ]


def test_attrs_v11_bounded_relu():
    # format doc §4.1 (`post_ops:'eltwise_bounded_relu:6;';`)
    a = parse_attrs("post_ops:'eltwise_bounded_relu:6;';")
    assert [(p.alg, p.args) for p in a.post_ops] == [("eltwise_bounded_relu", ("6",))]


def test_attrs_gemm_api_nonstandard_names():
    # format doc §4.1 (gemm_api: `lda:<n> ldb:<n> attr-oscale:common:<alpha>`)
    a = parse_attrs("lda:1024 ldb:1024 attr-oscale:common:0.5 attr-post-ops:sum:1 ")
    assert a.items["lda"] == "1024"
    assert [(q.arg, q.mask, q.value) for q in a.scales] == [("oscale", "common", "0.5")]
    assert a.post_ops[0].kind == "sum"


def test_attrs_v36_new_names():
    # format doc §4.1 (v3.6+ attribute names)
    a = parse_attrs("attr-fpmath:bf16:true attr-acc-mode:relaxed attr-deterministic:1 attr-dropout")
    assert a.fpmath == "bf16:true"
    assert a.acc_mode == "relaxed"
    assert a.has("deterministic")
    assert a.items["dropout"] == ""


def test_attrs_truncated():
    # corpus: 21_onednn3_3_pytorch_aarch64_header_truncated.log, last line cut at `attr-scrat`
    a = parse_attrs("attr-scrat")
    assert a.items == {"scrat": ""}
    b = parse_attrs("post_ops:'eltwise_bou")
    assert b.error is not None
    assert b.post_ops[0].alg == "eltwise_bou"


def test_attrs_items_are_read_only():
    a = parse_attrs("attr-scratchpad:user")
    with pytest.raises(TypeError):
        a.items["x"] = "y"  # type: ignore[index]


# ---------------------------------------------------------------------------------------
# aux (format doc §4.2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # corpus: 07_dnnl1x_tf23_osx_backward_data.log (tensorflow/tensorflow issue #43578)
        ("alg:eltwise_relu alpha:0 beta:0", {"alg": "eltwise_relu", "alpha": "0", "beta": "0"}),
        # corpus: 01_mkldnn0x_benchdnn_resnet_conv1.log (uxlfoundation/oneDNN issue #359)
        ("alg:convolution_direct", {"alg": "convolution_direct"}),
        ("num:1", {"num": "1"}),
        # torch 2.13.0 / oneDNN 3.12 on this machine (batch_norm inference; nn.LSTM)
        ("flags:GCH", {"flags": "GCH"}),
        (
            "alg:vanilla_lstm direction:unidirectional_left2right activation:undef flags:",
            {
                "alg": "vanilla_lstm",
                "direction": "unidirectional_left2right",
                "activation": "undef",
                "flags": "",
            },
        ),
        # corpus: 31_onednn_v1_sdpa_gpu0_no_time.log (uxlfoundation/oneDNN PR #3205)
        ("msk:1d", {"msk": "1d"}),
        ("msk:causal:bottom_right", {"msk": "causal:bottom_right"}),
        # format doc §4.2
        ("runtime_dims_masks:1:2", {"runtime_dims_masks": "1:2"}),
        ("", {}),
    ],
)
def test_aux(text, expected):
    assert parse_aux(text) == expected


def test_aux_returns_a_fresh_dict():
    d = parse_aux("flags:CH")
    d["flags"] = "changed"
    assert parse_aux("flags:CH") == {"flags": "CH"}


# ---------------------------------------------------------------------------------------
# problem descriptors (format doc §4.3)


def test_problem_conv_v1():
    # corpus: 05_dnnl1_6_benchdnn_conv_backtick.log (uxlfoundation/oneDNN issue #832)
    p = parse_problem("convolution", "mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3")
    assert p.error is None
    assert p.form == "named"
    assert p.dims == {
        "mb": 1, "ic": 3, "oc": 64,
        "ih": 224, "oh": 112, "kh": 7, "sh": 2, "dh": 0, "ph": 3,
        "iw": 224, "ow": 112, "kw": 7, "sw": 2, "dw": 0, "pw": 3,
    }  # fmt: skip
    assert p.get("g") is None
    assert p.get("g", 1) == 1


def test_problem_conv_old_group_position():
    # corpus: 01_mkldnn0x_benchdnn_resnet_conv1.log (uxlfoundation/oneDNN issue #359)
    p = parse_problem("convolution", "mb50_g1ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3")
    assert (p.dims["g"], p.dims["mb"], p.dims["ic"], p.dims["oc"]) == (1, 50, 3, 64)
    assert (p.dims["kh"], p.dims["sh"], p.dims["ph"]) == (7, 2, 3)


def test_problem_conv_new_group_prefix_dilated():
    # torch 2.13.0 / oneDNN 3.12 on this machine (Conv2d(8, 8, 3, groups=2, dilation=2, stride=2))
    p = parse_problem("convolution", "g2mb2_ic8oc8_ih8oh2kh3sh2dh1ph0_iw8ow2kw3sw2dw1pw0")
    assert p.dims["g"] == 2
    assert p.dims["mb"] == 2
    assert (p.dims["dh"], p.dims["dw"]) == (1, 1)
    assert (p.dims["oh"], p.dims["ow"]) == (2, 2)


def test_problem_conv_dilated_gtest():
    # corpus: 25_onednn3x_windows_gtest_exec_check_b.log (uxlfoundation/oneDNN issue #1845)
    p = parse_problem("convolution", "mb2_ic4oc6_ih8oh8kh3sh1dh1ph2_iw8ow8kw3sw1dw1pw2")
    assert (p.dims["ic"], p.dims["oc"], p.dims["dh"], p.dims["ph"]) == (4, 6, 1, 2)


def test_problem_conv_backward_data():
    # corpus: 07_dnnl1x_tf23_osx_backward_data.log (tensorflow/tensorflow issue #43578)
    p = parse_problem("convolution", "mb128_ic32oc64_ih28oh14kh3sh2dh0ph0_iw28ow14kw3sw2dw0pw0")
    assert (p.dims["mb"], p.dims["ic"], p.dims["oc"], p.dims["ih"], p.dims["oh"]) == (
        128, 32, 64, 28, 14,
    )  # fmt: skip


def test_problem_conv_1d_and_3d():
    # format doc §9 F4 (oneDNN PR #5246): 1D conv has only the iw group
    p = parse_problem("convolution", "mb1_ic8oc8_iw12ow14kw3sw1dw0pw2")
    assert p.dims == {"mb": 1, "ic": 8, "oc": 8, "iw": 12, "ow": 14, "kw": 3, "sw": 1, "dw": 0,
                      "pw": 2}  # fmt: skip
    # synthetic 3D conv in the printed order (format doc §4.3)
    q = parse_problem(
        "convolution",
        "mb1_ic2oc4_id5od3kd3sd1dd0pd0_ih6oh4kh3sh1dh0ph0_iw7ow5kw3sw1dw0pw0",
    )
    assert (q.dims["id"], q.dims["od"], q.dims["kd"]) == (5, 3, 3)


def test_problem_pooling():
    # torch 2.13.0 / oneDNN 3.12 on this machine (max_pool2d on an mkldnn tensor)
    p = parse_problem("pooling", "mb2ic8_ih16oh8kh2sh2dh0ph0_iw16ow8kw2sw2dw0pw0")
    assert (p.dims["mb"], p.dims["ic"], p.dims["kh"], p.dims["oh"]) == (2, 8, 2, 8)
    # format doc §4.4 (`pooling_v2` in v2.x logs)
    q = parse_problem("pooling_v2", "mb2ic8_ih16oh8kh2sh2dh0ph0_iw16ow8kw2sw2dw0pw0")
    assert q.kind == "pooling"
    assert q.dims == p.dims


def test_problem_inner_product_derives_mnk():
    # torch 2.13.0 / oneDNN 3.12 on this machine (mkldnn_linear 5x8 @ 8x3)
    p = parse_problem("inner_product", "mb5ic8oc3")
    assert p.dims == {"mb": 5, "ic": 8, "oc": 3, "M": 5, "N": 3, "K": 8, "B": 1}
    # format doc §4.3
    q = parse_problem("inner_product", "mb1ic256ih6iw6oc4096")
    assert (q.dims["M"], q.dims["N"], q.dims["K"]) == (1, 4096, 256 * 6 * 6)
    r = parse_problem("inner_product", "mb200ic64oc31")
    assert (r.dims["M"], r.dims["N"], r.dims["K"]) == (200, 31, 64)


def test_problem_bnorm_lrn_gnorm():
    # torch 2.13.0 / oneDNN 3.12 on this machine (batch_norm on an mkldnn tensor)
    assert parse_problem("batch_normalization", "mb2ic8ih16iw16").dims == {
        "mb": 2, "ic": 8, "ih": 16, "iw": 16,
    }  # fmt: skip
    # synthetic, format doc §4.3: lrn adds ls<n>beta<b>, gnorm prefixes g<G>
    lrn = parse_problem("lrn", "mb2ic16ih7iw7ls5beta0.75")
    assert lrn.dims["ls"] == 5
    assert lrn.params == {"beta": 0.75}
    assert parse_problem("group_normalization", "g4mb2ic16ih8iw8").dims["g"] == 4
    assert parse_problem("batch_normalization", "x16").dims == {"x": 16}


def test_problem_rnn():
    # torch 2.13.0 / oneDNN 3.12 on this machine (nn.LSTM(10, 20, 2))
    p = parse_problem("rnn", "l1t5mb3sic20slc10dhc20dic20")
    assert p.dims == {"l": 1, "t": 5, "mb": 3, "sic": 20, "slc": 10, "dhc": 20, "dic": 20}


def test_problem_plain_dims():
    # corpus: 07_dnnl1x_tf23_osx_backward_data.log (eltwise), 01_... (reorder, 5D)
    p = parse_problem("eltwise", "128x14x14x64")
    assert p.form == "dims"
    assert p.tensors == ((128, 14, 14, 64),)
    assert p.dims == {}
    assert parse_problem("reorder", "1x64x3x7x7").tensors == ((1, 64, 3, 7, 7),)
    # torch 2.13.0 / oneDNN 3.12 on this machine (1-D reorder of a bias)
    assert parse_problem("reorder", "8").tensors == ((8,),)


def test_problem_matmul_two_tensors():
    # corpus: 27_onednn3x_amx_bf16_matmul_ellipses.log (public LLM performance notes)
    p = parse_problem("matmul", "256x11008:11008x4096")
    assert p.tensors == ((256, 11008), (11008, 4096))
    assert (p.dims["M"], p.dims["K"], p.dims["N"], p.dims["B"]) == (256, 11008, 4096, 1)


def test_problem_matmul_three_tensors_batched():
    # corpus: 15_onednn2x_tf_opt_gemm_api_markdown_bold.log (uxlfoundation/oneDNN issue #1729)
    p = parse_problem("matmul", "1536x384x64:1536x64x384:1536x384x384")
    assert len(p.tensors) == 3
    assert (p.dims["B"], p.dims["M"], p.dims["K"], p.dims["N"]) == (1536, 384, 64, 384)


def test_problem_gemm_api():
    # corpus: 17_onednn2x_tf_gemm_api_acl_single.log (uxlfoundation/oneDNN issue #1442)
    p = parse_problem("gemm_api", "1x512:512x512")
    assert (p.dims["M"], p.dims["K"], p.dims["N"]) == (1, 512, 512)
    # corpus: 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log (nested gemm)
    q = parse_problem("gemm", "2x2:2x3")
    assert (q.dims["M"], q.dims["K"], q.dims["N"]) == (2, 2, 3)


def test_problem_old_matmul_and_runtime_values():
    # synthetic, format doc §4.3 (v1.2 - v2.1 `[b<B>]m<M>n<N>k<K>`, runtime `*`)
    p = parse_problem("matmul", "b2m128n*k64")
    assert p.dims["M"] == 128
    assert p.dims["N"] is None
    assert p.dims["B"] == 2
    q = parse_problem("matmul", "*x256:256x512")
    assert q.tensors == ((None, 256), (256, 512))
    assert q.dims["M"] is None


def test_problem_sdpa_dims_list():
    # corpus: 31_onednn_v1_sdpa_gpu0_no_time.log (uxlfoundation/oneDNN PR #3205)
    p = parse_problem("sdpa", "1x2x1x128:1x2x128x384:1x2x384x128")
    assert p.tensors == ((1, 2, 1, 128), (1, 2, 128, 384), (1, 2, 384, 128))
    assert "M" not in p.dims


def test_problem_damage():
    assert parse_problem("reorder", "#").overflow
    empty = parse_problem("eltwise", "")
    assert empty == Problem(raw="", kind="eltwise")
    cut = parse_problem("convolution", "mb1_ic3oc64_ih")  # truncated line
    assert cut.error is not None
    assert cut.dims == {"mb": 1, "ic": 3, "oc": 64}


# ---------------------------------------------------------------------------------------
# graph logical tensors (format doc §5)


def test_graph_tensors():
    # corpus: 33_onednn_v1_graph_partition_exec_quoted.log (uxlfoundation/oneDNN PR #5516)
    lts = parse_graph_tensors(
        "in0_f32:0:strided:undef:1x16x384x64:393216s24576s64s1 "
        "in1_f32:1:strided:undef:1x16x384x64:393216s24576s64s1 in2_f32:3:strided:constant:1:1 "
        "in3_f32:5:strided:undef:1x1x384x384:147456s147456s384s1 "
        "in4_f32:8:strided:undef:1x16x384x64:393216s24576s64s1 "
        "out0_f32:9:strided:undef:1x16x384x64:393216s24576s64s1"
    )
    assert [t.name for t in lts] == ["in0", "in1", "in2", "in3", "in4", "out0"]
    t0 = lts[0]
    assert (t0.direction, t0.index, t0.dtype, t0.id) == ("in", 0, "f32", 0)
    assert (t0.layout_type, t0.property) == ("strided", "undef")
    assert t0.dims == (1, 16, 384, 64)
    assert t0.strides == (393216, 24576, 64, 1)
    assert lts[2].property == "constant"
    assert lts[2].dims == (1,)
    assert lts[5].direction == "out"
    assert all(t.error is None for t in lts)


def test_graph_tensors_opaque_any_unknown_and_damage():
    # synthetic from oneDNN src/graph/utils/verbose.cpp (opaque layout id, any, -1 dims)
    lts = parse_graph_tensors(
        "out0_bf16:9:opaque:undef:1x16:12345 in0_f32:2:any:variable:-1x16:any"
    )
    assert lts[0].layout == "12345"
    assert lts[0].strides == ()
    assert lts[1].dims == (None, 16)
    bad = parse_graph_tensors("in0_f32:0:strided:undef:1x16:16s1 garbage")
    assert bad[0].error is None
    assert bad[1].error is not None
    assert parse_graph_tensors("") == ()


# ---------------------------------------------------------------------------------------
# implementation names and ISAs (format doc §2, §4.6)


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        ("jit:avx2", ("jit", "avx2")),  # corpus 01
        ("jit:avx512_common", ("jit", "avx512_common")),  # corpus 05
        ("x64:gemm:jit", ("x64:gemm:jit", "")),  # corpus 25
        ("brg:avx512_core_amx", ("brg", "avx512_core_amx")),  # corpus 27
        ("jit:gemm:any", ("jit:gemm", "any")),  # corpus 29
        ("ocl:micro:any", ("ocl:micro", "any")),  # corpus 31
        ("simple:any", ("simple", "any")),  # corpus 03
        ("jit_uni_int8:avx2", ("jit_uni_int8", "avx2")),  # torch on this machine
        ("brgemm:undef", ("brgemm", "undef")),  # torch on this machine (rnn)
        ("jit_uni_ncsp:", ("jit_uni_ncsp", "")),  # torch on this machine (dispatch line)
        ("brg_conv_fwd:avx2_vnni_2", ("brg_conv_fwd", "avx2_vnni_2")),  # format doc §4.6
        ("brg_matmul:avx10_1_512_amx", ("brg_matmul", "avx10_1_512_amx")),
        ("gemm:acl", ("gemm:acl", "")),
        ("acl", ("acl", "")),
        ("jit:sve_256", ("jit", "sve_256")),
        ("ocl:gen9", ("ocl", "gen9")),
        ("zen:matmul:f32|bf16:amd", ("zen:matmul:f32|bf16:amd", "")),
        ("reorder+postops", ("reorder+postops", "")),
        ("", ("", "")),  # gemm_api
    ],
)
def test_split_impl(impl, expected):
    assert split_impl(impl) == expected


@pytest.mark.parametrize(
    ("header", "isa"),
    [
        ("Intel AVX2", "avx2"),  # corpus 09, 13; torch on this machine
        ("Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions", "avx512_core"),  # 05
        (
            # corpus: 35_onednn3_12_gpu_max_header_graph.log (oneDNN PR #4839). Per
            # cpu_isa_traits.cpp this is avx512_core_amx (= avx10_1_512_amx), not *_amx_fp16.
            "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX "
            "with bfloat16 and 8-bit integer support",
            "avx512_core_amx",
        ),
        (
            "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX "
            "with bfloat16, float16 and 8-bit integer support",
            "avx512_core_amx_fp16",
        ),
        ("Intel AVX-512 with float16, Intel DL Boost and bfloat16 support ", "avx512_core_fp16"),
        ("Intel AVX-512 with Intel DL Boost and bfloat16 support", "avx512_core_bf16"),
        ("Intel AVX-512 with Intel DL Boost", "avx512_core_vnni"),
        ("Intel AVX2 with Intel DL Boost, float16 and bfloat16 support", "avx2_vnni_2"),
        ("Intel AVX2 with Intel DL Boost", "avx2_vnni"),
        ("Intel AVX", "avx"),
        ("Intel SSE4.1", "sse41"),
        ("isa:Intel AVX2", "avx2"),
        ("Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2)", "avx2"),  # format doc §9 F0
        ("AArch64 (with Advanced SIMD & floating-point)", "asimd"),  # corpus 21
        ("AArch64 SVE (256 bits)", "sve_256"),  # corpus 23
        ("Intel 64", ""),
        ("something else", ""),
    ],
)
def test_isa_from_header(header, isa):
    assert isa_from_header(header) == isa


def test_isa_rank_order_and_aliases():
    order = [
        "sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2", "avx512_core", "avx512_core_vnni",
        "avx512_core_bf16", "avx512_core_fp16", "avx512_core_amx", "avx512_core_amx_fp16",
        "avx10_2_512",
    ]  # fmt: skip
    ranks = [ISA_RANK[i] for i in order]
    assert ranks == sorted(ranks)
    assert len(set(ranks)) == len(ranks)
    assert ISA_RANK["avx10_1_512"] == ISA_RANK["avx512_core_fp16"]
    assert ISA_RANK["avx10_1_512_amx"] == ISA_RANK["avx512_core_amx"]
    assert ISA_RANK["avx10_1_512_amx_fp16"] == ISA_RANK["avx512_core_amx_fp16"]
    assert isa_rank("sve_256") == AARCH64_ISA_RANK["sve_256"]
    assert isa_rank("uni") is None


def test_header_isa_and_kernel_isa_compare():
    # corpus 35 header (SPR) vs a v3.7+ kernel name on the same machine: same rank
    header = isa_from_header(
        "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with "
        "bfloat16 and 8-bit integer support"
    )
    _, kernel = split_impl("brg_matmul:avx10_1_512_amx")
    assert ISA_RANK[header] == ISA_RANK[kernel]
    _, old_kernel = split_impl("jit:avx2")
    assert ISA_RANK[old_kernel] < ISA_RANK[header]


# ---------------------------------------------------------------------------------------
# robustness


@pytest.mark.parametrize(
    "text",
    [None, 123, "\x00", "::::", "_", "__mask", "f", "a b  c", "src_:", ":f32:", "'", "+", ";;"],
)
def test_never_raises_on_odd_inputs(text):
    assert isinstance(parse_mds(text), MdList)
    assert isinstance(parse_attrs(text), Attrs)
    assert isinstance(parse_aux(text), dict)
    assert isinstance(parse_problem(text, text), Problem)
    assert isinstance(parse_graph_tensors(text), tuple)
    assert isinstance(split_impl(text), tuple)
    assert isinstance(isa_from_header(text), str)
