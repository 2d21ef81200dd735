"""`ObservationPolicy`: a callable on observations (a trained agent's act) as a `--policy` plugin.

An agent trained on `FoursquareEnv` acts on its observations. Wrapped in
`ObservationPolicy`, it becomes a plain-Python policy plugin
(`sim.players.plugins`), so ``sim run``, ``sim compare``, ``sim replay`` and
`sim.play` play it on the same deals as the built-ins::

    # agent.py
    from sim.rl.adapter import ObservationPolicy

    def act(obs):                      # obs: the environment's observation dict
        ...
        return cell                    # or 49 scores: the best legal cell is played

    policy = ObservationPolicy(act)

    # sim compare --policy agent.py:policy --policy greedy -n 1e4

The observation is the one the environment shows at the same point of the
same game: the same compiled kernel writes both (`sim.rl.kernels`). A class
deriving from `ObservationPolicy` whose ``__init__`` takes keyword
arguments (say, the file of the weights) is built with the
``--policy-arg KEY=VALUE`` values, as any plugin class is.

This module needs no gymnasium.
"""

from collections.abc import Callable

import numpy as np

from sim import kernels as K
from sim.rl import observation as O


class ObservationPolicy:
    """A plain-Python policy plugin that asks `act` for a cell given the observation.

    ``act(obs)`` (or ``act(obs, action_mask)`` with ``mask=True``) returns
    either a cell (an integer; an illegal one stops the game with the
    plugin loop's error naming the policy, seed, game, turn and value) or
    49 scores, one per cell, of which the legal cell with the highest
    score is played (ties: the lowest cell). ``obs`` is the environment's
    observation dict, or with ``flat=True`` the flat int8 vector
    (`sim.rl.observation`); ``action_mask`` is ``info["action_mask"]``.
    """

    def __init__(self, act: Callable, *, flat: bool = False, mask: bool = False):
        if not callable(act):
            raise TypeError(f"act must be callable, not {type(act).__name__}")
        self.act = act
        """The callable on observations."""
        self.flat = bool(flat)
        """Give `act` the flat int8 vector instead of the dict."""
        self.mask = bool(mask)
        """Give `act` the action mask as its second argument."""

    def observation(self, position, card: int):
        """What the environment would show for `position` (a plugin's `Position`) with `card` drawn."""
        state = position.board().state  # its stock still holds the drawn card, for board().place
        K.draw(state, card)  # the environment shows the stock with the drawn card gone
        flat = O.observe(state, card)
        return flat if self.flat else O.as_dict(flat)

    def choose(self, position, card: int):
        """The plugin contract: the cell `act` picks for `card` in `position`."""
        obs = self.observation(position, card)
        legal = position.legal_cells()
        out = self.act(obs, O.mask_of(legal)) if self.mask else self.act(obs)
        return pick(out, legal)


def pick(out, legal) -> int:
    """The cell an act's output names: the integer itself, or the legal cell with the best of 49 scores."""
    scores = np.asarray(out)
    if scores.ndim == 0:
        return out.item() if isinstance(out, np.ndarray) else out
    if scores.shape != (K.CELLS,):
        raise ValueError(f"act returned an array of shape {scores.shape}; expected a cell or {K.CELLS} scores")
    cells = np.asarray(legal)
    return int(cells[int(np.argmax(scores[cells]))])
