"""rollout: flat Monte Carlo over the unseen stock.

For each legal cell, play the rest of the game `samples` times with a base
policy (greedy or heuristic) on random orders of the cards still in the
stock: the same orders for every candidate, so candidates are compared on
common random numbers. Play the cell with the most wins; ties go to the
better mean outcome (score of a win, minus cards short of 40 for a loss),
then to the lower cell. Only the stock's composition is used, never its
order, and the orders come from one draw of the game's policy stream per
turn, so the choice depends only on (seed, game, turn) and the position.

params: [samples, base (0 = greedy, 1 = heuristic), heuristic weights...]
"""

import numpy as np
from numba import njit

import policies.greedy
import policies.heuristic
from policies.heuristic import WEIGHTS
from policies.params import Param, choice, integer
from sim.kernels import (
    DECK_SIZE, END_WIN, RANKS, STATE_SIZE, STOCK, STOCK_LEFT, TURN, end_of_turn, mix64, next_u64, place,
    play_turns, popcount, trailing_zeros,
)

DESCRIPTION = "Flat Monte Carlo: playouts of the rest of the game on random stock orders."
PARAMS = (
    Param("samples", "64", "playouts per legal cell", integer("rollout", "samples", 1, 100_000)),
    Param("base", "heuristic", "policy that plays the playouts: greedy or heuristic",
          choice("rollout", "base", {"greedy": 0.0, "heuristic": 1.0})),
    WEIGHTS,
)

P_SAMPLES = 0
P_BASE = 1
P_WEIGHTS = 2
BASE_GREEDY = 0


@njit(cache=True)
def playout(state, rules, order, base, weights, rng, moves, fired):
    """Play the cards of `order` from `state` with the base policy; (won, outcome).

    The outcome is the score of a win, or minus the cards short of 40 for a
    loss. `moves` and `fired` are scratch arrays of the turn loop.
    """
    if base == BASE_GREEDY:
        end, _ = play_turns(policies.greedy.choose, order, state, rules, weights, rng, moves, fired)
    else:
        end, _ = play_turns(policies.heuristic.choose, order, state, rules, weights, rng, moves, fired)
    if end == END_WIN:
        return True, float(state[STOCK_LEFT])
    return False, -float(DECK_SIZE - state[TURN])


@njit(cache=True)
def shuffled_stock(state, key, sample, order):
    """order[:n] = the stock's cards in a random order keyed by (key, sample); returns n."""
    n = 0
    for r in range(1, RANKS + 1):
        for _ in range(state[STOCK + r]):
            order[n] = r
            n += 1
    x = mix64(key ^ np.uint64(sample))
    for i in range(n - 1, 0, -1):
        x = mix64(x + np.uint64(0x9E3779B97F4A7C15))
        j = np.int64(x % np.uint64(i + 1))
        t = order[i]
        order[i] = order[j]
        order[j] = t
    return n


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """The cell whose playouts win most; heuristic's choice when only one cell is legal or the stock is empty."""
    key = next_u64(rng)  # one draw per turn, so orders depend only on (seed, game, turn)
    if popcount(legal) == 1 or state[STOCK_LEFT] == 0:
        return policies.heuristic.choose(state, rules, card, legal, rng, params[P_WEIGHTS:])
    samples = int(params[P_SAMPLES])
    base = int(params[P_BASE])
    weights = params[P_WEIGHTS:]
    cells = np.empty(64, np.int64)
    n_cells = 0
    m = legal
    while m:
        cells[n_cells] = trailing_zeros(m)
        m &= m - 1
        n_cells += 1
    wins = np.zeros(n_cells, np.int64)
    outcome = np.zeros(n_cells)
    order = np.empty(DECK_SIZE, np.uint8)  # the cards of a deck, as a run deals them: the base's compiled choose
    sim_state = np.empty(STATE_SIZE, np.int64)
    playout_rng = np.empty(1, np.uint64)
    moves = np.empty(DECK_SIZE, np.int64)
    fired = np.empty(DECK_SIZE, np.int64)
    for s in range(samples):
        n = shuffled_stock(state, key, s, order)
        for i in range(n_cells):
            sim_state[:] = state
            place(sim_state, rules, cells[i], card)
            end = end_of_turn(sim_state, rules)
            if end >= 0:
                won = end == END_WIN
                value = float(sim_state[STOCK_LEFT]) if won else -float(DECK_SIZE - sim_state[TURN])
            else:
                playout_rng[0] = mix64(key + np.uint64(s))
                won, value = playout(sim_state, rules, order[:n], base, weights, playout_rng, moves, fired)
            wins[i] += won
            outcome[i] += value
    best = 0
    for i in range(1, n_cells):
        if wins[i] > wins[best] or (wins[i] == wins[best] and outcome[i] > outcome[best]):
            best = i
    return cells[best]
