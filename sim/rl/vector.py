"""`FoursquareVectorEnv`: many games stepped at once in compiled code (Gymnasium's `VectorEnv`).

Each of the ``num_envs`` sub-environments is the game of `FoursquareEnv`,
with the same observation (batched on a first axis: a dict of arrays, or
with ``flat=True`` one (num_envs, 159) int8 array), action (one cell per
env: ``MultiDiscrete([49] * num_envs)``), reward, rules and illegal-action
handling; the whole batch is one call into `sim.rl.kernels.vector_step`.

- Autoreset: next step (``metadata["autoreset_mode"]`` is
  ``AutoresetMode.NEXT_STEP``, Gymnasium's default). The step on which a
  game ends returns its last observation with ``terminated`` set; the next
  step ignores that env's action and deals its next game (reward 0, not
  terminated). An env waiting for that has an all-zero action mask.
- Deals: ``reset(seed=S)`` gives env ``i`` game ``i`` of seed ``S`` (the deck
  of ``sim run --seed S``), and each later game of env ``i`` is its previous
  game plus ``num_envs``: env ``i`` plays games ``i, i + n, i + 2n, ...``.
  ``options={"game": g}`` starts env ``i`` at game ``g + i``; a plain
  ``reset()`` deals each env its next game of that sequence (a first one
  with no seed draws the seed from ``np_random``).
- Info, every step (Gymnasium's ``key``/``_key`` pairs): ``action_mask``
  (num_envs, 49) int8; ``game`` (the game each env is playing, int64);
  ``end`` (int8: the END_* code, `sim.END_NAMES` names it, of a game that
  ended on this step, else -1) with ``_end`` = ``terminated``; ``score``
  (int8: the score of a game won on this step, else -1) with ``_score``
  marking the wins.
- `random_actions` gives the `random` policy's cell for every env, from
  each game's own policy stream: stepping with it plays exactly the games
  of ``sim run --policy random`` (tested); the speed benchmark uses it.
"""

from __future__ import annotations

try:
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("sim.rl needs gymnasium: pip install -e '.[rl]'") from e

import numpy as np

from sim import kernels as K
from sim.engine.board import Board
from sim.engine.cards import check_game, check_seed
from sim.engine.rules import Rules
from sim.rl import kernels as RK
from sim.rl import observation as O
from sim.rl.env import (
    ILLEGAL_ACTIONS, REWARDS, IllegalActionError, cell_name, check_choice, check_rules, flat_observation_space,
    legal_list, observation_space,
)
from sim.rl.render import draw_rgb

VECTOR_RESET_OPTIONS = ("game",)


class FoursquareVectorEnv(VectorEnv):
    """`num_envs` games of Foursquare stepped together in compiled code, with next-step autoreset."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi", "rgb_array"],
                "render_fps": 4}

    def __init__(self, num_envs: int = 4096, rules: Rules | dict | None = None, reward: str = "win",
                 flat: bool = False, illegal_action: str = "raise", render_mode: str | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, not {num_envs!r}")
        self.num_envs = int(num_envs)
        self.rules = check_rules(rules)
        """The rule options of every game."""
        self.reward_kind = check_choice("reward", reward, tuple(REWARDS))
        """"win" (1 on a win) or "score" (the score on a win)."""
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTIONS)
        """"raise" (IllegalActionError naming the env) or "lose" (that env's game ends as lost)."""
        if not isinstance(flat, bool):
            raise ValueError(f"flat must be True or False, not {flat!r}")
        self.flat = flat
        """Observations as one (num_envs, 159) int8 array instead of a dict of arrays."""
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.single_observation_space = (flat_observation_space(self.rules) if flat
                                         else observation_space(self.rules))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Discrete(K.CELLS)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, K.CELLS))
        n = self.num_envs
        self._rules = self.rules.as_array()
        self._reward = REWARDS[self.reward_kind]
        self._states = np.empty((n, K.STATE_SIZE), np.int64)
        self._decks = np.empty((n, K.DECK_SIZE), np.uint8)
        self._games = np.zeros(n, np.int64)
        self._cards = np.zeros(n, np.int64)
        self._legal = np.zeros(n, np.int64)
        self._rngs = np.zeros(n, np.uint64)
        self._pending = np.zeros(n, np.bool_)
        self._last = np.full(n, -1, np.int64)
        self._seed: int | None = None
        self._started = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal every env a game: game i of a given seed, g + i with options={"game": g}, else its next one."""
        first = self._reset_options(options)
        if seed is not None:
            if isinstance(seed, (list, tuple, np.ndarray)):
                raise ValueError("seed is one integer for all envs (env i plays game i of it), not a list")
            seed = check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            self._seed = seed
        elif self._seed is None:
            self._seed = int(self.np_random.integers(0, 2**64, dtype=np.uint64))
        if first is not None or seed is not None or not self._started:
            self._games[:] = (first or 0) + np.arange(self.num_envs, dtype=np.int64)
        else:  # a plain reset goes on with each env's sequence of games, as autoreset would
            check_game(int(self._games.max()) + self.num_envs)
            self._games += self.num_envs
        obs, masks = self._new_obs()
        RK.vector_reset(np.uint64(self._seed), self._games, self._decks, self._states, self._rules, self._cards,
                        self._legal, self._rngs, self._pending, obs, masks)
        self._last[:] = -1
        self._started = True
        n = self.num_envs
        info = {"action_mask": masks, "_action_mask": np.ones(n, np.bool_),
                "game": self._games.copy(), "_game": np.ones(n, np.bool_)}
        return self._observation(obs), info

    def step(self, actions):
        """Place each env's card on its cell (or start its next game): (obs, rewards, terminated, truncated, info)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        if self.illegal_action == "raise":
            i = int(RK.first_illegal(actions, self._legal, self._pending))
            if i >= 0:
                raise IllegalActionError(self._illegal_message(i, int(actions[i])))
        n = self.num_envs
        obs, masks = self._new_obs()
        rewards = np.empty(n, np.float64)
        terminated = np.empty(n, np.bool_)
        ends = np.empty(n, np.int8)
        scores = np.empty(n, np.int8)
        placed = ~self._pending
        RK.vector_step(actions, np.uint64(self._seed), np.int64(n), self._games, self._decks, self._states,
                       self._rules, self._cards, self._legal, self._rngs, self._pending, self._reward,
                       obs, masks, rewards, terminated, ends, scores)
        self._last = np.where(placed, actions, -1)
        info = {"action_mask": masks, "_action_mask": np.ones(n, np.bool_),
                "game": self._games.copy(), "_game": np.ones(n, np.bool_),
                "end": ends, "_end": terminated.copy(), "score": scores, "_score": scores >= 0}
        return self._observation(obs), rewards, terminated, np.zeros(n, np.bool_), info

    def random_actions(self) -> np.ndarray:
        """A uniformly random legal cell for every env: the `random` policy, one draw from each game's stream."""
        actions = np.empty(self.num_envs, np.int64)
        RK.random_actions(self._legal, self._rngs, self._pending, actions)
        return actions

    def render(self):
        """Every env's table: a tuple of texts ("ansi") or of RGB images ("rgb_array"); None without a render mode."""
        if self.render_mode is None or not self._started:
            return None
        frames = []
        for i in range(self.num_envs):
            card = 0 if self._pending[i] else int(self._cards[i])
            mark = int(self._last[i]) if self._last[i] >= 0 else None
            if self.render_mode == "rgb_array":
                frames.append(draw_rgb(self._states[i], card, mark))
            else:
                board = Board(self.rules)
                board.state[:] = self._states[i]
                status = f"game {int(self._games[i])}: " + (f"drew {card}" if card else "over")
                frames.append(f"{board.render(mark=mark)}\n{status}\n")
        return tuple(frames)

    @property
    def games(self) -> np.ndarray:
        """The game index each env is playing (a copy)."""
        return self._games.copy()

    @property
    def seed_used(self) -> int | None:
        """The seed of the deals (None before the first reset)."""
        return self._seed

    # --- helpers --------------------------------------------------------------------------------------

    def _reset_options(self, options) -> int | None:
        if options is None:
            return None
        if not isinstance(options, dict):
            raise ValueError(f"options must be a dict (key 'game'), not {type(options).__name__}")
        unknown = sorted(set(options) - set(VECTOR_RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option {', '.join(map(repr, unknown))}; valid options: game "
                             f"(every env is reset: reset_mask is not supported)")
        if "game" not in options:
            return None
        first = check_game(options["game"])
        check_game(first + self.num_envs - 1)
        return first

    def _check_actions(self, actions) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one cell per env, not {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be integer cells 0..48 (row * 7 + col), not dtype {a.dtype}")
        return np.ascontiguousarray(a, dtype=np.int64)

    def _illegal_message(self, i: int, cell: int) -> str:
        turn = int(self._states[i, K.TURN]) + 1
        where = cell_name(cell) if 0 <= cell < K.CELLS else f"{cell} (cells are 0..48, row * 7 + col)"
        return (f"illegal action for env {i} (game {int(self._games[i])} of seed {self._seed}): cell {where} "
                f"is not legal on turn {turn} for the drawn {int(self._cards[i])}; legal cells: "
                f"{' '.join(map(str, legal_list(int(self._legal[i]))))} (see info['action_mask'][{i}])")

    def _new_obs(self):
        return np.empty((self.num_envs, RK.OBS_SIZE), np.int8), np.empty((self.num_envs, K.CELLS), np.int8)

    def _observation(self, flat: np.ndarray):
        return flat if self.flat else O.as_dict(flat)
