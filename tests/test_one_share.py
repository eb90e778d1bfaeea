"""One finding, one share: every view prints the same share of the report's one basis.

For real recordings (a log with its PyTorch profiler trace, the RetinaNet pair, training
logs, plain logs without a trace), every percentage a finding prints is collected from its
title and cost, its message, the headline and banner (the first finding), the JSON
document, the HTML page (rendered to a string) and its fleet row; each must be the
finding's one share (``Analysis.share_of``, printed with ``fmt.pct``), unless the words
right after it name another basis (:data:`NAMED`). The fix text is left out: its figures
are recorded results of other programs (``47% of the step at batch 4``), named as such.

The hand count (:func:`test_profile_nchw_share_by_hand`) reproduces the printed 14% of
the profile_nchw pair from the two files, without dnnlens.
"""

from __future__ import annotations

import html as html_module
import json
import re
import statistics
from functools import cache
from pathlib import Path

import pytest

from dnnlens.analysis.analysis import Analysis
from dnnlens.fleet.rows import RunIdentity, run_tables
from dnnlens.fmt import pct
from dnnlens.reading import load
from dnnlens.report import verdict_text
from dnnlens.report.html import render_html
from dnnlens.report.json_report import to_json_dict
from dnnlens.rules.engine import RuleOptions
from dnnlens.rules.verdict import apply_rules

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW_LOG = SAMPLES / "profile_nchw_infer.log"
NCHW_TRACE = SAMPLES / "profile_nchw_infer.trace.json"

INPUTS = {
    "profile_nchw log+trace": (NCHW_LOG, NCHW_TRACE),
    "retinanet log+trace": (
        SAMPLES / "retinanet" / "baseline.log.gz",
        SAMPLES / "retinanet" / "baseline.trace.json.gz",
    ),
    "training log": (SAMPLES / "resnet18_nchw_train.log",),
    "bf16 training log": (SAMPLES / "convnet_bf16_autocast_train.log",),
    "plain log": (SAMPLES / "convnet_nchw_infer.log",),
    "noisy log": (SAMPLES / "contended_infer.log",),
    "capped ISA log": (SAMPLES / "isa_sse41_infer.log",),
    # conversions, fusion, reference kernels, tiny primitives; low efficiency
    "oneDNN 2.2 log": (SAMPLES / "legacy" / "onednn-2.2.0.log",),
    "oneDNN 2.6 log": (SAMPLES / "legacy" / "onednn-2.6.0.log",),
}

#: What a percentage that is not the finding's one share must say it is of, right after it.
NAMED = (
    " of oneDNN's ",  # the second basis beside a trace: oneDNN's typical iteration
    " of the reorder time",  # a part of the finding's own time
    " of the summed exec time",  # DL001's raw sums over the whole log
    " of primitive calls",  # a count, not a time
    " of their roofline",  # efficiency
    " of its roofline",
)

_PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e[+-]?\d+)?%)")


@cache
def analysed(name: str, select: str | None = None) -> Analysis:
    """The inputs ``name`` with every rule, or with ``select`` alone (a broader finding
    that a part folds into when all rules run, rules/duplicates.py, is its own then)."""
    analysis = Analysis(load([str(p) for p in INPUTS[name]]))
    options = RuleOptions(search_config=False, select=[select] if select else [])
    apply_rules(analysis.prepare(), options)
    return analysis


def percentages(text: str) -> list[tuple[str, str]]:
    """Every percentage of ``text`` with the words after it (whitespace folded)."""
    text = " ".join(text.split())
    return [(m.group(1), text[m.end() : m.end() + 40]) for m in _PERCENT.finditer(text)]


def assert_one_share(text: str, figure: str, where: str) -> None:
    """Every percentage of ``text`` is ``figure``, or names its other basis."""
    for value, after in percentages(text):
        if value == figure:
            continue
        assert after.startswith(NAMED), f"{where}: {value}{after!r} is not {figure} nor named"


def plain(html: str) -> str:
    return html_module.unescape(re.sub(r"<[^>]+>", " ", html))


def html_finding(page: str, i: int) -> str:
    """The text of finding ``i``'s card up to its fix (title, cost, message)."""
    start = page.index(f'<div class="finding" id="finding-{i}">')
    ends = [page.find(mark, start) for mark in ("<p><b>Fix:", '<div class="tag">', "<details>")]
    return plain(page[start : min(e for e in ends if e > 0)])


@pytest.mark.parametrize("name", list(INPUTS))
def test_every_view_prints_one_share_per_finding(name: str) -> None:
    a = analysed(name)
    assert a.findings, name
    doc = json.loads(json.dumps(to_json_dict(a), default=str))
    page = render_html(a)
    run = RunIdentity(name=name, content_hash="0" * 64, files=())
    rows = run_tables(a, run)["findings"].to_pylist()
    headline = verdict_text.headline(a)
    timed = 0
    for i, (f, jf, row) in enumerate(zip(a.findings, doc["findings"], rows, strict=True), 1):
        share = a.share_of(f)
        where = f"{name} {f.rule}"
        figure = pct(share) if share is not None else "(no share)"
        cost = verdict_text.cost(f, a)
        if share is not None:
            timed += 1
            assert f", {figure} of " in cost
        texts = {"title": verdict_text.title(f), "cost": cost, "message": f.message}
        texts["html card"] = html_finding(page, i)
        if i == 1:
            texts["headline"] = headline
            top = page[page.index('id="verdict"') : page.index('<ol class="links">')]
            texts["banner"] = plain(top.split('<p class="fix">')[0])
        for what, text in texts.items():
            assert_one_share(text, figure, f"{where} {what}")
        # JSON: one share under both contract keys and in data; others named
        assert jf.get("share_of_basis") == jf["share_of_iteration"]
        assert jf["share_of_iteration"] == (pytest.approx(share) if share is not None else None)
        for key in ("share", "share_of_step"):
            if jf["data"].get(key) is not None:
                assert jf["data"][key] == pytest.approx(share, rel=1e-9), f"{where} data.{key}"
        # the fleet stores the headline's share
        assert row["share_of_iteration"] == jf["share_of_iteration"], where
        assert row["impact_ms_per_basis"] == jf.get("impact_ms_per_basis"), where
        assert_one_share(row["message"], figure, f"{where} fleet message")
    assert timed, name


def test_headline_and_messages_agree_beside_a_trace() -> None:
    """The brief's case: the headline said 14%, DL001 50% and DL002 48% of one step."""
    a = analysed("profile_nchw log+trace")
    by = {f.rule: f for f in a.findings}
    assert "14% of the typical 4.81 ms step" in verdict_text.headline(a)
    # the round trips hold 96% of the reorder time: one finding for both (its second basis,
    # the reorder time, named)
    assert "reorder-overhead" not in by
    trips = by["layout-round-trip"].message
    assert "14% of the typical 4.81 ms step; 96% of the reorder time (0.69 ms" in trips
    alone = analysed("profile_nchw log+trace", "reorder-overhead")
    reorders = alone.findings[0].message
    assert "0.69 ms per step, 14% of the typical 4.81 ms step" in reorders
    assert "50% of oneDNN's 1.40 ms per iteration" in reorders
    first = to_json_dict(alone)["findings"][0]
    assert first["share_of_iteration"] == pytest.approx(0.144, abs=5e-4)
    assert first["share_of_onednn_iteration"] == pytest.approx(0.496, abs=5e-4)


def test_retinanet_says_one_share_per_finding() -> None:
    """RetinaNet: 11% of the step in the headline and the message, oneDNN's 15% named."""
    a = analysed("retinanet log+trace")
    top = a.findings[0]
    assert top.rule == "reorder-overhead"
    assert "11% of the typical 623.8 ms step" in verdict_text.headline(a)
    assert "11% of the typical 623.8 ms step (15% of oneDNN's 440.1 ms per iteration" in (
        top.message
    )


def test_profile_nchw_share_by_hand() -> None:
    """The 14% of the profile_nchw pair, counted from the files without dnnlens.

    * Reorders per step, from the log: ``grep ',exec,'`` gives 90 lines, 6 passes of 15
      (MANIFEST.json: 1 warm-up + 5 timed passes; dnnlens finds no warm-up to leave out);
      the primitive kind is field 7 (``v1`` and a timestamp come first) and every pass has
      the same kinds in the same order. Per position, the median of the last field (ms)
      over the 6 passes; the reorder positions add up to 0.692 ms, all positions to 1.395
      ms (oneDNN's typical iteration; 49.6%, the named second basis). One pass per step.
    * The typical step, from the trace: the ``cpu_op`` events not inside another (85 of
      them, 17 per step, each step starting at ``aten::conv2d``); per position, the median
      ``dur`` over the 5 steps (4.081 ms), plus the median time of a step outside those ops
      (from a step's first op to the next step's first op, the last step to its last op's
      end, minus its ops' durations: 0.725 ms): 4.806 ms.
    * 0.692 / 4.806 = 14.4%: the printed 14%.
    """
    execs = [line.rstrip().split(",") for line in NCHW_LOG.open() if ",exec," in line]
    assert len(execs) == 90
    passes = [execs[i : i + 15] for i in range(0, 90, 15)]
    kinds = [r[6] for r in passes[0]]
    assert all([r[6] for r in p] == kinds for p in passes)
    medians = [statistics.median(float(p[i][-1]) for p in passes) for i in range(15)]
    reorder_ms = sum(m for m, k in zip(medians, kinds, strict=True) if k == "reorder")
    assert reorder_ms == pytest.approx(0.692, abs=5e-4)
    assert sum(medians) == pytest.approx(1.395, abs=5e-4)

    events = json.loads(NCHW_TRACE.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    ops = sorted(
        (e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"])
    )
    top, end = [], float("-inf")
    for e in ops:
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    assert len(top) == 85
    steps = [top[i : i + 17] for i in range(0, 85, 17)]
    assert {s[0]["name"] for s in steps} == {"aten::conv2d"}
    tracked = sum(statistics.median(s[p]["dur"] for s in steps) for p in range(17)) / 1000
    outside = []
    for i, s in enumerate(steps):
        last = steps[i + 1][0]["ts"] if i + 1 < len(steps) else s[-1]["ts"] + s[-1]["dur"]
        outside.append((last - s[0]["ts"] - sum(e["dur"] for e in s)) / 1000)
    step_ms = tracked + statistics.median(outside)
    assert step_ms == pytest.approx(4.806, abs=5e-4)

    a = analysed("profile_nchw log+trace", "reorder-overhead")
    assert a.report_basis.ms == pytest.approx(step_ms, rel=1e-6)
    top_finding = a.findings[0]
    assert top_finding.rule == "reorder-overhead"
    assert a.share_of(top_finding) == pytest.approx(reorder_ms / step_ms, rel=1e-6)
    assert f"{pct(reorder_ms / step_ms)} of the typical 4.81 ms step" in top_finding.message
    assert pct(reorder_ms / step_ms) == "14%"
