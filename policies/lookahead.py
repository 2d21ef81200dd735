"""lookahead: expectimax one card ahead, with heuristic's evaluation at the leaves.

For each legal cell: place the card, then for each rank still in the stock
(weighted by how many cards of it remain) take the best follow-up cell by
heuristic's evaluation; play the cell with the highest expectation (the
lowest cell among equals). A winning placement is taken at once; a losing
one only when all lose. Immediate wins and losses at the leaves count as
LEAF_WIN and LEAF_LOSS, on the scale of the evaluation, so that a small
chance of a win does not drown every other difference.

`choose_exhaustive` is that definition written out leaf by leaf. `choose`
makes exactly the same choices faster: the evaluation is a sum over cells
and lines, and a follow-up placement changes only its own row and column
and the lines crossing the cells it turns, so each leaf is the position's
line sum plus a few precomputed changes (`_leaf_fast`). Those sums round
differently from `evaluate`, by far less than `_margin`; cells whose
expectation is within the margin of the best are settled with
`expected_value`, the exact expectation, so ties and near-ties go exactly
as in `choose_exhaustive`.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from policies.heuristic import (
    F_CLOSED, F_FACE_DOWN, F_FULL_DOWN, F_FULL_UP, F_RISK, F_SPREAD, F_TO_OPEN, LOSS, WEIGHTS, WIN, evaluate,
    nibble, stock_prefix,
)
from sim.kernels import (
    CELLS, COL_MASK, COL_OF, COL_OTHERS_OF, COL_UPS, FACE_DOWN, FULL, HEIGHT, MAX_COL, MAX_ROW, MIN_COL, MIN_ROW, OCCUPIED,
    RANK_SHIFT, RANKS, ROW_MASK, ROW_OF, ROW_OTHERS_OF, ROW_UPS, RULE_GRID, RULE_MAX_FACE_DOWN, RULE_MAX_PILE, SIDE, STATE_SIZE,
    STOCK, STOCK_LEFT, TOP, borrowed, draw, legal_cells, place, placement_flips, popcount, trailing_zeros,
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


@njit(cache=True)
def _margin(weights):
    """A bound, with room to spare, on how far `_leaf_fast`'s rounding can stray from `evaluate`'s.

    Every feature is at most 200 in size and a leaf sums fewer than 100
    rounded terms, so the error is below 100 * 2**-52 * 200 * sum|w|.
    """
    s = 1.0
    for i in range(weights.shape[0]):
        s += abs(weights[i])
    return 1e-8 * 200.0 * s


@njit(cache=True, inline="always")
def _line_value(ups, occ, fd, prefix, r, weights):
    """A line's weighted (risk, spread, closed) once rank r is drawn (heuristic.line_terms, summed).

    `prefix` is the stock's before r is drawn: drawing r takes one card
    out of the line's outside exactly when r is outside its face-up range.
    """
    n_occ = popcount(occ)
    if n_occ == 0:
        return 0.0
    total = prefix[RANKS] - 1
    if total == 0:
        return 0.0
    flip = n_occ - 2 * popcount(fd)
    if ups == 0:
        return weights[F_RISK] * flip
    lo = trailing_zeros(ups) // RANK_SHIFT
    hi = (63 - leading_zeros(ups)) // RANK_SHIFT
    outside = prefix[lo - 1] + total + 1 - prefix[hi]
    if r < lo or r > hi:
        outside -= 1
    v = weights[F_RISK] * (flip * outside / total) + weights[F_SPREAD] * (hi - lo)
    if outside == 0:
        v += weights[F_CLOSED]
    return v


@njit(cache=True, inline="always")
def _range(ups):
    """(lo, hi) face-up ranks of a line; (0, RANKS + 1) when it has none (every r counts as inside)."""
    if ups == 0:
        return 0, RANKS + 1
    return trailing_zeros(ups) // RANK_SHIFT, (63 - leading_zeros(ups)) // RANK_SHIFT


@njit(cache=True)
def _prepare(after, prefix, weights, line_ups, line_fd_ups, line_lo, line_hi, line_in, line_out,
             base, flip_lo, flip_hi, flip_in, flip_out):
    """Per-position tables for `_leaf_fast`.

    For each line: its face-up and face-down packed ranks, range and value
    when the drawn rank is inside or outside the range; base[r], the sum of
    the line values once r is drawn; and for each occupied cell x and its
    row (slot 2x) and column (2x + 1), the range and values of that line
    with x turned over.
    """
    occ = after[OCCUPIED]
    fd = after[FACE_DOWN]
    for k in range(LINES):
        line_fd_ups[k] = 0
    m = fd & occ
    while m:
        x = trailing_zeros(m)
        m &= m - 1
        n = nibble(after[TOP + x])
        line_fd_ups[ROW_OF[x]] += n
        line_fd_ups[SIDE + COL_OF[x]] += n
    for k in range(LINES):
        mask = ROW_MASK[k] if k < SIDE else COL_MASK[k - SIDE]
        ups = after[ROW_UPS + k] if k < SIDE else after[COL_UPS + k - SIDE]
        line_ups[k] = ups
        lo, hi = _range(ups)
        line_lo[k] = lo
        line_hi[k] = hi
        line_in[k] = _line_value(ups, occ & mask, fd & mask, prefix, lo, weights)
        line_out[k] = _line_value(ups, occ & mask, fd & mask, prefix, 0, weights)
    for r in range(1, RANKS + 1):
        s = 0.0
        for k in range(LINES):
            s += line_in[k] if line_lo[k] <= r <= line_hi[k] else line_out[k]
        base[r] = s
    m = occ
    while m:
        x = trailing_zeros(m)
        m &= m - 1
        bit = np.int64(1) << x
        n = nibble(after[TOP + x])
        delta = n if fd & bit else -n
        for j in range(2):
            k = ROW_OF[x] if j == 0 else SIDE + COL_OF[x]
            mask = ROW_MASK[k] if k < SIDE else COL_MASK[k - SIDE]
            ups = line_ups[k] + delta
            lo, hi = _range(ups)
            s = 2 * x + j
            flip_lo[s] = lo
            flip_hi[s] = hi
            flip_in[s] = _line_value(ups, occ & mask, (fd ^ bit) & mask, prefix, lo, weights)
            flip_out[s] = _line_value(ups, occ & mask, (fd ^ bit) & mask, prefix, 0, weights)


@njit(cache=True, inline="always")
def _select(lo, hi, v_in, v_out, r):
    return v_in if lo <= r <= hi else v_out


FLIPS = 9
"""A line holds at most 4 piles, so its flip count (occupied - 2 * face-down) is -4..4."""


@njit(cache=True)
def _line_table(prefix, weights, table):
    """table[flip + 4, lo, hi]: `_line_value` of a line whose face-up range lo..hi holds the drawn rank."""
    total = prefix[RANKS] - 1
    for f in range(FLIPS):
        flip = f - 4
        for lo in range(1, RANKS + 1):
            for hi in range(lo, RANKS + 1):
                if total == 0:
                    table[f, lo, hi] = 0.0
                    continue
                outside = prefix[lo - 1] + total + 1 - prefix[hi]
                v = weights[F_RISK] * (flip * outside / total) + weights[F_SPREAD] * (hi - lo)
                if outside == 0:
                    v += weights[F_CLOSED]
                table[f, lo, hi] = v


@njit(cache=True, inline="always")
def _range_or_empty(ups):
    """(lo, hi) face-up ranks of a line; (RANKS + 1, 0) when it has none, so min/max with a rank give that rank."""
    if ups == 0:
        return RANKS + 1, 0
    return trailing_zeros(ups) // RANK_SHIFT, (63 - leading_zeros(ups)) // RANK_SHIFT


@njit(cache=True)
def _best_follow_ups(after, rules, prefix, weights, table, best, line_ups, line_fd_ups, line_lo, line_hi,
                     line_in, line_out, base, flip_lo, flip_hi, flip_in, flip_out):
    """best[r] = the best leaf over the follow-up cells for each drawn rank r, to within `_margin`."""
    _prepare(after, prefix, weights, line_ups, line_fd_ups, line_lo, line_hi, line_in, line_out,
             base, flip_lo, flip_hi, flip_in, flip_out)
    for r in range(1, RANKS + 1):
        best[r] = LEAF_LOSS
    occ = after[OCCUPIED]
    fd = after[FACE_DOWN]
    up = occ & ~fd
    grid = rules[RULE_GRID]
    max_fd = rules[RULE_MAX_FACE_DOWN]
    status = np.empty(4, np.int64)  # per fired pattern (row | col << 1): 0 goes on, 1 loses, 2 wins
    globals_ = np.empty(4, np.float64)
    m = legal_cells(after, rules)
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        bit = np.int64(1) << cell
        row = ROW_OF[cell]
        col = SIDE + COL_OF[cell]
        occ2 = occ | bit
        piles = popcount(occ2)
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
        # The placed card's lines: face-up range of the others that stay up (no check) or come up (check).
        row_lo0, row_hi0 = _range_or_empty(line_ups[row] - own_up)
        row_lo1, row_hi1 = _range_or_empty(line_fd_ups[row] - own_down)
        col_lo0, col_hi0 = _range_or_empty(line_ups[col] - own_up)
        col_lo1, col_hi1 = _range_or_empty(line_fd_ups[col] - own_down)
        row_n = 1 + popcount(row_others)
        col_n = 1 + popcount(col_others)
        row_f0 = row_n - 2 * popcount(row_others & fd) + 4
        row_f1 = row_n - 2 * popcount(row_others & up) + 4
        col_f0 = col_n - 2 * popcount(col_others & fd) + 4
        col_f1 = col_n - 2 * popcount(col_others & up) + 4
        opened = weights[F_TO_OPEN] * (grid * grid - piles)
        for p in range(4):
            turn = (row_others if p & 1 else 0) | (col_others if p & 2 else 0)
            fd2 = (fd & ~bit) ^ turn
            n_fd = popcount(fd2)
            if n_fd > max_fd:
                status[p] = 1
            elif piles == grid * grid and n_fd == 0:
                status[p] = 2
            else:
                status[p] = 0
                globals_[p] = (weights[F_FACE_DOWN] * n_fd + opened + weights[F_FULL_UP] * popcount(full2 & ~fd2)
                               + weights[F_FULL_DOWN] * popcount(full2 & fd2))
        for r in range(1, RANKS + 1):
            if after[STOCK + r] == 0:
                continue
            row_fires = r < row_lo0 or r > row_hi0
            col_fires = r < col_lo0 or r > col_hi0
            p = (1 if row_fires else 0) | (2 if col_fires else 0)
            if status[p] == 1:
                continue  # LEAF_LOSS, best's floor
            if status[p] == 2:
                best[r] = LEAF_WIN
                continue
            if row_fires:
                new_row = table[row_f1, min(row_lo1, r), max(row_hi1, r)]
            else:
                new_row = table[row_f0, min(row_lo0, r), max(row_hi0, r)]
            if col_fires:
                new_col = table[col_f1, min(col_lo1, r), max(col_hi1, r)]
            else:
                new_col = table[col_f0, min(col_lo0, r), max(col_hi0, r)]
            v = globals_[p] + (base[r]
                               - _select(line_lo[row], line_hi[row], line_in[row], line_out[row], r)
                               - _select(line_lo[col], line_hi[col], line_in[col], line_out[col], r)
                               + new_row + new_col)
            t = (row_others if row_fires else 0) | (col_others if col_fires else 0)
            while t:
                x = trailing_zeros(t)
                t &= t - 1
                # A turned cell of the row changes its column, one of the column its row.
                j = 1 if ROW_OF[x] == row else 0
                k = SIDE + COL_OF[x] if j == 1 else ROW_OF[x]
                s = 2 * x + j
                v += (_select(flip_lo[s], flip_hi[s], flip_in[s], flip_out[s], r)
                      - _select(line_lo[k], line_hi[k], line_in[k], line_out[k], r))
            v = _leaf(v)
            if v > best[r]:
                best[r] = v


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """`params` are heuristic's weights. Plays as `choose_exhaustive` does."""
    state, rules, params = borrowed(state), borrowed(rules), borrowed(params)
    prefix = np.empty(RANKS + 1, np.int64)
    stock_prefix(state, prefix)
    roots = np.empty(CELLS, np.int64)
    values = np.empty(CELLS, np.float64)
    n_roots = 0
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        v = evaluate(state, rules, cell, card, params, prefix)
        if v >= WIN:
            return cell
        roots[n_roots] = cell
        values[n_roots] = v
        n_roots += 1
    total = state[STOCK_LEFT]
    if total == 0:  # no next card: the evaluation itself, lowest cell among equals
        best_cell = roots[0]
        best = values[0]
        for i in range(1, n_roots):
            if values[i] > best:
                best = values[i]
                best_cell = roots[i]
        return best_cell

    after = np.empty(STATE_SIZE, np.int64)
    best = np.empty(RANKS + 1, np.float64)
    line_ups = np.empty(LINES, np.int64)
    line_fd_ups = np.empty(LINES, np.int64)
    line_lo = np.empty(LINES, np.int64)
    line_hi = np.empty(LINES, np.int64)
    line_in = np.empty(LINES, np.float64)
    line_out = np.empty(LINES, np.float64)
    base = np.empty(RANKS + 1, np.float64)
    flip_lo = np.empty(2 * CELLS, np.int64)
    flip_hi = np.empty(2 * CELLS, np.int64)
    flip_in = np.empty(2 * CELLS, np.float64)
    flip_out = np.empty(2 * CELLS, np.float64)
    estimate = np.empty(CELLS, np.float64)
    table = np.empty((FLIPS, RANKS + 1, RANKS + 1), np.float64)
    _line_table(prefix, params, table)
    top = -np.inf
    for i in range(n_roots):
        if values[i] <= LOSS:
            estimate[i] = values[i]
            continue
        after[:] = state
        place(after, rules, roots[i], card)
        _best_follow_ups(after, rules, prefix, params, table, best, line_ups, line_fd_ups, line_lo, line_hi,
                         line_in, line_out, base, flip_lo, flip_hi, flip_in, flip_out)
        ev = 0.0
        for r in range(1, RANKS + 1):
            ev += after[STOCK + r] * best[r]
        estimate[i] = ev / total
        top = max(top, estimate[i])
    if top == -np.inf:  # every cell loses at once
        return roots[0]
    # Settle the cells that may be best exactly, lowest cell first among equals.
    margin = _margin(params)
    exact_prefix = np.empty(RANKS + 1, np.int64)
    best_cell = -1
    best_value = -np.inf
    n_close = 0
    for i in range(n_roots):
        if values[i] > LOSS and estimate[i] >= top - 2 * margin:
            n_close += 1
            best_cell = roots[i]
    if n_close == 1:
        return best_cell
    best_cell = -1
    for i in range(n_roots):
        if values[i] > LOSS and estimate[i] >= top - 2 * margin:
            after[:] = state
            place(after, rules, roots[i], card)
            v = expected_value(after, rules, params, exact_prefix)
            if v > best_value:
                best_value = v
                best_cell = roots[i]
    return best_cell
