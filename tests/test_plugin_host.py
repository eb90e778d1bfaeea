"""Where rules come from: every module of ``dnnlens.rules.builtin`` (nothing to declare)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import dnnlens.rules.builtin
from dnnlens.rules import registry
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
