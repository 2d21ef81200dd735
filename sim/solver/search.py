"""The compiled search of `sim.solver`: canonical keys, the transposition table, pruning, the depth-first search.

The design, and why each pruning rule loses no win, is in docs/solver.md.
One search looks for a win before turn L, depth first, with its whole
stack in arrays (`search_init`, then `search_run` in slices of nodes), so
the Python side (`sim.solver.solver`) can interleave several searches and
check the clock between slices. Placements are made by the engine's own
kernels, and greedy's opening game runs the engine's turn loop.
"""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

import policies.greedy
from sim import kernels as K


# Status of the compiled search (CTL_STATUS).
RUNNING = 0
DONE = 1  # searched everything under the bound: the best win is proven, or there is none
STOPPED_AT_WIN = 2  # first_win: stopped at the first win

# Control array layout.
CTL_STATUS = 0
CTL_DEPTH = 1
CTL_NODES = 2
CTL_LIMIT = 3  # L: looking for a win before this turn
CTL_BEST = 4  # turn of the best win found, 0 for none
CTL_USE_TT = 5
CTL_USE_SYM = 6
CTL_STAMP = 7
CTL_FLOOR = 8  # no win is possible before this turn (grid * grid)
CTL_TT_HITS = 9
CTL_TT_STORES = 10
CTL_ORDER = 11  # move ordering: ORDER_GREEDY or ORDER_NEW_PILE
CTL_TT_DEPTH = 12  # after this many cards, only positions with slack after two cards of one rank use the table
CTL_STOP_AT_WIN = 13  # stop at the first win (else: branch and bound)
CTL_USE_RANKS = 14  # rule 2c (line parities from the ranks to come) with at most this many cards to come; 0: off
CTL_ENDGAME = 15  # the last this many cards (no slack, full box) go to `_endgame`; 0: never
CTL_SLACK_PARITY = 16  # rule 2d: rule 2c also with one card of slack (1), or only with none (0)
CTL_TT_OVERWRITES = 17  # stores that replaced another position's entry of the same search
CTL_TABLES_FOR = 18  # the limit that scratch's ranks-to-come tables were made for (0: none yet)
CTL_SIZE = 19

ORDER_GREEDY = 0  # greedy's key: fewest face-down after, then a new pile, then the lowest cell
ORDER_NEW_PILE = 1  # a new pile first, then fewest face-down after, then the lowest cell

MAX_DEPTH = K.DECK_SIZE + 1
MAX_MOVES = K.CELLS
LINES = 2 * K.SIDE  # rows 0..6, then columns 0..6
PARITY_WORK = 44  # `_row_sets`' output
SEEN_AT = MAX_MOVES + PARITY_WORK + MAX_DEPTH + 1
ALL = np.int64(-1)  # a cell mask with every cell
ENDGAME_CARDS = 8
"""By default the last 8 cards of a line with no slack (and a full box) are placed by `_endgame`
(measured against 5, 6 and 7 in docs/solver.md)."""
ENDGAME_AT = SEEN_AT + (MAX_DEPTH + 1) * LINES
ENDGAME_MAX = 8  # `_endgame` takes at most this many cards
NO_CAP = 1 << 62  # `_endgame` with no budget
ENDGAME_WORK = 15 * ENDGAME_MAX
SPANS = 128  # `_firing_lines`' table per turn: index lo * 11 + hi of a line's rank span
FIRES_AT = ENDGAME_AT + ENDGAME_WORK
PROFILE_AT = FIRES_AT + (MAX_DEPTH + 1) * SPANS
PROFILE_COLS = 4  # per (turn, slack 0..3 or more): nodes, cut by rule 2, table hits, table stores
PROF_NODES = 0
PROF_CUT = 1
PROF_TT_HITS = 2
PROF_TT_STORES = 3
SCRATCH = PROFILE_AT + (MAX_DEPTH + 1) * 4 * PROFILE_COLS
"""search_run's space: move keys, rule 2's solution sets, the ranks to come from each turn,
`_endgame`'s stack, rule 2c's firing table (`_ranks_to_come`) and, kept from one call to the next, the ranks placed in each line of each
position on the stack, and a profile of the search (counts by turn and slack, for measurements;
never read by the search)."""
KEY_WORDS = 3
FRAME = 4  # the canonical frame: 4 x 4 cells, whatever the grid option
TT_DEPTH = 8
"""Every position uses the table up to this turn. Deeper, only those with slack whose last two cards
have the same rank do: placed on two cells in either order, the two cards give the same table, and
that is how nearly all deeper transpositions arise (rule 3 in docs/solver.md). A position with no
slack (every card to come must open a pile) never uses it deeper."""


# --- canonical key -----------------------------------------------------------


@njit(cache=True, inline="always")
def _cell_code(state, cell):
    """8 bits: 0 for an empty cell, else 1 + (rank-1)*16 + face_down*8 + (height-1)."""
    h = state[K.HEIGHT + cell]
    if h == 0:
        return np.uint64(0)
    down = (state[K.FACE_DOWN] >> cell) & 1
    return np.uint64(1 + (state[K.TOP + cell] - 1) * 16 + down * 8 + (h - 1))


def _symmetry_tables():
    """SYM_SRC[s, h, w, i]: for symmetry s of an h x w box, the box cell (index r*4+c) that lands
    on frame cell i = a*4+b, or 16 (an always-empty slot) when frame cell i is outside the image."""
    src = np.full((8, FRAME + 1, FRAME + 1, FRAME * FRAME), FRAME * FRAME, np.int64)
    for h in range(1, FRAME + 1):
        for w in range(1, FRAME + 1):
            for s in range(8):
                hh, ww = (h, w) if s < 4 else (w, h)
                for a in range(hh):
                    for b in range(ww):
                        i, j = [(a, b), (a, w - 1 - b), (h - 1 - a, b), (h - 1 - a, w - 1 - b),
                                (b, a), (h - 1 - b, a), (b, w - 1 - a), (h - 1 - b, w - 1 - a)][s]
                        src[s, h, w, a * FRAME + b] = i * FRAME + j
    return src


SYM_SRC = _symmetry_tables()


@njit(cache=True, inline="always")
def position_key(state, use_sym, codes, out):
    """Canonical key of the table (3 uint64 words) into `out`.

    With `use_sym`, the occupied cells' bounding box is moved to the corner
    of a 4x4 frame and the smallest encoding over the 8 symmetries of the
    square is kept; word 2 is 0. Without it, only the identity is encoded
    and word 2 holds the box's corner cell, so the key is the exact table.
    `codes` is scratch space of 17 entries.
    """
    r0 = state[K.MIN_ROW]
    c0 = state[K.MIN_COL]
    h = state[K.MAX_ROW] - r0 + 1
    w = state[K.MAX_COL] - c0 + 1
    codes[:] = 0
    for i in range(h):
        for j in range(w):
            codes[i * FRAME + j] = _cell_code(state, (r0 + i) * K.SIDE + c0 + j)
    best0 = np.uint64(0)
    best1 = np.uint64(0)
    nsym = 8 if use_sym else 1
    for s in range(nsym):
        src = SYM_SRC[s, h, w]
        k0 = np.uint64(0)
        for i in range(8):
            k0 |= codes[src[i]] << np.uint64(8 * i)
        if s > 0 and k0 > best0:
            continue  # the first word already decides
        k1 = np.uint64(0)
        for i in range(8):
            k1 |= codes[src[8 + i]] << np.uint64(8 * i)
        if s == 0 or k0 < best0 or k1 < best1:
            best0 = k0
            best1 = k1
    out[0] = best0
    out[1] = best1
    out[2] = np.uint64(0) if use_sym else np.uint64(r0 * K.SIDE + c0 + 1)


@njit(cache=True, inline="always")
def _slot(k0, k1, k2, mask):
    return np.int64(K.mix64(k0 ^ K.mix64(k1 ^ K.mix64(k2))) & np.uint64(mask)) & ~np.int64(1)


@njit(cache=True, inline="always")
def _tt_probe(tt_keys, tt_info, key, stamp, limit):
    """True when the table proves: no win before `limit` from this position.

    An entry's info packs (stamp << 16) | (limit << 8) | turn.
    """
    mask = tt_keys.shape[0] - 1
    i = _slot(key[0], key[1], key[2], mask)
    for s in range(2):
        e = i + s
        if ((tt_info[e] >> 16) == stamp and tt_keys[e, 0] == key[0] and tt_keys[e, 1] == key[1]
                and tt_keys[e, 2] == key[2]):
            return ((tt_info[e] >> 8) & 255) >= limit
    return False


@njit(cache=True, inline="always")
def _tt_store(tt_keys, tt_info, key, stamp, limit, turn):
    """Record "no win before `limit`" for this position (keeps the entry nearer the root).

    Returns 1 when it replaced another position's entry of the same stamp, else 0."""
    mask = tt_keys.shape[0] - 1
    i = _slot(key[0], key[1], key[2], mask)
    e = -1
    for s in range(2):
        x = i + s
        if (tt_info[x] >> 16) == stamp and tt_keys[x, 0] == key[0] and tt_keys[x, 1] == key[1] \
                and tt_keys[x, 2] == key[2]:
            e = x
            break
    replaced = 0
    if e < 0:
        if (tt_info[i] >> 16) != stamp:
            e = i
        elif (tt_info[i + 1] >> 16) != stamp:
            e = i + 1
        elif (tt_info[i] & 255) >= (tt_info[i + 1] & 255):
            e = i  # replace the entry farther from the root (cheaper to search again)
            replaced = 1
        else:
            e = i + 1
            replaced = 1
    tt_keys[e, 0] = key[0]
    tt_keys[e, 1] = key[1]
    tt_keys[e, 2] = key[2]
    tt_info[e] = (stamp << 16) | (limit << 8) | turn
    return replaced


# --- the search ----------------------------------------------------------------


def _parity_sets():
    """Rules 2b-2d's equations as sets of solutions. An assignment x gives F of the box's 8
    lines (bit i: rows 0..3, then columns 4..7); a set of assignments is 256 bits in 4 words
    (word x >> 6, bit x & 63).

    ROW_SETS[(u * 16 + occ) * 16 + down]: the x that satisfy the equations of row u's tops, a
    top in each column j of the box with bit j of `occ`, face down where `down` has bit j
    (F(u) + F(4 + j) = 1; face up: = 0). TIE_ROWS[tied * 16 + odd]: the x with F(i) = bit i of
    `odd` for each row i in `tied`; TIE_COLS the same for the columns (bit j: line 4 + j)."""
    x = np.arange(256)
    f = (x[:, None] >> np.arange(8)) & 1  # f[x, i]: F(line i) under x
    n = np.arange(16)
    bits = (n[:, None] >> np.arange(4)) & 1  # bits[m, j]: bit j of m
    # ok[x, u, occ, down]: every top of row u (columns in occ) satisfies its equation under x
    wrong = (f[:, :4, None, None, None] ^ f[:, None, None, None, 4:]) != bits[None, None, None, :, :]
    ok = ~(wrong & (bits[None, None, :, None, :] == 1)).any(axis=-1)
    # tie_ok[x, tied, odd]: every tied line of the four has F = its bit of odd
    def ties(g):
        bad = (g[:, None, None, :] != bits[None, None, :, :]) & (bits[None, :, None, :] == 1)
        return ~bad.any(axis=-1)

    def packed(sat):  # sat[x, ...] -> (..., 4) words
        flat = sat.reshape(256, -1).T.astype(np.uint64)
        words = np.zeros((flat.shape[0], 4), np.uint64)
        for w in range(4):
            words[:, w] = (flat[:, 64 * w:64 * w + 64] << np.arange(64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
        return words

    rows, tie_rows, tie_cols = packed(ok), packed(ties(f[:, :4])), packed(ties(f[:, 4:]))
    return rows.view(np.int64), tie_rows.view(np.int64), tie_cols.view(np.int64)


ROW_SETS, TIE_ROWS, TIE_COLS = _parity_sets()


@njit(cache=True, inline="always")
def _row_index(occupied, down, row, c0, u):
    """ROW_SETS' index for board row `row`, line u of a box whose first column is c0: its
    occupied and face-down cells among the box's 4 columns (a bit past column 6 is a cell of
    the next row, left of the box: never occupied)."""
    shift = row * K.SIDE + c0
    return (u * 16 + ((occupied >> shift) & 15)) * 16 + ((down >> shift) & 15)


@njit(cache=True, inline="always")
def _tie_sets(tied, odd):
    """The set (4 words) of the assignments with F(i) = bit i of `odd` for every line i in `tied`."""
    tr = (tied & 15) * 16 + (odd & 15)
    tc = ((tied >> 4) & 15) * 16 + ((odd >> 4) & 15)
    return (TIE_ROWS[tr, 0] & TIE_COLS[tc, 0], TIE_ROWS[tr, 1] & TIE_COLS[tc, 1],
            TIE_ROWS[tr, 2] & TIE_COLS[tc, 2], TIE_ROWS[tr, 3] & TIE_COLS[tc, 3])


@njit(cache=True, inline="always")
def _row_sets(state, r0, r1, c0, work):
    """The top cards' equations of rules 2b-2d, a row of the box at a time: work[4 * u : 4 * u + 4]
    is the set of the x that satisfy row u's (`ROW_SETS`), work[16 + 4 * u : 20 + 4 * u] those
    of every other row, work[32:36] all of them; work[36 + u] and work[40 + u] are row u's
    occupied and face-down cells (bit j: column j of the box)."""
    occupied = state[K.OCCUPIED]
    down = state[K.FACE_DOWN]
    for u in range(4):
        e = _row_index(occupied, down, r0 + u, c0, u) if r0 + u <= r1 else u * 256
        work[36 + u] = (e >> 4) & 15
        work[40 + u] = e & 15
        for k in range(4):
            work[4 * u + k] = ROW_SETS[e, k]
    for k in range(4):
        a = work[k]
        b = work[4 + k]
        c = work[8 + k]
        d = work[12 + k]
        work[16 + k] = b & c & d
        work[20 + k] = a & c & d
        work[24 + k] = a & b & d
        work[28 + k] = a & b & c
        work[32 + k] = a & b & c & d


@njit(cache=True, inline="always")
def _solvable(work, u, j, tied, odd, free):
    """Do the line-parity equations of rules 2b-2d have a solution?

    The top cards' equations are `_row_sets`' (u = -1), or all but that of
    the top in row u and column j of the box (it gets covered). Bit i of
    `tied` ties line i to F = bit i of `odd` (F = 0 for a line that gets no
    card, rule 2b; F = 1 for a line whose odd number of placements all
    fire, rule 2c), except the lines in `free`. A solution exists when some
    x of the 256 is in every set.
    """
    w0, w1, w2, w3 = _tie_sets(tied & ~free, odd)
    if u < 0:
        w0 &= work[32]
        w1 &= work[33]
        w2 &= work[34]
        w3 &= work[35]
    else:
        e = (u * 16 + (work[36 + u] & ~(1 << j))) * 16 + work[40 + u]
        w0 &= work[16 + 4 * u] & ROW_SETS[e, 0]
        w1 &= work[17 + 4 * u] & ROW_SETS[e, 1]
        w2 &= work[18 + 4 * u] & ROW_SETS[e, 2]
        w3 &= work[19 + 4 * u] & ROW_SETS[e, 3]
    return (w0 | w1 | w2 | w3) != 0


@njit(cache=True, inline="always")
def _mask_solvable(occupied, down, r0, c0, tied, odd):
    """`_solvable` for all the top cards' equations of a box at (r0, c0) of `grid` rows and
    columns, straight from the masks (for `_endgame`, whose box is full)."""
    w0, w1, w2, w3 = _tie_sets(tied, odd)
    for u in range(4):
        if r0 + u < K.SIDE:
            e = _row_index(occupied, down, r0 + u, c0, u)
            w0 &= ROW_SETS[e, 0]
            w1 &= ROW_SETS[e, 1]
            w2 &= ROW_SETS[e, 2]
            w3 &= ROW_SETS[e, 3]
    return (w0 | w1 | w2 | w3) != 0


@njit(cache=True, inline="always")
def _stacks_needed(state, rules, most, ranks, lines_seen, fires, t, work):
    """A lower bound (up to `most`, at most 2) on the cards that must go on occupied cells
    before a win (pruning rules 2b, 2c and 2d).

    Let F(line) be the parity of the number of future placements in a row
    (column) whose row (column) check fires. Every such placement turns over
    every card then in that line, so a top card that is never covered ends
    face up only if F(its row) + F(its column) = 1 when it is face down now,
    0 when face up (mod 2). A line can get no new pile when the occupied
    cells already span `grid` columns (for a row) or `grid` rows (for a
    column) and the line has no empty cell inside that span; with no card on
    an occupied cell, such a line has F = 0. So if these equations (one per
    top card) have no solution, at least one card must go on an occupied
    cell. One such card, on cell x, removes x's equation (x is covered) and
    frees F of x's row and column, and nothing else: if no x makes the rest
    solvable, at least two are needed. The check (`_solvable`) intersects
    the sets of the line assignments that satisfy each equation.

    Rule 2c: `ranks` (the mask of the ranks of the cards to come before turn
    `limit`, deck[t : limit-1]; 0 with the rule off, and the caller passes 0
    with more than one card of slack, or with one when rule 2d is off) lets
    `_firing_lines` tie more lines, with their parities, when no card goes on
    an occupied cell. Rule 2d (`most` = 2): with one card on a pile, on a
    cell x in row R and column C of the box (a pile there now, or one opened
    later), every fixed line other than R and C still gets one placement per
    empty cell, from the cards to come, so 2c's ties hold for all lines but
    R and C; x's equation goes if x is occupied now. A cell outside the box
    frees no tied line (a line outside the box span is not fixed), a
    stricter system. So when for every (R, C) of the box the system with R
    and C freed (and x's equation dropped) has no solution, at least two
    cards must go on occupied cells; and when some have one, a card may go
    on a pile now only on a cell x whose system has one (no winning line
    covers another top now). docs/solver.md has the whole argument.

    Returns (the bound, the mask of the occupied cells the next card may go
    on: all of them unless rule 2d narrows it).
    """
    if most <= 0 or most > 2 or (state[K.FACE_DOWN_COUNT] == 0 and ranks == 0):
        return 0, ALL  # cannot decide anything, or F = 0 everywhere solves it
    grid = rules[K.RULE_GRID]
    r0 = state[K.MIN_ROW]
    r1 = state[K.MAX_ROW]
    c0 = state[K.MIN_COL]
    c1 = state[K.MAX_COL]
    rows_fixed = c1 - c0 + 1 >= grid  # the column span is final: rows can only fill their empty cells
    cols_fixed = r1 - r0 + 1 >= grid
    if not rows_fixed and not cols_fixed:
        return 0, ALL  # every line can still open a pile: every F is free
    occupied = state[K.OCCUPIED]
    box = K.BAND_ROWS[r0 * K.SIDE + r1] & K.BAND_COLS[c0 * K.SIDE + c1]
    empty = box & ~occupied
    closed = 0
    if rows_fixed:
        for r in range(r0, r1 + 1):
            if K.ROW_MASK[r] & empty == 0:
                closed |= 1 << (r - r0)
    if cols_fixed:
        for c in range(c0, c1 + 1):
            if K.COL_MASK[c] & empty == 0:
                closed |= 1 << (4 + c - c0)
    fired = 0
    odd = 0
    _row_sets(state, r0, r1, c0, work)
    if state[K.FACE_DOWN_COUNT] == 0 or _solvable(work, -1, 0, closed, 0, 0):
        # Rule 2b finds no contradiction. Rule 2c may (`ranks`: the cards to come).
        if ranks == 0:
            return 0, ALL
        fired, odd = _firing_lines(state, ranks, lines_seen, fires, t, rows_fixed, cols_fixed, empty)
        if fired == 0 or (odd == 0 and state[K.FACE_DOWN_COUNT] == 0) \
                or _solvable(work, -1, 0, closed | fired, odd, 0):
            return 0, ALL
    elif ranks != 0 and most > 1:
        fired, odd = _firing_lines(state, ranks, lines_seen, fires, t, rows_fixed, cols_fixed, empty)
    if most == 1:
        return 1, ALL
    tied = closed | fired
    m = occupied & ~state[K.FULL]
    if ranks == 0:
        while m:
            x = K.lowest_cell(m)
            m &= m - 1
            u = K.ROW_OF[x] - r0
            j = K.COL_OF[x] - c0
            if _solvable(work, u, j, closed, 0, (1 << u) | (1 << (4 + j))):
                return 1, ALL
        return 2, ALL
    # Rule 2d: one card on a pile, on any cell (R, C) of the box: the piles there now (each one's
    # answer is wanted), then, while none has a solution, the cells a card to come may open.
    need = 2
    allow = np.int64(0)
    while m:
        x = K.lowest_cell(m)
        m &= m - 1
        u = K.ROW_OF[x] - r0
        j = K.COL_OF[x] - c0
        if _solvable(work, u, j, tied, odd, (1 << u) | (1 << (4 + j))):
            need = 1
            allow |= np.int64(1) << x
    m = empty if need == 2 else 0
    while m:
        x = K.lowest_cell(m)
        m &= m - 1
        free = (1 << (K.ROW_OF[x] - r0)) | (1 << (4 + K.COL_OF[x] - c0))
        if (tied & free) != 0 and _solvable(work, -1, 0, tied, odd, free):
            need = 1  # a card may still go on a pile opened later
            break
    return need, allow


@njit(cache=True, inline="always")
def _firing_lines(state, ranks, lines_seen, fires, t, rows_fixed, cols_fixed, empty):
    """Rule 2c: (fired, odd), the masks of the fixed lines whose every placement fires and of
    those among them with an odd number of placements (line bits as in `_solvable`).

    With no card on an occupied cell, the cards to come, deck[t : limit-1]
    (ranks in the mask `ranks`), each open a pile, no top card is covered,
    and a fixed line (as in rule 2b) gets exactly one placement per empty
    cell of the box in it, `e`. A placement fires its line's check when its
    rank is strictly below, or strictly above, the rank of every other top
    of the line that is face up (or none is). Those tops are, whatever the
    faces are by then, among the line's tops now and the cards placed in it
    before: with `e` = 1, a line whose tops' ranks span [lo, hi] surely
    fires when no rank to come lies in [lo, hi]; with more, when each card
    to come, in deck order, lies outside the span of the line's tops and of
    the cards to come before it. Then F = e mod 2: the line is tied to
    node 8 with that parity. Lines with no empty cell are rule 2b's, not
    counted here. `lines_seen[line]` (rows 0..6, then columns) has bit v
    for each rank placed in the line so far: a superset of its tops' ranks
    (a covered card stays in it), which only widens [lo, hi], so the rule
    stays sound and costs no scan of the line. Both tests on the cards to
    come depend only on (t, lo, hi), so `_ranks_to_come` makes them once
    per limit: fires[t * SPANS + lo * 11 + hi] has bit 0 for the first
    and bit 1 for the second.
    """
    r0 = state[K.MIN_ROW]
    c0 = state[K.MIN_COL]
    fired = 0
    odd = 0
    row = t * SPANS
    for i in range(8):
        if i < 4:
            if not rows_fixed or r0 + i > state[K.MAX_ROW]:
                continue
            line = K.ROW_MASK[r0 + i]
        else:
            if not cols_fixed or c0 + i - 4 > state[K.MAX_COL]:
                continue
            line = K.COL_MASK[c0 + i - 4]
        e = K.popcount(line & empty)
        if e == 0:
            continue  # closed: rule 2b's F = 0
        seen = lines_seen[r0 + i if i < 4 else K.SIDE + c0 + i - 4]
        if seen == 0:
            continue  # cannot happen in a connected table; nothing to compare with
        lo = K.lowest_cell(seen)
        hi = 63 - leading_zeros(seen)
        if fires[row + lo * 11 + hi] & (2 if e > 1 else 1) == 0:
            continue  # a card to come may fall within the span: it may not fire
        fired |= 1 << i
        odd |= (e & 1) << i
    return fired, odd


@njit(cache=True, inline="always")
def _need(state, rules, target, slack, ranks, slack_parity, lines_seen, fires, t, work):
    """Cards still needed at the least before a win is possible (pruning rule 2).

    `slack` is how many cards beyond one per missing pile the caller can
    afford; the bound is only refined as far as that decides anything.
    `ranks` is the mask of the ranks of deck[t : limit-1] for rule 2c (0: off), used with no
    slack, and with one card of slack when `slack_parity` (rule 2d); `lines_seen` the ranks
    placed in each line and `fires` its table (`_firing_lines`); `work` holds PARITY_WORK int64.
    Returns (the bound, the occupied cells the next card may go on, as `_stacks_needed`).
    """
    p = state[K.PILES]
    if p < target:
        r = ranks if slack <= 0 or (slack == 1 and slack_parity) else 0
        stacks, allow = _stacks_needed(state, rules, slack + 1, r, lines_seen, fires, t, work)
        return target - p + stacks, allow
    return (1 if state[K.FACE_DOWN_COUNT] > 0 else 0), ALL


@njit(cache=True, inline="always")
def _endgame(state, rules, deck, t, k, line, work, lines_seen, to_come, fires, cap):
    """Is there a win in exactly `k` more cards, each opening a pile inside the full box?
    Returns (won, placements tried); a win's cells go to line[t : t+k]. It tries `cap`
    placements at most: (False, -1) when it would need more (nothing written).

    Rule 5 (docs/solver.md): with no slack and a box that already
    spans `grid` rows and columns, every card to come opens a pile on one
    of the box's empty cells, and the game's state needs only three masks
    (occupied, face down, and the legal empty cells) and the ranks placed
    in each of the box's lines. This depth-first search over them places
    the cards exactly as `K.place` would (the row and column checks compare
    with the face-up others' ranks, from the `K.ranks_above_and_equal`
    masks of the tops and of the cards it placed), and cuts a line only as
    the main search would: when it loses at once (rule 1), or when rule 2's
    parity systems (2b, and 2c with `to_come` and `fires`, as
    `_stacks_needed` builds them with no slack) have no solution.
    `lines_seen` are the ranks placed in each line before (`seen`);
    `work` holds ENDGAME_WORK int64.
    """
    occ = work[0:ENDGAME_MAX]
    down = work[ENDGAME_MAX:2 * ENDGAME_MAX]
    legal = work[2 * ENDGAME_MAX:3 * ENDGAME_MAX]
    avail = work[3 * ENDGAME_MAX:4 * ENDGAME_MAX]
    cells = work[4 * ENDGAME_MAX:5 * ENDGAME_MAX]
    seen = work[5 * ENDGAME_MAX:13 * ENDGAME_MAX]  # 8 per depth: the box's rows, then its columns
    # per depth, the face-up tops ranked >= and <= its card, for every cell the card may take
    up_ge = work[13 * ENDGAME_MAX:14 * ENDGAME_MAX]
    up_le = work[14 * ENDGAME_MAX:15 * ENDGAME_MAX]
    max_fd = rules[K.RULE_MAX_FACE_DOWN]
    grid = rules[K.RULE_GRID]
    r0 = state[K.MIN_ROW]
    c0 = state[K.MIN_COL]
    box = K.BAND_ROWS[r0 * K.SIDE + r0 + grid - 1] & K.BAND_COLS[c0 * K.SIDE + c0 + grid - 1]
    occ[0] = state[K.OCCUPIED]
    down[0] = state[K.FACE_DOWN]
    legal[0] = state[K.OPEN] & box
    avail[0] = legal[0]
    for i in range(4):
        seen[i] = lines_seen[r0 + i] if r0 + i < K.SIDE else 0
        seen[4 + i] = lines_seen[K.SIDE + c0 + i] if c0 + i < K.SIDE else 0
    tried = 0
    j = 0
    _up_ranked(state, deck, t, 0, cells, occ, down, up_ge, up_le)
    while j >= 0:
        if avail[j] == 0:
            j -= 1
            continue
        y = K.lowest_cell(avail[j])
        bit = np.int64(1) << y
        avail[j] &= ~bit
        v = deck[t + j]
        ge = up_ge[j]
        le = up_le[j]
        row = K.ROW_OTHERS_OF[y] & occ[j]
        col = K.COL_OTHERS_OF[y] & occ[j]
        turn = np.int64(0)
        if (row & ge) == 0 or (row & le) == 0:
            turn |= row
        if (col & ge) == 0 or (col & le) == 0:
            turn |= col
        nd = down[j] ^ turn
        if tried >= cap:
            return False, -1  # past the node budget: undecided
        tried += 1
        if K.popcount(nd) > max_fd:
            continue  # rule 1
        cells[j] = y
        if j == k - 1:
            if nd == 0:
                for i in range(k):
                    line[t + i] = cells[i]
                return True, tried
            continue
        no = occ[j] | bit
        empty = box & ~no
        u = K.ROW_OF[y] - r0
        x = 4 + K.COL_OF[y] - c0
        for i in range(8):
            seen[8 * (j + 1) + i] = seen[8 * j + i]
        seen[8 * (j + 1) + u] |= 1 << v
        seen[8 * (j + 1) + x] |= 1 << v
        # Rule 2 with no slack (as `_stacks_needed`): the system of 2b, with 2c's ties when
        # the ranks to come are known, must have a solution.
        closed = 0
        fired = 0
        odd = 0
        ranks = to_come[t + j + 1]
        base = (t + j + 1) * SPANS
        for i in range(8):
            if (i & 3) >= grid:
                continue  # not a line of the box
            lm = K.ROW_MASK[r0 + i] if i < 4 else K.COL_MASK[c0 + i - 4]
            e = K.popcount(lm & empty)
            if e == 0:
                closed |= 1 << i
            elif ranks != 0:
                sn = seen[8 * (j + 1) + i]
                if sn == 0:
                    continue
                lo = K.lowest_cell(sn)
                hi = 63 - leading_zeros(sn)
                if fires[base + lo * 11 + hi] & (2 if e > 1 else 1) != 0:
                    fired |= 1 << i
                    odd |= (e & 1) << i
        if (nd != 0 or odd != 0) and not _mask_solvable(no, nd, r0, c0, closed | fired, odd):
            continue  # rule 2
        occ[j + 1] = no
        down[j + 1] = nd
        legal[j + 1] = (legal[j] | (K.neighbours(y, rules) & empty)) & ~bit
        avail[j + 1] = legal[j + 1]
        j += 1
        _up_ranked(state, deck, t, j, cells, occ, down, up_ge, up_le)
    return False, tried


@njit(cache=True, inline="always")
def _up_ranked(state, deck, t, j, cells, occ, down, up_ge, up_le):
    """`_endgame`'s up_ge[j] and up_le[j]: the face-up tops at depth j ranked >= and <= its card,
    deck[t + j]: the table's tops, then the cards `_endgame` placed before (cells[:j])."""
    v = deck[t + j]
    above, same = K.ranks_above_and_equal(state, v)
    ge = above | same
    le = state[K.OCCUPIED] & ~above
    for i in range(j):
        w = deck[t + i]
        ge |= (np.int64(1) << cells[i]) & -np.int64(w >= v)
        le |= (np.int64(1) << cells[i]) & -np.int64(w <= v)
    up = occ[j] & ~down[j]
    up_ge[j] = up & ge
    up_le[j] = up & le


@njit(cache=True, inline="always")
def _gen_moves(state, rules, card, turn, limit, target, order, moves, d, keys, allow):
    """Sorted moves for placing `card` at turn `turn` (rules 1 and 2 applied, piles it may go on
    in the cell mask `allow`); returns how many."""
    occupied = state[K.OCCUPIED]
    legal = K.legal_cells(state, rules) & (~occupied | allow)
    max_fd = rules[K.RULE_MAX_FACE_DOWN]
    p = state[K.PILES]
    if p < target and turn + 1 + target - p >= limit:
        legal &= ~occupied  # rule 2: only new piles can still win before the limit
    n = 0
    m = legal
    while m:
        cell = K.lowest_cell(m)
        m &= m - 1
        new = 1 - ((occupied >> cell) & 1)
        pa = p + new
        if pa < target and turn + 1 + target - pa >= limit:
            continue  # rule 2: no win before the limit
        fd = K.face_down_after(state, cell, card)
        if fd > max_fd:
            continue  # rule 1: loses at once
        if pa == target and fd > 0 and turn + 2 >= limit:
            continue  # rule 2: a full grid with a face-down card needs another card
        if order == ORDER_GREEDY:
            key = fd * 128 + (1 - new) * 64 + cell
        else:
            key = (1 - new) * 4096 + fd * 128 + cell
        # insertion sort: lists are short
        j = n
        while j > 0 and keys[j - 1] > key:
            keys[j] = keys[j - 1]
            moves[d, j] = moves[d, j - 1]
            j -= 1
        keys[j] = key
        moves[d, j] = cell
        n += 1
    return n


@njit(cache=True, inline="always")
def _ranks_to_come(deck, limit, use_ranks, out, fires):
    """out[t]: the mask of the ranks of deck[t : limit-1] (bit v for rank v), the cards a win before
    turn `limit` may still place after t cards; 0 (rule 2c off there) when more than `use_ranks`
    cards are to come. Where it is not 0, `fires` gets rule 2c's tests on those cards for every
    rank span [lo, hi] of a line (`_firing_lines`): at t * SPANS + lo * 11 + hi, bit 0 when no
    card to come lies within it, bit 1 when each, in deck order, lies outside it and outside
    the span of the ones before it as well."""
    acc = 0
    for t in range(out.shape[0] - 1, -1, -1):
        if t < limit - 1 and t < deck.shape[0]:
            acc |= 1 << deck[t]
        out[t] = acc if limit - 1 - t <= use_ranks else 0
        if out[t] == 0:
            continue
        for lo in range(1, K.RANKS + 1):
            for hi in range(lo, K.RANKS + 1):
                code = 0
                if out[t] & ((2 << hi) - (1 << lo)) == 0:
                    code = 3
                    a = lo
                    b = hi
                    for j in range(t, limit - 1):
                        v = deck[j]
                        if a <= v <= b:
                            code = 1
                            break
                        a = min(a, v)
                        b = max(b, v)
                fires[t * SPANS + lo * 11 + hi] = code


@njit(cache=True, inline="always")
def _summary_after(parent, rules, cell, card, child):
    """Set in `child` the entries rule 2 and the win test read (occupied, face down and their
    count, full, piles, the box) as `K.place` would leave them after `card` on `cell`; the
    rest of `child` is left as it was."""
    _, turn = K.placement_flips(parent, cell, card)
    bit = np.int64(1) << cell
    occupied = parent[K.OCCUPIED]
    face_down = (parent[K.FACE_DOWN] & ~bit) ^ turn
    child[K.OCCUPIED] = occupied | bit
    child[K.FACE_DOWN] = face_down
    child[K.FACE_DOWN_COUNT] = K.popcount(face_down)
    child[K.PILES] = parent[K.PILES] + 1 - ((occupied >> cell) & 1)
    child[K.FULL] = parent[K.FULL] | (bit & -np.int64(parent[K.HEIGHT + cell] + 1 >= rules[K.RULE_MAX_PILE]))
    child[K.MIN_ROW] = min(parent[K.MIN_ROW], K.ROW_OF[cell])
    child[K.MAX_ROW] = max(parent[K.MAX_ROW], K.ROW_OF[cell])
    child[K.MIN_COL] = min(parent[K.MIN_COL], K.COL_OF[cell])
    child[K.MAX_COL] = max(parent[K.MAX_COL], K.COL_OF[cell])


@njit(cache=True)
def search_init(deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp,
                ctl, states, moves, nmoves, nexts, line, use_ranks=K.DECK_SIZE, endgame=ENDGAME_CARDS,
                slack_parity=1):
    """Set up a search of `deck` for a win before turn `limit` (root: the empty table, turn 0).

    Rule 2c applies where at most `use_ranks` cards are to come (0: never), with no slack, and
    with one card of slack too when `slack_parity` (rule 2d);
    `_endgame` (rule 5) places the last `endgame` cards (0: never, at most ENDGAME_MAX).
    """
    ctl[:] = 0
    ctl[CTL_SLACK_PARITY] = slack_parity
    grid = rules[K.RULE_GRID]
    ctl[CTL_LIMIT] = limit
    ctl[CTL_ORDER] = order
    ctl[CTL_STOP_AT_WIN] = stop_at_win
    ctl[CTL_TT_DEPTH] = TT_DEPTH
    ctl[CTL_USE_TT] = use_tt
    ctl[CTL_USE_SYM] = use_sym
    ctl[CTL_USE_RANKS] = use_ranks
    ctl[CTL_ENDGAME] = min(endgame, ENDGAME_MAX)
    ctl[CTL_STAMP] = stamp
    ctl[CTL_FLOOR] = grid * grid
    K.reset(states[0])
    keys = np.empty(MAX_MOVES, np.int64)
    nmoves[0] = _gen_moves(states[0], rules, deck[0], 0, limit, grid * grid, order, moves, 0, keys, ALL)
    nexts[0] = 0
    ctl[CTL_DEPTH] = 0
    line[:] = -1
    if nmoves[0] == 0:
        ctl[CTL_STATUS] = DONE


@njit(cache=True)
def search_run(deck, rules, budget, ctl, states, moves, nmoves, nexts, line, best_line,
               node_keys, tabled, tt_keys, tt_info, scratch, codes):
    """Run the depth-first search until it ends or `ctl[CTL_NODES]` reaches `budget`.

    It never passes `budget`: a node whose endgame (rule 5, whose placements
    count as nodes) would pass it is left untried, and the search stops
    before it, still running, with fewer nodes than `budget`.
    Everything the search needs to go on is in the arrays, so calling again
    with a larger budget continues exactly where it stopped. A win before
    the limit is copied to `best_line`; then the search stops
    (`CTL_STOP_AT_WIN`), or the limit becomes the win's turn and the search
    goes on for a better one (branch and bound). `scratch` (int64, SCRATCH
    entries) and `codes` (uint64, 17) are work space.
    """
    # Uncounted views: the caller owns every array for the whole call (see K.borrowed).
    deck, rules, ctl, states, moves = K.borrowed(deck), K.borrowed(rules), K.borrowed(ctl), K.borrowed(states), \
        K.borrowed(moves)
    nmoves, nexts, line, best_line = K.borrowed(nmoves), K.borrowed(nexts), K.borrowed(line), K.borrowed(best_line)
    node_keys, tabled, tt_keys, tt_info = K.borrowed(node_keys), K.borrowed(tabled), K.borrowed(tt_keys), \
        K.borrowed(tt_info)
    scratch, codes = K.borrowed(scratch), K.borrowed(codes)
    keys = scratch[:MAX_MOVES]
    parity_work = scratch[MAX_MOVES:MAX_MOVES + PARITY_WORK]
    fires = scratch[FIRES_AT:PROFILE_AT]
    to_come = scratch[MAX_MOVES + PARITY_WORK:SEEN_AT]
    seen = scratch[SEEN_AT:ENDGAME_AT].reshape((MAX_DEPTH + 1, LINES))
    seen[0, :] = 0  # the root, the empty table
    endgame_work = scratch[ENDGAME_AT:FIRES_AT]
    endgame = ctl[CTL_ENDGAME]
    grid = rules[K.RULE_GRID]
    target = ctl[CTL_FLOOR]
    use_tt = ctl[CTL_USE_TT]
    use_sym = ctl[CTL_USE_SYM]
    stamp = ctl[CTL_STAMP]
    order = ctl[CTL_ORDER]
    stop_at_win = ctl[CTL_STOP_AT_WIN]
    tt_depth = ctl[CTL_TT_DEPTH]
    d = ctl[CTL_DEPTH]
    nodes = ctl[CTL_NODES]
    limit = ctl[CTL_LIMIT]
    use_ranks = ctl[CTL_USE_RANKS]
    slack_parity = ctl[CTL_SLACK_PARITY]
    profile = scratch[PROFILE_AT:SCRATCH].reshape((MAX_DEPTH + 1, 4, PROFILE_COLS))
    if ctl[CTL_TABLES_FOR] != limit:  # a new search, or the caller lowered the limit
        _ranks_to_come(deck, limit, use_ranks, to_come, fires)
        ctl[CTL_TABLES_FOR] = limit
    while ctl[CTL_STATUS] == RUNNING:
        if nodes >= budget:
            break
        if nexts[d] >= nmoves[d]:
            # Finished: no win before `limit` from this position (rule 3). The limit
            # may have dropped while it was searched; the fact holds for the current one.
            if d > 0 and tabled[d]:
                ctl[CTL_TT_OVERWRITES] += _tt_store(tt_keys, tt_info, node_keys[d], stamp, limit, d)
                ctl[CTL_TT_STORES] += 1
                profile[d, min(3, max(0, limit - 1 - d - (target - states[d, K.PILES]))), PROF_TT_STORES] += 1
            if d == 0:
                ctl[CTL_STATUS] = DONE
                break
            d -= 1
            continue
        cell = moves[d, nexts[d]]
        nexts[d] += 1
        child = states[d + 1]
        parent = states[d]
        card = deck[d]
        # First only the entries of the child that rule 2 and the win test read (most children
        # are cut by rule 2 at once); the whole child is made below, for those that go on.
        _summary_after(parent, rules, cell, card, child)
        nodes += 1
        line[d] = cell
        t = d + 1
        for i in range(LINES):
            seen[t, i] = seen[d, i]
        seen[t, K.ROW_OF[cell]] |= 1 << card
        seen[t, K.SIDE + K.COL_OF[cell]] |= 1 << card
        if child[K.PILES] == target and child[K.FACE_DOWN_COUNT] == 0:
            if t < limit:
                best_line[:] = -1
                best_line[:t] = line[:t]
                ctl[CTL_BEST] = t
                limit = t
                if stop_at_win or limit <= target:
                    ctl[CTL_STATUS] = STOPPED_AT_WIN
                    break
                _ranks_to_come(deck, limit, use_ranks, to_come, fires)
                ctl[CTL_TABLES_FOR] = limit
            continue
        slack = limit - 1 - t - (target - child[K.PILES])
        sb = min(3, max(0, slack))
        profile[t, sb, PROF_NODES] += 1
        need, allow = _need(child, rules, target, slack, to_come[t], slack_parity, seen[t], fires, t,
                            parity_work)
        if t + need >= limit:
            profile[t, sb, PROF_CUT] += 1
            continue  # rule 2 (rule 1 was applied when the move was generated)
        for i in range(K.STATE_SIZE):
            child[i] = parent[i]
        K.draw(child, card)
        K.place(child, rules, cell, card)
        if slack == 0 and target - child[K.PILES] <= endgame and child[K.MAX_ROW] - child[K.MIN_ROW] + 1 == grid \
                and child[K.MAX_COL] - child[K.MIN_COL] + 1 == grid:
            # Rule 5: the last cards, each on an empty cell of the box, by `_endgame`.
            k = target - child[K.PILES]
            won, tried = _endgame(child, rules, deck, t, k, line, endgame_work, seen[t], to_come, fires,
                                  budget - nodes)
            if tried < 0:
                # Its placements would pass the budget: this node is not counted, and the search
                # stops before it (a call with a larger budget searches it, from scratch), so no
                # search ever tries more nodes than its budget (a node limit is a bound).
                nodes -= 1
                nexts[d] -= 1
                profile[t, sb, PROF_NODES] -= 1
                break
            nodes += tried
            if won:
                best_line[:] = -1
                best_line[:t + k] = line[:t + k]
                ctl[CTL_BEST] = t + k
                limit = t + k
                if stop_at_win or limit <= target:
                    ctl[CTL_STATUS] = STOPPED_AT_WIN
                    break
                _ranks_to_come(deck, limit, use_ranks, to_come, fires)
                ctl[CTL_TABLES_FOR] = limit
            continue
        tt_here = use_tt and (t <= tt_depth or (slack > 0 and t >= 2 and deck[t - 1] == deck[t - 2]))
        tabled[t] = tt_here
        if tt_here:
            position_key(child, use_sym, codes, node_keys[t])
            if _tt_probe(tt_keys, tt_info, node_keys[t], stamp, limit):
                ctl[CTL_TT_HITS] += 1
                profile[t, sb, PROF_TT_HITS] += 1
                continue  # rule 3
        nmoves[t] = _gen_moves(child, rules, deck[t], t, limit, target, order, moves, t, keys, allow)
        nexts[t] = 0
        d = t
    ctl[CTL_DEPTH] = d
    ctl[CTL_NODES] = nodes
    ctl[CTL_LIMIT] = limit


@njit(cache=True)
def greedy_line(deck, rules, horizon, state, moves):
    """Greedy's game on `deck`, the first `horizon` cards only: its winning turn (0 if it does not win)."""
    K.reset(state)
    rng = np.zeros(1, np.uint64)  # greedy draws nothing
    params = np.empty(0, np.float64)  # and has no parameters
    fired = np.empty(K.DECK_SIZE, np.int64)
    end, played = K.play_turns(policies.greedy.choose, deck[:horizon], state, rules, params, rng, moves, fired)
    return played if end == K.END_WIN else 0


@njit(cache=True, inline="always")
def _tops_seen(state):
    """The ranks placed in each line (`seen`) for a lone state: its tops' ranks."""
    seen = np.zeros(LINES, np.int64)
    m = state[K.OCCUPIED]
    while m:
        cell = K.lowest_cell(m)
        m &= m - 1
        seen[K.ROW_OF[cell]] |= 1 << state[K.TOP + cell]
        seen[K.SIDE + K.COL_OF[cell]] |= 1 << state[K.TOP + cell]
    return seen


@njit(cache=True)
def _bound(state, rules, deck, t, limit, use_ranks, slack_parity):
    """`_need` from a lone state, as the search would compute it (the ranks placed in each line
    taken as its tops' ranks)."""
    target = rules[K.RULE_GRID] * rules[K.RULE_GRID]
    work = np.zeros(PARITY_WORK, np.int64)
    to_come = np.zeros(MAX_DEPTH + 1, np.int64)
    fires = np.zeros((MAX_DEPTH + 1) * SPANS, np.int64)
    _ranks_to_come(deck, limit, use_ranks, to_come, fires)
    slack = limit - 1 - t - (target - state[K.PILES])
    seen = _tops_seen(state)
    return _need(state, rules, target, slack, to_come[t], slack_parity, seen, fires, t, work)


@njit(cache=True)
def cards_needed(state, rules, deck, t, limit, use_ranks, slack_parity):
    """Rule 2's lower bound on the cards still needed for a win from `state` (`t` cards placed,
    deck[t] next), refined as far as a search for a win before turn `limit` would (`use_ranks`
    and `slack_parity` as in `search_init`): the search's own bound, callable on its own so
    that tests can check it against brute force. No argument has a default: numba compiles a
    function called with an omitted argument once more, here with `_bound` (half a minute)."""
    return _bound(state, rules, deck, t, limit, use_ranks, slack_parity)[0]


@njit(cache=True)
def piles_allowed(state, rules, deck, t, limit, use_ranks, slack_parity):
    """The occupied cells on which the search (for a win before turn `limit`) lets the next card,
    deck[t], go (rule 2d narrows them with one card of slack; all of them otherwise): callable
    on its own so that tests can check against brute force that the others hold no win."""
    return _bound(state, rules, deck, t, limit, use_ranks, slack_parity)[1] & state[K.OCCUPIED]



@njit(cache=True)
def endgame_line(state, rules, deck, t, limit, use_ranks=K.DECK_SIZE):
    """Rule 5 from a lone state (`t` cards placed, no slack before turn `limit`, a full box; the
    ranks placed in each line taken as its tops' ranks): (won, the cells of the win's last
    cards), callable on its own so that tests can check it against brute force."""
    target = rules[K.RULE_GRID] * rules[K.RULE_GRID]
    k = target - state[K.PILES]
    to_come = np.zeros(MAX_DEPTH + 1, np.int64)
    fires = np.zeros((MAX_DEPTH + 1) * SPANS, np.int64)
    _ranks_to_come(deck, limit, use_ranks, to_come, fires)
    seen = _tops_seen(state)
    work = np.zeros(ENDGAME_WORK, np.int64)
    line = np.full(K.DECK_SIZE + 1, -1, np.int64)
    won, _ = _endgame(state, rules, deck, t, k, line, work, seen, to_come, fires, NO_CAP)
    return won, line[t:t + k].copy()


@njit(cache=True)
def split_children(deck, rules, path, level, use_key, cells, keys):
    """The children of the position `path` leads to, as a split lists them: their count, cells and keys.

    In the search's own order (a new pile first, then fewer face-down tops,
    then the lowest cell); moves that lose at once (rule 1) and children the
    turn bound cuts (rule 2) are left out. `keys[i]` is child i's canonical
    key (rule 4). Compiled because a split lists thousands of positions.
    """
    state = np.zeros(K.STATE_SIZE, np.int64)
    K.reset(state)
    t = path.shape[0]
    for i in range(t):
        K.draw(state, deck[i])
        K.place(state, rules, path[i], deck[i])
    card = deck[t]
    floor = rules[K.RULE_GRID] * rules[K.RULE_GRID]
    order = np.empty(K.CELLS, np.int64)
    n = 0
    m = K.legal_cells(state, rules)
    occupied = state[K.OCCUPIED]
    while m:
        cell = K.lowest_cell(m)
        m &= m - 1
        fd = K.face_down_after(state, cell, card)
        if fd > rules[K.RULE_MAX_FACE_DOWN]:
            continue  # rule 1
        sort_key = (((occupied >> cell) & 1) * 64 + fd) * 64 + cell
        j = n  # insertion sort: at most 49 children
        while j > 0 and order[j - 1] > sort_key:
            order[j] = order[j - 1]
            j -= 1
        order[j] = sort_key
        n += 1
    codes = np.zeros(FRAME * FRAME + 1, np.uint64)
    key = np.zeros(KEY_WORDS, np.uint64)
    child = np.empty(K.STATE_SIZE, np.int64)
    count = 0
    for i in range(n):
        cell = order[i] % 64
        child[:] = state
        K.draw(child, card)
        K.place(child, rules, cell, card)
        if (t + 1) + (floor - child[K.PILES]) >= level:
            continue  # rule 2: no win before the level
        position_key(child, use_key, codes, key)
        cells[count] = cell
        keys[count, :] = key
        count += 1
    return count
