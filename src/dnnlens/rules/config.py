"""Rule configuration from ``pyproject.toml`` ``[tool.dnnlens]``, ``dnnlens.toml`` or ``--config``.

::

    [tool.dnnlens]                       # in dnnlens.toml the prefix may be left out
    select = ["reorder-overhead", "DL002"]
    ignore = ["tiny-primitives"]
    rule-files = ["ci/dnnlens_rules.yaml"]   # relative to the config file

    [tool.dnnlens.rules.reorder-overhead]
    share = 0.2                          # a threshold of that rule
    severity = "error"                   # its severity

Without ``--config`` the current directory and its parents are searched; the first
``dnnlens.toml``, or ``pyproject.toml`` that has a ``[tool.dnnlens]`` table, wins.

A configuration found by that search is anyone's file (a checkout, a parent directory,
``/tmp``), so its ``rule-files`` may name rule files (YAML, TOML: data) but not Python
plugins: running one takes ``--rules FILE`` or a configuration named with ``--config``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnnlens.rules.errors import RuleSetupError
from dnnlens.rules.yamlsrc import parse_toml, read_text

_TOP_KEYS = {"select", "ignore", "rule-files", "rules"}


@dataclass
class RuleConfig:
    """What a configuration file says about rules."""

    path: str | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    rule_files: list[str] = field(default_factory=list)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    text: str = ""
    #: Found by searching the current directory and its parents, not named by the user.
    searched: bool = False
    #: ``rule-files`` as written in the file (for messages), beside the resolved paths.
    rule_files_written: list[str] = field(default_factory=list)

    def line_of(self, needle: str) -> int | None:
        """1-based line of the first line containing ``needle`` (for error messages)."""
        for i, line in enumerate(self.text.splitlines(), 1):
            if needle in line:
                return i
        return None

    def where(self, needle: str) -> str:
        """``path:line`` of ``needle`` (``path`` alone when not found)."""
        line = self.line_of(needle)
        return f"{self.path}:{line}" if line else str(self.path)

    def where_option(self, rule: str, key: str) -> str:
        """``path:line`` of the line setting ``key`` in the table of ``rule`` (the first
        after the table's header: another rule's table may set a key of the same name),
        else of the table."""
        lines = self.text.splitlines()
        start = (self.line_of(f"rules.{rule}") or 1) - 1
        for i in range(start, len(lines)):
            if lines[i].strip().startswith((f"{key} ", f"{key}=")):
                return f"{self.path}:{i + 1}"
        return self.where(f"rules.{rule}")


def find_config(start: Path | None = None) -> Path | None:
    """The configuration file that applies in ``start`` (default: the current directory)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "dnnlens.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        data = parse_toml(read_text(str(path), "configuration"), str(path))
    except RuleSetupError:
        return False
    return isinstance(data.get("tool"), dict) and "dnnlens" in data["tool"]


def load_config(path: str | None, search: bool = True) -> RuleConfig:
    """Read ``path`` (or the file :func:`find_config` finds); no file gives an empty config."""
    searched = path is None
    if path is None:
        found = find_config() if search else None
        if found is None:
            return RuleConfig()
        path = str(found)
    p = Path(path)
    text = read_text(path, "configuration")
    data = parse_toml(text, path)
    table = data.get("tool", {}).get("dnnlens") if isinstance(data.get("tool"), dict) else None
    if table is None:
        table = {} if p.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise RuleSetupError(f"{path}: [tool.dnnlens] must be a table")
    cfg = RuleConfig(path=str(p), text=text, searched=searched)
    _fill(cfg, table, p)
    return cfg


def _fill(cfg: RuleConfig, table: dict[str, Any], path: Path) -> None:
    for key in table:
        if key not in _TOP_KEYS and key != "tool":
            raise RuleSetupError(
                f"{cfg.where(key)}: unknown key {key!r} in the dnnlens configuration "
                f"(known: {', '.join(sorted(_TOP_KEYS))})"
            )
    for key in ("select", "ignore", "rule-files"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RuleSetupError(f"{cfg.where(key)}: {key} must be a list of strings")
    cfg.select = list(table.get("select", []))
    cfg.ignore = list(table.get("ignore", []))
    cfg.rule_files_written = list(table.get("rule-files", []))
    cfg.rule_files = [str(path.parent / f) for f in cfg.rule_files_written]
    rules = table.get("rules", {})
    if not isinstance(rules, dict) or not all(isinstance(v, dict) for v in rules.values()):
        raise RuleSetupError(f"{cfg.where('rules')}: [rules.NAME] tables expected")
    cfg.rules = {str(k): dict(v) for k, v in rules.items()}
