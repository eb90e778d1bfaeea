"""Write docs/example.ipynb: dnnlens from Python, on the bundled sample logs.

The notebook is kept without outputs in git; tests/test_notebook.py runs it in a kernel.
Run from the repository root: ``python scripts/make_example_notebook.py``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

CELLS = [
    (
        "markdown",
        "# dnnlens from Python\n\n"
        "`dnnlens.analyze`, `dnnlens.diff` and `dnnlens.project` do what the commands of the "
        "same name do, on the logs bundled in `sample_logs/` (run from the repository root or "
        "from `docs/`).",
    ),
    (
        "code",
        "from pathlib import Path\n\n"
        "import dnnlens\n\n"
        "root = Path.cwd() if Path('sample_logs').is_dir() else Path.cwd().parent\n"
        "nchw = root / 'sample_logs' / 'convnet_nchw_infer.log'\n"
        "channels_last = root / 'sample_logs' / 'convnet_cl_infer.log'",
    ),
    ("markdown", "The verdict first: findings ranked by what their fix would save per iteration."),
    (
        "code",
        "report = dnnlens.analyze(nchw)\n"
        "for f in report.findings:\n"
        "    print(f'{f.impact_ms_per_iteration:6.3f} ms  {f.rule}: {f.fix[:60]}')",
    ),
    ("markdown", "The tables behind it are pandas frames."),
    (
        "code",
        "report.primitives[['kind', 'impl', 'count', 'time_ms', 'efficiency']]"
        ".sort_values('time_ms', ascending=False).head()",
    ),
    ("markdown", "The same data as `dnnlens analyze --format json`:"),
    ("code", "sorted(report.to_dict())"),
    ("markdown", "Two runs compared, and what an iteration would cost without each cause:"),
    (
        "code",
        "d = dnnlens.diff(nchw, channels_last)\n"
        "print(f'NEW is {-100 * d.slower_fraction:.0f}% faster per iteration than BASE')\n"
        "projection = dnnlens.project(nchw)\n"
        "projection.to_dict()['changes'][0]",
    ),
    ("markdown", "In Jupyter the report itself shows as the HTML page:"),
    ("code", "report"),
]


def notebook() -> nbformat.NotebookNode:
    """The example notebook, without outputs."""
    nb = nbformat.v4.new_notebook()
    make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb.cells = [make[kind](text) for kind, text in CELLS]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


if __name__ == "__main__":
    nbformat.write(notebook(), Path("docs/example.ipynb"))
