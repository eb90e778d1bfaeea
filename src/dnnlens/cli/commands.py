"""CLI sub-commands, one module each, registered by ``dnnlens.cli``.

Each module defines ``register(app: typer.Typer) -> None``. Modules are imported at start-up
to build the command line, so they import nothing heavy (pandas, lark, torch) at module
level: do that inside the command function.
"""

#: Modules whose ``register`` is called, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "dnnlens.cli.run",
    "dnnlens.cli.capture",
    "dnnlens.cli.graph",
    "dnnlens.cli.export",
    "dnnlens.cli.fleet",
    "dnnlens.cli.diff",
    "dnnlens.cli.rules",
    "dnnlens.cli.project",
    "dnnlens.cli.machine",
)
