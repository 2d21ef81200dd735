"""random: a uniformly random legal cell, a baseline every policy should beat.

One draw from the game's policy stream per turn (even with one legal cell),
so its choices depend only on (seed, game) and the deck.
"""

from numba import njit

from sim.kernels import next_below, nth_cell, popcount

DESCRIPTION = "A uniformly random legal cell (baseline)."
PARAMS = ()

@njit(cache=True, inline="always")
def choose(state, rules, card, legal, rng, params):
    """Any legal cell, equally likely; `params` is empty."""
    return nth_cell(legal, next_below(rng, popcount(legal)))
