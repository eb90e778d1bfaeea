"""Write docs/api.md, the Python API reference, from the docstrings of ``dnnlens``.

Run from the repository root: ``python scripts/make_api_docs.py``; tests/test_api_docs.py
fails when docs/api.md is not what this writes.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

INTRO = """# Python API

`dnnlens.analyze`, `dnnlens.diff` and `dnnlens.project` read inputs and analyse them through
the same code as the commands of the same name, so a report's `to_dict()` is the JSON the
command prints with `--format json`. [example.ipynb](example.ipynb) runs them on the bundled
sample logs (the test suite runs it too).

```python
import dnnlens

report = dnnlens.analyze(["run.log", "run.trace.json"], skip_iterations=0)
for f in report.findings:  # ranked: highest cost per iteration first
    print(f.rule, f.severity, f.impact_ms_per_iteration, f.share_of_iteration, f.fix)
report.primitives                       # pandas tables: .events, .primitives, .framework_ops
report.to_dict()                        # == dnnlens analyze ... --format json
dnnlens.diff("before.log", "after.log").slower_fraction
dnnlens.project("run.log").to_dict()["changes"]
```

Errors are `dnnlens.InputError` (a `dnnlens.DnnlensError` and a `ValueError`) with the one
line the command would print. This page is written by `scripts/make_api_docs.py` from the
docstrings.
"""

NAMES = ["analyze", "Report", "Finding", "Evidence", "diff", "DiffReport", "project"]
NAMES += ["ProjectionReport", "capture", "DnnlensError", "InputError"]


def _section(name: str, obj: object) -> list[str]:
    target = getattr(obj, "__wrapped__", obj)
    try:
        signature = str(inspect.signature(target))
    except (TypeError, ValueError):
        signature = "(...)"
    shown = callable(obj) and (not inspect.isclass(obj) or dataclasses.is_dataclass(obj))
    out = [f"## `dnnlens.{name}{signature if shown else ''}`", ""]
    out += [inspect.cleandoc(obj.__doc__ or "(no docstring)"), ""]
    if inspect.isclass(obj):
        for attr, value in vars(obj).items():
            if attr.startswith("_") and attr not in ("_repr_html_",):
                continue
            doc = getattr(value, "__doc__", None) or getattr(
                getattr(value, "fget", None), "__doc__", None
            )
            if not doc or attr in ("__init__",):
                continue
            kind = "property" if isinstance(value, property) else "method"
            out += [f"- `{attr}` ({kind}): " + " ".join(inspect.cleandoc(doc).split()), ""]
    return out


def api_markdown() -> str:
    """The whole page."""
    import dnnlens

    lines = [INTRO]
    for name in NAMES:
        lines += _section(name, getattr(dnnlens, name))
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    Path("docs/api.md").write_text(api_markdown())
