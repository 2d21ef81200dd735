"""Built-in placement policies, one per module, and the registry that names them.

The policy contract
-------------------
A compiled policy is a numba-jitted function::

    choose(state, rules, card, legal, rng, params) -> cell

- ``state``: the visible position, an int64 array laid out as documented in
  ``sim.kernels`` (top ranks, pile heights, face-down and occupied masks, and
  how many cards of each rank are still in the stock). It never holds the
  stock's order. Do not modify it; copy it to look ahead.
- ``rules``: the rule options as an int64 array (``sim.kernels.RULE_*``).
- ``card``: the rank (1..10) just drawn; it is no longer counted in the stock.
- ``legal``: bit mask of the legal cells (bit ``cell`` set), never empty.
- ``rng``: a one-element uint64 array holding the game's policy stream, keyed
  by (seed, game); draw from it with ``sim.kernels.next_u64``/``next_below``.
- ``params``: float64 array of the policy's parameters (may be empty).

It returns a canonical cell (``row * 7 + col``) whose bit is set in ``legal``.
Returning anything else stops the run with an error naming the policy, the
seed, the game, the turn and the value returned.

A plain-Python policy sees the same position through
``sim.players.plugins.Position`` (see README, "Plugins").

A built-in policy is a module of this package with ``choose``, a one-line
``DESCRIPTION`` and its ``PARAMS`` (see `policies.params`). The engine
compiles a game loop for each policy on first use (``sim.engine.loop``), and
numba caches it on disk, so a run compiles only the policy it plays.
"""

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from policies.params import Param

BUILTIN = {
    "greedy": "policies.greedy",
    "random": "policies.random",
    "heuristic": "policies.heuristic",
    "lookahead": "policies.lookahead",
    "rollout": "policies.rollout",
    "planner": "policies.planner",
}
"""Built-in policy name -> the module that implements it."""


@dataclass(frozen=True)
class PolicyInfo:
    """A built-in policy as the registry knows it."""

    name: str
    """Name used on the command line (``--policy NAME``)."""
    id: int
    """The built-in's number: its place in BUILTIN (greedy 0, random 1, heuristic 2, lookahead 3, rollout 4, planner 5)."""
    module: ModuleType
    """The module holding the compiled ``choose``."""
    description: str
    """One line for listings."""
    params: tuple[Param, ...]
    """Parameters, in the order of the params array."""


def get(name: str) -> PolicyInfo:
    """The built-in policy called `name`; ValueError listing the known ones otherwise."""
    if name not in BUILTIN:
        known = ", ".join(sorted(BUILTIN))
        raise ValueError(f"unknown policy {name!r}; known policies: {known}")
    module = importlib.import_module(BUILTIN[name])
    return PolicyInfo(name, list(BUILTIN).index(name), module, module.DESCRIPTION, tuple(module.PARAMS))


def build_params(name: str, args: dict[str, str] | None = None) -> np.ndarray:
    """The params array of a built-in policy from its --policy-arg values (ValueError when bad)."""
    info = get(name)
    args = dict(args or {})
    known = {p.name for p in info.params}
    unknown = set(args) - known
    if unknown:
        takes = ", ".join(sorted(known)) if known else "no parameters"
        raise ValueError(f"policy {name!r} has no parameter {', '.join(sorted(unknown))}; it takes: {takes}")
    values: list[float] = []
    for p in info.params:
        try:
            values.extend(p.parse(args.get(p.name, p.default)))
        except ValueError as e:  # a shared parser (heuristic's weights) does not know which policy reads it
            message = str(e)
            raise ValueError(message if message.startswith("policy ") else f"policy {name!r}: {message}") from None
    return np.array(values, dtype=np.float64)


def rules_warning(name: str, args: dict[str, str] | None, rules: dict) -> str | None:
    """Why a built-in may play under `rules` (option -> value) far from its best, or None.

    A policy module says so with its own ``rules_warning(args, rules)``: planner's learned values, for one, hold
    for the rules they were learned under.
    """
    check = getattr(get(name).module, "rules_warning", None)
    return None if check is None else check(dict(args or {}), rules)


def normal_args(name: str, args: dict[str, str]) -> dict[str, str]:
    """A built-in's --policy-arg values as a run records them: each number as the value its policy uses
    (`Param.normal`), so that samples=1_0 is recorded, named and compared as samples=10; and one given its
    default left out, so that weights=default is the run without it (one setting, one directory)."""
    params = {p.name: p for p in get(name).params}
    out = {}
    for k, v in args.items():
        if k in params:
            v = params[k].normal(v)
            if v == params[k].normal(params[k].default):
                continue
        out[k] = v
    return out


def data_files(name: str, args: dict[str, str] | None = None) -> list[str]:
    """The package's files a built-in's games read with these --policy-arg values (a run records their digests)."""
    args = dict(args or {})
    return [path for p in get(name).params if p.reads is not None for path in p.reads(args.get(p.name, p.default))]
