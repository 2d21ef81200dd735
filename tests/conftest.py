"""Shared test plumbing.

- tests/ goes on sys.path once, here, so test modules can ``import reference``
  (tests/reference.py, the slow reference implementation of RULES.md).
- ``read_games``: a fixture giving the function that reads a run directory's
  Parquet parts as one DataFrame, sorted by ``game``.

Long tests carry the ``slow`` marker (registered in pyproject.toml):
``python -m pytest -m "not slow"`` skips them.
"""

import signal
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
EXAMPLE_PLUGIN = f"{TESTS.parent / 'examples' / 'compiled_policy.py'}:choose"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# The interrupt tests send SIGINT and expect Python's KeyboardInterrupt. A suite started with SIGINT ignored
# (under nohup, or as a background job of a script) would pass the ignore on to every test process and to the
# commands they start, and sim leaves an ignored SIGINT ignored on purpose (`sim.jobs.runner`): the tests
# start from Python's own handler instead.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in handlers.items():
        signal.signal(s, handler)


WARM_UP_TASKS = (("planner", ()), ("lookahead", ()), ("oracle", ()), ("train", ("lookahead", "planner")),
                 ("rollout", ()), ("split", ("oracle",)), ("plugin", ()))
"""What the suite plays (and `sim train`'s self-play), compiled before the test workers start: (task, the
tasks it waits for), longest path first, each in a process of its own, two at a time.

The tasks compile nothing in common but what the main process has already
compiled (the kernels, greedy and heuristic), so two processes never write
the same cache files. Training plays lookahead's and planner's compiled
code from a compiled function of its own, loading it from the cache they
have filled, so it waits for both. "split" solves a deal whose search
splits into subtrees (compiled code of the solver's own, after the
oracle's). "plugin" compiles the game loop every compiled plugin plays
through (examples/compiled_policy.py's). In this order the two processes stay busy: on a 2-core machine
planner then train take about as long as lookahead, the oracle, rollout
and split."""

_WARM_UP = """
import sys
from sim.players.api import warm_up
name = sys.argv[1]
if name == "train":
    from sim.analysis.train import train
    train(n=2, rounds=2, validation_n=2)
elif name == "split":
    from sim import deal, solve
    solve(deal(0, 7), node_limit=20_000, split_after=1_000)  # a hard deal: it splits
elif name == "plugin":
    warm_up(sys.argv[2])
else:
    warm_up(name)
"""


def pytest_configure(config):
    """Before any test worker starts (pytest-xdist), fill numba's cache, without duplicate work.

    Workers then find the cache in step with the sources and never clean it
    under each other. Compiling is most of the suite's cost in a fresh
    clone, and two workers that need the same policy at the same time would
    both compile it; here every built-in policy is compiled exactly once, the
    costly ones two at a time (`WARM_UP_TASKS`), so the test workers only
    load them.
    """
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    if getattr(config.option, "numprocesses", None):
        from sim.players.api import warm_up

        warm_up("greedy")
        warm_up("heuristic")
        _warm_up_in_turns(WARM_UP_TASKS, slots=2)


def _warm_up_in_turns(tasks, slots: int) -> None:
    """Run each of `tasks` (see WARM_UP_TASKS) in a process of its own once the tasks it waits for are done,
    in their order, at most `slots` at a time."""
    import subprocess
    import time

    waiting = list(tasks)
    running = {}
    done = set()
    try:
        while waiting or running:
            for name, proc in list(running.items()):
                if proc.poll() is not None:
                    del running[name]
                    if proc.returncode:
                        raise pytest.UsageError(f"compiling {name} before the tests failed (see above)")
                    done.add(name)
            for task in list(waiting):
                name, needs = task
                if len(running) < slots and set(needs) <= done:
                    running[name] = subprocess.Popen([sys.executable, "-c", _WARM_UP, name, EXAMPLE_PLUGIN])
                    waiting.remove(task)
            if waiting and not running:
                raise pytest.UsageError(f"warm-up tasks wait for tasks that never run: {waiting}")
            time.sleep(0.05)
    finally:
        for proc in running.values():
            proc.kill()
            proc.wait()
