"""The machine model: peak FLOP/s per data type and memory bandwidth, and how each is known.

Nominal peak of ``threads`` cores::

    peak(dtype) = threads x freq_ghz x (2 x fma_units x vector_bits / 32) x gain(isa, dtype)

``vector_bits`` and ``fma_units`` follow from the ISA (the header's ``isa:`` line or the
implementation names), ``threads`` from the header's ``nthr:``. The clock is the one fact a
oneDNN header rarely prints, so every machine says how it knows it (``clock_basis``), and
every view prints that with the figures it divides by the peak:

* ``profile``: the user gave a machine profile (``--machine FILE``; ``dnnlens machine
  probe`` writes one);
* ``log header``: a CPU name with a clock in an engine line (``name:Intel(R) Core(TM)
  i9-9900K CPU @ 3.60GHz``, printed by SYCL/DPC++ builds): the base clock;
* ``this machine``: the log's ISA line names the ISA of the CPU dnnlens runs on and its
  thread count fits this CPU's cores, and no profile says otherwise: the clock of
  ``/proc/cpuinfo`` (see :func:`made_here`);
* ``assumed``: none of these: :data:`DEFAULT_FREQ_GHZ`, labelled *assumed* everywhere.

``gain`` is the throughput of the low-precision instructions relative to f32 FMA (bf16
dot products, VNNI, AMX ...). Memory bandwidth is assumed to be
:data:`DEFAULT_BW_PER_THREAD_GBS` per thread, capped at :data:`MAX_DEFAULT_BW_GBS`, unless a
profile gives it. A primitive measured faster than its roof does not make the roof's
figure more than 100%: :meth:`Machine.above_roof` says which assumption it disproves.

Every value can be overridden by a machine profile file (JSON, or TOML when the name ends in
``.toml``) with the fields of :class:`Machine`; ``peak_gflops`` in it replaces the nominal
peaks per data type (a probed f32 GEMM rate scales to the other types with the same gains).
:func:`probe_machine` measures this machine: a stream-like copy for the bandwidth and a
numpy GEMM for the f32 rate. ``sources`` says, per field, where each value came from.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import re
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from dnnlens.parsers.isa import isa_from_header
from dnnlens.textsafe import safe

__all__ = [
    "CLOCK_ASSUMED",
    "CLOCK_HEADER",
    "CLOCK_HOST",
    "CLOCK_PROFILE",
    "DEFAULT_FREQ_GHZ",
    "HostCpu",
    "Machine",
    "dtype_class",
    "isa_gain",
    "load_machine",
    "local_machine",
    "machine_for_log",
    "machine_from_isa",
    "made_here",
    "probe_machine",
    "resolve_machine",
    "save_machine",
    "this_cpu",
]

PROFILE_VERSION = 1
#: The clock assumed when nothing says it: a typical all-core clock of server CPUs of the
#: AVX2 and AVX-512 years (2.0 - 3.0 GHz). It is labelled *assumed* wherever it is used.
DEFAULT_FREQ_GHZ = 2.5
#: Bandwidth assumed per thread: one core of a server CPU streams 8 - 15 GB/s from DRAM.
DEFAULT_BW_PER_THREAD_GBS = 10.0
#: The assumed bandwidth stops here: 6 - 8 DDR4/DDR5 channels of one socket.
MAX_DEFAULT_BW_GBS = 200.0
DEFAULT_ISA = "avx2"

#: How a machine's clock (and so its peak) is known (:attr:`Machine.clock_basis`).
CLOCK_PROFILE = "profile"
CLOCK_HEADER = "log header"
CLOCK_HOST = "this machine"
CLOCK_ASSUMED = "assumed"

#: A clock in a CPU name: ``Intel(R) Core(TM) i9-9900K CPU @ 3.60GHz``.
_NAME_CLOCK = re.compile(r"@\s*(\d{1,2}(?:\.\d{1,3})?)\s*GHz", re.IGNORECASE)

#: (vector bits, FMA units per core) of an ISA family; SSE and AVX count their separate
#: multiply and add ports as one FMA unit (same FLOPs per cycle).
_VECTOR = (
    ("avx512", 512, 2), ("avx10", 512, 2), ("avx2", 256, 2), ("avx", 256, 1),
    ("sse", 128, 1), ("sve_512", 512, 2), ("sve_384", 384, 2), ("sve_256", 256, 2),
    ("sve_128", 128, 2), ("sve", 256, 2), ("asimd", 128, 2),
)  # fmt: skip


#: ISAs that include VNNI (or AArch64 dot products) without saying so in their name:
#: every CPU with AVX-512 BF16 or FP16 has AVX512-VNNI.
_VNNI_IMPLIED = ("avx512_core_bf16", "avx512_core_fp16", "avx10", "asimd", "sve")


def dtype_class(dtype: str) -> str:
    """``f32``, ``bf16``, ``f16``, ``int8``, ``f64`` (the peaks differ per class)."""
    dt = (dtype or "f32").lower()
    if dt in ("bf16", "f16", "f64"):
        return dt
    if dt in ("s8", "u8", "int8", "s4", "u4", "int4", "nf4"):
        return "int8"
    if dt.startswith(("f8", "f4", "e8")):
        return "f16"
    return "f32"


def isa_gain(isa: str, dtype: str) -> float:
    """Throughput of ``dtype`` arithmetic relative to f32 FMA on ``isa``.

    bf16: 2 with AVX-512 BF16 (``vdpbf16ps``), 16 with AMX; f16: 2 with AVX512-FP16, 16 with
    AMX-FP16; int8: 4 with VNNI (``vpdpbusd``) or AArch64 dot products, 32 with AMX, 4/3
    without VNNI (``vpmaddubsw`` + ``vpmaddwd`` + ``vpaddd``); f64: 1/2. Anything else: 1
    (e.g. bf16 on AVX2 is converted and computed in f32, if oneDNN runs it at all).
    """
    c = dtype_class(dtype)
    isa = isa or ""
    amx = "amx" in isa
    if c == "f64":
        return 0.5
    if c == "bf16":
        if amx:
            return 16.0
        return 2.0 if isa.startswith(("avx512_core_bf16", "avx512_core_fp16", "avx10")) else 1.0
    if c == "f16":
        if amx:
            return 16.0 if "fp16" in isa or isa.startswith("avx10") else 1.0
        return 2.0 if isa.startswith(("avx512_core_fp16", "avx10")) else 1.0
    if c == "int8":
        if amx:
            return 32.0
        if "vnni" in isa or isa.startswith(_VNNI_IMPLIED):
            return 4.0
        return 4.0 / 3.0 if isa else 1.0
    return 1.0


def _vector(isa: str) -> tuple[int, int]:
    for prefix, bits, fma in _VECTOR:
        if isa.startswith(prefix):
            return bits, fma
    return 128, 1


@dataclass
class Machine:
    """What the roofline needs to know about a machine (all fields overridable).

    ``peak_gflops`` maps a data-type class (``f32``, ``bf16`` ...) to a peak that replaces
    the nominal one; ``measured`` keeps what :func:`probe_machine` measured; ``sources``
    tells where each field came from in words. ``clock_basis`` and ``bandwidth_basis`` say
    how the clock and the bandwidth are known (``profile``, ``log header``, ``this
    machine``, ``assumed``): what a view labels a figure with.
    """

    name: str = "default"
    isa: str = DEFAULT_ISA
    threads: int = 1
    freq_ghz: float = DEFAULT_FREQ_GHZ
    vector_bits: int = 256
    fma_units: int = 2
    bandwidth_gbs: float = DEFAULT_BW_PER_THREAD_GBS
    peak_gflops: dict[str, float] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    clock_basis: str = CLOCK_ASSUMED
    bandwidth_basis: str = CLOCK_ASSUMED

    @property
    def flops_per_cycle(self) -> int:
        """f32 FLOPs per cycle per core: 2 (multiply + add) x FMA units x f32 lanes."""
        return 2 * self.fma_units * self.vector_bits // 32

    def nominal_gflops(self, dtype: str = "f32") -> float:
        """threads x GHz x FLOP/cycle/core x gain: the paper peak of ``dtype``."""
        return self.threads * self.freq_ghz * self.flops_per_cycle * isa_gain(self.isa, dtype)

    def peak(self, dtype: str = "f32") -> float:
        """Peak GFLOP/s used as the compute roof for ``dtype``."""
        c = dtype_class(dtype)
        if c in self.peak_gflops:
            return float(self.peak_gflops[c])
        if "f32" in self.peak_gflops:
            return float(self.peak_gflops["f32"]) * isa_gain(self.isa, c)
        return self.nominal_gflops(c)

    def peak_basis(self, dtype: str = "f32") -> str:
        """How the peak of ``dtype`` is known: ``profile`` when the profile gives a rate,
        else how the clock is known (:attr:`clock_basis`)."""
        c = dtype_class(dtype)
        if c in self.peak_gflops or "f32" in self.peak_gflops:
            return CLOCK_PROFILE
        return self.clock_basis

    def peak_source(self, dtype: str = "f32") -> str:
        """Where the peak of ``dtype`` comes from, in words: the formula with its values."""
        c = dtype_class(dtype)
        if c in self.peak_gflops:
            return self.sources.get(f"peak_gflops.{c}", "file")
        if "f32" in self.peak_gflops:
            src = self.sources.get("peak_gflops.f32", "file")
            return f"{src} f32 rate x {isa_gain(self.isa, c):g} ({self.isa} {c} gain)"
        gain = isa_gain(self.isa, c)
        return (
            f"{self.threads} thread{'s' if self.threads != 1 else ''} x {self.freq_ghz:g} GHz "
            f"x {self.flops_per_cycle} "
            f"FLOP/cycle ({self.isa}: {self.fma_units} FMA x {self.vector_bits // 32} f32 "
            f"lanes x 2)" + (f" x {gain:g} ({c} gain)" if gain != 1.0 else "")
        )

    def peak_label(self, dtype: str = "f32") -> str:
        """The peak of ``dtype`` as every view prints it: the figure, how it is known."""
        basis = self.peak_basis(dtype)
        head = f"{self.peak(dtype):,.0f} GFLOP/s"
        if basis == CLOCK_ASSUMED:
            return f"assumed peak {head} ({self.peak_source(dtype)}; the clock is assumed)"
        if basis == CLOCK_PROFILE:
            return f"peak {head} (profile: {self.peak_source(dtype)})"
        return f"peak {head} ({self.peak_source(dtype)}; clock from {basis})"

    def bandwidth_label(self) -> str:
        """The bandwidth as every view prints it: the figure, how it is known."""
        what = self.sources.get("bandwidth_gbs", "")
        if self.bandwidth_basis == CLOCK_ASSUMED:
            return f"assumed bandwidth {self.bandwidth_gbs:g} GB/s ({what})"
        return f"bandwidth {self.bandwidth_gbs:g} GB/s ({what})"

    def above_roof(self, bound: str, dtype: str = "f32", what: str = "the typical run") -> str:
        """Why a primitive measured faster than its roof: the assumption it disproves.

        ``bound`` is ``compute`` (the peak is too low) or ``memory`` (the bandwidth is, or
        the data came from a cache); ``what`` names the time that beat it. The figure over
        100% is never printed as a fraction of a peak.
        """
        if bound == "memory":
            assumed = self.bandwidth_basis == CLOCK_ASSUMED
            which = "assumed bandwidth" if assumed else "profile's bandwidth"
            return (
                f"{what} is above the {which} ({self.bandwidth_gbs:g} GB/s): the data came "
                "from a cache, or the machine's bandwidth is higher"
            )
        basis = self.peak_basis(dtype)
        peak = f"{self.peak(dtype):,.0f} GFLOP/s"
        threads = (
            f" or the assumed {self.threads} threads too few"
            if self.sources.get("threads", "default") == "default"
            else ""
        )
        if basis == CLOCK_ASSUMED:
            return (
                f"{what} is above the assumed peak ({peak}): the assumed clock "
                f"({self.freq_ghz:g} GHz) is too low{threads}"
            )
        if basis == CLOCK_PROFILE:
            return f"{what} is above the profile's peak ({peak}): the profile's peak is too low"
        gain = isa_gain(self.isa, dtype)
        rate = (
            f", or {dtype_class(dtype)} runs faster than {gain:g}x the f32 FMA rate"
            if gain != 1.0
            else ""
        )
        return (
            f"{what} is above the peak at {self.freq_ghz:g} GHz ({basis}, {peak}): the cores "
            f"ran faster than that clock (turbo){rate}{threads}"
        )

    def ridge(self, dtype: str = "f32") -> float:
        """Arithmetic intensity (FLOP/byte) where the compute and memory roofs meet."""
        return self.peak(dtype) / self.bandwidth_gbs if self.bandwidth_gbs > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """The profile file's content."""
        return {"dnnlens_machine": PROFILE_VERSION, **asdict(self)}

    def to_json(self) -> dict[str, Any]:
        """The ``machine`` object of a report: the profile, the peaks and their labels."""
        dtypes = ("f32", "bf16", "f16", "int8")
        return {
            **self.to_dict(),
            "peaks": {dt: self.peak(dt) for dt in dtypes},
            "peak_basis": {dt: self.peak_basis(dt) for dt in dtypes},
            "peak_labels": {dt: self.peak_label(dt) for dt in dtypes},
            "bandwidth_label": self.bandwidth_label(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "file") -> Machine:
        """A machine from a profile mapping; unknown keys are ignored, missing ones default.

        What the file gives is stated by it (basis ``profile``); a clock or a bandwidth it
        does not give, or says was assumed (``clock_basis``/``bandwidth_basis``
        ``assumed``: a model written from a log's header), stays assumed.
        """
        body = data.get("machine", data) if isinstance(data.get("machine"), dict) else data
        known = {f.name for f in fields(cls)} - {"clock_basis", "bandwidth_basis"}
        values = {k: v for k, v in body.items() if k in known}
        m = cls(**values)
        if "isa" in values and not ("vector_bits" in values and "fma_units" in values):
            bits, fma = _vector(m.isa)
            m.vector_bits = int(values.get("vector_bits", bits))
            m.fma_units = int(values.get("fma_units", fma))
        given = dict(values.get("sources") or {})
        m.sources = dict(given)
        for k in values:  # the file states it; what it says of its origin is kept after it
            if k not in ("sources", "measured", "peak_gflops", "name"):
                m.sources[k] = f"{source}: {given[k]}" if given.get(k) else source
        for k in m.peak_gflops:
            m.sources.setdefault(f"peak_gflops.{k}", source)
        # a file written from an assumed model (machine show LOG -f json) stays assumed
        stated = {
            k: k in values and body.get(basis) != CLOCK_ASSUMED
            for k, basis in (("freq_ghz", "clock_basis"), ("bandwidth_gbs", "bandwidth_basis"))
        }
        m.clock_basis = CLOCK_PROFILE if stated["freq_ghz"] else CLOCK_ASSUMED
        m.bandwidth_basis = CLOCK_PROFILE if stated["bandwidth_gbs"] else CLOCK_ASSUMED
        if "freq_ghz" not in values:
            m.sources["freq_ghz"] = f"{source} gives no clock: {m.freq_ghz:g} GHz"
        if "bandwidth_gbs" not in values:
            m.sources["bandwidth_gbs"] = f"{source} gives no bandwidth: {m.bandwidth_gbs:g} GB/s"
        for k, ok in stated.items():
            if k in values and not ok:
                m.sources[k] = f"{source} says it was assumed: {values[k]:g}"
        return m

    def summary(self) -> list[tuple[str, str, str]]:
        """(field, value, source) rows for display."""
        rows = [
            ("isa", self.isa, self.sources.get("isa", "default")),
            ("threads", str(self.threads), self.sources.get("threads", "default")),
            (
                "freq_ghz",
                f"{self.freq_ghz:g}",
                f"{self.clock_basis}: {self.sources.get('freq_ghz', '')}",
            ),
            (
                "vector_bits x fma_units",
                f"{self.vector_bits} x {self.fma_units}",
                self.sources.get("vector_bits", "from isa"),
            ),
            (
                "bandwidth GB/s",
                f"{self.bandwidth_gbs:.1f}",
                f"{self.bandwidth_basis}: {self.sources.get('bandwidth_gbs', '')}",
            ),
        ]
        for dt in ("f32", "bf16", "f16", "int8"):
            rows.append(
                (
                    f"peak {dt} GFLOP/s",
                    f"{self.peak(dt):.1f}",
                    f"{self.peak_basis(dt)}: {self.peak_source(dt)}",
                )
            )
        return rows


def machine_from_isa(
    isa: str, threads: int | None = None, name: str = "from log header"
) -> Machine:
    """The nominal machine of an implementation-name ISA (``avx2``) and a thread count,
    with the assumed clock and bandwidth."""
    isa = isa or DEFAULT_ISA
    bits, fma = _vector(isa)
    n = threads if threads and threads > 0 else 1
    bw = min(DEFAULT_BW_PER_THREAD_GBS * n, MAX_DEFAULT_BW_GBS)
    return Machine(
        name=name,
        isa=isa,
        threads=n,
        vector_bits=bits,
        fma_units=fma,
        bandwidth_gbs=bw,
        sources={
            "threads": "given" if threads and threads > 0 else "default",
            "freq_ghz": f"{DEFAULT_FREQ_GHZ:g} GHz: no clock in the log or a profile",
            "bandwidth_gbs": f"{DEFAULT_BW_PER_THREAD_GBS:g} GB/s per thread, at most "
            f"{MAX_DEFAULT_BW_GBS:g}",
        },
    )


def machine_for_log(log: Any) -> Machine:
    """The nominal machine of a parsed log: ISA and threads from its header, the clock from
    the header's CPU name, else from this machine when the log was made here
    (:func:`made_here`), else assumed.

    Without an ISA line the most common ISA of the implementation names is used.
    """
    isa, threads, isa_src = "", None, "default"
    for scan in getattr(log, "scans", []):
        h = scan.header
        if not isa and h.isa:
            isa, isa_src = isa_from_header(h.isa), "header"
        if threads is None and h.threads:
            threads = h.threads
    if not isa:
        isa = _isa_from_events(log)
        isa_src = "implementation names" if isa else "default"
    from_log = [
        what for what, found in (("ISA", isa_src == "header"), ("threads", threads)) if found
    ]
    if from_log:
        name = f"from the log's header ({' and '.join(from_log)})"
    elif isa_src == "implementation names":
        name = "from the log's implementation names (no header)"
    else:
        name = "defaults: the log names no ISA and no thread count"
    m = machine_from_isa(isa, threads, name=name)
    m.sources.update(
        {"isa": isa_src, "threads": "header" if threads else "default"},
    )
    named = _header_clock(log)
    host = this_cpu()
    if named is not None:
        m.freq_ghz, cpu = named
        m.clock_basis = CLOCK_HEADER
        m.sources["freq_ghz"] = f"the CPU name in the log header ({cpu}): its base clock"
    elif host is not None and host.mhz and made_here(isa if isa_src == "header" else "",
                                                     threads, host):  # fmt: skip
        m.freq_ghz = round(host.mhz / 1000.0, 3)
        m.clock_basis = CLOCK_HOST
        m.sources["freq_ghz"] = (
            f"this machine ({host.model or 'its CPU'}; {host.mhz_source}): the log's ISA "
            f"line ({isa}) is this CPU's and its {threads or 'unknown'} threads fit its "
            f"{host.cores} cores"
        )
    return m


def resolve_machine(log: Any, stated: Machine | None = None) -> Machine:
    """The machine the analysis of ``log`` divides by: ``stated`` (the user's profile,
    ``--machine FILE``) when given, else :func:`machine_for_log`."""
    return stated if stated is not None else machine_for_log(log)


def _header_clock(log: Any) -> tuple[float, str] | None:
    """(GHz, CPU name) of the first CPU engine line whose name carries a clock."""
    for scan in getattr(log, "scans", []):
        for engine in scan.header.engines:
            device, _, rest = engine.partition(":")
            if device != "cpu":
                continue
            name = next((p[5:] for p in rest.split(",") if p.startswith("name:")), "")
            m = _NAME_CLOCK.search(name)
            if m and 0.5 <= float(m.group(1)) <= 8.0:  # a CPU clock, not a stray number
                return float(m.group(1)), safe(name.strip())  # log text: shown escaped
    return None


@dataclass(frozen=True)
class HostCpu:
    """The CPU dnnlens runs on, as /proc/cpuinfo describes it."""

    isa: str
    cores: int
    mhz: float | None
    model: str
    mhz_source: str = "/proc/cpuinfo"


#: Where :func:`this_cpu`'s clock comes from (:func:`_cpu_flags`).
_CLOCK_TEXT = "the highest of /proc/cpuinfo's cpu MHz and cpufreq's cpuinfo_max_freq"


@functools.cache
def this_cpu() -> HostCpu | None:
    """This machine's CPU (ISA from its flags, cores, highest clock), or ``None`` where
    /proc/cpuinfo names no ISA (another system, a container hiding it)."""
    flags, model, mhz = _cpu_flags()
    isa = isa_from_flags(flags)
    if not isa:
        return None
    return HostCpu(isa, _cores(), mhz, model, _CLOCK_TEXT)


def made_here(header_isa: str, threads: int | None, host: HostCpu) -> bool:
    """Whether a log was (by all it says) made on ``host``.

    It must print an ISA line (``header_isa``, implementation-name form) naming exactly the
    ISA oneDNN detects on this CPU, and its thread count must fit this CPU's cores. A log
    capped with ``ONEDNN_MAX_CPU_ISA`` names a lower ISA and is not recognised (give a
    profile); a log from another CPU of the same ISA is, which is why every view says the
    clock came from this machine and how to say otherwise.
    """
    if not header_isa or header_isa != host.isa:
        return False
    return threads is None or threads <= host.cores


def _isa_from_events(log: Any) -> str:
    import numpy as np
    import pandas as pd

    from dnnlens.parsers.isa import isa_rank

    events = getattr(log, "events", None)
    if events is None or events.empty or "isa" not in events:
        return ""
    isa = events["isa"]
    if not isinstance(isa.dtype, pd.CategoricalDtype):
        isa = isa.astype(str).astype("category")
    # the most frequent ISA with a rank (ties: the one seen first), counted per category
    codes = isa.cat.codes.to_numpy()
    names = [str(c) for c in isa.cat.categories.tolist()]
    present, first, counts = np.unique(codes[codes >= 0], return_index=True, return_counts=True)
    order = sorted(range(len(present)), key=lambda k: (-counts[k], first[k]))
    ranked = [names[present[k]] for k in order if isa_rank(names[present[k]]) is not None]
    return ranked[0] if ranked else ""


# ---------------------------------------------------------------------------------------
# profile files


def load_machine(path: str | Path) -> Machine:
    """Read a machine profile (JSON, or TOML for ``*.toml``). Raises ``ValueError``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read machine profile {p}: {exc.strerror or exc}") from None
    try:
        if p.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"machine profile {p} is not valid: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"machine profile {p}: expected a table/object")
    try:
        m = Machine.from_dict(data, source=f"file {p.name}")
    except TypeError as exc:
        raise ValueError(f"machine profile {p}: {exc}") from None
    m.name = m.name if m.name != "default" else p.stem
    return m


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


def to_toml(m: Machine) -> str:
    """The profile as TOML (flat values first, then the three tables)."""
    d = m.to_dict()
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for table in ("peak_gflops", "measured", "sources"):
        lines += ["", f"[{table}]"]
        lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in d[table].items()]
    return "\n".join(lines) + "\n"


def save_machine(m: Machine, path: str | Path) -> None:
    """Write a profile: TOML for ``*.toml``, JSON otherwise."""
    p = Path(path)
    text = to_toml(m) if p.suffix.lower() == ".toml" else json.dumps(m.to_dict(), indent=2)
    p.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


# ---------------------------------------------------------------------------------------
# this machine


def _cpu_flags() -> tuple[set[str], str, float | None]:
    """(flags, model name, highest MHz) from /proc/cpuinfo (empty on other systems)."""
    flags: set[str] = set()
    model, mhz = "", None
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return flags, platform.processor(), None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("flags", "features") and not flags:
            flags = set(value.split())
        elif key == "model name" and not model:
            model = value.strip()
        elif key == "cpu mhz":
            try:
                mhz = max(mhz or 0.0, float(value))
            except ValueError:
                pass
    try:
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text()
        mhz = max(mhz or 0.0, int(khz) / 1000.0)
    except (OSError, ValueError):
        pass
    return flags, model, mhz


def isa_from_flags(flags: set[str]) -> str:
    """The oneDNN ISA name of a set of /proc/cpuinfo flags."""
    if "avx512f" in flags and {"avx512bw", "avx512vl", "avx512dq"} <= flags:
        if "amx_bf16" in flags:
            return "avx512_core_amx_fp16" if "amx_fp16" in flags else "avx512_core_amx"
        if "avx512_fp16" in flags:
            return "avx512_core_fp16"
        if "avx512_bf16" in flags:
            return "avx512_core_bf16"
        return "avx512_core_vnni" if "avx512_vnni" in flags else "avx512_core"
    if "avx2" in flags:
        if "avx_vnni" in flags:
            return "avx2_vnni_2" if "avx_ne_convert" in flags else "avx2_vnni"
        return "avx2"
    if "avx" in flags:
        return "avx"
    if "sse4_1" in flags:
        return "sse41"
    if "sve" in flags:
        return "sve"
    if "asimd" in flags:
        return "asimd"
    return ""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def local_machine() -> Machine:
    """This machine's nominal model from /proc/cpuinfo, without measuring anything."""
    host = this_cpu()
    m = machine_from_isa(
        host.isa if host else "", host.cores if host else _cores(), name=_local_name(host)
    )
    m.sources.update({"isa": "cpu flags" if host else "default", "threads": "cpu count"})
    if host is not None and host.mhz:
        m.freq_ghz = round(host.mhz / 1000.0, 3)
        m.clock_basis = CLOCK_HOST
        m.sources["freq_ghz"] = host.mhz_source
    return m


def _local_name(host: HostCpu | None) -> str:
    return (host.model if host else "") or platform.node() or "local"


def _llc_bytes() -> int:
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
        mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:].upper(), 1)
        return int(text.rstrip("KMkm")) * mult
    except (OSError, ValueError):
        return 32 << 20


def measure_bandwidth(seconds: float = 1.5, threads: int | None = None) -> tuple[float, dict]:
    """Best copy bandwidth in GB/s (read + write, STREAM "copy" convention) and details.

    Two float64 arrays of four times the last-level cache (64 MiB to 512 MiB each) are
    copied by ``threads`` Python threads (numpy releases the GIL while copying), repeated
    within ``seconds``; the best repetition counts.
    """
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    nthr = threads or _cores()
    size = min(max(4 * _llc_bytes(), 64 << 20), 512 << 20)
    a = np.ones(size // 8)
    b = np.zeros_like(a)
    parts = [slice(i * len(a) // nthr, (i + 1) * len(a) // nthr) for i in range(nthr)]
    best, reps = math.inf, 0
    deadline = time.perf_counter() + seconds
    with ThreadPoolExecutor(nthr) as pool:
        while reps < 2 or (time.perf_counter() < deadline and reps < 50):
            t0 = time.perf_counter()
            list(pool.map(lambda s: np.copyto(b[s], a[s]), parts))
            best = min(best, time.perf_counter() - t0)
            reps += 1
    gbs = 2 * a.nbytes / best / 1e9
    return gbs, {"copy_array_mib": a.nbytes >> 20, "copy_threads": nthr, "copy_reps": reps}


def measure_gemm(seconds: float = 1.5, n: int = 1536) -> tuple[float, dict]:
    """Best f32 GEMM rate of numpy's BLAS (GFLOP/s, ``2 n^3`` per product) and details."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((n, n), dtype=np.float32)
    y = rng.random((n, n), dtype=np.float32)
    x @ y  # warm up (thread pool start, page faults)
    best, reps = math.inf, 0
    deadline = time.perf_counter() + seconds
    while reps < 2 or (time.perf_counter() < deadline and reps < 50):
        t0 = time.perf_counter()
        x @ y
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return 2.0 * n**3 / best / 1e9, {"gemm_n": n, "gemm_reps": reps}


def probe_machine(seconds: float = 3.0) -> Machine:
    """Measure this machine: bandwidth with a copy, f32 peak with a GEMM (about ``seconds``).

    The GEMM rate becomes ``peak_gflops.f32`` (what this machine delivers; the nominal
    peak is kept in ``measured``) and the copy rate ``bandwidth_gbs``. A load average above
    half the cores at the start is recorded as a warning: other work skews both numbers.
    """
    import numpy as np

    m = local_machine()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    bw, bw_info = measure_bandwidth(seconds / 2, m.threads)
    gemm, gemm_info = measure_gemm(seconds / 2, 1536 if seconds >= 2 else 768)
    m.bandwidth_gbs = round(bw, 2)
    m.bandwidth_basis = CLOCK_PROFILE
    m.sources["bandwidth_gbs"] = "probe (numpy copy)"
    m.peak_gflops["f32"] = round(gemm, 2)
    m.sources["peak_gflops.f32"] = "probe (numpy f32 GEMM)"
    m.measured = {
        "copy_gbs": round(bw, 2), "gemm_f32_gflops": round(gemm, 2),
        "nominal_f32_gflops": round(m.nominal_gflops("f32"), 2),
        "load_average": None if load is None else round(load, 2),
        "numpy": np.__version__, "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **bw_info, **gemm_info,
    }  # fmt: skip
    if load is not None and load > m.threads / 2:
        m.measured["warning"] = (
            f"load average {load:.2f} on {m.threads} cores while probing: "
            "other work shares the machine, the rates are low bounds"
        )
    return m
