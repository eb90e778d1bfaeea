"""Where a build's tasks run: in this process, or on a Dask cluster.

Both engines take tasks with :meth:`submit` (a key, a function, its arguments, and
optionally tasks whose results it needs) and hand back ``(key, result, error)`` as tasks
finish, tasks submitted meanwhile included. A task that raises gives its exception as
``error`` and the others go on. A caller that holds results to write together says how
long it can wait (``patience``); when no task finishes by then, :data:`TICK` (key ``""``)
comes instead, so that the caller writes what it holds.

* :class:`SerialEngine`: one task at a time in this process; no Dask needed. The default
  for small builds, where starting worker processes costs more than the work.
* :class:`DaskEngine`: a ``dask.distributed`` client: of a :class:`LocalCluster` sized to
  this machine's cores (one single-threaded worker process per core: the analysis is
  Python that holds the GIL), or of an existing cluster (``--scheduler ADDRESS``). The
  input files must be readable at the same paths on the workers.

A scheduler that goes away mid-build (killed, its machine gone) cancels every task this
client has on it: each comes back as :class:`EngineLost`, and tasks submitted after that
come back the same way at once, without waiting for the scheduler. The engines made here
(``quiet``) keep Dask's own log to CRITICAL while they run: its reconnection tracebacks
are said by the build, one line per run.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

#: Below this many input bytes a build runs in this process unless told otherwise:
#: starting worker processes takes about as long as analysing this much.
SMALL_BUILD_BYTES = 64 << 20

Task = tuple[Callable[..., Any], tuple[Any, ...]]
Outcome = tuple[str, Any, BaseException | None]
#: Seconds the caller can wait for the next outcome (``None``: as long as it takes).
Patience = Callable[[], float | None]
#: No task finished within the caller's patience.
TICK: Outcome = ("", None, None)
#: How often a waiting :class:`DaskEngine` looks for a finished task while a caller's
#: patience runs: a tenth of the second a build holds finished runs (a few wake-ups, no
#: measurable CPU).
_POLL_S = 0.1


def _never() -> float | None:
    return None


class EngineError(Exception):
    """The engine cannot be used: Dask missing, a scheduler that does not answer."""


class EngineLost(Exception):
    """The engine went away before the task finished (the Dask scheduler was lost): the
    task's run is not finished, through no fault of its inputs or of dnnlens."""


class SerialEngine:
    """Tasks run one at a time in this process: those submitted before :meth:`completed`
    in order, and a task submitted by the caller while it handles an outcome right after
    (a run is analysed as soon as it is hashed, so a build goes run by run)."""

    description = "this process"
    #: tasks run in other processes (this one publishes what they give back)
    remote = False

    def __init__(self) -> None:
        self._queue: deque[tuple[str, Task, dict[str, list[Task]] | None]] = deque()
        self._running = False

    def submit(
        self,
        key: str,
        fn: Callable[..., Any],
        *args: Any,
        parts: dict[str, list[Task]] | None = None,
    ) -> None:
        """Queue ``fn(*args)``; with ``parts``, ``fn(*args, parts={name: [results]})``."""
        task = (key, (fn, args), parts)
        if self._running:
            self._queue.appendleft(task)
        else:
            self._queue.append(task)

    def completed(self, patience: Patience = _never) -> Iterator[Outcome]:
        """Run the queued tasks, yielding each outcome; tasks queued meanwhile run too. A
        task is not started once the caller's patience is out: :data:`TICK` first."""
        self._running = True
        while self._queue:
            left = patience()
            if left is not None and left <= 0:
                yield TICK
                continue
            key, (fn, args), parts = self._queue.popleft()
            try:
                if parts is None:
                    result = fn(*args)
                else:
                    done = {name: [f(*a) for f, a in tasks] for name, tasks in parts.items()}
                    result = fn(*args, parts=done)
            except Exception as exc:  # noqa: BLE001 - reported per run by the caller
                yield key, None, exc
            else:
                yield key, result, None

    def close(self) -> None:
        """Nothing to release."""


class DaskEngine:
    """Tasks run on a ``dask.distributed`` cluster through ``client``."""

    remote = True

    def __init__(
        self,
        client: Any,
        owned: tuple[Any, ...] = (),
        worker_wait_s: float = 30.0,
        quiet: bool = False,
    ) -> None:
        from distributed import as_completed

        self.client = client
        self._owned = owned  # the client and cluster this engine started, closed by close()
        # results come with the futures (gathered in batches), errors as results
        self._done = as_completed([], with_results=True, raise_errors=False)
        self._keys: dict[str, str] = {}
        self._lost: EngineLost | None = None  # set once the scheduler is gone
        self._unsent: deque[str] = deque()  # tasks submitted after that
        # Dask's reconnection tracebacks are said by the build as one line per run
        self._log_levels = _quiet_dask_log() if quiet else {}
        try:
            client.wait_for_workers(1, timeout=worker_wait_s)
            client.run(_import_tasks)  # each worker imports the analysis now, not in a run
        except Exception as exc:  # noqa: BLE001 - said in one line; the build does not start
            self.close()
            raise EngineError(_worker_problem(exc, worker_wait_s)) from None
        info = client.scheduler_info()
        workers = info.get("workers", {})
        self.description = f"Dask at {info.get('address', '?')} ({len(workers)} worker(s))"

    def submit(
        self,
        key: str,
        fn: Callable[..., Any],
        *args: Any,
        parts: dict[str, list[Task]] | None = None,
    ) -> None:
        """Run ``fn(*args)`` on the cluster; ``parts`` run first, as tasks of their own."""
        if self._lost is not None:
            self._unsent.append(key)
            return
        kwargs: dict[str, Any] = {}
        if parts is not None:
            kwargs["parts"] = {
                name: [self.client.submit(f, *a, pure=False) for f, a in tasks]
                for name, tasks in parts.items()
            }
        future = self.client.submit(fn, *args, pure=False, **kwargs)
        self._keys[future.key] = key
        self._done.add(future)

    def completed(self, patience: Patience = _never) -> Iterator[Outcome]:
        """Outcomes as tasks finish on the cluster (or are lost with it); :data:`TICK` when
        none finished within the caller's patience."""
        while True:
            while self._unsent:
                yield self._unsent.popleft(), None, self._lost
            if not self._ready_within(patience()):
                yield TICK
                continue
            try:
                future, result = next(self._done)
            except StopIteration:
                if self._unsent:
                    continue
                return
            key = self._keys.pop(future.key)
            # a result that arrived is the task's, whatever the future's status says now (a
            # scheduler lost after the result came marks its futures cancelled)
            failed = future.status != "finished" and _is_error(result)
            future.release()
            if not failed:
                yield key, result, None
                continue
            error = _task_error(result)
            if self._lost is None and _scheduler_lost(error):
                address = getattr(self.client.scheduler, "address", None) or "?"
                self._lost = EngineLost(f"not finished: the Dask scheduler at {address} went away")
            yield key, None, self._lost if _scheduler_lost(error) else error

    def _ready_within(self, seconds: float | None) -> bool:
        """Whether a task finished, or there is none left, within ``seconds`` (``None``:
        without looking: the wait is as long as it takes)."""
        if seconds is None:
            return True
        deadline = time.monotonic() + seconds
        while not (self._done.has_ready() or self._done.is_empty()):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_POLL_S, left))
        return True

    def close(self) -> None:
        """Close the client and cluster this engine started (an existing one stays up)."""
        try:
            for thing in self._owned:
                thing.close()
        finally:
            for log, level in self._log_levels.items():
                log.setLevel(level)


def _is_error(result: Any) -> bool:
    """Whether ``as_completed`` handed over an exception, not a task's result."""
    return isinstance(result, BaseException) or (
        isinstance(result, tuple) and len(result) == 3 and isinstance(result[1], BaseException)
    )


def _task_error(result: Any) -> BaseException:
    """The exception of a failed task: ``as_completed`` hands it over as the result, alone
    or as ``(type, exception, traceback)``; a cancelled task has none of its own."""
    if isinstance(result, tuple) and len(result) == 3 and isinstance(result[1], BaseException):
        return result[1]
    if isinstance(result, BaseException):
        return result
    return RuntimeError(f"the task did not finish ({result!r:.100})")


def _quiet_dask_log() -> dict[logging.Logger, int]:
    """Dask's loggers set to CRITICAL (each has a level of its own); their levels before."""
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "distributed"]
    out = {}
    for name in ["distributed", *names]:
        log = logging.getLogger(name)
        out[log] = log.level
        log.setLevel(logging.CRITICAL)
    return out


def _scheduler_lost(error: BaseException) -> bool:
    """Whether a task was cancelled because this client lost its scheduler."""
    return getattr(error, "reason", None) == "scheduler-connection-lost"


def _worker_problem(exc: Exception, waited_s: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no Dask worker joined the scheduler in {waited_s:g} s"
    detail = (str(exc).strip().splitlines() or [""])[0][:200]
    return (
        f"the Dask workers cannot run dnnlens ({type(exc).__name__}: {detail}); install "
        "the same dnnlens with its 'fleet' extra where they run"
    )


def _import_tasks() -> None:
    """Import the tasks' modules (pandas, the parsers, the rules) on a worker."""
    import dnnlens.fleet.work  # noqa: F401


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise EngineError(
            "a Dask cluster needs dask.distributed: pip install 'dnnlens[fleet]'"
        ) from None
    return distributed


def local_engine(workers: int, processes: bool = True) -> DaskEngine:
    """A :class:`LocalCluster` of ``workers`` single-threaded workers, and its client."""
    distributed = _distributed()
    try:
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address="127.0.0.1:0",  # its health page on a free local port
            scheduler_kwargs={"dashboard": False},
            worker_dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    except Exception as exc:  # noqa: BLE001 - said in one line; --workers 1 needs no cluster
        detail = (str(exc).strip().splitlines() or [""])[0][:200]
        raise EngineError(
            f"cannot start a local Dask cluster ({type(exc).__name__}: {detail}); "
            "--workers 1 builds in this process"
        ) from None
    client = distributed.Client(cluster)
    return DaskEngine(client, owned=(client, cluster), quiet=True)


def scheduler_engine(address: str, timeout_s: float = 10.0) -> DaskEngine:
    """A client of the cluster whose scheduler is at ``address``."""
    distributed = _distributed()
    try:
        client = distributed.Client(address, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError, ValueError) as exc:
        detail = (str(exc).strip().splitlines() or [""])[0][:200]
        raise EngineError(f"--scheduler {address}: cannot connect ({detail})") from None
    return DaskEngine(client, owned=(client,), quiet=True)


def choose_engine(
    workers: int | None, scheduler: str | None, input_bytes: int, cores: int
) -> SerialEngine | DaskEngine:
    """The engine of a build: ``scheduler`` if given; else ``workers`` (1: this process);
    else this process for a small build and a local cluster of ``cores`` workers for a
    large one."""
    if scheduler:
        return scheduler_engine(scheduler)
    if workers is None:
        workers = 1 if input_bytes < SMALL_BUILD_BYTES or cores < 2 else cores
    if workers <= 1:
        return SerialEngine()
    return local_engine(workers)
