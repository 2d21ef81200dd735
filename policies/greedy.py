"""greedy: RULES.md's reference policy, defined exactly so implementations agree.

For each legal cell the placement is tried with its row and column checks
and scored by the key (face-down top cards after, -(piles after), cell);
the smallest key is played: fewest face-down cards, then opening a new
pile, then the lowest canonical cell.

The key is packed into one integer, ``down * 128 + occupied * 64 + cell``,
and the loop has no data-dependent branches: it runs once per legal cell
of every turn, and this is the hot path of a greedy run.
"""

import numpy as np
from numba import njit

from sim.kernels import (
    COL_MASK, COL_OF, COL_UPS, FACE_DOWN, OCCUPIED, RANK_SHIFT, RANKS_AT_LEAST, RANKS_AT_MOST,
    ROW_MASK, ROW_OF, ROW_UPS, TOP, popcount, trailing_zeros,
)


@njit(cache=True, inline="always")
def choose(state, rules, card, legal, rng):
    occupied = state[OCCUPIED]
    face_down = state[FACE_DOWN]
    face_up = occupied & ~face_down
    above = RANKS_AT_LEAST[card]
    below = RANKS_AT_MOST[card]
    best = np.int64(1) << 40
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        bit = np.int64(1) << cell
        row = ROW_OF[cell]
        col = COL_OF[cell]
        # The covered top card of this cell takes no part in its lines' checks.
        own = ((face_up >> cell) & 1) << (RANK_SHIFT * state[TOP + cell])
        row_ups = state[ROW_UPS + row] - own
        col_ups = state[COL_UPS + col] - own
        row_fires = np.int64(((row_ups & above) == 0) | ((row_ups & below) == 0))
        col_fires = np.int64(((col_ups & above) == 0) | ((col_ups & below) == 0))
        others = occupied & ~bit
        turn = (others & ROW_MASK[row] & -row_fires) | (others & COL_MASK[col] & -col_fires)
        down = popcount((face_down & ~bit) ^ turn)
        key = (down << 7) | (((occupied >> cell) & 1) << 6) | cell
        best = min(best, key)
    return best & 63
