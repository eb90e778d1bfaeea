"""dnnlens diff: the NCHW vs channels_last sample pair, the JSON contract, the gate.

Expected numbers come from the sample logs, counted with grep/awk (see
tests/test_sample_logs.py for the commands): NCHW 165 execs, 356.084723 ms, 121 reorders;
channels_last 88 execs, 180.342063 ms, 44 reorders; both ran 11 passes (MANIFEST.json).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.diff import diff_analyses
from dnnlens.analysis.layouts import flow_label
from dnnlens.cli import app
from dnnlens.cli.diff import parse_percent
from dnnlens.parsers.memdesc import parse_mds
from dnnlens.reading import load, load_text
from dnnlens.report.console import color_allowed, make_console, progress_enabled
from dnnlens.report.diff_report import render_json

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
CL = str(LOGS / "convnet_cl_infer.log")
SSE41 = str(LOGS / "isa_sse41_infer.log")
ANSI = re.compile(r"\x1b\[")
#: First steady pass (0-based) of each sample; see tests/test_projection.py for the pass sums.
STEADY_FROM = {NCHW: 4, CL: 1}
PERIOD = {NCHW: 15, CL: 8}


def hand_typical(path: str) -> float:
    """Sum over the positions of a pass of their median time over the steady passes, from
    the raw exec lines cut into passes of the sample's period."""
    times = [
        float(x.rsplit(",", 1)[1]) for x in Path(path).read_text().splitlines() if ",exec," in x
    ]
    period = PERIOD[path]
    passes = [times[i : i + period] for i in range(0, len(times), period)][STEADY_FROM[path] :]
    return sum(statistics.median(p[k] for p in passes) for k in range(period))


def analysed(path: str) -> Analysis:
    return Analysis(load([path]))


@pytest.fixture(scope="module")
def pair():
    return diff_analyses(analysed(NCHW), analysed(CL))


def doc(d) -> dict:
    return json.loads(render_json(d))


def test_totals_and_speedup(pair):
    j = doc(pair)
    assert j["total"]["base_ms"] == pytest.approx(356.084723, abs=1e-5)
    assert j["total"]["new_ms"] == pytest.approx(180.342063, abs=1e-5)
    assert j["total"]["speedup"] == pytest.approx(356.084723 / 180.342063, rel=1e-6)
    assert j["total"]["base_count"] == 165 and j["total"]["new_count"] == 88
    assert j["total"]["base_iterations"] == 11 and j["total"]["new_iterations"] == 11
    # the verdict compares the typical steady iterations
    assert j["basis"] == "typical"
    assert pair.compared_ms() == pytest.approx((hand_typical(NCHW), hand_typical(CL)))
    assert j["total"]["compared_speedup"] == pytest.approx(hand_typical(NCHW) / hand_typical(CL))
    assert pair.slower_fraction < 0


def test_mean_basis_on_request():
    d = diff_analyses(analysed(NCHW), analysed(CL), basis="mean")
    assert d.compared_ms() == pytest.approx((356.084723 / 11, 180.342063 / 11))
    assert d.speedup == pytest.approx(1.9745, abs=1e-3)
    assert "warm-up included" in d.basis_text


def test_sides_are_the_analyses_figures(pair):
    base, new = analysed(NCHW), analysed(CL)
    assert pair.base.typical_ms == base.typical_iteration_ms
    assert pair.new.typical_ms == new.typical_iteration_ms
    assert (pair.base.steady_iterations, pair.base.warmup) == (7, 4)
    assert (pair.new.steady_iterations, pair.new.warmup) == (10, 1)
    assert pair.base.reorder_share == base.reorder_part.share


def test_kinds_contract(pair):
    kinds = {k["kind"]: k for k in pair.kinds}
    assert set(kinds) == {"reorder", "convolution"}
    for row in kinds.values():
        for key, kind in (
            ("kind", str),
            ("base_count", int),
            ("new_count", int),
            ("base_ms", float),
            ("new_ms", float),
        ):
            assert isinstance(row[key], kind)
    assert (kinds["reorder"]["base_count"], kinds["reorder"]["new_count"]) == (121, 44)
    assert kinds["reorder"]["base_ms"] == pytest.approx(245.681646, abs=1e-5)
    assert kinds["reorder"]["new_ms"] == pytest.approx(87.989787, abs=1e-5)
    assert (kinds["convolution"]["base_count"], kinds["convolution"]["new_count"]) == (44, 44)
    # the kinds' parts of the typical iterations add up to them
    assert sum(k["base_typical_ms"] for k in pair.kinds) == pytest.approx(pair.base.typical_ms)
    assert sum(k["new_typical_ms"] for k in pair.kinds) == pytest.approx(pair.new.typical_ms)


def test_activation_reorders_vanish(pair):
    vanished = {(p["shape"], p["layouts"]) for p in pair.with_status("vanished")}
    # the activation reorders around every convolution (NCHW plain <-> blocked aBcd8b)
    for shape, flow in [
        ("4x16x64x64", "aBcd8b->abcd"),
        ("4x16x32x32", "abcd->aBcd8b"),
        ("4x16x32x32", "aBcd8b->abcd"),
        ("4x32x16x16", "aBcd8b->abcd"),
    ]:
        assert (shape, flow) in vanished
    # nothing that moves an activation (mb4 tensors) is left in NEW
    assert not [
        p
        for p in pair.primitives
        if p["kind"] == "reorder" and p["shape"].startswith("4x") and p["new_count"]
    ]
    appeared = {(p["shape"], p["layouts"]) for p in pair.with_status("appeared")}
    assert appeared == {
        ("16x16x3x3", "acdb->Acdb16a"),
        ("16x3x3x3", "acdb->Acdb16a"),
        ("32x16x3x3", "acdb->Acdb32a"),
    }


def test_implementation_changes(pair):
    changes = pair.with_status("changed")
    assert len(changes) == 3
    for p in changes:
        assert p["kind"] == "convolution"
        assert p["base_impl"] == ["jit:avx2"] and p["new_impl"] == ["brg_conv_fwd:avx2"]
        assert p["base_count"] == p["new_count"]
    shapes = {p["shape"] for p in changes}
    assert "mb4_ic16oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1" in shapes


def test_per_iteration_rows(pair):
    rows = pair.iterations
    assert [r["iteration"] for r in rows] == list(range(11))
    assert sum(r["base_ms"] for r in rows) == pytest.approx(356.084723, abs=1e-4)
    assert sum(r["new_ms"] for r in rows) == pytest.approx(180.342063, abs=1e-4)
    assert [r["warmup"] for r in rows[:5]] == [True, True, True, True, False]


def test_same_log_is_no_change():
    d = diff_analyses(analysed(NCHW), analysed(NCHW))
    assert d.speedup == pytest.approx(1.0)
    assert d.slower_fraction == pytest.approx(0.0)
    assert {p["status"] for p in d.primitives} == {"same"}


def test_empty_logs_compare_without_numbers():
    d = diff_analyses(Analysis(load_text("nothing here\n")), Analysis(load_text("nor here\n")))
    assert d.kinds == [] and d.speedup is None and d.slower_fraction is None


def test_flow_label_dtype():
    mds = parse_mds("src:f32::blocked:abcd::f0 dst:bf16::blocked:abcd::f0")
    assert flow_label(mds) == "f32:abcd->bf16:abcd"
    assert flow_label(parse_mds("in:f32_nchw out:f32_nChw8c")) == "nchw->nChw8c"


@pytest.mark.parametrize("text,value", [("5%", 0.05), ("5", 0.05), ("0.5 %", 0.005), ("0", 0.0)])
def test_parse_percent(text, value):
    assert parse_percent(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["fast", "-3%", "nan"])
def test_parse_percent_rejects(text):
    with pytest.raises(ValueError):
        parse_percent(text)


# ---------------------------------------------------------------------------------------
# the command


def test_cli_json():
    result = CliRunner().invoke(app, ["diff", NCHW, CL, "--format", "json", "-q"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc["total"]) >= {"base_ms", "new_ms", "speedup"}
    assert {k["kind"] for k in doc["kinds"]} == {"reorder", "convolution"}
    assert "faster" in doc["verdict"]


def test_cli_terminal_has_no_colour_when_piped():
    result = CliRunner().invoke(app, ["diff", NCHW, CL], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not ANSI.search(out)
    assert "1.31x faster per typical steady iteration" in out  # 2.0857 / 1.5944 ms
    assert "Vanished (only in BASE)" in out and "abcd->aBcd8b" in out
    assert "jit:avx2 -> brg_conv_fwd:avx2" in out


def test_cli_markdown():
    result = CliRunner().invoke(app, ["diff", NCHW, CL, "-f", "markdown"])
    assert result.exit_code == 0
    md = result.stdout
    assert md.startswith("## dnnlens diff")
    assert "| kind | count | total ms |" in md
    assert "| reorder | 121 -> 44 |" in md


def test_fail_if_slower_gate():
    """A high-confidence diff gates: the same net with oneDNN capped at SSE4.1 is slower in
    every steady pass (hand count in tests/test_diff_confidence.py)."""
    runner = CliRunner()
    faster = runner.invoke(app, ["diff", SSE41, NCHW, "--fail-if-slower", "5%", "-f", "json"])
    assert faster.exit_code == 0
    assert json.loads(faster.stdout)["confidence"]["level"] == "high"
    slower = runner.invoke(app, ["diff", NCHW, SSE41, "--fail-if-slower", "5%", "-f", "json"])
    assert slower.exit_code == 1
    assert "slower than BASE per typical steady iteration" in slower.stderr
    # generous enough limit passes even though NEW is slower
    assert runner.invoke(app, ["diff", NCHW, SSE41, "--fail-if-slower", "1000%"]).exit_code == 0


def test_gate_refused_within_the_noise():
    """NCHW against channels_last: the steady pass ranges overlap (1.99 to 4.26 ms against
    1.01 to 63.3 ms). The gate is one-sided: NEW faster passes (exit 0); NEW 30.8% slower
    than the limit but within the noise neither passes nor fails: exit 2 and one line why."""
    runner = CliRunner()
    faster = runner.invoke(app, ["diff", NCHW, CL, "--fail-if-slower", "5%", "-q"])
    assert faster.exit_code == 0, faster.stderr
    result = runner.invoke(app, ["diff", CL, NCHW, "--fail-if-slower", "5%", "-q"])
    assert result.exit_code == 2
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1
    assert "--fail-if-slower 5% not applied: NEW looks 30.8% slower" in lines[0]
    assert "the diff's confidence is low" in lines[0] and "the ranges overlap" in lines[0]


def test_cli_usage_errors():
    runner = CliRunner()
    assert runner.invoke(app, ["diff", NCHW, "missing.log"]).exit_code == 2
    assert runner.invoke(app, ["diff", NCHW, CL, "--fail-if-slower", "x"]).exit_code == 2
    assert runner.invoke(app, ["diff", NCHW, CL, "--basis", "max"]).exit_code == 2


@pytest.mark.parametrize("content", [b"", b"no verbose line here\n", bytes(range(256)) * 64])
def test_nothing_to_compare_is_a_usage_error_whatever_the_gate(tmp_path, content):
    """An empty, foreign or binary NEW (or BASE) is exit 2, never a passed gate (0) or a
    regression (1)."""
    other = tmp_path / "other.log"
    other.write_bytes(content)
    runner = CliRunner()
    for args in ([NCHW, str(other)], [str(other), NCHW]):
        for gate in ([], ["--fail-if-slower", "5%"], ["--fail-if-slower", "1000%"]):
            result = runner.invoke(app, ["diff", *args, *gate, "-q"])
            assert result.exit_code == 2, (args, gate, result.output)


# ---------------------------------------------------------------------------------------
# console policy (report/console.py)


class _Tty:
    def isatty(self) -> bool:
        return True


def test_color_policy(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert color_allowed(_Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not color_allowed(_Tty())
    monkeypatch.delenv("NO_COLOR")
    assert not color_allowed(open(__file__))  # a file is not a terminal  # noqa: SIM115
    console = make_console()  # pytest captures stdout: not a terminal
    assert console.no_color


def test_progress_policy(monkeypatch):
    assert not progress_enabled(quiet=True)
    monkeypatch.setattr("sys.stderr", _Tty())
    assert progress_enabled(quiet=False)
    assert not progress_enabled(quiet=True)


def test_progress_track_passes_chunks_through(tmp_path):
    from dnnlens.app.reading_progress import InputProgress
    from dnnlens.io.inputs import InputSource

    path = tmp_path / "x.log"
    path.write_text("a\nb\n")
    src = InputSource(str(path))
    chunks = [["a\n"], ["b\n"]]
    with InputProgress([src], enabled=True, min_bytes=0) as progress:
        assert progress.enabled
        assert list(progress.track(src, iter(chunks))) == chunks
    with InputProgress([src], enabled=True) as progress:  # too small for a bar
        assert not progress.enabled
        assert list(progress.track(src, iter(chunks))) == chunks


def test_load_inputs_hands_a_progress_to_a_loader_that_takes_one(monkeypatch, tmp_path):
    from dnnlens import reading as load_module
    from dnnlens.app.reading_progress import load_inputs

    path = tmp_path / "x.log"
    path.write_text("hello\n")
    seen = {}

    def fake_read(specs, progress=None, jobs=1, **_options):
        seen["progress"] = progress
        return load_text("x\n")

    monkeypatch.setattr(load_module, "read", fake_read)
    monkeypatch.setattr("sys.stderr", _Tty())
    load_inputs([str(path)], quiet=False)
    assert seen["progress"] is not None
    load_inputs([str(path)], quiet=True)
    assert seen["progress"] is None


def test_times_that_overflow_are_no_verdict_and_no_traceback(tmp_path):
    """Every time field 1.7e308: the sums overflow to infinity. No comparison is possible,
    so the gate is a usage error (2), never a regression (1) or a traceback."""
    huge = tmp_path / "huge.log"
    huge.write_text(
        "".join(
            line.rsplit(",", 1)[0] + ",1.7e308\n" if ",exec," in line else line + "\n"
            for line in Path(NCHW).read_text().splitlines()
        )
    )
    runner = CliRunner()
    gated = runner.invoke(app, ["diff", NCHW, str(huge), "--fail-if-slower", "5%", "-q"])
    assert gated.exit_code == 2 and "not a finite number" in gated.stderr
    assert "Traceback" not in gated.output
    plain = runner.invoke(app, ["diff", NCHW, str(huge), "-f", "json", "-q"])
    assert plain.exit_code == 0
    doc = json.loads(plain.stdout)  # finite JSON: no NaN or Infinity
    assert doc["total"]["compared_speedup"] is None


def test_a_full_disk_is_an_output_error():
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "dnnlens", "diff", NCHW, CL, "-q"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "No space left" in done.stderr


def test_primitive_rows_carry_their_part_of_the_typical_iteration(pair):
    """Each primitive row's typical ms is its lines' part of the typical iteration: they add
    up to it on both sides."""
    base = sum(p["base_typical_ms"] for p in pair.primitives)
    new = sum(p["new_typical_ms"] for p in pair.primitives)
    assert base == pytest.approx(pair.base.typical_ms)
    assert new == pytest.approx(pair.new.typical_ms)


def test_a_ratio_of_1e299_is_three_digits_and_an_exponent(tmp_path: Path) -> None:
    """BASE: the NCHW sample with every time replaced by 1e-300 ms. Its typical iteration is
    15 executions x 1e-300 = 1.5e-299 ms against NEW's 2.0857 ms: NEW is 1.39e+299x slower,
    written so, never as 300 digits."""
    real = LOGS / "convnet_nchw_infer.log"
    tiny = tmp_path / "tiny.log"
    tiny.write_text(re.sub(r",[0-9.]+$", ",1e-300", real.read_text(), flags=re.M))
    result = CliRunner().invoke(app, ["diff", str(tiny), str(real)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "NEW is 1.39e+299x slower per typical steady iteration" in result.stdout
    assert not re.search(r"\d{13}", result.stdout)
    assert "+1.39e+301%" in result.stdout
    from dnnlens.fmt import speed

    assert speed(1e-320) == "-"  # its inverse is no number
    assert (speed(2.0), speed(0.5), speed(1e300)) == ("2.00x faster", "2.00x slower",
                                                      "1e+300x faster")  # fmt: skip
