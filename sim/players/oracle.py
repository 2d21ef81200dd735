"""The `oracle` policy: the solver playing a game. It SEES THE STOCK, unlike every other policy.

It plays the best winning line the solver (`sim.solver`) finds within
``--policy-arg nodes=N`` search nodes per deal (default 100,000;
reproducible, no time limit); when the solver finds no win there, it plays
greedy's game. Its game rows are what replaying those lines through the
engine's turn loop gives.

The solver itself is imported where a game is solved: a run of any other
policy reads this module (the oracle's options and its line in `sim
policies`) without paying for the solver's import, about a tenth of a
second of every `sim run`'s start.
"""

from typing import TYPE_CHECKING

import numpy as np

from sim import kernels as K
from sim.engine.cards import deal
from sim.engine.loop import play_line
from sim.engine.results import GameTrace
from sim.engine.rules import Rules
from sim.solver.settings import MAX_COUNT, too_large

if TYPE_CHECKING:
    from sim.solver.solver import Solver

ORACLE_NODES = 100_000
"""The oracle's default node limit per deal."""
ORACLE_ROW = ("oracle", "SEES THE STOCK: the best winning line the solver (sim solve) finds in `nodes` nodes, "
              "else greedy's game.", f"nodes={ORACLE_NODES}")
"""The oracle's line in `sim policies`."""
ORACLE_PARAMS = frozenset({"nodes"})
"""The --policy-arg names the oracle takes."""


def oracle_options(policy_args: dict | None) -> int:
    """The oracle's node limit from its --policy-arg values (ValueError when bad)."""
    args = dict(policy_args or {})
    unknown = set(args) - ORACLE_PARAMS
    if unknown:
        raise ValueError(f"policy 'oracle' has no parameter {', '.join(sorted(unknown))}; it takes: nodes")
    text = str(args.get("nodes", ORACLE_NODES))
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        value = 0.0
    if value > MAX_COUNT:  # a positive integer still, which the error should not deny
        raise ValueError(f"policy 'oracle': {too_large('nodes', value)}")
    nodes = int(value) if value.is_integer() else 0
    if nodes < 1:
        raise ValueError(f"policy 'oracle': nodes={text!r} is not a positive integer")
    return nodes


def oracle_args(policy_args: dict[str, str]) -> dict[str, str]:
    """The oracle's --policy-arg values as a run records them: nodes as the number searched, so that nodes=1e5
    and nodes=100_000 are one setting (ValueError when bad)."""
    return {"nodes": str(oracle_options(policy_args))} if "nodes" in policy_args else dict(policy_args)


def oracle_game(deck: np.ndarray, rules: Rules, nodes: int, solver: "Solver | None" = None) -> GameTrace | None:
    """The solver's best line for a checked deck, replayed through the engine; None when it found no win."""
    from sim.solver.solver import shared_solver

    solver = solver or shared_solver()
    result = solver.solve(deck, rules, node_limit=nodes)
    if result.outcome != "won":
        return None
    moves = np.array(result.moves, np.int64)
    state = np.empty(K.STATE_SIZE, np.int64)
    fired = np.zeros(K.DECK_SIZE, np.int64)
    code, played = play_line(deck.astype(np.int64), moves, len(moves), rules.as_array(), state, fired)
    if code != K.END_WIN or K.DECK_SIZE - played != result.score:  # never: the tests replay every line
        raise RuntimeError(f"the solver's line does not replay to its win: {result}")
    return GameTrace(int(code), int(played), tuple(result.moves), tuple(fired[:played].tolist()), state)


def oracle_rows(decks: np.ndarray, rules: Rules, nodes: int, cols: dict) -> None:
    """Overwrite the rows of a batch (greedy's games) where the solver finds a win for the deck."""
    from sim.solver.solver import shared_solver

    solver = shared_solver()
    for i, deck in enumerate(decks):
        g = oracle_game(deck, rules, nodes, solver)
        if g is None:
            continue  # greedy's game stands
        cols["score"][i] = K.DECK_SIZE - g.cards_played
        cols["cards_played"][i] = g.cards_played
        cols["face_down"][i] = g.state[K.FACE_DOWN_COUNT]
        cols["piles"][i] = g.state[K.PILES]
        cols["end"][i] = g.end


def warm_up_solver(splits: bool = False) -> None:
    """Compile (or load from numba's cache) the solver, with a small table, before workers start; with `splits`,
    what a split solve adds."""
    from sim.solver.solver import warm_up

    warm_up(splits)
    deck = np.array(deal(0, 0), np.uint8)
    play_line(deck.astype(np.int64), np.full(K.DECK_SIZE, K.CENTRE, np.int64), 1, Rules().as_array(),
              np.empty(K.STATE_SIZE, np.int64), np.zeros(K.DECK_SIZE, np.int64))
