"""Deals are part of the project's contract: game i of seed S is the same deck forever.

The decks below were produced by the deal algorithm `splitmix64-fisher-yates-v1`
(README, "Deals"). A change that alters them changes every published figure;
it must bump sim.kernels.DEAL_ALGORITHM and these pins together.
"""

import numpy as np
import pytest

import sim
from sim import kernels as K

SEED0_FIRST_DECKS = [
    [10, 6, 1, 1, 7, 2, 9, 2, 9, 5, 1, 5, 7, 5, 9, 5, 2, 3, 4, 8, 6, 8, 7, 9, 1, 3, 4, 8, 2, 7, 6, 3, 3, 4, 4, 6, 10, 10, 8, 10],
    [9, 10, 5, 9, 4, 5, 5, 1, 10, 6, 1, 8, 4, 4, 1, 6, 3, 10, 6, 3, 7, 2, 10, 5, 2, 2, 7, 1, 8, 6, 9, 3, 9, 4, 7, 8, 2, 8, 7, 3],
    [3, 8, 10, 7, 4, 6, 1, 4, 2, 2, 7, 10, 8, 9, 10, 1, 8, 2, 5, 8, 9, 7, 4, 9, 10, 3, 9, 1, 5, 7, 5, 6, 5, 6, 1, 4, 2, 6, 3, 3],
]


def test_first_three_decks_of_seed_0_are_pinned():
    assert K.DEAL_ALGORITHM == "splitmix64-fisher-yates-v1"
    for game, deck in enumerate(SEED0_FIRST_DECKS):
        assert list(sim.deal(0, game)) == deck


def test_recorded_decks_of_a_batch_equal_deal():
    cols = sim.play_range(0, 0, 3, record_deals=True)
    assert cols.deck.tolist() == SEED0_FIRST_DECKS


def test_deals_are_shuffled_decks_and_differ():
    decks = np.array([sim.deal(11, g) for g in range(500)])
    assert all(sorted(d) == sorted(SEED0_FIRST_DECKS[0]) for d in decks.tolist())
    assert len({tuple(d) for d in decks.tolist()}) == 500
    # every rank is about equally likely in every position (500 decks, 50 expected per cell)
    counts = np.stack([(decks == r).sum(axis=0) for r in range(1, 11)])
    assert counts.min() > 20 and counts.max() < 90


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5, "3"])
def test_bad_seed_is_rejected(bad):
    with pytest.raises(ValueError, match="seed"):
        sim.deal(bad, 0)
