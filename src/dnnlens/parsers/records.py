"""Plain records the oneDNN line parser produces: no analysis, no pandas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dnnlens.parsers.attrs import Attrs
    from dnnlens.parsers.memdesc import MdList
    from dnnlens.parsers.problem import Problem

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
    # The parsed sub-fields, filled on first use (see the parsed_* properties): a log has a
    # few hundred distinct records, read without them, and analysed with most of them.
    _mds: MdList | None = field(default=None, init=False, repr=False, compare=False)
    _attrs: Attrs | None = field(default=None, init=False, repr=False, compare=False)
    _aux: Mapping[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    _problem: Problem | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def parsed_mds(self) -> MdList:
        """The memory descriptors (``mds``), parsed once per record."""
        if self._mds is None:
            from dnnlens.parsers.memdesc import parse_mds

            object.__setattr__(self, "_mds", parse_mds(self.mds))
        return self._mds  # type: ignore[return-value]

    @property
    def parsed_attrs(self) -> Attrs:
        """The attributes (``attrs``), parsed once per record."""
        if self._attrs is None:
            from dnnlens.parsers.attrs import parse_attrs

            object.__setattr__(self, "_attrs", parse_attrs(self.attrs))
        return self._attrs  # type: ignore[return-value]

    @property
    def parsed_aux(self) -> Mapping[str, str]:
        """The auxiliary field (``aux``) as ``key -> value``, parsed once per record."""
        if self._aux is None:
            from dnnlens.parsers.attrs import parse_aux

            object.__setattr__(self, "_aux", MappingProxyType(parse_aux(self.aux)))
        return self._aux  # type: ignore[return-value]

    @property
    def parsed_problem(self) -> Problem:
        """The problem descriptor (``problem``, read as the record's ``kind``), parsed once
        per record."""
        if self._problem is None:
            from dnnlens.parsers.problem import parse_problem

            object.__setattr__(self, "_problem", parse_problem(self.kind, self.problem))
        return self._problem  # type: ignore[return-value]

    # A record crosses processes (parallel reading) as its printed fields: the parsed ones
    # hold read-only mappings, which do not pickle, and are cheap to parse again.
    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _PRINTED)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(_PRINTED, state, strict=True):
            object.__setattr__(self, name, value)
        for name in ("_mds", "_attrs", "_aux", "_problem"):
            object.__setattr__(self, name, None)


#: the fields a record is made of, as printed (what pickling keeps)
_PRINTED: tuple[str, ...] = tuple(
    name for name in LineRecord.__dataclass_fields__ if not name.startswith("_")
)


class MalformedLine(ValueError):
    """A line that carries a verbose marker but cannot be parsed; the message is the reason."""
