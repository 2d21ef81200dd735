"""A small process pool that knows which task each worker holds.

multiprocessing.Pool hangs when a worker dies mid-task, and
concurrent.futures cannot say which task died with it. Here every worker has
its own pipe, the main process hands out one task at a time, and it waits on
the pipes and the processes' sentinels together: a dead worker is noticed at
once and named with its task. Workers are forked, so they inherit the
compiled kernels and the logging handlers of the main process.

Guarantees:

- a task's result comes back with its key, or the pool raises WorkerDied or
  TaskFailed naming the key;
- at most one task per worker is in flight;
- on any exit of the caller (an error, KeyboardInterrupt, the generator
  closed) every worker is stopped and joined;
- workers never outlive the main process: each asks the kernel for SIGKILL
  when its parent dies (Linux's PR_SET_PDEATHSIG), and closes its copies of
  the main process's pipe ends, so a worker blocked on its pipe sees the
  end of it when the main process is gone, whatever killed it.
"""

import ctypes
import logging
import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait

log = logging.getLogger("sim.pool")


class WorkerDied(RuntimeError):
    """A worker process ended while it held a task."""

    def __init__(self, key, exitcode, what: str = "chunk"):
        self.key = key
        self.exitcode = exitcode
        how = f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        super().__init__(f"a worker process died ({how}) while running {what} {key}")


class TaskFailed(RuntimeError):
    """A task raised in a worker; the message carries the worker's traceback."""

    def __init__(self, key, message, what: str = "chunk"):
        self.key = key
        self.worker_traceback = message
        last = message.strip().splitlines()[-1] if message.strip() else "unknown error"
        kind, _, text = last.partition(": ")
        self.error_type = kind.rsplit(".", 1)[-1]
        """Class name of the exception raised in the worker."""
        self.error_message = text
        super().__init__(f"{what} {key} failed in a worker: {last}")


_PR_SET_PDEATHSIG = 1

WAIT = "wait"
"""A task source may yield WAIT instead of a task: nothing to hand out now, ask again after the next result
(a job whose results make new tasks, as a solve's hard deals do). It must not wait with nothing in flight."""


class Feed:
    """Pull tasks from an iterable that may yield WAIT: `next()` gives a task, WAIT, or None when it has ended."""

    def __init__(self, tasks: Iterable):
        self._it = iter(tasks)
        self.ended = False

    def next(self):
        """The next task, WAIT, or None once the source has ended (and from then on)."""
        if self.ended:
            return None
        item = next(self._it, None)
        if item is None:
            self.ended = True
        return item


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def _worker_main(fn, conn, initializer, parent_pid, inherited):
    # The main process decides what an interrupt means; a worker just stops
    # when told to, or when the main process terminates it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent_pid)
    for other in inherited:  # the main process's pipe ends, copied by fork
        other.close()
    if initializer is not None:
        initializer()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        key, payload = task
        try:
            result = fn(payload)
        except Exception:
            message = ("error", key, traceback.format_exc())
        else:
            message = ("ok", key, result)
        try:
            conn.send(message)
        except OSError:  # the main process is gone: nobody wants the result
            break
    conn.close()


def run_tasks(
    fn: Callable,
    tasks: Iterable[tuple[object, object]],
    workers: int,
    initializer: Callable | None = None,
    what: str = "chunk",
) -> Iterator[tuple[object, object]]:
    """Run fn(payload) for each (key, payload) in worker processes; yield (key, result) as they finish.

    `what` is what a task is called in the debug lines and the errors that name one ("chunk", "weight
    vector"), so that they speak of the caller's items.

    At most one task per worker is in flight, so memory does not grow with
    the number of tasks. `tasks` may yield WAIT (see there): idle workers are
    offered the next task after each result. Raises WorkerDied or TaskFailed
    naming the task; on any exit (including KeyboardInterrupt in the caller)
    the workers are stopped.
    """
    ctx = multiprocessing.get_context("fork")
    todo = Feed(tasks)
    procs, conns, holding = [], [], {}
    try:
        for w in range(workers):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker_main, args=(fn, child, initializer, os.getpid(), [*conns, parent]),
                            name=f"worker-{w + 1}", daemon=True)
            p.start()
            child.close()
            procs.append(p)
            conns.append(parent)

        def hand_out(w):
            item = todo.next()
            if item is None or item is WAIT:
                return
            key, payload = item
            holding[w] = key
            try:
                conns[w].send((key, payload))
            except OSError:
                procs[w].join(1)
                raise WorkerDied(key, procs[w].exitcode, what) from None
            log.debug("%s %s -> worker-%d", what, key, w + 1)

        def hand_out_all():
            for w in range(workers):
                if w not in holding:
                    hand_out(w)
            if not holding and not todo.ended:
                raise RuntimeError("the task source waits with no task in flight")

        hand_out_all()
        while holding:
            busy = list(holding)
            ready = wait([conns[w] for w in busy] + [procs[w].sentinel for w in busy])
            for w in busy:
                if conns[w] in ready or conns[w].poll():
                    try:
                        status, key, result = conns[w].recv()
                    except (EOFError, OSError):
                        procs[w].join(1)
                        raise WorkerDied(holding[w], procs[w].exitcode, what) from None
                    del holding[w]
                    if status == "error":
                        raise TaskFailed(key, result, what)
                    yield key, result
                    hand_out_all()
                elif procs[w].sentinel in ready:
                    procs[w].join(1)
                    raise WorkerDied(holding[w], procs[w].exitcode, what)
    finally:
        for w, p in enumerate(procs):
            if p.is_alive() and w not in holding:
                try:
                    conns[w].send(None)
                except OSError:
                    pass
        for w, p in enumerate(procs):
            if w in holding:
                p.terminate()
            p.join(2)
            if p.is_alive():
                p.kill()
                p.join()
        for c in conns:
            c.close()


def run_in_order(fn: Callable, tasks: Iterable, workers: int, what: str = "step") -> Iterator:
    """fn(task) for each task, yielded in the tasks' order; in worker processes (`run_tasks`) when `workers` > 1.

    For a caller that sums the results: summed in the tasks' order, floats
    come out the same bit for bit whatever the number of workers. A result
    that comes early waits here for those before it; no task is handed out
    more than 2 x `workers` ahead of the first unfinished one, so that few
    wait, however slow that one is. With one worker the tasks run in this
    process, one after another.
    """
    if workers <= 1:
        for task in tasks:
            yield fn(task)
        return
    following = 0  # the first task whose result is not yet yielded

    def feed():
        for i, task in enumerate(tasks):
            while i - following >= 2 * workers:  # task `following` is in flight: a result will come
                yield WAIT
            yield i, task

    waiting = {}
    for i, result in run_tasks(fn, feed(), workers, what=what):
        waiting[i] = result
        while following in waiting:
            result = waiting.pop(following)
            following += 1
            yield result
