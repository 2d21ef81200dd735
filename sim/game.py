"""Whole games: the compiled game loop, batches of games, and their Python API.

The built-in policies are dispatched by id inside `play_game`, so one cached
compiled loop serves them all (numba cannot cache a function that takes
another jitted function as an argument).
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

import policies
import policies.greedy
import policies.heuristic
import policies.lookahead
import policies.random
import policies.rollout
from sim import kernels as K
from sim.rules import Rules

END_NAMES = ("win", "too_many_face_down", "stock_empty", "no_move", "illegal_move")
"""Name of each END_* code, indexed by code."""

_GREEDY = policies.BUILTIN["greedy"].id
_RANDOM = policies.BUILTIN["random"].id
_HEURISTIC = policies.BUILTIN["heuristic"].id
_LOOKAHEAD = policies.BUILTIN["lookahead"].id
_ROLLOUT = policies.BUILTIN["rollout"].id


@njit(cache=True, inline="always")
def choose(policy_id, state, rules, card, legal, rng, params):
    """Dispatch to a built-in policy by id."""
    if policy_id == _GREEDY:
        return policies.greedy.choose(state, rules, card, legal, rng, params)
    if policy_id == _RANDOM:
        return policies.random.choose(state, rules, card, legal, rng, params)
    if policy_id == _HEURISTIC:
        return policies.heuristic.choose(state, rules, card, legal, rng, params)
    if policy_id == _LOOKAHEAD:
        return policies.lookahead.choose(state, rules, card, legal, rng, params)
    if policy_id == _ROLLOUT:
        return policies.rollout.choose(state, rules, card, legal, rng, params)
    return -1


@njit(cache=True, inline="always")
def play_game(deck, policy_id, params, rules, rng, state, moves, fired):
    """Play one game from `deck`; fill moves/fired per turn.

    Returns (end code, cards played). The final position stays in `state`.
    On END_ILLEGAL_MOVE, moves[cards played] holds the cell the policy returned.
    """
    # Uncounted views: passing arrays to the (inlined) kernels of every turn
    # would otherwise cost atomic reference-count updates (see K.borrowed).
    deck, rules, rng, params = K.borrowed(deck), K.borrowed(rules), K.borrowed(rng), K.borrowed(params)
    state, moves, fired = K.borrowed(state), K.borrowed(moves), K.borrowed(fired)
    K.reset(state)
    for t in range(K.DECK_SIZE):
        card = deck[t]
        K.draw(state, card)
        legal = K.legal_cells(state, rules)
        if legal == 0:
            return K.END_NO_MOVE, t
        cell = choose(policy_id, state, rules, card, legal, rng, params)
        moves[t] = cell
        if cell < 0 or cell >= K.CELLS or not (legal >> cell) & 1:
            return K.END_ILLEGAL_MOVE, t
        fired[t] = K.place(state, rules, cell, card)
        end = K.end_of_turn(state, rules)
        if end != K.GOES_ON:
            return end, t + 1
    return K.END_STOCK_EMPTY, K.DECK_SIZE  # unreachable: end_of_turn ends at 40


@njit(cache=True, inline="always")
def _play_into(i, deck, policy_id, params, rules, seed, game, state, moves, fired, rng,
               end, cards_played, face_down, piles, score, illegal):
    rng[0] = K.stream_start(seed, game, K.STREAM_POLICY)
    code, played = play_game(deck, policy_id, params, rules, rng, state, moves, fired)
    end[i] = code
    cards_played[i] = played
    face_down[i] = state[K.FACE_DOWN_COUNT]
    piles[i] = state[K.PILES]
    score[i] = K.DECK_SIZE - played if code == K.END_WIN else -1
    illegal[i] = moves[played] if code == K.END_ILLEGAL_MOVE else -1


@njit(cache=True)
def play_seeded_batch(seed, first_game, count, policy_id, params, rules, record, decks,
                      end, cards_played, face_down, piles, score, illegal):
    """Deal and play games first_game .. first_game+count-1 of `seed`.

    With `record`, each deck is kept in decks[i]; otherwise decks may be 1 row.
    """
    # Uncounted views of the arguments, for speed (see K.borrowed).
    decks, rules, end, cards_played = K.borrowed(decks), K.borrowed(rules), K.borrowed(end), K.borrowed(cards_played)
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
        _play_into(i, deck, policy_id, params, rules, seed, game, state, moves, fired, rng,
                   end, cards_played, face_down, piles, score, illegal)


@njit(cache=True)
def play_deck_batch(decks, seed, first_game, policy_id, params, rules,
                    end, cards_played, face_down, piles, score, illegal):
    """Play given decks; row i is game first_game + i (for the policy's stream)."""
    # Uncounted views of the arguments, for speed (see K.borrowed).
    decks, rules, end, cards_played = K.borrowed(decks), K.borrowed(rules), K.borrowed(end), K.borrowed(cards_played)
    face_down, piles, score, illegal = K.borrowed(face_down), K.borrowed(piles), K.borrowed(score), K.borrowed(illegal)
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.empty(K.DECK_SIZE + 1, np.int64)
    fired = np.empty(K.DECK_SIZE, np.int64)
    rng = np.empty(1, np.uint64)
    for i in range(decks.shape[0]):
        _play_into(i, decks[i], policy_id, params, rules, seed, first_game + i, state, moves, fired, rng,
                   end, cards_played, face_down, piles, score, illegal)


@njit(cache=True)
def deal_batch(seed, first_game, decks):
    decks = K.borrowed(decks)  # no reference counting per row (see K.borrowed)
    for i in range(decks.shape[0]):
        K.deal_into(seed, first_game + i, decks[i])


# --- Python API -------------------------------------------------------------


@dataclass(frozen=True)
class GameResult:
    """The outcome of one game, as `sim.play` returns it."""

    won: bool
    """True when the game ended with a full grid and every top card face up."""
    score: int | None
    """Cards left in the stock at a win (0..24); None for a lost game."""
    cards_played: int
    """Cards placed on the table."""
    face_down: int
    """Top cards face down at the end."""
    piles: int
    """Piles on the table at the end."""
    end: str
    """How it ended: win, too_many_face_down, stock_empty or no_move."""
    moves: tuple[int, ...]
    """Canonical cell of each placement, in order."""


@dataclass(frozen=True)
class GameColumns:
    """Column arrays for a batch of games, one entry per game."""

    game: np.ndarray
    """Game index within the run (uint64)."""
    won: np.ndarray
    """bool."""
    score: np.ndarray
    """int8: cards left at a win, -1 for a lost game."""
    cards_played: np.ndarray
    """uint8."""
    face_down: np.ndarray
    """uint8: face-down top cards at the end."""
    piles: np.ndarray
    """uint8."""
    end: np.ndarray
    """uint8 END_* code; END_NAMES[code] is its name."""
    deck: np.ndarray | None
    """(n, 40) uint8 decks, when recorded."""

    def __len__(self) -> int:
        return len(self.game)


class PolicyError(RuntimeError):
    """A policy returned a cell that is not legal."""


def rules_or_default(rules: Rules | None) -> Rules:
    if rules is None:
        return Rules()
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a sim.Rules, not {type(rules).__name__}")
    return rules


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in 0..2**64-1, not {seed!r}")
    return int(seed)


def validate_deck(deck) -> np.ndarray:
    """The deck as a uint8 array; ValueError saying what is wrong otherwise."""
    try:
        values = list(deck)
    except TypeError:
        raise ValueError(f"a deck must be a sequence of 40 ranks, not {type(deck).__name__}") from None
    if len(values) != K.DECK_SIZE:
        raise ValueError(f"a deck has 40 cards, this one has {len(values)}")
    ranks = []
    for pos, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= K.RANKS:
            raise ValueError(f"card {pos} is {v!r}; ranks are integers 1..10")
        ranks.append(int(v))
    counts = np.bincount(ranks, minlength=K.RANKS + 1)[1:]
    wrong = [f"{r} x{c}" for r, c in enumerate(counts, start=1) if c != K.COPIES]
    if wrong:
        raise ValueError(f"a deck has four cards of each rank 1..10; this one has {', '.join(wrong)}")
    return np.array(ranks, dtype=np.uint8)


def validate_decks(decks: np.ndarray) -> np.ndarray:
    """Check an (n, 40) array of decks at once; ValueError naming the first bad row."""
    decks = np.asarray(decks)
    if decks.ndim != 2 or decks.shape[1] != K.DECK_SIZE:
        raise ValueError(f"decks must be an (n, 40) array, not shape {decks.shape}")
    bad_rank = (decks < 1) | (decks > K.RANKS)
    if bad_rank.any():
        row = int(np.argmax(bad_rank.any(axis=1)))
        validate_deck(decks[row].tolist())  # raises with the detail
    d = decks.astype(np.int64)
    counts = np.stack([(d == r).sum(axis=1) for r in range(1, K.RANKS + 1)], axis=1)
    bad = (counts != K.COPIES).any(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        try:
            validate_deck(decks[row].tolist())
        except ValueError as e:
            raise ValueError(f"row {row}: {e}") from None
    return decks.astype(np.uint8)


def _args(policy_args) -> dict[str, str]:
    return {str(k): str(v) for k, v in (policy_args or {}).items()}


def builtin_policy(policy: str, policy_args=None, params=None):
    """(id, params array) of a built-in policy, or None for a plugin name."""
    if policy not in policies.BUILTIN:
        return None
    if params is None:
        params = policies.build_params(policy, _args(policy_args))
    return policies.BUILTIN[policy].id, np.ascontiguousarray(params, dtype=np.float64)


def _plugin(policy: str, policy_args):
    from sim.plugins import resolve

    return resolve(policy, _args(policy_args))


def deal(seed: int, game: int) -> tuple[int, ...]:
    """The deck of game `game` of seed `seed` (ranks in draw order)."""
    seed = check_seed(seed)
    if isinstance(game, bool) or not isinstance(game, (int, np.integer)) or game < 0:
        raise ValueError(f"game must be a non-negative integer, not {game!r}")
    decks = np.empty((1, K.DECK_SIZE), np.uint8)
    deal_batch(np.uint64(seed), np.int64(game), decks)
    return tuple(int(r) for r in decks[0])


def trace(deck, policy: str = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
          policy_args=None):
    """Play one game; (end code, cards played, moves, fired flags, final state)."""
    cards = validate_deck(deck)
    rules = rules_or_default(rules)
    seed = check_seed(seed)
    builtin = builtin_policy(policy, policy_args)
    if builtin is None:
        from sim.plugins import trace_plugin

        return trace_plugin(_plugin(policy, policy_args), cards, rules, seed, game)
    pid, params = builtin
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.full(K.DECK_SIZE + 1, -1, np.int64)
    fired = np.zeros(K.DECK_SIZE, np.int64)
    rng = np.empty(1, np.uint64)
    rng[0] = K.stream_start(np.uint64(seed), np.int64(game), K.STREAM_POLICY)
    code, played = play_game(cards, pid, params, rules.as_array(), rng, state, moves, fired)
    if code == K.END_ILLEGAL_MOVE:
        raise PolicyError(
            f"policy {policy!r} returned illegal cell {int(moves[played])} "
            f"(seed {seed}, game {game}, turn {played + 1})"
        )
    return int(code), int(played), moves[:played].tolist(), fired[:played].tolist(), state


def play(deck, policy: str = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
         policy_args=None) -> GameResult:
    """Play one game from a given deck of 40 ranks (four of each of 1..10).

    `seed` and `game` key the policy's random stream, so `play(deal(S, i), P,
    seed=S, game=i)` is exactly game i of a run with seed S. `policy` is a
    built-in name or a plugin (see sim.plugins); `policy_args` its parameters.
    """
    code, played, moves, _, state = trace(deck, policy, rules, seed, game, policy_args)
    won = code == K.END_WIN
    return GameResult(
        won=won,
        score=K.DECK_SIZE - played if won else None,
        cards_played=played,
        face_down=int(state[K.FACE_DOWN_COUNT]),
        piles=int(state[K.PILES]),
        end=END_NAMES[code],
        moves=tuple(moves),
    )


def new_columns(n: int) -> dict:
    """Output arrays a batch fills, one entry per game."""
    return dict(
        end=np.empty(n, np.uint8),
        cards_played=np.empty(n, np.uint8),
        face_down=np.empty(n, np.uint8),
        piles=np.empty(n, np.uint8),
        score=np.empty(n, np.int8),
        illegal=np.empty(n, np.int64),
    )


def finish_columns(cols: dict, games, decks, policy: str, seed: int) -> GameColumns:
    """GameColumns from a filled batch; PolicyError naming the first illegal move."""
    illegal = cols.pop("illegal")
    bad = np.flatnonzero(cols["end"] == K.END_ILLEGAL_MOVE)
    if len(bad):
        i = int(bad[0])
        raise PolicyError(
            f"policy {policy!r} returned illegal cell {int(illegal[i])} "
            f"(seed {seed}, game {int(games[i])}, turn {int(cols['cards_played'][i]) + 1})"
        )
    return GameColumns(game=games, won=cols["end"] == K.END_WIN, deck=decks, **cols)


def play_range(seed: int, start: int, stop: int, policy: str = "greedy", rules: Rules | None = None,
               record_deals: bool = False, policy_args=None, params=None) -> GameColumns:
    """Deal and play games start..stop-1 of `seed` (compiled, for built-ins and compiled plugins).

    `params` gives a built-in policy's parameter array directly (sim tune uses it).
    """
    seed = check_seed(seed)
    if not 0 <= start <= stop:
        raise ValueError(f"need 0 <= start <= stop, got start={start}, stop={stop}")
    rules = rules_or_default(rules)
    n = stop - start
    builtin = builtin_policy(policy, policy_args, params)
    if builtin is None:
        decks = np.empty((n, K.DECK_SIZE), np.uint8)
        deal_batch(np.uint64(seed), np.int64(start), decks)
        from sim.plugins import play_plugin

        return play_plugin(_plugin(policy, policy_args), decks, seed, start, rules, record_deals)
    pid, params = builtin
    cols = new_columns(n)
    decks = np.empty((n if record_deals else 1, K.DECK_SIZE), np.uint8)
    play_seeded_batch(np.uint64(seed), np.int64(start), n, pid, params, rules.as_array(),
                      record_deals, decks, cols["end"], cols["cards_played"], cols["face_down"],
                      cols["piles"], cols["score"], cols["illegal"])
    games = np.arange(start, stop, dtype=np.uint64)
    return finish_columns(cols, games, decks if record_deals else None, policy, seed)


def play_decks(decks, policy: str = "greedy", rules: Rules | None = None, seed: int = 0,
               first_game: int = 0, record_deals: bool = False, policy_args=None, params=None) -> GameColumns:
    """Play an (n, 40) array of given decks; row i is game first_game + i."""
    seed = check_seed(seed)
    decks = validate_decks(decks)
    rules = rules_or_default(rules)
    builtin = builtin_policy(policy, policy_args, params)
    if builtin is None:
        from sim.plugins import play_plugin

        return play_plugin(_plugin(policy, policy_args), decks, seed, first_game, rules, record_deals)
    pid, params = builtin
    n = decks.shape[0]
    cols = new_columns(n)
    play_deck_batch(decks, np.uint64(seed), np.int64(first_game), pid, params, rules.as_array(),
                    cols["end"], cols["cards_played"], cols["face_down"], cols["piles"],
                    cols["score"], cols["illegal"])
    games = np.arange(first_game, first_game + n, dtype=np.uint64)
    return finish_columns(cols, games, decks if record_deals else None, policy, seed)


def warm_up(seeded: bool = True, decks: bool = False, replay: bool = False, policy: str = "greedy",
            policy_args=None) -> None:
    """Compile (or load from numba's cache) the kernels a job needs.

    Call it in the main process before starting workers, so workers never
    compile and never race on the cache files. One compiled game loop
    serves every built-in policy, so one call per entry point is enough; a
    compiled plugin's loop is compiled here once per process.
    """
    if seeded:
        play_range(0, 0, 1)
    if decks:
        play_decks(np.array([deal(0, 0)], np.uint8))
    if replay:
        trace(deal(0, 0))
    if policy not in policies.BUILTIN:
        from sim.plugins import compile_plugin

        compile_plugin(_plugin(policy, policy_args))
