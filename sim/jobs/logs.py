"""Logging for the command line: set up once, in the main process, before workers start."""

import logging
import sys

import multiprocessing_logging

LOGGER = "sim"


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Warnings by default; debug, per-chunk lines included, with -v (-vv adds nothing); errors only with --quiet.

    The level applies to the "sim" loggers; other libraries stay at warnings.

    multiprocessing-logging wraps the handler so that records logged in forked
    worker processes are shipped to this process and written here.
    """
    level = logging.ERROR if quiet else {0: logging.WARNING, 1: logging.DEBUG}.get(verbose, logging.DEBUG)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(processName)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger(LOGGER).setLevel(level)
    multiprocessing_logging.install_mp_handler(root)
