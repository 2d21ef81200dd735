"""Where a job's chunks run: the local process pool, or a Dask cluster.

Both take the same pure task function (payload -> numpy columns) and yield
(key, result) as chunks finish; the main process writes every part, so a
Dask cluster needs no shared filesystem, and a run's rows are the same
whichever executor played them. Dask reschedules the chunks of a worker it
loses; since a chunk is a pure function of its payload, the rows do not
change.
"""

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

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


def make_executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None) -> Executor:
    """Check the choice up front: a one-line error says what is wrong or what to install."""
    if kind not in EXECUTORS:
        raise ExecutorError(f"unknown executor {kind!r}; executors: {', '.join(EXECUTORS)}")
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


def _worker_logging(level: int):
    """A Dask worker plugin that sets a worker's logging as `setup_logging` sets this process's: "sim" at
    `level`, Python's warnings as log records. Registered with the cluster, it reaches workers that join
    later too."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class Logging(WorkerPlugin):
        def setup(self, worker):
            logging.getLogger("sim").setLevel(level)
            logging.captureWarnings(True)

    return Logging()


def _forward_logs(client) -> None:
    """Have the workers' log records written here, as a local run's are: "sim" at this process's level (-v:
    each chunk's line), other loggers (a plugin's own, its warnings) at warnings (errors only with --quiet)."""
    level = logging.getLogger("sim").getEffectiveLevel()
    client.register_plugin(_worker_logging(level), name="foursquare-sim-logging")
    client.forward_logging(level=min(level, logging.getLogger().getEffectiveLevel()))


def run_dask(fn: Callable, tasks: Iterable, scheduler: str, warm: Callable | None = None) -> Iterator:
    """Submit chunks to a Dask cluster, a bounded number at a time; yield (key, result) as they finish.

    `warm` runs once on each worker before any chunk, one worker at a time, so
    that workers sharing a disk load numba's cache instead of racing to
    write it.
    """
    from concurrent.futures import CancelledError

    from distributed import Client, as_completed

    try:
        client = Client(scheduler, set_as_default=False, timeout="10s")
    except Exception as e:
        raise ExecutorError(f"cannot reach the Dask scheduler at {scheduler}: {str(e).splitlines()[0]}") from None
    try:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
        if not workers:
            log.warning("no Dask worker is connected to %s yet; the run waits for one", scheduler)
        _forward_logs(client)
        if warm is not None:
            for address in workers:
                client.run(warm, workers=[address])
        threads = sum(w["nthreads"] for w in client.scheduler_info(n_workers=-1)["workers"].values()) or 1
        todo = Feed(tasks)
        pending = as_completed(loop=client.loop)
        keys = {}

        def top_up():
            """Submit tasks until 2 per thread are in flight, the source waits (WAIT) or it has ended."""
            while len(keys) < 2 * threads:
                item = todo.next()
                if item is None or item is WAIT:
                    break
                key, payload = item
                # pure=False: a chunk is deterministic, but resubmitting the
                # same key after an interruption must not reuse a stale result.
                # No retries: an error in a chunk is the same every time (a
                # policy's); a lost worker's chunks are moved by Dask anyway.
                future = client.submit(fn, payload, pure=False)
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
        with contextlib.suppress(Exception):  # the workers stop sending this run's log records
            client.unforward_logging()
        client.close()
