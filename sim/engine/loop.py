"""The compiled game loop of each policy, and the batches of games that run it.

Every game runs `sim.kernels.play_turns`, the one turn loop, with the
policy's ``choose`` bound in. numba cannot cache a compiled function that
takes a jitted function as an argument (each is a type of its own), nor a
closure; so for each policy the
entry point below, `_games`, is copied with the policy's ``choose`` as the
global ``CHOOSE`` and a name of its own (``_games__greedy``), which numba
caches on disk like any module-level function. Runs, given decks and single
traced games all call that one copy, so a policy's code is compiled once,
and a run compiles only the policy it plays.

Compiled plugins (their source is not ours to track) share one loop instead,
`_plugin_games`, which takes the plugin's ``choose`` as an argument of a
fixed first-class function type (`CHOOSE_TYPE`). numba caches a function
with such an argument, so that loop is compiled once per cache, and a plugin
compiles only its own ``choose`` (through `_as_cell`, which converts its
cell to that type): a fraction of a second where a copy of the whole loop
took seconds, in every run. The plugin is called through a pointer rather
than inlined, a few nanoseconds a turn: examples/compiled_policy.py, about
the cheapest policy there is, plays at 0.91x to 1.03x the games/s it had
inlined (benchmarks/README.md), so a run of it would need tens of millions
of games on one core to lose the seconds each run saves.
"""

import functools
import importlib
import types
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba import types as nb
from numba.core.errors import TypingError

from sim import kernels as K
from sim.engine.results import new_columns

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


# --- the template: copied once per policy with CHOOSE bound (see the module docstring) ------------


@njit(cache=True, inline="always")
def _games_of(choose, seed, first_game, count, deal, record, params, rules, decks, state, moves, fired,
              end, cards_played, face_down, piles, score, illegal):
    """Play games first_game .. first_game+count-1 of `seed` with `choose` and write their rows.

    With `deal`, each game's deck is dealt into decks[i] (with `record`) or
    decks[0]; otherwise decks[i] is given. One entry point serves runs,
    given decks and single traced games, so a policy compiles once: the last
    game's position, cells and fired checks stay in `state`, `moves`, `fired`.
    """
    # Uncounted views of the arguments, for speed (see K.borrowed).
    decks, rules, params = K.borrowed(decks), K.borrowed(rules), K.borrowed(params)
    end, cards_played = K.borrowed(end), K.borrowed(cards_played)
    face_down, piles, score, illegal = K.borrowed(face_down), K.borrowed(piles), K.borrowed(score), K.borrowed(illegal)
    rng = np.empty(1, np.uint64)
    for i in range(count):
        row = i if record or not deal else 0
        deck = decks[row]
        game = first_game + i
        if deal:
            K.deal_into(seed, game, deck)
        _play_into(choose, i, deck, params, rules, seed, game, state, moves, fired, rng,
                   end, cards_played, face_down, piles, score, illegal)


def _games(seed, first_game, count, deal, record, params, rules, decks, state, moves, fired,
           end, cards_played, face_down, piles, score, illegal):
    """`_games_of` with the policy's choose bound in (see the module docstring)."""
    _games_of(CHOOSE, seed, first_game, count, deal, record, params, rules, decks, state, moves, fired,
              end, cards_played, face_down, piles, score, illegal)


def _array(dtype, ndim=1):
    """numba's type of a C-contiguous array, as the loops pass them."""
    return nb.Array(dtype, ndim, "C")


def is_cell_type(kind) -> bool:
    """Is `kind` (a numba type) one a policy may return as its cell: an integer, not a bool?"""
    return isinstance(kind, nb.Integer) and not isinstance(kind, nb.Boolean)


CONTRACT = (_array(nb.int64), _array(nb.int64), nb.uint8, nb.int64, _array(nb.uint64), _array(nb.float64))
"""The argument types the game loops call a compiled policy with: (state, rules, card, legal, rng, params)."""

CHOOSE_TYPE = nb.FunctionType(nb.int64(*CONTRACT))
"""A compiled plugin's choose as `_plugin_games` takes it: the contract's arguments, a cell."""

PLUGIN_GAMES = nb.void(CHOOSE_TYPE, nb.uint64, nb.int64, nb.int64, nb.boolean, nb.boolean, _array(nb.float64),
                       _array(nb.int64), _array(nb.uint8, 2), _array(nb.int64), _array(nb.int64), _array(nb.int64),
                       _array(nb.uint8), _array(nb.uint8), _array(nb.uint8), _array(nb.uint8), _array(nb.int8),
                       _array(nb.int64))
"""`_plugin_games`' one signature: the types `Loops` passes (the columns' are `new_columns`')."""


def _plugin_games(choose, seed, first_game, count, deal, record, params, rules, decks, state, moves, fired,
                  end, cards_played, face_down, piles, score, illegal):
    """`_games_of` for every compiled plugin: `choose` is an argument (see the module docstring)."""
    _games_of(choose, seed, first_game, count, deal, record, params, rules, decks, state, moves, fired,
              end, cards_played, face_down, piles, score, illegal)


def _turn_arrays():
    """A game's position, its cells (one spare for an illegal one) and its fired checks."""
    return (np.empty(K.STATE_SIZE, np.int64), np.full(K.DECK_SIZE + 1, -1, np.int64),
            np.zeros(K.DECK_SIZE, np.int64))


@dataclass(frozen=True)
class Loops:
    """The compiled game loop of one policy, and the three ways of calling it."""

    games: object
    """`_games` with the policy bound: the one compiled entry point."""
    choose: object = None
    """A built-in's jitted choose, compiled on its own before `games` is compiled (see `_play`); None for a
    plugin and for a choose the loop inlines."""

    def seeded_batch(self, seed, first_game, count, params, rules, record, decks, *columns):
        """Deal and play games first_game .. first_game+count-1 of `seed` (decks kept when `record`)."""
        self._play(seed, first_game, count, True, bool(record), params, rules, decks, *_turn_arrays(), *columns)

    def deck_batch(self, decks, seed, first_game, params, rules, *columns):
        """Play given decks; row i is game first_game + i (for the policy's stream)."""
        self._play(seed, first_game, decks.shape[0], False, False, params, rules, decks, *_turn_arrays(), *columns)

    def one_game(self, deck, seed, game, params, rules, state, moves, fired):
        """One game of a given deck, keeping every turn's cell and fired checks: (end code, cards played)."""
        cols = new_columns(1)  # the dtypes of a batch's columns: the same compiled specialisation
        self._play(seed, game, 1, False, False, params, rules, deck.reshape(1, -1), state, moves, fired, *cols.values())
        return int(cols["end"][0]), int(cols["cards_played"][0])

    def _play(self, *args):
        """`games(*args)`, the policy's choose compiled (or loaded from the cache) first when the loop is not
        compiled in this process yet.

        numba compiles planner's choose much faster on its own than inside the compile of the loop that
        calls it: its first run compiled in 30 to 38 s instead of 45 to 50 (benchmarks/README.md). The loop
        then links the compiled choose; its machine code is the same, instruction for instruction.
        """
        if self.choose is not None and not self.games.overloads:  # a built-in's: games is its dispatcher
            self.choose.compile(CONTRACT)
        self.games(*args)


def _bind(template, choose, suffix: str, cache: bool):
    """A jitted copy of `template` whose global CHOOSE is `choose` (not a closure, so numba can cache it)."""
    namespace = dict(template.__globals__, CHOOSE=choose)
    fn = types.FunctionType(template.__code__, namespace, f"{template.__name__}__{suffix}")
    fn.__qualname__ = fn.__name__
    fn.__doc__ = template.__doc__
    return njit(cache=cache)(fn)


@functools.cache
def builtin_loops(module: str) -> Loops:
    """The loop of the built-in policy in `module` (e.g. "policies.greedy"), cached on disk."""
    choose = importlib.import_module(module).choose
    games = _bind(_games, choose, module.rpartition(".")[2], cache=True)
    return Loops(games, None if choose.targetoptions.get("inline") == "always" else choose)


@functools.cache
def _plugin_entry():
    """`_plugin_games`, compiled (or loaded from numba's cache) on the first plugin a process plays."""
    return njit(PLUGIN_GAMES, cache=True)(_plugin_games)


def plugin_games_uncompiled():
    """`_plugin_games` jitted but not compiled: what asks numba's cache whether it holds the plugins' loop."""
    return njit(cache=True)(_plugin_games)


def _returned(state, rules, card, legal, rng, params):
    """Template: what the plugin bound as CHOOSE returns (`_as_cell` checks its type)."""
    return CHOOSE(state, rules, card, legal, rng, params)


def _cell(state, rules, card, legal, rng, params):
    """Template: the plugin bound as CHOOSE, its cell as an int64 (what `_plugin_games` calls through CHOOSE_TYPE)."""
    return np.int64(CHOOSE(state, rules, card, legal, rng, params))


@functools.cache
def _as_cell(choose):
    """A plugin's `choose` compiled for the contract's arguments, returning an int64 cell (CHOOSE_TYPE).

    numba converts the arguments as any compiled call does (a plugin may declare a signature of its own), and
    a cell of another integer type is converted to int64 (`_cell`), so that any integer type fits. Raises numba's TypingError for what does
    not fit, a returned type that is not an integer included, so that callers catch one kind of error and ask
    `sim.players.plugins.contract_problem` why.
    """
    returned = _bind(_returned, choose, "plugin", cache=False)
    try:
        returned.compile(CONTRACT)
    except TypeError as e:  # numba's "Signature mismatch": another number of arguments
        raise TypingError(str(e)) from None
    kind = returned.overloads[CONTRACT].signature.return_type
    if not is_cell_type(kind):
        raise TypingError(f"a policy returns a cell (an integer 0..48), not {kind}")
    if kind == nb.int64:  # CHOOSE_TYPE already (the usual case): no second compile, a tenth of a second
        return returned
    cell = _bind(_cell, choose, "plugin", cache=False)
    cell.compile(CONTRACT)
    return cell


@dataclass(frozen=True)
class _PluginGames:
    """`_plugin_games` with a plugin's `choose`, compiled on the first call as a built-in's loop is."""

    choose: object
    """The plugin's jitted choose."""

    def __call__(self, *args):
        _plugin_entry()(_as_cell(self.choose), *args)


def plugin_loops(choose) -> Loops:
    """The loops of a compiled plugin's jitted `choose`: the plugin compiled once per process, the loop cached."""
    return Loops(_PluginGames(choose))


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
