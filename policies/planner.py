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
  each with its own intercept and its own slope in the cards left in the
  stock, and
- heuristic's full-pile and per-line terms (``full_up``, ``full_down``,
  ``risk``, ``spread``, ``closed``), computed as `policies.heuristic.evaluate`
  computes them, weighted per group of (face-down tops, piles to open:
  0, 1..3, 4..7, 8+) (20 groups).

The weights are learned by simulation (`sim train`, see README) and shipped
in ``policies/data/planner.json``. Only the stock's composition is used,
never its order.

params: [loss value, bucket intercepts (80), bucket slopes (80), heuristic weights (7) per group (20)]
"""

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
from numba import njit

from policies.heuristic import FEATURES as HEURISTIC_FEATURES
from policies.heuristic import LOSS, WIN, evaluate, stock_prefix
from policies.params import Param
from sim.kernels import (
    FACE_DOWN, OCCUPIED, RANKS, RULE_GRID, STATE_SIZE, STOCK, STOCK_LEFT, draw, legal_cells, place,
    placement_flips, popcount, trailing_zeros,
)

FORMAT = "foursquare-planner-values-v1"
"""Format tag of the values file; a file with another tag is refused."""
TO_OPEN_BUCKETS = 16
"""Piles still to open after a placement: 0..15 (more is counted as 15)."""
FACE_DOWN_BUCKETS = 5
"""Face-down tops after a placement: 0..4 (more is counted as 4)."""
N_BUCKETS = TO_OPEN_BUCKETS * FACE_DOWN_BUCKETS
LINE_FEATURES = ("full_up", "full_down", "risk", "spread", "closed")
"""heuristic's terms that V weighs (the two others are in the bucket)."""
OPEN_GROUPS = 4
"""Groups of piles still to open for the line terms' weights: 0, 1..3, 4..7, 8 or more."""
N_GROUPS = FACE_DOWN_BUCKETS * OPEN_GROUPS
FEATURE_SET = (
    [f"bias[to_open={t},face_down={d}]" for t in range(TO_OPEN_BUCKETS) for d in range(FACE_DOWN_BUCKETS)]
    + [f"stock_left[to_open={t},face_down={d}]" for t in range(TO_OPEN_BUCKETS) for d in range(FACE_DOWN_BUCKETS)]
    + [f"{f}[face_down={d},open_group={g}]" for d in range(FACE_DOWN_BUCKETS) for g in range(OPEN_GROUPS)
       for f in LINE_FEATURES]
)
"""Name of each learned weight, in file order."""
N_WEIGHTS = len(FEATURE_SET)

P_LOSS = 0
P_BIAS = 1
P_SLOPE = P_BIAS + N_BUCKETS
P_HEURISTIC = P_SLOPE + N_BUCKETS
N_HEURISTIC = len(HEURISTIC_FEATURES)
N_PARAMS = P_HEURISTIC + N_GROUPS * N_HEURISTIC

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
    """The params array of learned `weights` (FEATURE_SET order) and the loss value."""
    w = [float(x) for x in weights]
    params = [float(loss)] + w[:2 * N_BUCKETS]
    k = len(LINE_FEATURES)
    for g in range(N_GROUPS):
        line = dict(zip(LINE_FEATURES, w[2 * N_BUCKETS + g * k: 2 * N_BUCKETS + (g + 1) * k]))
        params += [line.get(f, 0.0) for f in HEURISTIC_FEATURES]
    return params


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
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"values file {where}: {v!r} is not a finite number")
    return weights_to_params(weights, loss)


def read_values(path: str | Path | None = None) -> dict:
    """The contents of a values file (the shipped one when `path` is None); ValueError when unreadable."""
    try:
        if path is None:
            text = resources.files("policies").joinpath("data", DATA_FILE).read_text()
        else:
            text = Path(path).read_text()
        return json.loads(text)
    except (OSError, ValueError) as e:
        raise ValueError(f"values file {path or DATA_FILE}: not readable JSON ({e})") from None


def parse_values(text: str) -> list[float]:
    """Params from 'default' (the shipped values) or a values file written by `sim train`."""
    if text == "default":
        return validate_values(read_values(), DATA_FILE)
    if not Path(text).is_file():
        raise ValueError(f"policy 'planner': values {text!r} is neither 'default' nor a file")
    return validate_values(read_values(text), text)


DESCRIPTION = "Expectimax one card ahead with learned values of positions; plays for the mean score."
PARAMS = (
    Param("values", "default", "learned values: 'default' (shipped) or a file written by `sim train`",
          parse_values),
)


@njit(cache=True, inline="always")
def leaf_value(state, rules, cell, card, params, prefix):
    """Value of placing `card` on `cell`: its score if it wins, the loss value if it loses, else V.

    `state` has `card` drawn; `prefix` holds the stock's cumulative rank counts.
    """
    bit = np.int64(1) << cell
    _, turn = placement_flips(state, cell, card)
    fd = popcount((state[FACE_DOWN] & ~bit) ^ turn)
    to_open = rules[RULE_GRID] * rules[RULE_GRID] - popcount(state[OCCUPIED] | bit)
    w = P_HEURISTIC + group(to_open, fd) * N_HEURISTIC
    h = evaluate(state, rules, cell, card, params[w:w + N_HEURISTIC], prefix)
    if h >= WIN:
        return float(state[STOCK_LEFT])
    if h <= LOSS:
        return params[P_LOSS]
    b = min(max(to_open, 0), TO_OPEN_BUCKETS - 1) * FACE_DOWN_BUCKETS + min(fd, FACE_DOWN_BUCKETS - 1)
    return params[P_BIAS + b] + params[P_SLOPE + b] * state[STOCK_LEFT] + h


@njit(cache=True)
def expected_value(after, rules, params, prefix):
    """Expected value of the best follow-up over the next card, from the position `after`."""
    total = after[STOCK_LEFT]
    ev = 0.0
    for r in range(1, RANKS + 1):
        count = after[STOCK + r]
        if count == 0:
            continue
        draw(after, r)
        stock_prefix(after, prefix)
        best = -np.inf
        m = legal_cells(after, rules)
        while m:
            cell = trailing_zeros(m)
            m &= m - 1
            v = leaf_value(after, rules, cell, r, params, prefix)
            if v > best:
                best = v
        if best == -np.inf:  # no legal cell: the game is lost
            best = params[P_LOSS]
        ev += count * best
        after[STOCK + r] += 1
        after[STOCK_LEFT] += 1
    return ev / total


@njit(cache=True)
def choose(state, rules, card, legal, rng, params):
    """`params`: see the module docstring. Ties keep the lowest cell."""
    prefix = np.empty(RANKS + 1, np.int64)
    after = np.empty(STATE_SIZE, np.int64)
    stock_prefix(state, prefix)
    best_cell = -1
    best = -np.inf
    m = legal
    while m:
        cell = trailing_zeros(m)
        m &= m - 1
        v = evaluate(state, rules, cell, card, params[P_HEURISTIC:P_HEURISTIC + N_HEURISTIC], prefix)
        if v >= WIN:
            return cell
        if v <= LOSS:
            v = params[P_LOSS] - 1.0  # a sure loss now ranks below any chance
        elif state[STOCK_LEFT] == 0:
            v = params[P_LOSS]
        else:
            after[:] = state
            place(after, rules, cell, card)
            v = expected_value(after, rules, params, prefix)
        if v > best:
            best = v
            best_cell = cell
    return best_cell
