"""Shared test plumbing.

- tests/ goes on sys.path once, here, so test modules can ``import reference``
  (tests/reference.py, the slow reference implementation of RULES.md).
- ``read_games``: a fixture giving the function that reads a run directory's
  Parquet parts as one DataFrame, sorted by ``game``.

Long tests carry the ``slow`` marker (registered in pyproject.toml):
``python -m pytest -m "not slow"`` skips them.
"""

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def games_of(run_dir):
    """Every row of a run directory's parts (``games/part-*.parquet``), sorted by game."""
    import polars as pl

    return pl.read_parquet(Path(run_dir) / "games" / "*.parquet").sort("game")


@pytest.fixture
def read_games():
    """games_of: run directory -> its rows as one polars DataFrame, sorted by game."""
    return games_of


def pytest_configure(config):
    """Before any test worker starts (pytest-xdist), settle numba's cache once, in one process.

    Workers then find it in step with the sources and never clean it under
    each other; greedy's game loop, which most test files play, is compiled
    here so that two workers do not both compile it at once.
    """
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    if getattr(config.option, "numprocesses", None):
        from sim.players.api import warm_up

        warm_up("greedy")
