"""lookahead: expectimax one card ahead, with heuristic's evaluation at the leaves.

For each legal cell: place the card, then for each rank still in the stock
(weighted by how many cards of it remain) take the best follow-up cell by
heuristic's evaluation; play the cell with the highest expectation (the
lowest cell among equals). A winning placement is taken at once; a losing
one only when all lose. Immediate wins and losses at the leaves count as
LEAF_WIN and LEAF_LOSS, on the scale of the evaluation, so that a small
chance of a win does not drown every other difference.

`choose_exhaustive` is that definition written out leaf by leaf (the
reference the tests hold `choose` to). `choose` makes exactly the same
choices, several times faster: the evaluation is a sum over cells and
lines, and a follow-up placement changes only its own row and column and
the lines crossing the cells it turns, so with per-position tables of each
line's value and of what turning each pile adds, for every rank
(`_prepare`), each leaf is a handful of lookups (`rank_bests`), and the
follow-up cells go by descending upper bound over the ranks in the stock
(each fired pattern that one of them brings about, with each term at its
largest), stopping at the first that is below every rank's best so far.
A root cell is cut off as soon as its expectation, with each rank's best so
far or a bound on every follow-up still to come if larger, is sure to stay
more than 2 margins below the best root's so far (`cuts_off`). Those sums
round differently from `evaluate`, by far less than `_margin`; when several
cells come within the margin of the best expectation, their exact
expectations (the same operations in the same order as `expected_value`,
over the follow-ups that can be best) decide, so ties and near-ties go
exactly as in `choose_exhaustive`.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from policies.heuristic import (
    F_CLOSED, F_FACE_DOWN, F_FULL_DOWN, F_FULL_UP, F_RISK, F_SPREAD, F_TO_OPEN, LOSS, WEIGHTS, WIN, evaluate,
    nibble, stock_prefix,
)
from sim.kernels import (
    CELLS, COL_MASK, COL_OF, COL_OTHERS_OF, COL_UPS, FACE_DOWN, FULL, HEIGHT, MAX_COL, MAX_ROW, MIN_COL, MIN_ROW,
    OCCUPIED, RANK_SHIFT, RANKS, ROW_MASK, ROW_OF, ROW_OTHERS_OF, ROW_UPS, RULE_GRID, RULE_MAX_FACE_DOWN,
    RULE_MAX_PILE, SIDE, STATE_SIZE, STOCK, STOCK_LEFT, TOP, borrowed, draw, face_down_after, legal_cells, place,
    popcount, trailing_zeros,
)

DESCRIPTION = "Expectimax one card ahead over the stock's ranks, heuristic at the leaves."
PARAMS = (WEIGHTS,)

LEAF_WIN = 1000.0
LEAF_LOSS = -1000.0

LINES = 2 * SIDE
"""Rows 0..6, then columns 0..6 as lines 7..13."""


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
def choose_exhaustive(state, rules, card, legal, rng, params):
    """The definition, leaf by leaf (the reference `choose` must agree with); `params` are heuristic's weights."""
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


# --- the fast path ------------------------------------------------------------------------------
#
# A leaf's value is a sum over cells (face-down, piles, full piles) and over lines (risk, spread,
# closed). Placing rank r on cell c changes c's row and column, and, when a check fires, the
# lines crossing the cells it turns (each holds exactly one of them); every other line keeps
# its value, which depends on r only through whether r is inside its face-up range (drawing r
# takes one card out of its outside exactly when r is outside). So a position's tables
# (`_prepare`: each line's value and what turning each pile adds to its lines, per rank) make
# each leaf a handful of lookups (`_rank_loops`). The same tables' largest values over the
# ranks (and `_fire_tables`) bound a follow-up cell over every rank at once, so that the cells
# that cannot be any rank's best (most piles a card would cover) skip the loop over the ranks.

FLIPS = 9
"""A line holds at most 4 piles, so its flip count (occupied - 2 * face-down) is -4..4: index flip + 4."""
NONE_LO = RANKS + 1
"""The range (NONE_LO, 0) of a line without face-up tops: min/max with a rank r give (r, r)."""
ALL_RANKS = np.int64((1 << (RANKS + 1)) - 2)
"""Bits 1..10: every rank, in the bit masks of `_inside`."""
NO_UPS = 0
"""table[.., NO_UPS, NO_UPS]: the value of a line whose tops are all face down."""


@njit(cache=True)
def _margin(weights):
    """A bound, with room to spare, on how far this section's sums can stray from `evaluate`'s.

    Every feature is at most 200 in size, every partial sum of a leaf stays
    under 1,000 * sum|w| (the steps of base and turn_sum over the ranks
    included), and a leaf takes fewer than 1,000 rounded operations, so each
    of the two sums errs by less than 1,000 * 2**-52 * 1,000 * sum|w|, about
    2e-10 * sum|w|.
    """
    s = 1.0
    for i in range(weights.shape[0]):
        s += abs(weights[i])
    return 1e-8 * 200.0 * s


@njit(cache=True)
def _line_tables(prefix, weights, table):
    """Line values for this turn's stock (`prefix`, before the next card r is drawn).

    table[out, flip + 4, lo, hi]: weighted (risk, spread, closed) of a line
    with face-up range lo..hi, once r is drawn inside it (out=0) or outside
    (out=1); table[., f, NO_UPS, NO_UPS] for a line with no face-up top.
    """
    total = prefix[RANKS] - 1
    scale = 0.0 if total == 0 else 1.0 / total
    for f in range(FLIPS):
        for out in range(2):
            table[out, f, NO_UPS, NO_UPS] = weights[F_RISK] * (f - 4) if total > 0 else 0.0
            table[out, f, NONE_LO, 0] = 0.0
    for lo in range(1, RANKS + 1):
        for hi in range(lo, RANKS + 1):
            spread = weights[F_SPREAD] * (hi - lo)
            for out in range(2):
                outside = prefix[lo - 1] + total + 1 - prefix[hi] - out
                closed = weights[F_CLOSED] if outside == 0 else 0.0
                for f in range(FLIPS):
                    v = weights[F_RISK] * ((f - 4) * outside * scale) + spread
                    table[out, f, lo, hi] = v + closed if total > 0 else 0.0


@njit(cache=True)
def _fire_tables(table, fire_max):
    """fire_max[f, lo, hi] = the largest table[0, f, min(lo, r), max(hi, r)] over r = 1..10.

    The most a line with flip index f and face-down range lo..hi (NONE_LO, 0
    when none) can be worth once its check fires and r joins its face-up tops.
    """
    for f in range(FLIPS):
        for hi in range(1, RANKS + 1):
            below = -np.inf  # r < lo: the range becomes r..hi
            for lo in range(1, hi + 1):
                fire_max[f, lo, hi] = max(below, table[0, f, lo, hi])
                below = max(below, table[0, f, lo, hi])
        for lo in range(1, RANKS + 1):
            above = -np.inf  # r > hi: the range becomes lo..r
            for hi in range(RANKS, lo - 1, -1):
                fire_max[f, lo, hi] = max(fire_max[f, lo, hi], above)
                above = max(above, table[0, f, lo, hi])
        most = -np.inf
        for r in range(1, RANKS + 1):
            most = max(most, table[0, f, r, r])
        fire_max[f, NONE_LO, 0] = most


@njit(cache=True, inline="always")
def _range(ups):
    """(lo, hi) face-up ranks of a line, (NONE_LO, 0) without any."""
    if ups == 0:
        return NONE_LO, 0
    return trailing_zeros(ups) // RANK_SHIFT, (63 - leading_zeros(ups)) // RANK_SHIFT


@njit(cache=True, inline="always")
def _inside(lo, hi):
    """The ranks lo..hi as bits (bit r for rank r); none when lo > hi. A line's check fires for the ranks outside."""
    return (np.int64(2) << hi) - (np.int64(1) << lo) if lo <= hi else np.int64(0)


@njit(cache=True, inline="always")
def _by_side(inside, r, v_in, v_out):
    """A line's value once r is drawn: v_in when r is among the bits `inside` (its face-up range), else v_out."""
    return v_in if (inside >> r) & 1 else v_out


@njit(cache=True, inline="always")
def _add_inside(steps, lo, hi, d):
    """Add d to the ranks lo..hi (none when lo > hi) of the difference array `steps` over the ranks."""
    if lo <= hi:
        steps[lo] += d
        if hi < RANKS:
            steps[hi + 1] -= d


@njit(cache=True, inline="always")
def _values(table, ups, occ, fd):
    """(value with r inside the range, value with r outside, lo, hi) of a line; (0, 0, ..) when empty."""
    lo, hi = _range(ups)
    n_occ = popcount(occ)
    if n_occ == 0:
        return 0.0, 0.0, lo, hi
    f = n_occ - 2 * popcount(fd) + 4
    if ups == 0:
        return table[0, f, NO_UPS, NO_UPS], table[1, f, NO_UPS, NO_UPS], lo, hi
    return table[0, f, lo, hi], table[1, f, lo, hi], lo, hi


@njit(cache=True)
def _prepare(after, table, line_ups, line_fd_ups, line_ends, line_range, base, turned, turned_range, turn_sum,
             line_min, turn_sum_max, turned_max):
    """The position's tables, for `_rank_loops`, each per rank r = 1..10 once r is drawn.

    Per line k (rows 0..6, columns 7..13): packed face-up and face-down
    ranks; line_ends[k], its value with r inside line_range[k] (its face-up
    range, as bits) and outside (0 when empty); base[r], the sum over the
    lines (their values with r outside, plus the steps of inside less
    outside, summed over the ranks). Per occupied cell x and its row (slot 2x) or column (2x + 1):
    that line's value once x is turned over, turned[slot] with r inside
    turned_range[slot] (the new face-up range, as bits) and outside.
    turn_sum[k, r]: the sum of what turning each occupied cell of line k adds
    to its other line (what a firing check of line k adds to the lines
    crossing it). For the follow-ups' upper bounds, over r = 1..10: base[0],
    the largest base[r]; line_min[k], the line's smallest value;
    turn_sum_max[k], the largest turn_sum[k, r]; turned_max[slot], the most
    turning x over can take from its line.
    """
    after, table, base = borrowed(after), borrowed(table), borrowed(base)
    line_ups, line_fd_ups = borrowed(line_ups), borrowed(line_fd_ups)
    line_ends, turned, turned_range = borrowed(line_ends), borrowed(turned), borrowed(turned_range)
    turn_sum, line_range = borrowed(turn_sum), borrowed(line_range)
    line_min, turn_sum_max, turned_max = borrowed(line_min), borrowed(turn_sum_max), borrowed(turned_max)
    occ = after[OCCUPIED]
    fd = after[FACE_DOWN]
    for k in range(LINES):
        line_fd_ups[k] = 0
        line_ups[k] = 0
        line_min[k] = 0.0
        turn_sum_max[k] = 0.0
        line_ends[k, 0] = 0.0
        line_ends[k, 1] = 0.0
        line_range[k] = 0
    # Follow-ups lie within one line of the occupied box: only those lines are read.
    for j in range(2):
        first = max(0, (after[MIN_ROW] if j == 0 else after[MIN_COL]) - 1) + j * SIDE
        last = min(SIDE - 1, (after[MAX_ROW] if j == 0 else after[MAX_COL]) + 1) + j * SIDE
        for k in range(first, last + 1):
            for r in range(RANKS + 1):
                turn_sum[k, r] = 0.0
    for r in range(RANKS + 1):
        base[r] = 0.0
    outside = 0.0  # the lines' values with r outside their ranges; base[r] holds the steps between ranks
    m = fd & occ
    while m:
        x = trailing_zeros(m)
        m &= m - 1
        n = nibble(after[TOP + x])
        line_fd_ups[ROW_OF[x]] += n
        line_fd_ups[SIDE + COL_OF[x]] += n
    for j in range(2):
        first = after[MIN_ROW] if j == 0 else SIDE + after[MIN_COL]
        last = after[MAX_ROW] if j == 0 else SIDE + after[MAX_COL]
        for k in range(first, last + 1):
            mask = ROW_MASK[k] if j == 0 else COL_MASK[k - SIDE]
            ups = after[ROW_UPS + k] if j == 0 else after[COL_UPS + k - SIDE]
            line_ups[k] = ups
            v_in, v_out, lo, hi = _values(table, ups, occ & mask, fd & mask)
            outside += v_out
            _add_inside(base, lo, hi, v_in - v_out)
            line_min[k] = min(v_in, v_out) if lo <= hi else v_out
            line_ends[k, 0] = v_in
            line_ends[k, 1] = v_out
            line_range[k] = _inside(lo, hi)
    # What turning x over adds to a line is one value (new less old) on each of the pieces its old and
    # new face-up ranges cut 1..10 into: turn_sum[k] gathers the steps between them (a difference array
    # over the ranks), summed up below.
    m = occ
    while m:
        x = trailing_zeros(m)
        m &= m - 1
        bit = np.int64(1) << x
        n = nibble(after[TOP + x])
        delta = n if fd & bit else -n
        for j in range(2):
            k = ROW_OF[x] if j == 0 else SIDE + COL_OF[x]
            other = SIDE + COL_OF[x] if j == 0 else ROW_OF[x]
            mask = ROW_MASK[k] if j == 0 else COL_MASK[k - SIDE]
            v_in, v_out, lo, hi = _values(table, line_ups[k] + delta, occ & mask, (fd ^ bit) & mask)
            old_lo, old_hi = _range(line_ups[k])
            old_in = line_ends[k, 0]
            old_out = line_ends[k, 1]
            s = 2 * x + j
            turned[s, 0] = v_in
            turned[s, 1] = v_out
            inside = _inside(lo, hi)
            turned_range[s] = inside
            turn_sum[other, 1] += v_out - old_out
            _add_inside(turn_sum[other], lo, hi, v_in - v_out)
            _add_inside(turn_sum[other], old_lo, old_hi, -(old_in - old_out))
            was_inside = line_range[k]
            most = -np.inf
            if was_inside & inside & ALL_RANKS:
                most = max(most, old_in - v_in)
            if was_inside & ~inside & ALL_RANKS:
                most = max(most, old_in - v_out)
            if ~was_inside & inside & ALL_RANKS:
                most = max(most, old_out - v_in)
            if ~was_inside & ~inside & ALL_RANKS:
                most = max(most, old_out - v_out)
            turned_max[s] = most
    base[0] = -np.inf
    steps = 0.0
    for r in range(1, RANKS + 1):
        steps += base[r]
        base[r] = outside + steps
        base[0] = max(base[0], base[r])
    for j in range(2):
        first = after[MIN_ROW] if j == 0 else SIDE + after[MIN_COL]
        last = after[MAX_ROW] if j == 0 else SIDE + after[MAX_COL]
        for k in range(first, last + 1):
            most = turn_sum[k, 1]
            for r in range(2, RANKS + 1):
                turn_sum[k, r] += turn_sum[k, r - 1]
                most = max(most, turn_sum[k, r])
            turn_sum_max[k] = most


@njit(cache=True, inline="always")
def _cell_setup(after, rules, weights, table, cell, line_ups, line_fd_ups, status, cell_value):
    """What a follow-up on `cell` does under each fired pattern p = row | col << 1.

    status[p]: 0 the game goes on, 1 it is lost, 2 it is won; cell_value[p]:
    the weighted cell features (face-down, piles to open, full piles).
    Returns the face-up ranges and flip indices of the cell's row and column
    without (0) and with (1) its check.
    """
    occ = after[OCCUPIED]
    fd = after[FACE_DOWN]
    bit = np.int64(1) << cell
    row = ROW_OF[cell]
    col = SIDE + COL_OF[cell]
    grid = rules[RULE_GRID]
    piles = popcount(occ | bit)
    full2 = after[FULL]
    if after[HEIGHT + cell] + 1 >= rules[RULE_MAX_PILE]:
        full2 |= bit
    own_up = np.int64(0)
    own_down = np.int64(0)
    if occ & bit:
        if fd & bit:
            own_down = nibble(after[TOP + cell])
        else:
            own_up = nibble(after[TOP + cell])
    row_others = ROW_OTHERS_OF[cell] & occ
    col_others = COL_OTHERS_OF[cell] & occ
    row_lo0, row_hi0 = _range(line_ups[row] - own_up)
    row_lo1, row_hi1 = _range(line_fd_ups[row] - own_down)
    col_lo0, col_hi0 = _range(line_ups[col] - own_up)
    col_lo1, col_hi1 = _range(line_fd_ups[col] - own_down)
    up = occ & ~fd
    row_n = 1 + popcount(row_others)
    col_n = 1 + popcount(col_others)
    row_f0 = row_n - 2 * popcount(row_others & fd) + 4
    row_f1 = row_n - 2 * popcount(row_others & up) + 4
    col_f0 = col_n - 2 * popcount(col_others & fd) + 4
    col_f1 = col_n - 2 * popcount(col_others & up) + 4
    opened = weights[F_TO_OPEN] * (grid * grid - piles)
    # A check turns its others: face-up ones down, face-down ones up.
    fd0 = fd & ~bit
    row_fd = 2 * popcount(row_others & fd)
    col_fd = 2 * popcount(col_others & fd)
    row_full_fd = 2 * popcount(row_others & full2 & fd)
    col_full_fd = 2 * popcount(col_others & full2 & fd)
    n_full = popcount(full2)
    for p in range(4):
        n_fd = popcount(fd0)
        full_fd = popcount(full2 & fd0)
        if p & 1:
            n_fd += row_n - 1 - row_fd
            full_fd += popcount(row_others & full2) - row_full_fd
        if p & 2:
            n_fd += col_n - 1 - col_fd
            full_fd += popcount(col_others & full2) - col_full_fd
        if n_fd > rules[RULE_MAX_FACE_DOWN]:
            status[p] = 1
        elif piles == grid * grid and n_fd == 0:
            status[p] = 2
        else:
            status[p] = 0
        cell_value[p] = (weights[F_FACE_DOWN] * n_fd + opened + weights[F_FULL_UP] * (n_full - full_fd)
                         + weights[F_FULL_DOWN] * full_fd)
    return (row_lo0, row_hi0, row_lo1, row_hi1, row_f0, row_f1, col_lo0, col_hi0, col_lo1, col_hi1,
            col_f0, col_f1)


@njit(cache=True, inline="always")
def _line_terms(table, fire_max, turn_sum_max, turned_max, own, line, slot, f0, lo0, hi0, f1, lo1, hi1):
    """A follow-up's row (or column) term in its bound: (the line's value when its check does not fire, the most
    it can add when it fires, over the ranks). `slot` is the follow-up cell's slot for the other line (see
    `_prepare`'s turned_max), counted only when the cell is occupied (`own`): the placed card covers it.
    """
    return table[0, f0, lo0, hi0], fire_max[f1, lo1, hi1] + turn_sum_max[line] + own * turned_max[slot]


SETUP = 13
"""A follow-up cell's row of `_cell_bounds`' setups: the cell, then `_cell_setup`'s ranges and flip indices."""

BOUND = 4
"""values[i, BOUND]: the follow-up's upper bound over the ranks in the stock (values[i, p] for p < 4: its cell
values)."""
OPEN_BOUND = 5
"""values[i, OPEN_BOUND]: the same over the fired patterns that neither win nor lose at once. A leaf
that does not win can be above LEAF_WIN when the weights are large, so a bound on a leaf is this one,
or LEAF_WIN if larger where a pattern wins."""


@njit(cache=True, inline="always")
def _setup(setups, i):
    """Row i of `_cell_bounds`' setups, in the order it writes them: the cell, then the row's lo0, hi0, lo1, hi1, f0,
    f1 and the column's."""
    return (setups[i, 0], setups[i, 1], setups[i, 2], setups[i, 3], setups[i, 4], setups[i, 5], setups[i, 6],
            setups[i, 7], setups[i, 8], setups[i, 9], setups[i, 10], setups[i, 11], setups[i, 12])


@njit(cache=True)
def _cell_bounds(after, rules, weights, table, line_ups, line_fd_ups, base, line_min, turn_sum_max, turned_max,
                 fire_max, status, cell_value, setups, values):
    """The legal follow-up cells' setups and upper bounds, for `_rank_loops`; returns how many.

    setups[i]: the cell and `_cell_setup`'s ranges and flip indices;
    values[i, p]: its cell value under the fired pattern p, a lost or won
    pattern's far beyond LOSS or WIN (so that `_leaf` maps it to LEAF_LOSS
    or LEAF_WIN); values[i, BOUND]: an upper bound on its leaf over the
    ranks in the stock (the largest, over the fired patterns that one of
    them brings about, of the pattern's cell value plus each line term at
    its largest over the ranks), by which `_rank_loops` takes the cells,
    best first, so that the rest can be cut off at once.
    """
    after, rules, weights, table = borrowed(after), borrowed(rules), borrowed(weights), borrowed(table)
    line_ups, line_fd_ups, base = borrowed(line_ups), borrowed(line_fd_ups), borrowed(base)
    line_min, turn_sum_max, turned_max = borrowed(line_min), borrowed(turn_sum_max), borrowed(turned_max)
    fire_max, status, cell_value = borrowed(fire_max), borrowed(status), borrowed(cell_value)
    setups, values = borrowed(setups), borrowed(values)
    occ = after[OCCUPIED]
    in_stock = np.int64(0)  # bit r: a card of rank r is left
    for r in range(1, RANKS + 1):
        if after[STOCK + r]:
            in_stock |= np.int64(1) << r
    n = 0
    m = legal_cells(after, rules)
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        row = ROW_OF[cell]
        col = SIDE + COL_OF[cell]
        (row_lo0, row_hi0, row_lo1, row_hi1, row_f0, row_f1, col_lo0, col_hi0, col_lo1, col_hi1,
         col_f0, col_f1) = _cell_setup(after, rules, weights, table, cell, line_ups, line_fd_ups, status, cell_value)
        own = np.float64((occ >> cell) & 1)  # an occupied follow-up cell is covered, not turned
        row_stays, row_fires = _line_terms(table, fire_max, turn_sum_max, turned_max, own, row, 2 * cell + 1,
                                           row_f0, row_lo0, row_hi0, row_f1, row_lo1, row_hi1)
        col_stays, col_fires = _line_terms(table, fire_max, turn_sum_max, turned_max, own, col, 2 * cell,
                                           col_f0, col_lo0, col_hi0, col_f1, col_lo1, col_hi1)
        row_in = _inside(row_lo0, row_hi0)
        col_in = _inside(col_lo0, col_hi0)
        common = base[0] - line_min[row] - line_min[col]
        open_most = -np.inf
        wins = False
        for p in range(4):
            ranks = in_stock & (~row_in if p & 1 else row_in) & (~col_in if p & 2 else col_in)
            if status[p] == 2:
                wins = wins or ranks != 0
                values[n, p] = 4 * WIN
            elif status[p] == 1:
                values[n, p] = 4 * LOSS
            else:
                if ranks:
                    open_most = max(open_most, cell_value[p] + common + (row_fires if p & 1 else row_stays)
                                    + (col_fires if p & 2 else col_stays))
                values[n, p] = cell_value[p]
        values[n, OPEN_BOUND] = open_most
        values[n, BOUND] = np.inf if wins else values[n, OPEN_BOUND]
        setups[n, 0] = cell
        setups[n, 1] = row_lo0
        setups[n, 2] = row_hi0
        setups[n, 3] = row_lo1
        setups[n, 4] = row_hi1
        setups[n, 5] = row_f0
        setups[n, 6] = row_f1
        setups[n, 7] = col_lo0
        setups[n, 8] = col_hi0
        setups[n, 9] = col_lo1
        setups[n, 10] = col_hi1
        setups[n, 11] = col_f0
        setups[n, 12] = col_f1
        n += 1
    return n


@njit(cache=True)
def _rank_loops(after, table, best, line_ends, line_range, base, turned, turned_range, turn_sum, setups, values, n,
                slack, floor, near, cutoff):
    """best[r] = the best leaf over the follow-up cells once rank r is drawn, to within `_margin`.

    Each leaf is a few lookups in `_prepare`'s tables: the lines away from
    the follow-up's row and column keep their values (base[r] minus those
    two), and a firing check adds its line's turn_sum (less the follow-up's
    own pile, which is covered, not turned). The cells go by descending
    bound (`_cell_bounds`); once a cell's bound plus `slack` is below every
    rank's best so far, so are the rest's. With floor[0] set, near[r] also
    gets the mask of the cells whose leaf reaches floor[r], and floor stands
    for the best so far. Returns False, leaving best unfinished, as soon as
    the expectation (each rank's best so far, or a bound on the leaves of
    every cell still to come if larger) is sure to stay below `cutoff`.
    """
    # Uncounted views (see sim.kernels.borrowed): the caller keeps every array alive.
    after, table, best, base = borrowed(after), borrowed(table), borrowed(best), borrowed(base)
    line_ends, line_range = borrowed(line_ends), borrowed(line_range)
    turned, turned_range, turn_sum = borrowed(turned), borrowed(turned_range), borrowed(turn_sum)
    setups, values = borrowed(setups), borrowed(values)
    floor, near = borrowed(floor), borrowed(near)
    record = floor[0] != 0.0
    total = after[STOCK_LEFT]
    # lowest: the smallest best[r] (floor[r] with floor[0] set) over the ranks in the stock.
    lowest = np.inf
    for r in range(1, RANKS + 1):
        best[r] = LEAF_LOSS
        near[r] = 0
        if after[STOCK + r]:
            lowest = min(lowest, floor[r] if record else LEAF_LOSS)
    occ = after[OCCUPIED]
    win_most = -np.inf  # set when first needed, below
    visited = np.int64(0)  # rows of setups and values, as bits
    for _ in range(n):
        # The next cell: the largest bound among those not visited, the lowest row among equals. Most root cells
        # are cut off at the first (see `choose`), so picking each in turn costs less than sorting them all.
        row_index = -1
        for j in range(n):
            if not (visited >> j) & 1 and (row_index < 0 or values[j, BOUND] > values[row_index, BOUND]):
                row_index = j
        visited |= np.int64(1) << row_index
        bound = values[row_index, BOUND] + slack
        if bound < lowest:
            break
        if cutoff > -np.inf:
            if bound == np.inf and win_most == -np.inf:
                # The cells that may win come first (infinite bounds). While one of them is next, a leaf
                # of any cell still to come is at most LEAF_WIN, the largest of their bounds over the
                # other patterns, or the largest finite bound.
                win_most = LEAF_WIN
                for k in range(n):
                    if k == row_index or not (visited >> k) & 1:
                        win_most = max(win_most, values[k, OPEN_BOUND if values[k, BOUND] == np.inf else BOUND] + slack)
            leaf_most = bound if bound < np.inf else win_most
            most = 0.0
            for r in range(1, RANKS + 1):
                most += after[STOCK + r] * max(best[r], leaf_most)
            if most < cutoff * total:
                return False
        (cell, row_lo0, row_hi0, row_lo1, row_hi1, row_f0, row_f1, col_lo0, col_hi0, col_lo1, col_hi1, col_f0,
         col_f1) = _setup(setups, row_index)
        row = ROW_OF[cell]
        col = SIDE + COL_OF[cell]
        row_stays = table[0, row_f0, row_lo0, row_hi0]
        col_stays = table[0, col_f0, col_lo0, col_hi0]
        own = np.float64((occ >> cell) & 1)  # an occupied follow-up cell is covered, not turned
        bit = np.int64(1) << cell
        # Its column's value were the cell turned by a firing row check (row_own_...), and its row's by a
        # column check (col_own_...): turn_sum counts them, but the placed card covers it instead.
        row_own_in = turned[2 * cell + 1, 0]
        row_own_out = turned[2 * cell + 1, 1]
        row_own_range = turned_range[2 * cell + 1]
        col_own_in = turned[2 * cell, 0]
        col_own_out = turned[2 * cell, 1]
        col_own_range = turned_range[2 * cell]
        # Its row's and column's values once r is drawn: by r's side of each one's face-up range.
        row_in, row_out, row_range = line_ends[row, 0], line_ends[row, 1], line_range[row]
        col_in, col_out, col_range = line_ends[col, 0], line_ends[col, 1], line_range[col]
        lowest_after = np.inf
        # Branch-free over the ranks (which checks fire depends on r).
        for r in range(1, RANKS + 1):
            row_val = _by_side(row_range, r, row_in, row_out)
            col_val = _by_side(col_range, r, col_in, col_out)
            row_fires = (r < row_lo0) | (r > row_hi0)
            col_fires = (r < col_lo0) | (r > col_hi0)
            row_turns = (table[0, row_f1, min(row_lo1, r), max(row_hi1, r)] + turn_sum[row, r]
                         - own * (_by_side(row_own_range, r, row_own_in, row_own_out) - col_val))
            col_turns = (table[0, col_f1, min(col_lo1, r), max(col_hi1, r)] + turn_sum[col, r]
                         - own * (_by_side(col_own_range, r, col_own_in, col_own_out) - row_val))
            v = (values[row_index, np.int64(row_fires) | (np.int64(col_fires) << 1)]
                 + (base[r] - row_val - col_val)
                 + (row_turns if row_fires else row_stays) + (col_turns if col_fires else col_stays))
            v = _leaf(v)
            best[r] = max(best[r], v)
            lowest_after = min(lowest_after, best[r] if after[STOCK + r] else np.inf)
            if record and v >= floor[r] and v > LEAF_LOSS:
                near[r] |= bit
        if not record:
            lowest = lowest_after
    for r in range(1, RANKS + 1):
        if after[STOCK + r] == 0:
            best[r] = LEAF_LOSS
    return True


@njit(cache=True)
def _scratch():
    """The per-position arrays `_prepare` and `_cell_bounds` fill and `_rank_loops` reads, allocated once per turn."""
    # turned and turned_max are read (times 0) for empty cells too: zeros, so that they are never NaN.
    return (np.empty(LINES, np.int64), np.empty(LINES, np.int64), np.empty((LINES, 2), np.float64),
            np.empty(LINES, np.int64), np.empty(RANKS + 1, np.float64), np.zeros((2 * CELLS, 2), np.float64),
            np.zeros(2 * CELLS, np.int64), np.empty((LINES, RANKS + 1), np.float64), np.empty(LINES, np.float64),
            np.empty(LINES, np.float64), np.zeros(2 * CELLS, np.float64), np.empty((CELLS, SETUP), np.int64),
            np.empty((CELLS, OPEN_BOUND + 1), np.float64))


@njit(cache=True, inline="always")
def _follow_ups(after, rules, weights, table, fire_max, slack, best, scratch, status, cell_value, floor, near,
                cutoff):
    """`_prepare`, `_cell_bounds` then `_rank_loops` for the position `after`, in the arrays of `_scratch`."""
    # Uncounted views (see sim.kernels.borrowed): this runs for every root cell, passing on 23 arrays. Inlined
    # into its callers, so that they are not all passed once more as arguments.
    after, rules, weights, table = borrowed(after), borrowed(rules), borrowed(weights), borrowed(table)
    fire_max, best, status, cell_value = borrowed(fire_max), borrowed(best), borrowed(status), borrowed(cell_value)
    floor, near = borrowed(floor), borrowed(near)
    (line_ups, line_fd_ups, line_ends, line_range, base, turned, turned_range, turn_sum, line_min, turn_sum_max,
     turned_max, setups, values) = scratch
    line_ups, line_fd_ups, base = borrowed(line_ups), borrowed(line_fd_ups), borrowed(base)
    line_range = borrowed(line_range)
    line_ends, turned, turned_range = borrowed(line_ends), borrowed(turned), borrowed(turned_range)
    turn_sum, line_min = borrowed(turn_sum), borrowed(line_min)
    turn_sum_max, turned_max = borrowed(turn_sum_max), borrowed(turned_max)
    setups, values = borrowed(setups), borrowed(values)
    _prepare(after, table, line_ups, line_fd_ups, line_ends, line_range, base, turned, turned_range, turn_sum,
             line_min, turn_sum_max, turned_max)
    n = _cell_bounds(after, rules, weights, table, line_ups, line_fd_ups, base, line_min, turn_sum_max, turned_max,
                     fire_max, status, cell_value, setups, values)
    return _rank_loops(after, table, best, line_ends, line_range, base, turned, turned_range, turn_sum, setups, values,
                       n, slack, floor, near, cutoff)


@njit(cache=True)
def rank_bests(after, rules, weights):
    """best[r] for r = 1..10: the best leaf once rank r is drawn from `after`, to within `_margin`.

    The fast path on its own, for tests (LEAF_LOSS for ranks not in the stock).
    """
    prefix = np.empty(RANKS + 1, np.int64)
    stock_prefix(after, prefix)
    table = np.zeros((2, FLIPS, NONE_LO + 1, RANKS + 1), np.float64)
    _line_tables(prefix, weights, table)
    fire_max = np.zeros((FLIPS, NONE_LO + 1, RANKS + 1), np.float64)
    _fire_tables(table, fire_max)
    best = np.empty(RANKS + 1, np.float64)
    scratch = _scratch()
    _follow_ups(after, rules, weights, table, fire_max, _margin(weights), best, scratch, np.empty(4, np.int64),
                np.empty(4, np.float64), np.zeros(RANKS + 1), np.zeros(RANKS + 1, np.int64), -np.inf)
    return best


@njit(cache=True)
def cuts_off(after, rules, weights, cutoff):
    """Whether the fast path gives `after` up as sure to expect less than `cutoff` (for tests)."""
    prefix = np.empty(RANKS + 1, np.int64)
    stock_prefix(after, prefix)
    table = np.zeros((2, FLIPS, NONE_LO + 1, RANKS + 1), np.float64)
    _line_tables(prefix, weights, table)
    fire_max = np.zeros((FLIPS, NONE_LO + 1, RANKS + 1), np.float64)
    _fire_tables(table, fire_max)
    best = np.empty(RANKS + 1, np.float64)
    return not _follow_ups(after, rules, weights, table, fire_max, _margin(weights), best, _scratch(),
                           np.empty(4, np.int64), np.empty(4, np.float64), np.zeros(RANKS + 1),
                           np.zeros(RANKS + 1, np.int64), cutoff)


def margin(weights) -> float:
    """How close `rank_bests` stays to the exact values (with room to spare) for these weights."""
    return float(_margin(np.asarray(weights, dtype=np.float64)))


@njit(cache=True)
def _exact_expectation(after, rules, weights, prefix, near):
    """`expected_value`, with each rank's best taken over the cells of near[r] only.

    Exact (the same operations in the same order) when near[r] holds every
    cell that can be the best for r.
    """
    total = after[STOCK_LEFT]
    ev = 0.0
    for r in range(1, RANKS + 1):
        count = after[STOCK + r]
        if count == 0:
            continue
        draw(after, r)
        stock_prefix(after, prefix)
        best = LEAF_LOSS
        m = near[r]
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
    """`params` are heuristic's weights. Plays exactly as `choose_exhaustive` does."""
    if legal & (legal - 1) == 0:  # one legal cell (the first card's): it is played, whatever it is worth
        return trailing_zeros(legal)
    state, rules, params = borrowed(state), borrowed(rules), borrowed(params)
    prefix = np.empty(RANKS + 1, np.int64)
    stock_prefix(state, prefix)
    roots = np.empty(CELLS, np.int64)
    values = np.empty(CELLS, np.float64)
    n_roots = 0
    total = state[STOCK_LEFT]
    # Only whether a cell wins or loses at once matters below, unless there is no next card or the
    # weights are so large that an evaluation might reach WIN or LOSS (see `_margin`).
    evaluated = total == 0 or _margin(params) >= 1e-2
    grid = rules[RULE_GRID]
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        if evaluated:
            v = evaluate(state, rules, cell, card, params, prefix)
        else:
            n_fd = face_down_after(state, cell, card)
            v = 0.0
            if n_fd > rules[RULE_MAX_FACE_DOWN]:
                v = LOSS
            elif n_fd == 0 and popcount(state[OCCUPIED] | (np.int64(1) << cell)) == grid * grid:
                v = WIN
        if v >= WIN:
            return cell
        roots[n_roots] = cell
        values[n_roots] = v
        n_roots += 1
    if total == 0:  # no next card: the evaluation itself, lowest cell among equals
        best_cell = roots[0]
        best_value = values[0]
        for i in range(1, n_roots):
            if values[i] > best_value:
                best_value = values[i]
                best_cell = roots[i]
        return best_cell

    after = np.empty(STATE_SIZE, np.int64)
    table = np.zeros((2, FLIPS, NONE_LO + 1, RANKS + 1), np.float64)  # zeros where no line can be
    _line_tables(prefix, params, table)
    fire_max = np.zeros((FLIPS, NONE_LO + 1, RANKS + 1), np.float64)
    _fire_tables(table, fire_max)
    best = np.empty(RANKS + 1, np.float64)
    scratch = _scratch()
    status = np.empty(4, np.int64)
    cell_value = np.empty(4, np.float64)
    no_floor = np.zeros(RANKS + 1, np.float64)
    floor = np.zeros(RANKS + 1, np.float64)
    near = np.zeros(RANKS + 1, np.int64)
    margin = _margin(params)
    estimate = np.full(CELLS, -np.inf)
    bests = np.empty((n_roots, RANKS + 1), np.float64)
    top = -np.inf
    for i in range(n_roots):
        if values[i] <= LOSS:
            continue
        after[:] = state
        place(after, rules, roots[i], card)
        # A cell sure to end more than 2 margins below the best so far cannot be played: cut it off.
        if not _follow_ups(after, rules, params, table, fire_max, margin, best, scratch, status, cell_value,
                           no_floor, near, top - 3 * margin):
            continue
        ev = 0.0
        for r in range(1, RANKS + 1):
            ev += after[STOCK + r] * best[r]
            bests[i, r] = best[r]
        estimate[i] = ev / total
        top = max(top, estimate[i])
    if top == -np.inf:  # every cell loses at once
        return roots[0]
    # Settle the cells within 2 margins of the best estimate with the exact expectation, lowest
    # cell first among equals (every other cell is below each of them).
    n_close = 0
    best_cell = -1
    for i in range(n_roots):
        if estimate[i] >= top - 2 * margin:
            n_close += 1
            best_cell = roots[i]
    if n_close == 1:
        return best_cell
    exact_prefix = np.empty(RANKS + 1, np.int64)
    best_cell = -1
    best_value = -np.inf
    for i in range(n_roots):
        if estimate[i] >= top - 2 * margin:
            after[:] = state
            place(after, rules, roots[i], card)
            floor[0] = 1.0
            for r in range(1, RANKS + 1):
                floor[r] = bests[i, r] - 2 * margin
            _follow_ups(after, rules, params, table, fire_max, margin, best, scratch, status, cell_value, floor, near,
                        -np.inf)
            v = _exact_expectation(after, rules, params, exact_prefix, near)
            if v > best_value:
                best_value = v
                best_cell = roots[i]
    return best_cell
