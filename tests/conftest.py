"""Test configuration: hypothesis runs derandomized under CI.

Locally, property tests explore new random examples on every run (and find bugs, as they
should); under CI (``CI`` set, as ``.ci/run`` runs) the same examples are drawn each time,
so a red CI means a change broke something, not that the dice found something new.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
