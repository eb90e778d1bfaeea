"""The verbose header: version, runtime, threads, ISA, GPU engines, templates (format doc §2)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VERSION = re.compile(
    r"(?:oneDNN|DNNL|MKL-DNN)\s+v(?P<version>\d+\.\d+(?:\.\d+)?[^\s,(]*)"
    r"(?:\s*\((?:commit|Git Hash)\s*(?P<commit>[^)]*)\))?"
)
_NTHR = re.compile(r"nthr:(\d{1,9})(?!\d)")


_VERSION_SEEN: dict[str, re.Match[str] | None] = {}


def _version_match(text: str) -> re.Match[str] | None:
    """``_VERSION.search(text)``, remembered: every process prints the same header lines."""
    try:
        return _VERSION_SEEN[text]
    except KeyError:
        m = _VERSION.search(text)
        if len(_VERSION_SEEN) < 4096:
            _VERSION_SEEN[text] = m
        return m


@dataclass
class Header:
    """What the info lines of one input said. Several headers (processes) may be merged."""

    version: str | None = None
    commit: str | None = None
    runtime: str | None = None
    threads: int | None = None
    isa: str | None = None
    gpu_runtime: str | None = None
    engines: list[str] = field(default_factory=list)
    templates: dict[str, str] = field(default_factory=dict)
    graph_backends: list[str] = field(default_factory=list)
    version_lines: list[int] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    @property
    def header_count(self) -> int:
        """How many times a version line was printed (one per process or library copy)."""
        return len(self.version_lines)

    def add(self, text: str, component: str, lineno: int) -> None:
        """Take in the text of one ``info`` line (everything after ``info,``)."""
        if text.startswith("template:") or text.startswith("prim_template:"):
            self.templates[component or "primitive"] = text.partition(":")[2]
            return
        m = _version_match(text)
        if m:
            self.version_lines.append(lineno)
            if self.version is None:
                self.version = m.group("version")
                self.commit = (m.group("commit") or "").strip() or None
            # v0.18 - v1.0 print the ISA on the version line, after a comma.
            head, sep, isa = text.partition("),")
            if sep and self.isa is None:
                self.isa = isa.strip()
            return
        if text.startswith("Detected ISA is "):
            self.isa = self.isa or text[len("Detected ISA is ") :].strip()
            return
        device, _, rest = text.partition(",")
        if rest.startswith("runtime:"):
            runtime = rest[len("runtime:") :].split(",")[0].strip()
            if device == "gpu":
                self.gpu_runtime = self.gpu_runtime or runtime
            else:
                self.runtime = self.runtime or runtime
                m2 = _NTHR.search(rest) if self.threads is None else None
                if m2:
                    self.threads = int(m2.group(1))
            return
        if rest.startswith("isa:"):
            self.isa = self.isa or rest[len("isa:") :].strip()
            return
        if rest.startswith("engine,"):
            self.engines.append(f"{device}:{rest[len('engine,') :].strip()}")
            return
        if device == "graph" and rest.startswith("backend,"):
            self.graph_backends.append(rest[len("backend,") :])
            return
        if len(self.other) < 50:
            self.other.append(text)
