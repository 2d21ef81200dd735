"""Policies from outside the package: `package.module:attr`, `path/to/file.py:attr`, entry points.

Two kinds share one contract (see policies/__init__.py):

- **compiled**: a numba-jitted ``choose(state, rules, card, legal, rng, params)``.
  It runs inside a compiled game loop made for it here; numba cannot cache a
  loop that calls another jitted function, so the main process compiles it
  once per run (a few seconds) and forked workers inherit it.
- **plain Python**: a function ``choose(position, card) -> cell``, or a class
  whose instances have that ``choose`` method (constructed with the
  ``--policy-arg`` values as keyword arguments, strings). It runs through a
  Python game loop over the same compiled kernels.

`Position` is what a plain-Python policy sees: the table, the faces, the
pile heights, the legal cells and the stock's composition, never its order.
"""

import importlib
import importlib.util
import random
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

import policies
from sim import kernels as K
from sim.engine import Board
from sim.game import GameColumns, PolicyError, check_seed, finish_columns, new_columns, validate_decks
from sim.rules import Rules

ENTRY_POINT_GROUP = "foursquare_sim.policies"


@dataclass(frozen=True)
class PolicySpec:
    """A policy resolved from its command-line name; picklable, so workers can load it again."""

    name: str
    """As given: a built-in name, an entry point, or module:attr / file.py:attr."""
    kind: str
    """builtin, compiled, python, or oracle (the solver, which sees the stock: sim.solve_run)."""
    args: tuple[tuple[str, str], ...] = ()
    """--policy-arg values, as given."""
    target: str | None = None
    """module:attr or file.py:attr of a plugin."""

    @property
    def arg_dict(self) -> dict[str, str]:
        return dict(self.args)

    def params(self) -> np.ndarray:
        """The float64 params array a compiled policy receives."""
        if self.kind == "builtin":
            return policies.build_params(self.name, self.arg_dict)
        if self.kind == "compiled":
            try:
                return np.array([float(v) for _, v in self.args], dtype=np.float64)
            except ValueError:
                raise ValueError(f"policy {self.name!r}: compiled plugins take numeric --policy-arg values") from None
        return np.empty(0, np.float64)

    def load(self):
        """The plugin object (function, class or jitted function)."""
        return _load_target(self.target)


def _load_target(target: str):
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise ValueError(f"policy {target!r}: expected package.module:attr or path/to/file.py:attr")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise ValueError(f"policy {target!r}: no file {where}")
        name = f"foursquare_plugin_{path.stem}_{abs(hash(str(path)))}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as e:
                del sys.modules[name]
                raise ValueError(f"policy {target!r}: importing {where} failed: {type(e).__name__}: {e}") from None
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise ValueError(f"policy {target!r}: cannot import {where}: {e}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"policy {target!r}: {where} has no attribute {attr!r}") from None


def entry_point_policies() -> dict[str, str]:
    """Policies other installed packages register: name -> module:attr."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def resolve(name: str, args: dict[str, str] | None = None) -> PolicySpec:
    """Turn a --policy value into a PolicySpec, checking it loads; ValueError when it does not."""
    items = tuple((args or {}).items())
    if name == "oracle":  # sees the stock: played by the solver (sim.solve_run)
        from sim.solve_run import oracle_options

        oracle_options(dict(items))
        return PolicySpec(name, "oracle", items)
    if name in policies.BUILTIN:
        spec = PolicySpec(name, "builtin", items)
        spec.params()  # validates the arguments
        return spec
    target = name if ":" in name else entry_point_policies().get(name)
    if target is None:
        known = ", ".join(list(policies.BUILTIN) + sorted(entry_point_policies()))
        raise ValueError(f"unknown policy {name!r}; known policies: {known} "
                         f"(or package.module:attr, path/to/file.py:attr)")
    obj = _load_target(target)
    if isinstance(obj, CPUDispatcher):
        spec = PolicySpec(name, "compiled", items, target)
        spec.params()
        return spec
    if callable(obj) or hasattr(obj, "choose"):
        spec = PolicySpec(name, "python", items, target)
        make_python_policy(spec)  # constructs a class now, so bad arguments fail before any game
        return spec
    raise ValueError(f"policy {name!r}: {target} is neither a function, a class nor a jitted function")


def describe() -> list[tuple[str, str, str]]:
    """(name, description, parameters) of every available policy, for `sim policies`."""
    rows = []
    for info in policies.BUILTIN.values():
        params = ", ".join(f"{p.name}={p.default}" for p in info.params) or "-"
        rows.append((info.name, info.description, params))
    from sim.solve_run import ORACLE_ROW  # sees the stock: runs through the solver, not the game loop

    rows.append(ORACLE_ROW)
    for name, target in sorted(entry_point_policies().items()):
        rows.append((name, f"plugin {target}", "see its documentation"))
    return rows


# --- plain-Python policies ------------------------------------------------------------------


class Position:
    """What a plain-Python policy sees of a game: read-only, and never the stock's order."""

    def __init__(self, board: Board, seed: int, game: int, rng: random.Random):
        self._board = board
        self.seed = seed
        """Seed of the run (with `game`, what the policy's randomness may depend on)."""
        self.game = game
        self.random = rng
        """A random.Random keyed by (seed, game): use it for reproducible choices."""

    @property
    def rules(self) -> Rules:
        return self._board.rules

    @property
    def turn(self) -> int:
        """Cards placed so far."""
        return int(self._board.state[K.TURN])

    def legal_cells(self) -> tuple[int, ...]:
        return self._board.legal_cells()

    def top(self, cell: int) -> int | None:
        return self._board.top(cell)

    def is_face_down(self, cell: int) -> bool:
        return self._board.is_face_down(cell)

    def height(self, cell: int) -> int:
        return self._board.height(cell)

    @property
    def occupied(self) -> tuple[int, ...]:
        return self._board.occupied

    @property
    def piles(self) -> int:
        return self._board.piles

    @property
    def face_down_count(self) -> int:
        return self._board.face_down_count

    def stock_counts(self) -> dict[int, int]:
        """Cards of each rank still in the stock (the drawn card excluded)."""
        return self._board.stock_counts()

    def board(self) -> Board:
        """A copy of the position as a Board, to try placements on."""
        b = Board(self.rules)
        b.state[:] = self._board.state
        return b


def make_python_policy(spec: PolicySpec):
    """A callable (position, card) -> cell for a plain-Python plugin."""
    obj = spec.load()
    if isinstance(obj, type):
        try:
            instance = obj(**spec.arg_dict)
        except TypeError as e:
            raise ValueError(f"policy {spec.name!r}: {e}") from None
        return instance.choose
    if spec.args:
        raise ValueError(f"policy {spec.name!r} is a function and takes no --policy-arg")
    if hasattr(obj, "choose") and not callable(obj):
        return obj.choose
    return obj


def _decider(spec: PolicySpec, rules: Rules):
    """decide(position, state, card, legal, rng) -> cell for a plugin of either kind."""
    if spec.kind == "compiled":
        fn, params, r = spec.load(), spec.params(), rules.as_array()
        return lambda position, state, card, legal, rng: fn(state, r, card, np.int64(legal), rng, params)
    choose = make_python_policy(spec)
    return lambda position, state, card, legal, rng: choose(position, card)


def _python_game(deck, decide, rules: Rules, seed: int, game: int, name: str):
    """One game through Python: (end code, cards played, moves, fired flags, final state)."""
    board = Board(rules)
    state, r = board.state, rules.as_array()
    start = K.stream_start(np.uint64(seed), np.int64(game), K.STREAM_POLICY)
    rng = np.array([start], np.uint64)
    position = Position(board, seed, game, random.Random(int(start)))
    code, played = K.END_STOCK_EMPTY, K.DECK_SIZE
    moves, fired = [], []
    for t in range(K.DECK_SIZE):
        card = int(deck[t])
        K.draw(state, card)
        legal = int(K.legal_cells(state, r))
        if legal == 0:
            code, played = K.END_NO_MOVE, t
            break
        try:
            cell = decide(position, state, card, legal, rng)
        except Exception as e:
            raise PolicyError(f"policy {name!r} raised {type(e).__name__}: {e} "
                              f"(seed {seed}, game {game}, turn {t + 1})") from e
        if isinstance(cell, bool) or not isinstance(cell, (int, np.integer)) or not 0 <= cell < K.CELLS \
                or not (legal >> int(cell)) & 1:
            raise PolicyError(f"policy {name!r} returned illegal cell {cell!r} "
                              f"(seed {seed}, game {game}, turn {t + 1})")
        moves.append(int(cell))
        fired.append(int(K.place(state, r, int(cell), card)))
        end = int(K.end_of_turn(state, r))
        if end != K.GOES_ON:
            code, played = end, t + 1
            break
    return code, played, moves, fired, state


def trace_plugin(spec: PolicySpec, deck, rules: Rules, seed: int, game: int):
    """sim.game.trace for a plugin: every turn goes through Python."""
    if spec.kind == "oracle":
        from sim.solve_run import oracle_trace

        return oracle_trace(deck, rules, spec.arg_dict)
    return _python_game(deck, _decider(spec, rules), rules, seed, game, spec.name)


def _run_compiled(spec: PolicySpec, decks, seed, first_game, rules: Rules, cols) -> None:
    batch = compiled_batch(spec)
    batch(decks, np.uint64(seed), np.int64(first_game), rules.as_array(), spec.params(), cols["end"],
          cols["cards_played"], cols["face_down"], cols["piles"], cols["score"], cols["illegal"])


def compile_plugin(spec: PolicySpec) -> None:
    """Compile a compiled plugin's game loop now (in the main process, before workers fork)."""
    if spec.kind == "oracle":
        from sim.solve_run import warm_up_solver

        warm_up_solver()
    if spec.kind == "compiled":
        deck = np.arange(K.DECK_SIZE, dtype=np.uint8)[None, :] // K.COPIES + 1
        _run_compiled(spec, deck, 0, 0, Rules(), new_columns(1))


def play_plugin(spec: PolicySpec, decks: np.ndarray, seed: int, first_game: int, rules: Rules,
                record_deals: bool = False) -> GameColumns:
    """Play given decks with a plugin policy; row i is game first_game + i."""
    if spec.kind == "oracle":
        from sim.solve_run import oracle_columns

        return oracle_columns(decks, seed, first_game, rules, record_deals, spec.arg_dict)
    seed = check_seed(seed)
    decks = validate_decks(decks)
    n = decks.shape[0]
    cols = new_columns(n)
    if spec.kind == "compiled":
        _run_compiled(spec, decks, seed, first_game, rules, cols)
    else:
        decide = _decider(spec, rules)
        for i in range(n):
            code, played, _, _, state = _python_game(decks[i], decide, rules, seed, first_game + i, spec.name)
            cols["end"][i], cols["cards_played"][i] = code, played
            cols["face_down"][i], cols["piles"][i] = state[K.FACE_DOWN_COUNT], state[K.PILES]
            cols["score"][i] = K.DECK_SIZE - played if code == K.END_WIN else -1
            cols["illegal"][i] = -1
    games = np.arange(first_game, first_game + n, dtype=np.uint64)
    return finish_columns(cols, games, decks if record_deals else None, spec.name, seed)


# --- compiled plugins ---------------------------------------------------------------------------

_BATCHES: dict[str, object] = {}


def compiled_batch(spec: PolicySpec):
    """A compiled batch loop that calls the plugin's jitted choose (compiled once per process)."""
    if spec.target in _BATCHES:
        return _BATCHES[spec.target]
    fn = spec.load()

    @njit
    def batch(decks, seed, first_game, rules, params, end, cards_played, face_down, piles, score, illegal):
        state = np.empty(K.STATE_SIZE, np.int64)
        rng = np.empty(1, np.uint64)
        for i in range(decks.shape[0]):
            rng[0] = K.stream_start(seed, first_game + i, K.STREAM_POLICY)
            K.reset(state)
            code = K.END_STOCK_EMPTY
            played = K.DECK_SIZE
            bad = -1
            for t in range(K.DECK_SIZE):
                card = decks[i, t]
                K.draw(state, card)
                legal = K.legal_cells(state, rules)
                if legal == 0:
                    code, played = K.END_NO_MOVE, t
                    break
                cell = fn(state, rules, card, legal, rng, params)
                if cell < 0 or cell >= K.CELLS or not (legal >> cell) & 1:
                    code, played, bad = K.END_ILLEGAL_MOVE, t, cell
                    break
                K.place(state, rules, cell, card)
                e = K.end_of_turn(state, rules)
                if e >= 0:
                    code, played = e, t + 1
                    break
            end[i] = code
            cards_played[i] = played
            face_down[i] = state[K.FACE_DOWN_COUNT]
            piles[i] = state[K.PILES]
            score[i] = K.DECK_SIZE - played if code == K.END_WIN else -1
            illegal[i] = bad

    _BATCHES[spec.target] = batch
    return batch
