"""The compiled game loop of each policy, and the batches of games that run it.

Every game runs `sim.kernels.play_turns`, the one turn loop, with the
policy's ``choose`` bound in. numba cannot cache a compiled function that
takes another one as an argument, nor a closure; so for each policy the
entry points below (`_seeded_batch`, `_deck_batch`, `_one_game`) are
copied with the policy's ``choose`` as the global ``CHOOSE`` and a name of
their own (``_seeded_batch__greedy``), which numba caches on disk like any
module-level function. A run thus compiles only the policy it plays, and
only the entry points it calls. Compiled plugins get the same copies,
uncached (their source is not ours to track), compiled once per process.
"""

import functools
import importlib
import types
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim import kernels as K

CHOOSE = None
"""Placeholder: each copy of the templates below binds its policy's choose here."""


@njit(cache=True, inline="always")
def play_game(choose, deck, params, rules, rng, state, moves, fired):
    """Play one game from `deck` with `choose`: (end code, cards played); the final position stays in `state`."""
    K.reset(state)
    return K.play_turns(choose, deck, state, rules, params, rng, moves, fired)


@njit(cache=True, inline="always")
def _play_into(choose, i, deck, params, rules, seed, game, state, moves, fired, rng,
               end, cards_played, face_down, piles, score, illegal):
    """Play game `game` of `seed` from `deck` and write its row i of the columns."""
    # Uncounted views: passing arrays to the (inlined) kernels of every turn
    # would otherwise cost atomic reference-count updates (see K.borrowed).
    # The caller keeps the arrays alive across its loop.
    deck, state, moves, fired, rng = K.borrowed(deck), K.borrowed(state), K.borrowed(moves), K.borrowed(fired), K.borrowed(rng)
    rng[0] = K.stream_start(seed, game, K.STREAM_POLICY)
    code, played = play_game(choose, deck, params, rules, rng, state, moves, fired)
    end[i] = code
    cards_played[i] = played
    face_down[i] = state[K.FACE_DOWN_COUNT]
    piles[i] = state[K.PILES]
    score[i] = K.DECK_SIZE - played if code == K.END_WIN else -1
    illegal[i] = moves[played] if code == K.END_ILLEGAL_MOVE else -1


# --- templates: copied once per policy with CHOOSE bound (see the module docstring) ---------------


def _seeded_batch(seed, first_game, count, params, rules, record, decks,
                  end, cards_played, face_down, piles, score, illegal):
    """Deal and play games first_game .. first_game+count-1 of `seed`.

    With `record`, each deck is kept in decks[i]; otherwise decks may be 1 row.
    """
    # Uncounted views of the arguments, for speed (see K.borrowed).
    decks, rules, params = K.borrowed(decks), K.borrowed(rules), K.borrowed(params)
    end, cards_played = K.borrowed(end), K.borrowed(cards_played)
    face_down, piles, score, illegal = K.borrowed(face_down), K.borrowed(piles), K.borrowed(score), K.borrowed(illegal)
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.empty(K.DECK_SIZE + 1, np.int64)
    fired = np.empty(K.DECK_SIZE, np.int64)
    rng = np.empty(1, np.uint64)
    for i in range(count):
        row = i if record else 0
        deck = decks[row]
        game = first_game + i
        K.deal_into(seed, game, deck)
        _play_into(CHOOSE, i, deck, params, rules, seed, game, state, moves, fired, rng,
                   end, cards_played, face_down, piles, score, illegal)


def _deck_batch(decks, seed, first_game, params, rules, end, cards_played, face_down, piles, score, illegal):
    """Play given decks; row i is game first_game + i (for the policy's stream)."""
    decks, rules, params = K.borrowed(decks), K.borrowed(rules), K.borrowed(params)
    end, cards_played = K.borrowed(end), K.borrowed(cards_played)
    face_down, piles, score, illegal = K.borrowed(face_down), K.borrowed(piles), K.borrowed(score), K.borrowed(illegal)
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.empty(K.DECK_SIZE + 1, np.int64)
    fired = np.empty(K.DECK_SIZE, np.int64)
    rng = np.empty(1, np.uint64)
    for i in range(decks.shape[0]):
        _play_into(CHOOSE, i, decks[i], params, rules, seed, first_game + i, state, moves, fired, rng,
                   end, cards_played, face_down, piles, score, illegal)


def _one_game(deck, params, rules, rng, state, moves, fired):
    """One game, keeping every turn's cell and fired checks: (end code, cards played)."""
    return play_game(CHOOSE, deck, params, rules, rng, state, moves, fired)


@dataclass(frozen=True)
class Loops:
    """The compiled entry points of one policy's game loop."""

    seeded_batch: object
    """`_seeded_batch` with the policy bound."""
    deck_batch: object
    """`_deck_batch` with the policy bound."""
    one_game: object
    """`_one_game` with the policy bound."""


def _bind(template, choose, suffix: str, cache: bool):
    """A jitted copy of `template` whose global CHOOSE is `choose` (not a closure, so numba can cache it)."""
    namespace = dict(template.__globals__, CHOOSE=choose)
    fn = types.FunctionType(template.__code__, namespace, f"{template.__name__}__{suffix}")
    fn.__qualname__ = fn.__name__
    fn.__doc__ = template.__doc__
    return njit(cache=cache)(fn)


def _loops(choose, suffix: str, cache: bool) -> Loops:
    return Loops(*(_bind(t, choose, suffix, cache) for t in (_seeded_batch, _deck_batch, _one_game)))


@functools.cache
def builtin_loops(module: str) -> Loops:
    """The loops of the built-in policy in `module` (e.g. "policies.greedy"), cached on disk."""
    choose = importlib.import_module(module).choose
    return _loops(choose, module.rpartition(".")[2], cache=True)


_PLUGIN_LOOPS: dict[object, Loops] = {}


def plugin_loops(choose) -> Loops:
    """The loops of a compiled plugin's jitted `choose`: compiled once per process, never cached on disk."""
    if choose not in _PLUGIN_LOOPS:
        _PLUGIN_LOOPS[choose] = _loops(choose, "plugin", cache=False)
    return _PLUGIN_LOOPS[choose]


# --- the solver's lines -------------------------------------------------------------------------


@njit(cache=True, inline="always")
def follow(state, rules, card, legal, rng, line):
    """A policy that plays a given line: the cell line[turn]."""
    return line[state[K.TURN]]


@njit(cache=True)
def play_line(deck, moves, n, rules, state, fired):
    """Play the first `n` cells of `moves` through the turn loop, as a game does.

    Returns (end code, cards played); the final position stays in `state`
    and each turn's fired checks in `fired`. A cell that is not legal ends
    it with END_ILLEGAL_MOVE; a line that stops before the game ends returns
    GOES_ON (-1). `moves` is both the line and the loop's record of it.
    """
    K.reset(state)
    rng = np.zeros(1, np.uint64)  # a line draws nothing
    return K.play_turns(follow, deck[:n], state, rules, moves, rng, moves, fired)
