"""heuristic's compiled `evaluate` against its features worked out plainly, cell by cell, after placing.

The reference places the card on a copy with the engine (tested on its own
against tests/reference.py and the rule vectors), then counts each feature
as the module docstring defines it, with no packed ranks or bit tricks.
lookahead, rollout, planner's checks and `sim tune` all rest on `evaluate`.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import sim
from policies.heuristic import LOSS, WIN, evaluate, stock_prefix
from sim import kernels as K
from test_lookahead import SETTINGS, any_weights, random_position

ROWS = [[K.SIDE * i + j for j in range(K.SIDE)] for i in range(K.SIDE)]
COLUMNS = [[K.SIDE * j + i for j in range(K.SIDE)] for i in range(K.SIDE)]


def reference_features(after, rules):
    """(face_down, to_open, full_up, full_down, risk, spread, closed) of the position `after`."""
    occupied = [c for c in range(K.CELLS) if after[K.OCCUPIED] >> c & 1]
    down = {c for c in occupied if after[K.FACE_DOWN] >> c & 1}
    full = {c for c in occupied if after[K.FULL] >> c & 1}
    stock = [r for r in range(1, K.RANKS + 1) for _ in range(after[K.STOCK + r])]
    risk = spread = closed = 0.0
    for line in ROWS + COLUMNS:
        cells = [c for c in line if c in occupied]
        if not cells or not stock:
            continue
        ups = [int(after[K.TOP + c]) for c in cells if c not in down]
        flip = len(ups) - (len(cells) - len(ups))  # face-up others turn down, face-down ones up
        if ups:
            lo, hi = min(ups), max(ups)
            outside = sum(1 for r in stock if r < lo or r > hi)
            spread += hi - lo
            closed += outside == 0
        else:
            outside = len(stock)  # no face-up top to stay within: any card fires the check
        risk += flip * outside / len(stock)
    return (len(down), rules[K.RULE_GRID] ** 2 - len(occupied), len(full - down), len(full & down), risk, spread,
            closed)


def reference_value(state, rules, cell, card, weights):
    after = state.copy()
    K.place(after, rules, cell, card)
    features = reference_features(after, rules)
    if features[0] > rules[K.RULE_MAX_FACE_DOWN]:
        return LOSS
    if features[1] == 0 and features[0] == 0:
        return WIN
    return float(np.dot(weights, features))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), turns=st.integers(0, 30), setting=st.sampled_from(SETTINGS),
       weights=any_weights, empty_stock=st.booleans())
def test_evaluate_matches_the_features_counted_after_placing(seed, turns, setting, weights, empty_stock):
    rules = sim.Rules.from_strings(setting).as_array()
    weights = np.array(weights, dtype=np.float64)
    deck = np.array(sim.deal(seed, 0), dtype=np.int64)
    state = random_position(deck, turns, rules, np.random.default_rng(seed))
    assume(state is not None)
    if empty_stock:  # as on the last turn: no next card can fire a check, so no line counts
        state[K.STOCK:K.STOCK + K.RANKS + 1] = 0
        state[K.STOCK_LEFT] = 0
    card = int(deck[turns])
    prefix = np.empty(K.RANKS + 1, np.int64)
    stock_prefix(state, prefix)
    legal = K.legal_cells(state, rules)
    for cell in (c for c in range(K.CELLS) if legal >> c & 1):
        expected = reference_value(state, rules, cell, card, weights)
        got = evaluate(state, rules, cell, card, weights, prefix)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-9), (cell, got, expected)
