"""Which program made the log: PyTorch, TensorFlow, OpenVINO, or one it does not name.

A fix is worth something only in the terms of the program that runs the model: PyTorch is
told ``model.to(memory_format=torch.channels_last)``, OpenVINO a ``PrePostProcessor`` layout,
a C++ program calling oneDNN ``format_tag::any``. This module reads what the inputs hold
and names the program, with the line that said so (a :class:`Clue`).

Two kinds of evidence, the stronger deciding:

* **named**: a line or file of the program itself: a PyTorch profiler trace or table among
  the inputs, a program line of TensorFlow (``cpu_feature_guard.cc``, "oneDNN custom
  operations are on"), PyTorch (a ``torch/`` path, Kineto's profiler lines) or OpenVINO
  among the foreign lines the scan kept, or the header commit of a build that only one
  program ships (:data:`KNOWN_COMMITS`, recorded by ``scripts/make_producer_logs.py``);
* **shape**: how the library was built or called, seen in header and primitive lines: the
  ``threadpool`` runtime with the graph component (TensorFlow's build) or without it
  (OpenVINO's), reorders with a user scratchpad (PyTorch's ideep sets it on every
  primitive; the TensorFlow, OpenVINO and C++ recordings print no reorder attributes),
  ``gemm_api`` lines (Eigen's matrix multiplications in TensorFlow call oneDNN's sgemm),
  weights in HWIO (``cdba``, TensorFlow's filter layout).

When named evidence exists it alone decides; otherwise the shape evidence does. Evidence that
points at two programs decides nothing: the producer is then unknown, ``onednn``, and fixes
are said in oneDNN's own terms, as for a log without any evidence (a C++ program's, or a
framework that printed nothing of its own). Program lines are looked for among the first
foreign lines the scan keeps whole and the shapes of all the others
(:mod:`dnnlens.parsers.program_lines`: each line with its numbers as ``#``, the line number
its first); shape evidence is looked for in every distinct line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from dnnlens.analysis.columns import str_values
from dnnlens.model import ParsedLog
from dnnlens.parsers.records import LINE_EVENT, LineRecord
from dnnlens.parsers.scanner import InputScan

__all__ = [
    "KNOWN_COMMITS",
    "LABELS",
    "NAMED",
    "ONEDNN",
    "OPENVINO",
    "PRODUCERS",
    "PYTORCH",
    "SHAPE",
    "TENSORFLOW",
    "Clue",
    "Producer",
    "detect_producer",
]

PYTORCH, TENSORFLOW, OPENVINO, ONEDNN = "pytorch", "tensorflow", "openvino", "onednn"
#: Every producer name, the unknown one (oneDNN's own terms) last.
PRODUCERS = (PYTORCH, TENSORFLOW, OPENVINO, ONEDNN)
LABELS = {PYTORCH: "PyTorch", TENSORFLOW: "TensorFlow", OPENVINO: "OpenVINO", ONEDNN: "oneDNN"}
#: Kinds of evidence, strongest first.
NAMED, SHAPE = "named", "shape"

#: Header commits of builds only one program ships: (producer, what the commit is).
KNOWN_COMMITS = {
    "1289c3b65dd6a119a5ed12a816517d9c3a21d81b": (
        OPENVINO,
        "the header's commit is that of OpenVINO 2026.4.1's oneDNN fork (v3.13.0)",
    ),
}

#: Program lines among the foreign lines: (producer, pattern, what the line is).
_PROGRAM_LINES = (
    (
        TENSORFLOW,
        re.compile(r"oneDNN custom operations are on|TF_ENABLE_ONEDNN_OPTS"),
        "TensorFlow's note on its oneDNN ops",
    ),
    (
        TENSORFLOW,
        re.compile(
            r"This TensorFlow binary|cpu_feature_guard\.cc|"
            r"tensorflow[/\\](?:core|compiler|python|tsl)[/\\]"
        ),
        "a TensorFlow log line",
    ),
    (TENSORFLOW, re.compile(r"\b_Mkl[A-Z]\w+"), "a TensorFlow oneDNN op name (_Mkl...)"),
    (
        PYTORCH,
        re.compile(
            r"[/\\]torch[/\\]|\btorch\.(?:nn|jit|compile|autograd|optim|utils|backends|"
            r"profiler|_dynamo|_inductor)\b"
        ),
        "a PyTorch path or call in a program line",
    ),
    (
        PYTORCH,
        re.compile(r"SyncActivityProfilerHandler\.cpp|\bkineto\b", re.IGNORECASE),
        "a line of PyTorch's profiler (Kineto)",
    ),
    (
        OPENVINO,
        re.compile(r"\bopenvino\b|^\s*ov_cpu_verbose,", re.IGNORECASE),
        "an OpenVINO line",
    ),
)

_REORDER_SCRATCHPAD = (
    "a reorder with a user scratchpad (attr-scratchpad:user), as PyTorch's ideep sets on "
    "every primitive"
)
_GEMM_API = "a gemm_api line: TensorFlow's Eigen matrix multiplications call oneDNN's sgemm"
_HWIO = "weights in HWIO (cdba), TensorFlow's filter layout"
_GRAPH_VERSION = (3, 3)  # the first release whose header names the graph component


@dataclass(frozen=True)
class Clue:
    """One piece of evidence: which producer, how strong, where, and what it is."""

    producer: str
    kind: str
    path: str
    #: 1-based line; 0 for a whole input (a trace file) or a line that left the window
    line: int
    why: str

    @property
    def where(self) -> str:
        """``path:line``, or the path alone."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def to_json(self) -> dict[str, Any]:
        """The clue as plain data."""
        return {
            "producer": self.producer,
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
            "why": self.why,
        }


@dataclass(frozen=True)
class Producer:
    """The program that made the inputs, and the evidence.

    ``clues`` are the evidence that decided (the first is the one fixes cite), ``others``
    the evidence that points elsewhere (weaker, or in a disagreement that left the producer
    unknown). ``onednn_ops_off``: a TensorFlow log whose only primitives are ``gemm_api``
    calls, so TensorFlow's own oneDNN ops were off (``TF_ENABLE_ONEDNN_OPTS=0``).
    """

    name: str
    clues: tuple[Clue, ...] = ()
    others: tuple[Clue, ...] = ()
    onednn_ops_off: bool = False

    @property
    def label(self) -> str:
        """``PyTorch``, ``TensorFlow``, ``OpenVINO`` or ``oneDNN``."""
        return LABELS[self.name]

    @property
    def known(self) -> bool:
        """Whether a program was named (not ``onednn``)."""
        return self.name != ONEDNN

    @property
    def said_by(self) -> str:
        """What told, in a few words: ``x.log:8, a reorder with ...``, or why nothing did."""
        if self.clues:
            return f"{self.clues[0].where}: {self.clues[0].why}"
        if self.others:
            names = sorted({LABELS[c.producer] for c in self.others})
            return "the inputs point at " + " and ".join(names)
        return "no line names the program that made it"

    def to_json(self) -> dict[str, Any]:
        """The producer as plain data (for a finding's ``data`` or a report)."""
        return {
            "name": self.name,
            "label": self.label,
            "said_by": self.said_by,
            "clues": [c.to_json() for c in self.clues],
            "others": [c.to_json() for c in self.others],
            "onednn_ops_off": self.onednn_ops_off,
        }


def detect_producer(log: ParsedLog) -> Producer:
    """The producer of a parsed set of inputs (see the module docstring)."""
    clues = _framework_clues(log)
    for scan in log.scans:
        clues += _program_line_clues(scan) + _header_clues(scan)
    clues += _line_shape_clues(log)
    named = [c for c in clues if c.kind == NAMED]
    deciding = named or clues
    names = {c.producer for c in deciding}
    if len(names) != 1:
        return Producer(ONEDNN, (), tuple(deciding))
    name = names.pop()
    mine = tuple(c for c in clues if c.producer == name)
    others = tuple(c for c in clues if c.producer != name)
    return Producer(name, mine, others, name == TENSORFLOW and _only_gemm_api(log, mine))


def _framework_clues(log: ParsedLog) -> list[Clue]:
    """A PyTorch profiler trace or table among the inputs names PyTorch."""
    fw = log.framework
    if fw is None:
        return []
    out = [Clue(PYTORCH, NAMED, t.path, 0, "a PyTorch profiler trace") for t in fw.traces[:1]]
    out += [
        Clue(PYTORCH, NAMED, t.source, t.line, "a PyTorch profiler table (key_averages)")
        for t in fw.tables[:1]
    ]
    return out


def _program_line_clues(scan: InputScan) -> list[Clue]:
    """The program's own lines among the foreign lines (one clue per kind): the first ones
    the scan kept whole, then the shape of every other (its numbers as ``#``)."""
    out: list[Clue] = []
    seen: set[str] = set()
    shapes = [(int(at[0]), shape) for shape, at in scan.program_lines.lines.items() if len(at)]
    for lineno, text in [*scan.foreign_examples, *sorted(shapes)]:
        for producer, pattern, why in _PROGRAM_LINES:
            if why not in seen and pattern.search(text):
                seen.add(why)
                out.append(Clue(producer, NAMED, scan.path, int(lineno), why))
    return out


def _version(text: str | None) -> tuple[int, ...]:
    """``3.13.0`` -> (3, 13, 0); unreadable parts end it."""
    parts: list[int] = []
    for part in (text or "").split("."):
        digits = re.match(r"\d{1,6}", part)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _header_clues(scan: InputScan) -> list[Clue]:
    """A known build's commit (named); the threading runtime and components (shape)."""
    h = scan.header
    line = h.version_lines[0] if h.version_lines else 0
    out: list[Clue] = []
    known = KNOWN_COMMITS.get((h.commit or "").strip().lower())
    if known:
        out.append(Clue(known[0], NAMED, scan.path, line, known[1]))
    if (h.runtime or "").lower() != "threadpool":
        return out
    if h.graph_backends or "graph" in h.templates:
        why = (
            "the header's threadpool runtime with the graph component: TensorFlow's build "
            "(OpenVINO's has no graph component)"
        )
        out.append(Clue(TENSORFLOW, SHAPE, scan.path, line, why))
    elif "primitive" in h.templates and _version(h.version) >= _GRAPH_VERSION:
        why = (
            "the header's threadpool runtime without the graph component: OpenVINO's build "
            "(TensorFlow's has it)"
        )
        out.append(Clue(OPENVINO, SHAPE, scan.path, line, why))
    return out


def _line_shape_clues(log: ParsedLog) -> list[Clue]:
    """How the primitives were called, from the distinct event lines; each clue cites the
    first event of its kind."""
    found: dict[str, tuple[str, set[int]]] = {}
    for rid in log.event_records().tolist():
        rec = log.records[rid]
        if rec.line_kind != LINE_EVENT:
            continue
        if rec.kind == "gemm_api":
            found.setdefault(_GEMM_API, (TENSORFLOW, set()))[1].add(rid)
        elif rec.kind == "reorder" and "scratchpad:user" in rec.attrs:
            found.setdefault(_REORDER_SCRATCHPAD, (PYTORCH, set()))[1].add(rid)
        if rec.kind in ("reorder", "convolution") and "cdba" in rec.mds and _hwio(rec):
            found.setdefault(_HWIO, (TENSORFLOW, set()))[1].add(rid)
    return [
        Clue(producer, SHAPE, *_first_event(log, rids), why)
        for why, (producer, rids) in found.items()
    ]


def _hwio(rec: LineRecord) -> bool:
    """A reorder from, or a convolution on, 4-D weights in ``cdba`` (HWIO)."""
    mds = rec.parsed_mds
    md = mds.get("src") if rec.kind == "reorder" else mds.get("wei")
    return md is not None and md.tag == "cdba"


def _first_event(log: ParsedLog, records: set[int]) -> tuple[str, int]:
    """Input and line of the first event of any of ``records`` (the input alone when those
    events left the reader's window)."""
    ev = log.events
    if len(ev):
        rows = np.flatnonzero(np.isin(ev["record"].to_numpy(), sorted(records)))
        if len(rows):
            at = int(rows[0])
            return str_values(ev["input"].iloc[at : at + 1])[0], int(ev["line"].iloc[at])
    return (log.scans[0].path if log.scans else ""), 0


def _only_gemm_api(log: ParsedLog, clues: tuple[Clue, ...]) -> bool:
    """TensorFlow ran no oneDNN op of its own: only gemm_api events, and no note that its
    oneDNN ops are on."""
    if any(c.why == "TensorFlow's note on its oneDNN ops" for c in clues):
        return False
    records = [log.records[rid] for rid in log.event_records().tolist()]
    kinds = {r.kind for r in records if r.line_kind == LINE_EVENT and r.kind}
    return kinds == {"gemm_api"}
