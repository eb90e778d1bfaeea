"""One-line messages on stderr and the exit codes every command uses.

Light on purpose (typer only): command modules import it at start-up. Messages are never
read as markup, are wrapped only on a terminal (between words), and control characters are
shown as escapes
(:func:`dnnlens.textsafe.safe`), so a path or command holding ``[/x]`` or a newline prints as
it is.
"""

from __future__ import annotations

import typer

from dnnlens.textsafe import safe

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
#: The output could not be written: disk full, I/O error, standard output closed. Not 2
#: ("fix your command line"): the command was right, the writing failed.
EXIT_OUTPUT = 4
#: Ended by Ctrl-C: 128 + SIGINT, as a shell reports it (SIGTERM's 143 comes from
#: :class:`dnnlens.io.signals.StopRequest`).
EXIT_INTERRUPTED = 130
#: Standard output's reader went away early (``| head``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141


class UsageError(ValueError):
    """A command line that asks for something impossible (an output over an input, an HTML
    page without ``--output``): one line, exit 2. A ``ValueError`` for the callers that
    catch that; a ``ValueError`` that is not one of these is a bug, not a usage error."""


class OutputError(Exception):
    """Writing a report or export failed after it was opened (one line: path and why)."""


def say(kind: str, message: str) -> None:
    """``dnnlens: <kind>: <message>`` on stderr (kind: error, note, ...).

    One line when stderr is a file or a pipe (what ``grep`` and CI logs want); on a terminal,
    wrapped between words at its width with the rest indented, so that the terminal never
    breaks a word in two."""
    import sys

    color = "yellow" if kind in ("note", "warning") else "red"
    head = f"dnnlens: {kind}:"
    lines = _wrapped(f"{head} {safe(message)}", _terminal_width(sys.stderr))
    typer.echo(typer.style(head, fg=color) + lines[0][len(head) :], err=True)
    for line in lines[1:]:
        typer.echo(line, err=True)


def _terminal_width(stream: object) -> int | None:
    """The width of the terminal ``stream`` shows on (``COLUMNS`` first), or None."""
    try:
        if not stream.isatty():  # type: ignore[attr-defined]
            return None
    except (AttributeError, ValueError, OSError):
        return None
    import os

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), 20)
    try:  # the terminal stderr shows on (standard output may be a pipe)
        return max(os.get_terminal_size(stream.fileno()).columns, 20)  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return None


def _wrapped(text: str, width: int | None) -> list[str]:
    """``text`` as lines of at most ``width`` (a word longer than that on a line of its own,
    whole: a path is never cut), or as one line when there is no width."""
    if width is None or len(text) <= width:
        return [text]
    import textwrap

    return textwrap.wrap(
        text, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    ) or [text]


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Say ``message`` as an error and return the ``typer.Exit`` to raise (exit 2)."""
    say("error", message)
    return typer.Exit(code)
