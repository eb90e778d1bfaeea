"""Test configuration: hypothesis runs derandomized under CI.

Locally, property tests explore new random examples on every run (and find bugs, as they
should); under CI (``CI`` set, as ``.ci/run`` runs) the same examples are drawn each time,
so a red CI means a change broke something, not that the dice found something new.

No test takes a log for one made on the machine the tests run on (``_no_host_cpu``): the
peaks of the sample logs do not depend on the CPU of whoever runs the tests.

``CliRunner.invoke`` builds the command tree of the typer app on every call (about 70 ms
for dnnlens's); the tests invoke the command line in-process over a thousand times, so the
tree is built once per app (click commands are made to be invoked again).

Tests are spread over processes by xdist group (``--dist loadgroup``, ``pyproject.toml``):
a test file is its own group, so its module fixtures are built once, unless it names a
group it shares with other files (``pytestmark = pytest.mark.xdist_group(...)``), such as
the files that share the JSON reports of ``tests/shared_analyses.py``.

What is alive once the tests are collected (pytest, pandas, the analysis stack, hypothesis:
about 220,000 objects) is frozen out of the cyclic garbage collector: each full
collection otherwise walks all of it again, while a test builds millions of small objects
(an analysis, a trace's JSON), and those collections were a sixth to a fifth of the CPU of
the heavier test files.
"""

from __future__ import annotations

import gc
import os

import pytest
import typer.testing
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

_built: dict[int, tuple[object, object]] = {}
_build = typer.testing._get_command


def _command_once(app: object) -> object:
    """The click command of ``app``, built on its first invocation."""
    held = _built.get(id(app))
    if held is None or held[0] is not app:
        held = _built[id(app)] = (app, _build(app))
    return held[1]


typer.testing._get_command = _command_once


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection left alive (see above): it is never garbage."""
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test without an xdist group joins its file's (before xdist reads the groups)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.name))


@pytest.fixture(autouse=True)
def _no_host_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a machine whose CPU names no ISA, so no log is taken for one made
    here: a log's peak would otherwise follow the CPU the tests run on (its clock from
    /proc/cpuinfo, see ``dnnlens.analysis.machine.made_here``). Tests of that path set
    ``this_cpu`` themselves."""
    import dnnlens.analysis.machine as machine

    monkeypatch.setattr(machine, "this_cpu", lambda: None)
