"""Finding rules: the built-ins, installed plugins and rule files.

* Built-in rules are every public module of :mod:`dnnlens.rules.builtin` (``pkgutil`` over
  the package; ``_*.py`` helpers are not rules), registered in code order: a new rule is
  one module there and its YAML cases, nothing to declare.
* Installed plugins declare their rules under the ``dnnlens.rules`` entry-point group
  (``importlib.metadata.entry_points``). An entry point may name a :class:`Rule` subclass,
  an instance, a list of them, or a module. One that cannot be imported or loaded is
  skipped with one line on stderr naming its package, the entry point and the error; the
  other rules run, and the exit code is only affected when the user selects a rule of it
  (:meth:`Registry.resolve`).
* ``--rules PATH`` (and ``rule-files`` in the configuration) adds a Python plugin file
  (every Rule subclass it defines, or its ``RULES`` list) or a YAML/TOML rule file.

Errors in a rule file or a plugin file are :class:`RuleSetupError` naming the file and line.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import pkgutil
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from dnnlens.errors import say
from dnnlens.rules.base import Rule, validate_rule_class
from dnnlens.rules.errors import RuleSetupError

GROUP = "dnnlens.rules"
BUILTIN_PACKAGE = "dnnlens.rules.builtin"


@dataclass
class RuleEntry:
    """A known rule: its identity and how to make an instance with given options."""

    name: str
    code: str
    severity: str
    source: str
    defaults: Mapping[str, Any]
    factory: Callable[[Mapping[str, Any] | None, str | None], Rule]

    def make(self, options: Mapping[str, Any] | None = None, severity: str | None = None) -> Rule:
        """An instance with ``options`` over the defaults and an optional severity."""
        rule = self.factory(options, severity)
        rule.source = self.source
        return rule

    def describe(self) -> str:
        """Rationale and fix."""
        return self.make().describe()


@dataclass(frozen=True)
class FailedPlugin:
    """An installed plugin's entry point that could not be loaded, and why (one line)."""

    dist: str
    entry_point: str
    value: str
    reason: str

    def describe(self) -> str:
        """``plugin PKG (entry point NAME = VALUE)``."""
        return f"plugin {self.dist} (entry point {self.entry_point} = {self.value})"


class Registry:
    """Rules by name, in the order they were added (built-ins first), and the installed
    plugins that could not be loaded (:attr:`failed`)."""

    def __init__(self) -> None:
        self.entries: dict[str, RuleEntry] = {}
        self.failed: list[FailedPlugin] = []

    def failed_plugin(self, name: str) -> FailedPlugin | None:
        """The plugin that failed to load whose entry point is named ``name`` (a plugin's
        entry point is named after its rule), or None."""
        return next((f for f in self.failed if f.entry_point == name), None)

    def add(self, entry: RuleEntry) -> None:
        """Add a rule; a second rule with the same name is an error naming both sources."""
        old = self.entries.get(entry.name)
        if old is not None:
            raise RuleSetupError(
                f"{entry.source}: rule {entry.name!r} is already defined by {old.source}"
            )
        self.entries[entry.name] = entry

    def add_rule(self, rule: type[Rule] | Rule, source: str) -> None:
        """Add a rule class or instance after checking it."""
        problem = validate_rule_class(rule, source)
        if problem:
            raise RuleSetupError(problem)
        if isinstance(rule, Rule):
            inst = rule

            def factory(opts: Mapping[str, Any] | None, sev: str | None) -> Rule:
                made = copy.copy(inst)
                made.options = {**inst.options, **(opts or {})}
                made.level = sev or inst.level
                return made

            self.add(
                RuleEntry(
                    inst.rule_name, inst.rule_code, inst.level, source, dict(inst.options), factory
                )
            )
            return
        cls = rule
        self.add(
            RuleEntry(
                cls.name, cls.code, cls.severity, source, dict(cls.defaults), lambda o, s: cls(o, s)
            )
        )

    def resolve(self, names: Iterable[str], what: str, selects: bool = True) -> list[str]:
        """Rule names for user-given names, codes or code prefixes; unknown ones are an
        error.

        A code prefix selects every rule whose code starts with it, as ruff's ``--select
        E`` does: ``DL`` all built-ins, ``DL0`` the rules on oneDNN's verbose lines,
        ``DL1`` the rules on the framework's profile, ``TEAM`` a team's rule file's
        codes; ``ALL`` every rule. A name or a whole code is matched first.

        A name of a plugin that could not be loaded is an error naming the plugin when it
        ``selects`` rules to run (``--select``), and is left out otherwise (``--ignore``)."""
        by_code = {e.code: e.name for e in self.entries.values() if e.code}
        out = []
        for raw in names:
            for name in (n.strip() for n in raw.split(",")):
                if not name:
                    continue
                prefixed = [
                    e.name for e in self.entries.values() if e.code and e.code.startswith(name)
                ]
                if name in self.entries:
                    out.append(name)
                elif name in by_code:
                    out.append(by_code[name])
                elif name == "ALL":
                    out.extend(self.entries)
                elif prefixed:
                    out.extend(prefixed)
                elif (failed := self.failed_plugin(name)) is not None:
                    if selects:
                        raise RuleSetupError(
                            f"{what}: rule {name!r} is from the {failed.describe()}, which "
                            f"could not be loaded: {failed.reason}"
                        )
                else:
                    from dnnlens.rules.expr import suggest  # only for the message

                    raise RuleSetupError(
                        f"{what}: unknown rule {name!r}"
                        + (
                            suggest(name, list(self.entries))
                            if suggest(name, list(self.entries)).startswith(" (did")
                            else "; see dnnlens rules list"
                        )
                        + "".join(
                            f" (not loaded: the {f.describe()}: {f.reason})" for f in self.failed
                        )
                    )
        return out


def rules_in(obj: Any) -> list[type[Rule] | Rule]:
    """The rules an entry point or plugin module provides."""
    if isinstance(obj, ModuleType):
        listed = getattr(obj, "RULES", None)
        if listed is not None:
            return list(listed)
        return [
            v
            for v in vars(obj).values()
            if isinstance(v, type)
            and issubclass(v, Rule)
            and v is not Rule
            and v.__module__ == obj.__name__
            and v.name
        ]
    if isinstance(obj, list | tuple):
        return [r for item in obj for r in rules_in(item)]
    if isinstance(obj, Rule) or (isinstance(obj, type) and issubclass(obj, Rule)):
        return [obj]
    raise TypeError(f"{obj!r} is not a dnnlens rule")


def add_entry_points(registry: Registry) -> None:
    """The built-in rules (:func:`add_builtins`), then the installed plugins (entry-point
    group ``dnnlens.rules``), each plugin's rules in the order of its entry points.

    A plugin's entry point that cannot be imported or loaded, or names no valid rule, is
    skipped: one line on stderr (once per process) names its package, the entry point and
    the error, and it is kept in ``registry.failed``.
    """
    add_builtins(registry)
    eps = _plugin_entry_points()
    loaded: list[tuple[str, type[Rule] | Rule]] = []
    for ep in eps:
        if ep.value.split(":")[0].startswith(BUILTIN_PACKAGE + "."):
            continue  # an install made before the built-ins were found by the scan
        try:
            found = rules_in(ep.load())
            problem = next(filter(None, (validate_rule_class(r, ep.value) for r in found)), None)
            if problem:
                raise RuleSetupError(problem)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure is one line
            _skip_plugin(registry, ep, exc)
            continue
        loaded.extend((f"plugin {_dist(ep)}", rule) for rule in found)
    for source, rule in loaded:
        registry.add_rule(rule, source)


#: The plugin entry points found on an import path (:func:`_plugin_entry_points`).
_FOUND: dict[tuple[Any, ...], list[Any]] = {}


def _plugin_entry_points() -> list[Any]:
    """The entry points of group ``dnnlens.rules``, in a stable order: looked up once per
    import path (``sys.path``; a path with another folder, as a test that installs a fake
    package adds, looks again). Looking them up reads every installed package's metadata,
    10 ms, which a ``fleet build`` worker paid for every run."""
    key = (entry_points, *sys.path)  # the lookup itself too: a test may stand in for it
    found = _FOUND.get(key)
    if found is None:
        found = sorted(entry_points(group=GROUP), key=lambda e: (e.value.split(":")[0], e.name))
        _FOUND.clear()
        _FOUND[key] = found
    return list(found)


#: The plugins already said to be skipped: once per process, however many registries.
_SAID_SKIPPED: set[tuple[str, str, str]] = set()


def _skip_plugin(registry: Registry, ep: Any, exc: BaseException) -> None:
    """Keep a plugin that failed in ``registry.failed``, and say it on stderr (once)."""
    text = str(exc).strip().splitlines()
    reason = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    failed = FailedPlugin(_dist(ep), ep.name, ep.value, reason)
    registry.failed.append(failed)
    key = (failed.dist, failed.entry_point, failed.value)
    if key not in _SAID_SKIPPED:
        _SAID_SKIPPED.add(key)
        say("warning", f"{failed.describe()} cannot be loaded, its rules are skipped: {reason}")


def _dist(ep: Any) -> str:
    """Name of the package that declares an entry point (reads its metadata: not free)."""
    return getattr(getattr(ep, "dist", None), "name", None) or "?"


def _code(rule: type[Rule] | Rule) -> str:
    return rule.rule_code if isinstance(rule, Rule) else rule.code


def builtin_module_names() -> list[str]:
    """The modules of the built-in rules, by name: every module of
    :mod:`dnnlens.rules.builtin` but its private ``_*`` helpers."""
    pkg = importlib.import_module(BUILTIN_PACKAGE)
    names = (info.name for info in pkgutil.iter_modules(pkg.__path__))
    return sorted(f"{BUILTIN_PACKAGE}.{name}" for name in names if not name.startswith("_"))


def import_builtin_modules() -> list[ModuleType]:
    """The modules of the built-in rules, imported (only dnnlens's own code runs)."""
    return [importlib.import_module(name) for name in builtin_module_names()]


def add_builtins(registry: Registry) -> None:
    """Every rule of every built-in module, in code order (the order they run and tie in)."""
    found = [rule for module in import_builtin_modules() for rule in rules_in(module)]
    for rule in sorted(found, key=_code):
        registry.add_rule(rule, "builtin")


def is_python_file(path: str) -> bool:
    """Whether ``path`` names a Python plugin (code), not a rule file (data)."""
    return Path(path).suffix == ".py"


def add_path(registry: Registry, path: str, origin: str = "--rules", announce: bool = True) -> None:
    """A Python plugin file or a YAML/TOML rule file (``origin``: who named it, for the note
    said on stderr before a Python file runs)."""
    p = Path(path)
    if not p.is_file():
        raise RuleSetupError(f"{path}: no such rule file")
    if is_python_file(path):
        if announce:
            say("note", f"running the Python rule file {path} (named by {origin})")
        module = load_plugin_module(path)
        try:
            found = rules_in(module)
        except TypeError as exc:
            raise RuleSetupError(f"{path}: RULES: {exc}") from None
        if not found:
            raise RuleSetupError(
                f"{path}: defines no rule (a subclass of dnnlens.rules.Rule with a name)"
            )
        for rule in found:
            registry.add_rule(rule, path)
        return
    if p.suffix.lower() not in (".yaml", ".yml", ".toml"):
        raise RuleSetupError(f"{path}: rule files end in .yaml, .yml, .toml or .py")
    from dnnlens.rules.declarative import DeclarativeRule, load_rule_file

    specs, _tests = load_rule_file(path)
    for spec in specs:
        registry.add(
            RuleEntry(
                spec.name,
                spec.code,
                spec.severity,
                f"{path}:{spec.line}",
                spec.options,
                lambda o, s, spec=spec: DeclarativeRule(spec, o, s),
            )
        )


def load_plugin_module(path: str) -> ModuleType:
    """Import a plugin file; any failure is one line naming the file and line."""
    resolved = str(Path(path).resolve())
    name = "dnnlens_user_rules_" + hashlib.sha1(resolved.encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise RuleSetupError(f"{path}: cannot import this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise RuleSetupError(f"{path}:{exc.lineno}: SyntaxError: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - report where in the user's file it failed
        del sys.modules[name]
        line = _line_in(exc, resolved)
        raise RuleSetupError(f"{path}:{line}: {type(exc).__name__}: {exc}") from None
    return module


def _line_in(exc: BaseException, filename: str) -> int:
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename and frame.lineno:
            line = frame.lineno
    return line
