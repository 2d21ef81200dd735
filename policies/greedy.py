"""greedy: RULES.md's reference policy, defined exactly so implementations agree.

For each legal cell the placement is tried with its row and column checks
and scored by the key (face-down top cards after, -(piles after), cell);
the smallest key is played: fewest face-down cards, then opening a new
pile, then the lowest canonical cell.

The key is packed into one integer, ``down * 128 + occupied * 64 + cell``.
The loop over the legal cells is the hot path of a greedy run, so it has no
data-dependent branches, and what does not depend on the cell is worked out
once per turn: the face-up tops ranked at least / at most the card, as masks.
A cell's checks then only need its row's and column's other cells
(`sim.kernels.line_turns`).
"""

import numpy as np
from numba import njit

from sim.kernels import (
    COL_OTHERS_OF, FACE_DOWN, OCCUPIED, ROW_OTHERS_OF, line_turns, popcount, ranks_above_and_equal,
    trailing_zeros,
)

DESCRIPTION = "RULES.md's reference policy: fewest face-down cards, then a new pile, then the lowest cell."
PARAMS = ()

KEY_DOWN_SHIFT = 7  # key = down << 7 | occupied << 6 | cell
KEY_OCCUPIED_SHIFT = 6
KEY_CELL = 63


@njit(cache=True, inline="always")
def choose(state, rules, card, legal, rng, params):
    """The legal cell leaving the fewest face-down tops (then a new pile, then the lowest cell); no params."""
    occupied = state[OCCUPIED]
    face_down = state[FACE_DOWN]
    above, same = ranks_above_and_equal(state, card)
    face_up = occupied & ~face_down
    higher = face_up & (above | same)  # face-up tops ranked >= card
    lower = face_up & ~above  # face-up tops ranked <= card
    best = np.int64(1) << 40
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        turn = line_turns(ROW_OTHERS_OF[cell], higher, lower) | line_turns(COL_OTHERS_OF[cell], higher, lower)
        # The new card covers the cell's top card (face down or not).
        down = popcount((face_down ^ (turn & occupied)) & ~(np.int64(1) << cell))
        key = (down << KEY_DOWN_SHIFT) | (((occupied >> cell) & 1) << KEY_OCCUPIED_SHIFT) | cell
        best = min(best, key)
    return best & KEY_CELL
