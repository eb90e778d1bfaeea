"""``dnnlens rules``: list the rules, explain one, run a rule file's test cases.

Exit codes: 0 done (all cases passed); 1 a test case failed; 2 a usage or rule-setup
error (one line naming the file and line); 3 an internal error (one line). Every text that
comes from a rule file, a plugin or a log is shown terminal-safe (:mod:`dnnlens.textsafe`).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from dnnlens.errors import EXIT_FINDINGS, EXIT_OK
from dnnlens.errors import fail as _error
from dnnlens.textsafe import safe, safe_lines

EXIT_FAILED = EXIT_FINDINGS  # a rule case that failed: a failed gate


def _registry(rules: list[str], config: Path | None):  # noqa: ANN202 - lazy import
    from dnnlens.rules.config import load_config
    from dnnlens.rules.engine import RuleOptions, build_registry, configured

    options = RuleOptions(rule_paths=list(rules), config_path=str(config) if config else None)
    cfg = load_config(options.config_path, options.search_config)
    registry = build_registry(options, cfg)
    return registry, configured(registry, cfg)


def register(app: typer.Typer) -> None:
    """Add the ``rules`` command group to ``app``."""
    from dnnlens.cli import _last_resort

    group = typer.Typer(
        name="rules", help="List, explain and test bottleneck rules.", no_args_is_help=True
    )

    @group.command("list")
    @_last_resort
    def list_rules(
        rules: list[str] = typer.Option([], "--rules", help="Also load this rule file."),
        config: Path | None = typer.Option(None, "--config", help="Configuration file."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List every rule: built-ins, installed plugins and the given rule files."""
        from dnnlens.rules.errors import RuleSetupError

        try:
            registry, _ = _registry(rules, config)
        except RuleSetupError as exc:
            raise _error(str(exc)) from None
        rows = [
            {
                "name": e.name,
                "code": e.code,
                "severity": e.severity,
                "source": e.source,
                "summary": e.make().summary(),
                "options": dict(e.defaults),
            }
            for e in registry.entries.values()
        ]
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            source = "" if r["source"] == "builtin" else f"  [{safe(r['source'])}]"
            typer.echo(
                f"{safe(r['code']):<7} {safe(r['name']):<{width}}  {safe(r['severity']):<7}  "
                f"{safe(r['summary'])}{source}"
            )

    @group.command("explain")
    @_last_resort
    def explain(
        name: str = typer.Argument(..., help="Rule name or code."),
        rules: list[str] = typer.Option([], "--rules", help="Also load this rule file."),
        config: Path | None = typer.Option(None, "--config", help="Configuration file."),
    ) -> None:
        """Show a rule's rationale, fix, severity and options."""
        from dnnlens.rules.errors import RuleSetupError

        try:
            registry, settings = _registry(rules, config)
            rule_name = registry.resolve([name], "explain")[0]
        except RuleSetupError as exc:
            raise _error(str(exc)) from None
        entry = registry.entries[rule_name]
        opts, severity = settings.get(rule_name, ({}, None))
        rule = entry.make(opts, severity)
        typer.echo(f"{safe(entry.code)} {safe(entry.name)} ({rule.level}; {safe(entry.source)})\n")
        typer.echo(safe_lines(rule.describe()))
        if rule.options:
            typer.echo("\nOptions ([tool.dnnlens.rules." + safe(entry.name) + "]):")
            for key, value in rule.options.items():
                default = entry.defaults.get(key)
                note = "" if value == default else f" (default {safe(repr(default))})"
                typer.echo(f"  {safe(key)} = {safe(repr(value))}{note}")

    @group.command("test")
    @_last_resort
    def test(
        rulefile: Path = typer.Argument(..., help="Test cases (or a rule file with tests:)."),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every finding."),
    ) -> None:
        """Run test cases: a log snippet in, expected findings out. Exit 1 if any fails."""
        from dnnlens.rules.errors import RuleSetupError
        from dnnlens.rules.testing import run_test_file

        try:
            results = run_test_file(str(rulefile))
        except RuleSetupError as exc:
            raise _error(str(exc)) from None
        for r in results:
            typer.echo(f"{'PASS' if r.passed else 'FAIL'} {safe(r.name)}")
            for problem in r.problems:
                typer.echo(f"     {safe(problem)}")
            if verbose:
                for f in r.findings:
                    typer.echo(f"     - {safe(f.rule)} ({f.severity}): {safe(f.message)}")
        failed = sum(not r.passed for r in results)
        typer.echo(f"{len(results) - failed} passed, {failed} failed")
        raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)

    app.add_typer(group)
