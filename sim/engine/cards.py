"""Decks: the seeded deal (SplitMix64 Fisher-Yates, `sim.kernels.deal_batch`) and checks of given decks.

The kernels are imported by the functions that use them, not here: a run store's checks (`check_seed`,
`MAX_GAME`), which `sim report` and `sim ls` make, and the report's figures (`DECK_SIZE`) load no numba.
"""

import numpy as np

from sim.errors import UsageError

MAX_GAME = 2**63 - 1
"""Largest game index (the compiled loops count games in int64)."""
DECK_SIZE = 40
"""Cards in a deck, `sim.kernels.DECK_SIZE` without loading numba (tests/test_layers.py holds the two equal):
the report's figures end their cards-played axis there."""


def check_seed(seed) -> int:
    """The seed as an int; UsageError (a ValueError naming the setting "seed") unless it is an integer in
    0..2**64-1."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise UsageError(f"seed must be an integer in 0..2**64-1, not {seed!r}", "seed")
    return int(seed)


def check_game(game) -> int:
    """The game index as an int; UsageError (a ValueError naming the setting "game") unless it is an integer in
    0..2**63-1."""
    if isinstance(game, bool) or not isinstance(game, (int, np.integer)) or not 0 <= game <= MAX_GAME:
        raise UsageError(f"game must be an integer in 0..2**63-1, not {game!r}", "game")
    return int(game)


def deal(seed: int, game: int) -> tuple[int, ...]:
    """The deck of game `game` of seed `seed` (ranks in draw order)."""
    from sim import kernels as K

    seed, game = check_seed(seed), check_game(game)
    decks = np.empty((1, K.DECK_SIZE), np.uint8)
    K.deal_batch(np.uint64(seed), np.int64(game), decks)
    return tuple(int(r) for r in decks[0])


def deal_range(seed: int, start: int, stop: int) -> np.ndarray:
    """The decks of games start..stop-1 of `seed`, as an (n, 40) uint8 array."""
    from sim import kernels as K

    decks = np.empty((stop - start, K.DECK_SIZE), np.uint8)
    K.deal_batch(np.uint64(check_seed(seed)), np.int64(start), decks)
    return decks


def validate_deck(deck) -> np.ndarray:
    """The deck as a uint8 array; ValueError saying what is wrong otherwise."""
    from sim import kernels as K

    if isinstance(deck, (str, bytes)):  # its characters are not its ranks ("5 10 5 ..." has 83 of them)
        raise ValueError("a deck is a sequence of 40 ranks, not text: [int(r) for r in text.split()] reads "
                         "ranks written out")
    try:
        values = list(deck)
    except TypeError:
        raise ValueError(f"a deck must be a sequence of 40 ranks, not {type(deck).__name__}") from None
    if len(values) != K.DECK_SIZE:
        raise ValueError(f"a deck has 40 cards, this one has {len(values)}")
    ranks = []
    for pos, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= K.RANKS:
            raise ValueError(f"card {pos + 1} (index {pos}) is {v!r}; ranks are integers 1..10")
        ranks.append(int(v))
    counts = np.bincount(ranks, minlength=K.RANKS + 1)[1:]
    wrong = [f"{r} x{c}" for r, c in enumerate(counts, start=1) if c != K.COPIES]
    if wrong:
        raise ValueError(f"a deck has four cards of each rank 1..10; this one has {', '.join(wrong)}")
    return np.array(ranks, dtype=np.uint8)


def _check_row(decks: np.ndarray, row: int) -> None:
    """validate_deck on one row of `decks`, its error naming the row."""
    try:
        validate_deck(decks[row].tolist())
    except ValueError as e:
        raise ValueError(f"row {row}: {e}") from None


def validate_decks(decks: np.ndarray) -> np.ndarray:
    """Check an (n, 40) array of decks at once; ValueError naming the first bad row.

    Ranks are integers, as for `validate_deck`: an array of floats, bools or
    text is checked row by row as it holds them, so that a 5.9 is refused
    rather than played as a 5.
    """
    from sim import kernels as K

    decks = np.asarray(decks)
    if decks.ndim != 2 or decks.shape[1] != K.DECK_SIZE:
        raise ValueError(f"decks must be an (n, 40) array, not shape {decks.shape}")
    if decks.dtype.kind not in "iu":
        for row in range(decks.shape[0]):
            _check_row(decks, row)
    bad_rank = (decks < 1) | (decks > K.RANKS)
    if bad_rank.any():
        _check_row(decks, int(np.argmax(bad_rank.any(axis=1))))
    # Every rank is 1..10 by now: one bincount over (row, rank) pairs counts them all in one pass.
    pairs = np.arange(decks.shape[0], dtype=np.int64)[:, None] * (K.RANKS + 1) + decks
    counts = np.bincount(pairs.ravel(), minlength=decks.shape[0] * (K.RANKS + 1)).reshape(-1, K.RANKS + 1)
    bad = (counts[:, 1:] != K.COPIES).any(axis=1)
    if bad.any():
        _check_row(decks, int(np.argmax(bad)))
    return decks.astype(np.uint8)
