"""``dnnlens machine probe|show``: measure this machine, or show a machine model.

``probe`` runs a stream-like copy and a numpy GEMM (a few seconds) and writes a profile
that ``analyze``, ``run`` and ``project`` take with ``--machine``; ``show LOG`` prints the
model ``analyze`` would use for that log, with how each value is known.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dnnlens.errors import fail

if TYPE_CHECKING:
    from dnnlens.analysis.machine import Machine


class MachineFormat(StrEnum):
    """Output formats of ``machine probe`` and ``machine show``."""

    terminal = "terminal"
    json = "json"


machine_app = typer.Typer(
    name="machine",
    help="The machine model of the roofline: probe this machine, show one.",
    no_args_is_help=True,
    add_completion=False,
)


def _print(m: Machine) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from dnnlens.textsafe import safe

    def shown(text: object) -> str:  # a CPU name from a log header, a profile's text
        return escape(safe(text))

    table = Table(title=f"Machine: {shown(m.name)}")
    for col in ("field", "value", "source"):
        table.add_column(col)
    for name, value, source in m.summary():
        table.add_row(name, shown(value), shown(source))
    console = Console()
    console.print(table)
    for key, value in m.measured.items():
        console.print(f"measured {shown(key)}: {shown(value)}", highlight=False)


@machine_app.command("probe")
def probe(
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the profile here (.toml or .json)."
    ),
    seconds: float = typer.Option(
        3.0, "--seconds", min=0.2, max=60.0, help="Time budget of the measurements."
    ),
    fmt: MachineFormat = typer.Option(
        MachineFormat.terminal, "--format", "-f", help="Output format."
    ),
) -> None:
    """Measure this machine: copy bandwidth and f32 GEMM rate (numpy), a few seconds."""
    from dnnlens.analysis.machine import probe_machine, save_machine

    m = probe_machine(seconds)
    if output and str(output) == "-":  # -o -: the profile (JSON) on standard output
        typer.echo(json.dumps(m.to_dict(), indent=2))
        return
    if output:
        save_machine(m, output)
    if fmt is MachineFormat.json:
        typer.echo(json.dumps(m.to_dict(), indent=2))
    else:
        _print(m)
        if output:
            typer.echo(f"profile written to {output}; use it with --machine {output}")


@machine_app.command("show")
def show(
    log: str | None = typer.Argument(None, help="A log: show the model of its header."),
    machine: Path | None = typer.Option(None, "--machine", help="A profile file to show."),
    fmt: MachineFormat = typer.Option(
        MachineFormat.terminal, "--format", "-f", help="Output format."
    ),
) -> None:
    """Show a machine model: a profile file, a log header's, or this machine's (not probed)."""

    from dnnlens.analysis.machine import load_machine, local_machine, machine_for_log

    try:
        if machine:
            m = load_machine(machine)
        elif log:
            from dnnlens.reading import load

            parsed = load([log])
            if not parsed.scans or parsed.input_errors:
                raise ValueError("; ".join(parsed.input_errors) or f"cannot read {log}")
            m = machine_for_log(parsed)
        else:
            m = local_machine()
    except ValueError as exc:
        raise fail(str(exc)) from None
    if fmt is MachineFormat.json:
        typer.echo(json.dumps(m.to_dict(), indent=2))
    else:
        _print(m)


def register(app: typer.Typer) -> None:
    """Add the ``machine`` command group to the command line."""
    from dnnlens.cli import _last_resort

    for command in machine_app.registered_commands:
        command.callback = _last_resort(command.callback)
    app.add_typer(machine_app, name="machine")
