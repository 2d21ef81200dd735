"""sim.solver.sat: the SAT formula of "a win with exactly N cards", held to brute force and the engine."""

import json

import numpy as np
import pytest

import sim
from sim import kernels as K
from sim.solver import sat
from sim.solver import solver as solver_module
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
            for count_piles_on in (True, False):  # with the implied count and without it
                answer, cells = win_with(deck, rules, n, count_piles_on=count_piles_on)
                assert answer == ("win" if n == least else "none"), (g, n, count_piles_on)
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
    # The proofs of "none" also without the implied count (finding deal 4's win without it is slow).
    for count_piles_on in (True, False) if answer == "none" else (True,):
        got, cells = win_with(deck, sim.Rules(), cards, count_piles_on=count_piles_on)
        assert got == answer, count_piles_on
        if cells is not None:
            assert replay(deck, cells) == (True, K.DECK_SIZE - cards)


def test_a_conflict_budget_can_leave_the_question_open():
    # Deal 83 of seed 0 has no 17-card win, which takes the SAT solver far more than 100 conflicts.
    assert win_with(sim.deal(0, 83), sim.Rules(), 17, conflicts=100) == ("unknown", None)


def test_the_count_of_cards_on_piles_makes_a_proof_with_slack_short():
    # Deal 83's "no 17-card win" (one card of slack): about 11,000 conflicts with the implied count,
    # not found in 50,000 without it.
    deck, rules = sim.deal(0, 83), sim.Rules()
    assert win_with(deck, rules, 17, conflicts=50_000) == ("none", None)
    assert win_with(deck, rules, 17, conflicts=50_000, count_piles_on=False) == ("unknown", None)


@pytest.mark.parametrize("rules,horizon,games", SMALL[:3], ids=lambda v: str(v) if not isinstance(v, sim.Rules) else
                         "-".join(f"{k}{x}" for k, x in v.as_dict().items()))
def test_solve_with_sat_proves_what_brute_force_says(rules, horizon, games, monkeypatch):
    # A node limit too small for the depth-first search to settle these deals (grid 2, piles of 3 or 4
    # cards: wins with several card counts); the SAT questions settle more. Asked at every slack here.
    monkeypatch.setattr(sat, "SLACK", 0)
    monkeypatch.setattr(solver_module, "SAT_AFTER", 10)
    settled = settled_without = 0
    for g in range(min(games, 30)):
        deck = sim.deal(11, g)
        outcome, score = brute_force(deck, rules, horizon)
        without = sim.solve(deck, rules, horizon=horizon, node_limit=20, split_after=0, sat_conflicts=0)
        r = sim.solve(deck, rules, horizon=horizon, node_limit=20, split_after=0, sat_conflicts=10**6)
        if r.outcome == "won":
            assert outcome == "won" and r.score <= score and r.score_bound >= score, g
            assert replay(deck, r.moves, rules) == (True, r.score)
            settled += r.proven_best
            assert not r.proven_best or r.score == score, g
        settled_without += without.proven_best
    assert settled > settled_without


@pytest.mark.parametrize("rules,horizon,games", SMALL[:3], ids=lambda v: str(v) if not isinstance(v, sim.Rules) else
                         "-".join(f"{k}{x}" for k, x in v.as_dict().items()))
def test_the_search_goes_on_after_the_sat_questions(rules, horizon, games, monkeypatch):
    # Questions asked after a few nodes, then the search resumes (skipping the counts they ruled out):
    # every deal settled, at the brute force's score.
    monkeypatch.setattr(sat, "SLACK", 0)
    monkeypatch.setattr(solver_module, "SAT_AFTER", 30)
    for g in range(min(games, 30)):
        deck = sim.deal(11, g)
        outcome, score = brute_force(deck, rules, horizon)
        r = sim.solve(deck, rules, horizon=horizon, split_after=0, sat_conflicts=10**6)
        assert (r.outcome, r.score) == (outcome, score), g
        assert r.outcome != "won" or (r.proven_best and replay(deck, r.moves, rules) == (True, r.score))


@pytest.mark.parametrize("rules,horizon,games", SMALL, ids=lambda v: str(v) if not isinstance(v, sim.Rules) else
                         "-".join(f"{k}{x}" for k, x in v.as_dict().items()))
def test_with_no_win_known_the_questions_from_the_least_count_up_settle_every_deal(rules, horizon, games,
                                                                                     monkeypatch):
    # Questions asked before any node (only greedy's game has been played), the search then stopped at 20
    # nodes, too few for it to settle many deals. With no win known, the questions go from the least card
    # count up to the most a line can place (the horizon, or every pile full): the first win is the best,
    # and none at all is a loss.
    monkeypatch.setattr(sat, "SLACK", 0)
    monkeypatch.setattr(solver_module, "SAT_AFTER", 0)
    outcomes = {"won": 0, "lost": 0}
    unsettled_without = 0
    for g in range(min(games, 40)):
        deck = sim.deal(11, g)
        outcome, score = brute_force(deck, rules, horizon)
        r = sim.solve(deck, rules, horizon=horizon, node_limit=20, split_after=0, sat_conflicts=10**6)
        assert (r.outcome, r.score) == (outcome, score), g
        assert r.outcome != "won" or (r.proven_best and replay(deck, r.moves, rules) == (True, r.score)), g
        outcomes[outcome] += 1
        without = sim.solve(deck, rules, horizon=horizon, node_limit=20, split_after=0, sat_conflicts=0)
        unsettled_without += without.outcome == "unresolved" or (without.outcome == "won" and not without.proven_best)
    assert unsettled_without, outcomes  # the questions settled deals the search left open
    assert outcomes["lost"] or rules.grid == 2, outcomes  # every 3x3 setting here has lost deals among these


def test_a_deal_of_single_card_piles_the_search_cannot_settle_is_proven_lost_by_one_question():
    # With max_pile=1 every win has 16 cards, one per pile: the one count SAT is asked about (slack or not).
    # Seed 1's deal 0 has none; the search alone leaves it open after 3 M nodes (and after 100 M).
    rules = sim.Rules(max_pile=1)
    assert sat.most_cards(rules) == 16 and sat.most_cards(sim.Rules()) == 40
    assert sat.most_cards(sim.Rules(grid=3, max_pile=2), horizon=12) == 12
    deck = sim.deal(1, 0)
    assert sim.solve(deck, rules, node_limit=3_000_000, sat_conflicts=0).outcome == "unresolved"
    r = sim.solve(deck, rules, node_limit=3_000_000)
    assert r.outcome == "lost" and r.nodes <= 3_000_000
    won = sim.solve(sim.deal(1, 1), rules, node_limit=3_000_000)  # and the next deal's win, found and replayed
    assert won.outcome == "won" and won.proven_best and replay(sim.deal(1, 1), won.moves, rules) == (True, 24)


def test_a_split_solve_s_bound_goes_up_through_the_counts_sat_ruled_out():
    # The serial solve left: a 19-card win, no win with 16 cards, SAT: none with 18. Once the split
    # solve's level proves none with 17 either, the 19-card win is the best.
    from sim.solver.solver import SolveResult, SplitSolve

    first = SolveResult("won", 21, False, 10, 0.1, tuple(range(19)), 23, (18,))
    plan = SplitSolve(np.array(sim.deal(0, 134), np.uint8), sim.Rules(), first, first_win=False, node_limit=None,
                      horizon=40, use_tt=True, use_sym=True, started=0.0, deadline=None)
    assert (plan.level, plan.proven_floor) == (18, 17) and not plan.settled()
    again = SplitSolve(np.array(sim.deal(0, 134), np.uint8), sim.Rules(), first, first_win=False, node_limit=None,
                       horizon=40, use_tt=True, use_sym=True, started=0.0, deadline=None)
    again.restore(json.loads(json.dumps(plan.checkpoint())))
    assert again.ruled_out == {18}
    plan._level_finished()  # as the last subtree of level 18 reports no win
    assert plan.proven_floor == 19 and plan.settled()
    r = plan.result()
    assert r.proven_best and r.score == 21 and r.score_bound == 21


def test_sat_conflicts_must_be_a_whole_number():
    with pytest.raises(ValueError, match="sat_conflicts"):
        sim.solve(sim.deal(0, 1), sat_conflicts=-1)



def test_full_deals_get_the_same_best_score_with_and_without_sat(monkeypatch):
    # Seed 0's deals whose best score (23) the search alone proves in 1 to 3.3 M nodes; questions asked
    # after 100,000 nodes here: the same proven score, and every line replays to it.
    monkeypatch.setattr(solver_module, "SAT_AFTER", 100_000)
    changed = 0
    for g in (44, 63, 495, 747, 204, 306, 677, 378, 764, 278):
        deck = sim.deal(0, g)
        alone = sim.solve(deck, sat_conflicts=0)
        with_sat = sim.solve(deck, sat_conflicts=100_000)
        assert alone.proven_best and with_sat.proven_best, g
        assert (with_sat.outcome, with_sat.score) == (alone.outcome, alone.score) == ("won", 23), g
        assert replay(deck, with_sat.moves) == (True, 23)
        changed += with_sat.nodes != alone.nodes  # the answers changed the search's course
    assert changed >= 3


def test_a_line_is_a_win_only_when_every_placement_is_legal_and_the_game_never_lost():
    # won_after checks what a SAT model's line claims: a winning line of the default rules loses at once
    # under max_face_down=0, and a cell off the legal ones is no win either.
    deck = sim.deal(0, 0)
    line = sim.solve(deck, first_win=True, sat_conflicts=0).moves
    assert sat.won_after(np.array(deck), sim.Rules(), line) == len(line)
    assert sat.won_after(np.array(deck), sim.Rules(max_face_down=0), line) == 0
    assert sat.won_after(np.array(deck), sim.Rules(), (0,) + tuple(line[1:])) == 0  # cell 0 is not legal first
