"""sim.solver.sat: the SAT formula of "a win with exactly N cards", held to brute force and the engine."""

import pytest

import sim
from sim import kernels as K
from sim.solver.sat import board_cells, first_cells, win_with
from test_solver import SMALL, brute_force, replay

pytest.importorskip("pysat")


def test_first_cells_are_one_per_orbit_of_the_square():
    assert first_cells(4) == [0, 1, 5]  # a corner, an edge cell, an inner cell
    assert first_cells(3) == [0, 1, 4]
    assert first_cells(2) == [0]


def test_a_frame_line_lands_on_the_board_with_its_first_card_on_the_centre():
    assert board_cells([5, 6, 9], 4) == [K.CENTRE, K.CENTRE + 1, K.CENTRE + K.SIDE]
    assert board_cells([0, 15], 4) == [K.CENTRE, K.CENTRE + 3 * K.SIDE + 3]


def won_by(deck, cells, rules):
    """The cards a line has played when the engine says it won (it may win before its last card)."""
    for n in range(1, len(cells) + 1):
        won, _ = replay(deck, cells[:n], rules)
        if won:
            return n
    return None


@pytest.mark.parametrize("rules,horizon,games", SMALL, ids=lambda v: str(v) if not isinstance(v, sim.Rules) else
                         "-".join(f"{k}{x}" for k, x in v.as_dict().items()))
def test_the_formula_agrees_with_brute_force(rules, horizon, games):
    # For each deal: no win with exactly n cards for every n below the least, a win with the least; every
    # win found is a legal line of the engine that wins by then.
    checked = 0
    for g in range(min(games, 40)):
        deck = sim.deal(11, g)
        outcome, score = brute_force(deck, rules, horizon)
        least = horizon + 1 if outcome == "lost" else K.DECK_SIZE - score
        for n in range(rules.grid ** 2, min(least, horizon) + 1):
            answer, cells = win_with(deck, rules, n)
            assert answer == ("win" if n == least else "none"), (g, n)
            if cells is not None:
                assert won_by(deck, cells, rules) == n, (g, n, cells)
            checked += 1
    assert checked >= 40


@pytest.mark.parametrize("game,cards,answer", [(4, 16, "win"), (7, 16, "none"), (83, 16, "none")])
def test_full_rules_agree_with_the_depth_first_search(game, cards, answer):
    # Seed 0's deal 4 has a 16-card win, deals 7 and 83 none (the solver shows both in a moment).
    deck = sim.deal(0, game)
    r = sim.solve(deck, node_limit=10**7)
    if answer == "win":
        assert r.proven_best and r.score == K.DECK_SIZE - cards
    else:
        assert r.score_bound < K.DECK_SIZE - cards
    got, cells = win_with(deck, sim.Rules(), cards)
    assert got == answer
    if cells is not None:
        assert replay(deck, cells) == (True, K.DECK_SIZE - cards)


def test_a_conflict_budget_can_leave_the_question_open():
    # Deal 83 of seed 0 has no 17-card win, which takes the SAT solver far more than 100 conflicts.
    assert win_with(sim.deal(0, 83), sim.Rules(), 17, conflicts=100) == ("unknown", None)
