"""foursquare-sim: a Monte Carlo simulator for Wil Su's solitaire Foursquare.

The rules are RULES.md's; the engine is compiled with numba. Start here::

    import sim
    sim.play(sim.deal(seed=0, game=0), policy="greedy")
"""

from importlib.metadata import PackageNotFoundError, version

from sim._cache import drop_stale_cache

drop_stale_cache()

# The engine imports below compile (or load from cache) on first use.

from sim.engine import Board, Placement
from sim.game import (
    END_NAMES,
    GameColumns,
    GameResult,
    PolicyError,
    deal,
    play,
    play_decks,
    play_range,
    warm_up,
)
from sim.rules import Rules
from sim.solver import SolveResult, solve

try:
    __version__ = version("foursquare-sim")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"



def __getattr__(name):
    # The runner pulls in polars; load it only when asked for.
    if name in ("run", "resume", "RunSummary"):
        from sim import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


__all__ = [
    "run", "resume", "RunSummary",
    "Board", "END_NAMES", "GameColumns", "GameResult", "Placement", "PolicyError", "Rules",
    "deal", "play", "play_decks", "play_range", "warm_up",
    "SolveResult", "solve",
]
