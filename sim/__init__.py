"""foursquare-sim: a Monte Carlo simulator for Wil Su's solitaire Foursquare.

The rules are RULES.md's; the engine is compiled with numba. Start here::

    import sim
    sim.play(sim.deal(seed=0, game=0), policy="greedy")
    sim.run(sim.RunConfig(policy="greedy", n=100_000), workers=2)

Names are loaded on first use (PEP 562), so ``import sim`` (and the CLI's
``--help``) imports neither numba nor polars.
"""

import importlib
import logging

from sim.version import __version__

# A library's warnings (files in a run that are not its parts, an incomplete run read) reach the program's
# logging set-up, the CLI's included, and are never printed by logging's last-resort handler otherwise.
logging.getLogger("sim").addHandler(logging.NullHandler())

_EXPORTS = {
    "Board": "sim.engine.board", "Placement": "sim.engine.board",
    "Rules": "sim.engine.rules",
    "deal": "sim.engine.cards",
    "END_NAMES": "sim.engine.results", "GameColumns": "sim.engine.results", "GameResult": "sim.engine.results",
    "GameTrace": "sim.engine.results", "PolicyError": "sim.engine.results",
    "play": "sim.players.api", "trace": "sim.players.api", "play_decks": "sim.players.api",
    "play_range": "sim.players.api", "warm_up": "sim.players.api",
    "SolveResult": "sim.solver.solver", "solve": "sim.solver.solver",
    "RunConfig": "sim.jobs.play", "RunSummary": "sim.jobs.play", "run": "sim.jobs.play",
    "SolveConfig": "sim.jobs.solve", "SolveSummary": "sim.jobs.solve", "solve_run": "sim.jobs.solve",
    "resume": "sim.jobs.resume",
    "load": "sim.analysis.datasets",
    "UsageError": "sim.errors", "RunError": "sim.errors", "Interrupted": "sim.errors",
}


_MODULES = ("kernels", "stats", "version", "engine", "solver", "players", "jobs", "analysis", "cli")


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return importlib.import_module(f"sim.{name}")
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = [
    "run", "resume", "RunSummary",
    "Board", "END_NAMES", "GameColumns", "GameResult", "Placement", "PolicyError", "Rules",
    "deal", "play", "play_decks", "play_range", "warm_up",
    "SolveResult", "solve",
    "RunConfig", "SolveConfig", "SolveSummary", "solve_run", "GameTrace", "trace",
    "load",
    "UsageError", "RunError", "Interrupted",
]
