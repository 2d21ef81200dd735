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

A plain-Python policy sees the same position through ``sim.plugins.Position``
(see README, "Plugins"). Built-ins are dispatched by id inside one cached,
compiled game loop (``sim.game``), so they run at full speed with no
per-run compile.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Param:
    """One parameter a policy takes from ``--policy-arg NAME=VALUE``."""

    name: str
    default: str
    """Default, as text."""
    help: str


@dataclass(frozen=True)
class PolicyInfo:
    """A built-in policy as the registry knows it."""

    name: str
    """Name used on the command line (``--policy NAME``)."""
    id: int
    """Index the compiled game loop dispatches on."""
    module: str
    """Module holding the compiled ``choose`` function."""
    description: str
    """One line for listings."""
    params: tuple[Param, ...] = field(default=())
    """Parameters, in the order of the params array (weights last)."""


_WEIGHTS = Param("weights", "default",
                 "heuristic weights: a JSON file ({\"weights\": {feature: value}} or a list) or comma-separated numbers")

BUILTIN = {
    "greedy": PolicyInfo("greedy", 0, "policies.greedy",
                         "RULES.md's reference policy: fewest face-down cards, then a new pile, then the lowest cell."),
    "random": PolicyInfo("random", 1, "policies.random", "A uniformly random legal cell (baseline)."),
    "heuristic": PolicyInfo("heuristic", 2, "policies.heuristic",
                            "Best weighted evaluation of the position after placing (counts cards).", (_WEIGHTS,)),
    "lookahead": PolicyInfo("lookahead", 3, "policies.lookahead",
                            "Expectimax one card ahead over the stock's ranks, heuristic at the leaves.", (_WEIGHTS,)),
    "rollout": PolicyInfo("rollout", 4, "policies.rollout",
                          "Flat Monte Carlo: playouts of the rest of the game on random stock orders.", (
                              Param("samples", "64", "playouts per legal cell"),
                              Param("base", "heuristic", "policy that plays the playouts: greedy or heuristic"),
                              _WEIGHTS,
                          )),
}


def get(name: str) -> PolicyInfo:
    """The built-in policy called `name`; ValueError listing the known ones otherwise."""
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(sorted(BUILTIN))
        raise ValueError(f"unknown policy {name!r}; known policies: {known}") from None


def load_weights(text: str) -> np.ndarray:
    """Heuristic weights from 'default', a JSON file, or comma-separated numbers."""
    from policies.heuristic import DEFAULT_WEIGHTS, FEATURES

    if text == "default":
        return DEFAULT_WEIGHTS.copy()
    if "," in text or _is_number(text):
        values = [float(v) for v in text.split(",")]
    else:
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"weights {text!r} is neither a file nor comma-separated numbers")
        data = json.loads(path.read_text())
        data = data.get("weights", data) if isinstance(data, dict) else data
        if isinstance(data, dict):
            unknown = set(data) - set(FEATURES)
            if unknown:
                raise ValueError(f"unknown features in {text}: {', '.join(sorted(unknown))}; "
                                 f"features: {', '.join(FEATURES)}")
            missing = [f for f in FEATURES if f not in data]
            if missing:
                raise ValueError(f"{text} lacks weights for: {', '.join(missing)}")
            values = [float(data[f]) for f in FEATURES]
        else:
            values = [float(v) for v in data]
    if len(values) != len(FEATURES):
        raise ValueError(f"need {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(values)}")
    return np.array(values, dtype=np.float64)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


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
        text = args.get(p.name, p.default)
        if p.name == "weights":
            values.extend(load_weights(text).tolist())
        elif p.name == "samples":
            try:
                samples = int(text)
            except ValueError:
                samples = 0
            if not 1 <= samples <= 100_000:
                raise ValueError(f"policy {name!r}: samples={text!r} is not an integer 1..100000")
            values.append(float(samples))
        elif p.name == "base":
            bases = {"greedy": 0.0, "heuristic": 1.0}
            if text not in bases:
                raise ValueError(f"policy {name!r}: base={text!r} is not one of: greedy, heuristic")
            values.append(bases[text])
    return np.array(values, dtype=np.float64)
