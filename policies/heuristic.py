"""heuristic: the cell with the best weighted evaluation of the position after placing.

A player may count cards, so the evaluation uses the exact composition of
the stock (never its order). Features of the position after the placement,
each summed over the table:

==================  ===========================================================
``FACE_DOWN``       face-down top cards
``TO_OPEN``         piles still to open before the grid is full
``FULL_UP``         full piles with a face-up top (they can never be covered)
``FULL_DOWN``       full piles with a face-down top (only a check can save them)
``RISK``            per row and column: the chance that the next card falls
                    outside the range of the line's face-up tops (so placing
                    it there fires the check) times what that flip does to the
                    face-down count (face-up others minus face-down others)
``SPREAD``          per row and column: highest minus lowest face-up rank
                    (wide lines take more cards without firing)
``CLOSED``          rows and columns whose face-up tops span the whole stock
                    (no remaining rank falls outside: nothing can flip them)
==================  ===========================================================

The value is the dot product with the weights (a parameter; the defaults
are tuned by ``sim tune``, see README). A winning placement is always taken;
a placement that loses at once only when every legal cell loses.
"""

import math
from pathlib import Path

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from policies.params import Param, json_float, read_json, short_repr

from sim.kernels import (
    COL_MASK, COL_OF, COL_UPS, FACE_DOWN, FULL, HEIGHT, MAX_COL, MAX_ROW, MIN_COL, MIN_ROW, OCCUPIED,
    RANK_SHIFT, RANKS, ROW_MASK, ROW_OF, ROW_UPS, RULE_GRID, RULE_MAX_FACE_DOWN, RULE_MAX_PILE, STOCK,
    TOP, borrowed, placement_flips, popcount, trailing_zeros,
)

FEATURES = ("face_down", "to_open", "full_up", "full_down", "risk", "spread", "closed")
"""Names of the features, in weight order."""
N_FEATURES = len(FEATURES)
F_FACE_DOWN, F_TO_OPEN, F_FULL_UP, F_FULL_DOWN, F_RISK, F_SPREAD, F_CLOSED = range(N_FEATURES)

WIN = 1e9
"""Value of a placement that wins."""
LOSS = -1e9
"""Value of a placement that loses at once."""
MAX_WEIGHT = 1e6
"""The largest weight in size. No feature is larger than 72 in size (spread: 9 in each of 8 lines) and all
together not above 174, so any other placement is valued within 1.74e8 of 0, never at WIN or LOSS: a win is
always taken and a loss only when every cell loses, for any weights within it (larger ones could value an
ordinary placement above a win or below a loss, or overflow to -inf or NaN for every cell, choosing none)."""

# Default weights, produced by `sim tune --policy heuristic -n 40000 --seed 11`
# (validation on seed 12: 85.29% of 40,000 games won).
DEFAULT_WEIGHTS = np.array([-3.8167, -16.6057, -2.1969, -15.6904, -1.4487, 1.1991, 3.9846])


def parse_weights(text: str) -> list[float]:
    """Weights from 'default', a JSON file ({"weights": {feature: value}} or a list), or comma-separated numbers."""
    if text == "default":
        return DEFAULT_WEIGHTS.tolist()
    if "," in text or _is_number(text):
        try:
            values = [float(v) for v in text.split(",")]
        except ValueError:
            raise ValueError(f"weights {text!r}: not comma-separated numbers") from None
    else:
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"weights {text!r} is neither a file nor comma-separated numbers")
        data = read_json(path, f"weights file {text}")
        data = data.get("weights", data) if isinstance(data, dict) else data
        if not isinstance(data, (dict, list)):
            raise ValueError(f"weights file {text}: expected a list of numbers or {{feature: number}}, "
                             f"not {type(data).__name__}")
        if isinstance(data, dict):
            unknown = set(data) - set(FEATURES)
            if unknown:
                raise ValueError(f"unknown features in {text}: {', '.join(sorted(unknown))}; "
                                 f"features: {', '.join(FEATURES)}")
            missing = [f for f in FEATURES if f not in data]
            if missing:
                raise ValueError(f"{text} lacks weights for: {', '.join(missing)}")
            values = [_weight(data[f], text) for f in FEATURES]
        else:
            values = [_weight(v, text) for v in data]
    if len(values) != len(FEATURES):
        raise ValueError(f"need {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(values)}")
    bad = [f"{f}={v}" for f, v in zip(FEATURES, values) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"weights must be finite numbers; {text} has {', '.join(bad)}")
    big = [f"{f}={v:g}" for f, v in zip(FEATURES, values) if abs(v) > MAX_WEIGHT]
    if big:
        raise ValueError(f"weights must be numbers from {-MAX_WEIGHT:g} to {MAX_WEIGHT:g} (larger ones outweigh a "
                         f"win or a loss); {text} has {', '.join(big)}")
    return values


def _weight(value, where: str) -> float:
    """A weights file's entry as a float (NaN and the infinities are refused after, naming their feature)."""
    try:
        return json_float(value)
    except TypeError:
        raise ValueError(f"weights file {where}: {value!r} is not a number") from None
    except OverflowError:
        raise ValueError(f"weights file {where}: {short_repr(value)} is not a finite number") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


WEIGHTS = Param("weights", "default",
                "heuristic weights: a JSON file ({\"weights\": {feature: value}} or a list) or comma-separated numbers",
                parse_weights)
"""The weights parameter, shared by the policies that evaluate with `evaluate`."""

DESCRIPTION = "Best weighted evaluation of the position after placing (counts cards)."
PARAMS = (WEIGHTS,)


@njit(cache=True, inline="always")
def nibble(rank):
    """One face-up top of `rank` in the packed ROW_UPS/COL_UPS counts (its 4-bit field)."""
    return np.int64(1) << (RANK_SHIFT * rank)


@njit(cache=True)
def stock_prefix(state, prefix):
    """prefix[r] = cards of rank <= r still in the stock (r = 0..10)."""
    prefix[0] = 0
    for r in range(1, RANKS + 1):
        prefix[r] = prefix[r - 1] + state[STOCK + r]


@njit(cache=True, inline="always")
def line_terms(ups, occupied, face_down, prefix):
    """(risk, spread, closed) of one line from its packed face-up ranks and masks."""
    n_occ = popcount(occupied)
    if n_occ == 0:
        return 0.0, 0.0, 0.0
    n_down = popcount(face_down)
    flip = n_occ - 2 * n_down  # change in face-down count if the line's check fires
    total = prefix[RANKS]
    if total == 0:
        return 0.0, 0.0, 0.0
    if ups == 0:
        return float(flip), 0.0, 0.0
    lo = trailing_zeros(ups) // RANK_SHIFT
    hi = (63 - leading_zeros(ups)) // RANK_SHIFT
    outside = prefix[lo - 1] + total - prefix[hi]
    closed = 1.0 if outside == 0 else 0.0
    return flip * outside / total, float(hi - lo), closed


@njit(cache=True, inline="always")
def ups_after(state, ups, line, turn, face_down_after):
    """A line's packed face-up ranks after its turned cells change face.

    Only the placed card's row and column turn cells, so in any other line
    the one cell that can turn is where it crosses them.
    """
    m = turn & line
    while m:
        t = trailing_zeros(m)
        m &= m - 1
        if face_down_after & (np.int64(1) << t):
            ups -= nibble(state[TOP + t])
        else:
            ups += nibble(state[TOP + t])
    return ups


@njit(cache=True, inline="always")
def evaluate(state, rules, cell, card, weights, prefix):
    """Value of placing `card` on `cell`, without changing the state.

    `prefix` holds the stock's cumulative rank counts (stock_prefix) for the
    card after this one.
    """
    bit = np.int64(1) << cell
    occupied = state[OCCUPIED]
    face_down = state[FACE_DOWN]
    _, turn = placement_flips(state, cell, card)
    occ2 = occupied | bit
    fd2 = (face_down & ~bit) ^ turn
    n_fd = popcount(fd2)
    if n_fd > rules[RULE_MAX_FACE_DOWN]:
        return LOSS
    grid = rules[RULE_GRID]
    piles = popcount(occ2)
    if piles == grid * grid and n_fd == 0:
        return WIN
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

    own_change = nibble(card) - own
    risk = 0.0
    spread = 0.0
    closed = 0.0
    for r in range(row_lo, row_hi + 1):
        ups = ups_after(state, state[ROW_UPS + r] + (own_change if r == row else 0), ROW_MASK[r], turn, fd2)
        a, b, c = line_terms(ups, occ2 & ROW_MASK[r], fd2 & ROW_MASK[r], prefix)
        risk += a
        spread += b
        closed += c
    for k in range(col_lo, col_hi + 1):
        ups = ups_after(state, state[COL_UPS + k] + (own_change if k == col else 0), COL_MASK[k], turn, fd2)
        a, b, c = line_terms(ups, occ2 & COL_MASK[k], fd2 & COL_MASK[k], prefix)
        risk += a
        spread += b
        closed += c

    return (
        weights[F_FACE_DOWN] * n_fd
        + weights[F_TO_OPEN] * (grid * grid - piles)
        + weights[F_FULL_UP] * popcount(full2 & ~fd2)
        + weights[F_FULL_DOWN] * popcount(full2 & fd2)
        + weights[F_RISK] * risk
        + weights[F_SPREAD] * spread
        + weights[F_CLOSED] * closed
    )


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """`params` are the weights (N_FEATURES floats)."""
    # Uncounted views: evaluate runs for every legal cell (see sim.kernels.borrowed).
    state, rules, params = borrowed(state), borrowed(rules), borrowed(params)
    prefix = np.empty(RANKS + 1, np.int64)
    stock_prefix(state, prefix)
    best_cell = -1
    best = -np.inf
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        v = evaluate(state, rules, cell, card, params, prefix)
        if v > best:  # ascending cells: ties keep the lowest
            best = v
            best_cell = cell
    return best_cell
