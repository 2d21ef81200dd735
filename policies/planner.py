"""planner: expectimax one card ahead with a learned value of positions, playing for the score.

The goal is the mean score per deal, a lost deal counting 0 (optionally
less, see ``loss``). For each legal cell: place the card, then for each
rank still in the stock (weighted by how many cards of it remain) take the
best follow-up cell by its value; play the cell with the highest
expectation. Values are on the score's own scale: a win is worth its score
(the cards left in the stock), a loss the loss value, and any other
position V(position), a learned estimate of the final outcome under this
policy's own play.

V is linear in features of the position after a placement (an "abstracted
state", as in Neller et al.'s Poker Squares players):

- a bucket ``(piles still to open, face-down tops)`` (16 x 5 = 80 buckets),
  each with its own intercept, its own slope in the cards left in the
  stock and its own weights of three shares of the stock's cards, worked
  out from the stock's composition (`leaf_terms`):

  - ``safe``: the cards that could open a new pile without adding a
    face-down top (on some empty cell open to a new pile, the checks the
    card would fire turn no more face-up tops down than face-down tops up);
  - ``mend``: in the endgame (at most MEND_TO_OPEN piles to open) with a
    face-down top, the cards that some legal cell takes leaving fewer
    face-down tops;
  - ``win_next``: likewise, the cards that would win at once.

  A card that cannot open a pile goes on a pile and costs a point of the
  score; most of those points go on turning the last face-down tops face
  up once the grid is full, so these shares are where the score is won or
  lost;
- heuristic's full-pile and per-line terms (``full_up``, ``full_down``,
  ``risk``, ``spread``, ``closed``), as `policies.heuristic.evaluate`
  computes them, weighted per group of (face-down tops, piles to open:
  0, 1..3, 4..7, 8+) (20 groups).

The weights are learned by simulation (`sim train`, see README) and shipped
in ``policies/data/planner.json``. Only the stock's composition is used,
never its order.

Where the choice is close, it looks one card deeper: the ``roots`` best
cells by one card's expectation, if the second comes within ``margin`` of
the best, are compared by `follow_up_value`, where each rank's ``follow``
best follow-ups by V are valued by the expectation over the card after
them. By default this runs once at most 10 piles are still to open before
the card (``endgame=10``); ``endgame=16`` runs it at every turn, 0 once the
grid is full, and ``-1`` turns it off. Looking deeper pays well before the
endgame (README, "planner's deeper search"): the V of one card ahead is
too coarse to rank close cells anywhere; the first few turns are left out
for speed, as they have the most cells to try and gain the least.

params: [loss value, then per bucket (80 each): intercepts, slopes, safe, mend and win_next
weights, then the line weights (5) per group (20); then endgame, roots, follow, margin]
"""

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from policies.heuristic import nibble, stock_prefix, ups_after
from policies.params import Param, integer, json_float, number, read_json, short_repr
from sim.kernels import (
    BAND_COLS, BAND_ROWS, CELLS, COL_MASK, COL_OF, COL_UPS, FACE_DOWN, FULL, HEIGHT, MAX_COL, MAX_ROW, MIN_COL,
    MIN_ROW, OCCUPIED, OPEN, PILES, RANK_SHIFT, RANKS, ROW_MASK, ROW_OF, ROW_UPS, RULE_GRID, RULE_MAX_FACE_DOWN,
    RULE_MAX_PILE, SIDE, STATE_SIZE, STOCK, STOCK_LEFT, TOP, draw, legal_cells, neighbours, place, placement_flips,
    borrowed, popcount, trailing_zeros,
)

FORMAT = "foursquare-planner-values-v2"
"""Format tag of the values file; a file with another tag is refused."""
TO_OPEN_BUCKETS = 16
"""Piles still to open after a placement: 0..15 (more is counted as 15)."""
FACE_DOWN_BUCKETS = 5
"""Face-down tops after a placement: 0..4 (more is counted as 4)."""
N_BUCKETS = TO_OPEN_BUCKETS * FACE_DOWN_BUCKETS
BUCKET_FEATURES = ("bias", "stock_left", "safe", "mend", "win_next")
"""The terms weighted per bucket."""
LINE_FEATURES = ("full_up", "full_down", "risk", "spread", "closed")
"""heuristic's terms that V weighs per group."""
OPEN_GROUPS = 4
"""Groups of piles still to open for the line terms' weights: 0, 1..3, 4..7, 8 or more."""
N_GROUPS = FACE_DOWN_BUCKETS * OPEN_GROUPS
FEATURE_SET = (
    [f"{f}[to_open={t},face_down={d}]" for f in BUCKET_FEATURES
     for t in range(TO_OPEN_BUCKETS) for d in range(FACE_DOWN_BUCKETS)]
    + [f"{f}[face_down={d},open_group={g}]" for d in range(FACE_DOWN_BUCKETS) for g in range(OPEN_GROUPS)
       for f in LINE_FEATURES]
)
"""Name of each learned weight, in file order."""
N_WEIGHTS = len(FEATURE_SET)
N_LINE = len(LINE_FEATURES)

P_LOSS = 0
P_BIAS = 1
P_SLOPE = P_BIAS + N_BUCKETS
P_SAFE = P_SLOPE + N_BUCKETS
P_MEND = P_SAFE + N_BUCKETS
P_WIN_NEXT = P_MEND + N_BUCKETS
P_LINE = P_WIN_NEXT + N_BUCKETS
N_VALUES = P_LINE + N_GROUPS * N_LINE
"""Length of the values' part of params (what a values file gives: the loss value and the weights)."""
P_ENDGAME = N_VALUES
P_ROOTS = P_ENDGAME + 1
P_FOLLOW = P_ROOTS + 1
P_MARGIN = P_FOLLOW + 1
N_PARAMS = P_MARGIN + 1
N_TERMS = len(BUCKET_FEATURES) + N_LINE
"""What `sparse_features` writes: a bucket's terms, then the line terms."""

LINES = 2 * SIDE
"""Rows 0..6, then columns 0..6 as lines 7..13 (in the `lines` scratch array)."""
UPS = 2 * LINES
SCRATCH = 3 * LINES
"""Length of the `lines` scratch array: each line's face-up span, then its flip, then its packed face-up ranks."""
ALL_RANKS = ((1 << (RANKS + 1)) - 1) & ~1
"""Bits 1..10: every rank."""

MEND_TO_OPEN = 1
"""`mend` and `win_next` are worked out only with at most this many piles to open (0 otherwise): the
endgame, where fixing face-down tops costs the score its cards."""

ONGOING = 0
WON = 1
LOST = -1

DATA_FILE = "planner.json"
"""The shipped values, in the package's data directory."""


def bucket(to_open, face_down):
    """Index of the (piles to open, face-down tops) bucket (plain Python, for training and tests)."""
    return min(max(to_open, 0), TO_OPEN_BUCKETS - 1) * FACE_DOWN_BUCKETS + min(face_down, FACE_DOWN_BUCKETS - 1)


@njit(cache=True, inline="always")
def group(to_open, face_down):
    """Index of the (face-down tops, group of piles to open) whose line weights apply."""
    g = 0 if to_open <= 0 else (1 if to_open <= 3 else (2 if to_open <= 7 else 3))
    return min(face_down, FACE_DOWN_BUCKETS - 1) * OPEN_GROUPS + g


def weights_to_params(weights, loss: float) -> list[float]:
    """The values' part of the params array (N_VALUES) from learned `weights` (FEATURE_SET order) and the loss
    value."""
    return [float(loss)] + [float(x) for x in weights]


def validate_values(data, where: str) -> list[float]:
    """The params array of a values file's contents; ValueError saying what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"values file {where}: expected a JSON object, not {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ValueError(f"values file {where}: format {data.get('format')!r} is not {FORMAT!r}")
    if data.get("features") != FEATURE_SET:
        raise ValueError(f"values file {where}: its feature set is not this planner's ({N_WEIGHTS} features)")
    weights = data.get("weights")
    if not isinstance(weights, list) or len(weights) != N_WEIGHTS:
        raise ValueError(f"values file {where}: need {N_WEIGHTS} weights")
    loss = data.get("loss", 0.0)
    for v in weights + [loss]:
        if not _finite(v):
            raise ValueError(f"values file {where}: {short_repr(v)} is not a finite number")
    if loss > 0:  # worth more than some positions: planner would lose deals on purpose
        raise ValueError(f"values file {where}: loss {loss!r} is above 0 (a lost deal is worth at most its score "
                         f"of 0, as in sim train --loss)")
    return weights_to_params(weights, loss)


def _finite(v) -> bool:
    """Is `v` (a values file's entry) a number, and a finite one?"""
    try:
        return math.isfinite(json_float(v))
    except (TypeError, OverflowError):
        return False


def read_values(path: str | Path | None = None) -> dict:
    """The contents of a values file (the shipped one when `path` is None); ValueError when unreadable."""
    if path is not None:
        return read_json(path, f"values file {path}")
    try:
        return json.loads(resources.files("policies").joinpath("data", DATA_FILE).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"values file {DATA_FILE}: not readable JSON ({e})") from None


def rules_warning(args: dict[str, str], rules: dict) -> str | None:
    """The rule options that differ from those the values were learned under (their file's settings), as a
    warning; None when none does or the file does not say.

    Values learned under other rules still play, but they value positions of another game: under grid=3 the
    shipped values made 27.52 per deal on 200 deals where lookahead made 28.25.
    """
    text = args.get("values", "default")
    try:
        data = read_values(None if text == "default" else text)
    except ValueError:
        return None  # parse_values says what is wrong with it
    settings = data.get("settings") if isinstance(data, dict) else None
    learned = settings.get("rules") if isinstance(settings, dict) else None
    if not isinstance(learned, dict):
        return None
    differ = [k for k in rules if k in learned and learned[k] != rules[k]]
    if not differ:
        return None
    source = "the shipped values" if text == "default" else f"the values in {text}"
    was = ", ".join(f"{k}={learned[k]}" for k in differ)
    now = ", ".join(f"{k}={rules[k]}" for k in differ)
    rule_args = " ".join(f"--rule {k}={rules[k]}" for k in differ)
    return (f"planner: {source} were learned under {was}, and these games play {now}: planner may play far from "
            f"its best; `sim train {rule_args} --out FILE` learns values for these rules (then --policy-arg "
            f"values=FILE)")


def shipped_values(text: str) -> list[str]:
    """The shipped values file, when `text` ('default') stands for it: the games read it."""
    return [str(resources.files("policies").joinpath("data", DATA_FILE))] if text == "default" else []


def parse_values(text: str) -> list[float]:
    """Params from 'default' (the shipped values) or a values file written by `sim train`."""
    if text == "default":
        return validate_values(read_values(), DATA_FILE)
    if not Path(text).is_file():
        raise ValueError(f"policy 'planner': values {text!r} is neither 'default' nor a file")
    return validate_values(read_values(text), text)


def search_params(args: dict[str, str] | None = None) -> list[float]:
    """The search's part of the params array (what follows the values): `args` as --policy-arg gives them,
    the defaults for the others."""
    args = args or {}
    return [x for p in PARAMS[1:] for x in p.parse(args.get(p.name, p.default))]


DESCRIPTION = ("Expectimax one card ahead (two for close choices) with learned values of positions; "
               "plays for the mean score.")
PARAMS = (
    Param("values", "default", "learned values: 'default' (shipped) or a file written by `sim train`",
          parse_values, reads=shipped_values),
    Param("endgame", "10", "search one card deeper when at most this many piles are still to open before the "
          "card (16: every turn; 0: once the grid is full; -1: never)", integer("planner", "endgame", -1, 16)),
    Param("roots", "3", "how many of the best cells by one card's expectation the deeper search compares",
          integer("planner", "roots", 1, 64)),
    Param("follow", "1", "how many follow-up cells per rank (the best by V) the deeper search values",
          integer("planner", "follow", 1, 64)),
    Param("margin", "1.0", "the deeper search runs only when the second best cell is within this of the best",
          number("planner", "margin", 0.0)),
)


@njit(cache=True, inline="always")
def span(ups):
    """Mask of the ranks (bit r) that fall within a line's face-up ranks, so that its check does not fire.

    0 when no top of the line is face up (the check always fires).
    """
    if ups == 0:
        return np.int64(0)
    lo = trailing_zeros(ups) // RANK_SHIFT
    hi = (63 - leading_zeros(ups)) // RANK_SHIFT
    return (np.int64(2) << hi) - (np.int64(1) << lo)


@njit(cache=True, inline="always")
def line_info(ups, occupied, face_down, prefix):
    """(risk, spread, closed) of one line as `policies.heuristic.line_terms` computes them, then its
    span (see `span`) and flip (the change in face-down tops if its check fires)."""
    n_occ = popcount(occupied)
    flip = n_occ - 2 * popcount(face_down)
    total = prefix[RANKS]
    if n_occ == 0 or total == 0:
        return 0.0, 0.0, 0.0, span(ups), flip
    if ups == 0:
        return float(flip), 0.0, 0.0, np.int64(0), flip
    lo = trailing_zeros(ups) // RANK_SHIFT
    hi = (63 - leading_zeros(ups)) // RANK_SHIFT
    outside = prefix[lo - 1] + total - prefix[hi]
    closed = 1.0 if outside == 0 else 0.0
    return flip * outside / total, float(hi - lo), closed, (np.int64(2) << hi) - (np.int64(1) << lo), flip


@njit(cache=True, inline="always")
def safe_ranks(open_cells, lines):
    """Mask of the ranks (bit r) that some cell of `open_cells` takes without adding a face-down top.

    `lines` holds each line's span and flip (face-down change if its check
    fires) after the placement; a line without piles has span 0 and flip 0.
    """
    ok = np.int64(0)
    m = open_cells
    while m:
        c = trailing_zeros(m)
        m &= m - 1
        ir = lines[ROW_OF[c]]
        ic = lines[SIDE + COL_OF[c]]
        fr = lines[LINES + ROW_OF[c]]
        fc = lines[LINES + SIDE + COL_OF[c]]
        ok |= (ir & ic) | (ic & ~ir & -np.int64(fr <= 0)) | (ir & ~ic & -np.int64(fc <= 0)) \
            | (~(ir | ic) & -np.int64(fr + fc <= 0))
    return ok & ALL_RANKS


@njit(cache=True, inline="always")
def mend_ranks(state, cell, card, cells, occupied, face_down, to_open, lines, stock):
    """(ranks that some cell of `cells` takes leaving fewer face-down tops, ranks that win at once there).

    The position is the one after placing `card` on `cell`: `occupied` and
    `face_down` its masks, `to_open` its piles still to open and `lines`
    its lines' flips and packed face-up ranks. Masks have bit r for rank r.
    Only the ranks of `stock` (the ranks still in the stock) are sure to be
    complete: the cells stop being tried once no other cell can add one.
    """
    n_fd = popcount(face_down)
    mend = np.int64(0)
    win = np.int64(0)
    can_win = occupied if to_open == 0 else (~occupied if to_open == 1 else np.int64(0))
    m = cells
    while m:
        if (mend & stock) == stock and ((win & stock) == stock or (m & can_win) == 0):
            break
        c = trailing_zeros(m)
        m &= m - 1
        cbit = np.int64(1) << c
        top = card if c == cell else state[TOP + c]
        own = nibble(top) & -np.int64((occupied & ~face_down & cbit) != 0)
        ir = span(lines[UPS + ROW_OF[c]] - own)
        ic = span(lines[UPS + SIDE + COL_OF[c]] - own)
        # The flips of its lines' others: the lines' flips without this cell's own pile.
        mine = ((occupied >> c) & 1) * (1 - 2 * ((face_down >> c) & 1))
        fr = lines[LINES + ROW_OF[c]] - mine
        fc = lines[LINES + SIDE + COL_OF[c]] - mine
        base = n_fd - ((face_down >> c) & 1)  # a face-down pile covered by a face-up card
        quiet = ir & ic
        row_only = ic & ~ir
        col_only = ir & ~ic
        both = ~(ir | ic)
        mend |= ((quiet & -np.int64(base < n_fd)) | (row_only & -np.int64(base + fr < n_fd))
                 | (col_only & -np.int64(base + fc < n_fd)) | (both & -np.int64(base + fr + fc < n_fd)))
        if to_open == 1 - ((occupied >> c) & 1):  # the grid is full after this card
            win |= ((quiet & -np.int64(base == 0)) | (row_only & -np.int64(base + fr == 0))
                    | (col_only & -np.int64(base + fc == 0)) | (both & -np.int64(base + fr + fc == 0)))
    return mend & ALL_RANKS, win & ALL_RANKS


@njit(cache=True, inline="always")
def stock_share(ranks, prefix):
    """Share of the stock's cards whose rank is in the mask `ranks` (bit r for rank r)."""
    n = 0
    for r in range(1, RANKS + 1):
        n += ((ranks >> r) & 1) * (prefix[r] - prefix[r - 1])
    return n / prefix[RANKS]


@njit(cache=True, inline="always")
def placement_status(state, rules, cell, card):
    """WON, LOST or ONGOING: how placing `card` on `cell` ends the turn (the stock running out aside)."""
    bit = np.int64(1) << cell
    _, turn = placement_flips(state, cell, card)
    n_fd = popcount((state[FACE_DOWN] & ~bit) ^ turn)
    if n_fd > rules[RULE_MAX_FACE_DOWN]:
        return LOST
    if n_fd == 0 and popcount(state[OCCUPIED] | bit) == rules[RULE_GRID] * rules[RULE_GRID]:
        return WON
    return ONGOING


@njit(cache=True, inline="always")
def leaf_terms(state, rules, cell, card, prefix, lines):
    """The features of the position after placing `card` on `cell`, without changing the state.

    Returns (status, to_open, face_down, full_up, full_down, risk, spread,
    closed, safe, mend, win_next); status is WON, LOST or ONGOING (the other terms then
    mean nothing). `prefix` holds the stock's cumulative rank counts after
    this card; `lines` is scratch (SCRATCH int64).
    """
    bit = np.int64(1) << cell
    occupied = state[OCCUPIED]
    face_down = state[FACE_DOWN]
    _, turn = placement_flips(state, cell, card)
    occ2 = occupied | bit
    fd2 = (face_down & ~bit) ^ turn
    n_fd = popcount(fd2)
    grid = rules[RULE_GRID]
    piles = popcount(occ2)
    to_open = grid * grid - piles
    if n_fd > rules[RULE_MAX_FACE_DOWN]:
        return LOST, to_open, n_fd, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if to_open == 0 and n_fd == 0:
        return WON, to_open, n_fd, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    full2 = state[FULL]
    if state[HEIGHT + cell] + 1 >= rules[RULE_MAX_PILE]:
        full2 |= bit

    row = ROW_OF[cell]
    col = COL_OF[cell]
    own = np.int64(0)
    if occupied & ~face_down & bit:
        own = nibble(state[TOP + cell])
    row_lo = min(state[MIN_ROW], row)
    row_hi = max(state[MAX_ROW], row)
    col_lo = min(state[MIN_COL], col)
    col_hi = max(state[MAX_COL], col)
    for k in range(row_lo):
        lines[k] = 0
        lines[LINES + k] = 0
        lines[UPS + k] = 0
    for k in range(row_hi + 1, SIDE):
        lines[k] = 0
        lines[LINES + k] = 0
        lines[UPS + k] = 0
    for k in range(col_lo):
        lines[SIDE + k] = 0
        lines[LINES + SIDE + k] = 0
        lines[UPS + SIDE + k] = 0
    for k in range(col_hi + 1, SIDE):
        lines[SIDE + k] = 0
        lines[LINES + SIDE + k] = 0
        lines[UPS + SIDE + k] = 0

    own_change = nibble(card) - own
    risk = 0.0
    spread = 0.0
    closed = 0.0
    for r in range(row_lo, row_hi + 1):
        ups = ups_after(state, state[ROW_UPS + r] + (own_change if r == row else 0), ROW_MASK[r], turn, fd2)
        lines[UPS + r] = ups
        a, b, c, lines[r], lines[LINES + r] = line_info(ups, occ2 & ROW_MASK[r], fd2 & ROW_MASK[r], prefix)
        risk += a
        spread += b
        closed += c
    for k in range(col_lo, col_hi + 1):
        ups = ups_after(state, state[COL_UPS + k] + (own_change if k == col else 0), COL_MASK[k], turn, fd2)
        lines[UPS + SIDE + k] = ups
        a, b, c, lines[SIDE + k], lines[LINES + SIDE + k] = line_info(
            ups, occ2 & COL_MASK[k], fd2 & COL_MASK[k], prefix)
        risk += a
        spread += b
        closed += c

    safe = 0.0
    mend = 0.0
    win_next = 0.0
    if prefix[RANKS] > 0:
        open2 = np.int64(0)
        if to_open > 0:
            band = (BAND_ROWS[max(0, row_hi - grid + 1) * SIDE + min(SIDE - 1, row_lo + grid - 1)]
                    & BAND_COLS[max(0, col_hi - grid + 1) * SIDE + min(SIDE - 1, col_lo + grid - 1)])
            open2 = (state[OPEN] | neighbours(cell, rules)) & ~occ2 & band
            safe = stock_share(safe_ranks(open2, lines), prefix)
        if n_fd > 0 and to_open <= MEND_TO_OPEN:
            stock = np.int64(0)
            for r in range(1, RANKS + 1):
                stock |= np.int64(prefix[r] > prefix[r - 1]) << r
            ranks_mend, ranks_win = mend_ranks(state, cell, card, (occ2 & ~full2) | open2, occ2, fd2, to_open, lines,
                                               stock)
            mend = stock_share(ranks_mend, prefix)
            win_next = stock_share(ranks_win, prefix)
    return (ONGOING, to_open, n_fd, popcount(full2 & ~fd2), popcount(full2 & fd2), risk, spread, closed, safe,
            mend, win_next)


@njit(cache=True, inline="always")
def bucket_of(to_open, face_down):
    """Index of the (piles to open, face-down tops) bucket."""
    return min(max(to_open, 0), TO_OPEN_BUCKETS - 1) * FACE_DOWN_BUCKETS + min(face_down, FACE_DOWN_BUCKETS - 1)


@njit(cache=True)
def sparse_features(state, rules, cell, card, prefix, lines, idx, val):
    """The nonzero-able features of a placement as (weight index, value) pairs in idx/val (N_TERMS each).

    Returns the status (WON, LOST or ONGOING); idx/val mean something only
    for ONGOING. V is the dot product of these with the weights.
    """
    status, to_open, fd, full_up, full_down, risk, spread, closed, safe, mend, win_next = leaf_terms(
        state, rules, cell, card, prefix, lines)
    if status != ONGOING:
        return status
    b = bucket_of(to_open, fd)
    nb = len(BUCKET_FEATURES)
    for j in range(nb):
        idx[j] = j * N_BUCKETS + b
    val[0] = 1.0
    val[1] = float(state[STOCK_LEFT])
    val[2] = safe
    val[3] = mend
    val[4] = win_next
    w = nb * N_BUCKETS + group(to_open, fd) * N_LINE
    for j in range(N_LINE):
        idx[nb + j] = w + j
    val[nb] = full_up
    val[nb + 1] = full_down
    val[nb + 2] = risk
    val[nb + 3] = spread
    val[nb + 4] = closed
    return status


@njit(cache=True, inline="always")
def leaf(state, rules, cell, card, params, prefix, lines):
    """(status, value) of placing `card` on `cell`: WON and its score, LOST and the loss value, or ONGOING
    and V.

    `state` has `card` drawn; `prefix` holds the stock's cumulative rank counts.
    """
    status, to_open, fd, full_up, full_down, risk, spread, closed, safe, mend, win_next = leaf_terms(
        state, rules, cell, card, prefix, lines)
    if status == WON:
        return status, float(state[STOCK_LEFT])
    if status == LOST:
        return status, params[P_LOSS]
    b = bucket_of(to_open, fd)
    w = P_LINE + group(to_open, fd) * N_LINE
    return status, (params[P_BIAS + b] + params[P_SLOPE + b] * state[STOCK_LEFT] + params[P_SAFE + b] * safe
                    + params[P_MEND + b] * mend + params[P_WIN_NEXT + b] * win_next
                    + params[w] * full_up + params[w + 1] * full_down + params[w + 2] * risk
                    + params[w + 3] * spread + params[w + 4] * closed)


@njit(cache=True, inline="always")
def leaf_value(state, rules, cell, card, params, prefix, lines):
    """Value of placing `card` on `cell`: its score if it wins, the loss value if it loses, else V."""
    return leaf(state, rules, cell, card, params, prefix, lines)[1]


@njit(cache=True, inline="always")
def keep_best(v, cell, top_v, top_c, n_top, follow):
    """Keeps the `follow` best cells by V in `top_v`/`top_c`, highest first (the lowest cell among equals,
    cells coming in increasing order); returns how many are kept."""
    if n_top < follow:
        k = n_top
        n_top += 1
    elif follow > 0 and v > top_v[n_top - 1]:
        k = n_top - 1
    else:
        return n_top
    top_v[k] = v
    top_c[k] = cell
    while k > 0 and top_v[k - 1] < top_v[k]:
        top_v[k - 1], top_v[k] = top_v[k], top_v[k - 1]
        top_c[k - 1], top_c[k] = top_c[k], top_c[k - 1]
        k -= 1
    return n_top


@njit(cache=True)
def expected_value(after, rules, params, prefix, lines, stop_at_win=False):
    """Expected value of the best follow-up over the next card, from the position `after`.

    With `stop_at_win` a follow-up that wins ends its rank's search at its
    score (the deeper search's second card: fewer cells to try).
    """
    # np.bool_ and np.int64, here and at every call of ranks_value: a constant passed as it is would be typed
    # as its literal value, and numba would compile a copy of ranks_value for each (a minute more to compile).
    return ranks_value(after, rules, params, prefix, lines, np.bool_(stop_at_win), np.int64(0), np.empty((0, 0)),
                       np.empty((0, 0), np.int64), np.empty(0, np.int64), np.empty(0))


@njit(cache=True)
def ranks_value(after, rules, params, prefix, lines, stop_at_win, follow, top_v, top_c, n_top, outcome):
    """`expected_value`, also keeping for each rank r what the deeper search starts from (with `follow` > 0):
    the `follow` best follow-ups by V among those that neither win nor lose (`top_v[r]`, `top_c[r]`,
    `n_top[r]` of them; none when one wins), and `outcome[r]`, the rank's value before those: the score
    of a winning follow-up, else the loss value if one loses, else -inf.
    """
    # Uncounted views (see sim.kernels.borrowed): leaf runs for every cell of every rank.
    after, rules, params = borrowed(after), borrowed(rules), borrowed(params)
    prefix, lines = borrowed(prefix), borrowed(lines)
    total = after[STOCK_LEFT]
    ev = 0.0
    legal = legal_cells(after, rules)  # the same for every rank
    for r in range(1, RANKS + 1):
        count = after[STOCK + r]
        if count == 0:
            continue
        draw(after, r)
        stock_prefix(after, prefix)
        best = -np.inf
        kept = 0  # -1 once a follow-up wins
        ends = -np.inf  # the best follow-up that ends the game: a win's score or the loss value
        m = legal
        while m:
            cell = trailing_zeros(m)
            m &= m - 1
            status, v = leaf(after, rules, cell, r, params, prefix, lines)
            if follow > 0:
                if status == ONGOING:
                    if kept >= 0:
                        kept = keep_best(v, cell, top_v[r], top_c[r], kept, follow)
                elif status == WON:
                    ends = v
                    kept = -1
                elif kept >= 0:
                    ends = max(ends, v)
            if stop_at_win and status == WON:
                best = v
                break
            if v > best:
                best = v
        if follow > 0:
            n_top[r] = max(kept, 0)
            outcome[r] = ends
        if best == -np.inf:  # no legal cell: the game is lost
            best = params[P_LOSS]
        ev += count * best
        after[STOCK + r] += 1
        after[STOCK_LEFT] += 1
    return ev / total


@njit(cache=True)
def follow_up_value(after, rules, params, prefix2, lines, after2, top_v, top_c, n_top, outcome):
    """Expected value over the next card of its best follow-up, searched one card deeper.

    For each rank still in the stock, a follow-up cell that wins ends the
    rank's search at its score, one that loses is worth the loss value; of
    the others, the `follow` best by V (those within `margin` of the first),
    as `ranks_value` kept them for the position `after`, are valued by
    `expected_value` of the position after them, a win there ending its
    rank's search (the loss value when the stock is then empty); the best
    counts. `prefix2` and `lines` are scratch; `after` is left as it came.
    """
    after, rules, params = borrowed(after), borrowed(rules), borrowed(params)
    lines, after2, prefix2 = borrowed(lines), borrowed(after2), borrowed(prefix2)
    total = after[STOCK_LEFT]
    ev = 0.0
    for r in range(1, RANKS + 1):
        count = after[STOCK + r]
        if count == 0:
            continue
        best = outcome[r]
        if n_top[r] > 0:
            draw(after, r)
            for j in range(n_top[r]):
                if top_v[r, j] < top_v[r, 0] - params[P_MARGIN]:
                    break  # too far below the best follow-up by V to overtake it
                if after[STOCK_LEFT] == 0:
                    v = params[P_LOSS]  # not won, and no card left: lost
                else:
                    after2[:] = after
                    place(after2, rules, top_c[r, j], r)
                    # (follow 0: the arrays are not touched)
                    v = ranks_value(after2, rules, params, prefix2, lines, np.bool_(True), np.int64(0), top_v, top_c,
                                    n_top, outcome)
                best = max(best, v)
            after[STOCK + r] += 1
            after[STOCK_LEFT] += 1
        if best == -np.inf:  # no legal cell: the game is lost
            best = params[P_LOSS]
        ev += count * best
    return ev / total


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """`params`: see the module docstring. Ties keep the lowest cell."""
    state, rules, params = borrowed(state), borrowed(rules), borrowed(params)
    prefix = np.empty(RANKS + 1, np.int64)
    after = np.empty(STATE_SIZE, np.int64)
    lines = np.empty(SCRATCH, np.int64)
    stock_prefix(state, prefix)
    deeper = (params[P_ENDGAME] >= 0 and state[STOCK_LEFT] > 0
              and rules[RULE_GRID] * rules[RULE_GRID] - state[PILES] <= params[P_ENDGAME])
    # What the deeper search starts from, kept root by root while the first card's expectations are worked out.
    # With follow 0 (no deeper search) nothing is kept.
    follow = int(params[P_FOLLOW]) if deeper else 0
    roots = popcount(legal)
    top_v = np.empty((roots, RANKS + 1, follow))
    top_c = np.empty((roots, RANKS + 1, follow), np.int64)
    n_top = np.empty((roots, RANKS + 1), np.int64)
    outcome = np.empty((roots, RANKS + 1))
    best_cell = -1
    best = -np.inf
    values = np.empty(CELLS)
    cells = np.empty(CELLS, np.int64)
    alive = np.zeros(CELLS, np.bool_)
    n = 0
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        status = placement_status(state, rules, cell, card)
        if status == WON:
            return cell
        if status == LOST:
            v = params[P_LOSS] - 1.0  # a sure loss now ranks below any chance
        elif state[STOCK_LEFT] == 0:
            v = params[P_LOSS]
        else:
            after[:] = state
            place(after, rules, cell, card)
            v = ranks_value(after, rules, params, prefix, lines, np.bool_(False), follow, top_v[n], top_c[n], n_top[n],
                            outcome[n])
            alive[n] = True
        values[n] = v
        cells[n] = cell
        n += 1
        if v > best:
            best = v
            best_cell = cell
    if deeper:
        best_cell = deeper_choice(state, rules, card, params, values, cells, alive, n, best, best_cell, top_v, top_c,
                                  n_top, outcome)
    return best_cell


@njit(cache=True)
def deeper_choice(state, rules, card, params, values, cells, alive, n, best, best_cell, top_v, top_c, n_top,
                  outcome):
    """The best of the `roots` best cells by one card's expectation within `margin` of the best, by the
    expectation searched one card deeper (`follow_up_value`); `best_cell` when no other comes close."""
    roots = int(params[P_ROOTS])
    margin = params[P_MARGIN]
    order = np.argsort(-values[:n], kind="mergesort")  # stable: the lowest cell among equals first
    if n < 2 or roots < 2 or values[order[1]] < best - margin:
        return best_cell
    prefix2 = np.empty(RANKS + 1, np.int64)
    after = np.empty(STATE_SIZE, np.int64)
    after2 = np.empty(STATE_SIZE, np.int64)
    lines = np.empty(SCRATCH, np.int64)
    best2 = -np.inf
    for j in range(min(roots, n)):
        i = order[j]
        if values[i] < best - margin:
            break
        if not alive[i]:
            continue
        after[:] = state
        place(after, rules, cells[i], card)
        v = follow_up_value(after, rules, params, prefix2, lines, after2, top_v[i], top_c[i], n_top[i], outcome[i])
        if v > best2:
            best2 = v
            best_cell = cells[i]
    return best_cell
