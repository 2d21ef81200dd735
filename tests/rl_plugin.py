"""Policy plugins built with sim.rl.adapter, for tests/test_rl.py (loaded as tests/rl_plugin.py:NAME).

Each rebuilds the engine's visible state from the observation alone and
plays greedy's rule on it (policies.greedy.choose), so its games must equal
the built-in greedy's: the observation holds everything a policy sees.
"""

import numpy as np

import policies.greedy
from sim import kernels as K
from sim.engine.rules import Rules
from sim.rl import observation as O
from sim.rl.adapter import ObservationPolicy

RULES = Rules().as_array()
NO_PARAMS = np.empty(0, np.float64)


def state_from(obs: dict, rules: np.ndarray = RULES) -> np.ndarray:
    """The engine state (sim.kernels layout) an observation dict shows, derived entries rebuilt."""
    state = np.zeros(K.STATE_SIZE, np.int64)
    top = np.asarray(obs["top"]).reshape(-1).astype(np.int64)
    height = np.asarray(obs["height"]).reshape(-1).astype(np.int64)
    down = np.asarray(obs["face_down"]).reshape(-1)
    state[K.TOP:K.TOP + K.CELLS] = top
    state[K.HEIGHT:K.HEIGHT + K.CELLS] = height
    state[K.STOCK + 1:K.STOCK + 1 + K.RANKS] = obs["stock"]
    state[K.OCCUPIED] = sum(1 << c for c in range(K.CELLS) if height[c])
    state[K.FACE_DOWN] = sum(1 << c for c in range(K.CELLS) if down[c])
    state[K.TURN] = int(obs["turn"])
    state[K.STOCK_LEFT] = int(np.sum(obs["stock"]))
    K.recount(state, rules)
    return state


def greedy_act(obs: dict) -> int:
    """Greedy's cell for the observation's drawn card."""
    state = state_from(obs)
    legal = K.legal_cells(state, RULES)
    rng = np.zeros(1, np.uint64)
    return int(policies.greedy.choose(state, RULES, np.int64(obs["card"]), legal, rng, NO_PARAMS))


def greedy_flat(flat: np.ndarray) -> int:
    """greedy_act on the flat observation."""
    assert flat.shape == (159,) and flat.dtype == np.int8
    return greedy_act(O.as_dict(flat))


def greedy_scores(obs: dict, mask: np.ndarray) -> np.ndarray:
    """49 scores whose best legal cell is greedy's (the illegal cells score higher still: they must be skipped)."""
    scores = np.where(mask > 0, 0.0, 100.0)
    scores[greedy_act(obs)] = 1.0
    return scores


def first_cell(obs: dict) -> int:
    """Always cell 0: illegal on the first turn."""
    return 0


policy = ObservationPolicy(greedy_act)
flat_policy = ObservationPolicy(greedy_flat, flat=True)
scores_policy = ObservationPolicy(greedy_scores, mask=True)
bad_policy = ObservationPolicy(first_cell)


class Greedy(ObservationPolicy):
    """A plugin class with a --policy-arg, as a trained agent with a weights file would be."""

    def __init__(self, tie: str = "lowest"):
        if tie != "lowest":
            raise ValueError(f"tie must be lowest, not {tie!r}")
        super().__init__(greedy_act)


def stock_act(obs: dict, mask: np.ndarray) -> int:
    """A legal cell picked by the stock's count of the drawn card's rank: an agent that reads the stock."""
    legal = np.flatnonzero(mask)
    return int(legal[int(obs["stock"][obs["card"] - 1]) % len(legal)])


stock_policy = ObservationPolicy(stock_act, mask=True)
