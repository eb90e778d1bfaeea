"""Every output format has one Renderer, ``render(analysis, options)``, and the commands
write through it.

Hand counts on ``sample_logs/convnet_nchw_infer.log``: 338 lines; 165 primitive exec lines
(``grep -c 'primitive,exec'``) and 165 create lines (10 cache misses, 155 hits); 11 passes
of 15 executions each, so the op graph of one pass has 15 nodes; the costliest line is the
``jit:blk`` reorder of line 16 (33 executions, 63.746 ms, 17.9% of the 356.085 ms summed).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.report.renderers import (
    ALL_RENDERERS,
    RENDERERS,
    RUNS,
    Renderer,
    RenderOptions,
    RunSet,
    renderer,
)
from dnnlens.rules import RuleOptions
from dnnlens.rules.verdict import apply_rules

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NEW = ROOT / "sample_logs" / "convnet_cl_infer.log"
RENDERERS_DIR = ROOT / "src" / "dnnlens" / "report" / "renderers"
EXECS, CREATES, PASSES, NODES = 165, 165, 11, 15
runner = CliRunner()


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    a = Analysis(load([str(LOG)]))
    apply_rules(a, RuleOptions(search_config=False))
    return a


def test_every_format_has_one_renderer_with_one_signature():
    assert set(ALL_RENDERERS) == {
        "terminal", "json", "html", "perfetto", "graph", "benchdnn", "csv", "parquet",
        "sarif", "github", "junit",
    }  # fmt: skip
    # the ``analyze --format`` choices
    assert set(RENDERERS) == {"terminal", "json", "html", "sarif", "github", "junit"}
    assert set(RUNS) == set(RENDERERS)
    for r in [*ALL_RENDERERS.values(), *RUNS.values()]:
        assert list(inspect.signature(r.render).parameters) == ["analysis", "options"], r
    assert all(isinstance(r, Renderer) for r in ALL_RENDERERS.values())
    with pytest.raises(ValueError, match="--format perfetto"):
        renderer("perfetto")  # not an analyze format


@pytest.mark.parametrize("name", ["terminal", "json", "html"])
def test_analyze_formats_name_the_top_finding(analysis, name):
    text = ALL_RENDERERS[name].render(analysis, RenderOptions(width=200))
    top = analysis.findings[0]
    assert top.code in text


def test_perfetto_has_one_slice_per_event_line(analysis):
    trace = json.loads(ALL_RENDERERS["perfetto"].render(analysis, RenderOptions()))
    cats = [e.get("cat", "") for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert cats.count("exec") == EXECS
    assert sum(c.startswith("create") for c in cats) == CREATES
    assert cats.count("iteration") == PASSES


def test_graph_is_one_pass(analysis):
    graph = json.loads(ALL_RENDERERS["graph"].render(analysis, RenderOptions()))
    assert len(graph["nodes"]) == NODES and graph["iterations"]["count"] == PASSES
    dot = ALL_RENDERERS["graph"].render(analysis, RenderOptions(graph_format="dot"))
    assert dot.startswith("digraph")


def test_benchdnn_starts_with_the_costliest_line(analysis):
    batch = ALL_RENDERERS["benchdnn"].render(analysis, RenderOptions(top=1))
    assert "# 63.746 ms (17.9%), 33 executions, reorder jit:blk undef, first at " in batch
    assert batch.rstrip().endswith("4x16x32x32")


def test_tables_are_a_directory(analysis, tmp_path):
    with pytest.raises(Exception, match="--output DIR"):
        ALL_RENDERERS["csv"].render(analysis, RenderOptions())
    result = ALL_RENDERERS["csv"].write(analysis, tmp_path / "t", RenderOptions())
    assert result.rows == EXECS + CREATES


def test_runs_render_one_document(analysis):
    from dnnlens.analysis.runs import group_runs

    runs = group_runs([str(LOG)])
    doc = json.loads(RUNS["json"].render(RunSet([analysis], runs), RenderOptions()))
    assert [r["summary"]["exec_count"] for r in doc["runs"]] == [EXECS]
    text = RUNS["terminal"].render(RunSet([analysis], runs), RenderOptions(width=200))
    assert "convnet_nchw_infer" in text


def _refuse_reading(monkeypatch) -> None:
    real_open = builtins.open

    def guarded(file, *args, **kwargs):
        if Path(str(file)).resolve() == LOG.resolve():
            raise AssertionError(f"a renderer opened its input {file}")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)


@pytest.mark.parametrize("name", ["terminal", "json", "html", "perfetto", "graph", "benchdnn"])
def test_renderers_do_not_read_the_input_again(analysis, monkeypatch, name):
    _refuse_reading(monkeypatch)
    assert ALL_RENDERERS[name].render(analysis, RenderOptions(width=200))


@pytest.mark.parametrize(
    "args, name",
    [
        (["export", "benchdnn", str(LOG), "--top", "3"], "benchdnn"),
        (["graph", str(LOG), "--format", "mermaid"], "graph"),
        (["analyze", str(LOG), "-q", "-f", "json"], "json"),
    ],
)
def test_commands_write_through_the_renderer(monkeypatch, args, name):
    """The command's output is its renderer's ``render`` of the same analysis."""
    chosen = ALL_RENDERERS[name]
    calls = []
    real = type(chosen).render

    def counted(self, analysis, options):
        calls.append(options)
        return real(self, analysis, options)

    monkeypatch.setattr(type(chosen), "render", counted)
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert len(calls) == 1


def test_export_perfetto_writes_through_the_renderer(monkeypatch, tmp_path):
    calls = []
    real = type(ALL_RENDERERS["perfetto"]).write

    def counted(self, analysis, output, options):
        calls.append(options.trace)
        return real(self, analysis, output, options)

    monkeypatch.setattr(type(ALL_RENDERERS["perfetto"]), "write", counted)
    out = tmp_path / "t.json"
    result = runner.invoke(app, ["export", "perfetto", str(LOG), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and calls[0].max_events == 1_000_000
    events = json.loads(out.read_text())["traceEvents"]
    assert sum(e.get("cat") == "exec" for e in events) == EXECS


# -- the package: one module per format, output.py below them --------------------------------


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (absolute names)."""
    package = "dnnlens." + ".".join(path.relative_to(ROOT / "src" / "dnnlens").parent.parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's package up
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_output_imports_no_renderer():
    """Where the bytes go is below the renderers: they call it, it never imports them."""
    imported = _imported(ROOT / "src" / "dnnlens" / "report" / "output.py")
    assert imported, "the scan found no import at all"
    wrong = sorted(n for n in imported if n.startswith("dnnlens.report.renderers"))
    assert wrong == []


def test_renderer_modules_import_no_other_format():
    formats = {p.stem for p in RENDERERS_DIR.glob("*.py")} - {"__init__", "base"}
    assert formats >= {"terminal", "json", "html", "perfetto", "graph", "benchdnn", "tables",
                       "runs", "diff", "projection"}  # fmt: skip
    for name in sorted(formats):
        imported = _imported(RENDERERS_DIR / f"{name}.py")
        others = {f"dnnlens.report.renderers.{o}" for o in formats - {name}}
        assert not imported & others, name


def test_every_renderer_is_one_on_the_base():
    from dnnlens.fleet.diff_text import FLEET_DIFF_RENDERERS
    from dnnlens.report.renderers.diff import DIFF_RENDERERS
    from dnnlens.report.renderers.projection import PROJECTION_RENDERERS

    assert list(DIFF_RENDERERS) == ["terminal", "markdown", "json", "github", "junit"]
    assert list(PROJECTION_RENDERERS) == ["terminal", "json"]
    assert list(FLEET_DIFF_RENDERERS) == ["terminal", "json"]
    for table in (DIFF_RENDERERS, PROJECTION_RENDERERS, FLEET_DIFF_RENDERERS, RUNS):
        for r in table.values():
            assert isinstance(r, Renderer), r
            assert list(inspect.signature(r.render).parameters) == ["analysis", "options"], r
    with pytest.raises(ValueError, match="--format html: expected one of terminal, markdown"):
        renderer("html", DIFF_RENDERERS)


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "json", "github", "junit"])
def test_diff_writes_its_renderers_text(fmt):
    """``diff --format F`` writes what the renderer of F renders (no colour off a terminal)."""
    from dnnlens.app.compare import compare
    from dnnlens.report.renderers.diff import DIFF_RENDERERS

    options = RenderOptions(top=15, width=200)
    d = compare(str(LOG), str(NEW), "typical", True, False)
    text = DIFF_RENDERERS[fmt].render(d, options)
    result = runner.invoke(app, ["diff", "-q", str(LOG), str(NEW), "-f", fmt],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == text
