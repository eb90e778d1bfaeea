"""benchdnn reproducers.

The golden lines for the NCHW sample were written by hand from the log lines quoted above
each of them, following oneDNN's benchdnn docs (tests/benchdnn/doc/driver_conv.md,
driver_reorder.md, knobs_attr.md, knobs_common.md, knobs_tag.md): ``--reset`` first,
``--allow-enum-tags-only=false`` and ``--engine=cpu`` (common options are not reset), then
driver options, then the problem descriptor as printed by verbose. Memory descriptors
created with format ``any`` (property ``a``) become ``any`` so the library picks its layout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.parsers.records import LineRecord
from dnnlens.reading import load, load_text
from dnnlens.report.benchdnn import Unsupported, batches, benchdnn_case, render_batch

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
HEAD = "--reset --allow-enum-tags-only=false --engine=cpu"

GOLDEN_NCHW_TOP5 = {
    "reorder": [
        # line 16 (33 execs, 63.746 ms): reorder,jit:blk,undef,
        #   src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0,attr-scratchpad:user,,4x16x32x32
        f"{HEAD} --sdt=f32 --ddt=f32 --stag=abcd --dtag=aBcd8b --attr-scratchpad=user 4x16x32x32",
        # line 18 (22 execs, 56.843 ms): reorder,jit:uni,undef,
        #   src:f32::blocked:abcd::f0 dst:f32::blocked:ABcd8b8a::f0,attr-scratchpad:user,,16x16x3x3
        f"{HEAD} --sdt=f32 --ddt=f32 --stag=abcd --dtag=ABcd8b8a --attr-scratchpad=user 16x16x3x3",
        # line 21 (22 execs, 45.007 ms): reorder,jit:blk,undef,
        #   src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,4x16x32x32
        f"{HEAD} --sdt=f32 --ddt=f32 --stag=aBcd8b --dtag=abcd --attr-scratchpad=user 4x16x32x32",
        # line 13 (11 execs, 34.062 ms): reorder,jit:blk,undef,
        #   src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,4x16x64x64
        f"{HEAD} --sdt=f32 --ddt=f32 --stag=aBcd8b --dtag=abcd --attr-scratchpad=user 4x16x64x64",
    ],
    "conv": [
        # line 19 (22 execs, 58.614 ms): convolution,jit:avx2,forward_training,
        #   src:f32:a:blocked:aBcd8b::f0 wei:f32:a:blocked:ABcd8b8a::f0 bia:undef::undef:::
        #   dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,alg:convolution_direct,
        #   mb4_ic16oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1
        # forward_training without bias -> FWD_D; every md has property `a` -> tag any
        f"{HEAD} --dir=FWD_D --alg=direct --dt=f32 --stag=any --wtag=any --dtag=any "
        "--attr-scratchpad=user mb4_ic16oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1",
    ],
}


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln and not ln.startswith("#")]


def test_golden_nchw_top5():
    files = batches(Analysis(load([NCHW])), top=5)
    assert list(files) == ["reorder", "conv"]  # drivers in order of their first primitive
    for driver, expected in GOLDEN_NCHW_TOP5.items():
        assert _lines(files[driver]) == expected
    assert "# run: benchdnn --mode=P --conv --batch=conv.batch" in files["conv"]
    assert "63.746 ms (17.9%), 33 executions" in files["reorder"]


def test_render_batch_sections():
    text = render_batch(Analysis(load([NCHW])), top=5)
    assert text.startswith("# dnnlens: benchdnn reproducers for the top 5 primitives")
    assert "# ==== reorder ====" in text and "# ==== conv ====" in text
    assert _lines(text) == GOLDEN_NCHW_TOP5["reorder"] + GOLDEN_NCHW_TOP5["conv"]


_OPTION = re.compile(r"--[a-z][a-z0-9_-]*(=[^ ]+)?")


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in LOGS.glob("*.log"))
    + sorted("legacy/" + p.name for p in (LOGS / "legacy").glob("*.log")),
)
def test_every_sample_line_is_benchdnn_syntax(name):
    for line in _lines(render_batch(Analysis(load([str(LOGS / name)])), top=50)):
        tokens = line.split(" ")
        assert tokens[:3] == HEAD.split(" ")
        *options, problem = tokens
        for opt in options:
            assert _OPTION.fullmatch(opt), (opt, line)
        assert not problem.startswith("-") and problem, line
        assert re.fullmatch(r"[A-Za-z0-9_:x.]+", problem), line


def _rec(
    kind: str,
    prop: str,
    mds: str,
    attrs: str = "",
    aux: str = "",
    problem: str = "",
    impl: str = "jit:any",
    engine: str = "cpu",
) -> LineRecord:
    return LineRecord(
        "event",
        "onednn-v1",
        "exec",
        "",
        "primitive",
        engine,
        kind,
        impl,
        prop,
        mds,
        attrs,
        aux,
        problem,
    )


def test_conv_int8_with_bias_scales_zero_points_post_ops():
    r = _rec(
        "convolution",
        "forward_inference",
        "src:u8:a:blocked:acdb::f0 wei:s8:a:blocked:AcdB8a4b::f8:zpm1 "
        "bia:f32:a:blocked:a::f0 dst:s8:a:blocked:acdb::f0",
        "attr-scratchpad:user attr-scales:src0:0:f32+dst:0:f32+wei:1:f32 "
        "attr-zero-points:src0:0:s32 attr-post-ops:eltwise_relu+binary_add:f32:2:abcd",
        "alg:convolution_direct",
        "mb1_ic8oc8_ih12oh14kh3sh1dh0ph2_iw12ow14kw3sw1dw0pw2",
    )
    case = benchdnn_case(r)
    assert case.driver == "conv"
    assert case.line == (
        f"{HEAD} --dir=FWD_I --bia-dt=f32 --alg=direct --dt=u8:s8:s8 --stag=any --wtag=any "
        "--dtag=any --attr-post-ops=relu+add:f32:2:abcd "
        "--attr-scales=src0:common:0.5+dst:common:0.5+wei:per_oc "
        "--attr-zero-points=src0:common:1 --attr-scratchpad=user "
        "mb1_ic8oc8_ih12oh14kh3sh1dh0ph2_iw12ow14kw3sw1dw0pw2"
    )
    assert any("placeholder" in n for n in case.notes)


def test_conv_training_bias_and_backward():
    fwd = _rec(
        "convolution",
        "forward_training",
        "src:f32::blocked:acdb::f0 wei:f32::blocked:Acdb16a::f0 "
        "bia:f32::blocked:a::f0 dst:f32::blocked:acdb::f0",
        "",
        "alg:convolution_direct",
        "mb2_ic16oc16_ih7oh7kh3sh1dh0ph1_iw7ow7kw3sw1dw0pw1",
    )
    assert (
        "--dir=FWD_B --alg=direct --dt=f32 --stag=acdb --wtag=Acdb16a --dtag=acdb"
        in benchdnn_case(fwd).line
    )
    bwd = _rec(
        "convolution",
        "backward_weights",
        "src:f32::blocked:acdb::f0 diff_wei:f32::blocked:Acdb16a::f0 "
        "diff_bia:f32::blocked:a::f0 diff_dst:f32::blocked:acdb::f0",
        "",
        "alg:convolution_direct",
        "mb2_ic16oc16_ih7oh7kh3sh1dh0ph1_iw7ow7kw3sw1dw0pw1",
    )
    assert "--dir=BWD_WB" in benchdnn_case(bwd).line


def test_matmul_bias_mask_and_old_problem():
    r = _rec(
        "matmul",
        "undef",
        "src:bf16::blocked:ab::f0 wei:bf16:a:blocked:BA16a64b2a::f0 "
        "bia:bf16::blocked:ab::f0_mask2 dst:bf16::blocked:ab::f0",
        "attr-fpmath:bf16",
        "",
        "128x256:256x512",
    )
    assert benchdnn_case(r).line == (
        f"{HEAD} --dt=bf16 --bia-dt=bf16 --bia_mask=2 --stag=ab --wtag=any --dtag=ab "
        "--attr-fpmath=bf16 128x256:256x512"
    )
    old = _rec(
        "matmul",
        "undef",
        "src_f32::blocked:abc:f0 wei_f32::blocked:abc:f0 dst_f32::blocked:abc:f0",
        "",
        "",
        "b4m32n48k64",
    )
    assert benchdnn_case(old).problem == "4x32x64:4x64x48"


def test_reorder_int8_compensation_and_scales():
    r = _rec(
        "reorder",
        "undef",
        "src:f32::blocked:abcd::f0 dst:s8::blocked:ABcd2b8a4b::f11:s8m1:zpm1",
        "attr-scales:src0:1:f32",
        "",
        "16x8x3x3",
        "simple:any",
    )
    assert benchdnn_case(r).line == (
        f"{HEAD} --sdt=f32 --ddt=s8 --stag=abcd --dtag=ABcd2b8a4b "
        "--oflag=s8s8_comp:1+zp_comp:1 --attr-scales=src0:per_dim_0 16x8x3x3"
    )


def test_other_drivers():
    pool = _rec(
        "pooling",
        "forward_inference",
        "src:f32::blocked:acdb::f0 dst:f32::blocked:acdb::f0 ws:undef::undef:::",
        "",
        "alg:pooling_max",
        "mb4ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0",
    )
    assert benchdnn_case(pool).line.endswith(
        "--dir=FWD_I --dt=f32 --tag=acdb --alg=max "
        "mb4ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0"
    )
    elt = _rec(
        "eltwise",
        "forward_training",
        "data_f32::blocked:abcd:f0 diff_undef::undef::f0",
        "",
        "alg:eltwise_clip alpha:0 beta:6",
        "2x16x14x14",
    )
    assert benchdnn_case(elt).line.endswith(
        "--dir=FWD_D --dt=f32 --tag=abcd --alg=clip --beta=6 2x16x14x14"
    )
    bnorm = _rec(
        "batch_normalization",
        "forward_inference",
        "src:f32::blocked:aBcd8b::f0 dst:f32::blocked:aBcd8b::f0",
        "",
        "flags:GCH",
        "mb2ic16ih14iw14",
    )
    assert benchdnn_case(bnorm).line.endswith(
        "--dir=FWD_I --dt=f32 --tag=aBcd8b --flags=GCH mb2ic16ih14iw14"
    )
    binary = _rec(
        "binary",
        "undef",
        "src_f32::blocked:abcd:f0 src_f32::blocked:abcd:f0 dst_f32::blocked:abcd:f0",
        "",
        "alg:binary_add",
        "2x16x14x14:1x16x1x1",
    )
    assert benchdnn_case(binary).line.endswith(
        "--alg=add --sdt=f32:f32 --ddt=f32 --stag=abcd:abcd --dtag=abcd 2x16x14x14:1x16x1x1"
    )
    summ = _rec(
        "sum",
        "undef",
        "src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
        "",
        "",
        "2x16x7x7",
    )
    assert benchdnn_case(summ).driver == "sum"
    soft = _rec(
        "softmax",
        "forward_inference",
        "src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0",
        "",
        "alg:softmax_accurate axis:1",
        "256x1000",
    )
    assert benchdnn_case(soft).line.endswith(
        "--dir=FWD_I --sdt=f32 --ddt=f32 --stag=ab --dtag=ab --alg=softmax_accurate --axis=1 "
        "256x1000"
    )


def test_rnn_from_sample():
    text = render_batch(Analysis(load([str(LOGS / "lstm_infer.log")])), top=1)
    assert _lines(text) == [
        f"{HEAD} --prop=FWD_I --alg=VANILLA_LSTM --direction=left2right --cfg=f32 "
        "--tag=abc:any:abc --attr-scratchpad=user l1t20mb4sic64slc32dhc64dic64"
    ]


def test_unsupported_kinds_are_listed():
    with pytest.raises(Unsupported):
        benchdnn_case(
            _rec(
                "shuffle",
                "forward_inference",
                "src:f32::blocked:ab::f0",
                "",
                "axis:1 group:4",
                "2x16",
            )
        )
    log = load_text(
        "onednn_verbose,v1,primitive,exec,cpu,shuffle,simple:any,forward_inference,"
        "src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0,,axis:1 group:4,2x16x8x8,1.5\n"
    )
    text = render_batch(Analysis(log))
    assert "# ==== not reproduced ====" in text
    assert "no benchdnn conversion for primitive kind 'shuffle'" in text


def test_cli_writes_one_file_per_driver(tmp_path):
    out = tmp_path / "batches"
    result = CliRunner().invoke(app, ["export", "benchdnn", NCHW, "--top", "5", "-o", f"{out}/"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["conv.batch", "reorder.batch"]
    assert _lines((out / "conv.batch").read_text()) == GOLDEN_NCHW_TOP5["conv"]


def test_cli_stdout():
    result = CliRunner().invoke(app, ["export", "benchdnn", NCHW, "--top", "5"])
    assert result.exit_code == 0
    assert _lines(result.stdout) == GOLDEN_NCHW_TOP5["reorder"] + GOLDEN_NCHW_TOP5["conv"]


def test_top_list_is_the_reports_ranking():
    """The reproducers come in the order of the report's primitives (analyze's JSON), and
    each driver's file keeps that order."""
    import json

    result = CliRunner().invoke(app, ["analyze", NCHW, "-f", "json", "-q"])
    ranked = [p["example"] for p in json.loads(result.stdout)["primitives"]]
    entries = top_entries_of(load([NCHW]))
    assert [e.example for e in entries] == [e for e in ranked if e in {x.example for x in entries}]
    assert entries[0].example == ranked[0]
    for text in batches(Analysis(load([NCHW])), top=10).values():
        firsts = re.findall(r"^# .* first at (\S+)$", text, flags=re.M)
        assert firsts == [e for e in ranked if e in firsts]


def test_top_list_reads_the_analysis_window():
    """After three skipped passes (convnet_nchw_infer.log: 11 passes, the fourth starts at
    line 98) the top primitive is the conv of line 109: by hand, 16 of its 22 executions
    are at line 98 or later, 12.024 ms of the 48.551 ms summed there (24.8%)."""
    from dnnlens.analysis.analysis import AnalysisOptions
    from dnnlens.report.benchdnn import top_entries

    analysis = Analysis(load([NCHW]), AnalysisOptions(skip_iterations=3))
    top = top_entries(analysis, 1)[0]
    assert top.example.endswith(":109")
    assert (top.count, round(top.time_ms, 3)) == (16, 12.024)
    assert top.share == pytest.approx(12.024 / 48.5513, abs=1e-4)
    assert "12.024 ms (24.8%), 16 executions" in render_batch(analysis, top=1)


def test_nothing_timed_is_no_share():
    log = load_text(
        "onednn_verbose,v1,primitive,exec,cpu,reorder,simple:any,undef,"
        "src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,2x16\n"
    )
    (entry,) = top_entries_of(log)
    assert entry.share is None
    assert "0.000 ms (-), 1 executions" in render_batch(Analysis(log))


def top_entries_of(log):
    from dnnlens.report.benchdnn import top_entries

    return top_entries(Analysis(log), 10)
