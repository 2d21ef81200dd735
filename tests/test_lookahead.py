"""lookahead's fast `choose` against `choose_exhaustive`, its leaf-by-leaf definition.

The fast path sums each leaf from per-position tables and skips follow-ups
by upper bounds; it must make exactly the same choices as the definition.
benchmarks/lookahead_exact.py runs the long check (2,000 deals per rule
setting); here a few dozen deals per setting keep the suite fast.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sim
from policies import lookahead
from policies.heuristic import DEFAULT_WEIGHTS, FEATURES, LOSS, WIN, evaluate, stock_prefix
from sim import kernels as K

REFERENCE = "policies.lookahead:choose_exhaustive"
SETTINGS = [{}, {"adjacency": "king"}, {"max_face_down": "3"}, {"grid": "3"}, {"max_pile": "2"}]


def _args(weights):
    return {f: repr(float(w)) for f, w in zip(FEATURES, weights)}


def _same_moves(seed, games, rules, weights):
    differ = []
    for game in range(games):
        deck = sim.deal(seed, game)
        fast = sim.play(deck, "lookahead", rules, seed, game, policy_args={"weights": ",".join(repr(float(w)) for w in weights)})
        slow = sim.play(deck, REFERENCE, rules, seed, game, policy_args=_args(weights))
        if fast.moves != slow.moves:
            differ.append(game)
    return differ


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_same_moves_as_the_definition_deal_by_deal(setting):
    rules = sim.Rules.from_strings(setting)
    assert _same_moves(31, 30, rules, list(DEFAULT_WEIGHTS)) == []


@pytest.mark.parametrize("weights", [
    [-3.0, -10.0, 2.0, -8.0, 1.5, -1.0, -2.0],  # every sign of the line features reversed
    [-1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # no line features: many exact ties
    [-5.0, -20.0, -1.0, -10.0, -4.0, 3.0, 9.0],
    [-3000.0, -10000.0, 2.0, -8.0, 1.5, -1.0, -2.0],  # large enough that the roots are fully evaluated
])
def test_same_moves_with_other_weights(weights):
    assert _same_moves(32, 15, sim.Rules(), weights) == []


def random_position(deck, turns, rules, rng):
    """The table after `turns` cards on random legal cells that do not lose at once, the next card drawn (or None)."""
    state = np.zeros(K.STATE_SIZE, np.int64)
    K.reset(state)
    for t in range(turns):
        K.draw(state, deck[t])
        legal = K.legal_cells(state, rules)
        cells = [c for c in range(K.CELLS)
                 if legal >> c & 1 and K.face_down_after(state, c, deck[t]) <= rules[K.RULE_MAX_FACE_DOWN]]
        if not cells:
            return None
        K.place(state, rules, int(rng.choice(cells)), deck[t])
        if K.end_of_turn(state, rules) != K.GOES_ON:
            return None
    K.draw(state, deck[turns])
    return state


def _exact_rank_bests(after, rules, weights):
    """Each rank's best leaf, the way expected_value computes it (LEAF_LOSS for ranks not in the stock)."""
    best = np.full(K.RANKS + 1, lookahead.LEAF_LOSS)
    prefix = np.empty(K.RANKS + 1, np.int64)
    for r in range(1, K.RANKS + 1):
        if after[K.STOCK + r] == 0:
            continue
        drawn = after.copy()
        K.draw(drawn, r)
        stock_prefix(drawn, prefix)
        legal = K.legal_cells(drawn, rules)
        for cell in range(K.CELLS):
            if legal >> cell & 1:
                v = evaluate(drawn, rules, cell, r, weights, prefix)
                v = lookahead.LEAF_WIN if v >= WIN else lookahead.LEAF_LOSS if v <= LOSS else v
                best[r] = max(best[r], v)
    return best


weight = st.floats(-20, 20, allow_nan=False, allow_infinity=False)
large_weight = st.floats(-3000, 3000, allow_nan=False, allow_infinity=False)
"""Large enough that a leaf that does not win can be worth more than LEAF_WIN."""
any_weights = st.one_of(st.just(list(DEFAULT_WEIGHTS)), st.lists(weight, min_size=7, max_size=7),
                        st.lists(large_weight, min_size=7, max_size=7))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), turns=st.integers(1, 30), setting=st.sampled_from(SETTINGS),
       weights=any_weights,
       data=st.data())
def test_bounds_never_drop_a_ranks_best(seed, turns, setting, weights, data):
    """The fast rank bests equal the exact ones to within the margin.

    A bound below a follow-up's exact value would skip that follow-up and
    leave its rank's best too low; a leaf summed wrongly would stray too.
    """
    rules = sim.Rules.from_strings(setting).as_array()
    weights = np.array(weights, dtype=np.float64)
    rng = np.random.default_rng(seed)
    deck = np.array(sim.deal(seed, 0), dtype=np.int64)
    state = random_position(deck, turns, rules, rng)
    assume(state is not None and state[K.STOCK_LEFT] > 0)
    legal = K.legal_cells(state, rules)
    cell = data.draw(st.sampled_from([c for c in range(K.CELLS) if legal >> c & 1]))
    after = state.copy()
    K.place(after, rules, cell, int(deck[turns]))
    fast = lookahead.rank_bests(after, rules, weights)
    exact = _exact_rank_bests(after, rules, weights)
    ranks = [r for r in range(1, K.RANKS + 1) if after[K.STOCK + r]]
    assert np.all(np.abs(fast[ranks] - exact[ranks]) <= lookahead.margin(weights))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), turns=st.integers(1, 30), setting=st.sampled_from(SETTINGS),
       weights=any_weights,
       shift=st.floats(-5, 5, allow_nan=False), data=st.data())
def test_a_cut_off_cell_expects_less_than_the_cutoff(seed, turns, setting, weights, shift, data):
    """A root cell is cut off only when its exact expectation is below the cutoff (to within the margin).

    `choose` cuts off a cell whose expectation is sure to stay below the best
    so far; an upper bound that fell short would drop a cell that can be best.
    """
    rules = sim.Rules.from_strings(setting).as_array()
    weights = np.array(weights, dtype=np.float64)
    rng = np.random.default_rng(seed)
    deck = np.array(sim.deal(seed, 0), dtype=np.int64)
    state = random_position(deck, turns, rules, rng)
    assume(state is not None and state[K.STOCK_LEFT] > 0)
    legal = K.legal_cells(state, rules)
    cell = data.draw(st.sampled_from([c for c in range(K.CELLS) if legal >> c & 1]))
    after = state.copy()
    K.place(after, rules, cell, int(deck[turns]))
    exact = lookahead.expected_value(after.copy(), rules, weights, np.empty(K.RANKS + 1, np.int64))
    cutoff = exact + shift
    if lookahead.cuts_off(after, rules, weights, cutoff):
        assert exact < cutoff + lookahead.margin(weights)


def found_position(seed, turns, setting):
    """(rules, position, next card) of a random position a search for counterexamples found."""
    rules = sim.Rules.from_strings(setting).as_array()
    deck = np.array(sim.deal(seed, 0), dtype=np.int64)
    return rules, random_position(deck, turns, rules, np.random.default_rng(seed)), int(deck[turns])


def test_a_follow_up_above_leaf_win_is_not_capped_there():
    # Large weights can value a leaf that does not win above LEAF_WIN (here 1004 against 1000); the
    # cut-off's bound once capped every follow-up's leaf at LEAF_WIN and gave up this cell wrongly.
    rules, state, card = found_position(8662285, 20, {"adjacency": "king"})
    weights = np.array([0, 0, 0, 0, 0, 19, 7], dtype=np.float64)
    legal = K.legal_cells(state, rules)
    above = 0
    for cell in (c for c in range(K.CELLS) if legal >> c & 1):
        after = state.copy()
        K.place(after, rules, cell, card)
        exact = lookahead.expected_value(after.copy(), rules, weights, np.empty(K.RANKS + 1, np.int64))
        above += exact > lookahead.LEAF_WIN
        assert not lookahead.cuts_off(after, rules, weights, exact - 1.0), cell
    assert above


@pytest.mark.parametrize("seed, turns, weights, cell", [
    (174308926, 19, [0, 0, 0, 0, 0, 40, 30], 23),
    (848688723, 14, [0, -5, 0, 0, 0, 60, 60], 29),
])
def test_cells_that_may_win_do_not_cap_the_later_ones_at_their_own_bound(seed, turns, weights, cell):
    # With large weights, two follow-ups that may each win can have bounds over their other patterns
    # above LEAF_WIN; the cut-off once took the first one's as a bound on every leaf still to come, so
    # that choose gave up the best cell and played another (16 and 15 here).
    rules, state, card = found_position(seed, turns, {"grid": "3"})
    weights = np.array(weights, dtype=np.float64)
    legal = K.legal_cells(state, rules)
    rng = np.zeros(1, np.uint64)
    card = np.uint8(card)  # a run's card type: choose is the run's compiled code, loaded, not compiled again
    assert lookahead.choose_exhaustive(state.copy(), rules, card, legal, rng, weights) == cell
    assert lookahead.choose(state.copy(), rules, card, legal, rng, weights) == cell


def test_a_cell_after_several_that_may_win_is_not_cut_off_wrongly():
    rules, state, card = found_position(1386318620, 29, {"grid": "3"})
    weights = np.array([0, 0, 0, 0, 0, 40, 30], dtype=np.float64)
    after = state.copy()
    K.place(after, rules, 16, card)
    exact = lookahead.expected_value(after.copy(), rules, weights, np.empty(K.RANKS + 1, np.int64))
    assert exact > lookahead.LEAF_WIN  # 1500: only leaves that do not win are worth this much
    assert not lookahead.cuts_off(after, rules, weights, exact - 1.0)
