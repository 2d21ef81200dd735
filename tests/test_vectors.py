"""RULES.md's greedy test vectors (tests/data/greedy_games.jsonl), whole games.

Each game runs through the engine (sim.play, sim.play_decks, and a replay on
sim.Board) and through tests/reference.py; moves and every outcome field must
match the vector exactly.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import reference  # tests/reference.py (conftest.py puts tests/ on sys.path)
import sim

VECTORS = Path(__file__).resolve().parent / "data" / "greedy_games.jsonl"
GAMES = [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]
FIELDS = ("won", "score", "cards_played", "face_down", "piles", "end", "moves")


def expected(game):
    return {k: game[k] for k in FIELDS}


def test_vectors_cover_every_kind_of_end():
    ends = {(g["end"], g["score"]) for g in GAMES}
    assert ("win", 0) in ends                       # a win on the last card
    assert any(e == "win" and s and s > 0 for e, s in ends)
    assert any(e == "too_many_face_down" for e, _ in ends)
    assert any(e == "stock_empty" for e, _ in ends)
    for g in GAMES:
        assert sorted(g["deck"]) == sorted(reference.DECK_RANKS)


@pytest.mark.parametrize("game", GAMES, ids=[f"{g['end']}-{i}" for i, g in enumerate(GAMES)])
def test_engine_plays_vector(game):
    result = sim.play(game["deck"], policy="greedy")
    assert isinstance(result.moves, tuple)
    assert reference.result_dict(result) == expected(game)
    assert result.won is game["won"]
    assert result.score == game["score"]  # None (not 0, not -1) for a lost game


@pytest.mark.parametrize("game", GAMES, ids=[f"{g['end']}-{i}" for i, g in enumerate(GAMES)])
def test_engine_with_explicit_default_rules(game):
    result = sim.play(tuple(game["deck"]), "greedy", sim.Rules(), seed=123, game=9)
    assert reference.result_dict(result) == expected(game)


@pytest.mark.parametrize("game", GAMES, ids=[f"{g['end']}-{i}" for i, g in enumerate(GAMES)])
def test_reference_plays_vector(game):
    assert reference.play(game["deck"], policy="greedy") == expected(game)


@pytest.mark.parametrize("game", GAMES, ids=[f"{g['end']}-{i}" for i, g in enumerate(GAMES)])
def test_vector_replays_on_board(game):
    """Each vector move is legal and greedy's choice on sim.Board, turn by turn."""
    board = sim.Board()
    ref = reference.RefBoard()
    for t, cell in enumerate(game["moves"]):
        rank = game["deck"][t]
        legal = tuple(board.legal_cells())
        assert legal == tuple(ref.legal_cells()), f"turn {t}"
        assert cell in legal, f"turn {t}"
        assert reference.greedy_choice(ref, rank) == cell, f"turn {t}"
        board.place(cell, rank)
        ref.place(cell, rank)
    assert board.piles == game["piles"]
    assert board.face_down_count == game["face_down"]


def test_play_decks_matches_vectors():
    decks = np.array([g["deck"] for g in GAMES], dtype=np.uint8)
    cols = sim.play_decks(decks, policy="greedy")
    for i, g in enumerate(GAMES):
        assert bool(cols.won[i]) == g["won"]
        assert int(cols.score[i]) == (g["score"] if g["won"] else -1)
        assert int(cols.cards_played[i]) == g["cards_played"]
        assert int(cols.face_down[i]) == g["face_down"]
        assert int(cols.piles[i]) == g["piles"]
        assert sim.END_NAMES[int(cols.end[i])] == g["end"]


def test_the_rules_name_the_vectors_where_they_are():
    # RULES.md is a copy of the rules page, which keeps its vectors in vectors/; here they are in tests/data/.
    root = Path(__file__).resolve().parent.parent
    named = re.findall(r"`([\w./-]+\.jsonl)`", (root / "RULES.md").read_text())
    assert named and all((root / path).is_file() for path in named), named
    assert VECTORS.relative_to(root).as_posix() in named
