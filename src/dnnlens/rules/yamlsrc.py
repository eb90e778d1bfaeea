"""Reading YAML and TOML rule files with the line number of every key (for error messages).

A rule file is small, so what it may hold is bounded: :data:`MAX_FILE_BYTES` of text,
:data:`MAX_DEPTH` levels of nesting, :data:`MAX_VALUES` values in all once aliases are
expanded and :data:`MAX_ALIAS_USES` uses of an alias ("billion laughs": a few lines whose
aliases expand to a billion values), text keys only. A breach is one
:class:`RuleSetupError`, before anything is built.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dnnlens.rules.errors import RuleSetupError

if TYPE_CHECKING:  # yaml is imported when a YAML rule file is read (start-up stays light)
    import yaml

MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_VALUES = 100_000
MAX_ALIAS_USES = 1_000


class _Limits:
    """What one document has used of the limits while it is built."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.values = 0
        self.alias_uses = 0
        self.seen: set[int] = set()

    def visit(self, node: yaml.Node, depth: int) -> None:
        import yaml

        line = node.start_mark.line + 1
        if depth > MAX_DEPTH:
            raise RuleSetupError(f"{self.path}:{line}: nested more than {MAX_DEPTH} levels deep")
        self.values += 1
        if self.values > MAX_VALUES:
            raise RuleSetupError(
                f"{self.path}:{line}: more than {MAX_VALUES:,} values (aliases expanded): "
                "not a rule file"
            )
        if isinstance(node, yaml.ScalarNode):
            return
        if id(node) in self.seen:  # a node met again: an alias
            self.alias_uses += 1
            if self.alias_uses > MAX_ALIAS_USES:
                raise RuleSetupError(
                    f"{self.path}:{line}: aliases used more than {MAX_ALIAS_USES:,} times"
                )
        else:
            self.seen.add(id(node))


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


def _build(node: yaml.Node, loader: yaml.SafeLoader, limits: _Limits, depth: int = 0) -> Any:
    import yaml

    limits.visit(node, depth)
    if isinstance(node, yaml.MappingNode):
        out = LocDict()
        out.line, out.lines = node.start_mark.line + 1, {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                line = key_node.start_mark.line + 1
                raise RuleSetupError(f"{limits.path}:{line}: a key must be text")
            key = str(loader.construct_object(key_node, deep=True))
            out[key] = _build(value_node, loader, limits, depth + 1)
            out.lines[key] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = LocList(_build(v, loader, limits, depth + 1) for v in node.value)
        seq.line, seq.lines = node.start_mark.line + 1, [v.start_mark.line + 1 for v in node.value]
        return seq
    return loader.construct_object(node, deep=True)


_FLOW_MARKS = re.compile(r"[\[\]{}\"'#\n\\]")


def _flow_too_deep(text: str) -> int | None:
    """The line where ``[``/``{`` nesting first passes :data:`MAX_DEPTH`, else None.

    PyYAML's scanner keeps a possible key per flow level and looks at all of them at every
    token, so 5,000 ``[`` take it seconds (the time grows with the square of the depth)
    before its composer would hit the depth limit: the brackets are counted first, in one
    pass over the text, outside quoted scalars and comments."""
    depth, line, quote = 0, 1, ""
    for m in _FLOW_MARKS.finditer(text):
        c = m.group()
        if c == "\n":
            line += 1
            if quote == "#":
                quote = ""
        elif quote == "#":
            pass
        elif quote:
            if c == "\\" and quote == '"':
                pass  # an escape: the next quote mark is not the end (approximately)
            elif c == quote:
                quote = ""
        elif c == "#":
            start = m.start()
            if start == 0 or text[start - 1] in " \t\n":
                quote = "#"
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif c in "]}":
            depth = max(depth - 1, 0)
    return None


def load_yaml(text: str, path: str) -> Any:
    """The document of ``text`` with line numbers, or RuleSetupError naming file and line."""
    import yaml

    too_deep = _flow_too_deep(text)
    if too_deep is not None:
        raise RuleSetupError(f"{path}:{too_deep}: nested more than {MAX_DEPTH} levels deep")
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # refuses control characters already
        node = loader.get_single_node()
        return None if node is None else _build(node, loader, _Limits(path))
    except RecursionError:  # PyYAML composes nested collections recursively
        raise RuleSetupError(f"{path}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # a scalar PyYAML cannot make: an integer of 5,000 digits
        raise RuleSetupError(f"{path}: a value cannot be read: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise RuleSetupError(f"{path}:{line}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise RuleSetupError(f"{path}: not valid YAML: {detail}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_toml(text: str, path: str) -> Any:
    """The document of a TOML file, with line numbers found by searching the text."""
    data = parse_toml(text, path)
    return _locate_toml(data, text.splitlines())


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """``tomllib.loads`` whose every failure is a RuleSetupError (deep nesting too)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleSetupError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise RuleSetupError(f"{path}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # an integer of 5,000 digits
        raise RuleSetupError(f"{path}: a value cannot be read: {exc}") from None
    if _toml_depth(data) > MAX_DEPTH:
        raise RuleSetupError(f"{path}: nested more than {MAX_DEPTH} levels deep")
    return data


def _toml_depth(data: Any) -> int:
    deepest, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


def read_text(path: str, what: str) -> str:
    """The UTF-8 text of a small file (a rule file, a configuration), or RuleSetupError."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RuleSetupError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise RuleSetupError(f"{path}: the {what} is over {MAX_FILE_BYTES >> 20} MiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RuleSetupError(f"{path}: the {what} is not UTF-8 text") from None


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
    text = read_text(path, "rule file")
    if p.suffix.lower() == ".toml":
        return load_toml(text, path)
    return load_yaml(text, path)
