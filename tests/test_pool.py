"""The worker pool: results, a dead worker named with its task, worker logs reaching the main process."""

import logging
import os
import threading

import pytest

from sim.jobs.logs import _Shipped, _Stderr, setup_logging
from sim.jobs.pool import TaskFailed, WorkerDied, run_tasks


def square(x):
    return x * x


def die_on_three(x):
    if x == 3:
        os._exit(7)
    return x


def raise_on_two(x):
    if x == 2:
        raise ValueError("bad payload 2")
    return x


def warn(x):
    logging.getLogger("sim.test").warning("warning from worker pid %d about task %d", os.getpid(), x)
    return os.getpid()


def test_every_task_runs_once():
    got = dict(run_tasks(square, ((k, k) for k in range(20)), workers=3))
    assert got == {k: k * k for k in range(20)}


def test_a_dead_worker_is_named_with_its_task():
    with pytest.raises(WorkerDied) as e:
        list(run_tasks(die_on_three, ((f"chunk-{k}", k) for k in range(6)), workers=2))
    assert e.value.key == "chunk-3" and e.value.exitcode == 7
    assert "chunk-3" in str(e.value)


def test_an_exception_in_a_worker_is_reported_with_its_task():
    with pytest.raises(TaskFailed, match="chunk 2 failed in a worker: ValueError: bad payload 2"):
        list(run_tasks(raise_on_two, ((k, k) for k in range(5)), workers=2))


def test_the_caller_names_its_tasks_in_debug_lines_and_errors(caplog):
    # sim tune hands out weight vectors, not chunks: its -v lines and errors say so.
    with caplog.at_level(logging.DEBUG, logger="sim.pool"):
        assert dict(run_tasks(square, ((k, k) for k in range(2)), workers=1, what="weight vector")) == {0: 0, 1: 1}
    said = [r.getMessage() for r in caplog.records if r.name == "sim.pool"]
    assert said == ["weight vector 0 -> worker-1", "weight vector 1 -> worker-1"]
    with pytest.raises(TaskFailed, match="^weight vector 2 failed in a worker: ValueError: bad payload 2$"):
        list(run_tasks(raise_on_two, ((k, k) for k in range(5)), workers=2, what="weight vector"))
    with pytest.raises(WorkerDied, match="while running weight vector 3$"):
        list(run_tasks(die_on_three, ((k, k) for k in range(6)), workers=2, what="weight vector"))


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_worker_warnings_reach_the_main_process_handler():
    setup_logging(verbose=0)
    root = logging.getLogger()
    mp_handler = root.handlers[0]
    collect = Collect()
    mp_handler.sub_handler = collect  # what the main process's handler receives
    try:
        pids = dict(run_tasks(warn, ((k, k) for k in range(4)), workers=2)).values()
        import time

        deadline = time.time() + 5
        while len(collect.records) < 4 and time.time() < deadline:
            time.sleep(0.05)
    finally:
        root.removeHandler(mp_handler)
        mp_handler.close()
    assert len(collect.records) == 4
    assert {r.process for r in collect.records} == set(pids)
    assert os.getpid() not in set(pids)
    assert all(r.levelno == logging.WARNING and "warning from worker" in r.getMessage() for r in collect.records)


class Kept(_Stderr):
    """The command line's writer, keeping each record's message instead, and counting them (`written`)."""

    def __init__(self):
        super().__init__()
        self.messages = []
        self.written = threading.Semaphore(0)

    def emit(self, record):
        self.messages.append(record.getMessage())
        self.written.release()


def test_closing_the_log_handler_wakes_its_thread():
    """The handler's thread waits for records; closing it (at every command's exit) must not wait out that wait.

    Here the thread's wait has no timeout at all, so without the wake-up it would never see the close.
    """
    class Unpolled:
        """The handler's queue, except that `get` waits for a record however long that takes (no poll)."""

        def __init__(self, queue):
            self._queue = queue

        def get(self, timeout=None):
            return self._queue.get()

        def __getattr__(self, name):
            return getattr(self._queue, name)

    kept = Kept()
    handler = _Shipped(kept)
    handler.queue = Unpolled(handler.queue)
    record = logging.LogRecord("sim.test", logging.WARNING, __file__, 1, "first %d", (1,), None)
    handler.queue.put_nowait(handler._format_record(record))
    assert kept.written.acquire(timeout=10)  # from now on the thread waits in Unpolled.get, with no timeout
    handler.queue.put_nowait(logging.LogRecord("sim.test", logging.WARNING, __file__, 2, "second", (), None))
    assert kept.written.acquire(timeout=10)
    handler.close()
    assert not handler._receive_thread.is_alive()
    assert kept.messages == ["first 1", "second"]


def test_a_forked_copy_of_the_log_handler_closing_leaves_this_process_receiving():
    """A worker inherits the handler; its copy closing (at its exit) must not end this process's receiving."""
    import multiprocessing

    kept = Kept()
    handler = _Shipped(kept)
    fork = multiprocessing.get_context("fork")
    try:
        closer = fork.Process(target=handler.close)
        closer.start()
        closer.join()
        record = logging.LogRecord("sim.test", logging.WARNING, __file__, 1, "from a worker %d", (2,), None)
        worker = fork.Process(target=handler.emit, args=(record,))
        worker.start()
        worker.join()
        assert kept.written.acquire(timeout=10)
        assert kept.messages == ["from a worker 2"]
        assert handler._receive_thread.is_alive()
    finally:
        handler.close()
    assert not handler._receive_thread.is_alive()


def _wait_for_file_on_task_0(task):
    """Task 0 waits until the file it names exists (at most 10 s); the others return at once."""
    import time

    i, path = task
    deadline = time.monotonic() + 10
    while i == 0 and not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return i


def test_results_come_in_the_tasks_order_and_none_is_handed_out_far_ahead_of_a_slow_one(tmp_path):
    from sim.jobs.pool import run_in_order

    release = tmp_path / "release"
    released = threading.Event()
    pulled = []

    def tasks():
        for i in range(20):
            pulled.append((i, released.is_set()))
            yield i, str(release)

    def release_task_0():
        import time

        time.sleep(0.5)  # meanwhile the other worker would run every later task, were nothing holding it back
        released.set()
        release.touch()

    threading.Thread(target=release_task_0, daemon=True).start()
    assert list(run_in_order(_wait_for_file_on_task_0, tasks(), workers=2)) == list(range(20))
    before = [i for i, after in pulled if not after]
    assert max(before) <= 2 * 2  # handed out: at most 2 x workers past task 0, while task 0 runs
    assert list(run_in_order(square, iter(range(5)), workers=1)) == [0, 1, 4, 9, 16]
