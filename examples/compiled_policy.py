"""A compiled policy plugin: keep piles low, the lowest legal cell among the emptiest piles.

Run it with:

    sim run --policy examples/compiled_policy.py:choose -n 1e5

A compiled plugin is a numba-jitted function with the contract of
policies/__init__.py: choose(state, rules, card, legal, rng, params) -> cell.
It runs inside a compiled game loop at full speed (after a one-time compile
in the main process). `params` holds the --policy-arg values as floats, in
the order given; this policy takes none.
"""

from numba import njit

from sim.kernels import HEIGHT, trailing_zeros


@njit
def choose(state, rules, card, legal, rng, params):
    best_cell = -1
    best_height = 1 << 30
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        if state[HEIGHT + cell] < best_height:
            best_height = state[HEIGHT + cell]
            best_cell = cell
    return best_cell
