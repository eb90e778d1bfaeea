"""``with dnnlens.capture("out/run"):`` -- record linkable oneDNN and profiler data in-process.

Inside the block oneDNN verbose is on (with timestamps) and ``torch.profiler`` records the
CPU ops with their input shapes. On exit it writes

* ``out/run.log``: everything written to file descriptor 1 inside the block. oneDNN prints
  its verbose lines with ``printf``, below Python, so standard output is redirected at the
  file-descriptor level (``os.dup2``) and restored afterwards; with ``echo=True`` (default)
  the output still reaches the terminal too;
* ``out/run.trace.json``: ``prof.export_chrome_trace()``.

Then ``dnnlens analyze out/run.log out/run.trace.json`` links each framework op to the
primitives and reorders it ran.

How verbose is switched on: ``torch.backends.mkldnn.verbose(level)`` (and, when the program
has already imported Intel Extension for PyTorch, ``intel_extension_for_pytorch.verbose``
too; dnnlens never imports it). Timestamps: oneDNN reads ``ONEDNN_VERBOSE_TIMESTAMP`` once,
when verbose output is first switched on in the process (measured with torch 2.13 /
oneDNN 3.12; it does not matter whether oneDNN ran before). ``capture`` sets the variable
before that point, so the first capture of a process gets timestamps; but if verbose output
was on earlier in the process (``ONEDNN_VERBOSE`` in the environment, an earlier
``mkldnn.verbose`` block), lines come without them and linking falls back to shapes and
order. To be sure, start the program with ``ONEDNN_VERBOSE_TIMESTAMP=1`` in its
environment, or run it under ``dnnlens capture``. The verbose header (oneDNN version, ISA)
is also printed only once per process: a second capture's log has none. When
``ONEDNN_VERBOSE`` is already set in the environment, verbose is on for the whole run and
``capture`` leaves the switch alone (``torch.backends.mkldnn.verbose`` turns it off for good
when its block ends); it still writes what the block printed.

Under ``dnnlens capture -- python train.py`` (which sets ``DNNLENS_CAPTURE_ACTIVE=1``) the
parent already records the whole verbose log, so this context only runs the profiler and
writes the trace to the parent's ``PREFIX.trace.json`` (whatever ``prefix`` says).

torch is imported when the block is entered, never when dnnlens is imported.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from dnnlens.errors import UsageError

ENV_ACTIVE = "DNNLENS_CAPTURE_ACTIVE"
ENV_PREFIX = "DNNLENS_CAPTURE_PREFIX"
DEFAULT_PREFIX = "dnnlens_run"
VERBOSE_ON = 1


@dataclass
class Capture:
    """What a capture wrote; ``profiler`` is the ``torch.profiler.profile`` (for tables)."""

    log_path: str | None
    trace_path: str | None
    profiler: Any = None


def _flush_c_stdout() -> None:
    """Flush C stdio buffers (oneDNN's printf output) into the current fd 1."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no libc symbols (Windows): nothing to do
        pass


class _Fd1Redirect:
    """Send fd 1 to ``sink`` (and, with ``echo``, still to the old fd 1) until ``close``."""

    def __init__(self, sink: BinaryIO, echo: bool) -> None:
        sys.stdout.flush()
        _flush_c_stdout()
        self._saved = os.dup(1)
        self._sink = sink
        self._thread: threading.Thread | None = None
        if echo:
            read_end, write_end = os.pipe()
            os.dup2(write_end, 1)
            os.close(write_end)
            self._thread = threading.Thread(target=self._pump, args=(read_end,), daemon=True)
            self._thread.start()
        else:
            os.dup2(sink.fileno(), 1)

    def _pump(self, read_end: int) -> None:
        with open(read_end, "rb", buffering=0) as pipe:
            while True:
                data = pipe.read(1 << 16)
                if not data:
                    return
                try:
                    self._sink.write(data)
                except (OSError, ValueError):  # the capture ended without us (timeout)
                    return
                with contextlib.suppress(OSError):
                    view = memoryview(data)
                    while view:  # a pipe or terminal may take part of it
                        view = view[os.write(self._saved, view) :]

    def close(self) -> None:
        """Flush everything into the sink and give fd 1 back."""
        sys.stdout.flush()
        _flush_c_stdout()
        os.dup2(self._saved, 1)  # drops the pipe's last write end: the pump sees EOF
        if self._thread is not None:
            # (a child process that inherited fd 1 and still runs keeps the pipe open: do
            # not wait for it forever)
            self._thread.join(timeout=10)
        os.close(self._saved)  # only now: the pump echoes to it until the end
        self._sink.flush()


def _torch_or_none() -> Any:
    """``torch`` if this interpreter has it (imported only now, never at start-up)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


@contextlib.contextmanager
def _onednn_verbose(level: int) -> Iterator[None]:
    """torch's (and IPEX's, if the program imported it) verbose switch, restored on exit.

    Without torch (a TensorFlow, OpenVINO or ONNX Runtime program) the switch is the
    environment: oneDNN reads ``ONEDNN_VERBOSE`` when it first prints, so the block's
    primitives are logged if the library had not printed before it.
    """
    from_start = [os.environ.get(v, "") for v in ("ONEDNN_VERBOSE", "DNNL_VERBOSE")]
    if any(v not in ("", "0", "none") for v in from_start):
        # verbose is on for the whole run: leave it alone (torch's switch would turn it off
        # for good on exit); the log is the fd-1 output of the block
        if os.environ.get(
            "ONEDNN_VERBOSE_TIMESTAMP", os.environ.get("DNNL_VERBOSE_TIMESTAMP", "0")
        ) in ("0", ""):
            warnings.warn(
                "dnnlens.capture: ONEDNN_VERBOSE is set without "
                "ONEDNN_VERBOSE_TIMESTAMP=1: the lines carry no timestamps and "
                "linking falls back to shapes",
                RuntimeWarning,
                stacklevel=2,
            )
        yield
        return
    os.environ.setdefault("ONEDNN_VERBOSE_TIMESTAMP", "1")
    torch = _torch_or_none()
    if torch is None:
        saved = os.environ.get("ONEDNN_VERBOSE")
        os.environ["ONEDNN_VERBOSE"] = str(level)
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("ONEDNN_VERBOSE", None)
            else:
                os.environ["ONEDNN_VERBOSE"] = saved
        return
    with contextlib.ExitStack() as stack:
        if torch.backends.mkldnn.is_available():
            try:
                stack.enter_context(torch.backends.mkldnn.verbose(level))
            except (AssertionError, RuntimeError) as exc:
                warnings.warn(
                    f"dnnlens.capture: oneDNN verbose could not be turned on: {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        else:
            warnings.warn(
                "dnnlens.capture: this torch build has no oneDNN (mkldnn); the log "
                "will hold no verbose lines",
                RuntimeWarning,
                stacklevel=2,
            )
        ipex = sys.modules.get("intel_extension_for_pytorch")
        ipex_verbose = getattr(ipex, "verbose", None) if ipex is not None else None
        if callable(ipex_verbose):
            try:
                stack.enter_context(ipex_verbose(level))
            except Exception as exc:  # noqa: BLE001 - IPEX is optional, never fatal
                warnings.warn(
                    f"dnnlens.capture: IPEX verbose failed: {exc}", RuntimeWarning, stacklevel=2
                )
        yield


@contextlib.contextmanager
def capture(
    prefix: str | None = None,
    *,
    level: int = VERBOSE_ON,
    profile: bool = True,
    record_shapes: bool = True,
    with_stack: bool = False,
    echo: bool = True,
) -> Iterator[Capture]:
    """Record oneDNN verbose output and a profiler trace of the enclosed block.

    ``prefix``: output path without suffix (directories are created), ``dnnlens_run`` by
    default; under ``dnnlens capture`` its ``-o PREFIX`` is used instead. ``level``: 1
    executions, 2 also primitive creation. ``profile``: run ``torch.profiler`` (CPU,
    ``record_shapes``, ``with_stack``). ``echo``: keep showing standard output meanwhile.
    """
    torch = _torch_or_none()
    if profile and torch is None:
        raise UsageError(
            "dnnlens.capture(profile=True) needs PyTorch (pip install 'dnnlens[torch]'); "
            "pass profile=False to record only the oneDNN verbose log"
        )
    under_cli = os.environ.get(ENV_ACTIVE) == "1"
    if under_cli:  # the command line's PREFIX keeps the log and the trace together
        prefix = os.environ.get(ENV_PREFIX) or prefix
    prefix = prefix or DEFAULT_PREFIX
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    result = Capture(
        log_path=None if under_cli else prefix + ".log",
        trace_path=prefix + ".trace.json" if profile else None,
    )
    with contextlib.ExitStack() as stack:
        if not under_cli:
            sink = stack.enter_context(open(prefix + ".log", "wb"))
            redirect = _Fd1Redirect(sink, echo)
            stack.callback(redirect.close)
            stack.enter_context(_onednn_verbose(level))
        if profile:
            import torch.profiler

            prof = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU],
                record_shapes=record_shapes,
                with_stack=with_stack,
            )
            result.profiler = prof
            stack.callback(lambda: prof.export_chrome_trace(result.trace_path))
            stack.enter_context(prof)
        yield result
