"""The positions of a built-in policy's own games, for the benchmarks that time its `choose` on them."""

import numpy as np

import sim
from sim import kernels as K


def policy_positions(policy: str, deals: int, rules: sim.Rules, seed: int = 1):
    """Every position of `policy`'s games on deals 0..deals-1 of `seed`, the next card drawn.

    Returns (states, cards, legals, turns, drawn): the positions (sim.kernels state layout) as rows,
    the card drawn and the legal cells in each, its turn (the first card's is 0), and the ranks
    drawn so far (a tuple per position).
    """
    r = rules.as_array()
    states, cards, legals, turns, drawn = [], [], [], [], []
    for game in range(deals):
        deck = sim.deal(seed, game)
        state = np.zeros(K.STATE_SIZE, np.int64)
        K.reset(state)
        for turn, (card, cell) in enumerate(zip(deck, sim.play(deck, policy, rules, seed=seed, game=game).moves)):
            K.draw(state, card)
            turns.append(turn)
            drawn.append(tuple(int(c) for c in deck[:turn + 1]))
            states.append(state.copy())
            cards.append(int(card))
            legals.append(K.legal_cells(state, r))
            K.place(state, r, cell, card)
    return np.array(states), np.array(cards), np.array(legals, np.int64), np.array(turns), drawn
