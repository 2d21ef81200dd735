"""Where a job's chunks run: the local process pool, or a Dask cluster.

Both take the same pure task function (payload -> numpy columns) and yield
(key, result) as chunks finish; the main process writes every part, so a
Dask cluster needs no shared filesystem, and a run's rows are the same
whichever executor played them. Dask reschedules the chunks of a worker it
loses; since a chunk is a pure function of its payload, the rows do not
change.
"""

import contextlib
import functools
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sim._cache import warm_up_lock
from sim.jobs.pool import WAIT, Feed, run_tasks

log = logging.getLogger("sim.executors")

EXECUTORS = ("local", "dask")
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
INSTALL_HINT = "pip install 'foursquare-sim[dask]'"


class ExecutorError(ValueError):
    """The executor cannot be used as asked (bad name, missing extra, no scheduler)."""


@dataclass(frozen=True)
class Executor:
    """How to run chunks."""

    kind: str = "local"
    """local (forked worker processes) or dask."""
    workers: int = 1
    """Local worker processes (ignored by dask, whose cluster has its own)."""
    scheduler: str | None = None
    """Dask scheduler address, e.g. tcp://host:8786."""

    def describe(self) -> dict:
        """The executor and scheduler, as a session entry of the manifest records them."""
        return {"executor": self.kind, "scheduler": self.scheduler}

    def run(self, fn: Callable, tasks: Iterable, warm: Callable | None = None) -> Iterator:
        """Run fn on each (key, payload) task here or on the cluster; yield (key, result) as they finish."""
        if self.kind == "local":
            return run_tasks(fn, tasks, self.workers)
        return run_dask(fn, tasks, self.scheduler, warm)


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
"""The schemes of a Dask scheduler address reachable from another process (tcp when none is given)."""


def check_scheduler(address: str, given_as: str = "--scheduler") -> str:
    """A Dask scheduler address as Dask takes it, [SCHEME://]HOST:PORT (e.g. tcp://10.0.0.5:8786, [::1]:8786);
    ExecutorError otherwise, before anything tries to connect."""
    _split(address, given_as)
    return address


def _split(address: str, given_as: str = "--scheduler") -> tuple[str, str, int]:
    """(scheme, host, port) of a scheduler address; ExecutorError when it is not one."""
    scheme, sep, where = address.partition("://")
    if not sep:
        scheme, where = "tcp", address
    if where.startswith("["):  # an IPv6 host: [::1]:8786
        host, _, rest = where[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = where.rpartition(":")
        host = "" if ":" in host else host  # an IPv6 host goes in brackets
    host = "" if any(c.isspace() for c in host) else host
    if scheme not in SCHEMES or not host or not (port.isdigit() and 0 < int(port) < 65536):
        raise ExecutorError(f"{given_as} {address!r} is not a Dask scheduler address: give [SCHEME://]HOST:PORT, "
                            f"e.g. tcp://HOST:8786 (schemes: {', '.join(SCHEMES)})")
    return scheme, host, int(port)


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """ExecutorError unless a Dask scheduler answers at `address` within `timeout` seconds.

    Called before a run makes anything, so that a wrong address leaves no
    run behind: a refused tcp connection fails at once instead of after
    Dask's retries, and anything else (a web page's port, a silent or
    foreign service, TLS without its settings) fails within the timeout,
    where Dask's client could wait for ever or misread the reply.
    """
    import socket
    import threading

    scheme, host, port = _split(address)
    if scheme == "tcp":
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
        except OSError as e:
            raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {e.strerror or e}") from None
    answer = []  # the scheduler's identity, or the error; asked in a thread of its own (a notebook's loop runs)
    asking = threading.Thread(target=lambda: answer.append(_identity(address, timeout)), daemon=True)
    asking.start()
    asking.join(timeout + 1)
    reply = answer[0] if answer else TimeoutError()
    if isinstance(reply, TimeoutError):  # asyncio's too, from Python 3.11 on
        raise ExecutorError(f"no Dask scheduler answers at {address}: no answer in {timeout:g} s")
    if isinstance(reply, OSError):
        raise ExecutorError(f"no Dask scheduler answers at {address}: {reply.strerror or reply}")
    if isinstance(reply, BaseException):  # a web server, another service: its bytes are not Dask's messages
        what = str(reply).splitlines()[0] if str(reply).strip() else type(reply).__name__
        raise ExecutorError(f"no Dask scheduler answers at {address}: what answers does not speak Dask's "
                            f"protocol ({what})")
    if not (isinstance(reply, dict) and reply.get("type") == "Scheduler"):
        raise ExecutorError(f"no Dask scheduler answers at {address}: what answers is not one")


def _identity(address: str, timeout: float):
    """The scheduler's reply to Dask's "identity" request, or the exception that asking it raised."""
    import asyncio

    from distributed.comm import connect

    async def ask():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        return asyncio.run(asyncio.wait_for(ask(), timeout))
    except BaseException as e:  # a foreign service's bytes can be read as anything (MemoryError)
        return e


def check_kind(kind: str) -> str:
    """`kind` when it names an executor (EXECUTORS); ExecutorError otherwise."""
    if kind not in EXECUTORS:
        raise ExecutorError(f"unknown executor {kind!r}; executors: {', '.join(EXECUTORS)}")
    return kind


def make_executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None) -> Executor:
    """Check the choice up front: a one-line error says what is wrong or what to install."""
    check_kind(kind)
    workers = int(workers or os.cpu_count() or 1)
    if kind == "local":
        return Executor("local", workers, None)
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ExecutorError(f"--executor dask needs dask.distributed: {INSTALL_HINT}") from None
    given_as = "--scheduler" if scheduler else SCHEDULER_ENV
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV)
    if not scheduler:
        raise ExecutorError(f"--executor dask needs --scheduler tcp://HOST:8786 (or {SCHEDULER_ENV})")
    return Executor("dask", workers, check_scheduler(scheduler, given_as))


_RUN = threading.local()
"""On a Dask worker, per task thread: (topic, sim level, other level) of the run whose chunk the thread plays."""

SIM_LOGGER = "sim"


class _RunLogs(logging.Handler):
    """On a Dask worker: sends each record a chunk logs to its own run's topic, at that run's levels, so that runs
    sharing a cluster each hear only their own (a record logged outside a chunk goes nowhere)."""

    def __init__(self, worker):
        super().__init__()
        self.worker = worker

    def emit(self, record):
        run = getattr(_RUN, "run", None)
        if run is None:
            return
        topic, sim_level, other_level = run
        ours = record.name == SIM_LOGGER or record.name.startswith(SIM_LOGGER + ".")
        if record.levelno < (sim_level if ours else other_level):
            return
        if record.exc_info:
            self.format(record)  # the traceback's text into exc_text, which travels
        attrs = dict(record.__dict__, msg=record.getMessage(), args=None, exc_info=None,
                     processName=f"dask worker {self.worker.name}")  # every worker process has one name
        attrs.pop("message", None)
        self.worker.log_event(topic, attrs)


class _WorkerLogging:
    """A Dask worker plugin, registered once per cluster and kept (each run has its own topic): Python's warnings
    as log records, "sim" records made at every level (each run's handler keeps its own), and `_RunLogs`."""

    name = "foursquare-sim-logging"

    def setup(self, worker):
        logging.getLogger(SIM_LOGGER).setLevel(logging.DEBUG)
        logging.captureWarnings(True)
        root = logging.getLogger()
        for h in [h for h in root.handlers if isinstance(h, _RunLogs)]:
            root.removeHandler(h)
        root.addHandler(_RunLogs(worker))

    def teardown(self, worker):
        root = logging.getLogger()
        for h in [h for h in root.handlers if isinstance(h, _RunLogs)]:
            root.removeHandler(h)


_WARMED: dict[str, set[str]] = {}
"""On a Dask worker's process, by worker id: the runs (their log topics) whose warm-up has run on that worker
(a process may hold several workers: a LocalCluster of threads)."""

_WARMING = threading.Lock()
"""Taken around a warm-up with the machine's lock: the threads of one process take turns too, and a thread that
waited finds the warm-up done."""


def _warm_worker(warm: Callable, run_id: str, worker_id: str) -> None:
    """Run `warm` on this worker unless it already has for run `run_id`; workers of one machine take turns
    (`warm_up_lock`), so the first compiles and the others load numba's cache."""
    if run_id in _WARMED.get(worker_id, ()):
        return
    with _WARMING, warm_up_lock():
        if run_id not in _WARMED.get(worker_id, ()):
            warm()
            _WARMED.setdefault(worker_id, set()).add(run_id)


def _warm_this_worker(warm: Callable, run_id: str) -> None:
    """`_warm_worker` for the worker this task runs on: in a task (up front, or a chunk's), so in the worker's
    thread, never its event loop, which a compile of tens of seconds would stall (heartbeats included)."""
    from distributed import get_worker

    _warm_worker(warm, run_id, get_worker().id)


def _chunk_in_run(fn: Callable, run: tuple, warm: Callable | None, payload):
    """fn(payload) on a Dask worker, once the run's warm-up has run on it (a worker that joined during the run
    warms up on its first chunk), its log records sent to `run`'s topic (see `_RunLogs`)."""
    _RUN.run = run
    try:
        if warm is not None:
            _warm_this_worker(warm, run[0])
        return fn(payload)
    finally:
        _RUN.run = None


def _here(event) -> None:
    """A record a worker sent to this run's topic, handled as if logged in this process."""
    _, attrs = event
    record = logging.makeLogRecord(attrs)
    logging.getLogger(record.name).handle(record)


def _forward_logs(client) -> tuple:
    """Have the workers' log records of this run's chunks written here, as a local run's are: "sim" at this
    process's level (-v: each chunk's line), other loggers (a plugin's own, its warnings) at warnings (errors
    only with --quiet). Returns the run's (topic, sim level, other level) for `_chunk_in_run`."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkerLogging(_WorkerLogging, WorkerPlugin):
        pass

    run = (f"foursquare-sim-logs-{uuid.uuid4().hex}", logging.getLogger(SIM_LOGGER).getEffectiveLevel(),
           logging.getLogger().getEffectiveLevel())
    client.subscribe_topic(run[0], _here)
    client.register_plugin(WorkerLogging(), name=_WorkerLogging.name)
    return run


def run_dask(fn: Callable, tasks: Iterable, scheduler: str, warm: Callable | None = None) -> Iterator:
    """Submit chunks to a Dask cluster, a bounded number at a time; yield (key, result) as they finish.

    `warm` runs once on each worker before its first chunk of the run: on the
    workers connected at the start, one worker at a time before any chunk is
    submitted (a compile is over before the first chunk); on a worker that
    joins later, at the start of its first chunk. Warm-ups on one machine
    take turns (`warm_up_lock`), so that workers sharing a disk load numba's
    cache instead of racing to write it.
    """
    from concurrent.futures import CancelledError

    from distributed import Client, as_completed

    try:
        client = Client(scheduler, set_as_default=False, timeout="10s")
    except Exception as e:
        raise ExecutorError(f"cannot reach the Dask scheduler at {scheduler}: {str(e).splitlines()[0]}") from None
    run = None
    try:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
        if not workers:
            log.warning("no Dask worker is connected to %s yet; the run waits for one", scheduler)
        run = _forward_logs(client)
        if warm is not None:
            for address in workers:
                # Another worker takes it only if this one has gone: a second warm-up there returns at once.
                client.submit(_warm_this_worker, warm, run[0], workers=[address], allow_other_workers=True,
                              pure=False).result()
        task = functools.partial(_chunk_in_run, fn, run, warm)
        todo = Feed(tasks)
        pending = as_completed(loop=client.loop)
        keys = {}
        asked = [-math.inf, 1]  # when the cluster's threads were last counted, and how many

        def threads() -> int:
            """The cluster's threads, counted again at most once a second: workers that join during the run
            take chunks too."""
            if time.monotonic() - asked[0] >= 1.0:
                asked[:] = [time.monotonic(), sum(client.nthreads().values()) or 1]
            return asked[1]

        def top_up():
            """Submit tasks until 2 per thread are in flight, the source waits (WAIT) or it has ended."""
            while len(keys) < 2 * threads():
                item = todo.next()
                if item is None or item is WAIT:
                    break
                key, payload = item
                # pure=False: a chunk is deterministic, but resubmitting the
                # same key after an interruption must not reuse a stale result.
                # No retries: an error in a chunk is the same every time (a
                # policy's); a lost worker's chunks are moved by Dask anyway.
                future = client.submit(task, payload, pure=False)
                keys[future.key] = key
                pending.add(future)
            if not keys and not todo.ended:
                raise RuntimeError("the task source waits with no task in flight")

        top_up()
        while keys:
            future = next(pending)
            key = keys.pop(future.key)
            try:
                result = future.result()
            except CancelledError:  # every task is cancelled when the client loses the scheduler
                raise ConnectionError(f"lost the connection to the Dask scheduler at {scheduler}") from None
            future.release()
            yield key, result
            top_up()
    finally:
        if run is not None:
            with contextlib.suppress(Exception):  # this run's topic only: other runs on the cluster keep theirs
                client.unsubscribe_topic(run[0])
        client.close()
