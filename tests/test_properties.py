"""Hypothesis property tests: random decks (permutations of the 40 cards),
random Rules, both policies.

Every game is replayed on sim.Board (deck[t] placed on moves[t]); the replay
checks each move was legal at its turn, the pile and bounding-box limits, that
the game did not go on past an end, and that the final position and the end
reason agree with the result.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference  # tests/reference.py (conftest.py puts tests/ on sys.path)
import sim

SETTINGS = settings(
    max_examples=200,
    deadline=None,  # the first call may load compiled code
    suppress_health_check=[HealthCheck.too_slow],
)

decks = st.permutations(list(reference.DECK_RANKS)).map(tuple)
rules_st = st.builds(
    sim.Rules,
    adjacency=st.sampled_from(["orthogonal", "king"]),
    max_pile=st.integers(1, 8),
    max_face_down=st.integers(0, 15),
    grid=st.integers(2, 4),
)
policies = st.sampled_from(["greedy", "random"])
seeds = st.integers(0, 2**64 - 1)
game_ids = st.integers(0, 2**40)


def bounding_box(board):
    cells = [c for c in range(49) if board.height(c) > 0]
    rows = [c // 7 for c in cells]
    cols = [c % 7 for c in cells]
    return max(rows) - min(rows) + 1, max(cols) - min(cols) + 1


def replay(deck, result, rules):
    """Replay `result.moves` on a sim.Board, checking every turn. Returns the board."""
    board = sim.Board(rules)
    n = len(result.moves)
    for t, cell in enumerate(result.moves):
        legal = board.legal_cells()
        assert list(legal) == sorted(set(legal)), f"turn {t}: legal cells not ascending/unique"
        assert cell in legal, f"turn {t}: move {cell} not among legal cells {legal}"
        board.place(cell, deck[t])
        assert board.top(cell) == deck[t] and not board.is_face_down(cell), f"turn {t}"
        assert max(board.height(c) for c in range(49)) <= rules.max_pile, f"turn {t}"
        rows, cols = bounding_box(board)
        assert rows <= rules.grid and cols <= rules.grid, f"turn {t}: box {rows}x{cols}"
        if t < n - 1:  # the game must not have ended at this turn
            fd = board.face_down_count
            assert fd <= rules.max_face_down, f"turn {t}: should have ended too_many_face_down"
            assert not (board.piles == rules.grid**2 and fd == 0), f"turn {t}: should have ended win"
    return board


@SETTINGS
@given(deck=decks, rules=rules_st, policy=policies, seed=seeds, game=game_ids)
def test_game_invariants_and_replay(deck, rules, policy, seed, game):
    result = sim.play(deck, policy, rules, seed=seed, game=game)

    assert result.end in ("win", "too_many_face_down", "stock_empty", "no_move")
    assert result.moves[:1] == (24,)
    assert 1 <= result.cards_played <= 40
    assert result.cards_played == len(result.moves)
    assert all(0 <= m < 49 for m in result.moves)

    if result.won:
        assert result.end == "win"
        assert result.piles == rules.grid**2
        assert result.face_down == 0
        assert result.score == 40 - result.cards_played
    else:
        assert result.end != "win"
        assert result.score is None

    if result.end == "too_many_face_down":
        assert result.face_down > rules.max_face_down
    elif result.end == "stock_empty":
        assert result.cards_played == 40
        assert result.face_down <= rules.max_face_down
    elif result.end == "no_move":
        # Only a full grid of full piles leaves no legal cell.
        assert result.cards_played == rules.grid**2 * rules.max_pile < 40
        assert result.piles == rules.grid**2
        assert 0 < result.face_down <= rules.max_face_down

    board = replay(deck, result, rules)
    assert board.piles == result.piles
    assert board.face_down_count == result.face_down
    if result.end == "no_move":
        assert tuple(board.legal_cells()) == ()


@SETTINGS
@given(deck=decks, rules=rules_st, policy=policies, seed=seeds, game=game_ids)
def test_engine_agrees_with_reference(deck, rules, policy, seed, game):
    got = reference.result_dict(sim.play(deck, policy, rules, seed=seed, game=game))
    want = reference.play(deck, policy, rules, seed=seed, game=game)
    assert got == want


@SETTINGS
@given(deck=decks, rules=rules_st)
def test_greedy_is_deterministic_and_ignores_seed(deck, rules):
    a = sim.play(deck, "greedy", rules, seed=1, game=2)
    b = sim.play(deck, "greedy", rules, seed=99, game=0)
    assert a == b


@settings(max_examples=100, deadline=None)
@given(rules=rules_st, policy=policies, seed=seeds, start=st.integers(0, 2**40))
def test_play_range_equals_per_game_play(rules, policy, seed, start):
    stop = start + 5
    cols = sim.play_range(seed, start, stop, policy=policy, rules=rules, record_deals=True)
    for i, g in enumerate(range(start, stop)):
        deck = sim.deal(seed, g)
        assert tuple(int(r) for r in cols.deck[i]) == deck
        r = sim.play(deck, policy, rules, seed=seed, game=g)
        assert int(cols.game[i]) == g
        assert bool(cols.won[i]) == r.won
        assert int(cols.score[i]) == (-1 if r.score is None else r.score)
        assert int(cols.cards_played[i]) == r.cards_played
        assert int(cols.face_down[i]) == r.face_down
        assert int(cols.piles[i]) == r.piles
        assert sim.END_NAMES[int(cols.end[i])] == r.end


@SETTINGS
@given(deck=decks, rules=rules_st, data=st.data())
def test_board_place_matches_reference_on_random_positions(deck, rules, data):
    """Random legal move sequences (not a policy's): every Placement and the
    faces after each turn agree with the reference board."""
    board = sim.Board(rules)
    ref = reference.RefBoard(rules)
    for t, rank in enumerate(deck):
        legal = tuple(board.legal_cells())
        assert legal == tuple(ref.legal_cells()), f"turn {t}"
        if not legal:
            break
        cell = data.draw(st.sampled_from(legal), label=f"cell {t}")
        p = board.place(cell, rank)
        q = ref.place(cell, rank)
        assert (p.row_fired, p.col_fired, tuple(p.turned)) == (q.row_fired, q.col_fired, q.turned), f"turn {t}"
        assert board.face_down_count == ref.face_down_count, f"turn {t}"
        assert board.piles == ref.piles, f"turn {t}"
        for c in p.turned + (cell,):
            assert board.top(c) == ref.top(c), f"turn {t} cell {c}"
            assert board.is_face_down(c) == ref.is_face_down(c), f"turn {t} cell {c}"
    for c in range(49):
        assert board.height(c) == ref.height(c), f"cell {c}"
        assert board.top(c) == ref.top(c), f"cell {c}"
        assert board.is_face_down(c) == ref.is_face_down(c), f"cell {c}"
