"""dnnlens: why is a deep-learning workload slow on a CPU? Read oneDNN verbose logs and find out.

``dnnlens.analyze(paths)``, ``dnnlens.diff(base, new)`` and ``dnnlens.project(log)`` do what
the commands of the same name do and return their reports; ``with dnnlens.capture(...)``
records a program's own block. Each is imported when first used, so ``import dnnlens`` stays
cheap (no pandas, no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dnnlens._version import __version__ as __version__

if TYPE_CHECKING:
    from dnnlens.app.api import (
        DiffReport,
        DnnlensError,
        Evidence,
        Finding,
        InputError,
        ProjectionReport,
        Report,
        analyze,
        diff,
        project,
    )
    from dnnlens.capture import capture

_LAZY = {
    "analyze": "dnnlens.app.api",
    "diff": "dnnlens.app.api",
    "project": "dnnlens.app.api",
    "Report": "dnnlens.app.api",
    "DiffReport": "dnnlens.app.api",
    "ProjectionReport": "dnnlens.app.api",
    "Finding": "dnnlens.app.api",
    "Evidence": "dnnlens.app.api",
    "DnnlensError": "dnnlens.app.api",
    "InputError": "dnnlens.app.api",
    "capture": "dnnlens.capture",
}

__all__ = [
    "DiffReport",
    "DnnlensError",
    "Evidence",
    "Finding",
    "InputError",
    "ProjectionReport",
    "Report",
    "__version__",
    "analyze",
    "capture",
    "diff",
    "project",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dnnlens' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
