"""Runs the rules over an analysis: registry, configuration, selection, then each rule once.

A rule that raises while running does not stop the others: its failure becomes a finding
of severity ``error`` that names the rule. Mistakes in the setup (a bad rule file, an
unknown rule name, a bad threshold) raise :class:`RuleSetupError` before anything runs.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.analysis import Analysis, AnalysisError
from dnnlens.analysis.findings import SEVERITIES, Finding, severity_rank
from dnnlens.rules import isolate
from dnnlens.rules.base import Rule
from dnnlens.rules.budget import RuleBudget, RuleFailure, collect, memory_limit, time_limit
from dnnlens.rules.config import RuleConfig, load_config
from dnnlens.rules.context import RuleContext
from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.registry import Registry, add_entry_points, add_path, is_python_file
from dnnlens.rules.validate import checked_finding

__all__ = ["RuleOptions", "RuleSetupError", "build_registry", "run_rules", "selected_rules"]


@dataclass
class RuleOptions:
    """What the user chose: extra rule files, selection, config file."""

    rule_paths: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config_path: str | None = None
    #: Look for dnnlens.toml / pyproject.toml when ``config_path`` is not given.
    search_config: bool = True
    #: Say on stderr when a Python rule file is run (it is code, not data).
    announce_python: bool = True
    #: Limits of each rule's run (time, findings), see :mod:`dnnlens.rules.budget`.
    budget: RuleBudget = field(default_factory=RuleBudget)


def build_registry(options: RuleOptions, config: RuleConfig | None = None) -> Registry:
    """Built-ins, plugins, configured rule files and ``--rules`` files.

    A configuration found by searching may not bring Python: see :mod:`dnnlens.rules.config`.
    """
    registry = Registry()
    add_entry_points(registry)
    cfg = config if config is not None else load_config(options.config_path, options.search_config)
    for path, written in zip(cfg.rule_files, cfg.rule_files_written, strict=True):
        where = cfg.where(written)
        if is_python_file(path) and cfg.searched:
            raise RuleSetupError(
                f"{where}: rule-files: {written!r} is a Python file, and this configuration "
                "was found by searching, not named: dnnlens runs Python rule files only from "
                f"--rules {written} or a configuration named with --config {cfg.path}"
            )
        add_path(registry, path, f"rule-files of {where}", options.announce_python)
    for path in options.rule_paths:
        add_path(registry, path, "--rules", options.announce_python)
    return registry


def _check_value(name: str, key: str, value: Any, default: Any, where: str) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int | float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if ok and isinstance(value, int) and not -(1 << 63) <= value < 1 << 63:
        ok = False
    if not ok:
        raise RuleSetupError(
            f"{where}: rule {name!r}: option {key!r} must be a {type(default).__name__}, "
            f"got {value!r:.60}"
        )
    return float(value) if isinstance(default, float) else value


def configured(registry: Registry, cfg: RuleConfig) -> dict[str, tuple[dict, str | None]]:
    """Per rule: (options, severity) from the configuration, checked."""
    out: dict[str, tuple[dict, str | None]] = {}
    for name, table in cfg.rules.items():
        written = name  # as the file names the table: a code resolves to a name below
        where = cfg.where(f"rules.{name}") if cfg.path else "configuration"
        if name not in registry.entries and registry.failed_plugin(name) is not None:
            continue  # the options of a plugin that could not be loaded: nothing to set
        if name not in registry.entries:
            resolved = registry.resolve([name], where) if name else []
            name = resolved[0] if resolved else name
        entry = registry.entries[name]
        severity = table.get("severity")
        if severity is not None and severity not in SEVERITIES:
            raise RuleSetupError(
                f"{where}: rule {name!r}: severity must be one of {', '.join(SEVERITIES)}"
            )
        opts = {}
        for key, value in table.items():
            if key == "severity":
                continue
            if key not in entry.defaults:
                known = ", ".join(entry.defaults) or "none"
                raise RuleSetupError(
                    f"{cfg.where_option(written, key) if cfg.path else where}: rule "
                    f"{name!r} has no option {key!r} (its options: {known})"
                )
            opts[key] = _check_value(name, key, value, entry.defaults[key], where)
        out[name] = (opts, severity)
    return out


def selected_rules(registry: Registry, options: RuleOptions, cfg: RuleConfig) -> list[Rule]:
    """Instances of the rules to run, in registry order, with configured options."""
    settings = configured(registry, cfg)
    if options.select:
        select = registry.resolve(options.select, "--select")
    else:  # an unknown name is named where it is written: the file and its line
        select = [n for v in cfg.select for n in registry.resolve([v], _written(cfg, v))]
    ignore = {n for v in cfg.ignore for n in registry.resolve([v], _written(cfg, v), selects=False)}
    ignore |= set(registry.resolve(options.ignore, "--ignore", selects=False))
    chosen = [n for n in registry.entries if (not select or n in select) and n not in ignore]
    rules = []
    for name in chosen:
        opts, severity = settings.get(name, ({}, None))
        rules.append(registry.entries[name].make(opts, severity))
    return rules


def _written(cfg: RuleConfig, value: str) -> str:
    """Where a configuration file names ``value`` (``path:line``), for a message."""
    return cfg.where(f'"{value}"') if cfg.line_of(f'"{value}"') else cfg.where(value)


def run_selected(
    analysis: Analysis, rules: list[Rule], budget: RuleBudget | None = None
) -> list[Finding]:
    """Run ``rules`` on one shared context; failures become error findings.

    Rules from outside dnnlens (plugins, rule files) run within ``budget``
    (:mod:`dnnlens.rules.budget`), Python plugins each in a child process of its own
    (:mod:`dnnlens.rules.isolate`); every finding is checked (:mod:`dnnlens.rules.validate`).
    After a signal stopped a plugin, the plugins after it are not run (each says so).
    """
    budget = budget or RuleBudget()
    ctx = RuleContext(analysis)
    findings: list[Finding] = []
    stopped_by = ""
    for rule in rules:
        if stopped_by and is_plugin(rule):
            found = [_failure(rule, f"not run: dnnlens was stopped by {stopped_by}", "Stopped")]
        else:
            raw, signum = _run_one(rule, ctx, budget)
            if signum is not None:
                stopped_by = signal.Signals(signum).name
            found = _within_basis(rule, raw, analysis)
        if rule.level == type(rule).severity:  # not set by configuration: grade by cost
            for f in found:
                grade_by_impact(f, analysis.share_of(f))
        findings.extend(found)
    order = {id(f): i for i, f in enumerate(findings)}
    return sorted(findings, key=lambda f: (-severity_rank(f.severity), order[id(f)]))


def is_plugin(rule: Rule) -> bool:
    """Whether ``rule`` is Python code from outside dnnlens (not a built-in, not a rule file:
    a rule file's rules are dnnlens's own code on the file's data)."""
    if getattr(rule, "source", "builtin") == "builtin":
        return False
    declarative = sys.modules.get("dnnlens.rules.declarative")
    return declarative is None or not isinstance(rule, declarative.DeclarativeRule)


#: Rounding room for an impact summed in another order than its basis.
_BASIS_SLACK = 1e-9


def _within_basis(rule: Rule, found: list[Finding], analysis: Analysis) -> list[Finding]:
    """The findings, none of which claims more than its basis (or a negative time).

    An impact is a part of its basis (``Finding.basis``): more than all of it is a wrong
    number. A built-in rule that says so is a bug of dnnlens (exit 3); a plugin's or rule
    file's finding is refused, in an error finding that says why.
    """
    builtin = getattr(rule, "source", "builtin") == "builtin"
    out = []
    for f in found:
        share = analysis.own_share(f) if builtin else analysis.share_of(f)
        if _part_of_basis(f.impact_ms_per_iteration, share, builtin):
            out.append(f)
            continue
        impact = f.impact_ms_per_iteration
        detail = (
            f"its impact {impact:.4g} ms per iteration is not a part of its basis, "
            f"{analysis.basis_label(f)}"
        )
        if builtin:
            raise AnalysisError(f"rule {f.rule}: {detail}")
        out.append(_failure(rule, detail, "ImpactOutsideBasis"))
    return out


def _part_of_basis(impact: float | None, share: float | None, builtin: bool) -> bool:
    """Whether ``impact`` (ms) can be a part of its basis, ``share`` of it.

    No share means a basis of no time (a log without exec time): only no time is a part of
    it. A built-in rule is trusted there (it says no time where there is none).
    """
    if impact is None:
        return True
    if not impact >= 0:
        return False
    if share is None:
        return impact == 0 or builtin
    return share <= 1 + _BASIS_SLACK


#: A finding that costs less than this share of the typical iteration is ``info``; one that
#: costs at least ``WARNING_SHARE`` is at least ``warning``.
INFO_BELOW_SHARE = 0.02
WARNING_SHARE = 0.10


def grade_by_impact(f: Finding, share: float | None) -> None:
    """Severity follows cost: a finding about time that costs under 2% of the typical
    iteration (or step) is info, one of 10% or more at least a warning (an error stays an
    error). A finding its rule graded by what its fix saves (``data["graded_by"]``: a sure
    saving, or no fix at all) is not raised for what it spends."""
    if share is None or f.severity == "error":
        return
    if share < INFO_BELOW_SHARE:
        f.severity = "info"
    elif share >= WARNING_SHARE and not f.data.get("graded_by"):
        f.severity = "warning"


def _run_one(rule: Rule, ctx: RuleContext, budget: RuleBudget) -> tuple[list[Finding], int | None]:
    """The checked findings of one rule, or one error finding saying how it broke; and the
    signal that stopped it, if one did (a Python plugin, run in a child process)."""
    if not (is_plugin(rule) and isolate.available()):
        return _run_here(rule, ctx, budget), None
    outcome = isolate.run_isolated(rule, ctx, budget, _run_here)
    if outcome.bug:
        raise AnalysisError(outcome.bug)
    if outcome.signum is not None:
        name = signal.Signals(outcome.signum).name
        return [_failure(rule, f"stopped by {name} before it finished", "Stopped")], outcome.signum
    if outcome.findings is None:
        return [_failure(rule, outcome.failure, "RuleFailure")], None
    return outcome.findings, None


def _run_here(rule: Rule, ctx: RuleContext, budget: RuleBudget) -> list[Finding]:
    """:func:`_run_one` in this process (in the child, for a plugin)."""
    limited = getattr(rule, "source", "builtin") != "builtin"
    try:
        if limited:
            with time_limit(budget.seconds), memory_limit(budget.memory_bytes):
                items = collect(rule.check(ctx), budget.max_findings)
        else:
            items = collect(rule.check(ctx), budget.max_findings)
        return [checked_finding(item) for item in items]
    except (KeyboardInterrupt, AnalysisError):  # a fact of the analysis failed: a bug
        raise
    except RuleFailure as exc:
        return [_failure(rule, str(exc), "RuleFailure")]
    except BaseException as exc:  # noqa: BLE001 - one broken rule must not stop the rest
        # SystemExit and other BaseExceptions too: a plugin must not end the run
        detail = (str(exc).strip().splitlines() or [""])[0][:300]
        return [_failure(rule, f"{type(exc).__name__}: {detail}", type(exc).__name__)]


def _failure(rule: Rule, detail: str, kind: str) -> Finding:
    where = getattr(rule, "source", "")
    name = rule.rule_name if isinstance(rule.rule_name, str) and rule.rule_name else "?"
    code = rule.rule_code if isinstance(rule.rule_code, str) else ""
    return Finding(
        rule=name,
        code=code,
        severity="error",
        message=f"rule {name} failed while running ({where}): {detail}",
        data={"rule_error": True, "exception": kind},
    )


def run_rules(analysis: Analysis, options: RuleOptions) -> list[Finding]:
    """All findings of the selected rules, most severe first; ``analysis.rules_run`` says
    which rules looked at it (a CI report lists a rule that found nothing as passed)."""
    cfg = load_config(options.config_path, options.search_config)
    registry = build_registry(options, cfg)
    rules = selected_rules(registry, options, cfg)
    analysis.rules_run = [RuleRun.of(rule) for rule in rules]
    return run_selected(analysis, rules, options.budget)


@dataclass(frozen=True)
class RuleRun:
    """A rule that ran on an analysis: what a CI report (SARIF's rule list, a JUnit test
    case) says of it whether or not it found anything."""

    name: str
    code: str
    severity: str
    summary: str
    description: str
    part_of: str = ""

    @classmethod
    def of(cls, rule: Rule) -> RuleRun:
        """The identity and help text of ``rule`` (its docstring: rationale and fix)."""
        return cls(
            rule.rule_name,
            rule.rule_code,
            rule.level,
            rule.summary(),
            rule.describe(),
            getattr(rule, "part_of", "") or "",
        )


def rule_options(rule: Rule) -> Mapping[str, Any]:
    """The effective options of a rule instance."""
    return dict(rule.options)
