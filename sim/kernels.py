"""Compiled core of the engine: the board as an int64 array, bit masks of cells.

Everything here is a numba kernel or a module constant that kernels read.
The Python API (`sim.engine`) wraps these; nothing else should need to know
the layout below. `play_turns` is the one compiled turn loop: the game loop,
compiled plugins, rollout's playouts and the solver's replays all run it.

Cells are RULES.md's canonical index, ``cell = row * 7 + col`` on a 7x7
board, and a set of cells is an int64 bit mask with bit ``cell`` set.

The visible state of a game is one int64 array of ``STATE_SIZE`` entries:

==============  ==========================================================
offset          meaning
==============  ==========================================================
``TOP + cell``  rank of the pile's top card, 0 for an empty cell
``HEIGHT + c``  cards in the pile on cell ``c``
``STOCK + r``   cards of rank ``r`` (1..10) still in the stock
``OCCUPIED``    mask of cells holding a pile
``FACE_DOWN``   mask of piles whose top card is face down
``FULL``        mask of piles holding ``max_pile`` cards
``PILES``       number of piles
``FACE_DOWN_COUNT``  number of face-down top cards
``MIN_ROW`` ..  bounding box of the occupied cells
``TURN``        cards placed so far
``STOCK_LEFT``  cards still in the stock (the drawn card excluded)
``ROW_UPS + r`` face-up top ranks of row r, packed as counts: 4 bits per
                rank, at bit ``4 * rank`` (derived, kept for fast checks)
``COL_UPS + c`` the same for column c
``OPEN``        mask of the empty cells where a new pile may go (derived:
                the empty part of `legal_cells`, updated when a pile opens
                instead of rebuilt every turn)
``RANK_BIT + i``  mask of the cells whose top rank has bit ``i`` set,
                i = 0..3 (derived: the top ranks "bit-sliced", so that a few
                mask operations find all tops above or equal to a rank at
                once; see `ranks_above_and_equal`)
==============  ==========================================================

The stock's order is never in the state: a policy sees only what a player
sees (RULES.md allows counting cards, not peeking).

Speed notes: a greedy run spends nearly all its time in the per-turn kernels
below and in `policies.greedy`, so they avoid what is slow in compiled
loops: unpredictable branches (a mispredicted branch costs more than the
arithmetic it saves; see `opaque`), reference counting of arrays (see
`borrowed`) and allocating arrays.
"""

from sim._cache import drop_stale_cache

drop_stale_cache()  # before the first cached kernel is compiled or loaded

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402
from numba.core import types  # noqa: E402
from numba.core.extending import intrinsic  # noqa: E402
from numba.cpython.unsafe.numbers import trailing_zeros  # noqa: E402
from llvmlite import ir  # noqa: E402

# --- Board geometry -------------------------------------------------------
SIDE = 7
CELLS = SIDE * SIDE
CENTRE = 24
DECK_SIZE = 40
RANKS = 10
COPIES = 4
RANK_BITS = 4  # bits of a rank 1..10

# --- State layout ---------------------------------------------------------
TOP = 0
HEIGHT = TOP + CELLS
STOCK = HEIGHT + CELLS  # STOCK + rank, rank 1..10 (STOCK + 0 unused)
OCCUPIED = STOCK + RANKS + 1
FACE_DOWN = OCCUPIED + 1
FULL = FACE_DOWN + 1
PILES = FULL + 1
FACE_DOWN_COUNT = PILES + 1
MIN_ROW = FACE_DOWN_COUNT + 1
MAX_ROW = MIN_ROW + 1
MIN_COL = MAX_ROW + 1
MAX_COL = MIN_COL + 1
TURN = MAX_COL + 1
STOCK_LEFT = TURN + 1
ROW_UPS = STOCK_LEFT + 1
COL_UPS = ROW_UPS + 7
OPEN = COL_UPS + 7
RANK_BIT = OPEN + 1
STATE_SIZE = RANK_BIT + RANK_BITS

# --- Rules layout (int64 array built by sim.Rules.as_array) ---------------
RULE_KING = 0
RULE_MAX_PILE = 1
RULE_MAX_FACE_DOWN = 2
RULE_GRID = 3
RULES_SIZE = 4

# --- How a game ended -----------------------------------------------------
END_WIN = 0
END_TOO_MANY_FACE_DOWN = 1
END_STOCK_EMPTY = 2
END_NO_MOVE = 3
END_ILLEGAL_MOVE = 4  # a policy returned a cell that is not legal
GOES_ON = -1  # end_of_turn: the game is not over

# --- Checks that fired on a placement (bit flags) ---------------------------
FIRED_ROW = 1
FIRED_COL = 2


def _masks():
    rows = np.zeros(SIDE, np.int64)
    cols = np.zeros(SIDE, np.int64)
    for cell in range(CELLS):
        rows[cell // SIDE] |= np.int64(1) << cell
        cols[cell % SIDE] |= np.int64(1) << cell
    # BAND_ROWS[lo * SIDE + hi]: cells in rows lo..hi (empty when lo > hi).
    band_rows = np.zeros(SIDE * SIDE, np.int64)
    band_cols = np.zeros(SIDE * SIDE, np.int64)
    for lo in range(SIDE):
        for hi in range(lo, SIDE):
            for k in range(lo, hi + 1):
                band_rows[lo * SIDE + hi] |= rows[k]
                band_cols[lo * SIDE + hi] |= cols[k]
    return rows, cols, band_rows, band_cols


def _neighbour_masks():
    """(orthogonal, diagonal) neighbours of each cell, as masks indexed by cell."""
    orthogonal = np.zeros(CELLS, np.int64)
    diagonal = np.zeros(CELLS, np.int64)
    for cell in range(CELLS):
        row, col = divmod(cell, SIDE)
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                r, c = row + dr, col + dc
                if (dr or dc) and 0 <= r < SIDE and 0 <= c < SIDE:
                    if dr and dc:
                        diagonal[cell] |= np.int64(1) << (r * SIDE + c)
                    else:
                        orthogonal[cell] |= np.int64(1) << (r * SIDE + c)
    return orthogonal, diagonal


ROW_MASK, COL_MASK, BAND_ROWS, BAND_COLS = _masks()
ORTHOGONAL_OF, DIAGONAL_OF = _neighbour_masks()
BOARD = (np.int64(1) << CELLS) - 1

# Packed rank counts (ROW_UPS/COL_UPS): rank r counts in bits 4r..4r+3. A line
# holds at most 4 piles, so a count never overflows its 4 bits.
RANK_SHIFT = 4
NIBBLE = np.int64(0xF)


def _rank_masks():
    at_least = np.zeros(RANKS + 2, np.int64)  # nibbles of ranks >= k
    at_most = np.zeros(RANKS + 2, np.int64)  # nibbles of ranks <= k
    for k in range(RANKS + 2):
        for r in range(1, RANKS + 1):
            if r >= k:
                at_least[k] |= NIBBLE << (RANK_SHIFT * r)
            if r <= k:
                at_most[k] |= NIBBLE << (RANK_SHIFT * r)
    return at_least, at_most


RANKS_AT_LEAST, RANKS_AT_MOST = _rank_masks()
ROW_OF = np.arange(CELLS, dtype=np.int64) // SIDE
COL_OF = np.arange(CELLS, dtype=np.int64) % SIDE
# The other cells of each cell's row and column (the "others" of its checks).
ROW_OTHERS_OF = ROW_MASK[ROW_OF] & ~(np.int64(1) << np.arange(CELLS, dtype=np.int64))
COL_OTHERS_OF = COL_MASK[COL_OF] & ~(np.int64(1) << np.arange(CELLS, dtype=np.int64))

# --- Compiler helpers -------------------------------------------------------


@intrinsic
def popcount(typingctx, src):
    """Number of set bits (LLVM ctpop)."""
    if not isinstance(src, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return src(src), codegen


@intrinsic
def opaque(typingctx, src):
    """`src` unchanged, through an empty inline-assembly "value barrier".

    Keeps hot loops free of data-dependent branches: LLVM cannot see that
    the value is a 0/-1 mask, so it keeps `mask & x` as one instruction
    instead of turning it into a select, which its x86 back end may compile
    into an unpredictable branch.
    """
    if not isinstance(src, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ty = args[0].type
        return builder.asm(ir.FunctionType(ty, [ty]), "", "=r,0", [args[0]], side_effect=False)

    return src(src), codegen


@intrinsic
def borrowed(typingctx, arr):
    """A view of `arr` that is not reference counted.

    numba counts references to an array with atomic increments and
    decrements each time the array is bound to a variable, including the
    arguments of inlined functions; in the game loop those cost more than
    the game itself. The view has no owner (NULL meminfo), so its counting
    compiles to nothing. Use it only while `arr` is certainly alive, e.g.
    on a function's own argument, within that call.
    """
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(signature.args[0])(context, builder, value=args[0])
        view.meminfo = context.get_constant_null(types.MemInfoPointer(types.voidptr))
        view.parent = context.get_constant_null(types.pyobject)
        return view._getvalue()

    return arr(arr), codegen


# --- Bit helpers ----------------------------------------------------------


@njit(cache=True, inline="always")
def lowest_cell(mask):
    """Canonical index of the lowest set bit of a non-empty mask."""
    return trailing_zeros(mask)


@njit(cache=True, inline="always")
def nth_cell(mask, n):
    """The n-th (0-based) cell of a mask in ascending order."""
    for _ in range(n):
        mask &= mask - 1
    return trailing_zeros(mask)


# --- Random streams (SplitMix64, counter-based) ----------------------------
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)
STREAM_DEAL = np.uint64(1)
STREAM_POLICY = np.uint64(2)
DEAL_ALGORITHM = "splitmix64-fisher-yates-v1"


@njit(cache=True, inline="always")
def mix64(z):
    """SplitMix64's finaliser: scrambles a 64-bit counter into a random-looking output."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def stream_start(seed, game, stream_id):
    """Start of the stream for one (seed, game) pair; streams never share state."""
    key = mix64(np.uint64(seed) + stream_id * GOLDEN)
    return mix64(key ^ np.uint64(game))


@njit(cache=True, inline="always")
def next_u64(rng):
    """Next output of a SplitMix64 stream whose state lives in rng[0]."""
    rng[0] = rng[0] + GOLDEN
    return mix64(rng[0])


@njit(cache=True, inline="always")
def next_below(rng, n):
    """Uniform integer in [0, n); the modulo bias is below 2**-58 for n <= 64."""
    return np.int64(next_u64(rng) % np.uint64(n))


@njit(cache=True, inline="always")
def deal_into(seed, game, deck):
    """Fisher-Yates shuffle of the sorted 40-card deck, keyed by (seed, game).

    The draws are `next_below`'s, with the stream kept in a local variable
    rather than an rng array (which would be allocated for every deal).
    """
    for i in range(DECK_SIZE):
        deck[i] = i // COPIES + 1
    stream = stream_start(seed, game, STREAM_DEAL)
    for i in range(DECK_SIZE - 1, 0, -1):
        stream += GOLDEN
        j = mix64(stream) % np.uint64(i + 1)
        t = deck[i]
        deck[i] = deck[j]
        deck[j] = t


@njit(cache=True)
def deal_batch(seed, first_game, decks):
    """decks[i] = the deck of game first_game + i of `seed`."""
    decks = borrowed(decks)  # no reference counting per row (see borrowed)
    for i in range(decks.shape[0]):
        deal_into(seed, first_game + i, decks[i])


# --- Board kernels ---------------------------------------------------------


@njit(cache=True, inline="always")
def reset(state):
    """Empty board, full stock."""
    for k in range(STATE_SIZE):
        state[k] = 0
    for r in range(1, RANKS + 1):
        state[STOCK + r] = COPIES
    state[MIN_ROW] = SIDE
    state[MAX_ROW] = -1
    state[MIN_COL] = SIDE
    state[MAX_COL] = -1
    state[STOCK_LEFT] = DECK_SIZE
    state[OPEN] = np.int64(1) << CENTRE


@njit(cache=True, inline="always")
def draw(state, rank):
    """Take a card of `rank` from the stock (its order is not tracked here)."""
    state[STOCK + rank] -= 1
    state[STOCK_LEFT] -= 1


@njit(cache=True, inline="always")
def grid_band(state, rules):
    """Cells a new pile may take without the grid outgrowing `grid` rows or columns."""
    grid = rules[RULE_GRID]
    row_lo = max(0, state[MAX_ROW] - grid + 1)
    row_hi = min(SIDE - 1, state[MIN_ROW] + grid - 1)
    col_lo = max(0, state[MAX_COL] - grid + 1)
    col_hi = min(SIDE - 1, state[MIN_COL] + grid - 1)
    return BAND_ROWS[row_lo * SIDE + row_hi] & BAND_COLS[col_lo * SIDE + col_hi]


@njit(cache=True, inline="always")
def neighbours(cell, rules):
    """Cells adjacent to `cell` under the rules' adjacency."""
    return ORTHOGONAL_OF[cell] | (DIAGONAL_OF[cell] & -rules[RULE_KING])


@njit(cache=True, inline="always")
def open_cells(state, rules):
    """Empty cells where a new pile may go: next to a pile, inside the grid limit.

    Rebuilt from OCCUPIED and the bounding box (the centre on an empty
    table); `place` keeps state[OPEN] up to date without rebuilding it.
    """
    occupied = state[OCCUPIED]
    if occupied == 0:
        return np.int64(1) << CENTRE
    near = np.int64(0)
    m = occupied
    while m:
        near |= neighbours(trailing_zeros(m), rules)
        m &= m - 1
    return near & ~occupied & grid_band(state, rules)


@njit(cache=True, inline="always")
def legal_cells(state, rules):
    """Mask of cells where the next card may go."""
    return (state[OCCUPIED] & ~state[FULL]) | state[OPEN]


@njit(cache=True, inline="always")
def placement_flips(state, cell, rank):
    """(fired flags, mask of cells turned over) if `rank` went on `cell`.

    The others of a line are its occupied cells except `cell` (whose pile the
    new card covers); only their face-up tops are compared. The row check
    and the column check look at disjoint cells and never turn the placed
    card, so evaluating both on the state before the placement equals doing
    the row check first, then the column check.
    """
    row = ROW_OF[cell]
    col = COL_OF[cell]
    face_up = state[OCCUPIED] & ~state[FACE_DOWN]
    # The covered top card, when face up, leaves its lines' counts.
    own = ((face_up >> cell) & 1) << (RANK_SHIFT * state[TOP + cell])
    row_ups = state[ROW_UPS + row] - own
    col_ups = state[COL_UPS + col] - own
    above = RANKS_AT_LEAST[rank]
    below = RANKS_AT_MOST[rank]
    row_fires = np.int64(((row_ups & above) == 0) | ((row_ups & below) == 0))
    col_fires = np.int64(((col_ups & above) == 0) | ((col_ups & below) == 0))
    others = (ROW_OTHERS_OF[cell] & opaque(-row_fires)) | (COL_OTHERS_OF[cell] & opaque(-col_fires))
    turn = state[OCCUPIED] & others
    return FIRED_ROW * row_fires | FIRED_COL * col_fires, turn


@njit(cache=True, inline="always")
def face_down_after(state, cell, rank):
    """Face-down top cards after placing, without changing the state."""
    _, turn = placement_flips(state, cell, rank)
    bit = np.int64(1) << cell
    return popcount((state[FACE_DOWN] & ~bit) ^ turn)


@njit(cache=True, inline="always")
def ranks_above_and_equal(state, rank):
    """(mask of the tops ranked above `rank`, mask of the tops equal to it).

    A bit-sliced comparison over the RANK_BIT planes, most significant bit
    first: a top is above once it has a 1 where `rank` has a 0 while all
    higher bits were equal. Empty cells (rank 0) are in neither mask.
    """
    above = np.int64(0)
    same = np.int64(-1)
    for i in range(RANK_BITS - 1, -1, -1):
        plane = state[RANK_BIT + i]
        ones = -((np.int64(rank) >> i) & 1)  # all ones when rank has bit i
        above |= same & plane & ~ones
        same &= ~(plane ^ ones)
    return above, same


@njit(cache=True, inline="always")
def line_turns(others, higher, lower):
    """The cells of `others` that a check turns over: all of them when it fires, else none.

    `others` are the cells of the placed card's line except its own cell;
    `higher` and `lower` the face-up tops ranked >= and <= the placed card.
    The check fires unless the others hold one of each. Branch-free.
    """
    # For a mask x < 2**63, -x is negative exactly when x is not empty.
    blocked = ((-(higher & others)) & (-(lower & others))) >> 63
    return others & ~opaque(blocked)


@njit(cache=True, inline="always")
def _nibble(rank):
    """A rank's count unit in the packed ROW_UPS/COL_UPS counts."""
    return np.int64(1) << (RANK_SHIFT * rank)


@njit(cache=True, inline="always")
def _count_up(state, cell, delta):
    """Add (delta=+1) or remove (-1) the top of `cell` in its lines' packed counts."""
    v = delta * _nibble(state[TOP + cell])
    state[ROW_UPS + ROW_OF[cell]] += v
    state[COL_UPS + COL_OF[cell]] += v


@njit(cache=True, inline="always")
def place(state, rules, cell, rank):
    """Put `rank` face up on `cell` and run the row and column checks.

    Returns the fired flags (FIRED_ROW | FIRED_COL). The cell must be legal.
    """
    fired, turn = placement_flips(state, cell, rank)
    bit = np.int64(1) << cell
    occupied = state[OCCUPIED]
    face_down = state[FACE_DOWN]
    # A new pile: done without a branch (whether a card opens a pile is
    # unpredictable), as each update leaves the state as it is when the
    # cell already holds a pile (the box already holds it; so does OPEN's
    # frontier). The band only shrinks as the grid grows, so the cells open
    # before stay open unless the new band excludes them.
    row = ROW_OF[cell]
    col = COL_OF[cell]
    state[OCCUPIED] = occupied | bit
    state[PILES] += 1 - ((occupied >> cell) & 1)
    state[MIN_ROW] = min(state[MIN_ROW], row)
    state[MAX_ROW] = max(state[MAX_ROW], row)
    state[MIN_COL] = min(state[MIN_COL], col)
    state[MAX_COL] = max(state[MAX_COL], col)
    state[OPEN] = (state[OPEN] | neighbours(cell, rules)) & ~(occupied | bit) & grid_band(state, rules)
    # Line counts: the new top replaces the covered one (if that was face
    # up), and each turned top joins (was face down) or leaves its lines.
    was_up = ((occupied & ~face_down) >> cell) & 1
    delta = _nibble(rank) - was_up * _nibble(state[TOP + cell])
    state[ROW_UPS + row] += delta
    state[COL_UPS + col] += delta
    m = turn
    while m:
        t = trailing_zeros(m)
        m &= m - 1
        _count_up(state, t, 2 * ((face_down >> t) & 1) - 1)
    state[TOP + cell] = rank
    for i in range(RANK_BITS):
        state[RANK_BIT + i] = (state[RANK_BIT + i] & ~bit) | (((np.int64(rank) >> i) & 1) << cell)
    height = state[HEIGHT + cell] + 1
    state[HEIGHT + cell] = height
    state[FULL] |= bit & -np.int64(height >= rules[RULE_MAX_PILE])
    face_down = (face_down & ~bit) ^ turn
    state[FACE_DOWN] = face_down
    state[FACE_DOWN_COUNT] = popcount(face_down)
    state[TURN] += 1
    return fired


@njit(cache=True, inline="always")
def recount(state, rules):
    """Rebuild every derived entry from TOP, HEIGHT, OCCUPIED and FACE_DOWN.

    For positions set up by hand (sim.Board.put); the game loop keeps them
    up to date incrementally.
    """
    occupied = state[OCCUPIED]
    fd = state[FACE_DOWN] & occupied
    state[FACE_DOWN] = fd
    state[FACE_DOWN_COUNT] = popcount(fd)
    state[PILES] = popcount(occupied)
    state[MIN_ROW] = SIDE
    state[MAX_ROW] = -1
    state[MIN_COL] = SIDE
    state[MAX_COL] = -1
    state[FULL] = 0
    for k in range(SIDE):
        state[ROW_UPS + k] = 0
        state[COL_UPS + k] = 0
    for i in range(RANK_BITS):
        state[RANK_BIT + i] = 0
    m = occupied
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        bit = np.int64(1) << cell
        row = cell // SIDE
        col = cell % SIDE
        state[MIN_ROW] = min(state[MIN_ROW], row)
        state[MAX_ROW] = max(state[MAX_ROW], row)
        state[MIN_COL] = min(state[MIN_COL], col)
        state[MAX_COL] = max(state[MAX_COL], col)
        if state[HEIGHT + cell] >= rules[RULE_MAX_PILE]:
            state[FULL] |= bit
        if not fd & bit:
            _count_up(state, cell, 1)
        for i in range(RANK_BITS):
            state[RANK_BIT + i] |= ((state[TOP + cell] >> i) & 1) << cell
    state[OPEN] = open_cells(state, rules)


@njit(cache=True, inline="always")
def end_of_turn(state, rules):
    """GOES_ON (-1) while the game goes on, else the END_* code (RULES.md's order)."""
    if state[FACE_DOWN_COUNT] > rules[RULE_MAX_FACE_DOWN]:
        return END_TOO_MANY_FACE_DOWN
    grid = rules[RULE_GRID]
    if state[PILES] == grid * grid and state[FACE_DOWN_COUNT] == 0:
        return END_WIN
    if state[STOCK_LEFT] == 0:
        return END_STOCK_EMPTY
    return GOES_ON


@njit(cache=True, inline="always")
def play_turns(choose, cards, state, rules, params, rng, moves, fired):
    """The turn loop: play `cards` in order from `state`, each where `choose` says.

    Every compiled game runs through here (the game loop, compiled plugins,
    rollout's playouts, the solver's replays), so a rule is applied the same
    way everywhere. Each turn draws the next card, asks `choose` (the policy
    contract of `policies`) for a cell among the legal ones, places it with
    its checks and looks for the end of the game. Turn t's cell goes in
    moves[t] and its fired checks in fired[t] (t counts the cards of
    `cards`).

    Returns (end code, cards played): END_ILLEGAL_MOVE when `choose` returns
    a cell that is not legal (moves[t] holds it), END_NO_MOVE when no cell is
    legal, GOES_ON when `cards` run out before the game ends (a partial line).
    """
    for t in range(cards.shape[0]):
        card = cards[t]
        draw(state, card)
        legal = legal_cells(state, rules)
        if legal == 0:
            return END_NO_MOVE, t
        cell = choose(state, rules, card, legal, rng, params)
        moves[t] = cell
        if cell < 0 or cell >= CELLS or not (legal >> cell) & 1:
            return END_ILLEGAL_MOVE, t
        fired[t] = place(state, rules, cell, card)
        end = end_of_turn(state, rules)
        if end != GOES_ON:
            return end, t + 1
    return GOES_ON, cards.shape[0]
