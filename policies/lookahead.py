"""lookahead: expectimax one card ahead, with heuristic's evaluation at the leaves.

For each legal cell: place the card, then for each rank still in the stock
(weighted by how many cards of it remain) take the best follow-up cell by
heuristic's evaluation; play the cell with the highest expectation. A
winning placement is taken at once; a losing one only when all lose.
Immediate wins and losses at the leaves count as LEAF_WIN and LEAF_LOSS,
on the scale of the evaluation, so that a small chance of a win does not
drown every other difference.
"""

import numpy as np
from numba import njit

from policies.heuristic import LOSS, WEIGHTS, WIN, evaluate, stock_prefix
from sim.kernels import (
    RANKS, STATE_SIZE, STOCK, STOCK_LEFT, draw, legal_cells, place, trailing_zeros,
)

DESCRIPTION = "Expectimax one card ahead over the stock's ranks, heuristic at the leaves."
PARAMS = (WEIGHTS,)

LEAF_WIN = 1000.0
LEAF_LOSS = -1000.0


@njit(cache=True, inline="always")
def _leaf(v):
    if v >= WIN:
        return LEAF_WIN
    if v <= LOSS:
        return LEAF_LOSS
    return v


@njit(cache=True)
def expected_value(after, rules, weights, prefix):
    """Expected best evaluation over the next card, from the position `after`."""
    total = after[STOCK_LEFT]
    ev = 0.0
    for r in range(1, RANKS + 1):
        count = after[STOCK + r]
        if count == 0:
            continue
        draw(after, r)
        stock_prefix(after, prefix)
        legal = legal_cells(after, rules)
        best = LEAF_LOSS
        m = legal
        while m:
            cell = trailing_zeros(m)
            m &= m - 1
            v = _leaf(evaluate(after, rules, cell, r, weights, prefix))
            if v > best:
                best = v
        ev += count * best
        after[STOCK + r] += 1
        after[STOCK_LEFT] += 1
    return ev / total


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """`params` are heuristic's weights."""
    prefix = np.empty(RANKS + 1, np.int64)
    after = np.empty(STATE_SIZE, np.int64)
    stock_prefix(state, prefix)
    best_cell = -1
    best = -np.inf
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        v = evaluate(state, rules, cell, card, params, prefix)
        if v >= WIN:
            return cell
        if v > LOSS and state[STOCK_LEFT] > 0:
            after[:] = state
            place(after, rules, cell, card)
            v = expected_value(after, rules, params, prefix)
        if v > best:
            best = v
            best_cell = cell
    return best_cell
