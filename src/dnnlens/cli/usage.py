"""Usage errors as one line, and help that never breaks a token, for every command.

click and typer print a usage error as a box of five or six lines (usage, a hint, a framed
message); a user who typed ``--bogus`` needs one: ``dnnlens: error: no such option --bogus
(did you mean --jobs?)``, exit 2. Help is click's plain layout, which wraps between words
and puts a long option on a line of its own, instead of rich's table, which folds a
metavar inside its column (``<terminal|json|htm`` then ``l>``) at 80 columns and imports
rich for ``--help``. Light on purpose (click and typer only): imported at start-up.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from difflib import get_close_matches
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer 0.24 and later: its own copy of click, whose exceptions it raises
    from typer import _click as click
except ImportError:  # pragma: no cover - an older typer, on click itself
    import click  # type: ignore[no-redef]

from dnnlens.errors import EXIT_USAGE, say

cx = click.exceptions


class UsageGroup(TyperGroup):
    """The root command: runs the command line, says a usage error as one line (exit 2)."""

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, *extra_args: Any, **extra: Any
    ) -> Any:
        """Like click's ``main``, but a usage error is one ``dnnlens: error:`` line."""
        plain_help(self)
        if extra.get("standalone_mode", True) is False or extra_args:
            return super().main(args, *extra_args, **extra)
        extra["standalone_mode"] = False
        try:
            code = super().main(args, **extra)
        except cx.NoArgsIsHelpError as exc:  # ``dnnlens`` alone: the help
            typer.echo(exc.ctx.get_help() if exc.ctx else "")
            sys.exit(EXIT_USAGE)
        except cx.ClickException as exc:
            say("error", one_line(exc))
            sys.exit(exc.exit_code if exc.exit_code else EXIT_USAGE)
        except typer.Abort:
            say("error", "aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def plain_help(group: Any) -> None:
    """Every command below ``group`` writes click's plain help (see the module's doc);
    help text written for rich's markup loses its escapes (``\\[tool.dnnlens]``)."""
    for command in _commands(group):
        command.rich_markup_mode = None  # type: ignore[attr-defined]
        command.context_class = _plain_context(command.context_class)
        for text in ("help", "short_help", "epilog"):
            value = getattr(command, text, None)
            if isinstance(value, str):
                setattr(command, text, value.replace("\\[", "["))
        for param in command.params:
            value = getattr(param, "help", None)
            if isinstance(value, str):
                param.help = value.replace("\\[", "[")  # type: ignore[attr-defined]


class WholeWords(click.HelpFormatter):
    """click's help layout, which wraps a line at a hyphen too (``dnnlens-`` then
    ``runs/``): a hyphen inside a word is held as a non-breaking one while it wraps."""

    def write_text(self, text: str) -> None:
        start = len(self.buffer)
        super().write_text(_hold(text))
        self._release(start)

    def write_dl(self, rows: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        start = len(self.buffer)
        super().write_dl([(term, _hold(text)) for term, text in rows], *args, **kwargs)
        self._release(start)

    def _release(self, start: int) -> None:
        self.buffer[start:] = [part.replace(_NB_HYPHEN, "-") for part in self.buffer[start:]]


_NB_HYPHEN = "\u2011"
_INNER_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")


def _hold(text: str) -> str:
    return _INNER_HYPHEN.sub(_NB_HYPHEN, text)


_PLAIN_CONTEXTS: dict[type, type] = {}


def _plain_context(base: type) -> type:
    """``base`` (a command's context class) writing its help with :class:`WholeWords`."""
    if getattr(base, "formatter_class", None) is WholeWords:
        return base
    if base not in _PLAIN_CONTEXTS:
        _PLAIN_CONTEXTS[base] = type(base.__name__, (base,), {"formatter_class": WholeWords})
    return _PLAIN_CONTEXTS[base]


def _commands(command: Any) -> list[Any]:
    found = [command]
    for sub in getattr(command, "commands", {}).values():
        found.extend(_commands(sub))
    return found


_NO_SUCH_COMMAND = re.compile(r"No such command (['\"])(?P<name>.*)\1\.")
_NOT_A_NUMBER = re.compile(r"is not a valid (?:int|integer)(?: range)?\.?$")
_NOT_A_FLOAT = re.compile(r"is not a valid float(?: range)?\.?$")


def one_line(exc: cx.ClickException) -> str:
    """``exc`` said in one line, lower case, with what the user probably meant."""
    if isinstance(exc, cx.NoSuchOption):
        return f"no such option {exc.option_name}{_did_you_mean(exc.possibilities or [])}"
    if isinstance(exc, cx.UsageError) and exc.ctx is not None:
        match = _NO_SUCH_COMMAND.match(exc.message)
        if match:
            name = match["name"]
            commands = list(getattr(exc.ctx.command, "commands", {}))
            where = exc.ctx.command_path
            hint = _did_you_mean(get_close_matches(name, commands))
            return f"no such command {name!r} in {where}" + (
                hint or f" ({where} --help lists them)"
            )
    if isinstance(exc, cx.MissingParameter):
        return f"{_first_lower(exc.format_message())} ({_help_of(exc)})"
    if isinstance(exc, cx.BadParameter) and exc.param is not None:
        return _bad_value(exc)
    text = _first_lower(exc.format_message())
    return f"{text} ({_help_of(exc)})" if exc.ctx is not None else text


def _bad_value(exc: cx.BadParameter) -> str:
    param = exc.param
    assert param is not None
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(
        getattr(param, "opts", [])
    )
    name = opts[0] if opts and param.param_type_name == "option" else param.human_readable_name
    message = _NOT_A_NUMBER.sub("is not a whole number", exc.message.strip())
    message = _NOT_A_FLOAT.sub("is not a number", message).rstrip(".")
    choices = getattr(param.type, "choices", None)
    hint = ""
    if choices:
        given = _given(message)
        words = [str(getattr(c, "value", c)) for c in choices]
        hint = _did_you_mean(get_close_matches(given, words)) if given else ""
    return f"invalid value for {name}: {message}{hint}"


def _given(message: str) -> str:
    match = re.match(r"(['\"])(?P<value>.*?)\1 is not", message)
    return match["value"] if match else ""


def _did_you_mean(names: Sequence[str]) -> str:
    if not names:
        return ""
    return f" (did you mean {' or '.join(names[:3])}?)"


def _help_of(exc: cx.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    return f"{ctx.command_path} --help shows the usage" if ctx else "--help shows the usage"


def _first_lower(text: str) -> str:
    text = re.sub(r"'(-[-\w]+)'", r"\1", " ".join(text.split()).rstrip("."))
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text.replace("'", "") if text.startswith("missing ") else text
