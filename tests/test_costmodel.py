"""FLOP and byte counts of the cost model against hand calculations.

Every line is read from a real log (sample_logs/ or tests/data/corpus/, named in each test)
unless marked *synthetic* (kinds the model supports that no log here shows). The expected
numbers are worked out by hand in the comment beside them; docs/cost-model.md has the
formulas. Bytes: f32 = 4, bf16/f16 = 2, s8/u8 = 1 per element.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.costmodel import (
    Cost,
    compute_dtype,
    conv_taps,
    no_cost_reason,
    padded_elements,
    primitive_cost,
    primitive_flops,
)
from dnnlens.parsers.memdesc import parse_mds
from dnnlens.parsers.records import LineRecord
from dnnlens.reading import load, load_lines

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT / "tests" / "data" / "corpus"


@cache
def _records(path: Path) -> tuple[LineRecord, ...]:
    return tuple(load([str(path)]).records)


def record(
    path: Path,
    kind: str,
    problem: str,
    prop_kind: str | None = None,
    attrs_has: str | None = None,
    mds_has: str | None = None,
) -> LineRecord:
    """The first event record of ``path`` with these fields (exec preferred)."""
    found = [
        r
        for r in _records(path)
        if r.kind == kind
        and r.problem == problem
        and (prop_kind is None or r.prop_kind == prop_kind)
        and (attrs_has is None or attrs_has in r.attrs)
        and (mds_has is None or mds_has in r.mds)
    ]
    assert found, f"no {kind} {problem} in {path.name}"
    found.sort(key=lambda r: r.operation != "exec")
    return found[0]


def cost_of(r: LineRecord) -> Cost:
    c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
    assert c is not None, r
    return c


def by_arg(c: Cost) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in c.tensors:
        out[t.arg] = out.get(t.arg, 0) + t.bytes
    return out


# ---------------------------------------------------------------------------------------
# helpers


def test_conv_taps_hand_counts():
    # i=o=64, k=3, s=1, p=1: tap 0 misses output 0, tap 2 misses output 63: 63+64+63
    assert conv_taps(64, 64, 3, 1, 1, 0) == 190
    # i=32, o=16, k=3, s=2, p=1: tap 0 (input 2x-1) misses x=0: 15; taps 1, 2: 16 each
    assert conv_taps(32, 16, 3, 2, 1, 0) == 47
    # i=224, o=112, k=7, s=2, p=3: 110+111+111+112+112+111+111
    assert conv_taps(224, 112, 7, 2, 3, 0) == 778
    # dilated i=o=8, k=3, d=1 (spacing 2), p=2: inputs x-2, x, x+2 -> 6+8+6
    assert conv_taps(8, 8, 3, 1, 2, 1) == 20
    # i=14, o=7, k=3, s=2, p=0: tap 2 of x=6 reads input 14 (implicit right padding): 7+7+6
    assert conv_taps(14, 7, 3, 2, 0, 0) == 20
    # no padding, dense: every pair counts, o*k
    assert conv_taps(10, 8, 3, 1, 0, 0) == 24


def test_padded_elements():
    # aBcd8b: C=3 rounded up to 8 -> 4*8*64*64
    assert padded_elements((4, 3, 64, 64), "aBcd8b") == 131072
    # ABcd8b8a: O=16, I=3 -> 16*8*3*3
    assert padded_elements((16, 3, 3, 3), "ABcd8b8a") == 1152
    # AB16b64a: A=100 -> 128, B=20 -> 32
    assert padded_elements((100, 20), "AB16b64a") == 128 * 32
    # plain tags and F0 names: logical count
    assert padded_elements((4, 3, 64, 64), "acdb") == 49152
    assert padded_elements((4, 3, 64, 64), "nChw8c") == 49152
    assert padded_elements((4, 3), "") == 12


def test_compute_dtype():
    assert compute_dtype(parse_mds("src:u8::blocked:ab::f0 wei:s8::blocked:ab::f0")) == "int8"
    assert compute_dtype(parse_mds("src:bf16::blocked:ab::f0 wei:bf16::blocked:ab::f0")) == "bf16"
    assert compute_dtype(parse_mds("src:f32::blocked:ab::f0"), "bf16") == "bf16"
    assert compute_dtype(parse_mds("fsrc:nchw fdst:nChw8c")) == "f32"  # 0.x: no dtypes


# ---------------------------------------------------------------------------------------
# convolution


def test_conv_forward_nchw_sample():
    # convnet_nchw_infer.log line 11: mb4 ic3 oc16 64x64 k3 s1 p1, src abcd, dst aBcd8b
    c = cost_of(
        record(
            SAMPLES / "convnet_nchw_infer.log",
            "convolution",
            "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1",
        )
    )
    # 2 * mb4 * oc16 * ic3 * taps_h 190 * taps_w 190 = 384 * 36100
    assert c.flops == 13_862_400
    # src 4*3*64*64=49152 el *4 = 196608; wei 16*3*3*3=432 *4 = 1728;
    # dst 4*16*64*64=262144 *4 = 1048576; total 1246912 (bias undef: none)
    assert by_arg(c) == {"src": 196_608, "wei": 1_728, "dst": 1_048_576}
    assert c.bytes == 1_246_912
    assert c.dtype == "f32"
    assert c.intensity == pytest.approx(13_862_400 / 1_246_912)


def test_conv_backward_data_and_weights_cl_train():
    path = SAMPLES / "convnet_cl_train.log"
    prob = "mb4_ic16oc32_ih32oh16kh3sh2dh0ph1_iw32ow16kw3sw2dw0pw1"
    bd = cost_of(record(path, "convolution", prob, "backward_data"))
    bw = cost_of(record(path, "convolution", prob, "backward_weights"))
    # the same multiply-adds in every direction: 2*4*32*16 * 47*47 = 4096 * 2209
    assert bd.flops == bw.flops == 9_048_064
    # diff_src 4*16*32*32 = 65536 el (262144 B), wei 32*16*3*3 = 4608 el (18432 B),
    # diff_dst 4*32*16*16 = 32768 el (131072 B): 411648 B
    assert bd.bytes == bw.bytes == 411_648
    access_bd = {t.arg: t.access for t in bd.tensors}
    access_bw = {t.arg: t.access for t in bw.tensors}
    assert access_bd == {"src": "write", "wei": "read", "dst": "read"}  # src is diff_src
    assert access_bw == {"src": "read", "wei": "write", "dst": "read"}  # wei is diff_wei


def test_conv_dilated_corpus():
    # 25_onednn3x_windows_gtest_exec_check_b.log: mb2 ic4 oc6 8x8 k3 dh1 (spacing 2) ph2
    c = cost_of(
        record(
            CORPUS / "25_onednn3x_windows_gtest_exec_check_b.log",
            "convolution",
            "mb2_ic4oc6_ih8oh8kh3sh1dh1ph2_iw8ow8kw3sw1dw1pw2",
        )
    )
    # taps 6+8+6 = 20 per dim: 2*2*6*4 * 20*20 = 96 * 400
    assert c.flops == 38_400
    # src 2*4*8*8=512, wei 6*4*3*3=216, bia 6, dst 2*6*8*8=768: 1502 el * 4
    assert c.bytes == 6_008


def test_conv_mkldnn0x_old_group_position_no_dtypes():
    # 01_mkldnn0x_benchdnn_resnet_conv1.log: mb50_g1ic3oc64 224->112 k7 s2 p3, fsrc:nchw
    c = cost_of(
        record(
            CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log",
            "convolution",
            "mb50_g1ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3",
        )
    )
    # taps 778 per dim: 2*50*64*3 * 778*778 = 19200 * 605284
    assert c.flops == 11_621_452_800
    # no dtype printed: f32 assumed; src 50*3*224*224 = 7526400 el, wei 64*3*7*7 = 9408,
    # dst 50*64*112*112 = 40140800: (7526400+9408+40140800)*4
    assert c.bytes == 190_706_432
    assert "f32 assumed" in c.notes[0]


def test_conv_int8_legacy():
    # legacy/onednn-3.2.0.log: src s8 acdb, wei s8 ABcd2b8a4b, dst f32, mb2 ic8 oc16 14x14
    c = cost_of(
        record(
            SAMPLES / "legacy" / "onednn-3.2.0.log",
            "convolution",
            "mb2_ic8oc16_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1",
            "forward_inference",
        )
    )
    # taps 13+14+13 = 40 per dim: 2*2*16*8 * 1600
    assert c.flops == 819_200
    # src 2*8*14*14 = 3136 B (s8), wei 16*8*9 = 1152 B (s8), dst 2*16*14*14 = 6272 * 4
    assert c.bytes == 3_136 + 1_152 + 25_088
    assert c.dtype == "int8"


def test_conv_post_ops_sum_and_relu():
    # compile_freezing_infer.log: brg_conv_fwd with bias and attr-post-ops:sum+eltwise_relu
    c = cost_of(
        record(
            SAMPLES / "compile_freezing_infer.log",
            "convolution",
            "mb4_ic16oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1",
            attrs_has="sum+eltwise_relu",
        )
    )
    # 2*4*16*16 * 94*94 = 18096128, + 1 op per dst element per post-op: 2 * 65536
    assert c.flops == 18_096_128 + 131_072
    # src 262144 + wei 9216 + bia 64 + dst 262144 + dst read again by sum 262144
    assert c.bytes == 262_144 + 9_216 + 64 + 262_144 + 262_144


@pytest.mark.parametrize(
    "problem",
    [
        "g32mb1_ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v2.3+ group position
        "mb1_g32ic32oc32_ih112oh112kh3sh1dh0ph1_iw112ow112kw3sw1dw0pw1",  # v0.x - v2.2
    ],
)
def test_conv_grouped_depthwise_synthetic(problem):
    # synthetic depthwise conv (format doc §4.3 example), 112x112, k3 p1
    mds = (
        "src:f32::blocked:aBcd8b::f0 wei:f32::blocked:Abcde8a::f0 bia:undef::undef::: "
        "dst:f32::blocked:aBcd8b::f0"
    )
    c = primitive_cost("convolution", problem, mds, "forward_inference", "", "")
    assert c is not None
    # taps 111+112+111 = 334 per dim; ic/g = 1: 2*1*32*1 * 334*334 = 64 * 111556
    assert c.flops == 7_139_584
    # src 32*112*112 = 401408, wei (g32, 1, 1, 3, 3) = 288, dst 401408: 803104 el * 4
    assert c.bytes == 3_212_416


def test_conv_1d_synthetic():
    # synthetic 1D conv: iw224 ow224 kw3 dilation 1 (spacing 2) pw2
    c = primitive_cost(
        "convolution",
        "mb1_ic3oc64_iw224ow224kw3sw1dw1pw2",
        "src:f32::blocked:abc::f0 wei:f32::blocked:abc::f0 "
        "bia:undef::undef::: dst:f32::blocked:abc::f0",
        "forward_inference",
    )
    # taps 222+224+222 = 668: 2*1*64*3 * 668
    assert c is not None and c.flops == 256_512
    # src 3*224 = 672, wei 64*3*3 = 576, dst 64*224 = 14336: 15584 el * 4
    assert c.bytes == 62_336


def test_deconvolution_synthetic():
    # synthetic 2x upsampling deconv: ih7 -> oh14, k4 s2 p1; taps counted on the
    # transposed conv (input 14, output 7): 6+7+7+6 = 26 per dim
    c = primitive_cost(
        "deconvolution",
        "mb1_ic16oc8_ih7oh14kh4sh2dh0ph1_iw7ow14kw4sw2dw0pw1",
        "src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 "
        "bia:undef::undef::: dst:f32::blocked:abcd::f0",
        "forward_inference",
    )
    # 2*1*8*16 * 26*26 = 256 * 676
    assert c is not None and c.flops == 173_056
    # src 16*7*7 = 784, wei 8*16*4*4 = 2048, dst 8*14*14 = 1568: 4400 el * 4
    assert c.bytes == 17_600


# ---------------------------------------------------------------------------------------
# GEMM family


def test_inner_product_legacy():
    # legacy/onednn-3.2.0.log: mb2ic16ih7iw7oc10, wei BcdA8b10a, bias
    c = cost_of(
        record(SAMPLES / "legacy" / "onednn-3.2.0.log", "inner_product", "mb2ic16ih7iw7oc10")
    )
    # 2 * M2 * N10 * K(16*7*7=784)
    assert c.flops == 31_360
    # src 2*16*7*7 = 1568, wei 10*16*7*7 = 7840 (blocks 8b, 10a divide evenly), bia 10,
    # dst 2*10 = 20: 9438 el * 4
    assert c.bytes == 37_752


@pytest.mark.parametrize(
    "path,problem",
    [
        (SAMPLES / "legacy" / "onednn-2.0.0.log", "m32n48k64"),  # v1.2 - v2.1 form
        (SAMPLES / "legacy" / "onednn-2.2.0.log", "32x64:64x48:32x48"),  # src:wei:dst
        (SAMPLES / "legacy" / "onednn-3.2.0.log", "32x64:64x48"),  # src:wei
    ],
)
def test_matmul_legacy_forms(path, problem):
    c = cost_of(record(path, "matmul", problem))
    # 2 * M32 * N48 * K64
    assert c.flops == 196_608
    # src 32*64 = 2048, wei 64*48 = 3072, dst 32*48 = 1536: 6656 el * 4
    assert c.bytes == 26_624


def test_matmul_bf16_amx_corpus():
    # 27_onednn3x_amx_bf16_matmul_ellipses.log: 256x11008:11008x4096, bf16
    c = cost_of(
        record(
            CORPUS / "27_onednn3x_amx_bf16_matmul_ellipses.log", "matmul", "256x11008:11008x4096"
        )
    )
    # 2 * 256 * 4096 * 11008
    assert c.flops == 23_085_449_216
    # (256*11008 + 11008*4096 + 256*4096) * 2 B = (2818048 + 45088768 + 1048576) * 2
    assert c.bytes == 97_910_784
    assert c.dtype == "bf16"


def test_matmul_batched_corpus():
    # 15_onednn2x_tf_opt_gemm_api_markdown_bold.log: 1536x384x64:1536x64x384:1536x384x384
    c = cost_of(
        record(
            CORPUS / "15_onednn2x_tf_opt_gemm_api_markdown_bold.log",
            "matmul",
            "1536x384x64:1536x64x384:1536x384x384",
        )
    )
    # 2 * B1536 * M384 * N384 * K64
    assert c.flops == 28_991_029_248
    # (1536*384*64 + 1536*64*384 + 1536*384*384) * 4 = (37748736*2 + 226492416) * 4
    assert c.bytes == 1_207_959_552


def test_matmul_broadcast_batch_and_bias_synthetic():
    # synthetic: batch 2 against a broadcast weight batch 1
    c = primitive_cost(
        "matmul",
        "2x128x256:1x256x512",
        "src:f32::blocked:abc::f0 wei:f32::blocked:abc::f0 dst:f32::blocked:abc::f0",
        "undef",
    )
    # B = max(2, 1) = 2: 2*2*128*512*256
    assert c is not None and c.flops == 67_108_864
    # src 2*128*256 = 65536, wei 256*512 = 131072, dst 2*128*512 = 131072: 327680 el * 4
    assert c.bytes == 1_310_720
    # synthetic: bias with mask 2 (dim 1 = N): 1x512
    c = primitive_cost(
        "matmul",
        "128x256:256x512",
        "src:f32::blocked:ab::f0 "
        "wei:f32::blocked:ab::f0 bia:f32::blocked:ab::f0_mask2 "
        "dst:f32::blocked:ab::f0",
        "undef",
    )
    # src 32768 + wei 131072 + bias 512 + dst 65536 = 229888 el * 4
    assert c is not None and c.bytes == 919_552


@pytest.mark.parametrize(
    "path,problem,flops,nbytes",
    [
        # 36864x1024:1024x1024: 2*36864*1024*1024; (37748736 + 1048576 + 37748736) * 4
        (
            CORPUS / "15_onednn2x_tf_opt_gemm_api_markdown_bold.log",
            "36864x1024:1024x1024",
            77_309_411_328,
            306_184_192,
        ),
        # 1x512:512x512: 2*1*512*512; (512 + 262144 + 512) * 4
        (CORPUS / "17_onednn2x_tf_gemm_api_acl_single.log", "1x512:512x512", 524_288, 1_052_672),
    ],
)
def test_gemm_api_corpus(path, problem, flops, nbytes):
    c = cost_of(record(path, "gemm_api", problem))
    assert (c.flops, c.bytes) == (flops, nbytes)


def test_gemm_nested_with_post_ops_corpus():
    # 29_onednn3_8rc_xpu_gpu_gemm_info_postops.log: create_nested gemm src_a/src_b 2x2:2x3,
    # post-ops eltwise_linear + binary_add:f32:3:ab + eltwise_linear
    c = cost_of(record(CORPUS / "29_onednn3_8rc_xpu_gpu_gemm_info_postops.log", "gemm", "2x2:2x3"))
    # 2*2*3*2 = 24, + 3 post-ops * 6 dst elements = 18
    assert c.flops == 42
    # src_a 4 + src_b 6 + dst 6 + binary src1 (mask 3: both dims) 6 = 22 el * 4
    assert c.bytes == 88


def test_sdpa_corpus():
    path = CORPUS / "31_onednn_v1_sdpa_gpu0_no_time.log"
    # q 1x2x1x128, k 1x2x128x384 (D x Sk), v 1x2x384x128; msk:1d (Sk elements)
    f16 = cost_of(record(path, "sdpa", "1x2x1x128:1x2x128x384:1x2x384x128", mds_has="key:f16"))
    # 2*BH2*Sq1*Sk384*(D128+Dv128) + 5*BH2*Sq1*Sk384 = 393216 + 3840
    assert f16.flops == 397_056
    # q 256 + k 98304 + v 98304 + msk 384 + dst 256 = 197504 el * 2 B
    assert f16.bytes == 395_008
    s8 = cost_of(record(path, "sdpa", "1x2x1x128:1x2x128x384:1x2x384x128", mds_has="key:s8"))
    # q 512 B + k 98304 B (s8) + v 98304 B (s8) + msk 768 B + dst 512 B
    assert s8.bytes == 198_400
    assert s8.dtype == "int8"


# ---------------------------------------------------------------------------------------
# rnn


def test_lstm_sample():
    # lstm_infer.log: vanilla_lstm l1 t20 mb4 sic64 slc32 dhc64 dic64, unidirectional
    c = cost_of(record(SAMPLES / "lstm_infer.log", "rnn", "l1t20mb4sic64slc32dhc64dic64"))
    # per cell 2 * gates4 * dhc64 * mb4 * (sic64 + slc32) = 196608; * t20 * l1 * dirs1
    assert c.flops == 3_932_160
    # src_layer 20*4*32 = 2560, src_iter 1*1*4*64 = 256, wei_layer 1*1*32*4*64 = 8192,
    # wei_iter 1*1*64*4*64 = 16384, bias 1*1*4*64 = 256, dst_layer 20*4*64 = 5120,
    # dst_iter 256: 33024 el * 4
    assert c.bytes == 132_096
    assert any("GEMM FLOPs only" in n for n in c.notes)


def test_gru_bidirectional_backward_synthetic():
    # synthetic: vanilla_gru, 2 layers, bidirectional_concat, backward (x2)
    c = primitive_cost(
        "rnn",
        "l2t10mb8sic32slc32dhc32dic32",
        "src_layer:f32::blocked:abc::f0 dst_layer:f32::blocked:abc::f0",
        "backward",
        "alg:vanilla_gru direction:bidirectional_concat",
    )
    # 2 (backward) * dirs2 * l2 * t10 * 2*gates3*dhc32*mb8*(32+32) = 80 * 98304
    assert c is not None and c.flops == 7_864_320
    # src_layer 10*8*32 = 2560, dst_layer 10*8*(2*32) = 5120 (concat): 7680 el * 4
    assert c.bytes == 30_720


# ---------------------------------------------------------------------------------------
# memory-bound kinds


def test_eltwise_legacy_data_only_md():
    # legacy/onednn-3.2.0.log: eltwise_tanh 2x16x14x14, mds `data_f32 diff_undef`
    c = cost_of(record(SAMPLES / "legacy" / "onednn-3.2.0.log", "eltwise", "2x16x14x14"))
    # 1 op per element: 2*16*14*14
    assert c.flops == 6_272
    # data read + written back: 2 * 6272 * 4
    assert c.bytes == 50_176


def test_eltwise_relu_training_corpus():
    # 07_dnnl1x_tf23_osx_backward_data.log: relu forward_training 128x14x14x64
    c = cost_of(record(CORPUS / "07_dnnl1x_tf23_osx_backward_data.log", "eltwise", "128x14x14x64"))
    # 128*14*14*64 = 1605632 elements, 1 op each, read + write 4 B
    assert (c.flops, c.bytes) == (1_605_632, 12_845_056)


def test_eltwise_backward_synthetic():
    # synthetic v2.x backward eltwise: data (src) and diff (diff_dst) printed
    c = primitive_cost(
        "eltwise",
        "2x16x14x14",
        "data_f32::blocked:abcd:f0 diff_f32::blocked:abcd:f0",
        "backward_data",
        "alg:eltwise_relu",
    )
    # 2 ops per element; data read, diff_dst read, diff_src written: 3 * 6272 * 4
    assert c is not None and (c.flops, c.bytes) == (12_544, 75_264)


@pytest.mark.parametrize(
    "path,kind",
    [
        (SAMPLES / "legacy" / "onednn-3.2.0.log", "pooling"),
        (SAMPLES / "legacy" / "onednn-2.4.0.log", "pooling_v2"),
    ],
)
def test_pooling_legacy(path, kind):
    problem = (
        "mb2ic16_ih14oh7kh2sh2dh0ph0_iw14ow7kw2sw2dw0pw0"
        if "3.2" in path.name or "2.4" in path.name
        else "mb2ic16_ih14oh7kh2dh0sh2ph0_iw14ow7kw2dw0sw2pw0"
    )
    c = cost_of(record(path, kind, problem))
    # max over 2x2 windows, stride 2, no padding: 7 outputs * 2 taps = 14 per dim;
    # 1 op per tap: mb2 * ic16 * 14 * 14
    assert c.flops == 6_272
    # src 2*16*14*14 = 6272 el, dst 2*16*7*7 = 1568 el (ws undef): 7840 * 4
    assert c.bytes == 31_360


def test_pooling_old_dilation_order_legacy():
    # legacy/onednn-2.0.0.log prints dh before sh: mb2ic16_ih14oh7kh2dh0sh2ph0_...
    c = cost_of(
        record(
            SAMPLES / "legacy" / "onednn-2.0.0.log",
            "pooling",
            "mb2ic16_ih14oh7kh2dh0sh2ph0_iw14ow7kw2dw0sw2pw0",
        )
    )
    assert (c.flops, c.bytes) == (6_272, 31_360)  # same hand count as above


@pytest.mark.parametrize(
    "path,flags",
    [
        (SAMPLES / "legacy" / "onednn-2.0.0.log", "flags:S"),  # v2.0 scale_shift letter
        (SAMPLES / "legacy" / "onednn-3.2.0.log", "flags:CH"),  # v2.x+ scale and shift
    ],
)
def test_batch_norm_training_legacy(path, flags):
    r = record(path, "batch_normalization", "mb2ic16ih14iw14")
    assert r.aux == flags
    c = cost_of(r)
    # statistics computed (3) + normalisation (2) = 5 ops per element: 5 * 6272
    assert c.flops == 31_360
    # data read + written (2*6272*4 = 50176), mean and variance written (2*16*4 = 128),
    # scale and shift read (2*16*4 = 128)
    assert c.bytes == 50_432


def test_batch_norm_global_stats_numeric_flags_synthetic():
    # synthetic v1.x numeric flags:3 = use_global_stats | use_scaleshift, inference
    c = primitive_cost(
        "batch_normalization",
        "mb2ic16ih14iw14",
        "data_f32::blocked:aBcd8b:f0 diff_undef::undef::f0",
        "forward_inference",
        "flags:3",
    )
    # stats given: 2 ops per element; same tensors, mean/var read instead of written
    assert c is not None and (c.flops, c.bytes) == (12_544, 50_432)


def test_batch_norm_backward_synthetic():
    c = primitive_cost(
        "batch_normalization",
        "mb2ic16ih14iw14",
        "data_f32::blocked:aBcd8b:f0 diff_f32::blocked:aBcd8b:f0",
        "backward",
        "flags:CH",
    )
    # 8 ops per element: 8 * 6272
    assert c is not None and c.flops == 50_176
    # data, diff_dst read, diff_src written (3*25088) + mean, var, scale, shift read and
    # diff_scale, diff_shift written (6 * 64)
    assert c.bytes == 75_264 + 384


def test_layer_norm_synthetic():
    c = primitive_cost(
        "layer_normalization",
        "2x128x768",
        "src:f32::blocked:abc::f0 dst:f32::blocked:abc::f0",
        "forward_inference",
        "flags:CH",
    )
    # stats computed on the fly (not stored): 5 * 2*128*768
    assert c is not None and c.flops == 983_040
    # src + dst 2 * 196608 * 4 = 1572864, scale + shift over the last dim 2 * 768 * 4
    assert c.bytes == 1_579_008


def test_group_norm_synthetic():
    c = primitive_cost(
        "group_normalization",
        "g4mb2ic16ih14iw14",
        "src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "forward_training",
        "flags:CH",
    )
    # 5 * 6272; bytes 2*6272*4 + mean/var (mb2*g4 = 8 each) 64 + scale/shift (16 each) 128
    assert c is not None and (c.flops, c.bytes) == (31_360, 50_368)


def test_softmax_synthetic():
    c = primitive_cost(
        "softmax",
        "128x1000",
        "src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0",
        "forward_inference",
        "alg:softmax_accurate axis:1",
    )
    # 5 ops per element (max, subtract, exp, sum, scale); src + dst
    assert c is not None and (c.flops, c.bytes) == (640_000, 1_024_000)


def test_lrn_synthetic():
    c = primitive_cost(
        "lrn",
        "mb2ic16ih14iw14ls5beta0.75",
        "data_f32::blocked:abcd:f0 diff_undef::undef::f0",
        "forward_inference",
        "alg:lrn_across_channels",
    )
    # (2*5 + 3) ops per element * 6272; data read + written
    assert c is not None and (c.flops, c.bytes) == (81_536, 50_176)


@pytest.mark.parametrize(
    "path,problem",
    [
        (SAMPLES / "legacy" / "onednn-3.2.0.log", "2x16x14x14:1x16x1x1"),
        (SAMPLES / "legacy" / "onednn-2.0.0.log", "2x16x14x14:1x16x1x1 2x16x14x14"),  # + dst
    ],
)
def test_binary_legacy(path, problem):
    c = cost_of(record(path, "binary", problem))
    # 1 op per dst element 2*16*14*14; src0 6272 + src1 16 + dst 6272 el * 4
    assert (c.flops, c.bytes) == (6_272, 50_240)


def test_prelu_synthetic():
    c = primitive_cost(
        "prelu",
        "2x16x14x14:1x16x1x1",
        "data:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "forward_inference",
    )
    # 2 ops per element; data 6272 + wei 16 + dst 6272 el * 4
    assert c is not None and (c.flops, c.bytes) == (12_544, 50_240)


def test_sum_legacy():
    c = cost_of(record(SAMPLES / "legacy" / "onednn-3.2.0.log", "sum", "2x16x14x14"))
    # 2 inputs: (2*2 - 1) ops per element (2 scale multiplies, 1 add) * 6272
    assert c.flops == 18_816
    # 2 sources + dst: 3 * 6272 * 4
    assert c.bytes == 75_264


def test_sum_mkldnn0x_num_inputs_corpus():
    # 03_mkldnn0x_tf_sum_reorder_loop_truncated.log: one `in` md printed, aux num:2
    c = cost_of(record(CORPUS / "03_mkldnn0x_tf_sum_reorder_loop_truncated.log", "sum", "128x128"))
    # 3 ops * 16384; 2 inputs + output: 3 * 16384 * 4
    assert (c.flops, c.bytes) == (49_152, 196_608)


def test_concat_synthetic():
    c = primitive_cost(
        "concat",
        "2x16x7x7:2x8x7x7",
        "src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "undef",
        "axis:1",
    )
    # no arithmetic; srcs 1568 + 784, dst 2x24x7x7 = 2352: 4704 el * 4
    assert c is not None and (c.flops, c.bytes) == (0, 18_816)


def test_shuffle_reduction_resampling_synthetic():
    sh = primitive_cost(
        "shuffle", "2x16x14x14", "data:f32::blocked:abcd::f0", "forward_inference", "axis:1 group:4"
    )
    assert sh is not None and (sh.flops, sh.bytes) == (0, 50_176)  # read + write 6272 el
    rd = primitive_cost(
        "reduction",
        "2x16x14x14:2x16x1x1",
        "src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "undef",
        "alg:reduction_sum p:1 eps:0",
    )
    # 1 op per source element; src 6272 + dst 32 el * 4
    assert rd is not None and (rd.flops, rd.bytes) == (6_272, 25_216)
    rs = primitive_cost(
        "resampling",
        "mb2ic16_ih14oh28_iw14ow28",
        "src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "forward_inference",
        "alg:resampling_linear",
    )
    # bilinear: 4 taps * 2 ops per dst element, 2*16*28*28 = 25088; src 6272 + dst 25088 el
    assert rs is not None and (rs.flops, rs.bytes) == (200_704, 125_440)


# ---------------------------------------------------------------------------------------
# reorder


def test_reorder_activation_sample():
    # convnet_nchw_infer.log line 13: aBcd8b -> abcd 4x16x64x64
    c = cost_of(record(SAMPLES / "convnet_nchw_infer.log", "reorder", "4x16x64x64"))
    # reads and writes its tensor: 2 * 262144 el * 4
    assert (c.flops, c.bytes) == (0, 2_097_152)
    assert c.intensity == 0.0


def test_reorder_weights_lstm_sample():
    # lstm_infer.log: abdec -> abdEc16e 1x1x64x4x64
    c = cost_of(record(SAMPLES / "lstm_infer.log", "reorder", "1x1x64x4x64"))
    # 16384 el (e = 64 divisible by 16) read and written: 2 * 16384 * 4
    assert c.bytes == 131_072


def test_reorder_quantize_legacy():
    # legacy/onednn-3.2.0.log: f32 abcd -> s8 acdb 2x8x14x14
    c = cost_of(
        record(
            SAMPLES / "legacy" / "onednn-3.2.0.log",
            "reorder",
            "2x8x14x14",
            mds_has="dst_s8::blocked:acdb",
        )
    )
    # 3136 el read as f32 (12544 B), written as s8 (3136 B)
    assert c.bytes == 15_680


def test_reorder_padded_destination_synthetic():
    c = primitive_cost(
        "reorder", "4x3x64x64", "src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0", "undef"
    )
    # src 4*3*64*64 = 49152 el; dst C padded 3 -> 8: 4*8*64*64 = 131072 el; * 4 B
    assert c is not None and c.bytes == (49_152 + 131_072) * 4


def test_reorder_mkldnn0x_corpus():
    # 01_mkldnn0x_benchdnn_resnet_conv1.log: in:f32_nchw out:f32_nChw8c 50x64x112x112
    c = cost_of(
        record(
            CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log",
            "reorder",
            "50x64x112x112",
            mds_has="out:f32_nChw8c",
        )
    )
    # 40140800 el read and written, 4 B each
    assert c.bytes == 321_126_400


# ---------------------------------------------------------------------------------------
# every kind in the sample logs and corpus, and what the model refuses


def test_every_kind_in_logs_has_a_cost():
    """Every executed primitive line of every sample and corpus log gets a cost, except the
    ones with nothing to count (graph partitions, a truncated line with no problem)."""
    paths = (
        sorted(SAMPLES.glob("*.log"))
        + sorted((SAMPLES / "legacy").glob("*.log"))
        + sorted(CORPUS.glob("*.log"))
    )
    missing = []
    kinds = set()
    for path in paths:
        for r in _records(path):
            if r.operation != "exec" or not r.kind or r.kind == "graph_partition":
                continue
            kinds.add(r.kind)
            c = primitive_cost(r.kind, r.problem, r.mds, r.prop_kind, r.aux, r.attrs)
            if c is None and r.problem:
                missing.append((path.name, r.kind, r.problem))
            if c is not None:
                assert c.flops >= 0 and c.bytes > 0
    assert not missing
    assert {
        "convolution",
        "reorder",
        "rnn",
        "matmul",
        "gemm_api",
        "inner_product",
        "eltwise",
        "pooling",
        "pooling_v2",
        "batch_normalization",
        "binary",
        "sum",
        "sdpa",
    } <= kinds


@pytest.mark.parametrize(
    "kind,problem,mds",
    [
        ("graph_partition", "matmul_qk;softmax", "in0_f32:0:strided:undef:1x2:2s1"),
        ("zero_pad", "1x2", "data:f32::blocked:ab::f0"),
        ("some_future_kind", "1x2", "src:f32::blocked:ab::f0"),
        ("matmul", "*x256:256x512", "src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0"),
        ("convolution", "#", ""),
        ("convolution", "", "src:f32::blocked:abcd::f0"),
        ("convolution", "mbXicY", "src:f32"),
        ("rnn", "l1t*mb4sic64slc32dhc64dic64", "src_layer:f32::blocked:abc::f0"),
        ("", "", ""),
    ],
)
def test_unknown_or_unusable_gives_none(kind, problem, mds):
    assert primitive_cost(kind, problem, mds, "undef", "", "") is None


@pytest.mark.parametrize(
    "junk",
    [
        "\x00",
        "::::",
        "x" * 500,
        "1x" * 40,
        "mb1_ic",
        "a:b:c",
        "g0mb1_ic4oc4_ih1oh1kh1sh0dh0ph0_iw1ow1kw1sw0dw0pw0",
    ],
)
def test_never_raises(junk):
    for kind in (
        "convolution",
        "matmul",
        "reorder",
        "binary",
        "rnn",
        "pooling",
        "sdpa",
        "batch_normalization",
        "concat",
    ):
        primitive_cost(kind, junk, junk, junk, junk, junk)


def test_the_rules_count_flops_with_the_cost_model():
    from dnnlens.rules.flops import FLOP_FUNCTION

    assert FLOP_FUNCTION is primitive_flops
    # padding taps are not counted (as benchdnn): 13,862,400 < 2*4*16*3*64*64*9 dense
    ours = primitive_flops("convolution", "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1")
    assert ours == 13_862_400.0
    assert ours < 2 * 4 * 16 * 3 * 64 * 64 * 9
    assert primitive_flops("nothing", "1x1") is None


# An exec line of sample_logs/all_timestamps_infer.log (line 1 of its convolutions) whose
# minibatch is edited to 310 digits: more than a float can hold.
_CONV_LINE = (
    "onednn_verbose,v1,1796010103266.052979,primitive,exec,cpu,convolution,jit:avx2,"
    "forward_training,src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 "
    "bia:undef::undef::: dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,"
    "alg:convolution_direct,mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1,1.06714"
)
_HUGE_MB = _CONV_LINE.replace("mb4_", "mb" + "9" * 310 + "_")


def test_minibatch_too_large_has_no_cost_and_a_reason() -> None:
    rec = next(r for r in load_lines([_HUGE_MB]).records if r.operation == "exec")
    args = (rec.kind, rec.problem, rec.mds, rec.prop_kind, rec.aux, rec.attrs)
    assert primitive_cost(*args) is None
    assert no_cost_reason(*args) == "minibatch too large to count"


def test_minibatch_too_large_is_a_note_and_the_rest_is_analysed(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from dnnlens.cli import app

    log = tmp_path / "huge_mb.log"
    log.write_text(_CONV_LINE + "\n" + _HUGE_MB + "\n")
    result = CliRunner().invoke(app, ["analyze", str(log), "-f", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert "no cost for 1 primitives: minibatch too large to count" in report["notes"]
    counted = [p for p in report["primitives"] if p.get("flops")]
    # the unedited convolution keeps its cost: 2*mb*oc*ic * taps(h) * taps(w), where a
    # 3-tap window over 64 outputs with one pixel of padding misses 2 taps: 64*3 - 2 = 190
    assert [p["flops"] for p in counted] == [2 * 4 * 16 * 3 * 190 * 190]
