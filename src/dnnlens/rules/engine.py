"""Runs the rules over an analysis: registry, configuration, selection, then each rule once.

A rule that raises while running does not stop the others: its failure becomes a finding
of severity ``error`` that names the rule. Mistakes in the setup (a bad rule file, an
unknown rule name, a bad threshold) raise :class:`RuleSetupError` before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dnnlens.analysis.analysis import Analysis, AnalysisError
from dnnlens.analysis.findings import SEVERITIES, Finding, severity_rank
from dnnlens.rules.base import Rule
from dnnlens.rules.config import RuleConfig, load_config
from dnnlens.rules.context import RuleContext
from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.registry import Registry, add_entry_points, add_path

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


def build_registry(options: RuleOptions, config: RuleConfig | None = None) -> Registry:
    """Built-ins, plugins, configured rule files and ``--rules`` files."""
    registry = Registry()
    add_entry_points(registry)
    cfg = config if config is not None else load_config(options.config_path, options.search_config)
    for path in [*cfg.rule_files, *options.rule_paths]:
        add_path(registry, path)
    return registry


def _check_value(name: str, key: str, value: Any, default: Any, where: str) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int | float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise RuleSetupError(
            f"{where}: rule {name!r}: option {key!r} must be a {type(default).__name__}, "
            f"got {value!r}"
        )
    return float(value) if isinstance(default, float) else value


def configured(registry: Registry, cfg: RuleConfig) -> dict[str, tuple[dict, str | None]]:
    """Per rule: (options, severity) from the configuration, checked."""
    out: dict[str, tuple[dict, str | None]] = {}
    for name, table in cfg.rules.items():
        where = cfg.where(f"rules.{name}") if cfg.path else "configuration"
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
                    f"{cfg.where(key) if cfg.path else where}: rule {name!r} has no option "
                    f"{key!r} (its options: {known})"
                )
            opts[key] = _check_value(name, key, value, entry.defaults[key], where)
        out[name] = (opts, severity)
    return out


def selected_rules(registry: Registry, options: RuleOptions, cfg: RuleConfig) -> list[Rule]:
    """Instances of the rules to run, in registry order, with configured options."""
    settings = configured(registry, cfg)
    select = registry.resolve(options.select or cfg.select, "--select")
    ignore = set(registry.resolve([*cfg.ignore, *options.ignore], "--ignore"))
    chosen = [n for n in registry.entries if (not select or n in select) and n not in ignore]
    rules = []
    for name in chosen:
        opts, severity = settings.get(name, ({}, None))
        rules.append(registry.entries[name].make(opts, severity))
    return rules


def run_selected(analysis: Analysis, rules: list[Rule]) -> list[Finding]:
    """Run ``rules`` on one shared context; failures become error findings."""
    ctx = RuleContext(analysis)
    findings: list[Finding] = []
    for rule in rules:
        try:
            found = list(rule.check(ctx) or [])
            if rule.level == type(rule).severity:  # not set by configuration: grade by cost
                for f in found:
                    grade_by_impact(f, analysis.typical_iteration_ms)
            findings.extend(found)
        except AnalysisError:  # a fact of the analysis failed: a bug, not the rule's
            raise
        except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the rest
            findings.append(_failure(rule, exc))
    order = {id(f): i for i, f in enumerate(findings)}
    return sorted(findings, key=lambda f: (-severity_rank(f.severity), order[id(f)]))


#: A finding that costs less than this share of the typical iteration is ``info``; one that
#: costs at least ``WARNING_SHARE`` is at least ``warning``.
INFO_BELOW_SHARE = 0.02
WARNING_SHARE = 0.10


def grade_by_impact(f: Finding, typical_ms: float) -> None:
    """Severity follows cost: a finding about time that costs under 2% of the typical
    iteration is info, one of 10% or more at least a warning (an error stays an error)."""
    impact = f.impact_ms_per_iteration
    if impact is None or typical_ms <= 0 or f.severity == "error":
        return
    share = impact / typical_ms
    if share < INFO_BELOW_SHARE:
        f.severity = "info"
    elif share >= WARNING_SHARE:
        f.severity = "warning"


def _failure(rule: Rule, exc: Exception) -> Finding:
    where = getattr(rule, "source", "")
    return Finding(
        rule=rule.rule_name,
        code=rule.rule_code,
        severity="error",
        message=f"rule {rule.rule_name} failed while running ({where}): "
        f"{type(exc).__name__}: {exc}",
        data={"rule_error": True, "exception": type(exc).__name__},
    )


def run_rules(analysis: Analysis, options: RuleOptions) -> list[Finding]:
    """All findings of the selected rules, most severe first."""
    cfg = load_config(options.config_path, options.search_config)
    registry = build_registry(options, cfg)
    return run_selected(analysis, selected_rules(registry, options, cfg))


def rule_options(rule: Rule) -> Mapping[str, Any]:
    """The effective options of a rule instance."""
    return dict(rule.options)
