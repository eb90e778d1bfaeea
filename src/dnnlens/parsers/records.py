"""Plain records the oneDNN line parser produces: no analysis, no pandas."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Release families, named after what their lines look like (format doc §1).
FAMILY_MKLDNN_0X = "mkldnn-0.x"  # F0: mkldnn_verbose, no engine field (v0.13 - v0.21)
FAMILY_MKLDNN_1_0 = "mkldnn-1.0"  # F1a: mkldnn_verbose with engine, no attributes (v1.0)
FAMILY_DNNL = "dnnl"  # F1b: dnnl_verbose (v1.1 - v2.4)
FAMILY_ONEDNN_FLAT = "onednn-flat"  # F2: onednn_verbose, no component (v2.5 - v3.2)
FAMILY_ONEDNN_COMPONENT = "onednn-component"  # F3: onednn_verbose,<component> (v3.3 - v3.5)
FAMILY_ONEDNN_V1 = "onednn-v1"  # F4: onednn_verbose,v1,<component> (v3.6+)

FAMILIES: tuple[str, ...] = (
    FAMILY_MKLDNN_0X,
    FAMILY_MKLDNN_1_0,
    FAMILY_DNNL,
    FAMILY_ONEDNN_FLAT,
    FAMILY_ONEDNN_COMPONENT,
    FAMILY_ONEDNN_V1,
)

LINE_EVENT = "event"
LINE_INFO = "info"
LINE_DIAGNOSTIC = "diagnostic"


@dataclass(frozen=True, slots=True)
class LineRecord:
    """What one distinct verbose line says, without its timestamp and time.

    Events are primitive creations and executions (and graph partition compiles and
    executions); `info` lines are headers; diagnostics are check, dispatch, error and
    warning lines. Fields a line kind does not have are empty strings.

    Graph partition lines (component ``graph``) map onto the same slots: ``kind`` is
    ``graph_partition``, ``prop_kind`` the partition kind, ``problem`` the op names,
    ``mds`` the logical tensors, ``aux`` the data formats, ``attrs`` the fpmath mode
    (and scratchpad), ``impl`` the implementation and backend.
    """

    line_kind: str
    family: str
    operation: str = ""
    cache: str = ""
    component: str = ""
    engine: str = ""
    kind: str = ""
    impl: str = ""
    prop_kind: str = ""
    mds: str = ""
    attrs: str = ""
    aux: str = ""
    problem: str = ""
    text: str = ""
    location: str = ""
    extra: str = ""
    #: the text the record was parsed from (from the marker on, without the timestamp and
    #: the time): what a report quotes of such a line. Not part of the record's identity:
    #: two lines that say the same are one record.
    raw: str = field(default="", compare=False)


class MalformedLine(ValueError):
    """A line that carries a verbose marker but cannot be parsed; the message is the reason."""
