"""Play games with any policy: built-ins, compiled and plain-Python plugins, the oracle.

`resolve` turns a ``--policy`` name and its ``--policy-arg`` values into a
`PolicySpec`; the functions below route each kind to what plays it: the
engine's compiled loops (built-ins and compiled plugins), the Python turn
loop (plain-Python plugins), or the solver (the oracle).
"""

import contextlib

import numpy as np
from numba.core.errors import NumbaError

import policies
from sim import kernels as K
from sim.engine.cards import MAX_GAME, check_game, check_seed, deal, deal_range, validate_deck, validate_decks
from sim.engine.loop import Loops, builtin_loops
from sim.engine.results import (
    GameColumns, GameResult, GameTrace, PolicyError, finish_columns, illegal_move_error, new_columns,
)
from sim.engine.rules import Rules
from sim.players import oracle, plugins
from sim.players.plugins import PolicySpec


def resolve(policy: str | PolicySpec, policy_args=None) -> PolicySpec:
    """Turn a --policy value into a PolicySpec, checking that it loads; ValueError when it does not."""
    if isinstance(policy, PolicySpec):
        return policy
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a name, 'package.module:attr' or 'path/to/file.py:attr' (a string), "
                        f"not {type(policy).__name__}")
    items = policy_items(policy_args)
    if policy == "oracle":  # sees the stock: played by the solver
        oracle.oracle_options(dict(items))
        return PolicySpec(policy, "oracle", items)
    if policy in policies.BUILTIN:
        spec = PolicySpec(policy, "builtin", items)
        spec.params()  # validates the arguments
        return spec
    return plugins.resolve_plugin(policy, items)


def policy_items(policy_args) -> tuple[tuple[str, str], ...]:
    """A policy's arguments as (name, value) strings, from a mapping or (name, value) pairs, the forms the
    API's `policy_args` and `RunConfig.policy_args` take."""
    if policy_args is None:
        return ()
    pairs = policy_args.items() if hasattr(policy_args, "items") else policy_args
    try:
        return tuple((str(k), str(v)) for k, v in pairs)
    except (TypeError, ValueError):
        raise TypeError(f"policy_args must be a mapping or (name, value) pairs, not {policy_args!r}") from None


def describe() -> list[tuple[str, str, str]]:
    """(name, description, parameters) of every available policy, for `sim policies`."""
    rows = []
    for name in policies.BUILTIN:
        info = policies.get(name)
        params = ", ".join(f"{p.name}={p.default}" for p in info.params) or "-"
        rows.append((info.name, info.description, params))
    rows.append(oracle.ORACLE_ROW)
    for name, target in sorted(plugins.entry_point_policies().items()):
        rows.append((name, f"plugin {target}", "see its documentation"))
    return rows


def _rules(rules: Rules | None) -> Rules:
    if rules is None:
        return Rules()
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a sim.Rules, not {type(rules).__name__}")
    return rules


def _loops(spec: PolicySpec) -> Loops | None:
    """The compiled loops that play `spec`, or None when it is not compiled."""
    if spec.kind == "builtin":
        return builtin_loops(policies.BUILTIN[spec.name])
    if spec.kind == "compiled":
        return plugins.compiled_loops(spec)
    return None


def trace(deck, policy: str | PolicySpec = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
          policy_args=None) -> GameTrace:
    """Play one game and keep every turn (cells, checks fired) and the final position."""
    cards = validate_deck(deck)
    rules = _rules(rules)
    seed, game = check_seed(seed), check_game(game)
    spec = resolve(policy, policy_args)
    if spec.kind == "oracle":
        line = oracle.oracle_game(cards, rules, oracle.oracle_options(spec.arg_dict))
        return line if line is not None else trace(cards, "greedy", rules, seed, game)
    loops = _loops(spec)
    if loops is None:
        return plugins.trace_python(spec, cards, rules, seed, game)
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.full(K.DECK_SIZE + 1, -1, np.int64)
    fired = np.zeros(K.DECK_SIZE, np.int64)
    try:
        with _output(spec):
            code, played = loops.one_game(cards, np.uint64(seed), np.int64(game), spec.params(), rules.as_array(),
                                          state, moves, fired)
    except Exception as e:
        _plugin_failed(spec, e, cards[None, :], seed, game, rules)
        raise
    if code == K.END_ILLEGAL_MOVE:
        raise illegal_move_error(spec.name, int(moves[played]), seed, game, played + 1)
    return GameTrace(int(code), int(played), tuple(moves[:played].tolist()), tuple(fired[:played].tolist()), state)


def play(deck, policy: str | PolicySpec = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
         policy_args=None) -> GameResult:
    """Play one game from a given deck of 40 ranks (four of each of 1..10).

    `seed` and `game` key the policy's random stream, so `play(deal(S, i), P,
    seed=S, game=i)` is exactly game i of a run with seed S. `policy` is a
    built-in name or a plugin (see sim.players.plugins); `policy_args` its parameters.
    """
    return trace(deck, policy, rules, seed, game, policy_args).result()


def _plugin_failed(spec: PolicySpec, e: Exception, decks: np.ndarray, seed: int, first_game: int,
                   rules: Rules) -> None:
    """A compiled plugin's loop failed on `decks`: PolicyError when the plugin is at fault, else return."""
    if spec.kind != "compiled":
        return
    if isinstance(e, NumbaError):  # it never ran: it does not fit the contract
        raise PolicyError(f"policy {spec.name!r} does not compile as a policy: "
                          f"{plugins.contract_problem(spec.load(), e)}") from None
    # A compiled plugin raised: play the games again turn by turn through Python to say which game and
    # turn, as the error of any policy does.
    plugins.play_python(spec, decks, seed, first_game, rules, new_columns(len(decks)))


def _output(spec: PolicySpec):
    """Where a compiled plugin's `print` goes while its games play: stderr, as a plain-Python plugin's does
    (numba's print writes to sys.stdout), so that stdout holds only the command's result."""
    return plugins.plugin_output() if spec.kind == "compiled" else contextlib.nullcontext()


def _play(spec: PolicySpec, decks: np.ndarray, seed: int, first_game: int, rules: Rules, cols: dict) -> None:
    """Fill the columns with the games of `decks` (row i is game first_game + i)."""
    loops = _loops(spec)
    if loops is not None:
        try:
            with _output(spec):
                loops.deck_batch(decks, np.uint64(seed), np.int64(first_game), spec.params(), rules.as_array(),
                                 cols["end"], cols["cards_played"], cols["face_down"], cols["piles"],
                                 cols["score"], cols["illegal"])
        except Exception as e:
            _plugin_failed(spec, e, decks, seed, first_game, rules)
            raise
    elif spec.kind == "oracle":
        _play(resolve("greedy"), decks, seed, first_game, rules, cols)
        oracle.oracle_rows(decks, rules, oracle.oracle_options(spec.arg_dict), cols)
    else:
        plugins.play_python(spec, decks, seed, first_game, rules, cols)


def play_range(seed: int, start: int, stop: int, policy: str | PolicySpec = "greedy", rules: Rules | None = None,
               record_deals: bool = False, policy_args=None, params=None) -> GameColumns:
    """Deal and play games start..stop-1 of `seed`.

    `params` gives a built-in policy's parameter array directly (sim tune uses it).
    """
    seed = check_seed(seed)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, stop)) \
            or not 0 <= start <= stop or stop > 2**63:
        raise ValueError(f"need whole numbers 0 <= start <= stop <= 2**63, got start={start!r}, stop={stop!r}")
    start, stop = int(start), int(stop)
    rules = _rules(rules)
    spec = resolve(policy, policy_args)
    n = stop - start
    cols = new_columns(n)
    games = np.arange(start, stop, dtype=np.uint64)
    if spec.kind == "builtin":  # dealt inside the compiled loop: no deck array unless recorded
        decks = np.empty((n if record_deals else 1, K.DECK_SIZE), np.uint8)
        p = spec.params() if params is None else np.ascontiguousarray(params, dtype=np.float64)
        _loops(spec).seeded_batch(np.uint64(seed), np.int64(start), n, p, rules.as_array(), record_deals, decks,
                                  cols["end"], cols["cards_played"], cols["face_down"], cols["piles"],
                                  cols["score"], cols["illegal"])
        return finish_columns(cols, games, decks if record_deals else None, spec.name, seed)
    decks = deal_range(seed, start, stop)
    _play(spec, decks, seed, start, rules, cols)
    return finish_columns(cols, games, decks if record_deals else None, spec.name, seed)


def play_decks(decks, policy: str | PolicySpec = "greedy", rules: Rules | None = None, seed: int = 0,
               first_game: int = 0, record_deals: bool = False, policy_args=None) -> GameColumns:
    """Play an (n, 40) array of given decks; row i is game first_game + i."""
    seed = check_seed(seed)
    decks = validate_decks(decks)
    rules = _rules(rules)
    spec = resolve(policy, policy_args)
    n = decks.shape[0]
    first_game = check_game(first_game)
    if n and first_game + n - 1 > MAX_GAME:
        raise ValueError(f"games {first_game}..{first_game + n - 1} go past the largest game index, 2**63-1")
    cols = new_columns(n)
    _play(spec, decks, seed, first_game, rules, cols)
    games = np.arange(first_game, first_game + n, dtype=np.uint64)
    return finish_columns(cols, games, decks if record_deals else None, spec.name, seed)


def in_cache(dispatcher) -> bool:
    """Is this jitted function compiled in this process, or in numba's on-disk cache for these sources?"""
    if dispatcher.overloads:
        return True
    try:
        return bool(dispatcher._cache._cache_file._load_index())  # empty when missing or stale
    except Exception:
        return False


def to_compile(policy: str | PolicySpec = "greedy", policy_args=None, *, seeded: bool = True,
               decks: bool = False, replay: bool = False) -> str | None:
    """What `warm_up` with these arguments would compile, saying how often (e.g. "the engine for greedy (first
    run only)"), or None when all is cached.

    A compiled plugin is never cached on disk, so it is always named; the game loop all compiled plugins play
    through is, once.
    """
    spec = resolve(policy, policy_args)
    if spec.kind == "compiled":
        from sim.engine.loop import plugin_games_uncompiled

        said = f"the plugin {spec.name} (every run: a plugin is not cached)"
        return said if in_cache(plugin_games_uncompiled()) else f"{said} and the plugins' game loop (first run only)"
    needed = [K.deal_batch]
    if spec.kind == "oracle":
        from sim.engine.loop import play_line
        from sim.solver import search

        needed += [search.search_init, search.search_run, search.greedy_line, play_line]
        spec = resolve("greedy")
    if spec.kind == "builtin":
        loops = _loops(spec)
        if seeded or decks or replay:
            needed.append(loops.games)
    if all(in_cache(d) for d in needed):
        return None
    return f"the engine for {policy if isinstance(policy, str) else policy.name} (first run only)"


def warm_up(policy: str | PolicySpec = "greedy", policy_args=None, *, seeded: bool = True, decks: bool = False,
            replay: bool = False) -> None:
    """Compile (or load from numba's cache) what playing `policy` needs, and nothing more.

    Call it in the main process before starting workers, so workers never
    compile and never race on the cache files (forked workers inherit the
    compiled code). `seeded`, `decks` and `replay` say which calls will follow:
    `play_range`, `play_decks` and `trace`.
    """
    spec = resolve(policy, policy_args)
    deck = np.array([deal(0, 0)], np.uint8)
    if spec.kind == "python":
        return  # plain Python: nothing to compile but the deal and the kernels, loaded above
    if spec.kind == "oracle":
        oracle.warm_up_solver()
        spec = resolve("greedy")  # the oracle's fallback
    try:
        if seeded or decks or replay:  # one compiled entry point serves all three
            play_decks(deck, spec)
    except NumbaError as e:  # the plugin does not fit the contract
        raise PolicyError(f"policy {spec.name!r} does not compile as a policy: "
                          f"{plugins.contract_problem(spec.load(), e)}") from None

