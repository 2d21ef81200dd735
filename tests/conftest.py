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


def interrupted_deals_run(tmp_path, decks: int, chunk_size: int):
    """A run of the first `decks` deals of seed 4 from a JSON lines file, as if interrupted: its third part gone
    and its manifest incomplete. Returns (deal file, run directory, every row it had)."""
    import json

    import sim

    path = tmp_path / "decks.jsonl"
    path.write_text("".join(json.dumps({"deck": [int(c) for c in sim.deal(4, g)]}) + "\n" for g in range(decks)))
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=None, deals=str(path)), out=out, workers=1, chunk_size=chunk_size)
    rows = games_of(out)
    m = json.loads((out / "manifest.json").read_text())
    (out / "games" / "part-00002.parquet").unlink()
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    return path, out, rows


@pytest.fixture
def read_games():
    """games_of: run directory -> its rows as one polars DataFrame, sorted by game."""
    return games_of


@pytest.fixture(autouse=True)
def signal_handlers_restored():
    """Each test starts with the SIGINT and SIGTERM handlers the last one started with.

    A command that stops on Ctrl-C ignores SIGINT from then on (`sim.cli.stopping`: its process is about to
    exit). Invoked in this process (typer's CliRunner), it would leave every later test here ignoring the
    SIGINT it sends to interrupt a run.
    """
    import signal

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in handlers.items():
        signal.signal(s, handler)


WARM_UP_GROUPS = (("lookahead", "planner", "train"), ("rollout", "oracle", "split"))
"""Policies the suite plays (and `sim train`'s self-play), compiled before the test workers start,
one group per process.

The groups share nothing but what the main process has already compiled
(the kernels, greedy and heuristic), so the two processes never write the
same cache files. Training plays lookahead's and planner's compiled code
from a compiled function of its own, loading it from the cache their group
has just filled, so it goes after them in their group. "split" lists a
split solve's subtrees (compiled code of the solver's own, after the
oracle's)."""

_WARM_UP = """
import sys
from sim.players.api import warm_up
for name in sys.argv[1:]:
    if name == "train":
        from sim.analysis.train import train
        train(n=2, rounds=2, validation_n=2)
    elif name == "split":
        from sim import deal, solve
        solve(deal(0, 7), node_limit=20_000, split_after=1_000)  # a hard deal: it splits
    else:
        warm_up(name)
"""


def pytest_configure(config):
    """Before any test worker starts (pytest-xdist), fill numba's cache, without duplicate work.

    Workers then find the cache in step with the sources and never clean it
    under each other. Compiling is most of the suite's cost in a fresh
    clone, and two workers that need the same policy at the same time would
    both compile it; here every built-in policy is compiled exactly once, the
    costly ones in two processes side by side, so the test workers only load
    them.
    """
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    if getattr(config.option, "numprocesses", None):
        import subprocess

        from sim.players.api import warm_up

        warm_up("greedy")
        warm_up("heuristic")
        procs = [subprocess.Popen([sys.executable, "-c", _WARM_UP, *group]) for group in WARM_UP_GROUPS]
        if any(p.wait() for p in procs):
            raise pytest.UsageError("compiling the built-in policies before the tests failed (see above)")
