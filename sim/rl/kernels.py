"""Compiled core of the environments: observations, one environment step, a batch of steps.

Everything here is a numba kernel on plain arrays, or a constant they read.
A game is stepped with the engine's own kernels (`sim.kernels.draw`,
`legal_cells`, `place`, `end_of_turn`) in the order of
`sim.kernels.play_turns`, so an episode is the game the engine plays with
the same cells.

The observation of one environment is one int8 row of ``OBS_SIZE`` entries
(`sim.rl.observation` turns it into the documented dict):

=================  ===========================================================
offset             meaning
=================  ===========================================================
``OBS_TOP + c``    rank of the top card on cell ``c`` (face up or down), 0 empty
``OBS_FACE_DOWN + c``  1 when that top card is face down
``OBS_HEIGHT + c`` cards in the pile on cell ``c``
``OBS_CARD``       the drawn card, 1..10 (0 once the game is over, unless it
                   ended because the drawn card had no legal cell)
``OBS_STOCK + k``  cards of rank ``k + 1`` still in the stock (drawn card excluded)
``OBS_TURN``       cards placed so far
=================  ===========================================================

It is written from the engine's visible state only, which never holds the
stock's order.
"""

import numpy as np
from numba import njit

from sim import kernels as K

OBS_TOP = 0
OBS_FACE_DOWN = OBS_TOP + K.CELLS
OBS_HEIGHT = OBS_FACE_DOWN + K.CELLS
OBS_CARD = OBS_HEIGHT + K.CELLS
OBS_STOCK = OBS_CARD + 1
OBS_TURN = OBS_STOCK + K.RANKS
OBS_SIZE = OBS_TURN + 1

REWARD_WIN = 0  # reward kinds, as `reward_of` takes them
REWARD_SCORE = 1


@njit(cache=True, inline="always")
def write_observation(state, card, obs):
    """Fill the int8 row `obs` with what a player sees of `state` with `card` drawn."""
    face_down = state[K.FACE_DOWN]
    for c in range(K.CELLS):
        obs[OBS_TOP + c] = state[K.TOP + c]
        obs[OBS_FACE_DOWN + c] = (face_down >> c) & 1
        obs[OBS_HEIGHT + c] = state[K.HEIGHT + c]
    obs[OBS_CARD] = card
    for k in range(K.RANKS):
        obs[OBS_STOCK + k] = state[K.STOCK + 1 + k]
    obs[OBS_TURN] = state[K.TURN]


@njit(cache=True, inline="always")
def write_mask(legal, mask):
    """mask[c] = 1 when cell c is in the bit mask `legal`, else 0."""
    for c in range(K.CELLS):
        mask[c] = (legal >> c) & 1


@njit(cache=True, inline="always")
def begin(deck, rules, state):
    """Start the game of `deck`: empty table, first card drawn. Returns (card, legal mask)."""
    K.reset(state)
    card = np.int64(deck[0])
    K.draw(state, card)
    return card, K.legal_cells(state, rules)


@njit(cache=True, inline="always")
def advance(deck, rules, state, cell, card):
    """Place `card` on the legal `cell`, then draw the next card as `play_turns` does.

    Returns (end, next card, its legal cells): end is `sim.kernels.GOES_ON`
    while the game goes on; END_NO_MOVE when the next card has no legal cell
    (that card is returned, drawn); any other END_* code with card 0.
    """
    K.place(state, rules, cell, card)
    end = K.end_of_turn(state, rules)
    if end != K.GOES_ON:
        return end, np.int64(0), np.int64(0)
    nxt = np.int64(deck[state[K.TURN]])
    K.draw(state, nxt)
    legal = K.legal_cells(state, rules)
    if legal == 0:
        return np.int64(K.END_NO_MOVE), nxt, np.int64(0)
    return np.int64(K.GOES_ON), nxt, legal


@njit(cache=True, inline="always")
def reward_of(end, state, reward_kind):
    """The reward of a game that ended with `end`: 1 (or the score) on a win, else 0."""
    if end != K.END_WIN:
        return 0.0
    if reward_kind == REWARD_SCORE:
        return np.float64(K.DECK_SIZE - state[K.TURN])
    return 1.0


@njit(cache=True)
def observe_into(state, card, obs):
    """`write_observation` as an entry point callable from Python."""
    write_observation(state, card, obs)


@njit(cache=True)
def env_reset(deck, rules, state, obs, mask):
    """One environment: start the game of `deck`, write its observation and mask. Returns (card, legal)."""
    card, legal = begin(deck, rules, state)
    write_observation(state, card, obs)
    write_mask(legal, mask)
    return card, legal


@njit(cache=True)
def env_step(deck, rules, state, cell, card, obs, mask):
    """One environment: play `card` on the legal `cell`, write the next observation and mask.

    Returns (end, next card, its legal cells) as `advance` does.
    """
    end, nxt, legal = advance(deck, rules, state, cell, card)
    write_observation(state, nxt, obs)
    write_mask(legal, mask)
    return end, nxt, legal


# --- the vector environment -----------------------------------------------------------------------


@njit(cache=True, inline="always")
def _start(i, seed, games, decks, states, rules, cards, legal, rngs):
    """Deal game games[i] of `seed` into env i and start it (its policy stream too)."""
    K.deal_into(seed, games[i], decks[i])
    card, lg = begin(decks[i], rules, states[i])
    cards[i] = card
    legal[i] = lg
    rngs[i] = K.stream_start(seed, games[i], K.STREAM_POLICY)


@njit(cache=True)
def vector_reset(seed, games, decks, states, rules, cards, legal, rngs, pending, obs, masks):
    """Start game games[i] of `seed` in every env i; write observations and masks."""
    decks, states, obs, masks = K.borrowed(decks), K.borrowed(states), K.borrowed(obs), K.borrowed(masks)
    for i in range(games.shape[0]):
        _start(i, seed, games, decks, states, rules, cards, legal, rngs)
        pending[i] = False
        write_observation(states[i], cards[i], obs[i])
        write_mask(legal[i], masks[i])


@njit(cache=True)
def first_illegal(actions, legal, pending):
    """Index of the first env whose action is not one of its legal cells (envs being reset excluded), or -1."""
    for i in range(actions.shape[0]):
        a = actions[i]
        if not pending[i] and (a < 0 or a >= K.CELLS or not (legal[i] >> a) & 1):
            return i
    return -1


@njit(cache=True)
def vector_step(actions, seed, stride, games, decks, states, rules, cards, legal, rngs, pending,
                reward_kind, obs, masks, rewards, terminated, ends, scores):
    """Step every env with next-step autoreset; illegal actions must have been dealt with (`first_illegal`).

    An env whose game ended on the previous step (pending[i]) ignores its
    action and starts game games[i] + stride instead (reward 0, not
    terminated). Otherwise its action is placed; an illegal one (only
    possible with illegal actions that lose) ends the game as
    END_ILLEGAL_MOVE. ends[i] is the END_* code of a game that ended on
    this step, else -1; scores[i] its score on a win, else -1.
    """
    decks, states, obs, masks = K.borrowed(decks), K.borrowed(states), K.borrowed(obs), K.borrowed(masks)
    for i in range(actions.shape[0]):
        ends[i] = -1
        scores[i] = -1
        rewards[i] = 0.0
        terminated[i] = False
        if pending[i]:
            games[i] += stride
            _start(i, seed, games, decks, states, rules, cards, legal, rngs)
            pending[i] = False
        else:
            a = actions[i]
            state = states[i]
            if a < 0 or a >= K.CELLS or not (legal[i] >> a) & 1:
                end, card, lg = np.int64(K.END_ILLEGAL_MOVE), np.int64(0), np.int64(0)
            else:
                end, card, lg = advance(decks[i], rules, state, a, cards[i])
            cards[i] = card
            legal[i] = lg
            if end != K.GOES_ON:
                terminated[i] = True
                pending[i] = True
                ends[i] = end
                rewards[i] = reward_of(end, state, reward_kind)
                if end == K.END_WIN:
                    scores[i] = K.DECK_SIZE - state[K.TURN]
        write_observation(states[i], cards[i], obs[i])
        write_mask(legal[i], masks[i])


@njit(cache=True)
def random_cell(legal, rng):
    """The `random` policy's cell among the non-empty mask `legal`: one draw from the stream in rng[0]."""
    return K.nth_cell(legal, K.next_below(rng, K.popcount(legal)))


@njit(cache=True)
def random_actions(legal, rngs, pending, actions):
    """The `random` policy's cell for every env: one draw from its game's policy stream.

    Envs about to be reset (pending) draw nothing and get action 0, which
    the next step ignores. A run of these equals `sim run --policy random`.
    """
    for i in range(legal.shape[0]):
        if pending[i] or legal[i] == 0:
            actions[i] = 0
        else:
            rng = rngs[i:i + 1]
            actions[i] = K.nth_cell(legal[i], K.next_below(rng, K.popcount(legal[i])))
