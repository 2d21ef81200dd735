"""RULES.md's worked examples A-G, on the engine's sim.Board and on the reference.

Each example is laid out on row 3 of the canonical board: the "before" cards on
cells 22 and 23 and the card placed on cell 24 (the right-hand cell), except G,
which places on the 8's pile at 24, and F, the cross around 24.
A card is written (rank, face_up). Also here: legal-cell shapes under the rule
options, and the ValueErrors for invalid Rules, decks and cells.
"""

import numpy as np
import pytest

import reference  # tests/reference.py (conftest.py puts tests/ on sys.path)
import sim

UP, DOWN = True, False


def run_example(setup, cell, rank, rules=None):
    """Set up `setup` [(cell, rank, face_up)] on both boards, place `rank` on `cell`.

    Returns (engine Placement, engine faces after, reference faces after), where
    faces map each occupied cell to (top rank, face_up); and asserts the two
    placements report the same thing.
    """
    board = sim.Board(rules)
    ref = reference.RefBoard(rules)
    for c, r, up in setup:
        board.put(c, r, face_up=up)
        ref.put(c, r, face_up=up)
    assert cell in board.legal_cells()
    placement = board.place(cell, rank)
    ref_placement = ref.place(cell, rank)

    cells = sorted({c for c, _, _ in setup} | {cell})
    faces = {c: (board.top(c), not board.is_face_down(c)) for c in cells}
    assert faces == ref.faces(), "engine and reference disagree on the faces after"
    assert (placement.row_fired, placement.col_fired, tuple(placement.turned)) == (
        ref_placement.row_fired, ref_placement.col_fired, ref_placement.turned
    ), "engine and reference disagree on what fired"
    assert board.face_down_count == ref.face_down_count
    assert board.piles == ref.piles
    return placement, faces, board


def test_example_a_between_nothing_turns():
    # `3 7` + 5 -> `3 7 5`
    p, faces, _ = run_example([(22, 3, UP), (23, 7, UP)], 24, 5)
    assert faces == {22: (3, UP), 23: (7, UP), 24: (5, UP)}
    assert not p.row_fired
    # The column holds no other card: the column check fires, turning nothing.
    assert p.col_fired
    assert tuple(p.turned) == ()


def test_example_b_strictly_highest_turns_row():
    # `3 7` + 8 -> `[3] [7] 8`
    p, faces, board = run_example([(22, 3, UP), (23, 7, UP)], 24, 8)
    assert faces == {22: (3, DOWN), 23: (7, DOWN), 24: (8, UP)}
    assert p.row_fired
    assert tuple(p.turned) == (22, 23)
    assert board.face_down_count == 2


def test_example_c_equal_to_highest_does_not_fire():
    # `3 7` + 7 -> `3 7 7`
    p, faces, _ = run_example([(22, 3, UP), (23, 7, UP)], 24, 7)
    assert faces == {22: (3, UP), 23: (7, UP), 24: (7, UP)}
    assert not p.row_fired
    assert tuple(p.turned) == ()


def test_example_c_equal_to_lowest_does_not_fire():
    # The mirror of C: equal to the lowest face-up card is not lower either.
    p, faces, _ = run_example([(22, 3, UP), (23, 7, UP)], 24, 3)
    assert faces == {22: (3, UP), 23: (7, UP), 24: (3, UP)}
    assert not p.row_fired


def test_example_d_all_others_face_down_fires():
    # `[3] [7]` + 5 -> `3 7 5`
    p, faces, board = run_example([(22, 3, DOWN), (23, 7, DOWN)], 24, 5)
    assert faces == {22: (3, UP), 23: (7, UP), 24: (5, UP)}
    assert p.row_fired
    assert tuple(p.turned) == (22, 23)
    assert board.face_down_count == 0


def test_example_e_lowest_among_face_up_turns_both_ways():
    # `4 [9]` + 2 -> `[4] 9 2`: the face-down 9 takes no part in the comparison.
    p, faces, board = run_example([(22, 4, UP), (23, 9, DOWN)], 24, 2)
    assert faces == {22: (4, DOWN), 23: (9, UP), 24: (2, UP)}
    assert p.row_fired
    assert tuple(p.turned) == (22, 23)
    assert board.face_down_count == 1


def test_example_e_hidden_rank_is_ignored():
    # Same layout, placed 5: 5 > 4 (the only face-up card) fires even though
    # 5 < 9; a hidden 9 must not block it.
    p, faces, _ = run_example([(22, 4, UP), (23, 9, DOWN)], 24, 5)
    assert faces == {22: (4, DOWN), 23: (9, UP), 24: (5, UP)}
    assert p.row_fired


def test_example_f_row_and_column_at_once():
    # 6 above (17), 2 left (23), 9 below (31) the empty centre; 10 placed on 24.
    p, faces, board = run_example([(17, 6, UP), (23, 2, UP), (31, 9, UP)], 24, 10)
    assert faces == {17: (6, DOWN), 23: (2, DOWN), 24: (10, UP), 31: (9, DOWN)}
    assert p.row_fired and p.col_fired
    assert tuple(p.turned) == (17, 23, 31)
    assert board.face_down_count == 3


def test_example_f_column_between_does_not_fire():
    # Same cross, placed 7: highest in the row (over 2), between 6 and 9 in the column.
    p, faces, _ = run_example([(17, 6, UP), (23, 2, UP), (31, 9, UP)], 24, 7)
    assert faces == {17: (6, UP), 23: (2, DOWN), 24: (7, UP), 31: (9, UP)}
    assert p.row_fired and not p.col_fired
    assert tuple(p.turned) == (23,)


def test_example_g_covered_face_down_card():
    # `5 [8]`, 6 placed on the 8's pile -> `[5] 6`.
    p, faces, board = run_example([(23, 5, UP), (24, 8, DOWN)], 24, 6)
    assert faces == {23: (5, DOWN), 24: (6, UP)}
    assert p.row_fired
    assert tuple(p.turned) == (23,)
    assert board.height(24) == 2
    assert board.face_down_count == 1  # the covered 8 no longer counts


def test_placed_card_never_turned_by_its_own_checks():
    # The placed card fires both checks but stays face up.
    p, faces, _ = run_example([(17, 1, UP), (23, 1, UP)], 24, 9)
    assert faces[24] == (9, UP)
    assert 24 not in p.turned


def test_other_rows_and_columns_untouched():
    # Cards off the placed card's row and column never turn.
    p, faces, _ = run_example([(23, 3, UP), (16, 1, UP), (17, 1, UP)], 24, 9)
    assert faces[16] == (1, UP)
    assert faces[17] == (1, DOWN)
    assert faces[23] == (3, DOWN)


# --- legal cells under the rule options ---------------------------------------


def legal(setup, rules=None):
    board = sim.Board(rules)
    ref = reference.RefBoard(rules)
    for c, r, up in setup:
        board.put(c, r, face_up=up)
        ref.put(c, r, face_up=up)
    got = tuple(board.legal_cells())
    assert got == tuple(ref.legal_cells())
    return got


def test_first_card_goes_on_the_centre():
    assert legal([]) == (24,)
    assert legal([], sim.Rules(grid=2, adjacency="king", max_pile=1)) == (24,)


def test_legal_cells_orthogonal_and_king():
    assert legal([(24, 5, UP)]) == (17, 23, 24, 25, 31)
    assert legal([(24, 5, UP)], sim.Rules(adjacency="king")) == (16, 17, 18, 23, 24, 25, 30, 31, 32)


def test_legal_cells_include_face_down_piles_and_exclude_full_ones():
    setup = [(24, 5, DOWN)] + [(25, r, UP) for r in (1, 2, 3, 4)]
    cells = legal(setup)
    assert 24 in cells           # face-down top, pile not full
    assert 25 not in cells       # pile of 4 is full under max_pile=4
    assert 25 in legal(setup, sim.Rules(max_pile=5))
    assert 24 not in legal([(24, 5, UP)], sim.Rules(max_pile=1))


def test_legal_cells_bounding_box_limit():
    row = [(22, 1, UP), (23, 2, UP), (24, 3, UP), (25, 4, UP)]
    cells = legal(row)
    assert 21 not in cells and 26 not in cells       # would make 5 columns
    assert {15, 16, 17, 18, 29, 30, 31, 32} <= set(cells)
    # grid=2: two piles side by side may only grow up or down.
    assert legal([(24, 1, UP), (25, 2, UP)], sim.Rules(grid=2)) == (17, 18, 24, 25, 31, 32)
    # king adjacency: diagonal neighbours open, but only inside the box limit.
    diag = [(16, 1, UP), (24, 2, UP)]
    assert legal(diag, sim.Rules(grid=2, adjacency="king")) == (16, 17, 23, 24)
    assert legal(diag, sim.Rules(grid=2)) == (16, 17, 23, 24)
    box = legal(diag, sim.Rules(grid=3, adjacency="king"))
    assert 8 in box and 32 in box          # 3x3 boxes
    assert 40 not in box                   # rows 2..5 would be 4 rows
    assert 10 in box and 30 in box         # diagonal, 3x3
    assert 10 not in legal(diag, sim.Rules(grid=3))  # not orthogonally adjacent


def test_place_on_illegal_cell_raises():
    board = sim.Board()
    with pytest.raises(ValueError):
        board.place(25, 3)      # empty board: only 24 is legal
    board.place(24, 3)
    with pytest.raises(ValueError):
        board.place(26, 4)      # not adjacent to any pile
    full = sim.Board(sim.Rules(max_pile=1))
    full.place(24, 3)
    with pytest.raises(ValueError):
        full.place(24, 4)       # pile already holds max_pile cards


# --- invalid inputs -----------------------------------------------------------


@pytest.mark.parametrize(
    "option, value",
    [
        ("adjacency", "diagonal"),
        ("adjacency", "Orthogonal"),
        ("max_pile", 0),
        ("max_pile", 9),
        ("max_face_down", -1),
        ("max_face_down", 16),
        ("grid", 1),
        ("grid", 5),
        ("max_pile", 2.5),
    ],
)
def test_invalid_rules_raise_naming_the_option(option, value):
    with pytest.raises(ValueError) as exc:
        sim.Rules(**{option: value})
    message = str(exc.value)
    assert option in message
    if option == "adjacency":
        assert "orthogonal" in message and "king" in message
    else:
        lo, hi = {"max_pile": (1, 8), "max_face_down": (0, 15), "grid": (2, 4)}[option]
        assert str(lo) in message and str(hi) in message


@pytest.mark.parametrize(
    "rules",
    [
        dict(adjacency="king"),
        dict(max_pile=1),
        dict(max_pile=8),
        dict(max_face_down=0),
        dict(max_face_down=15),
        dict(grid=2),
        dict(grid=3),
    ],
)
def test_valid_rules_accepted(rules):
    r = sim.Rules(**rules)
    for k, v in rules.items():
        assert getattr(r, k) == v


def test_rules_frozen():
    r = sim.Rules()
    with pytest.raises(Exception):
        r.grid = 3  # type: ignore[misc]


GOOD = list(reference.deal(0, 0))


@pytest.mark.parametrize(
    "deck, words",
    [
        (GOOD[:39], ["40"]),
        (GOOD + [1], ["40"]),
        ([], ["40"]),
        ([0] + GOOD[1:], ["1..10"]),
        ([11] + GOOD[1:], ["1..10"]),
        ([GOOD[1]] + GOOD[1:], ["four"]),  # one rank 5 times, another 3 times
        ([1] * 40, ["four"]),
    ],
)
def test_invalid_decks_raise(deck, words):
    with pytest.raises(ValueError) as exc:
        sim.play(deck)
    message = str(exc.value)
    for w in words:
        assert w in message
    # The reference agrees the deck is invalid.
    with pytest.raises(ValueError):
        reference.play(deck)


def test_valid_deck_as_tuple_list_and_any_order():
    a = sim.play(tuple(GOOD))
    b = sim.play(list(GOOD))
    assert a == b
    assert sim.play(sorted(GOOD)).cards_played >= 1


@pytest.mark.parametrize("bad, words", [(11, ["row 2:", "card 4 (index 3) is 11"]),
                                        (0, ["row 2:", "card 4 (index 3) is 0"])])
def test_invalid_decks_array_names_the_row_of_a_bad_rank(bad, words):
    decks = np.array([GOOD, GOOD, GOOD])
    decks[2, 3] = bad
    with pytest.raises(ValueError) as exc:
        sim.play_decks(decks)
    for w in words:
        assert w in str(exc.value)


def test_invalid_decks_array_of_non_integers_is_refused():
    # sim.play refuses a float rank; an array of them must not be cut to integers (5.9 played as a 5).
    floats = np.array([GOOD, GOOD], dtype=np.float64)
    floats[1, np.flatnonzero(floats[1] == 5)[0]] = 5.9
    with pytest.raises(ValueError, match=r"row 0: card 1 \(index 0\) is .*ranks are integers 1\.\.10"):
        sim.play_decks(floats)
    with pytest.raises(ValueError, match="row 0: card 1"):
        sim.play_decks(np.array([[str(r) for r in GOOD]]))
    assert sim.play_decks(np.array([GOOD], dtype=np.int64)).cards_played[0] == sim.play(GOOD).cards_played
