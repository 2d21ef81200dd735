"""Logging for the command line: set up once, in the main process, before workers start."""

import logging
import os
import sys

import multiprocessing_logging

LOGGER = "sim"


class _Stderr(logging.StreamHandler):
    """A stream handler on whatever sys.stderr is when a record comes.

    Records from workers are written by a thread, possibly after the command
    that set this up has returned; in one process that runs several
    commands (a test runner, a notebook) the stderr of that command may be
    closed by then.
    """

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass

    def emit(self, record):
        """Through tqdm, which takes a progress bar off the line, writes, and draws the bar again below."""
        from tqdm import tqdm

        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:
            self.handleError(record)


_WAKE = None
"""What `_Shipped.close` puts on the queue to end its receiving thread (no record is None)."""


class _Shipped(multiprocessing_logging.MultiProcessingHandler):
    """Ships the forked workers' records to this process; writes this process's own at once.

    The library's handler queues every record, this process's too, so that
    they are written by its thread a moment later, out of order with what
    the command prints.
    """

    def __init__(self, sub_handler):
        super().__init__("mp-handler-sim", sub_handler=sub_handler)
        self._pid = os.getpid()

    def emit(self, record):
        if os.getpid() == self._pid:
            self.sub_handler.handle(record)
        else:
            super().emit(record)

    def _receive(self):
        """The receiving thread: writes the workers' records until `close` puts `_WAKE` after them.

        The library's own loop waits for a record up to 0.2 s at a time and
        looks for the close between waits, so every command's exit waited
        for it up to that long.
        """
        while True:
            try:
                record = self.queue.get()
            except (EOFError, OSError):  # the queue was closed under it
                break
            if record is _WAKE:
                break
            self.sub_handler.emit(record)
        self.queue.close()
        self.queue.join_thread()

    def close(self):
        """Ends the receiving thread once it has written every record queued so far.

        Only this process's handler has that thread: a forked worker's copy
        shares the queue, so it must not put the wake-up there.
        """
        if self._is_closed:
            return
        self._is_closed = True
        if os.getpid() == self._pid:
            self.queue.put_nowait(_WAKE)
            self._receive_thread.join(5.0)
        self.sub_handler.close()
        logging.Handler.close(self)


DASK_LOGGERS = ("distributed", "asyncio")
"""Loggers whose records are Dask's own, shown only with -v: its client's, and those of the asyncio event loop the
client runs on (sim's own code awaits every future it makes), such as a timeout inside Dask left unread as a
client closes ("Future exception was never retrieved"), written as an ERROR even under --quiet."""


def _not_dask(record: logging.LogRecord) -> bool:
    """Whether the record is not from one of `DASK_LOGGERS` (or a child of one)."""
    return record.name.split(".")[0] not in DASK_LOGGERS


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Warnings by default; debug, per-chunk lines included, with -v (-vv adds nothing); errors only with --quiet.

    The level applies to the "sim" loggers; other loggers (a plugin's own, Python's warnings, captured)
    stay at warnings, and errors only with --quiet. Dask's client logs its
    own view of a failure the run reports in one line, and its event loop
    the noise of its shutdown: shown only with -v (`DASK_LOGGERS`).

    multiprocessing-logging wraps the handler so that records logged in forked
    worker processes are shipped to this process and written here. The pool
    forks its workers whatever the default start method is (forkserver on
    Linux from Python 3.14, or spawn if a program using sim sets it), so the
    library's own check of that default, in `install_mp_handler`, is not
    used. Called
    again in the same process, it keeps that handler (and its thread) rather
    than starting another.
    """
    level = logging.ERROR if quiet else {0: logging.WARNING, 1: logging.DEBUG}.get(verbose, logging.DEBUG)
    root = logging.getLogger()
    shipped = next((h for h in root.handlers if isinstance(h, _Shipped)), None)
    for h in list(root.handlers):
        if h is not shipped:
            root.removeHandler(h)
    if shipped is None:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(levelname)s %(processName)s: %(message)s"))
        root.addHandler(_Shipped(handler))
    root.setLevel(logging.ERROR if quiet else logging.WARNING)
    logging.getLogger(LOGGER).setLevel(level)
    writer = next(h for h in root.handlers if isinstance(h, _Shipped)).sub_handler
    for f in list(writer.filters):
        writer.removeFilter(f)
    if not verbose:  # Dask sets its loggers' levels itself when imported: filtered here instead
        writer.addFilter(_not_dask)
    logging.captureWarnings(True)
