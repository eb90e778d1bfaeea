"""docs/api.md is what scripts/make_api_docs.py writes from today's docstrings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_api_reference_is_current():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from make_api_docs import api_markdown
    finally:
        sys.path.pop(0)
    assert (ROOT / "docs" / "api.md").read_text() == api_markdown(), (
        "docs/api.md is stale: run python scripts/make_api_docs.py"
    )
