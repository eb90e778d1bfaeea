"""The rules engine: registry, entry points, plugins, configuration, selection, failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.reading import load
from dnnlens.rules import Rule, RuleOptions, RuleSetupError, run_rules
from dnnlens.rules.registry import GROUP, Registry, add_entry_points

ROOT = Path(__file__).resolve().parent.parent
NCHW = str(ROOT / "sample_logs" / "convnet_nchw_infer.log")


@pytest.fixture(scope="module")
def nchw():
    return Analysis(load([NCHW]))


def names(findings) -> list[str]:
    return [f.rule for f in findings]


def test_builtins_come_from_the_package() -> None:
    from dnnlens.rules.registry import builtin_module_names

    reg = Registry()
    add_entry_points(reg)
    builtins = [n for n, e in reg.entries.items() if e.source == "builtin"]
    modules = {type(reg.entries[n].make()).__module__ for n in builtins}
    assert modules == set(builtin_module_names())
    assert builtins[:3] == ["reorder-overhead", "layout-round-trip", "weight-reorder-per-iteration"]
    oneDNN, framework = [f"DL{i:03d}" for i in range(1, 14)], [f"DL{i}" for i in range(101, 108)]
    assert [reg.entries[n].code for n in builtins] == oneDNN + framework


def test_every_builtin_documents_rationale_and_fix() -> None:
    reg = Registry()
    add_entry_points(reg)
    for entry in reg.entries.values():
        rule = entry.make()
        assert rule.summary() and "Fix:" in rule.describe(), entry.name
        assert rule.fix_text()


def test_select_and_ignore_by_name_and_code(nchw) -> None:
    only = run_rules(nchw, RuleOptions(select=["DL002"], search_config=False))
    assert names(only) == ["layout-round-trip"]
    some = run_rules(
        nchw, RuleOptions(select=["reorder-overhead,layout-round-trip"], search_config=False)
    )
    assert sorted(names(some)) == ["layout-round-trip", "reorder-overhead"]
    rest = run_rules(nchw, RuleOptions(ignore=["layout-round-trip", "DL010"], search_config=False))
    assert "layout-round-trip" not in names(rest) and "unstable-timing" not in names(rest)
    assert "reorder-overhead" in names(rest)
    with pytest.raises(RuleSetupError, match="did you mean 'reorder-overhead'"):
        run_rules(nchw, RuleOptions(select=["reorder-overhed"], search_config=False))


def test_findings_are_sorted_most_severe_first(nchw, tmp_path: Path) -> None:
    cfg = tmp_path / "dnnlens.toml"
    cfg.write_text('[rules.weight-reorder-per-iteration]\nseverity = "error"\n')
    found = run_rules(nchw, RuleOptions(config_path=str(cfg)))
    assert found[0].rule == "weight-reorder-per-iteration" and found[0].severity == "error"


def test_thresholds_from_pyproject_found_in_cwd(nchw, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.dnnlens]\nignore = ["unstable-timing"]\n\n'
        "[tool.dnnlens.rules.reorder-overhead]\nshare = 0.9\n"
    )
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    found = names(run_rules(nchw, RuleOptions()))
    assert "reorder-overhead" not in found and "unstable-timing" not in found
    assert "layout-round-trip" in found


def test_dnnlens_toml_rule_files_relative_to_it(nchw, tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(
        "name: always\nwhen: count() > 0\nmessage: '{total_ms:.0f} ms'\nseverity: info\n"
    )
    (tmp_path / "dnnlens.toml").write_text('rule-files = ["r.yaml"]\nselect = ["always"]\n')
    found = run_rules(nchw, RuleOptions(config_path=str(tmp_path / "dnnlens.toml")))
    assert names(found) == ["always"] and found[0].message == "356 ms"


@pytest.mark.parametrize(
    "text, match",
    [
        ("[tool.dnnlens.rules.reorder-overhead]\nshar = 0.2\n", r"pyproject.toml:\d+: .*'shar'"),
        ("[tool.dnnlens.rules.reorder-overhead]\nshare = 'x'\n", "must be a float"),
        ("[tool.dnnlens.rules.no-such-rule]\nx = 1\n", "unknown rule 'no-such-rule'"),
        ("[tool.dnnlens]\nselct = []\n", r"pyproject.toml:2: unknown key 'selct'"),
        ("[tool.dnnlens.rules.reorder-overhead]\nseverity = 'fatal'\n", "severity"),
    ],
)
def test_bad_configuration_is_one_clear_error(nchw, tmp_path: Path, text: str, match: str):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(text)
    with pytest.raises(RuleSetupError, match=match) as info:
        run_rules(nchw, RuleOptions(config_path=str(cfg)))
    assert "\n" not in str(info.value)


PLUGIN = '''
from dnnlens.rules import Rule


class SlowConvs(Rule):
    """Convolutions take most of the time.

    Fix: nothing, it is a test.
    """

    name = "slow-convs"
    code = "X001"
    severity = "info"
    defaults = {"share": 0.1}

    def check(self, ctx):
        conv = ctx.execs[ctx.execs["kind"] == "convolution"]
        share = conv["time_ms"].sum() / ctx.total_ms
        if share >= self.options["share"]:
            yield self.finding(f"convolutions take {share:.0%}", ctx.evidence(conv),
                               data={"share": share})


class Broken(Rule):
    """Always fails.

    Fix: none.
    """

    name = "broken"
    code = "X002"

    def check(self, ctx):
        return 1 / 0
'''


def test_python_plugin_file_and_a_failing_rule(nchw, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    found = run_rules(nchw, RuleOptions(rule_paths=[str(plugin)], search_config=False))
    by = {f.rule: f for f in found}
    assert by["slow-convs"].data["share"] == pytest.approx(110.4 / 356.08, rel=1e-3)
    err = by["broken"]
    assert err.severity == "error" and "ZeroDivisionError" in err.message
    assert "broken" in err.message and str(plugin) in err.message
    assert found[0].rule == "broken"  # most severe first
    assert {"reorder-overhead", "layout-round-trip"} <= set(by)  # the others still ran


@pytest.mark.parametrize(
    "source, match",
    [
        ("def oops(:\n", r"plugin.py:1: SyntaxError"),
        ("import math\n\nraise RuntimeError('no')\n", r"plugin.py:3: RuntimeError: no"),
        ("x = 1\n", "defines no rule"),
        (
            "from dnnlens.rules import Rule\nclass A(Rule):\n    name = 'Bad Name'\n"
            "    def check(self, ctx):\n        return []\n",
            "not kebab-case",
        ),
        (
            "from dnnlens.rules import Rule\nclass A(Rule):\n"
            "    name = 'reorder-overhead'\n"
            "    def check(self, ctx):\n        return []\n",
            "already defined by builtin",
        ),
    ],
)
def test_broken_plugin_files(nchw, tmp_path: Path, source: str, match: str) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(source)
    with pytest.raises(RuleSetupError, match=match):
        run_rules(nchw, RuleOptions(rule_paths=[str(plugin)], search_config=False))


def test_rule_instances_keep_their_own_options() -> None:
    class R(Rule):
        """R.

        Fix: x.
        """

        name = "r-rule"
        defaults = {"a": 1.0, "b": "x"}

        def check(self, ctx):
            return []

    r = R({"a": 2.0}, "error")
    assert r.options == {"a": 2.0, "b": "x"} and r.level == "error"
    assert R().options == {"a": 1.0, "b": "x"} and R().level == "warning"


def test_a_failing_analysis_is_an_error_not_a_rule_finding(monkeypatch) -> None:
    # no second implementation stands in for a failing fact: the run stops with its reason
    import dnnlens.analysis.analysis as analysis_module
    from dnnlens.analysis.analysis import AnalysisError

    def boom(*a, **k):
        raise RuntimeError("not today")

    monkeypatch.setattr(analysis_module, "find_iterations", boom)
    with pytest.raises(AnalysisError, match="iterations failed: RuntimeError: not today"):
        run_rules(Analysis(load([NCHW])), RuleOptions(search_config=False))


def test_a_failing_iteration_finder_exits_3(monkeypatch, capsys) -> None:
    import dnnlens.analysis.analysis as analysis_module
    from dnnlens.cli import app

    def boom(*a, **k):
        raise RuntimeError("not today")

    monkeypatch.setattr(analysis_module, "find_iterations", boom)
    result = CliRunner().invoke(app, ["analyze", NCHW, "-q"])
    assert result.exit_code == 3, result.output
    assert "not today" in result.output and "Traceback" not in result.output


def test_a_failing_graph_exits_3(monkeypatch) -> None:
    import dnnlens.analysis.graph as graph_module
    from dnnlens.cli import app

    def boom(*a, **k):
        raise ValueError("no graph")

    monkeypatch.setattr(graph_module, "build_graph", boom)
    result = CliRunner().invoke(app, ["analyze", NCHW, "-q", "-f", "json"])
    assert result.exit_code == 3, result.output
    assert "graph failed: ValueError: no graph" in result.output


class _FakeDist:
    name = "team-rules"


class _FakeEntryPoint:
    """What importlib.metadata returns for a plugin package's entry point."""

    def __init__(self, name: str, value: str, obj) -> None:
        self.name, self.value, self.dist, self._obj = name, value, _FakeDist(), obj

    def load(self):
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_plugins_from_installed_packages(nchw, tmp_path: Path, monkeypatch) -> None:
    import importlib.metadata

    from dnnlens.rules import registry

    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN.split("class Broken")[0] + "\nRULES = [SlowConvs({'share': 0.2})]\n")
    module = registry.load_plugin_module(str(plugin))
    real = importlib.metadata.entry_points(group=GROUP)
    fake = _FakeEntryPoint("slow-convs", "team_rules:RULES", module)
    monkeypatch.setattr(registry, "entry_points", lambda group: [*real, fake])
    found = run_rules(nchw, RuleOptions(select=["slow-convs"], search_config=False))
    assert [f.rule for f in found] == ["slow-convs"]
    reg = Registry()
    registry.add_entry_points(reg)
    assert reg.entries["slow-convs"].source == "plugin team-rules"
    assert list(reg.entries)[-1] == "slow-convs"  # after the built-ins
    broken = _FakeEntryPoint("bad", "team_rules:nope", ImportError("no module team_rules"))
    monkeypatch.setattr(registry, "entry_points", lambda group: [*real, broken])
    monkeypatch.setattr(registry, "_SAID_SKIPPED", set())
    found = run_rules(nchw, RuleOptions(search_config=False))  # skipped; the rest run
    assert "reorder-overhead" in [f.rule for f in found]
    with pytest.raises(
        RuleSetupError,
        match=r"--select: rule 'bad' is from the plugin team-rules \(entry point bad = "
        r"team_rules:nope\), which could not be loaded: ImportError: no module team_rules",
    ):
        run_rules(nchw, RuleOptions(select=["bad"], search_config=False))
