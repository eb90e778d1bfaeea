"""Where rules come from: every module of ``dnnlens.rules.builtin`` (nothing to declare), and
installed plugins through the ``dnnlens.rules`` entry-point group, where one that cannot be
loaded is skipped with one line on stderr and the other rules still run.

The plugins here are fake distributions written by the test into a temporary directory put
on ``sys.path``: a ``*.dist-info`` folder (``METADATA``, ``entry_points.txt``) beside the
module its entry point names, which is how ``importlib.metadata`` finds an installed package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dnnlens.rules.builtin
from dnnlens.rules import registry
from dnnlens.rules.config import RuleConfig
from dnnlens.rules.engine import RuleOptions, selected_rules
from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.registry import Registry, add_entry_points, builtin_module_names

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
BUILTIN = ROOT / "src" / "dnnlens" / "rules" / "builtin"

GOOD_RULE = '''
from dnnlens.rules import Rule


class {cls}(Rule):
    """Always says hello. Fix: nothing."""

    name = "{name}"
    code = "{code}"
    severity = "info"

    def check(self, ctx):
        yield self.finding("hello")
'''


def fake_dist(where: Path, dist: str, module: str, entry: str, source: str) -> None:
    """An installed distribution ``dist`` whose entry point ``entry`` is in ``module``."""
    info = where / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[dnnlens.rules]\n{entry}\n")
    (where / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    """One plugin that raises when imported, one that works."""
    where = tmp_path / "site"
    fake_dist(where, "broken-rules", "broken_rules", "broken-rule = broken_rules:BrokenRule",
              "raise RuntimeError('the plugin is broken\\nsecond line')\n")  # fmt: skip
    fake_dist(where, "good-rules", "good_rules", "good-rule = good_rules:GoodRule",
              GOOD_RULE.format(cls="GoodRule", name="good-rule", code="GOOD001"))  # fmt: skip
    return where


@pytest.fixture
def said_afresh(monkeypatch):
    """Each test sees the stderr line of a failed plugin (it is said once per process)."""
    monkeypatch.setattr(registry, "_SAID_SKIPPED", set())


# -- built-ins: one module each, found by the scan ---------------------------------------------


def test_every_builtin_module_is_registered_and_nothing_else_is_needed():
    reg = Registry()
    registry.add_builtins(reg)
    modules = {type(e.make()).__module__ for e in reg.entries.values()}
    files = {f"dnnlens.rules.builtin.{p.stem}" for p in BUILTIN.glob("*.py")}
    public = {m for m in files if not m.rsplit(".", 1)[1].startswith("_")}
    assert modules == public - {"dnnlens.rules.builtin.__init__"}
    assert builtin_module_names() == sorted(modules)
    codes = [e.code for e in reg.entries.values()]
    assert codes == sorted(codes) and len(codes) == 20  # run (and tie) in code order
    assert all(e.source == "builtin" for e in reg.entries.values())


def test_pyproject_declares_no_builtin_entry_point():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project.get("entry-points", {}).get("dnnlens.rules", {})
    assert not [v for v in declared.values() if v.startswith("dnnlens.rules.builtin")]


def test_a_new_module_in_the_package_is_a_new_rule(tmp_path, monkeypatch):
    """A rule module dropped into the package (here: a second folder of it) is run, in code
    order, with nothing declared; a ``_`` helper beside it is not imported as a rule."""
    extra = tmp_path / "builtin"
    extra.mkdir()
    (extra / "zz_hello.py").write_text(GOOD_RULE.format(cls="Hello", name="hello", code="DL050"))
    (extra / "_helper.py").write_text("raise AssertionError('a helper was scanned')\n")
    path = [*dnnlens.rules.builtin.__path__, str(extra)]
    monkeypatch.setattr(dnnlens.rules.builtin, "__path__", path)
    monkeypatch.delitem(sys.modules, "dnnlens.rules.builtin.zz_hello", raising=False)
    try:
        reg = Registry()
        add_entry_points(reg)
        assert reg.entries["hello"].source == "builtin"
        codes = [e.code for e in reg.entries.values() if e.source == "builtin"]
        assert codes.index("DL050") == codes.index("DL013") + 1  # between DL013 and DL101
    finally:
        sys.modules.pop("dnnlens.rules.builtin.zz_hello", None)


# -- installed plugins ---------------------------------------------------------------------


def test_a_plugin_that_cannot_be_imported_is_skipped_in_one_line(
    plugins, monkeypatch, capsys, said_afresh
):
    monkeypatch.syspath_prepend(str(plugins))
    reg = Registry()
    add_entry_points(reg)
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "warning: plugin broken-rules (entry point broken-rule = broken_rules:BrokenRule)" in err
    assert "RuntimeError: the plugin is broken" in err and "second line" not in err
    # the rest still run: every built-in and the plugin that works
    assert sum(e.source == "builtin" for e in reg.entries.values()) == 20
    assert reg.entries["good-rule"].source == "plugin good-rules"
    assert [f.dist for f in reg.failed] == ["broken-rules"]
    add_entry_points(Registry())  # a second registry in the same process: not said again
    assert capsys.readouterr().err == ""


def test_a_rule_of_a_plugin_that_failed_is_an_error_only_when_selected(
    plugins, monkeypatch, said_afresh
):
    monkeypatch.syspath_prepend(str(plugins))
    reg = Registry()
    add_entry_points(reg)
    cfg = RuleConfig()
    with pytest.raises(RuleSetupError, match=r"--select: rule 'broken-rule' is from the plugin "
                       r"broken-rules .*could not be loaded: RuntimeError"):  # fmt: skip
        selected_rules(reg, RuleOptions(select=["broken-rule"], search_config=False), cfg)
    kept = selected_rules(reg, RuleOptions(ignore=["broken-rule"], search_config=False), cfg)
    assert "good-rule" in [r.rule_name for r in kept]
    with pytest.raises(RuleSetupError, match=r"unknown rule 'nope'.*not loaded: the plugin "):
        selected_rules(reg, RuleOptions(select=["nope"], search_config=False), cfg)


def _analyze(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    """``dnnlens analyze`` in a fresh interpreter, with ``site`` on its path."""
    path = [str(site)] if site else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT / "src")])}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "dnnlens.cli", "analyze", str(NCHW), "-q", "-f", "json"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def test_the_command_runs_every_other_rule_and_exits_as_without_the_plugin(plugins):
    broken_only = plugins.parent / "broken_only"
    broken_only.mkdir()
    for p in plugins.iterdir():
        if p.name.startswith("broken"):
            p.rename(broken_only / p.name)
    plain = _analyze(None)
    with_broken = _analyze(broken_only)
    assert with_broken.returncode == plain.returncode == 0
    lines = with_broken.stderr.splitlines()
    assert len(lines) == 1 and "broken-rules" in lines[0] and "broken-rule =" in lines[0]
    assert "RuntimeError: the plugin is broken" in lines[0]
    assert json.loads(with_broken.stdout)["findings"] == json.loads(plain.stdout)["findings"]

    selected = _analyze(broken_only, "--select", "broken-rule")
    assert selected.returncode == 2 and selected.stdout == ""
    assert "rule 'broken-rule' is from the plugin broken-rules" in selected.stderr
