"""What a solve may be asked and may answer, apart from the compiled search: the outcomes' names, the
options' defaults and the limit on counts.

Reports, `sim ls` and `sim.load` read these to describe solve runs; importing them loads no numba (a
report of a finished run compiles nothing, and loading numba would cost it about half a second).
"""

from sim.errors import magnitude

OUTCOMES = ("won", "lost", "unresolved")
"""Name of each outcome code of a solve (a solve part's `outcome` column)."""

SAT_CONFLICTS = 1_000_000
"""The conflicts each SAT question may take by default (best-score mode). With it `sim solve` proves
every one of the 10,000 deals of seed 0 in about ten minutes (README, "Best scores over 10,000 deals");
a question that runs out of it leaves the deal to the search."""
SAT_AFTER = 2_000_000
"""With SAT questions (`sat_conflicts`), the depth-first searches' nodes before they are asked: most
deals are settled by then, and with no slack the search settles a level about as fast. A node limit (or
a serial solve's split) that comes first means no questions, so a quick run stays quick."""
SPLIT_AFTER = 8_000_000
"""Nodes of the serial solve (`Solver.solve`) before a deal that is still unsettled is split into subtrees."""

MAX_COUNT = 10**12
"""The most a node limit, split threshold or SAT conflict budget may be (as the oracle's nodes): days of
search per deal, and far from the 64-bit counters."""


def too_large(name: str, value) -> str:
    """The message for a count above MAX_COUNT (a number of many digits shown by its magnitude)."""
    return f"{name} must be at most 1e12, not {magnitude(value)}"


def default_split_after(time_limit: float | None) -> int:
    """Split solves by default only without a time limit.

    Under `time_limit` a split deal's subtrees hold every worker for the
    deal's whole limit, away from the deals still to start, and prove no
    more than the serial search (README, "Measured": 773 s against 565 s for
    the same proofs on 2,000 deals); without one they shorten a hard deal's
    proof.
    """
    return SPLIT_AFTER if time_limit is None else 0
