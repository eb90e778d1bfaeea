"""A baseline of accepted findings: ``--write-baseline FILE`` records them, ``--baseline
FILE`` leaves them out, so a CI gate fails only on findings that are new.

A finding is keyed by its rule (code, else name) and the identity of the primitives its
evidence points at: for a verbose line, its kind, implementation, propagation kind, memory
descriptors, attributes and problem (everything but its time, which changes from run to
run, and its line number, which changes with the program's output); for a profiler trace's
evidence, the framework op. A finding is in the baseline when an entry of the same rule
shares one primitive with it (both without primitives: the rule alone), so a finding whose
evidence moved to another line, or lists one more primitive, is still the known one, while
a reorder on a new shape is new. When the inputs are several runs, the run's name
(:func:`dnnlens.analysis.runs.stem` of it) must match too; a single run matches whatever it
is called (``dnnlens run`` names each log by its date).

The file is JSON (``{"dnnlens_baseline": 1, "findings": [{"rule", "run", "primitives",
"message"}]}``, the message only for a reader), sorted, so a baseline in a repository
changes only where the findings do. Left-out findings are counted in a note of the run's
report; they are in no format and no gate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dnnlens.app.session import Outcome, SessionError

FORMAT_VERSION = 1
_IDENTITY = ("kind", "impl", "prop_kind", "mds", "attrs", "problem")


def _run_stem(outcome: Outcome, index: int) -> str:
    from dnnlens.analysis.runs import stem

    if index < len(outcome.runs):
        return stem(str(outcome.runs[index].name))
    return ""


def primitives(analysis: Any, finding: Any) -> list[str]:
    """The identities of the primitives ``finding``'s evidence points at (module
    docstring), sorted, each once."""
    events = analysis.log.events
    wanted = {(e.path, e.line) for e in finding.evidence if e.op is None}
    out = {f"op:{e.op}" for e in finding.evidence if e.op is not None}
    if wanted and len(events):
        import numpy as np

        # the rows of the wanted lines only: one pass over the line numbers
        rows = np.flatnonzero(np.isin(events["line"].to_numpy(), [line for _, line in wanted]))
        inputs = events["input"].to_numpy()[rows].astype(str)
        lines = events["line"].to_numpy()[rows]
        records = events["record"].to_numpy()[rows]
        for path, line, record in zip(inputs, lines, records, strict=True):
            if (path, int(line)) not in wanted or record < 0:
                continue
            r = analysis.log.records[int(record)]
            out.add(",".join(str(getattr(r, name, "") or "") for name in _IDENTITY))
    return sorted(out)


def entries(outcome: Outcome) -> list[dict[str, Any]]:
    """The baseline entries of every finding of ``outcome``, sorted."""
    out = []
    for i, analysis in enumerate(outcome.analyses):
        run = _run_stem(outcome, i)
        for f in analysis.findings:
            out.append(
                {
                    "rule": f.code or f.rule,
                    "run": run,
                    "primitives": primitives(analysis, f),
                    "message": f.message,
                }
            )
    return sorted(out, key=lambda e: (e["run"], e["rule"], e["primitives"], e["message"]))


def write_baseline(path: str | os.PathLike[str], outcome: Outcome) -> int:
    """Write the baseline of ``outcome``'s findings to ``path``; how many it holds."""
    found = entries(outcome)
    doc = {"dnnlens_baseline": FORMAT_VERSION, "findings": found}
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    return len(found)


def load_baseline(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries of a baseline file; :class:`SessionError` (one line, exit 2) for a file
    that cannot be read or is not a dnnlens baseline."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SessionError(f"--baseline {path}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionError(f"--baseline {path}: not a JSON baseline ({exc})") from None
    if not isinstance(doc, dict) or doc.get("dnnlens_baseline") != FORMAT_VERSION:
        raise SessionError(
            f"--baseline {path}: not a dnnlens baseline (write one with --write-baseline)"
        )
    found = doc.get("findings")
    if not isinstance(found, list) or not all(
        isinstance(e, dict)
        and isinstance(e.get("rule"), str)
        and isinstance(e.get("primitives", []), list)
        for e in found
    ):
        raise SessionError(f"--baseline {path}: its findings are not a list of entries")
    return found


def _known(entry: dict[str, Any], known: Sequence[dict[str, Any]], by_run: bool) -> bool:
    mine = set(entry["primitives"])
    for k in known:
        if k.get("rule") != entry["rule"]:
            continue
        if by_run and k.get("run") != entry["run"]:
            continue
        theirs = {str(p) for p in k.get("primitives", [])}
        if (not mine and not theirs) or mine & theirs:
            return True
    return False


def leave_out_known(
    outcome: Outcome, known: Sequence[dict[str, Any]], path: str | os.PathLike[str]
) -> int:
    """Take the findings of ``outcome`` that are in the baseline ``known`` out of every
    run (a note on each run says how many); how many were taken out."""
    by_run = len(outcome.analyses) > 1
    total = 0
    for i, analysis in enumerate(outcome.analyses):
        run = _run_stem(outcome, i)
        keep = []
        for f in analysis.findings:
            entry = {"rule": f.code or f.rule, "run": run, "primitives": primitives(analysis, f)}
            if not _known(entry, known, by_run):
                keep.append(f)
        left = len(analysis.findings) - len(keep)
        if left:
            analysis.findings = keep
            analysis.notes.append(
                f"{left} finding(s) in the baseline {os.fsdecode(path)} are not shown"
            )
        total += left
    return total
