"""Logging for the command line: set up once, in the main process, before workers start."""

import logging
import sys

import multiprocessing_logging

LOGGER = "sim"


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Warnings by default, info with -v, debug (per-chunk lines) with -vv; errors only with --quiet.

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
