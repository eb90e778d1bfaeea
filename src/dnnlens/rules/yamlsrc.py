"""Reading YAML and TOML rule files with the line number of every key (for error messages)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from dnnlens.rules.errors import RuleSetupError


class LocDict(dict):
    """A mapping that remembers its own line and the line of each key (1-based)."""

    line: int = 0
    lines: dict[str, int]

    def line_of(self, key: str) -> int:
        """Line of ``key`` (the mapping's own line when the key is absent)."""
        return self.lines.get(key, self.line)


class LocList(list):
    """A list that remembers its own line and the line of each item."""

    line: int = 0
    lines: list[int]


def _build(node: yaml.Node, loader: yaml.SafeLoader) -> Any:
    if isinstance(node, yaml.MappingNode):
        out = LocDict()
        out.line, out.lines = node.start_mark.line + 1, {}
        for key_node, value_node in node.value:
            key = str(loader.construct_object(key_node, deep=True))
            out[key] = _build(value_node, loader)
            out.lines[key] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = LocList(_build(v, loader) for v in node.value)
        seq.line, seq.lines = node.start_mark.line + 1, [v.start_mark.line + 1 for v in node.value]
        return seq
    return loader.construct_object(node, deep=True)


def load_yaml(text: str, path: str) -> Any:
    """The document of ``text`` with line numbers, or RuleSetupError naming file and line."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _build(node, loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise RuleSetupError(f"{path}:{line}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise RuleSetupError(f"{path}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def load_toml(text: str, path: str) -> Any:
    """The document of a TOML file, with line numbers found by searching the text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleSetupError(f"{path}: not valid TOML: {exc}") from None
    return _locate_toml(data, text.splitlines())


def _locate_toml(data: Any, lines: list[str], start: int = 0) -> Any:
    """Attach best-effort line numbers: each table from its name, each key after it."""
    if isinstance(data, dict):
        out = LocDict(data)
        anchor = start
        name = data.get("name")
        if isinstance(name, str):
            for i in range(start, len(lines)):
                stripped = lines[i].replace(" ", "")
                if stripped.startswith("name=") and name in lines[i]:
                    anchor = i
                    break
        out.line, out.lines = anchor + 1, {}
        for key, value in data.items():
            out.lines[key] = _key_line(lines, key, anchor) or anchor + 1
            out[key] = _locate_toml(value, lines, out.lines[key] - 1)
        return out
    if isinstance(data, list):
        seq = LocList()
        seq.line, seq.lines = start + 1, []
        for item in data:
            located = _locate_toml(item, lines, start)
            seq.append(located)
            seq.lines.append(getattr(located, "line", start + 1))
            start = max(start, getattr(located, "line", start + 1))
        return seq
    return data


def _key_line(lines: list[str], key: str, start: int) -> int | None:
    for i in range(start, len(lines)):
        s = lines[i].lstrip()
        if s.startswith((f"{key} ", f"{key}=", f'"{key}"', f"[{key}]", f"[[{key}]]")) or (
            s.startswith("[") and s.rstrip("]").endswith(f".{key}")
        ):
            return i + 1
    return None


def load_document(path: str) -> Any:
    """A YAML (.yaml/.yml) or TOML (.toml) file with line numbers."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleSetupError(f"{path}: cannot read the rule file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RuleSetupError(f"{path}: the rule file is not UTF-8 text") from None
    if p.suffix.lower() == ".toml":
        return load_toml(text, path)
    return load_yaml(text, path)
