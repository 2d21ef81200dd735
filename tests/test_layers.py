"""The package's layers, read from the source: no import cycle, imports only downwards, no private names.

Every ``.py`` under sim/ and policies/ is parsed with `ast`, and every
import is collected, imports inside functions included (``import x``,
``from x import y`` resolved to the module ``x.y`` when that is a module,
relative imports, and ``importlib.import_module("literal")``). Left out: a
package's ``__init__`` importing its own modules (a re-export), and
sim/__init__.py's lazy table (a dict of strings, which is no import).

Layers, lowest first; a module may import modules of its own layer or of
earlier ones only:

    base       sim.kernels, sim._cache, sim.version, sim.stats, sim.errors, sim.fielddocs
    policies   policies, policies.*
    engine     sim.engine.*
    solver     sim.solver.*
    players    sim.players.*, sim.rl.* (the Gymnasium environments: beside the players)
    jobs       sim.jobs.*
    analysis   sim.analysis.*
    front      sim.cli, sim.__main__, sim (the package: its lazy re-exports reach every layer)

Then, in fresh interpreters: what importing the CLI (and running it for
help or a usage error) loads, and that modules import on their own.
"""

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sim", "policies")

LAYERS = (
    ("base", ("sim.kernels", "sim._cache", "sim.version", "sim.stats", "sim.errors", "sim.fielddocs")),
    ("policies", ("policies", "policies.*")),
    ("engine", ("sim.engine", "sim.engine.*")),
    ("solver", ("sim.solver", "sim.solver.*")),
    ("players", ("sim.players", "sim.players.*", "sim.rl", "sim.rl.*")),
    ("jobs", ("sim.jobs", "sim.jobs.*")),
    ("analysis", ("sim.analysis", "sim.analysis.*")),
    ("front", ("sim.cli", "sim.__main__", "sim")),
)
"""(layer, its modules), lowest first; "pkg.*" stands for every module under pkg."""


# --- reading the source -----------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module."""
    target: str
    """The project module imported."""
    where: str
    """file:line, for messages."""
    names: tuple[str, ...] = ()
    """For `from target import a, b`: the names taken from `target` that are not modules."""


def project_modules() -> dict[str, Module]:
    """Every module of sim/ and policies/, by dotted name."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            modules[name] = Module(name, path, is_package)
    return modules


def _project_module(name: str, modules) -> str | None:
    """The longest prefix of the dotted `name` that is a project module (None: not ours)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        candidate = ".".join(parts[:k])
        if candidate in modules:
            return candidate
    return None


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    base = package.split(".")
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: Module, modules, root: Path = ROOT) -> list[Import]:
    """Every import of a project module in `module`'s source, wherever it is (functions included)."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
    rel = module.path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _project_module(alias.name, modules)
                if target:
                    found.append(Import(module.name, target, where))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            names = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if alias.name != "*" and sub in modules:
                    found.append(Import(module.name, sub, where))  # from sim import kernels -> sim.kernels
                else:
                    names.append(alias.name)
            target = _project_module(base, modules)
            if target and names:
                found.append(Import(module.name, target, where, tuple(names) if target == base else ()))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            target = _project_module(node.args[0].value, modules)
            if target:
                found.append(Import(module.name, target, where))
    return found


def _is_own_module(source: Module, target: str) -> bool:
    """A package's __init__ importing one of its own modules: a re-export, not a dependency."""
    return source.is_package and target.startswith(source.name + ".")


@pytest.fixture(scope="module")
def graph():
    """(modules, every import edge that counts)."""
    modules = project_modules()
    edges = []
    for module in modules.values():
        for imp in imports_of(module, modules):
            if imp.target == module.name or _is_own_module(module, imp.target):
                continue
            edges.append(imp)
    return modules, edges


def layer_of(name: str) -> int | None:
    for rank, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if name == pattern or (pattern.endswith(".*") and name.startswith(pattern[:-1])):
                return rank
    return None


def _describe(imp: Import) -> str:
    return f"{imp.source} -> {imp.target} ({imp.where})"


# --- the checks on the source ------------------------------------------------------------------


def test_the_scan_sees_the_package():
    # A guard for the checks below: they are only as good as the modules and imports found.
    modules = project_modules()
    assert {"sim", "sim.cli", "sim.kernels", "sim.engine.loop", "sim.jobs.runner", "policies.greedy"} <= set(modules)
    names = {i.target for i in imports_of(modules["sim.jobs.runner"], modules)}
    assert {"sim.kernels", "sim.engine.cards", "sim.jobs.files"} <= names
    lazy = {i.target for i in imports_of(modules["sim.cli"], modules)}  # imports inside the commands
    assert {"sim.jobs.play", "sim.analysis.report"} <= lazy


def test_every_module_has_a_layer():
    missing = sorted(name for name in project_modules() if layer_of(name) is None)
    assert not missing, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {', '.join(missing)}"


def cycles(names, edges: list[Import]) -> list[str]:
    """Each import cycle (a strongly connected component of more than one module), with its edges."""
    out = defaultdict(set)
    for imp in edges:
        out[imp.source].add(imp.target)
    # Tarjan's algorithm, iterative.
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for root in sorted(names):
        if root in index:
            continue
        work = [(root, iter(sorted(out[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(out[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    components.append(component)
    found = []
    for component in components:
        inside = sorted({_describe(i) for i in edges if i.source in component and i.target in component})
        found.append(f"cycle among {', '.join(sorted(component))}:\n    " + "\n    ".join(inside))
    return sorted(found)


def upward(edges: list[Import]) -> list[str]:
    """The imports of a module of a later layer, each with its layers."""
    return sorted({
        f"{_describe(i)}: {LAYERS[layer_of(i.source)][0]} may not import {LAYERS[layer_of(i.target)][0]}"
        for i in edges
        if layer_of(i.source) is not None and layer_of(i.target) is not None and layer_of(i.target) > layer_of(i.source)
    })


def test_no_import_cycles(graph):
    modules, edges = graph
    found = cycles(modules, edges)
    assert not found, "import cycles:\n  " + "\n  ".join(found)


def test_imports_go_only_to_the_same_layer_or_below(graph):
    _, edges = graph
    bad = upward(edges)
    assert not bad, "imports against the layer order:\n  " + "\n  ".join(bad)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_another_module_s_private_names():
    modules = project_modules()
    bad = sorted({
        f"{_describe(i)}: {', '.join(n for n in i.names if _is_private(n))}"
        for module in modules.values() for i in imports_of(module, modules)
        if i.target != module.name and any(_is_private(n) for n in i.names)
    })
    assert not bad, "private names imported from another module:\n  " + "\n  ".join(bad)


def test_the_checks_catch_what_they_are_for(tmp_path):
    # The same functions on a made-up module: a function-level import, a relative one, a private name.
    pkg = tmp_path / "sim" / "jobs"
    pkg.mkdir(parents=True)
    source = pkg / "x.py"
    source.write_text("def f():\n    from sim.analysis.report import _private, load_report\n"
                      "from ..engine import rules\nfrom . import runner\n")
    packages = ("sim", "sim.jobs", "sim.analysis", "sim.engine")
    plain = ("sim.jobs.runner", "sim.analysis.report", "sim.engine.rules")
    modules = {name: Module(name, tmp_path / "unused.py", name in packages) for name in packages + plain}
    modules["sim.jobs.x"] = Module("sim.jobs.x", source, False)
    found = imports_of(modules["sim.jobs.x"], modules, root=tmp_path)
    assert {(i.target, i.names) for i in found} == {
        ("sim.analysis.report", ("_private", "load_report")), ("sim.engine.rules", ()), ("sim.jobs.runner", ())}
    assert upward(found) == [f"sim.jobs.x -> sim.analysis.report ({where}): jobs may not import analysis"
                             for where in ["sim/jobs/x.py:2"]]
    assert layer_of("sim") == layer_of("sim.cli") and layer_of("policies.params") < layer_of("sim.engine.loop")
    # A cycle through three modules is reported with its edges; a chain is not a cycle.
    chain = [Import("a", "b", "a.py:1"), Import("b", "c", "b.py:1"), Import("c", "d", "c.py:1")]
    assert cycles("abcd", chain) == []
    (cycle,) = cycles("abcd", chain + [Import("d", "b", "d.py:3")])
    assert cycle.startswith("cycle among b, c, d:") and "d -> b (d.py:3)" in cycle and "a -> b" not in cycle


def test_the_distribution_ships_every_package():
    # pyproject.toml must name the sub-packages too: a wheel with sim/ but not sim/engine/ does not import.
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    if isinstance(config.get("packages"), list):
        shipped = set(config["packages"])
    else:
        find = config["packages"]["find"]
        shipped = set(find_packages(str(ROOT / find.get("where", ["."])[0]), include=find.get("include", ("*",)),
                                    exclude=find.get("exclude", ())))
    packages = {m.name for m in project_modules().values() if m.is_package}
    assert packages <= shipped, f"packages left out of the distribution: {', '.join(sorted(packages - shipped))}"


# --- what importing loads, in fresh interpreters ------------------------------------------------

HEAVY = ("numba", "polars")


def _python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)


@pytest.mark.parametrize("module", ["sim", "sim.cli", "sim.errors"])
def test_importing_the_front_end_loads_neither_numba_nor_polars(module):
    r = _python(f"import json, sys, {module}; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [], f"import {module} loads {r.stdout.strip()}"


CLI_PROBE = """
import json, sys
from typer.testing import CliRunner
from sim.cli import app
r = CliRunner().invoke(app, json.loads(sys.argv[1]))
print(json.dumps({"exit": r.exit_code, "stdout": r.stdout, "stderr": r.stderr,
                  "loaded": sorted(m for m in sys.modules if m.startswith(tuple(json.loads(sys.argv[2]))))}))
"""
"""`sim ARGS` (argv[1], JSON) in this process; "loaded": the modules then loaded whose names start with one of the
prefixes of argv[2] (JSON)."""


@pytest.mark.parametrize("args,code,fragment", [
    (["--help"], 0, "Example: sim run"),
    (["run", "--help"], 0, "Example: sim run --policy greedy -n 1e6"),
    (["run", "-n", "0"], 2, "Error: -n '0' is not a positive whole number"),
    (["run", "-n", "5", "--workers", "0"], 2, "Error: --workers must be at least 1"),
    (["solve", "-n", "5", "--node-limit", "x"], 2, "Error: --node-limit 'x' is not a positive whole number"),
])
def test_help_and_usage_errors_do_not_load_the_engine(args, code, fragment):
    r = _python(CLI_PROBE, json.dumps(args), json.dumps(HEAVY))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["exit"] == code, got
    assert fragment in (got["stdout"] if code == 0 else got["stderr"]), got
    assert got["loaded"] == [], f"sim {' '.join(args)} loads {', '.join(got['loaded'])}"


READING_PROBE = """
import json, sys
from typer.testing import CliRunner
from sim.cli import app
out = [CliRunner().invoke(app, args) for args in json.loads(sys.argv[1])]
print(json.dumps({"results": [[r.exit_code, r.stdout] for r in out],
                  "loaded": sorted(m for m in ("numba", "scipy.stats") if m in sys.modules)}))
"""


def test_reading_finished_runs_loads_neither_numba_nor_scipy_stats(tmp_path):
    # `sim report`, `sim compare` and `sim ls` of runs that exist read parts and manifests: numba (half a second
    # to import) is for playing, and scipy.stats (over a second) is not needed for McNemar's test. Runs of two
    # policies, a solve run, reports of each kind and of both runs of games (compared game by game), and a
    # page with its figures, one process for them all; again with numba's import made to fail (the page left
    # out: its figures take seconds), the same output: nothing needs numba.
    import sim

    games = [str(tmp_path / p) for p in ("greedy", "random")]
    sim.run(sim.RunConfig(n=500), out=games[0], workers=1)
    sim.run(sim.RunConfig(policy="random", n=500), out=games[1], workers=1)
    sim.solve_run(sim.SolveConfig(n=2, node_limit=1000), out=tmp_path / "solved", workers=1)
    commands = [["report", games[0]], ["report", games[0], "--format", "json"], ["report", *games],
                ["compare", *games], ["report", str(tmp_path / "solved")], ["ls", str(tmp_path)]]
    page = ["report", games[0], "--html", str(tmp_path / "page.html"), "--quiet"]
    r = _python(READING_PROBE, json.dumps([*commands, page]))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [code for code, _ in got["results"]] == [0] * (len(commands) + 1), got
    assert got["loaded"] == [], f"reading runs loads {got['loaded']}"
    compared = got["results"][3][1]
    assert "greedy" in compared and "random" in compared and "McNemar" in compared, compared
    assert all(name in got["results"][5][1] for name in ("greedy", "random", "solved"))  # `sim ls` lists the runs
    assert '<img alt="Cards played.' in (tmp_path / "page.html").read_text()  # the figure that reads the deck size
    r = _python("import sys; sys.modules['numba'] = None\n" + READING_PROBE, json.dumps(commands))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"] == got["results"][:-1]


def test_a_run_of_a_policy_loads_neither_the_solver_nor_scipy_stats(tmp_path):
    # The solver (its compiled search, its SAT questions) plays only the oracle and `sim solve`; importing it was
    # about a tenth of a second of every `sim run`'s start. A run reads the oracle's options (sim.solver.settings,
    # plain Python) and nothing more of it.
    r = _python(CLI_PROBE, json.dumps(["run", "-n", "20", "-w", "1", "-q", "--out", str(tmp_path / "r")]),
                json.dumps(["sim.solver.", "scipy.stats"]))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["exit"] == 0 and "win rate" in got["stdout"], got
    assert got["loaded"] == ["sim.solver.settings"], f"sim run loads {got['loaded']}"


def test_the_end_names_a_report_reads_are_the_kernels_codes():
    from sim import kernels as K
    from sim.engine.results import END_NAMES, GAME_ENDS

    codes = {"win": K.END_WIN, "too_many_face_down": K.END_TOO_MANY_FACE_DOWN, "stock_empty": K.END_STOCK_EMPTY,
             "no_move": K.END_NO_MOVE, "illegal_move": K.END_ILLEGAL_MOVE}
    assert {name: END_NAMES.index(name) for name in END_NAMES} == codes
    assert GAME_ENDS == END_NAMES[: K.END_NO_MOVE + 1]


def test_the_deck_size_the_figures_read_is_the_kernels():
    from sim import kernels as K
    from sim.engine.cards import DECK_SIZE

    assert DECK_SIZE == K.DECK_SIZE == K.RANKS * K.COPIES


def test_a_policy_module_imports_on_its_own():
    r = _python("import policies.heuristic")
    assert r.returncode == 0, r.stderr


# Imports each module named on the command line in a child forked from a parent that has loaded only
# third-party packages: a fresh set of project modules per module, without a fresh interpreter's
# start-up (numba and polars) each time. The project's own import order is what is under test.
_IMPORT_EACH = """
import importlib, json, os, sys, traceback
import numpy, numba, polars, typer, tqdm  # third-party only: no project module is loaded here
assert not any(m == "sim" or m.startswith(("sim.", "policies")) for m in sys.modules)
failed = {}
for name in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc().strip().splitlines()[-1].encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        message = f.read().decode()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed[name] = message or f"exit status {status}"
print(json.dumps(failed))
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_every_module_imports_on_its_own():
    # A fresh set of project modules per module: an import cycle that only bites in some import order
    # shows up here.
    names = sorted(n for n in project_modules() if n != "sim.__main__")  # __main__ runs the CLI
    r = _python(_IMPORT_EACH, *names, timeout=600)
    assert r.returncode == 0, r.stderr
    failed = json.loads(r.stdout)
    assert not failed, "modules that fail to import on their own:\n  " + "\n  ".join(
        f"{n}: {e}" for n, e in failed.items())
