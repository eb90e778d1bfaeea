"""Test configuration: hypothesis runs derandomized under CI.

Locally, property tests explore new random examples on every run (and find bugs, as they
should); under CI (``CI`` set, as ``.ci/run`` runs) the same examples are drawn each time,
so a red CI means a change broke something, not that the dice found something new.

No test takes a log for one made on the machine the tests run on (``_no_host_cpu``): the
peaks of the sample logs do not depend on the CPU of whoever runs the tests.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _no_host_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a machine whose CPU names no ISA, so no log is taken for one made
    here: a log's peak would otherwise follow the CPU the tests run on (its clock from
    /proc/cpuinfo, see ``dnnlens.analysis.machine.made_here``). Tests of that path set
    ``this_cpu`` themselves."""
    import dnnlens.analysis.machine as machine

    monkeypatch.setattr(machine, "this_cpu", lambda: None)
