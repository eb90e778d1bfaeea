"""``export benchdnn``: benchdnn reproducers of the costliest primitives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dnnlens.analysis.analysis import Analysis
from dnnlens.report.renderers.base import Renderer, RenderOptions


class BenchdnnRenderer(Renderer[Analysis]):
    """benchdnn reproducers of the ``options.top`` costliest primitives
    (:mod:`dnnlens.report.benchdnn`): one text, or one ``<driver>.batch`` file per driver
    when the output is a directory; ``write`` returns the files it wrote."""

    name, extension = "benchdnn", ".txt"

    def render(self, analysis: Analysis, options: RenderOptions) -> str:
        from dnnlens.report.benchdnn import render_batch

        return render_batch(analysis, options.top)

    def write(self, analysis: Analysis, output: Path | None, options: RenderOptions) -> Any:
        from dnnlens.report.benchdnn import batches
        from dnnlens.report.output import emit_text, input_paths, refuse_input

        if output is None or not _is_directory(output):
            emit_text(self.render(analysis, options), output)
            return [output] if output is not None else []
        output.mkdir(parents=True, exist_ok=True)
        written = []
        for driver, text in batches(analysis, options.top).items():
            target = output / f"{driver}.batch"
            refuse_input(target, input_paths(analysis.log))
            emit_text(text, target)
            written.append(target)
        return written


def _is_directory(output: Path) -> bool:
    """A directory given as the output (the command line makes one named ``DIR/``)."""
    return output.is_dir()
