"""Foursquare with perfect information: `solve` a deal with the whole stock order known.

``sim.solve(deck)`` searches the lines of play of a deck and returns a
`SolveResult`: ``won`` with the best score found (and whether it is proven
best), ``lost`` (proven: no line wins) or ``unresolved`` (a node or time
limit was hit before a win or a proof).

A solve plays greedy's game first, then runs several depth-first searches
for a win (`sim.solver.search`) side by side in rounds of doubling node
budgets: four "any win" searches with different limits and move orderings,
and a "least cards" search by iterative deepening on the winning turn,
which proves the best score. Pruning: moves that lose at once, a turn
bound raised by line parity (and, with no slack, by the ranks to come),
and a transposition table keyed over translations and the 8 symmetries;
the last few cards of a line with no slack go to a search over masks.
docs/solver.md gives the whole design and argues why no pruning rule loses
a win.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from sim import kernels as K
from sim.engine.cards import validate_deck
from sim.engine.rules import Rules
from sim.solver.search import (
    CTL_BEST, CTL_LIMIT, CTL_NODES, CTL_ORDER, CTL_SIZE, CTL_STATUS, DONE, ENDGAME_CARDS, FRAME, KEY_WORDS, MAX_DEPTH,
    MAX_MOVES, ORDER_GREEDY, ORDER_NEW_PILE, OUTCOMES, RUNNING, SCRATCH, STOPPED_AT_WIN, greedy_line, search_init,
    search_run,
)

__all__ = ["OUTCOMES", "SolveResult", "Solver", "shared_solver", "solve"]


# --- Python API -------------------------------------------------------------------


@dataclass(frozen=True)
class SolveResult:
    """What the solver found for one deal."""

    outcome: str
    """won (a winning line found), lost (proven: no line wins) or unresolved (a limit was hit first)."""
    score: int | None
    """Cards left in the stock at the best win found; None unless won."""
    proven_best: bool
    """True when no line wins with a higher score."""
    nodes: int
    """Placements the search tried (both searches of the schedule)."""
    seconds: float
    """Wall time of the solve."""
    moves: tuple[int, ...] | None
    """The best winning line found: the canonical cell of each placement; None unless won."""
    score_bound: int | None = None
    """No line wins with a higher score than this (equal to `score` when proven best); None when lost."""


DEFAULT_TT_BITS = 21
"""The transposition table has 2**21 entries of 32 bytes (64 MiB), allocated once per process."""
ANY_WIN = ((3, ORDER_NEW_PILE), (6, ORDER_GREEDY), (None, ORDER_NEW_PILE), (None, ORDER_GREEDY))
"""The any-win searches: (cards allowed beyond grid*grid, None for the whole stock; move ordering).
A depth-first search for any win is heavy-tailed: on a few deals in 10,000 one (limit, ordering)
wanders for millions of nodes where another wins in a hundred, so several run side by side."""
FIRST_ROUND = 2_000
"""Nodes each any-win search gets in the first round of the schedule; rounds double."""
_SLICE_SECONDS = 0.02


class _Search:
    """One resumable depth-first search: its stack lives in these arrays."""

    def __init__(self):
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self.states = np.zeros((MAX_DEPTH + 1, K.STATE_SIZE), np.int64)
        self.moves = np.zeros((MAX_DEPTH + 1, MAX_MOVES), np.int64)
        self.nmoves = np.zeros(MAX_DEPTH + 1, np.int64)
        self.nexts = np.zeros(MAX_DEPTH + 1, np.int64)
        self.line = np.zeros(K.DECK_SIZE, np.int64)
        self.best_line = np.full(K.DECK_SIZE, -1, np.int64)
        self.node_keys = np.zeros((MAX_DEPTH + 1, KEY_WORDS), np.uint64)
        self.tabled = np.zeros(MAX_DEPTH + 1, np.bool_)
        self.scratch = np.zeros(SCRATCH, np.int64)
        self.codes = np.zeros(FRAME * FRAME + 1, np.uint64)
        self.nodes = 0  # over every search this object ran
        self.best = 0  # turn of its best win, 0 for none
        self.best_moves: tuple[int, ...] | None = None

    def start(self, deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp, use_ranks=True,
              use_endgame=True):
        search_init(deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp, self.ctl, self.states,
                    self.moves, self.nmoves, self.nexts, self.line, K.DECK_SIZE if use_ranks else 0,
                    ENDGAME_CARDS if use_endgame else 0)

    @property
    def status(self) -> int:
        return int(self.ctl[CTL_STATUS])

    @property
    def limit(self) -> int:
        return int(self.ctl[CTL_LIMIT])

    def lower_limit(self, limit: int) -> None:
        """Look only for wins before `limit` from now on (branch and bound: a better win is known)."""
        if limit < self.ctl[CTL_LIMIT]:
            self.ctl[CTL_LIMIT] = limit

    def run(self, deck, rules, nodes, deadline, tt_keys, tt_info, rate):
        """Search `nodes` more nodes at most (fewer if it ends or the deadline passes)."""
        ctl = self.ctl
        stop = int(ctl[CTL_NODES]) + nodes
        slice_nodes = 2_000
        while ctl[CTL_STATUS] == RUNNING and ctl[CTL_NODES] < stop:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            n0 = int(ctl[CTL_NODES])
            s0 = time.perf_counter()
            search_run(deck, rules, min(stop, n0 + slice_nodes), ctl, self.states, self.moves, self.nmoves,
                       self.nexts, self.line, self.best_line, self.node_keys, self.tabled, tt_keys, tt_info,
                       self.scratch, self.codes)
            done = int(ctl[CTL_NODES]) - n0
            self.nodes += done
            dt = time.perf_counter() - s0
            if dt > 0 and done > 1000:
                rate[0] = 0.5 * rate[0] + 0.5 * done / dt
            slice_nodes = max(2_000, min(int(rate[0] * _SLICE_SECONDS), 4 * slice_nodes))
        best = int(ctl[CTL_BEST])
        if best and (not self.best or best < self.best):
            self.best = best
            self.best_moves = tuple(int(c) for c in self.best_line[:best])


class Solver:
    """Reusable search buffers (the transposition table is allocated once per process).

    Entries are tagged with a per-search stamp, so a new search never needs
    to clear the table and never uses another search's entries. `solve`
    runs the schedule of the module docstring: greedy's game, then the
    any-win searches and the least-cards search in rounds of doubling node
    budgets. Rounds are counted in nodes, never in time, so with only a node
    limit the result does not depend on the machine.
    """

    def __init__(self, tt_bits: int = DEFAULT_TT_BITS):
        # Written now, so the pages are mapped here rather than in the first deal's search.
        self.tt_keys = np.empty((1 << tt_bits, KEY_WORDS), np.uint64)
        self.tt_keys.fill(0)
        self.tt_info = np.empty(1 << tt_bits, np.int64)
        self.tt_info.fill(0)  # stamp 0: no search uses it
        self.stamp = 0
        self.least = _Search()
        self.any_win = [_Search() for _ in ANY_WIN]
        self.rate = np.array([1e6])  # nodes per second, refined as it runs (slice sizes only)
        self.scratch_state = np.zeros(K.STATE_SIZE, np.int64)
        self.scratch_moves = np.zeros(K.DECK_SIZE, np.int64)

    def _stamp(self) -> int:
        self.stamp += 1
        return self.stamp

    def solve(self, cards: np.ndarray, rules: Rules, *, first_win: bool = False, node_limit: int | None = None,
              time_limit: float | None = None, horizon: int = K.DECK_SIZE, use_tt: bool = True,
              use_sym: bool = True, use_ranks: bool = True, use_endgame: bool = True) -> SolveResult:
        """Solve one checked deck (uint8 ranks) under `rules`; the options are `solve`'s."""
        t0 = time.perf_counter()
        deadline = None if time_limit is None else t0 + time_limit
        r = rules.as_array()
        deck = cards.astype(np.int64)
        cap = node_limit if node_limit is not None else np.iinfo(np.int64).max
        floor = rules.grid * rules.grid
        least = self.least
        searches = [least, *self.any_win]
        for x in searches:
            x.nodes, x.best, x.best_moves = 0, 0, None
        best, best_moves = 0, None  # the best win known: its turn (0: none) and line
        # Greedy's game first: when it wins, the searches only look for better wins.
        greedy = greedy_line(deck, r, horizon, self.scratch_state, self.scratch_moves)
        if greedy:
            best, best_moves = greedy, tuple(int(c) for c in self.scratch_moves[:greedy])
        proven_floor = floor  # no win comes before this turn
        lost = False

        def settled():
            return lost or (best and (first_win or best <= proven_floor))

        def used():
            return sum(x.nodes for x in searches)

        def collect(x):
            nonlocal best, best_moves
            if x.best and (not best or x.best < best):
                best, best_moves = x.best, x.best_moves

        # The least-cards search: levels floor+1, floor+2, ... up to the best win known.
        level = floor + 1
        least_on = level <= horizon + 1
        if least_on:
            least.start(deck, r, level, ORDER_NEW_PILE, True, use_tt, use_sym, self._stamp(), use_ranks, use_endgame)
        # The any-win searches: one per (limit, ordering) of ANY_WIN, limits capped by the best win known.
        anys = []
        for x, (extra, order) in zip(self.any_win, ANY_WIN):
            limit = min(horizon + 1 if extra is None else floor + 1 + extra, best or horizon + 1)
            if limit > floor and (limit, order) not in [(y.limit, y.ctl[CTL_ORDER]) for y in anys]:
                x.start(deck, r, limit, order, first_win, use_tt, use_sym, self._stamp(), use_ranks, use_endgame)
                anys.append(x)

        def any_finished(x):
            """An any-win search ended: no (better) win before its limit."""
            nonlocal proven_floor, lost
            collect(x)
            if x.status == DONE or not first_win:  # branch and bound's stop at the least turn is a proof too
                proven_floor = max(proven_floor, x.limit)
                if x.limit >= horizon + 1 and not best:
                    lost = True

        for x in anys:
            if x.status != RUNNING:
                any_finished(x)
        round_nodes = FIRST_ROUND
        while not settled():
            if used() >= cap or (deadline is not None and time.perf_counter() >= deadline):
                break
            active = [x for x in anys if x.status == RUNNING]
            if best and not first_win:
                for x in active:  # only better wins are wanted now (branch and bound)
                    x.lower_limit(best)
                # ... and wins just below the best are the least-cards search's work
                active = [x for x in active if x.limit > level + 1 or not least_on]
            # The any-win searches go first (a win often comes within a few nodes); the
            # least-cards search (None here) then gets as many nodes as all of them together.
            for x in active + [None]:
                if settled():
                    break
                spend = min(round_nodes * (max(1, len(active)) if x is None else 1), cap - used())
                if spend <= 0 or (deadline is not None and time.perf_counter() >= deadline):
                    break
                if x is not None:
                    x.run(deck, r, spend, deadline, self.tt_keys, self.tt_info, self.rate)
                    if x.status != RUNNING:
                        any_finished(x)
                    else:
                        collect(x)
                    continue
                while least_on and spend > 0:
                    n0 = least.nodes
                    least.run(deck, r, spend, deadline, self.tt_keys, self.tt_info, self.rate)
                    spend -= least.nodes - n0
                    if least.status == RUNNING:
                        break  # out of budget (or time)
                    if least.status == STOPPED_AT_WIN:
                        collect(least)
                        proven_floor = max(proven_floor, least.best)  # every level below was finished
                        least_on = False
                    else:
                        proven_floor = max(proven_floor, level)  # no win before turn `level`
                        if level >= (best or horizon + 1):
                            least_on = False
                            lost = lost or not best
                        else:
                            level += 1
                            least.start(deck, r, level, ORDER_NEW_PILE, True, use_tt, use_sym, self._stamp(),
                                        use_ranks, use_endgame)
            if not least_on and not any(x.status == RUNNING for x in anys):
                break
            round_nodes *= 2
        seconds = time.perf_counter() - t0
        nodes = used()
        bound = K.DECK_SIZE - proven_floor  # no win comes before turn proven_floor
        if best:
            return SolveResult("won", K.DECK_SIZE - best, bool(best <= proven_floor), nodes, seconds, best_moves,
                               max(bound, K.DECK_SIZE - best))
        if lost:
            return SolveResult("lost", None, False, nodes, seconds, None, None)
        return SolveResult("unresolved", None, False, nodes, seconds, None, bound)


_SOLVER: Solver | None = None


def shared_solver() -> Solver:
    """One solver per process (its transposition table is allocated on first use, in the worker)."""
    global _SOLVER
    if _SOLVER is None:
        _SOLVER = Solver()
    return _SOLVER


def solve(deck, rules: Rules | None = None, first_win: bool = False, node_limit: int | None = None,
          time_limit: float | None = None, *, horizon: int = K.DECK_SIZE, transpositions: bool = True,
          symmetry: bool = True, rank_parity: bool = True, endgame: bool = True) -> SolveResult:
    """Search every line of play of `deck` (40 ranks in draw order) with the stock order known.

    - ``first_win``: stop at the first win (winnability only); otherwise go on
      for the best score.
    - ``node_limit``: stop after this many placements tried (reproducible).
    - ``time_limit``: stop after about this many seconds (machine-dependent).
    - ``horizon``: only the first `horizon` cards are dealt (a shortened stock,
      for tests); a win must come by then. Scores stay ``40 - cards played``.
    - ``transpositions``, ``symmetry``: switch the transposition table, or
      only its symmetry and translation canonicalization, off (for tests).
    - ``rank_parity``: switch pruning rule 2c (line parities from the ranks
      of the cards to come, docs/solver.md) off (for tests and measurements).
    - ``endgame``: switch rule 5 (the last cards of a line with no slack
      placed by a dedicated search over three masks) off (the same).
    """
    cards = validate_deck(deck)
    rules = Rules() if rules is None else rules
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a sim.Rules, not {type(rules).__name__}")
    if node_limit is not None and (isinstance(node_limit, bool) or int(node_limit) < 1):
        raise ValueError(f"node_limit must be a positive integer, not {node_limit!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and math.isfinite(time_limit)
                                       and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    if not 1 <= horizon <= K.DECK_SIZE:
        raise ValueError(f"horizon must be in 1..40, not {horizon!r}")
    return shared_solver().solve(cards, rules, first_win=bool(first_win),
                                 node_limit=None if node_limit is None else int(node_limit), time_limit=time_limit,
                                 horizon=int(horizon), use_tt=bool(transpositions), use_sym=bool(symmetry),
                                 use_ranks=bool(rank_parity), use_endgame=bool(endgame))
