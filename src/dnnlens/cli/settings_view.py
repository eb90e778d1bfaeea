"""``dnnlens analyze --show-settings``: the settings a command would use and where each
came from (ruff's ``--show-settings``, pytest's ``configfile:`` line), without reading any
input.

It prints the configuration file (named with ``--config``, found by searching the current
directory and its parents, or none), the options of the analysis and of the report, and
every rule that would run: its code, name, severity, where it is defined (built in, a plugin,
a rule file) and its options, each marked with the configuration line that set it; then the
rules left out and why. A setting that is wrong is the one-line error the command would
give (exit 2); else exit 0.
"""

from __future__ import annotations

from typing import Any

from dnnlens.errors import EXIT_OK, EXIT_USAGE, say
from dnnlens.textsafe import safe


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return safe(value)


def settings_text(paths: list[str], options: Any) -> str:
    """The text ``--show-settings`` prints (module docstring)."""
    from dnnlens.rules.config import load_config
    from dnnlens.rules.engine import build_registry, configured, selected_rules

    s = options.settings
    rule_options = options.rule_options()
    cfg = load_config(rule_options.config_path, rule_options.search_config)
    registry = build_registry(rule_options, cfg)
    chosen = selected_rules(registry, rule_options, cfg)
    settings = configured(registry, cfg)
    if cfg.path is None:
        source = "none (no dnnlens.toml or pyproject.toml with [tool.dnnlens] found)"
    elif cfg.searched:
        source = f"{safe(cfg.path)} (found from the current directory)"
    else:
        source = f"{safe(cfg.path)} (--config)"
    lines = [
        f"configfile: {source}",
        "inputs: " + ", ".join(safe(p) for p in paths),
        "analysis:",
        f"  window: {_value(s.window)} events (0: all)",
        f"  skip-iterations: {_value(s.skip_iterations)}",
        f"  iteration-marker: {_value(s.iteration_marker)}",
        f"  combine: {_value(s.combine)}",
        "  machine: " + ("the log header's" if s.machine is None else "--machine profile"),
        "report:",
        f"  format: {options.fmt.value}",
        "  output: " + ("standard output" if options.output is None else safe(options.output)),
        f"  fail-on: {options.fail_on.value}",
        f"  exit-zero: {_value(options.exit_zero)}",
        f"  strict: {_value(options.strict)}",
        f"  statistics: {_value(options.statistics)}",
        f"  baseline: {_value(options.baseline)}",
        f"  write-baseline: {_value(options.write_baseline)}",
    ]
    if cfg.rule_files_written:
        lines.append("rule-files: " + ", ".join(cfg.where(f) for f in cfg.rule_files_written))
    if rule_options.rule_paths:
        lines.append("--rules: " + ", ".join(safe(p) for p in rule_options.rule_paths))
    lines.append(f"rules ({len(chosen)} of {len(registry.entries)} run):")
    for rule in chosen:
        name = rule.rule_name
        entry = registry.entries[name]
        configured_opts, severity = settings.get(name, ({}, None))
        sev = rule.level + (f" ({cfg.where(f'rules.{name}')})" if severity else "")
        opts = []
        for key, value in sorted(rule.options.items()):
            mark = f" ({cfg.where_option(name, key)})" if key in configured_opts else ""
            opts.append(f"{key}={_value(value)}{mark}")
        lines.append(
            f"  {safe(rule.rule_code):<8} {safe(name)}  {sev}  from {safe(entry.source)}"
            + (f"; {'; '.join(opts)}" if opts else "")
        )
    left = [n for n in registry.entries if n not in {r.rule_name for r in chosen}]
    if left:
        why = "--select" if rule_options.select else ("select" if cfg.select else "")
        reason = f"not in {why}" if why else "ignored"
        lines.append(f"left out ({len(left)}, {reason} or ignored):")
        lines.extend(f"  {safe(registry.entries[n].code):<8} {safe(n)}" for n in left)
    return "\n".join(lines) + "\n"


def show_settings(paths: list[str], options: Any) -> int:
    """Print :func:`settings_text` (exit 0), or the settings' problem (exit 2)."""
    from dnnlens.cli.pipeline import check_options
    from dnnlens.rules.errors import RuleSetupError

    problem = check_options(options)
    if problem is not None:
        say("error", problem)
        return EXIT_USAGE
    try:
        text = settings_text(paths, options)
    except RuleSetupError as exc:
        say("error", str(exc))
        return EXIT_USAGE
    print(text, end="")
    return EXIT_OK
