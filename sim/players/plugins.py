"""Policies from outside the package: `package.module:attr`, `path/to/file.py:attr`, entry points.

Two kinds share one contract (see policies/__init__.py):

- **compiled**: a numba-jitted ``choose(state, rules, card, legal, rng, params)``.
  It runs inside the engine's compiled game loop for plugins
  (`sim.engine.loop.plugin_loops`), which numba caches on disk; only the
  plugin's own code is compiled, once per run in the main process, and forked
  workers inherit it.
- **plain Python**: a function ``choose(position, card) -> cell``, or a class
  whose instances have that ``choose`` method (constructed with the
  ``--policy-arg`` values as keyword arguments, strings). It runs through a
  Python game loop over the same compiled kernels.

`Position` is what a plain-Python policy sees: the table, the faces, the
pile heights, the legal cells and the stock's composition, never its order.
"""

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import multiprocessing
import random
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
from numba.core.errors import NumbaError
from numba.core.registry import CPUDispatcher

import policies
from sim import kernels as K
from sim.engine.board import Board
from sim.engine.loop import CONTRACT, is_cell_type, plugin_loops
from sim.engine.results import GameTrace, PolicyError, illegal_move_error
from sim.engine.rules import Rules

ENTRY_POINT_GROUP = "foursquare_sim.policies"


def plugin_output():
    """While a plugin's code runs (its import, its constructor, its games): what it prints goes to stderr, as log
    lines do, so that stdout holds only what the command says (a run's summary, `--format json`)."""
    return contextlib.redirect_stdout(sys.stderr)


@dataclass(frozen=True)
class PolicySpec:
    """A policy resolved from its command-line name; picklable, so workers can load it again."""

    name: str
    """As given: a built-in name, an entry point, or module:attr / file.py:attr."""
    kind: str
    """builtin, compiled, python, or oracle (the solver, which sees the stock: sim.players.oracle)."""
    args: tuple[tuple[str, str], ...] = ()
    """--policy-arg values, as given."""
    target: str | None = None
    """module:attr or file.py:attr of a plugin."""

    @property
    def arg_dict(self) -> dict[str, str]:
        """The --policy-arg values as a dict."""
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


SHA = "__foursquare_sha256__"
"""A plugin module's attribute (and each of its own modules'): the SHA-256 of the source it was loaded from."""
OWN = "__foursquare_own__"
"""A plugin module's attribute: its own modules as ((file, name in sys.modules), ...), itself first (see `_own`)."""


def _module_name(path: Path) -> str:
    # The same name in every process (not hash(), which differs from one process to the next):
    # numba's cache of a jitted function records its module's name and imports it when loading.
    return f"foursquare_plugin_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:16]}"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _exec_file(target: str, path: Path, digest: str):
    """Load the module of file.py:attr from `path` (whose SHA-256 is `digest`), in place of any loaded before.

    It imports the modules beside it as a script would: its folder comes first on the import path while it
    is imported, and stays on it after the installed packages (for imports made when it is called).
    """
    folder = str(path.parent)
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    setattr(module, SHA, digest)
    sys.modules[name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise ValueError(f"policy {target!r}: importing {target.rpartition(':')[0]} failed: "
                         f"{type(e).__name__}: {e}") from None
    finally:
        sys.path.remove(folder)
        if folder not in sys.path:
            sys.path.append(folder)
    return module


def _load_target(target: str):
    with plugin_output():
        return _load(target)


def _load(target: str):
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise ValueError(f"policy {target!r}: expected package.module:attr or path/to/file.py:attr")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise ValueError(f"policy {target!r}: no file {where}")
        module = sys.modules.get(_module_name(path))
    else:
        module = sys.modules.get(where)
        path = _source_file(target) if module is not None else None
    # Loaded again, with its own modules, when one of their files changed since (a notebook editing its
    # plugin or a module it imports between runs): a run records the files' digests, so it must play the
    # code they name. Only the main process does: a worker keeps the modules it has, which `keep_recorded`
    # makes the ones the run recorded, even if a file is edited while the run goes on.
    if module is None or (path is not None and multiprocessing.parent_process() is None
                          and not _is_current(module)):
        module = _import_fresh(target)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"policy {target!r}: {where} has no attribute {attr!r}") from None


def _target(policy: str) -> str | None:
    """The module:attr (or file.py:attr) a policy name stands for: itself, or an entry point's; None for a
    built-in or a name that is no plugin."""
    return policy if ":" in policy else entry_point_policies().get(policy)


def plugin_source(policy: str) -> Path | None:
    """The source file of the plugin `policy` names (file.py:attr, module:attr or an entry point), without
    loading it; None for a built-in or a name that is no plugin."""
    target = _target(policy)
    return None if target is None else _source_file(target)


def _dotted(root: Path, file: Path) -> str | None:
    """The name module `file` has when imported from the folder `root` (the inverse of `_module_file`)."""
    try:
        parts = file.relative_to(root).with_suffix("").parts
    except ValueError:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or None


def _own(target: str, source: Path, files) -> list[tuple[Path, str]]:
    """(file, name in sys.modules) of a plugin's module, then of those of `files` that are its own modules."""
    where = target.rpartition(":")[0]
    root = _plugin_root(target, source)[0]
    own = [(source, _module_name(source) if where.endswith(".py") else where)]
    for file in files:
        name = _dotted(root, file)
        if file != source and name is not None:
            own.append((file, name))
    return own


def _loaded(name: str, file: Path):
    """The module `name` if it is loaded from `file`, else None (not loaded, or another file's)."""
    module = sys.modules.get(name)
    where = getattr(module, "__file__", None)
    try:
        return module if where and Path(where).resolve() == file else None
    except OSError:
        return None


def _fixed(file: Path) -> bool:
    """Whether a module from `file` stays loaded whatever a plugin loaded again does: the Python installation's
    (the standard library, installed packages: other code holds them, and they change only with an install) or
    this project's own (a plugin beside it may import it)."""
    paths = sysconfig.get_paths()
    folders = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders.update(site.getsitepackages() + [site.getusersitepackages()])
    folders.update(str(Path(m.__file__).parent) for m in (policies, K))  # policies/ and sim/
    return any(Path(folder).resolve() in file.parents for folder in folders)


def _import(target: str):
    """The module of module:attr, imported (or the one loaded); ValueError saying why it cannot be."""
    where = target.rpartition(":")[0]
    try:
        return importlib.import_module(where)
    except ImportError as e:
        # `sim` does not import from the working directory (a script's folder is not on the import path)
        file = Path(*where.split(".")).with_suffix(".py")
        hint = f" (for the file {file} here, give {file}:{target.rpartition(':')[2]})" if file.is_file() else ""
        raise ValueError(f"policy {target!r}: cannot import {where}: {e}{hint}") from None


def _import_fresh(target: str):
    """A plugin's module imported again from its file, with the own modules (`local_imports`) an earlier load
    of a plugin imported: each stamped with the digest of the file it came from, and the plugin's module with
    the list of them (`OWN`)."""
    where = target.rpartition(":")[0]
    source = _source_file(target)
    if source is None:  # not found: the import says why
        return _import(target)
    root, within = _plugin_root(target, source)
    own = _own(target, source, local_imports(source, root, within, "" if where.endswith(".py") else where))
    digests = {}
    for file, name in own:
        try:
            digests[file] = _digest(file)
        except OSError:
            digests[file] = None
        # Out of the way when a plugin's loading put it there (stamped): this file's module, or another file's of
        # the same name (a module beside another plugin), which the import would take instead. Never a module
        # loaded otherwise, nor the installation's or this project's.
        held = sys.modules.get(name)
        held_file = getattr(held, "__file__", None)
        if held_file and hasattr(held, SHA) and not _fixed(Path(held_file).resolve()):
            del sys.modules[name]
    importlib.invalidate_caches()
    if where.endswith(".py"):
        module = _exec_file(target, source, digests[source])
    else:
        module = _import(target)
        setattr(module, SHA, digests[source])
    for file, name in own[1:]:
        loaded = _loaded(name, file)
        if loaded is not None:
            setattr(loaded, SHA, digests[file])
    setattr(module, OWN, tuple((str(file), name) for file, name in own))
    return module


def _holds(own: list[tuple[Path, str]], want: dict[Path, str]) -> bool:
    """Whether this process plays the code whose digests `want` gives for a plugin's modules `own` (the plugin's
    first): each one loaded is stamped with its digest, the plugin's is loaded, and one not loaded yet (imported
    only when called) will be imported from a file that holds it."""
    for i, (file, name) in enumerate(own):
        loaded = _loaded(name, file)
        try:
            ok = (getattr(loaded, SHA, None) == want[file] if loaded is not None
                  else i > 0 and _digest(file) == want[file])
        except OSError:
            ok = False
        if not ok:
            return False
    return True


def _is_current(module) -> bool:
    """Whether a plugin's module and its own modules loaded so far hold the code their files hold now."""
    own = [(Path(file), name) for file, name in getattr(module, OWN, None) or ()]
    if not own:  # imported before, not by this module: nothing says which code it holds
        return False
    try:
        return _holds(own, {file: _digest(file) for file, _ in own})
    except OSError:
        return False


def keep_recorded(policy: str, recorded: dict[str, str]) -> bool:
    """Whether this process plays the plugin code whose files a run recorded (`recorded`: path -> SHA-256 of the
    plugin's source and of its own modules): its modules are that code already (kept, whatever the files hold
    now), or are loaded from the files again when the files hold it. False when neither: a file changed, and
    this process never loaded the recorded code (a worker of a Dask cluster that played another version
    before, or joined the run late)."""
    target = _target(policy)
    source = None if target is None else _source_file(target)
    if source is None or str(source) not in recorded:
        return False
    want = {Path(path): digest for path, digest in recorded.items()}
    own = _own(target, source, list(want))
    if _holds(own, want):
        return True
    try:
        if any(_digest(file) != want[file] for file, _ in own):
            return False
    except OSError:
        return False
    _import_fresh(target)
    return _holds(own, want)


def _source_file(target: str) -> Path | None:
    """The file a plugin's code is in: the file of file.py:attr, or the module of module:attr."""
    where = target.rpartition(":")[0]
    if where.endswith(".py"):
        return Path(where).resolve()
    try:
        origin = importlib.util.find_spec(where).origin
    except (ImportError, AttributeError, ValueError):
        return None
    return Path(origin).resolve() if origin and Path(origin).is_file() else None


MAX_LOCAL_IMPORTS = 200
"""More of a plugin's own modules than this are not followed (a plugin inside a large code base)."""


def _module_file(root: Path, dotted: str) -> Path | None:
    """The file of module `dotted` under the folder `root` (a.b: a/b.py or a/b/__init__.py), None if none."""
    base = root.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path.resolve()
    return None


def local_imports(source: Path, root: Path, within: Path | None = None, module: str = "") -> list[Path]:
    """The modules under `root` that the plugin file `source` imports, and those they import in turn.

    Read from the source (nothing is imported): ``import a.b``, ``from a
    import b`` and relative imports, resolved to files under `root` (the
    folder the plugin's top-level module is in), and inside `within` when
    given (an installed plugin's own package, not the other packages
    installed beside it); what lives elsewhere (the standard library,
    installed packages) is left to their versions. `module`: the plugin's
    own dotted name, whose packages importing it runs first. A run records
    these files' digests with the plugin's own, so that editing a helper
    module between an interruption and its resume is caught.
    """
    found, todo = [], [source.resolve()]
    seen = {source.resolve()}

    def follow(base: Path, dotted: str) -> None:
        parts = dotted.split(".")
        for k in range(1, len(parts) + 1):  # import a.b.c runs a/__init__.py and a/b/__init__.py too
            file = _module_file(base, ".".join(parts[:k]))
            if file is not None and file not in seen and (within is None or within in file.parents):
                seen.add(file)
                found.append(file)
                todo.append(file)

    if module:
        follow(root, module)
    while todo and len(found) < MAX_LOCAL_IMPORTS:
        path = todo.pop()
        try:
            tree = ast.parse(path.read_bytes(), str(path))
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # its import will say what is wrong
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    follow(root, alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level > len(path.parents):  # above the file system's root: no module to follow
                    continue
                base = root if node.level == 0 else path.parents[node.level - 1]
                prefix = node.module or ""
                if prefix:
                    follow(base, prefix)
                for alias in node.names:
                    follow(base, f"{prefix}.{alias.name}" if prefix else alias.name)
    return sorted(found)


def _plugin_root(target: str, source: Path) -> tuple[Path, Path | None]:
    """The folder a plugin's top-level module is in (its file's for file.py:attr, else above its package), and
    the folder its imports are followed within: its own package when that folder holds installed packages."""
    where = target.rpartition(":")[0]
    if where.endswith(".py"):
        return source.parent, None
    depth = where.count(".") + (1 if source.name == "__init__.py" else 0)
    root = source.parents[depth]
    if root.name not in ("site-packages", "dist-packages"):
        return root, None
    top = where.split(".")[0]
    return root, (root / top if (root / top).is_dir() else source)  # a lone module: a file, nobody's parent


def pinned(name: str, args: dict[str, str]) -> tuple[str, dict[str, str], list[Path]]:
    """(name, args) with every file path made absolute, and the files a policy's games depend on.

    Those files are a plugin's source (the file of ``file.py:attr``, or the
    module of ``module:attr`` or of an entry point), the plugin's own modules
    it imports (`local_imports`), and every ``--policy-arg`` value that
    names a file (a weights file). A run records their digests, so that a
    resume or a reuse never mixes games of two versions.
    """
    files = []
    where, sep, attr = name.rpartition(":")
    if sep and where.endswith(".py") and Path(where).is_file():
        name = f"{Path(where).resolve()}:{attr}"
    target = _target(name)
    if target is not None:
        source = _source_file(target)
        if source is not None:
            module = target.rpartition(":")[0]
            files += [source, *local_imports(source, *_plugin_root(target, source),
                                             module="" if module.endswith(".py") else module)]
    pinned_args = {}
    for key, value in args.items():
        if value not in ("", ".") and Path(value).is_file():
            value = str(Path(value).resolve())
            files.append(Path(value))
        pinned_args[key] = value
    return name, pinned_args, files


def entry_point_policies() -> dict[str, str]:
    """Policies other installed packages register: name -> module:attr."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def resolve_plugin(name: str, items: tuple[tuple[str, str], ...]) -> PolicySpec:
    """A PolicySpec for a plugin (entry point, module:attr or file.py:attr), checking it loads."""
    target = name if ":" in name else entry_point_policies().get(name)
    if target is None:
        known = ", ".join(list(policies.BUILTIN) + ["oracle"] + sorted(entry_point_policies()))
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


# --- plain-Python policies ------------------------------------------------------------------


class Position:
    """What a plain-Python policy sees of a game: never the stock's order.

    Each turn's Position holds its own copy of the table, so nothing a
    policy does to it reaches the game.
    """

    def __init__(self, board: Board, seed: int, game: int, rng: random.Random, card: int | None = None):
        self._board = _copy(board)
        self._card = card
        self.seed = seed
        """Seed of the run (with `game`, what the policy's randomness may depend on)."""
        self.game = game
        self.random = rng
        """A random.Random keyed by (seed, game): use it for reproducible choices."""

    @property
    def rules(self) -> Rules:
        """The rule options of the game."""
        return self._board.rules

    @property
    def turn(self) -> int:
        """Cards placed so far."""
        return int(self._board.state[K.TURN])

    def legal_cells(self) -> tuple[int, ...]:
        """Cells where the drawn card may go, ascending; the policy must return one of them."""
        return self._board.legal_cells()

    def top(self, cell: int) -> int | None:
        """Rank of the pile's top card (face up or down), None for an empty cell."""
        return self._board.top(cell)

    def is_face_down(self, cell: int) -> bool:
        """Whether the top card of the pile on `cell` is face down."""
        return self._board.is_face_down(cell)

    def height(self, cell: int) -> int:
        """Cards in the pile on `cell` (0 when empty)."""
        return self._board.height(cell)

    @property
    def occupied(self) -> tuple[int, ...]:
        """Cells holding a pile, ascending."""
        return self._board.occupied

    @property
    def piles(self) -> int:
        """Number of piles on the table."""
        return self._board.piles

    @property
    def face_down_count(self) -> int:
        """Top cards face down; more than max_face_down loses the game."""
        return self._board.face_down_count

    def stock_counts(self) -> dict[int, int]:
        """Cards of each rank still in the stock (the drawn card excluded)."""
        return self._board.stock_counts()

    def board(self) -> Board:
        """A copy of the position as a Board, to try placements on: `board().place(cell, card)` plays this turn.

        Its stock still holds the drawn card (Board.place draws the card it places), so after that placement
        its stock is the one the next turn draws from.
        """
        b = _copy(self._board)
        if self._card is not None:
            b.state[K.STOCK + self._card] += 1
            b.state[K.STOCK_LEFT] += 1
        return b


def _copy(board: Board) -> Board:
    b = Board(board.rules)
    b.state[:] = board.state
    return b


def make_python_policy(spec: PolicySpec):
    """A callable (position, card) -> cell for a plain-Python plugin."""
    obj = spec.load()
    if isinstance(obj, type):
        try:
            with plugin_output():
                instance = obj(**spec.arg_dict)
        except TypeError as e:
            raise ValueError(_arguments_problem(spec.name, obj, spec.arg_dict) or f"policy {spec.name!r}: {e}") from None
        except Exception as e:
            message = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
            raise ValueError(f"policy {spec.name!r}: constructing {obj.__name__} failed: "
                             f"{type(e).__name__}: {message}") from None
        if not callable(getattr(instance, "choose", None)):
            raise ValueError(f"policy {spec.name!r}: class {obj.__name__} has no choose(position, card) method")
        return instance.choose
    if spec.args:
        raise ValueError(f"policy {spec.name!r} is a function and takes no --policy-arg")
    if hasattr(obj, "choose") and not callable(obj):
        return obj.choose
    return obj


def _arguments_problem(name: str, cls: type, args: dict[str, str]) -> str | None:
    """What is wrong with the --policy-arg values for a class plugin, in the words used for a built-in's (the
    keys it has no parameter for, naming those it takes; or the one it needs), None when its signature does
    not say."""
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    known = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(args) - set(known))
    if unknown:
        return (f"policy {name!r} has no parameter {', '.join(unknown)}; "
                f"it takes: {', '.join(known) or 'no parameters'}")
    missing = [p.name for p in params if p.name in known and p.default is p.empty and p.name not in args]
    if missing:
        return f"policy {name!r} needs {' '.join(f'--policy-arg {m}=VALUE' for m in missing)}"
    return None


def _decider(spec: PolicySpec, rules: Rules):
    """decide(position, state, card, legal, rng) -> cell for a plugin of either kind."""
    if spec.kind == "compiled":
        fn, params, r = spec.load(), spec.params(), rules.as_array()
        return lambda position, state, card, legal, rng: fn(state, r, card, np.int64(legal), rng, params)
    choose = make_python_policy(spec)
    return lambda position, state, card, legal, rng: choose(position, card)


def python_game(deck, decide, rules: Rules, seed: int, game: int, name: str) -> GameTrace:
    """The turn loop in Python, for plain-Python plugins: the same steps as sim.kernels.play_turns."""
    board = Board(rules)
    state, r = board.state, rules.as_array()
    start = K.stream_start(np.uint64(seed), np.int64(game), K.STREAM_POLICY)
    rng = np.array([start], np.uint64)
    py_random = random.Random(int(start))
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
            cell = decide(Position(board, seed, game, py_random, card), state.copy(), card, legal, rng)
        except Exception as e:
            message = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
            raise PolicyError(f"policy {name!r} raised {type(e).__name__}: {message} "
                              f"(seed {seed}, game {game}, turn {t + 1})") from e
        if isinstance(cell, bool) or not isinstance(cell, (int, np.integer)) or not 0 <= cell < K.CELLS \
                or not (legal >> int(cell)) & 1:
            raise illegal_move_error(name, cell, seed, game, t + 1)
        moves.append(int(cell))
        fired.append(int(K.place(state, r, int(cell), card)))
        end = int(K.end_of_turn(state, r))
        if end != K.GOES_ON:
            code, played = end, t + 1
            break
    return GameTrace(code, played, tuple(moves), tuple(fired), state)


def trace_python(spec: PolicySpec, deck, rules: Rules, seed: int, game: int) -> GameTrace:
    """One game of a plugin with every turn through Python (for replays and plain-Python plugins)."""
    with plugin_output():
        return python_game(deck, _decider(spec, rules), rules, seed, game, spec.name)


def play_python(spec: PolicySpec, decks: np.ndarray, seed: int, first_game: int, rules: Rules, cols: dict) -> None:
    """Fill a batch's columns (sim.engine.results.new_columns) with games of a plugin, played through Python."""
    with plugin_output():
        _play_python(spec, decks, seed, first_game, rules, cols)


def _play_python(spec: PolicySpec, decks: np.ndarray, seed: int, first_game: int, rules: Rules, cols: dict) -> None:
    decide = _decider(spec, rules)
    for i in range(decks.shape[0]):
        g = python_game(decks[i], decide, rules, seed, first_game + i, spec.name)
        cols["end"][i], cols["cards_played"][i] = g.end, g.cards_played
        cols["face_down"][i], cols["piles"][i] = g.state[K.FACE_DOWN_COUNT], g.state[K.PILES]
        cols["score"][i] = K.DECK_SIZE - g.cards_played if g.end == K.END_WIN else -1
        cols["illegal"][i] = -1


def contract_problem(choose, error: Exception) -> str:
    """Why a jitted `choose` does not compile inside a game loop (`error`, numba's), in one line.

    Compiled alone with the contract's arguments, its own fault shows (numba's error about the game loop
    says only that the loop failed, or names the loop's lines): the arguments it takes, a line of its own
    that does not compile, or the type it returns when that is not an integer cell.
    """
    try:
        choose.compile(CONTRACT)
        returned = choose.overloads[CONTRACT].signature.return_type
    except TypeError as e:  # numba's "Signature mismatch": another number of arguments
        return f"it must take (state, rules, card, legal, rng, params): {e}"
    except NumbaError as e:
        return numba_reason(e)
    except Exception:  # compiling refused (explicit signatures): the loop's error is all there is
        return numba_reason(error)
    if not is_cell_type(returned):
        return f"it returns {returned}, not a cell (an integer 0..48)"
    return numba_reason(error)


def numba_reason(error: Exception) -> str:
    """A numba compile error in one line: its first telling line (with what follows a trailing colon) and the
    first source line it names."""
    lines = [line.strip() for line in str(error).splitlines()]
    telling = [line for line in lines if line and not line.startswith(("Failed in ", "During: ", "File ", "^"))]
    if not telling:
        return type(error).__name__
    reason = telling[0]
    if reason.endswith(":") and len(telling) > 1:
        reason = f"{reason} {telling[1]}"
    where = next((m for m in map(re.compile(r'File "(.+)", line (\d+)').match, lines) if m), None)
    return f"{reason} ({where[1]}, line {where[2]})" if where else reason


def compiled_loops(spec: PolicySpec):
    """The compiled game loops (sim.engine.loop.Loops) of a compiled plugin."""
    return plugin_loops(spec.load())
