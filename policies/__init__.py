"""Built-in placement policies, one per module, and the registry that names them.

The policy contract
-------------------
A compiled policy is a numba-jitted function::

    choose(state, rules, card, legal, rng) -> cell

- ``state``: the visible position, an int64 array laid out as documented in
  ``sim.kernels`` (top ranks, pile heights, face-down and occupied masks, and
  how many cards of each rank are still in the stock). It never holds the
  stock's order. Do not modify it; copy it to look ahead.
- ``rules``: the rule options as an int64 array (``sim.kernels.RULE_*``).
- ``card``: the rank (1..10) just drawn; it is no longer counted in the stock.
- ``legal``: bit mask of the legal cells (bit ``cell`` set), never empty.
- ``rng``: a one-element uint64 array holding the game's policy stream, keyed
  by (seed, game); draw from it with ``sim.kernels.next_u64``/``next_below``.

It returns a canonical cell (``row * 7 + col``) whose bit is set in ``legal``.
Returning anything else ends the game with an error naming the policy.

Built-ins are dispatched by id inside one cached, compiled game loop
(``sim.game``), so they run at full speed with no per-run compile.
"""

from dataclasses import dataclass


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


BUILTIN = {
    "greedy": PolicyInfo("greedy", 0, "policies.greedy",
                         "RULES.md's reference policy: fewest face-down cards, then a new pile, then the lowest cell."),
    "random": PolicyInfo("random", 1, "policies.random", "A uniformly random legal cell (baseline)."),
}


def get(name: str) -> PolicyInfo:
    """The built-in policy called `name`; ValueError listing the known ones otherwise."""
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(sorted(BUILTIN))
        raise ValueError(f"unknown policy {name!r}; known policies: {known}") from None
