"""One-line messages on stderr and the exit codes every command uses.

Light on purpose (typer only): command modules import it at start-up. Messages are never
read as markup, never wrapped, and control characters are shown as escapes
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
    """``dnnlens: <kind>: <message>`` as one line on stderr (kind: error, note, ...)."""
    color = "yellow" if kind == "note" else "red"
    typer.echo(typer.style(f"dnnlens: {kind}:", fg=color) + f" {safe(message)}", err=True)


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Say ``message`` as an error and return the ``typer.Exit`` to raise (exit 2)."""
    say("error", message)
    return typer.Exit(code)
