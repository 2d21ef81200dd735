"""What an agent sees: the observation as a dict or as one flat int8 vector.

The dict (`FoursquareEnv`'s observation space), for one environment:

=============  ===============  ==============================================
key            shape, dtype     meaning
=============  ===============  ==============================================
``top``        (7, 7) int8      rank of each cell's top card, face up or
                                down (a player saw it placed), 0 when empty
``face_down``  (7, 7) int8      1 where the top card is face down
``height``     (7, 7) int8      cards in each cell's pile
``card``       int64 scalar     the drawn card 1..10; 0 once the game is
                                over (except a `no_move` end: the card
                                that had no legal cell)
``stock``      (10,) int8       cards of rank 1..10 still in the stock, the
                                drawn card excluded (a player may count)
``turn``       int64 scalar     cards placed so far (0..40)
=============  ===============  ==============================================

Cell ``(row, col)`` of the grids is the canonical cell ``row * 7 + col``,
the action that places the card there. The stock's order is never part of
an observation. The vector environment batches each entry on a first axis.

The flat vector (`FlatObservation`, the vector environment's ``flat=True``)
is the layout of `sim.rl.kernels`, ``OBS_SIZE`` = 159 int8 values:
``top`` (49, row-major), ``face_down`` (49), ``height`` (49), ``card``,
``stock`` (10), ``turn``.

This module needs no gymnasium, so a policy plugin built with
`sim.rl.adapter` runs without the extra installed.
"""

import numpy as np

from sim import kernels as K
from sim.rl import kernels as RK

KEYS = ("top", "face_down", "height", "card", "stock", "turn")
"""The observation dict's keys, in the order of the flat layout."""

GRID = (K.SIDE, K.SIDE)
INT64 = tuple(np.int64(k) for k in range(K.DECK_SIZE + 1))
"""np.int64(k) for k = 0..40, made once (creating numpy scalars is slow): the dict's card and turn."""


def as_dict(flat: np.ndarray) -> dict:
    """The observation dict of a flat observation (shape (159,) or (n, 159)); the grids are views of `flat`."""
    if flat.ndim == 1:  # one environment: the hot path of FoursquareEnv.step
        grids = flat[RK.OBS_TOP:RK.OBS_CARD].reshape((3,) + GRID)
        return {"top": grids[0], "face_down": grids[1], "height": grids[2], "card": INT64[flat[RK.OBS_CARD]],
                "stock": flat[RK.OBS_STOCK:RK.OBS_TURN], "turn": INT64[flat[RK.OBS_TURN]]}
    lead = flat.shape[:-1]
    return {
        "top": flat[..., RK.OBS_TOP:RK.OBS_FACE_DOWN].reshape(lead + GRID),
        "face_down": flat[..., RK.OBS_FACE_DOWN:RK.OBS_HEIGHT].reshape(lead + GRID),
        "height": flat[..., RK.OBS_HEIGHT:RK.OBS_CARD].reshape(lead + GRID),
        "card": flat[..., RK.OBS_CARD].astype(np.int64),
        "stock": flat[..., RK.OBS_STOCK:RK.OBS_TURN],
        "turn": flat[..., RK.OBS_TURN].astype(np.int64),
    }


def as_flat(obs: dict) -> np.ndarray:
    """The flat int8 observation (shape (159,) or (n, 159)) of an observation dict."""
    top = np.asarray(obs["top"])
    lead = top.shape[:-2]
    parts = [top.reshape(lead + (K.CELLS,)), np.asarray(obs["face_down"]).reshape(lead + (K.CELLS,)),
             np.asarray(obs["height"]).reshape(lead + (K.CELLS,)), np.asarray(obs["card"]).reshape(lead + (1,)),
             np.asarray(obs["stock"]).reshape(lead + (K.RANKS,)), np.asarray(obs["turn"]).reshape(lead + (1,))]
    return np.concatenate([p.astype(np.int8, copy=False) for p in parts], axis=-1)


def flat_high(max_pile: int) -> np.ndarray:
    """The largest value of each entry of the flat observation under a rule's `max_pile`."""
    high = np.empty(RK.OBS_SIZE, np.int8)
    high[RK.OBS_TOP:RK.OBS_FACE_DOWN] = K.RANKS
    high[RK.OBS_FACE_DOWN:RK.OBS_HEIGHT] = 1
    high[RK.OBS_HEIGHT:RK.OBS_CARD] = max_pile
    high[RK.OBS_CARD] = K.RANKS
    high[RK.OBS_STOCK:RK.OBS_TURN] = K.COPIES
    high[RK.OBS_TURN] = K.DECK_SIZE
    return high


def observe(state: np.ndarray, card: int) -> np.ndarray:
    """The flat observation of an engine state (sim.kernels layout) with `card` drawn: what the environment shows."""
    obs = np.empty(RK.OBS_SIZE, np.int8)
    RK.observe_into(state, np.int64(card), obs)
    return obs


def mask_of(cells) -> np.ndarray:
    """The int8 action mask (49 entries) with a 1 on each of `cells`."""
    mask = np.zeros(K.CELLS, np.int8)
    mask[list(cells)] = 1
    return mask
