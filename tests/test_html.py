"""The HTML report: self-contained, escaped, and readable in a real browser.

The browser tests run Debian's ``chromium`` headless and skip when it is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.report.html import render_html
from dnnlens.rules import RuleOptions
from dnnlens.rules.verdict import apply_rules

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
NCHW = str(LOGS / "convnet_nchw_infer.log")
CL = str(LOGS / "convnet_cl_infer.log")

PAYLOAD_IMPL = "<script>alert(1)</script>"
PAYLOAD_PRB = "<img src=x onerror=alert(2)>"
CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def analysed(path: str, **rule_options) -> Analysis:
    analysis = Analysis(load([path]))
    apply_rules(analysis, RuleOptions(search_config=False, **rule_options))
    return analysis


@pytest.fixture(scope="module")
def nchw() -> Analysis:
    return analysed(NCHW)


@pytest.fixture(scope="module")
def nchw_html(nchw) -> str:
    return render_html(nchw)


def _payload_log(tmp_path: Path) -> Path:
    path = tmp_path / "evil<b>name.log"
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,reorder,{impl},undef,"
        "src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd8b::f0,,,{prb},{t}"
    )
    path.write_text(
        "\n".join(
            [line.format(impl=PAYLOAD_IMPL, prb=PAYLOAD_PRB, t=t) for t in ("1.5", "1.25")]
            + [
                "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,"
                "src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: "
                "dst:f32::blocked:abcd::f0,,alg:convolution_direct,"
                "mb1_ic3oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,0.5"
            ]
        )
        + "\n"
    )
    return path


def _payload_html(tmp_path: Path) -> str:
    path = _payload_log(tmp_path)
    analysis = Analysis(load([str(path)]))
    analysis.findings = [
        Finding(
            "evil-rule<script>",
            "X<1>",
            "warning",
            "message <script>alert(3)</script>",
            [Evidence(str(path), 1)],
            {"k": "<script>"},
            "fix <iframe src=javascript:alert(4)>",
        )
    ]
    return render_html(analysis)


def test_sections_and_numbers(nchw, nchw_html):
    html = nchw_html
    assert html.startswith("<!doctype html>")
    for text in (
        "Where the time went",
        "One iteration, in order: where the reorders sit",
        "Time per pass",
        "Reorder flow: from layout to layout",
        "Typical iteration by kind",
        "Typical iteration by implementation",
        "Top primitives",
        f"Findings ({len(nchw.findings)})",
        "Inputs",
    ):
        assert text in html, text
    # the cards: the typical iteration and the reorders' part of it, raw sums beside
    assert f"{nchw.typical_iteration_ms:.2f} ms" in html
    assert "raw sums 69% (245.7 ms in 121 executions)" in html
    assert html.count("<svg") >= 6
    # evidence lines are quoted from the log itself: a steady execution (line 136),
    # not the warm-up pass's first run of the same reorder (line 16, 5.58691 ms)
    assert "dst:f32::blocked:aBcd8b::f0,attr-scratchpad:user,,4x16x32x32,0.0700684" in html
    assert "4x16x32x32,5.58691" not in html


def test_banner_is_the_top_finding_with_links_to_all(nchw, nchw_html):
    top = nchw.findings[0]
    banner = nchw_html.split('<div class="banner', 1)[1].split("</div>", 1)[0]
    assert "Fix first: " + top.title.rstrip(".") in banner
    assert f"{top.impact_ms_per_iteration:.2f} ms per iteration" in banner
    for i in range(1, len(nchw.findings) + 1):
        assert f'href="#finding-{i}"' in nchw_html and f'id="finding-{i}"' in nchw_html
    # a table of contents, and the findings before the detail
    assert '<nav class="toc"' in nchw_html
    assert nchw_html.index('id="findings"') < nchw_html.index('id="time"')


@pytest.mark.parametrize("other", ["reorder-overhead", "weight-reorder-per-iteration"])
def test_banner_does_not_change_when_another_rule_is_ignored(nchw_html, other):
    def banner(html: str) -> str:
        return html.split('<p class="head">', 1)[1].split("</p>", 1)[0]

    def figures(html: str) -> list[str]:  # typical iteration, reorder share, raw total
        return re.findall(r'<div class="v">([^<]*)</div>', html)[:3]

    ignored = render_html(analysed(NCHW, ignore=[other]))
    assert banner(ignored) == banner(nchw_html)
    assert figures(ignored) == figures(nchw_html)


def test_inline_code_is_code(nchw_html):
    # the layout-round-trip fix names channels_last in backticks: shown as code
    assert "<code>model.to(memory_format=torch.channels_last)</code>" in nchw_html


def test_self_contained(nchw_html):
    html = nchw_html
    assert "<script" not in html.lower()
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html, re.I)
    assert not re.search(r"\bsrc\s*=", html, re.I)
    # links only within the page (the banner's links to the findings, the contents)
    assert set(re.findall(r'\bhref\s*=\s*"(.)', html)) <= {"#"}
    assert "@import" not in html and "url(http" not in html
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}  # the SVG namespace, never fetched
    assert "Content-Security-Policy" in html


def test_every_log_string_is_escaped(tmp_path):
    html = _payload_html(tmp_path)
    low = html.lower()
    assert "<script" not in low
    assert "<img" not in low and "<iframe" not in low and "<b>name" not in low
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "evil&lt;b&gt;name.log" in html


def test_empty_and_clean_logs(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("no oneDNN here\n")
    html = render_html(Analysis(load([str(empty)])))
    assert "No oneDNN primitive executions in the input." in html
    cl = render_html(Analysis(load([CL])))
    assert "Reorder flow" in cl


def test_cli_writes_html(tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["analyze", NCHW, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Fix first: Activations are reordered into a blocked layout" in out.read_text(
        encoding="utf-8"
    )


# ---------------------------------------------------------------------------------------
# in a real browser


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


@needs_chromium
def test_browser_shows_the_verdict(tmp_path, nchw_html):
    page = tmp_path / "report.html"
    page.write_text(nchw_html, encoding="utf-8")
    done = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "Fix first:" in text and "raw sums 69%" in text
    assert "Reorder flow: from layout to layout" in text
    assert "abcd → aBcd8b" in text  # a reorder row of the flow table
    assert dom.count("<svg") >= 6 and dom.count("<rect") > 50


@needs_chromium
def test_browser_runs_no_payload(tmp_path):
    page = tmp_path / "payload.html"
    page.write_text(_payload_html(tmp_path), encoding="utf-8")
    done = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout.lower()
    assert "<script" not in dom and "<img" not in dom and "<iframe" not in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


@needs_chromium
def test_browser_screenshot(tmp_path, nchw_html):
    page = tmp_path / "report.html"
    page.write_text(nchw_html, encoding="utf-8")
    shot = tmp_path / "shot.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


SCREENSHOTS = {  # the inputs of docs/img/*.png (scripts/make_screenshots.py)
    "nchw": [NCHW],
    "lstm-train": [str(LOGS / "lstm_train.log")],
    "contended": [str(LOGS / "contended_infer.log")],
    "profiler-pair": [
        str(LOGS / "framework" / "layout_bad.log"),
        str(LOGS / "framework" / "layout_bad.trace.json.gz"),
    ],
    "trace": [str(LOGS / "framework" / "focal_bad.trace.json.gz")],
}


@needs_chromium
@pytest.mark.parametrize("name", sorted(SCREENSHOTS))
def test_the_screenshot_reports_open_with_their_top_finding(tmp_path, name):
    """What Chromium shows at the top of each report in docs/img is its top finding."""
    analysis = Analysis(load(SCREENSHOTS[name]))
    apply_rules(analysis, RuleOptions(search_config=False))
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(analysis), encoding="utf-8")
    done = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    banner = done.stdout.split('id="verdict"', 1)[1].split("</p>", 1)[0]
    top = analysis.findings[0]
    # a known saving leads as what to fix first; else the most time, said to be unknown
    lead = "Fix first: " if top.saving_ms_per_iteration else "Most time, saving unknown: "
    assert lead + top.title.rstrip(".") in banner
    assert (
        Path(__file__).resolve().parent.parent / "docs" / "img" / f"report-{name}.png"
    ).is_file()


def test_the_strip_and_the_top_table_show_the_analysis_figures(nchw, nchw_html):
    """The one-iteration strip is as wide as the typical iteration, and the top table's
    steady columns are those of the JSON's primitives."""
    import re

    tips = re.findall(r"<title>#\d+ [^<]*?: ([0-9.]+) ms typical run", nchw_html)
    assert len(tips) == 15 and sum(map(float, tips)) == pytest.approx(
        nchw.typical_iteration_ms, abs=0.02
    )
    table = nchw_html.split('id="primitives"', 1)[1]
    first = nchw.summary.top_primitives[0]
    part = nchw.typical.by_record[first["record"]]
    assert f"<td class=n>{part:,.3f}</td>" in table.split("</tr>", 2)[1]


def _evidence_blocks(html: str) -> list[tuple[str, str]]:
    """(path:line, text shown) of every evidence line of the findings."""
    return re.findall(r'<div class="tag">([^<]+:\d+)</div><pre>([^<]*)</pre>', html)


def test_evidence_text_comes_from_the_analysis_not_a_second_read(tmp_path: Path) -> None:
    """The page shows each evidence line as the file says it, also when the input was
    standard input (which cannot be read twice) or the file is gone after reading."""
    import html as html_lib

    raw = Path(NCHW).read_text(encoding="utf-8").splitlines()
    gone = tmp_path / "gone.log"
    gone.write_text("\n".join(raw) + "\n", encoding="utf-8")
    analysis = analysed(str(gone))
    gone.unlink()
    page = render_html(analysis)
    shown = _evidence_blocks(page)
    assert len(shown) >= 6
    for where, text in shown:
        line = int(where.rpartition(":")[2])
        assert html_lib.unescape(text) == raw[line - 1], where
    piped = tmp_path / "piped.html"
    result = CliRunner().invoke(
        app, ["analyze", "-", "-q", "-f", "html", "-o", str(piped)], input="\n".join(raw) + "\n"
    )
    assert result.exit_code == 0, result.output
    from_pipe = _evidence_blocks(piped.read_text(encoding="utf-8"))
    assert [t for _, t in from_pipe] == [t for _, t in shown]


def test_the_analysis_notes_are_under_the_verdict(tmp_path):
    """A run slowed as a whole (``profile_combined_infer.log``: its median exec line takes
    3.77 ms where the same program elsewhere takes 0.018 ms) says so right under the banner,
    as the terminal report does; so does a baseline that leaves findings out."""
    page = render_html(analysed(str(LOGS / "profile_combined_infer.log")))
    banner_end = page.index("</div>", page.index('<div class="banner'))
    note = page.index('<p class="note analysis-note">timings are not trustworthy')
    assert banner_end < note < page.index('<nav class="toc"')
    base = tmp_path / "b.json"
    out = tmp_path / "r.html"
    runner = CliRunner()
    assert runner.invoke(app, ["analyze", NCHW, "--write-baseline", str(base), "-q"]).exit_code == 0
    args = ["analyze", NCHW, "--baseline", str(base), "-f", "html", "-o", str(out), "-q"]
    assert runner.invoke(app, args).exit_code == 0
    assert "2 finding(s) in the baseline" in out.read_text(encoding="utf-8")
