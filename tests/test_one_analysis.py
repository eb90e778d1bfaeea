"""One analysis, one set of numbers: every view of a log shows the same figures.

Every sample log is rendered through ``analyze`` (JSON, terminal, HTML), ``diff`` (against
itself and, where it has one, its pair) and ``project``. The figures that appear in more
than one view (the typical iteration, the steady and warm-up pass counts, the reorders'
share of the typical iteration) must be equal in all of them; each JSON document must
validate against the JSON Schema shipped in ``docs/schema`` (and those files must be what
``python -m dnnlens.report.schema`` writes today).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.fmt import ms, ms_cell, pct
from dnnlens.report.schema import schema_texts
from shared_analyses import GROUP, analyze_json

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
LOGS = sorted(
    str(p.relative_to(ROOT)) for p in [*SAMPLES.glob("*.log"), *SAMPLES.glob("legacy/*.log")]
)
#: Runs of the same model in two ways: each is diffed against the other too.
PAIRS = {
    "sample_logs/convnet_nchw_infer.log": "sample_logs/convnet_cl_infer.log",
    "sample_logs/convnet_nchw_train.log": "sample_logs/convnet_cl_train.log",
    "sample_logs/resnet18_nchw_train.log": "sample_logs/resnet18_cl_train.log",
    "sample_logs/legacy/onednn-3.2.0.log": "sample_logs/legacy/onednn-3.2.0-timestamp.log",
}
runner = CliRunner()
pytestmark = pytest.mark.xdist_group(GROUP)


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout


@cache
def schema(name: str) -> jsonschema.protocols.Validator:
    """The validator of the shipped schema ``name``, the schema itself checked once (what
    ``jsonschema.validate`` does on every call, most of its cost)."""
    shipped = json.loads((ROOT / "docs" / "schema" / name).read_text(encoding="utf-8"))
    kind = jsonschema.validators.validator_for(shipped)
    kind.check_schema(shipped)
    return kind(shipped)


@cache
def analyzed(log: str) -> dict:
    code, out, _ = analyze_json(ROOT / log)
    doc = json.loads(out)
    # a log with no verbose line at all is an input error (2), reported all the same
    assert code == (0 if any(i["parsed_lines"] for i in doc["inputs"]) else 2), out
    schema("analyze.schema.json").validate(doc)
    return doc


def has_execs(log: str) -> bool:
    return analyzed(log)["summary"]["exec_count"] > 0


def test_shipped_schemas_are_current() -> None:
    for name, text in schema_texts().items():
        shipped = (ROOT / "docs" / "schema" / name).read_text(encoding="utf-8")
        assert shipped == text, f"docs/schema/{name} is stale: python -m dnnlens.report.schema"


@pytest.mark.parametrize("log", LOGS)
def test_views_agree(log: str, tmp_path: Path) -> None:
    doc = analyzed(log)
    s = doc["summary"]
    typical, steady, warmup = (
        s["typical_iteration_ms"],
        s["steady_iterations"],
        s["warmup_iterations"],
    )
    share = s["reorder_share_of_iteration"]
    # the JSON's own parts add up: primitives' iter_ms, findings' shares
    assert sum(p["iter_ms"] for p in doc["primitives"]) == pytest.approx(typical, abs=1e-9)
    assert doc["iterations"]["steady"] == steady
    for f in doc["findings"]:
        if f["impact_ms_per_iteration"] is not None and typical > 0 and f["basis"] == "iteration":
            assert f["share_of_iteration"] == pytest.approx(f["impact_ms_per_iteration"] / typical)
    # report order: known savings first, then time with an unknown saving, each per unit
    # of the report's basis (a table's window of several iterations holds a framework
    # finding's time several times)
    saved = [f["saving_ms_per_basis"] for f in doc["findings"] if f["saving_ms_per_basis"]]
    assert saved == sorted(saved, reverse=True), "known savings are not in report order"
    unknown = [
        f["impact_ms_per_basis"]
        for f in doc["findings"]
        if f["saving_ms_per_basis"] is None and f.get("impact_ms_per_basis") is not None
    ]
    assert unknown == sorted(unknown, reverse=True), "unknown savings are not by time"
    tiers = [
        0 if f["saving_ms_per_basis"] else 1 if f["saving_ms_per_basis"] is None else 2
        for f in doc["findings"]
        if f.get("impact_ms_per_basis") is not None and f["severity"] != "info"
    ]
    assert tiers == sorted(tiers), "a finding of unknown saving leads one of known saving"
    if not has_execs(log):
        return
    # terminal
    code, text = run("analyze", str(ROOT / log), "-q")
    assert code == 0
    assert f"typical iteration {ms(typical)}" in text
    assert ms_cell(typical) in text  # the total row of the breakdown
    if doc["iterations"]["found"]:
        assert f"({warmup} warm-up)" in text
    # HTML
    page = tmp_path / "report.html"
    code, _ = run("analyze", str(ROOT / log), "-q", "-f", "html", "-o", str(page))
    assert code == 0
    html = page.read_text(encoding="utf-8")
    assert f'<div class="v">{ms(typical)}</div>' in html
    assert f'<div class="v">{pct(share)}</div>' in html
    if doc["iterations"]["found"]:
        assert f"over {steady} steady of {s['iterations']} passes ({warmup} warm-up)" in html
    # diff: against its pair (this log first here, second in its pair's test), else against
    # itself; each side is the analysis of its log
    other = PAIRS.get(log) or next((k for k, v in PAIRS.items() if v == log), log)
    code, out = run("diff", str(ROOT / log), str(ROOT / other), "-f", "json", "-q")
    assert code == 0, out
    d = json.loads(out)
    schema("diff.schema.json").validate(d)
    for side, name in ((d["base"], log), (d["new"], other)):
        theirs = analyzed(name)["summary"]
        assert side["typical_iteration_ms"] == theirs["typical_iteration_ms"]
        assert side["steady_iterations"] == theirs["steady_iterations"]
        assert side["warmup_iterations"] == theirs["warmup_iterations"]
        assert side["reorder_share_of_iteration"] == theirs["reorder_share_of_iteration"]
    assert d["total"]["base_typical_iteration_ms"] == typical
    # project: the baseline is the typical iteration, to the last bit
    code, out = run("project", str(ROOT / log), "-f", "json")
    assert code == 0, out
    p = json.loads(out)
    schema("project.schema.json").validate(p)
    assert p["baseline"]["typical_iteration_ms"] == typical == p["baseline_ms"]
    assert p["baseline"]["steady_iterations"] == steady


def test_one_html_run_finds_the_iterations_once_and_builds_the_graph_once(monkeypatch, tmp_path):
    import dnnlens.analysis.analysis as analysis_module
    import dnnlens.analysis.graph as graph_module

    calls = {"iterations": 0, "graph": 0}
    find, build = analysis_module.find_iterations, graph_module.build_graph

    def counting_find(*a, **k):
        calls["iterations"] += 1
        return find(*a, **k)

    def counting_build(*a, **k):
        calls["graph"] += 1
        return build(*a, **k)

    monkeypatch.setattr(analysis_module, "find_iterations", counting_find)
    monkeypatch.setattr(graph_module, "build_graph", counting_build)
    page = tmp_path / "r.html"
    code, _ = run("analyze", str(ROOT / "sample_logs/convnet_nchw_infer.log"), "-q",
                  "-f", "html", "-o", str(page))  # fmt: skip
    assert code == 0 and page.stat().st_size > 10_000
    assert calls == {"iterations": 1, "graph": 1}


def _without_the_finding_list(html: str) -> str:
    """The page less what lists the findings (the banner's links, the findings card and
    section): what must not move when another rule is left out."""
    import re

    html = re.sub(r'<ol class="links">.*?</ol>', "", html, flags=re.S)
    html = re.sub(r'<div class="card[^"]*"><div class="k">Findings</div>.*?</div></div>', "", html)
    return re.sub(r'<section id="findings">.*?</section>', "", html, flags=re.S)


@pytest.mark.parametrize(
    "log", ["sample_logs/convnet_nchw_infer.log", "sample_logs/legacy/onednn-3.2.0.log",
            "sample_logs/resnet18_nchw_train.log"],
)  # fmt: skip
def test_the_page_does_not_move_when_another_rule_is_ignored(log: str, tmp_path: Path) -> None:
    """Leaving out any rule but the one the banner shows changes nothing else on the page.
    A finding that a broader one is folded into (``data.includes``, rules/duplicates.py)
    stands for two rules: leaving it out brings the broader one back, by design."""
    doc = analyzed(log)
    top = doc["findings"][0]["rule"]
    pages = {}
    others = [f["rule"] for f in doc["findings"][1:] if "includes" not in f["data"]]
    for ignored in [None, *others]:
        page = tmp_path / f"{ignored}.html"
        extra = ["--ignore", ignored] if ignored else []
        code, _ = run("analyze", str(ROOT / log), "-q", "-f", "html", "-o", str(page), *extra)
        assert code == 0
        pages[ignored] = _without_the_finding_list(page.read_text(encoding="utf-8"))
    assert top not in pages
    for ignored, page in pages.items():
        assert page == pages[None], f"ignoring {ignored} changed the page"


@pytest.mark.parametrize("skip", ["0", "3"])
@pytest.mark.parametrize(
    "log", ["sample_logs/convnet_nchw_infer.log", "sample_logs/convnet_cl_infer.log"]
)
def test_graph_and_analyze_count_the_same_passes(log: str, skip: str) -> None:
    """``graph`` reads the analysis's passes and window: warm-up, steady, count agree."""
    code, out = run("analyze", str(ROOT / log), "-f", "json", "-q", "--skip-iterations", skip)
    assert code == 0, out
    seen = json.loads(out)["iterations"]
    code, out = run("graph", str(ROOT / log), "--skip-iterations", skip)
    assert code == 0, out
    drawn = json.loads(out)["iterations"]
    for key in ("count", "warmup", "warmup_structural", "warmup_slow", "steady", "period_exec"):
        assert drawn[key] == seen[key], key
    steady = [p["time_ms"] for p in seen["passes"] if p["steady"]]
    assert drawn["steady_time_ms"]["mean"] == pytest.approx(sum(steady) / len(steady))


def test_graph_counts_the_nchw_warmup_by_hand() -> None:
    # pass sums of convnet_nchw_infer.log's exec times: 102.97, 102.26, 102.30, 30.19 ms,
    # then seven passes of 1.99 .. 4.26 ms (mean 2.62): four warm-up passes, seven steady
    code, out = run("graph", str(ROOT / "sample_logs/convnet_nchw_infer.log"))
    assert code == 0, out
    it = json.loads(out)["iterations"]
    assert (it["count"], it["warmup"], it["steady"]) == (11, 4, 7)
    assert it["steady_time_ms"]["mean"] == pytest.approx(2.62, abs=0.01)
    code, out = run("graph", str(ROOT / "sample_logs/convnet_nchw_infer.log"),
                    "--skip-iterations", "3")  # fmt: skip
    it = json.loads(out)["iterations"]
    assert (it["count"], it["warmup"], it["steady"]) == (8, 1, 7)


def test_framework_steps_and_onednn_passes_share_one_warmup_threshold() -> None:
    from dnnlens.analysis.framework.steps import WARMUP_SLOWER
    from dnnlens.analysis.framework.view import WARMUP_RULE
    from dnnlens.analysis.steady import RULE, SLOW_WARMUP_FACTOR

    assert WARMUP_SLOWER == SLOW_WARMUP_FACTOR == 3.0
    assert "3x the median" in RULE and "3x the median" in WARMUP_RULE


def test_diff_and_fleet_diff_share_one_primitive_identity() -> None:
    """The first conv of the NCHW and the channels-last sample (sample_logs, line 11 of
    each: same problem, abcd/aBcd8b against acdb layouts, jit:avx2 against brg_conv_fwd) is
    one primitive whose layouts changed, for ``diff`` and ``fleet diff`` alike."""
    from dnnlens.analysis.diff import primitive_identity
    from dnnlens.fleet import diff as fleet_diff

    problem = "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
    nchw = "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef::: " \
        "dst:f32:a:blocked:aBcd8b::f0"  # fmt: skip
    cl = "src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb16a::f0 bia:undef::undef::: " \
        "dst:f32::blocked:acdb::f0"  # fmt: skip
    conv = ("convolution", "forward_training", problem)
    assert primitive_identity(*conv, nchw) == primitive_identity(*conv, cl)
    # a reorder is its layouts: two flows are two primitives
    one = "src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0"
    other = "src:f32::blocked:aBcd8b::f0 dst:f32::blocked:abcd::f0"
    reorder = ("reorder", "undef", "4x16x32x32")
    assert primitive_identity(*reorder, one) != primitive_identity(*reorder, other)
    assert primitive_identity(*reorder, one)[3] == "abcd->aBcd8b"
    assert fleet_diff.primitive_identity is primitive_identity
    assert "mds" not in fleet_diff.PRIMITIVE_KEY


def test_rule_variables_are_the_json_summary() -> None:
    """Rule-file variables carry the JSON summary's names and values: on the NCHW sample
    four warm-up passes (one with cache misses, three of 30-103 ms) and seven steady."""
    from dnnlens.analysis.analysis import Analysis
    from dnnlens.reading import load
    from dnnlens.rules.context import RuleContext
    from dnnlens.rules.tables import VARIABLES, variables

    log = "sample_logs/convnet_nchw_infer.log"
    values = variables(RuleContext(Analysis(load([str(ROOT / log)]))))
    summary = analyzed(log)["summary"]
    for name in ("warmup_iterations", "steady_iterations", "typical_iteration_ms"):
        assert values[name] == summary[name], name
    assert (values["warmup_iterations"], values["steady_iterations"]) == (4, 7)
    assert {"warmup", "iteration_ms", "typical_total_ms"}.isdisjoint(VARIABLES)


@pytest.mark.parametrize("profile", ["trace.json", "table.txt"])
@pytest.mark.parametrize(
    "skip, linked, ops, outside, lines",
    # profile_nchw_infer.log: 90 exec lines, six passes of 15; lines 8-22 ran before
    # profiler_start (line 23), the other 75 (lines 24-98) inside it, four framework ops
    # per profiled pass. Skipping three passes leaves lines 54-98: 45 execs, three passes.
    [("0", 75, 20, 15, [24, 98]), ("3", 45, 12, 0, [54, 98])],
)
def test_framework_link_and_framework_view_are_one_linking(
    profile: str, skip: str, linked: int, ops: int, outside: int, lines: list[int]
) -> None:
    log = SAMPLES / "profile_nchw_infer.log"
    code, out = run(
        "analyze", str(log), str(SAMPLES / f"profile_nchw_infer.{profile}"),
        "-f", "json", "-q", "--skip-iterations", skip,
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    (run_info,) = doc["framework_link"]["runs"]
    assert doc["framework"]["link"] == run_info
    assert (run_info["primitives_linked"], run_info["outside_window"]) == (linked, outside)
    if profile == "trace.json":
        assert run_info["framework_ops_linked"] == ops
        assert run_info["window_lines"] == lines


@pytest.mark.parametrize("log", ["sample_logs/dispatch_only_infer.log"])
def test_no_iteration_is_no_share_in_every_view(log: str, tmp_path: Path) -> None:
    """dispatch_only_infer.log has no exec line (grep -c ,exec,: 0): the reorders have no
    share of a typical iteration that does not exist, in the JSON (null) and HTML (-)."""
    assert analyzed(log)["summary"]["reorder_share_of_iteration"] is None
    page = tmp_path / "report.html"
    code, _ = run("analyze", str(ROOT / log), "-q", "-f", "html", "-o", str(page))
    assert code == 0  # diagnostics are verbose lines: analysed (a finding says why)
    assert '<div class="k">Reorders</div><div class="v">-</div>' in page.read_text("utf-8")
