"""Foursquare with perfect information: a depth-first solver that sees the stock.

``sim.solve(deck)`` searches the lines of play of a deck with the whole stock
order known and returns a `SolveResult`: ``won`` with the best score found
(and whether it is proven best), ``lost`` (proven: no line wins) or
``unresolved`` (a node or time limit was hit before a win or a proof).

The search
----------
A position is the table after ``t`` cards; its children place card
``deck[t]`` on each legal cell. Cards are placed by the engine's own kernels
(``sim.kernels``), so the solver plays exactly RULES.md's game, and every
line it returns is replayed through the engine in the tests.

One search looks for a win *before turn L* (a win after ``T`` cards has score
``40 - T``), depth first, with its whole stack in arrays so that it can stop
after any number of nodes and go on later. A solve (`Solver.solve`) first
plays greedy's game (when it wins, only better wins are looked for), then
runs several such searches side by side, in rounds of doubling node budgets:

- *any win* (`ANY_WIN`): four searches for any win, with different limits
  (``grid*grid + 3`` cards, ``grid*grid + 6``, the whole stock twice) and
  move orderings (new pile first, or greedy's key). A depth-first search for
  a first win is heavy-tailed: on a few deals in ten thousand one of them
  wanders for millions of nodes where another wins within a hundred. With
  ``first_win`` each stops at its first win; otherwise each win lowers the
  limit of all of them to its turn (branch and bound). One that finishes
  proves that no (better) win comes before its limit.
- *least cards*: iterative deepening on the winning turn, ``L = grid*grid +
  1, grid*grid + 2, ...``: each level is a complete search, so its first win
  is the best there is, and each level finished proves "no win before L". It
  stops at the best win known: finishing that level proves it best. It gets
  as many nodes as the others together, and those pause while it searches
  just below their limit.

Nearly every deal has a win on turn 16 or 17 (score 24 or 23): the
least-cards search finds or rules those out with almost no slack, where
rule 2 below cuts hardest.

Pruning rules, and why none of them loses a win (or a better win):

1. *Moves that lose at once.* A placement that leaves more than
   ``max_face_down`` face-down top cards ends the game lost (RULES.md, end of
   turn), so no line through it wins. It is never tried.
2. *The turn bound.* A win needs ``grid * grid`` piles and a card opens at
   most one pile, so a position after ``t`` cards with ``p`` piles cannot win
   before turn ``t + (grid*grid - p)``; with a full grid and a face-down top it
   needs at least one more card. A position whose bound is not below ``L`` is
   cut: it holds no win before ``L``. The bound is raised by
   2b. *line parity* (`_stacks_needed`): a lower bound (0, 1 or 2) on the
   cards that must go on an occupied cell, from the parity of the checks to
   come in each row and column (see there for the argument). It is what
   makes searches with little slack cheap: with none, every card to come
   opens a pile, and most positions whose face-down cards can no longer all
   be turned up that way are cut many cards before the end.
3. *The transposition table.* When the search of a position finishes without
   finding a win before ``L``, that is a fact about the position: "no win
   before turn L from here" (``L`` may have dropped meanwhile in branch and
   bound; the fact holds for the value at the end). It is stored under the
   position's key, and a later visit of an equal position is cut when the
   stored ``L`` is at least the current one (``L`` never grows within a
   search, and each search has its own stamp). A search stopped by a limit
   stores nothing for the positions still open.
4. *Symmetry and translation.* The key is canonical: the same for every
   translation of the occupied cells and for all eight rotations and
   reflections of the square. Why two such positions have the same future:
   the first card is on the centre cell (3, 3) of the 7x7 board and every
   pile lies in a bounding box of at most 4 x 4 cells that contains it, so
   every cell any future placement can use lies within rows and columns
   0..6: the board's edges never forbid a move, only the bounding-box limit
   does, and that limit depends on the shape of the occupied cells (their
   box), not on where they are: after a translation it is the box that
   matters, not the board's edges. The rules themselves (orthogonal or king
   adjacency, the square grid limit, the row check and the column check,
   which are the same rule on the two axes and touch disjoint cells) are
   unchanged by any rotation or reflection of the square, which maps rows to
   rows or columns and columns to columns or rows. Pile heights are part of
   the key, and their sum is ``t``, so equal keys have the same cards still
   to come. The moves the solver records are always the real canonical cells
   of the line it played; only the table's key is canonical. Positions with
   no slack after turn ``TT_DEPTH`` skip the table (they are reached by one
   path only, up to symmetry, so it would never hit).

Greedy's game is played before any search, so a deal greedy wins is never
reported lost nor with a lower score than greedy's.

Limits
------
``node_limit`` counts placements tried by the searches (greedy's game is not
counted); with only a node limit a result is a pure function of (deck,
rules, options) and does not depend on the machine. The compiled search
returns after a budget of nodes, so the Python side calls it in slices and
checks the clock between slices: ``time_limit`` stops the solve at the first
slice boundary after the limit (slices are sized to about 20 ms from the
measured node rate). A time limit makes outcomes depend on the machine's
speed (and load).
"""

import math
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

import policies.greedy
from sim import kernels as K
from sim.game import rules_or_default, validate_deck
from sim.rules import Rules

OUTCOMES = ("won", "lost", "unresolved")

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
CTL_USE_TT = 6
CTL_USE_SYM = 7
CTL_STAMP = 8
CTL_FLOOR = 9  # no win is possible before this turn (grid * grid)
CTL_TT_HITS = 10
CTL_TT_STORES = 11
CTL_ORDER = 12  # move ordering: ORDER_GREEDY or ORDER_NEW_PILE
CTL_TT_DEPTH = 13  # positions after more cards than this skip the table
CTL_STOP_AT_WIN = 14  # stop at the first win (else: branch and bound)
CTL_SIZE = 15

ORDER_GREEDY = 0  # greedy's key: fewest face-down after, then a new pile, then the lowest cell
ORDER_NEW_PILE = 1  # a new pile first, then fewest face-down after, then the lowest cell

MAX_DEPTH = K.DECK_SIZE + 1
MAX_MOVES = K.CELLS
SCRATCH = MAX_MOVES + 18  # search_run's work space: move keys, union-find parents and parities
KEY_WORDS = 3
FRAME = 4  # the canonical frame: 4 x 4 cells, whatever the grid option
TT_DEPTH = 8
"""Positions with no slack (every card to come must open a pile) use the table only up to this turn:
deeper, such a position is reached by one path only (up to symmetry), so the table would never hit."""


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
    """Record "no win before `limit`" for this position (keeps the entry nearer the root)."""
    mask = tt_keys.shape[0] - 1
    i = _slot(key[0], key[1], key[2], mask)
    e = -1
    for s in range(2):
        x = i + s
        if (tt_info[x] >> 16) == stamp and tt_keys[x, 0] == key[0] and tt_keys[x, 1] == key[1] \
                and tt_keys[x, 2] == key[2]:
            e = x
            break
    if e < 0:
        if (tt_info[i] >> 16) != stamp:
            e = i
        elif (tt_info[i + 1] >> 16) != stamp:
            e = i + 1
        elif (tt_info[i] & 255) >= (tt_info[i + 1] & 255):
            e = i  # replace the entry farther from the root (cheaper to search again)
        else:
            e = i + 1
    tt_keys[e, 0] = key[0]
    tt_keys[e, 1] = key[1]
    tt_keys[e, 2] = key[2]
    tt_info[e] = (stamp << 16) | (limit << 8) | turn


# --- the search ----------------------------------------------------------------


@njit(cache=True, inline="always")
def _find(parent, parity, x):
    """Union-find root of x and x's parity relative to it (path halving not needed: 9 nodes)."""
    p = 0
    while parent[x] != x:
        p ^= parity[x]
        x = parent[x]
    return x, p


@njit(cache=True, inline="always")
def _consistent(state, r0, c0, closed, skip, parent, parity):
    """Do the line-parity equations of rule 2b have a solution?

    Nodes 0..3 are the box's rows, 4..7 its columns, 8 is "F = 0"; bit i of
    `closed` ties line i to node 8. The top card on `skip` (-1: none) has no
    equation (it gets covered).
    """
    zero = 8
    for i in range(9):
        parent[i] = zero if (closed >> i) & 1 else i
        parity[i] = 0
    down = state[K.FACE_DOWN]
    m = state[K.OCCUPIED]
    while m:
        cell = K.lowest_cell(m)
        m &= m - 1
        if cell == skip:
            continue
        a, pa = _find(parent, parity, K.ROW_OF[cell] - r0)
        b, pb = _find(parent, parity, 4 + K.COL_OF[cell] - c0)
        want = (down >> cell) & 1
        if a == b:
            if pa ^ pb != want:
                return False
        elif a == zero:
            parent[b] = a
            parity[b] = pa ^ pb ^ want
        else:
            parent[a] = b
            parity[a] = pa ^ pb ^ want
    return True


@njit(cache=True, inline="always")
def _stacks_needed(state, rules, most, parent, parity):
    """A lower bound (up to `most`, at most 2) on the cards that must go on occupied cells
    before a win (pruning rule 2b).

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
    solvable, at least two are needed. The check is a union-find with
    parities over the 4 + 4 lines of the box and a node for "F = 0".
    """
    if most <= 0 or most > 2 or state[K.FACE_DOWN_COUNT] == 0:
        return 0  # cannot decide anything, or F = 0 everywhere solves it
    grid = rules[K.RULE_GRID]
    r0 = state[K.MIN_ROW]
    r1 = state[K.MAX_ROW]
    c0 = state[K.MIN_COL]
    c1 = state[K.MAX_COL]
    rows_fixed = c1 - c0 + 1 >= grid  # the column span is final: rows can only fill their empty cells
    cols_fixed = r1 - r0 + 1 >= grid
    if not rows_fixed and not cols_fixed:
        return 0  # every line can still open a pile: every F is free
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
    if _consistent(state, r0, c0, closed, -1, parent, parity):
        return 0
    if most == 1:
        return 1
    m = occupied & ~state[K.FULL]
    while m:
        x = K.lowest_cell(m)
        m &= m - 1
        free = (1 << (K.ROW_OF[x] - r0)) | (1 << (4 + K.COL_OF[x] - c0))
        if _consistent(state, r0, c0, closed & ~free, x, parent, parity):
            return 1
    return 2


@njit(cache=True, inline="always")
def _need(state, rules, target, slack, parent, parity):
    """Cards still needed at the least before a win is possible (pruning rule 2).

    `slack` is how many cards beyond one per missing pile the caller can
    afford; the bound is only refined as far as that decides anything.
    """
    p = state[K.PILES]
    if p < target:
        return target - p + _stacks_needed(state, rules, slack + 1, parent, parity)
    return 1 if state[K.FACE_DOWN_COUNT] > 0 else 0


@njit(cache=True, inline="always")
def _gen_moves(state, rules, card, turn, limit, target, order, moves, d, keys):
    """Sorted moves for placing `card` at turn `turn` (rules 1 and 2 applied); returns how many."""
    legal = K.legal_cells(state, rules)
    max_fd = rules[K.RULE_MAX_FACE_DOWN]
    occupied = state[K.OCCUPIED]
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


@njit(cache=True)
def search_init(deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp,
                ctl, states, moves, nmoves, nexts, line):
    """Set up a search of `deck` for a win before turn `limit` (root: the empty table, turn 0)."""
    ctl[:] = 0
    grid = rules[K.RULE_GRID]
    ctl[CTL_LIMIT] = limit
    ctl[CTL_ORDER] = order
    ctl[CTL_STOP_AT_WIN] = stop_at_win
    ctl[CTL_TT_DEPTH] = TT_DEPTH
    ctl[CTL_USE_TT] = use_tt
    ctl[CTL_USE_SYM] = use_sym
    ctl[CTL_STAMP] = stamp
    ctl[CTL_FLOOR] = grid * grid
    K.reset(states[0])
    keys = np.empty(MAX_MOVES, np.int64)
    nmoves[0] = _gen_moves(states[0], rules, deck[0], 0, limit, grid * grid, order, moves, 0, keys)
    nexts[0] = 0
    ctl[CTL_DEPTH] = 0
    line[:] = -1
    if nmoves[0] == 0:
        ctl[CTL_STATUS] = DONE


@njit(cache=True)
def search_run(deck, rules, budget, ctl, states, moves, nmoves, nexts, line, best_line,
               node_keys, tabled, tt_keys, tt_info, scratch, codes):
    """Run the depth-first search until it ends or `ctl[CTL_NODES]` reaches `budget`.

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
    uf_parent = scratch[MAX_MOVES:MAX_MOVES + 9]
    uf_parity = scratch[MAX_MOVES + 9:MAX_MOVES + 18]
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
    while ctl[CTL_STATUS] == RUNNING:
        if nodes >= budget:
            break
        if nexts[d] >= nmoves[d]:
            # Finished: no win before `limit` from this position (rule 3). The limit
            # may have dropped while it was searched; the fact holds for the current one.
            if d > 0 and tabled[d]:
                _tt_store(tt_keys, tt_info, node_keys[d], stamp, limit, d)
                ctl[CTL_TT_STORES] += 1
            if d == 0:
                ctl[CTL_STATUS] = DONE
                break
            d -= 1
            continue
        cell = moves[d, nexts[d]]
        nexts[d] += 1
        child = states[d + 1]
        parent = states[d]
        for i in range(K.STATE_SIZE):
            child[i] = parent[i]
        card = deck[d]
        K.draw(child, card)
        K.place(child, rules, cell, card)
        nodes += 1
        line[d] = cell
        t = d + 1
        if child[K.PILES] == target and child[K.FACE_DOWN_COUNT] == 0:
            if t < limit:
                best_line[:] = -1
                best_line[:t] = line[:t]
                ctl[CTL_BEST] = t
                limit = t
                if stop_at_win or limit <= target:
                    ctl[CTL_STATUS] = STOPPED_AT_WIN
                    break
            continue
        slack = limit - 1 - t - (target - child[K.PILES])
        if t + _need(child, rules, target, slack, uf_parent, uf_parity) >= limit:
            continue  # rule 2 (rule 1 was applied when the move was generated)
        tt_here = use_tt and (t <= tt_depth or slack > 0)
        tabled[t] = tt_here
        if tt_here:
            position_key(child, use_sym, codes, node_keys[t])
            if _tt_probe(tt_keys, tt_info, node_keys[t], stamp, limit):
                ctl[CTL_TT_HITS] += 1
                continue  # rule 3
        nmoves[t] = _gen_moves(child, rules, deck[t], t, limit, target, order, moves, t, keys)
        nexts[t] = 0
        d = t
    ctl[CTL_DEPTH] = d
    ctl[CTL_NODES] = nodes
    ctl[CTL_LIMIT] = limit


@njit(cache=True)
def play_line(deck, moves, n, rules, state, fired):
    """Play the first `n` cells of `moves` through the engine's kernels, as the game loop does.

    Returns (end code, cards played); the final position stays in `state`
    and each turn's fired checks in `fired`. A cell that is not legal ends
    it with END_ILLEGAL_MOVE; a line that stops before the game ends returns -1.
    """
    K.reset(state)
    for t in range(n):
        card = deck[t]
        K.draw(state, card)
        cell = moves[t]
        if cell < 0 or cell >= K.CELLS or not (K.legal_cells(state, rules) >> cell) & 1:
            return K.END_ILLEGAL_MOVE, t
        fired[t] = K.place(state, rules, cell, card)
        end = K.end_of_turn(state, rules)
        if end >= 0:
            return end, t + 1
    return -1, n


@njit(cache=True)
def greedy_line(deck, rules, horizon, state, moves):
    """Greedy's game on `deck`, the first `horizon` cards only: its winning turn (0 if it does not win)."""
    K.reset(state)
    rng = np.zeros(1, np.uint64)  # greedy draws nothing
    params = np.empty(0, np.float64)  # and has no parameters
    for t in range(horizon):
        card = deck[t]
        K.draw(state, card)
        legal = K.legal_cells(state, rules)
        if legal == 0:
            return 0
        cell = policies.greedy.choose(state, rules, card, legal, rng, params)
        moves[t] = cell
        K.place(state, rules, cell, card)
        end = K.end_of_turn(state, rules)
        if end == K.END_WIN:
            return t + 1
        if end >= 0:
            return 0
    return 0


# --- Python API -------------------------------------------------------------------


@dataclass(frozen=True)
class SolveResult:
    """What the solver found for one deal."""

    outcome: str
    """won (a winning line found), lost (proven: no line wins) or unresolved (a limit was hit first)."""
    score: int | None
    """Cards left in the stock at the best win found; None unless won."""
    proven_best: bool
    """True when no line wins with a higher score."""
    nodes: int
    """Placements the search tried (both searches of the schedule)."""
    seconds: float
    """Wall time of the solve."""
    moves: tuple[int, ...] | None
    """The best winning line found: the canonical cell of each placement; None unless won."""
    score_bound: int | None = None
    """No line wins with a higher score than this (equal to `score` when proven best); None when lost."""


DEFAULT_TT_BITS = 21
"""The transposition table has 2**21 entries of 32 bytes (64 MiB), allocated once per process."""
ANY_WIN = ((3, ORDER_NEW_PILE), (6, ORDER_GREEDY), (None, ORDER_NEW_PILE), (None, ORDER_GREEDY))
"""The any-win searches: (cards allowed beyond grid*grid, None for the whole stock; move ordering).
A depth-first search for any win is heavy-tailed: on a few deals in 10,000 one (limit, ordering)
wanders for millions of nodes where another wins in a hundred, so several run side by side."""
FIRST_ROUND = 2_000
"""Nodes each any-win search gets in the first round of the schedule; rounds double."""
_SLICE_SECONDS = 0.02


class _Search:
    """One resumable depth-first search: its stack lives in these arrays."""

    def __init__(self):
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self.states = np.zeros((MAX_DEPTH + 1, K.STATE_SIZE), np.int64)
        self.moves = np.zeros((MAX_DEPTH + 1, MAX_MOVES), np.int64)
        self.nmoves = np.zeros(MAX_DEPTH + 1, np.int64)
        self.nexts = np.zeros(MAX_DEPTH + 1, np.int64)
        self.line = np.zeros(K.DECK_SIZE, np.int64)
        self.best_line = np.full(K.DECK_SIZE, -1, np.int64)
        self.node_keys = np.zeros((MAX_DEPTH + 1, KEY_WORDS), np.uint64)
        self.tabled = np.zeros(MAX_DEPTH + 1, np.bool_)
        self.scratch = np.zeros(SCRATCH, np.int64)
        self.codes = np.zeros(FRAME * FRAME + 1, np.uint64)
        self.nodes = 0  # over every search this object ran
        self.best = 0  # turn of its best win, 0 for none
        self.best_moves: tuple[int, ...] | None = None

    def start(self, deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp):
        search_init(deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp, self.ctl, self.states,
                    self.moves, self.nmoves, self.nexts, self.line)

    @property
    def status(self) -> int:
        return int(self.ctl[CTL_STATUS])

    @property
    def limit(self) -> int:
        return int(self.ctl[CTL_LIMIT])

    def lower_limit(self, limit: int) -> None:
        """Look only for wins before `limit` from now on (branch and bound: a better win is known)."""
        if limit < self.ctl[CTL_LIMIT]:
            self.ctl[CTL_LIMIT] = limit

    def run(self, deck, rules, nodes, deadline, tt_keys, tt_info, rate):
        """Search `nodes` more nodes at most (fewer if it ends or the deadline passes)."""
        ctl = self.ctl
        stop = int(ctl[CTL_NODES]) + nodes
        slice_nodes = 2_000
        while ctl[CTL_STATUS] == RUNNING and ctl[CTL_NODES] < stop:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            n0 = int(ctl[CTL_NODES])
            s0 = time.perf_counter()
            search_run(deck, rules, min(stop, n0 + slice_nodes), ctl, self.states, self.moves, self.nmoves,
                       self.nexts, self.line, self.best_line, self.node_keys, self.tabled, tt_keys, tt_info,
                       self.scratch, self.codes)
            done = int(ctl[CTL_NODES]) - n0
            self.nodes += done
            dt = time.perf_counter() - s0
            if dt > 0 and done > 1000:
                rate[0] = 0.5 * rate[0] + 0.5 * done / dt
            slice_nodes = max(2_000, min(int(rate[0] * _SLICE_SECONDS), 4 * slice_nodes))
        best = int(ctl[CTL_BEST])
        if best and (not self.best or best < self.best):
            self.best = best
            self.best_moves = tuple(int(c) for c in self.best_line[:best])


class Solver:
    """Reusable search buffers (the transposition table is allocated once per process).

    Entries are tagged with a per-search stamp, so a new search never needs
    to clear the table and never uses another search's entries. `solve`
    runs the schedule of the module docstring: greedy's game, then the
    any-win searches and the least-cards search in rounds of doubling node
    budgets. Rounds are counted in nodes, never in time, so with only a node
    limit the result does not depend on the machine.
    """

    def __init__(self, tt_bits: int = DEFAULT_TT_BITS):
        # Written now, so the pages are mapped here rather than in the first deal's search.
        self.tt_keys = np.empty((1 << tt_bits, KEY_WORDS), np.uint64)
        self.tt_keys.fill(0)
        self.tt_info = np.empty(1 << tt_bits, np.int64)
        self.tt_info.fill(0)  # stamp 0: no search uses it
        self.stamp = 0
        self.least = _Search()
        self.any_win = [_Search() for _ in ANY_WIN]
        self.rate = np.array([1e6])  # nodes per second, refined as it runs (slice sizes only)
        self.scratch_state = np.zeros(K.STATE_SIZE, np.int64)
        self.scratch_moves = np.zeros(K.DECK_SIZE, np.int64)

    def _stamp(self) -> int:
        self.stamp += 1
        return self.stamp

    def solve(self, cards: np.ndarray, rules: Rules, first_win: bool, node_limit: int | None,
              time_limit: float | None, horizon: int, use_tt: bool, use_sym: bool) -> SolveResult:
        t0 = time.perf_counter()
        deadline = None if time_limit is None else t0 + time_limit
        r = rules.as_array()
        deck = cards.astype(np.int64)
        cap = node_limit if node_limit is not None else np.iinfo(np.int64).max
        floor = rules.grid * rules.grid
        least = self.least
        searches = [least, *self.any_win]
        for x in searches:
            x.nodes, x.best, x.best_moves = 0, 0, None
        best, best_moves = 0, None  # the best win known: its turn (0: none) and line
        # Greedy's game first: when it wins, the searches only look for better wins.
        greedy = greedy_line(deck, r, horizon, self.scratch_state, self.scratch_moves)
        if greedy:
            best, best_moves = greedy, tuple(int(c) for c in self.scratch_moves[:greedy])
        proven_floor = floor  # no win comes before this turn
        lost = False

        def settled():
            return lost or (best and (first_win or best <= proven_floor))

        def used():
            return sum(x.nodes for x in searches)

        def collect(x):
            nonlocal best, best_moves
            if x.best and (not best or x.best < best):
                best, best_moves = x.best, x.best_moves

        # The least-cards search: levels floor+1, floor+2, ... up to the best win known.
        level = floor + 1
        least_on = level <= horizon + 1
        if least_on:
            least.start(deck, r, level, ORDER_NEW_PILE, True, use_tt, use_sym, self._stamp())
        # The any-win searches: one per (limit, ordering) of ANY_WIN, limits capped by the best win known.
        anys = []
        for x, (extra, order) in zip(self.any_win, ANY_WIN):
            limit = min(horizon + 1 if extra is None else floor + 1 + extra, best or horizon + 1)
            if limit > floor and (limit, order) not in [(y.limit, y.ctl[CTL_ORDER]) for y in anys]:
                x.start(deck, r, limit, order, first_win, use_tt, use_sym, self._stamp())
                anys.append(x)

        def any_finished(x):
            """An any-win search ended: no (better) win before its limit."""
            nonlocal proven_floor, lost
            collect(x)
            if x.status == DONE or not first_win:  # branch and bound's stop at the least turn is a proof too
                proven_floor = max(proven_floor, x.limit)
                if x.limit >= horizon + 1 and not best:
                    lost = True

        for x in anys:
            if x.status != RUNNING:
                any_finished(x)
        round_nodes = FIRST_ROUND
        while not settled():
            if used() >= cap or (deadline is not None and time.perf_counter() >= deadline):
                break
            active = [x for x in anys if x.status == RUNNING]
            if best and not first_win:
                for x in active:  # only better wins are wanted now (branch and bound)
                    x.lower_limit(best)
                # ... and wins just below the best are the least-cards search's work
                active = [x for x in active if x.limit > level + 1 or not least_on]
            # The any-win searches go first (a win often comes within a few nodes); the
            # least-cards search (None here) then gets as many nodes as all of them together.
            for x in active + [None]:
                if settled():
                    break
                spend = min(round_nodes * (max(1, len(active)) if x is None else 1), cap - used())
                if spend <= 0 or (deadline is not None and time.perf_counter() >= deadline):
                    break
                if x is not None:
                    x.run(deck, r, spend, deadline, self.tt_keys, self.tt_info, self.rate)
                    if x.status != RUNNING:
                        any_finished(x)
                    else:
                        collect(x)
                    continue
                while least_on and spend > 0:
                    n0 = least.nodes
                    least.run(deck, r, spend, deadline, self.tt_keys, self.tt_info, self.rate)
                    spend -= least.nodes - n0
                    if least.status == RUNNING:
                        break  # out of budget (or time)
                    if least.status == STOPPED_AT_WIN:
                        collect(least)
                        proven_floor = max(proven_floor, least.best)  # every level below was finished
                        least_on = False
                    else:
                        proven_floor = max(proven_floor, level)  # no win before turn `level`
                        if level >= (best or horizon + 1):
                            least_on = False
                            lost = lost or not best
                        else:
                            level += 1
                            least.start(deck, r, level, ORDER_NEW_PILE, True, use_tt, use_sym, self._stamp())
            if not least_on and not any(x.status == RUNNING for x in anys):
                break
            round_nodes *= 2
        seconds = time.perf_counter() - t0
        nodes = used()
        bound = K.DECK_SIZE - proven_floor  # no win comes before turn proven_floor
        if best:
            return SolveResult("won", K.DECK_SIZE - best, bool(best <= proven_floor), nodes, seconds, best_moves,
                               max(bound, K.DECK_SIZE - best))
        if lost:
            return SolveResult("lost", None, False, nodes, seconds, None, None)
        return SolveResult("unresolved", None, False, nodes, seconds, None, bound)


_SOLVER: Solver | None = None


def shared_solver() -> Solver:
    """One solver per process (its transposition table is allocated on first use, in the worker)."""
    global _SOLVER
    if _SOLVER is None:
        _SOLVER = Solver()
    return _SOLVER


def solve(deck, rules: Rules | None = None, first_win: bool = False, node_limit: int | None = None,
          time_limit: float | None = None, *, horizon: int = K.DECK_SIZE, transpositions: bool = True,
          symmetry: bool = True) -> SolveResult:
    """Search every line of play of `deck` (40 ranks in draw order) with the stock order known.

    - ``first_win``: stop at the first win (winnability only); otherwise go on
      for the best score.
    - ``node_limit``: stop after this many placements tried (reproducible).
    - ``time_limit``: stop after about this many seconds (machine-dependent).
    - ``horizon``: only the first `horizon` cards are dealt (a shortened stock,
      for tests); a win must come by then. Scores stay ``40 - cards played``.
    - ``transpositions``, ``symmetry``: switch the transposition table, or
      only its symmetry and translation canonicalization, off (for tests).
    """
    cards = validate_deck(deck)
    rules = rules_or_default(rules)
    if node_limit is not None and (isinstance(node_limit, bool) or int(node_limit) < 1):
        raise ValueError(f"node_limit must be a positive integer, not {node_limit!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and math.isfinite(time_limit)
                                       and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    if not 1 <= horizon <= K.DECK_SIZE:
        raise ValueError(f"horizon must be in 1..40, not {horizon!r}")
    return shared_solver().solve(cards, rules, bool(first_win), None if node_limit is None else int(node_limit),
                           time_limit, int(horizon), bool(transpositions), bool(symmetry))
