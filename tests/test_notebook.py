"""docs/example.ipynb runs from start to end in a real kernel, as a reader would run it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "example.ipynb"


def test_the_notebook_is_what_its_script_writes():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from make_example_notebook import notebook
    finally:
        sys.path.pop(0)
    stored = nbformat.read(NOTEBOOK, as_version=4)
    assert [c.source for c in stored.cells] == [c.source for c in notebook().cells]
    assert all(not c.get("outputs") for c in stored.cells if c.cell_type == "code")


def test_the_notebook_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the kernel is this interpreter (with this checkout's dnnlens), started in docs/
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute(cwd=str(NOTEBOOK.parent))
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "layout-round-trip" in text and "faster per iteration" in text
    # the last cell shows the report as HTML
    last = nb.cells[-1].outputs[-1]
    assert "text/html" in last["data"] and "iframe" in last["data"]["text/html"]
