"""`FoursquareEnv`: one game of Foursquare as a Gymnasium environment.

- Observation: the dict of `sim.rl.observation` (top ranks, faces and pile
  heights of the 7x7 cells, the drawn card, the stock's counts by rank, the
  turn); `FlatObservation` makes it one int8 vector.
- Action: ``Discrete(49)``, the canonical cell ``row * 7 + col`` for the
  drawn card. ``info["action_mask"]`` (int8, 49 entries) marks the legal
  cells, the convention of Gymnasium's masked environments
  (``env.action_space.sample(mask=info["action_mask"])``). An illegal action
  raises `IllegalActionError` naming the cell; with
  ``illegal_action="lose"`` it ends the game as lost instead (end
  ``illegal_move``), for learners that do not mask.
- Reward: ``reward="win"``: 1 on a win; ``reward="score"``: the score (cards
  left in the stock) on a win; 0 otherwise, and 0 on every step before the
  end. The episode ends (``terminated``) when the engine ends the game; it is
  never truncated (a game lasts at most 40 steps).
- Seeding: ``reset(seed=S, options={"game": i})`` deals game ``i`` of seed
  ``S``, the deck of `sim run --seed S`; ``reset(seed=S)`` deals game 0 and
  each later ``reset()`` the next game of the same seed, so the episodes
  after ``reset(seed=S)`` are games 0, 1, 2, ... of ``sim run --seed S``.
  A first ``reset()`` with no seed draws one from the environment's
  ``np_random``; ``info["seed"]`` and ``info["game"]`` say which deal it is.
  ``options={"deck": [...]}`` plays a given deck of 40 ranks.
"""

from __future__ import annotations

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("sim.rl needs gymnasium: pip install -e '.[rl]'") from e

import numpy as np

from sim import kernels as K
from sim.engine.board import Board
from sim.engine.cards import check_game, check_seed, validate_deck
from sim.engine.results import END_NAMES
from sim.engine.rules import Rules
from sim.rl import kernels as RK
from sim.rl import observation as O
from sim.rl.render import draw_rgb

REWARDS = {"win": RK.REWARD_WIN, "score": RK.REWARD_SCORE}
"""Reward kinds: name -> code of sim.rl.kernels."""

ILLEGAL_ACTIONS = ("raise", "lose")
"""What an illegal action does: raise IllegalActionError, or lose the game (end illegal_move)."""

RESET_OPTIONS = ("game", "deck")


class IllegalActionError(ValueError):
    """An action that is not a legal cell for the drawn card."""


def check_rules(rules) -> Rules:
    """A `Rules` from None (the defaults), a Rules, or a dict of rule options; ValueError/TypeError otherwise."""
    if rules is None:
        return Rules()
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, dict):
        known = list(Rules.__dataclass_fields__)
        unknown = sorted(set(rules) - set(known))
        if unknown:
            raise ValueError(f"unknown rule {', '.join(map(repr, unknown))}; valid rules: {', '.join(known)}")
        return Rules(**rules)
    raise TypeError(f"rules must be a sim.Rules or a dict of rule options, not {type(rules).__name__}")


def check_choice(name: str, value, choices) -> str:
    """`value` when it is one of `choices`; ValueError naming them otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; valid values: {', '.join(choices)}")
    return value


def observation_space(rules: Rules) -> spaces.Dict:
    """The observation dict's space under `rules` (see sim.rl.observation)."""
    grid = O.GRID
    return spaces.Dict({
        "top": spaces.Box(0, K.RANKS, grid, np.int8),
        "face_down": spaces.Box(0, 1, grid, np.int8),
        "height": spaces.Box(0, rules.max_pile, grid, np.int8),
        "card": spaces.Discrete(K.RANKS + 1),
        "stock": spaces.Box(0, K.COPIES, (K.RANKS,), np.int8),
        "turn": spaces.Discrete(K.DECK_SIZE + 1),
    })


def flat_observation_space(rules: Rules) -> spaces.Box:
    """The flat observation's space under `rules` (OBS_SIZE int8 values)."""
    return spaces.Box(np.zeros(RK.OBS_SIZE, np.int8), O.flat_high(rules.max_pile), dtype=np.int8)


def cell_name(cell: int) -> str:
    """A canonical cell with its row and column, e.g. "24 (r3 c3)"."""
    return f"{cell} (r{cell // K.SIDE} c{cell % K.SIDE})"


def check_action(action) -> int:
    """The action as an int; ValueError unless it is an integer (a cell 0..48 is checked by the step)."""
    if type(action) is int or type(action) is np.int64:  # the common cases, first
        return int(action)
    if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
        action = action.item()
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise ValueError(f"an action is an integer cell 0..48 (row * 7 + col), not {action!r}")
    return int(action)


def legal_list(legal: int) -> list[int]:
    """The cells of a bit mask, ascending."""
    return [c for c in range(K.CELLS) if (legal >> c) & 1]


class FoursquareEnv(gym.Env):
    """One game of Foursquare per episode (see the module docstring for spaces, reward and seeding)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, rules: Rules | dict | None = None, reward: str = "win", render_mode: str | None = None,
                 illegal_action: str = "raise"):
        self.rules = check_rules(rules)
        """The rule options of every game."""
        self.reward_kind = check_choice("reward", reward, tuple(REWARDS))
        """"win" (1 on a win) or "score" (the score on a win)."""
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        """"ansi", "rgb_array" or None."""
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTIONS)
        """"raise" (IllegalActionError) or "lose" (the game ends as lost, end illegal_move)."""
        self.observation_space = observation_space(self.rules)
        self.action_space = spaces.Discrete(K.CELLS)
        self._rules = self.rules.as_array()
        self._state = np.empty(K.STATE_SIZE, np.int64)
        self._decks = np.empty((1, K.DECK_SIZE), np.uint8)
        self._deck = self._decks[0]
        self._rng = np.zeros(1, np.uint64)
        self._obs = np.zeros(RK.OBS_SIZE, np.int8)
        self._grids = self._obs[RK.OBS_TOP:RK.OBS_CARD].reshape((3,) + O.GRID)  # views for `_observation`
        self._stock = self._obs[RK.OBS_STOCK:RK.OBS_TURN]
        self._mask = np.zeros(K.CELLS, np.int8)
        self._seed: int | None = None
        self._next_game = 0
        self._game: int | None = None
        self._card = 0
        self._legal = 0
        self._end: int | None = None
        self._last_cell: int | None = None
        self._started = False

    def __setstate__(self, state):
        """After a copy or an unpickling: the views into the buffers again (copying made them arrays of their own,
        which `reset` and `step` would not write)."""
        self.__dict__.update(state)
        self._deck = self._decks[0]
        self._grids = self._obs[RK.OBS_TOP:RK.OBS_CARD].reshape((3,) + O.GRID)
        self._stock = self._obs[RK.OBS_STOCK:RK.OBS_TURN]

    # --- the Gymnasium API ---------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal a game and draw its first card: (observation, info with action_mask, seed, game)."""
        game, deck = self._reset_options(options)
        if seed is not None:
            seed = check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            self._seed, self._next_game = seed, 0
        elif self._seed is None:
            self._seed = int(self.np_random.integers(0, 2**64, dtype=np.uint64))
        if deck is not None:
            self._deck[:] = deck
            self._game = None
        else:
            self._game = check_game(self._next_game) if game is None else game
            self._next_game = self._game + 1
            K.deal_batch(np.uint64(self._seed), np.int64(self._game), self._decks)
        self._rng[0] = K.stream_start(np.uint64(self._seed), np.int64(self._game or 0), K.STREAM_POLICY)
        self._card, self._legal = RK.env_reset(self._deck, self._rules, self._state, self._obs, self._mask)
        self._end, self._last_cell, self._started = None, None, True
        info = {"action_mask": self._mask.copy(), "seed": self._seed, "game": self._game}
        return self._observation(), info

    def step(self, action):
        """Place the drawn card on cell `action`: (observation, reward, terminated, truncated, info)."""
        if self._end is not None or not self._started:
            raise RuntimeError("call reset() before step()" if not self._started else
                               f"the game is over ({END_NAMES[self._end]}); call reset() to deal another")
        cell = check_action(action)
        if not (0 <= cell < K.CELLS and (self._legal >> cell) & 1):
            if self.illegal_action == "raise":
                raise IllegalActionError(self._illegal_message(cell))
            return self._illegal_end(cell)
        end, self._card, self._legal = RK.env_step(self._deck, self._rules, self._state, cell, self._card,
                                                   self._obs, self._mask)
        self._last_cell = cell
        obs = self._observation()
        info = {"action_mask": self._mask.copy()}
        if end == K.GOES_ON:
            return obs, 0.0, False, False, info
        self._end = end
        return obs, self._reward_now(), True, False, self._end_info(info)

    def random_action(self) -> int:
        """A uniformly random legal cell: the `random` policy's choice, one draw from the game's policy stream.

        The stream is keyed by the deal's (seed, game) (game 0 for a given
        deck), so choosing every action with it plays the game `sim run
        --policy random` plays.
        """
        if self._end is not None or not self._started:
            raise RuntimeError("no card to place: call reset() first")
        return RK.random_cell(self._legal, self._rng)

    def render(self):
        """The table as text ("ansi": the grid `sim replay` prints) or as an RGB image ("rgb_array")."""
        if self.render_mode is None:
            gym.logger.warn("render() without a render_mode: make the environment with render_mode='ansi' "
                            "or 'rgb_array'")
            return None
        self._check_dealt()
        if self.render_mode == "rgb_array":
            return draw_rgb(self._state, self._card if self._end is None else 0, self._last_cell)
        return self.render_text()

    # --- reading the game -------------------------------------------------------------------------------

    @property
    def seed_used(self) -> int | None:
        """The seed of the current deal (None before the first reset)."""
        return self._seed

    @property
    def game(self) -> int | None:
        """The game index of the current deal within its seed (None for a deck given in the options)."""
        return self._game

    def legal_cells(self) -> list[int]:
        """The legal cells for the drawn card, ascending (empty once the game is over)."""
        return legal_list(self._legal)

    def board(self) -> Board:
        """A copy of the current position as a `sim.Board` (the table, faces, heights, stock counts)."""
        self._check_dealt()
        board = Board(self.rules)
        board.state[:] = self._state
        return board

    def render_text(self) -> str:
        """The table as `sim replay` draws it (the last card placed marked *), then the drawn card or the end."""
        grid = self.board().render(mark=self._last_cell)
        turn = int(self._state[K.TURN])
        if self._end is None:
            status = f"turn {turn + 1}: drew {self._card}; legal cells {' '.join(map(str, self.legal_cells()))}"
        elif self._end == K.END_WIN:
            status = f"end: win after {turn} cards, score {K.DECK_SIZE - turn} (cards left in the stock)"
        else:
            status = f"end: lost ({END_NAMES[self._end]}) after {turn} cards"
        return f"{grid}\n{status}\n"

    # --- helpers --------------------------------------------------------------------------------------

    def _check_dealt(self):
        """Before the first reset there is no table to read (the state is not yet written)."""
        if not self._started:
            raise RuntimeError("no game yet: call reset() first")

    def _reset_options(self, options):
        if options is None:
            return None, None
        if not isinstance(options, dict):
            raise ValueError(f"options must be a dict (keys {', '.join(RESET_OPTIONS)}), not {type(options).__name__}")
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option {', '.join(map(repr, unknown))}; "
                             f"valid options: {', '.join(RESET_OPTIONS)}")
        if options.get("game") is not None and options.get("deck") is not None:
            raise ValueError("give options 'game' (a seeded deal) or 'deck' (a given deck), not both")
        game = options.get("game")
        deck = options.get("deck")
        return (None if game is None else check_game(game)), (None if deck is None else validate_deck(deck))

    def _illegal_message(self, cell: int) -> str:
        turn = int(self._state[K.TURN]) + 1
        where = cell_name(cell) if 0 <= cell < K.CELLS else f"{cell} (cells are 0..48, row * 7 + col)"
        return (f"illegal action: cell {where} is not legal on turn {turn} for the drawn {self._card}; "
                f"legal cells: {' '.join(map(str, self.legal_cells()))} (see info['action_mask'])")

    def _illegal_end(self, cell: int):
        """illegal_action="lose": the game ends here, lost (end illegal_move); info names the cell."""
        info = {"illegal_action": cell, "message": self._illegal_message(cell)}
        self._end, self._legal, self._card = K.END_ILLEGAL_MOVE, 0, 0
        RK.observe_into(self._state, np.int64(0), self._obs)
        self._mask[:] = 0
        info["action_mask"] = self._mask.copy()
        return self._observation(), 0.0, True, False, self._end_info(info)

    def _observation(self) -> dict:
        """A fresh observation dict of the buffers the kernels wrote (what `O.as_dict` gives, faster)."""
        grids = self._grids.copy()
        obs = self._obs
        return {"top": grids[0], "face_down": grids[1], "height": grids[2], "card": O.INT64[obs[RK.OBS_CARD]],
                "stock": self._stock.copy(), "turn": O.INT64[obs[RK.OBS_TURN]]}

    def _reward_now(self) -> float:
        if self._end != K.END_WIN:
            return 0.0
        return 1.0 if self.reward_kind == "win" else float(K.DECK_SIZE - self._state[K.TURN])

    def _end_info(self, info: dict) -> dict:
        won = self._end == K.END_WIN
        played = int(self._state[K.TURN])
        info.update(end=END_NAMES[self._end], won=won, score=K.DECK_SIZE - played if won else None,
                    cards_played=played, face_down=int(self._state[K.FACE_DOWN_COUNT]),
                    piles=int(self._state[K.PILES]))
        return info


class FlatObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """The environment with its observation as one int8 vector (layout: sim.rl.observation)."""

    def __init__(self, env: gym.Env):
        # Recorded in the spec, as Gymnasium's own wrappers are: env.spec.make() and check_env rebuild it.
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self.observation_space = flat_observation_space(env.unwrapped.rules)

    def observation(self, observation: dict) -> np.ndarray:
        """The flat vector of an observation dict."""
        return O.as_flat(observation)
