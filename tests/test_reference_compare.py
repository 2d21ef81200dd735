"""The compiled engine against tests/reference.py, game by game.

2,000 seeded deals (seed 7, games 0..1999) under several rule settings, for
greedy and for random; every field, moves included. Settings are chosen so
that between them every kind of end occurs, no_move included, for both
policies. Also: sim.deal against the reference deal, and sim.play_range's
columns against per-game sim.play.
"""

from collections import Counter

import numpy as np
import pytest

import reference  # tests/reference.py (conftest.py puts tests/ on sys.path)
import sim

SEED = 7
N_GAMES = 2000
POLICIES = ("greedy", "random")

SETTINGS = {
    "default": {},
    "king-p3-fd3": dict(adjacency="king", max_pile=3, max_face_down=3),
    "grid3-p2-fd4": dict(grid=3, max_pile=2, max_face_down=4),
    "fd15": dict(max_face_down=15),
    "grid2-p2-fd1-king": dict(grid=2, max_pile=2, max_face_down=1, adjacency="king"),
}

# Ends that must occur among the 2,000 games, so the comparison is not vacuous.
REQUIRED_ENDS = {
    ("default", "greedy"): {"win", "too_many_face_down", "stock_empty"},
    ("default", "random"): {"too_many_face_down"},
    ("king-p3-fd3", "greedy"): {"win", "too_many_face_down", "stock_empty"},
    ("grid3-p2-fd4", "greedy"): {"win", "too_many_face_down", "no_move"},
    ("grid3-p2-fd4", "random"): {"win", "too_many_face_down", "no_move"},
    ("fd15", "greedy"): {"win", "stock_empty"},
    ("fd15", "random"): {"stock_empty"},
    ("grid2-p2-fd1-king", "greedy"): {"win", "too_many_face_down", "no_move"},
    ("grid2-p2-fd1-king", "random"): {"win", "too_many_face_down", "no_move"},
}

DECKS = [reference.deal(SEED, g) for g in range(N_GAMES)]

_engine_cache = {}


def engine_games(setting, policy):
    """Per-game sim.play results (as dicts) for one setting and policy, cached."""
    key = (setting, policy)
    if key not in _engine_cache:
        rules = sim.Rules(**SETTINGS[setting])
        _engine_cache[key] = [
            reference.result_dict(sim.play(DECKS[g], policy, rules, seed=SEED, game=g))
            for g in range(N_GAMES)
        ]
    return _engine_cache[key]


def test_deal_matches_reference():
    for g in range(N_GAMES):
        assert sim.deal(SEED, g) == DECKS[g], f"seed {SEED} game {g}"


@pytest.mark.parametrize(
    "seed, game",
    [(0, 0), (0, 1), (1, 0), (2**64 - 1, 0), (2**63, 12345), (123456789, 2**40 + 3), (2**32 + 7, 2**63 - 1)],
)
def test_deal_matches_reference_extreme_seeds(seed, game):
    deck = sim.deal(seed, game)
    assert isinstance(deck, tuple) and len(deck) == 40
    assert all(type(r) is int for r in deck)
    assert deck == reference.deal(seed, game)


def test_deal_is_a_permutation_and_varies():
    assert all(sorted(d) == sorted(reference.DECK_RANKS) for d in DECKS)
    assert len(set(DECKS)) == N_GAMES
    # Every rank shows up first with roughly its 1-in-10 share.
    firsts = Counter(d[0] for d in DECKS)
    assert all(120 <= firsts[r] <= 280 for r in range(1, 11)), firsts


@pytest.mark.slow  # the reference plays 20,000 games in pure Python
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_engine_matches_reference(setting, policy):
    rules = SETTINGS[setting]
    got = engine_games(setting, policy)
    ends = Counter()
    for g in range(N_GAMES):
        want = reference.play(DECKS[g], policy, rules, seed=SEED, game=g)
        if got[g] != want:
            diff = {k: (want[k], got[g][k]) for k in want if want[k] != got[g][k]}
            turn = next(
                (t for t, (a, b) in enumerate(zip(want["moves"], got[g]["moves"])) if a != b),
                min(len(want["moves"]), len(got[g]["moves"])),
            )
            pytest.fail(
                f"{setting}/{policy} seed {SEED} game {g}: first differing turn {turn}; "
                f"(reference, engine) per field: {diff}"
            )
        ends[want["end"]] += 1
    required = REQUIRED_ENDS.get((setting, policy), set())
    assert required <= set(ends), f"ends seen: {dict(ends)}"


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_play_range_matches_play(setting, policy):
    rules = sim.Rules(**SETTINGS[setting])
    games = engine_games(setting, policy)
    cols = sim.play_range(SEED, 0, N_GAMES, policy=policy, rules=rules)
    assert len(cols.game) == N_GAMES
    assert cols.deck is None
    assert np.array_equal(cols.game, np.arange(N_GAMES))
    want = {
        "won": [g["won"] for g in games],
        "score": [g["score"] if g["won"] else -1 for g in games],
        "cards_played": [g["cards_played"] for g in games],
        "face_down": [g["face_down"] for g in games],
        "piles": [g["piles"] for g in games],
    }
    for name, values in want.items():
        column = getattr(cols, name)
        assert len(column) == N_GAMES, name
        mismatch = np.flatnonzero(column.astype(np.int64) != np.array(values, dtype=np.int64))
        assert len(mismatch) == 0, f"{name}: first mismatch at game {int(mismatch[0]) if len(mismatch) else None}"
    end_names = [sim.END_NAMES[int(c)] for c in cols.end]
    assert end_names == [g["end"] for g in games]


@pytest.mark.parametrize("policy", POLICIES)
def test_play_range_sub_range_and_recorded_deals(policy):
    rules = sim.Rules(**SETTINGS["grid3-p2-fd4"])
    start, stop = 1234, 1334
    cols = sim.play_range(SEED, start, stop, policy=policy, rules=rules, record_deals=True)
    assert np.array_equal(cols.game, np.arange(start, stop))
    assert cols.deck.shape == (stop - start, 40)
    games = engine_games("grid3-p2-fd4", policy)
    for i, g in enumerate(range(start, stop)):
        assert tuple(int(r) for r in cols.deck[i]) == DECKS[g]
        assert sim.END_NAMES[int(cols.end[i])] == games[g]["end"]
        assert int(cols.cards_played[i]) == games[g]["cards_played"]
        assert int(cols.score[i]) == (games[g]["score"] if games[g]["won"] else -1)


def test_play_range_other_seed_against_reference():
    # A different, large seed straight against the reference (not via sim.play).
    seed = 2**64 - 12345
    cols = sim.play_range(seed, 500, 700, policy="random", rules=None, record_deals=True)
    for i, g in enumerate(range(500, 700)):
        deck = reference.deal(seed, g)
        assert tuple(int(r) for r in cols.deck[i]) == deck
        want = reference.play(deck, "random", None, seed=seed, game=g)
        assert sim.END_NAMES[int(cols.end[i])] == want["end"]
        assert int(cols.cards_played[i]) == want["cards_played"]
        assert int(cols.face_down[i]) == want["face_down"]
        assert int(cols.piles[i]) == want["piles"]


def test_empty_range():
    cols = sim.play_range(SEED, 5, 5)
    assert len(cols.game) == 0 and len(cols.won) == 0


def test_random_policy_depends_on_seed_and_game():
    deck = DECKS[0]
    a = sim.play(deck, "random", seed=SEED, game=0).moves
    assert a == tuple(reference.play(deck, "random", seed=SEED, game=0)["moves"])
    b = sim.play(deck, "random", seed=SEED, game=1).moves
    c = sim.play(deck, "random", seed=SEED + 1, game=0).moves
    assert tuple(reference.play(deck, "random", seed=SEED, game=1)["moves"]) == b
    assert tuple(reference.play(deck, "random", seed=SEED + 1, game=0)["moves"]) == c
    assert len({a, b, c}) > 1
