"""Exports escaped for their format, and figures that do not make up numbers from damaged
lines (docs/input-policy.md, "Exports").

The lines are the sample log's reorder, convolution, matmul and eltwise lines with their
fields changed as each test says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.costmodel import primitive_cost
from dnnlens.cli import app
from dnnlens.report.tables_export import neutralise_formulas

REORDER = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,{impl},undef,src:f32::blocked:abcd::f0"
    " dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,{problem},{time}"
)
CONV_MDS = (
    "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef::: "
    "dst:f32:a:blocked:aBcd8b::f0"
)
CONV = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,"
    + CONV_MDS
    + ",attr-scratchpad:user,alg:convolution_direct,{problem},5.9"
)
GOOD_CONV = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    return path


# -- CSV -----------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx"])
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path: Path, impl: str) -> None:
    log = write(tmp_path, [REORDER.format(impl=impl, problem="16x3x3x3", time="0.25")])
    out = tmp_path / "out"
    assert invoke("export", "csv", str(log), "-o", str(out)).exit_code == 0
    (csv,) = out.glob("events/**/part-0.csv")
    frame = pd.read_csv(csv, keep_default_na=False)
    assert frame["impl"].tolist() == ["'" + impl]
    assert frame["time_ms"].tolist() == [0.25]  # numbers stay numbers
    assert frame["line"].tolist() == [1]


def test_neutralise_leaves_numbers_and_plain_text() -> None:
    frame = pd.DataFrame(
        {
            "t": [-1.5, 2.0],
            "n": pd.Categorical([-1, 2]),
            "s": pd.Categorical(["jit:avx2", "=1"]),
            "o": pd.Series(["ok", -3], dtype=object),
        }
    )
    out = neutralise_formulas(frame)
    assert out["t"].tolist() == [-1.5, 2.0] and out["n"].tolist() == [-1, 2]
    assert out["s"].tolist() == ["jit:avx2", "'=1"] and out["o"].tolist() == ["ok", -3]
    assert neutralise_formulas(frame[["t"]]) is not None  # a frame without text: unchanged


# -- Perfetto ------------------------------------------------------------------------------


def strict_json(text: str) -> dict:
    def refuse(constant: str) -> float:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("gz", [False, True])
def test_perfetto_json_is_finite_with_huge_times(tmp_path: Path, gz: bool) -> None:
    times = ["0.25", "1e306", "1.7e305", "1.7e305", "0.5"]
    log = write(
        tmp_path, [REORDER.format(impl="jit:uni", problem="16x3x3x3", time=t) for t in times]
    )
    out = tmp_path / ("trace.json.gz" if gz else "trace.json")
    result = invoke("export", "perfetto", str(log), "-o", str(out))
    assert result.exit_code == 0
    if gz:
        import gzip

        text = gzip.decompress(out.read_bytes()).decode()
    else:
        text = out.read_text()
    trace = strict_json(text)
    execs = [e for e in trace["traceEvents"] if e.get("cat") == "exec"]
    # 1e306 ms is infinite in µs; the second 1.7e305 ms ends past the largest float, and
    # the line after it starts there: three left out, two drawn, all counted
    assert len(execs) == 2 and trace["otherData"]["left_out_events"] == 3
    assert "3 event(s) left out" in result.stderr


def test_perfetto_huge_timestamps(tmp_path: Path) -> None:
    line = (
        "onednn_verbose,v1,{ts},primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0"
        " dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,16x3x3x3,0.25"
    )
    log = write(tmp_path, [line.format(ts=ts) for ts in ("1", "1.7e308", "2")])
    out = tmp_path / "trace.json"
    assert invoke("export", "perfetto", str(log), "-o", str(out)).exit_code == 0
    trace = strict_json(out.read_text())
    assert trace["otherData"]["left_out_events"] == 1


# -- negative dims ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,problem,mds",
    [
        ("convolution", "mb-4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1", CONV_MDS),
        ("convolution", "mb4_ic3oc16_ih64oh64kh-3sh1dh0ph1_iw64ow64kw3sw1dw0pw1", CONV_MDS),
        ("reorder", "-16x3x3x3", "src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0"),
        ("matmul", "-64x128:128x32", "src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 "
         "dst:f32::blocked:ab::f0"),
        ("eltwise", "2x-16x7x7", "data:f32::blocked:abcd::f0"),
    ],
)  # fmt: skip
def test_negative_dims_give_no_cost(kind: str, problem: str, mds: str) -> None:
    assert primitive_cost(kind, problem, mds, "forward_training") is None


def test_valid_dims_keep_their_cost() -> None:
    """Hand count: 2*mb*oc*ic*taps = 2*4*16*3*(190*190) = 13,862,400 FLOPs; negative
    padding (which oneDNN allows) still has a cost."""
    cost = primitive_cost("convolution", GOOD_CONV, CONV_MDS, "forward_training")
    assert cost is not None and cost.flops == 13_862_400
    padded = GOOD_CONV.replace("ph1", "ph-1")
    assert primitive_cost("convolution", padded, CONV_MDS, "forward_training") is not None


def test_negative_dims_make_no_efficiency_and_html_is_written(tmp_path: Path) -> None:
    lines = [CONV.format(problem=GOOD_CONV.replace("mb4", "mb-4"))] * 3
    lines += [REORDER.format(impl="jit:uni", problem="-16x3x3x3", time="0.25")] * 3
    log = write(tmp_path, lines)
    result = invoke("analyze", str(log), "-f", "json")
    assert result.exit_code == 0
    for p in json.loads(result.stdout).get("primitives", []):
        assert p["flops"] is None and p["bytes"] is None and p["efficiency"] is None
    html = tmp_path / "r.html"
    result = invoke("analyze", str(log), "-f", "html", "-o", str(html))
    assert result.exit_code == 0, result.stderr  # was "math domain error", exit 2
    assert html.stat().st_size > 0


def test_negative_dims_are_a_reason_and_a_note(tmp_path: Path) -> None:
    """The no-cost primitive is not silently unknown: the analysis notes why."""
    from dnnlens.analysis.costmodel import no_cost_reason

    bad = GOOD_CONV.replace("mb4", "mb-4")
    assert no_cost_reason("convolution", bad, CONV_MDS, "forward_training") == (
        "a size below zero (a damaged or hand-edited line)"
    )
    log = write(tmp_path, [CONV.format(problem=bad)] * 3)
    result = invoke("analyze", str(log), "-f", "json")
    assert result.exit_code == 0
    notes = json.loads(result.stdout)["notes"]
    assert "no cost for 1 primitives: a size below zero (a damaged or hand-edited line)" in notes
