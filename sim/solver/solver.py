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

A deal still unsettled after SPLIT_AFTER nodes goes on as a split solve
(`SplitSolve`): its level searches cut into subtrees, searched in rounds
counted in nodes, as tasks any worker can run (`search_subtree`);
`solve_split` runs the whole schedule in one process.
"""

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from sim import kernels as K
from sim.engine.cards import deal, validate_deck
from sim.engine.rules import Rules
from sim.fielddocs import documented
from sim.solver.sat import below_best, first_win_count, most_cards, past_ruled_out
from sim.solver.settings import (  # re-exported: the solver's outcomes and options
    MAX_COUNT, OUTCOMES, SAT_AFTER, SAT_CONFLICTS, SPLIT_AFTER, default_split_after, too_large,
)
from sim.solver.search import (
    CTL_BEST, CTL_LIMIT, CTL_NODES, CTL_ORDER, CTL_SIZE, CTL_STATUS, DONE, ENDGAME_CARDS, FRAME, KEY_WORDS, MAX_DEPTH,
    MAX_MOVES, ORDER_GREEDY, ORDER_NEW_PILE, RUNNING, SCRATCH, STOPPED_AT_WIN, greedy_line, search_init,
    search_run,
)
from sim.solver.search import CTL_DEPTH, LINES, SEEN_AT, split_children  # the split schedule (below) uses these too
from sim.solver.search import (  # level_profile (below)
    CTL_TT_HITS, CTL_TT_OVERWRITES, CTL_TT_STORES, PROFILE_AT, PROFILE_COLS,
)

__all__ = ["OUTCOMES", "SolveResult", "Solver", "SplitSolve", "SubtreeResult", "SubtreeTask", "search_subtree",
           "LevelProfile", "level_profile", "shared_solver", "solve", "solve_split"]


# --- Python API -------------------------------------------------------------------


@documented
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
    ruled_out: tuple[int, ...] = ()
    """Card counts beyond the bound with no win of exactly that many cards (`sim.solver.sat`): the bound
    goes up through them when a split solve's levels reach them. Not a column of `sim solve`'s rows."""
    out_of_nodes: bool = False
    """The node limit stopped the search (its nodes reached the limit, or its next node needed more than were
    left): how a split solve knows its serial phase was cut short. Not a column of `sim solve`'s rows."""


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
              use_endgame=True, use_slack_parity=True):
        search_init(deck, rules, limit, order, stop_at_win, use_tt, use_sym, stamp, self.ctl, self.states,
                    self.moves, self.nmoves, self.nexts, self.line, K.DECK_SIZE if use_ranks else 0,
                    ENDGAME_CARDS if use_endgame else 0, int(use_slack_parity))

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
        """Search `nodes` more nodes at most (fewer if it ends or the deadline passes, or when the next
        node's endgame would pass them: `search_run`).

        Where it stops is a function of the nodes alone, not of the slices: a
        slice too short for the next node's endgame is followed by a longer one.
        """
        ctl = self.ctl
        stop = int(ctl[CTL_NODES]) + nodes
        slice_nodes = 2_000
        while ctl[CTL_STATUS] == RUNNING and ctl[CTL_NODES] < stop:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            n0 = int(ctl[CTL_NODES])
            s0 = time.perf_counter()
            end = min(stop, n0 + slice_nodes)
            search_run(deck, rules, end, ctl, self.states, self.moves, self.nmoves,
                       self.nexts, self.line, self.best_line, self.node_keys, self.tabled, tt_keys, tt_info,
                       self.scratch, self.codes)
            done = int(ctl[CTL_NODES]) - n0
            self.nodes += done
            if ctl[CTL_STATUS] == RUNNING and ctl[CTL_NODES] < end:  # the next node's endgame needs more
                if end == stop:
                    break  # than the budget left: the search stops before that node
                slice_nodes *= 4  # than the slice left
                continue
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
              use_sym: bool = True, use_ranks: bool = True, use_endgame: bool = True,
              use_slack_parity: bool = True, sat_conflicts: int | None = None) -> SolveResult:
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
        beyond = most_cards(rules, horizon) + 1  # no win places this many cards: a floor that reaches it is a loss
        lost = False
        out_of_nodes = False  # the node limit stopped the search

        def settled():
            return lost or (best and (first_win or best <= proven_floor))

        def used():
            return sum(x.nodes for x in searches)

        def collect(x):
            nonlocal best, best_moves
            if x.best and (not best or x.best < best):
                best, best_moves = x.best, x.best_moves

        # The least-cards search: levels floor+1, floor+2, ... up to the best win known.
        def start_least(at):
            least.start(deck, r, at, ORDER_NEW_PILE, True, use_tt, use_sym, self._stamp(), use_ranks, use_endgame,
                        use_slack_parity)

        level = floor + 1
        least_on = level <= horizon + 1
        if least_on:
            start_least(level)
        # The any-win searches: one per (limit, ordering) of ANY_WIN, limits capped by the best win known.
        anys = []
        for x, (extra, order) in zip(self.any_win, ANY_WIN):
            limit = min(horizon + 1 if extra is None else floor + 1 + extra, best or horizon + 1)
            if limit > floor and (limit, order) not in [(y.limit, y.ctl[CTL_ORDER]) for y in anys]:
                x.start(deck, r, limit, order, first_win, use_tt, use_sym, self._stamp(), use_ranks, use_endgame,
                        use_slack_parity)
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
        ruled_out = set()  # card counts with no win of exactly that many cards (SAT)
        sat_asked = not sat_conflicts or first_win

        def ask_sat():
            """The SAT questions below the best win (`sim.solver.sat.below_best`), or with no win known from the
            least card count up (`first_win_count`), in at most half the time limit."""
            nonlocal best, best_moves, proven_floor, sat_asked, level, least_on, lost
            sat_asked = True
            now = time.perf_counter()
            if (best and best <= proven_floor) or (deadline is not None and now >= deadline):
                return
            until = None if deadline is None else min(deadline, now + time_limit / 2)
            if best:
                best, best_moves, proven_floor, above = below_best(cards, rules, best, best_moves, proven_floor,
                                                                   sat_conflicts, until)
            else:
                best, best_moves, proven_floor, above = first_win_count(cards, rules, proven_floor, sat_conflicts,
                                                                        until, horizon)
                lost = not best and proven_floor >= beyond
            ruled_out.update(above)
            if least_on and level <= proven_floor:  # the answers finished the least-cards search's level
                if best and proven_floor >= best:
                    least_on = False
                else:
                    level = proven_floor + 1
                    start_least(level)

        round_nodes = FIRST_ROUND
        while not settled():
            if not sat_asked and used() >= SAT_AFTER:  # the node limit may have come too
                ask_sat()
                continue
            if used() >= cap:
                out_of_nodes = True
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            before = used()
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
                        # no win before turn `level`, nor with the card counts SAT ruled out just above it
                        proven_floor = past_ruled_out(max(proven_floor, level), ruled_out)
                        if proven_floor >= (best or beyond):
                            least_on = False
                            lost = lost or not best
                        else:
                            level = past_ruled_out(level, ruled_out) + 1
                            start_least(level)
            if not least_on and not any(x.status == RUNNING for x in anys):
                break
            if used() == before and round_nodes >= cap - used():
                out_of_nodes = True  # each search's next node has an endgame (rule 5) that needs more
                break  # than the nodes left
            round_nodes *= 2
        ruled_out = tuple(sorted(c for c in ruled_out if c > proven_floor))
        seconds = time.perf_counter() - t0
        nodes = used()
        bound = K.DECK_SIZE - proven_floor  # no win comes before turn proven_floor
        if best:
            return SolveResult("won", K.DECK_SIZE - best, bool(best <= proven_floor), nodes, seconds, best_moves,
                               max(bound, K.DECK_SIZE - best), ruled_out, out_of_nodes)
        if lost:
            return SolveResult("lost", None, False, nodes, seconds, None, None)
        return SolveResult("unresolved", None, False, nodes, seconds, None, bound, ruled_out, out_of_nodes)


@dataclass(frozen=True)
class LevelProfile:
    """Where the nodes of one level search go (`level_profile`): for measurements, not for play."""

    level: int
    """The search looked for a win before this turn."""
    status: str
    """done (no win before the level), won, or open (the node limit came first)."""
    nodes: int
    """Placements tried (rule 5's included)."""
    counts: np.ndarray
    """counts[turn, slack, k] (slack 3 stands for 3 or more): k = 0 positions reached, 1 cut by rule 2,
    2 cut by the table, 3 stored in the table."""
    tt_hits: int
    """Positions cut by the table (rule 3)."""
    tt_stores: int
    """Positions stored in the table."""
    tt_overwrites: int
    """Stores that replaced another position's entry of the same search (the table was full there)."""


def level_profile(solver: Solver, cards, rules: Rules, level: int, node_limit: int, *, use_ranks: bool = True,
                  use_endgame: bool = True, use_slack_parity: bool = True) -> LevelProfile:
    """Search one level of the least-cards search (a win before turn `level`, stop at the first) and count
    its nodes by turn and slack (why a proof is expensive: which depths and slacks hold its nodes)."""
    deck = np.asarray(cards, np.int64)
    r = rules.as_array()
    x = _Search()
    x.start(deck, r, level, ORDER_NEW_PILE, True, True, True, solver._stamp(), use_ranks, use_endgame,
            use_slack_parity)
    x.run(deck, r, node_limit, None, solver.tt_keys, solver.tt_info, solver.rate)
    counts = x.scratch[PROFILE_AT:SCRATCH].reshape((MAX_DEPTH + 1, 4, PROFILE_COLS)).copy()
    status = "won" if x.best else ("done" if x.status == DONE else "open")
    return LevelProfile(level, status, x.nodes, counts, int(x.ctl[CTL_TT_HITS]), int(x.ctl[CTL_TT_STORES]),
                        int(x.ctl[CTL_TT_OVERWRITES]))


_SOLVERS = threading.local()
"""Each thread's solver: a Dask worker with several threads solves several chunks at once in one process."""


def shared_solver() -> Solver:
    """One solver per thread of a process, made on first use (in the worker): its search buffers and table hold
    one solve at a time, and a solve sharing them with another thread's would get that solve's nodes and wins."""
    solver = getattr(_SOLVERS, "solver", None)
    if solver is None:
        warm_up()
        solver = _SOLVERS.solver = Solver()
    return solver


def warm_up(splits: bool = False) -> None:
    """Compile (or load from numba's cache) the search, with a small table, so that no deal's `seconds` or
    `time_limit` pays for it; with `splits`, what a split solve adds (`split_children`)."""
    Solver(tt_bits=8).solve(np.array(deal(0, 0), np.uint8), Rules(), node_limit=2_000)
    if splits:
        _warm_up_splits()


def may_split(split_after: int | None, node_limit: int | None) -> bool:
    """Whether a deal may go on as a split solve: a split threshold (0 or None: never) below its node limit."""
    return bool(split_after) and (node_limit is None or node_limit > split_after)


def _warm_up_splits() -> None:
    """What a split solve compiles on first use (`split_children`, and the turn kernels `search_subtree` calls
    from Python) compiled or loaded, on a first position: microseconds once they are."""
    r = Rules().as_array()
    split_children(np.array(deal(0, 0), np.int64), r, np.empty(0, np.int64), K.DECK_SIZE, True,
                   np.empty(K.CELLS, np.int64), np.empty((K.CELLS, KEY_WORDS), np.uint64))
    state = np.zeros((1, K.STATE_SIZE), np.int64)[0]  # a row of a table of states, as search_subtree's
    K.draw(state, 1)
    K.place(state, r, K.CENTRE, 1)


def solve(deck, rules: Rules | None = None, first_win: bool = False, node_limit: int | None = None,
          time_limit: float | None = None, *, horizon: int = K.DECK_SIZE, transpositions: bool = True,
          symmetry: bool = True, rank_parity: bool = True, endgame: bool = True, slack_parity: bool = True,
          split_after: int | None = None, sat_conflicts: int | None = SAT_CONFLICTS) -> SolveResult:
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
    - ``slack_parity``: switch rule 2d (rule 2c with one card of slack) off
      (the same; it has no effect with ``rank_parity`` off).
    - ``split_after``: after this many nodes an unsettled deal goes on as a
      split solve (`SplitSolve`, its subtrees searched here in turn); 0
      never splits; None (the default) is `default_split_after(time_limit)`. `sim solve` runs
      the same schedule with the subtrees on idle workers: same rows.
    - ``sat_conflicts``: when the search has not settled the deal after
      SAT_AFTER nodes (2 M; none are asked if it stops first), ask a SAT solver (`sim.solver.sat`,
      python-sat) about each card count below the best win found, from the
      highest down (with none found, from the least count up to the most a
      line can place: none at all is a loss), each question stopped after this many conflicts
      (reproducible; with ``time_limit``, also after half of it); the
      search then goes on. 0 or None: never (the search alone).
    """
    cards = validate_deck(deck)
    rules = Rules() if rules is None else rules
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a sim.Rules, not {type(rules).__name__}")
    if node_limit is not None and (isinstance(node_limit, bool) or not isinstance(node_limit, (int, np.integer))
                                   or node_limit < 1):
        raise ValueError(f"node_limit must be a positive integer, not {node_limit!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and math.isfinite(time_limit)
                                       and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    if not 1 <= horizon <= K.DECK_SIZE:
        raise ValueError(f"horizon must be in 1..40, not {horizon!r}")
    if split_after is not None and (isinstance(split_after, bool) or int(split_after) < 0):
        raise ValueError(f"split_after must be a whole number of nodes (0: never split), not {split_after!r}")
    if sat_conflicts is not None and (isinstance(sat_conflicts, bool) or int(sat_conflicts) < 0):
        raise ValueError(f"sat_conflicts must be a whole number of conflicts (0: never ask), not {sat_conflicts!r}")
    for name, value in (("node_limit", node_limit), ("split_after", split_after), ("sat_conflicts", sat_conflicts)):
        if value is not None and value > MAX_COUNT:
            raise ValueError(too_large(name, value))
    split = (default_split_after(time_limit) if split_after is None else int(split_after)) or None
    if may_split(split, node_limit):
        _warm_up_splits()  # before the deal's clock starts: a split compiles `split_children` on first use
    return solve_split(shared_solver(), cards, rules, first_win=bool(first_win),
                       sat_conflicts=int(sat_conflicts or 0),
                       node_limit=None if node_limit is None else int(node_limit), time_limit=time_limit,
                       horizon=int(horizon), use_tt=bool(transpositions), use_sym=bool(symmetry), use_ranks=bool(rank_parity),
                       use_endgame=bool(endgame), use_slack_parity=bool(slack_parity), split_after=split)


# --- the split schedule: one hard deal's search shared between workers ----------------------------------------

SPLIT_SUBTREES = 24
"""The split is made at the first depth with at least this many distinct positions (up to SPLIT_MAX_DEPTH)."""
SPLIT_MAX_DEPTH = 6
"""Deepest split: positions after this many cards."""
SPLIT_FIRST_ROUND = 1_000_000
"""Node budget of each task in the first round of a level: small, so that a win in any subtree that has an
easy one is found before the subtrees listed ahead of it are searched to the end."""
SPLIT_TASK_NODES = 32_000_000
"""Node budget of each task in the later rounds of a level: large enough that a proof is cut into few tasks
(a task's table is its own, so a subtree cut into more tasks is searched with less of what its table would
have known), small enough that a round's last task keeps the other workers waiting a few seconds at most."""


@dataclass(frozen=True)
class SubtreeTask:
    """One subtree search of a split solve: `search_subtree` gives a pure function of these fields."""

    deck: tuple[int, ...]
    """The deal's 40 ranks in draw order."""
    rules: Rules
    """Rule options."""
    paths: tuple[tuple[int, ...], ...]
    """Subtrees searched one after the other, each as the cells of its first cards (its root is the
    position after them)."""
    level: int
    """Look for a win before this turn (stop at the first one)."""
    budget: int
    """Nodes the search may try, at most."""
    use_tt: bool = True
    """Use the transposition table (a fresh stamp: the result does not depend on what the process did before)."""
    use_sym: bool = True
    """Key the table over translations and symmetries."""
    use_ranks: bool = True
    """Pruning rule 2c (line parities from the ranks to come)."""
    use_endgame: bool = True
    """Rule 5 (the last cards of a line with no slack placed by a search over masks)."""
    use_slack_parity: bool = True
    """Rule 2d (rule 2c with one card of slack)."""
    deadline: float | None = None
    """Stop at the first slice after this wall-clock time (time.time()); None for no deadline."""


@dataclass(frozen=True)
class SubtreeResult:
    """What one subtree search found."""

    status: str
    """done (no win before the level in these subtrees), won (a win, in `moves`) or open (budget or deadline
    hit, the rest in `frontier`)."""
    nodes: int
    """Placements tried."""
    moves: tuple[int, ...] | None = None
    """The winning line from the empty table (path included); None unless won."""
    frontier: tuple[tuple[int, ...], ...] = ()
    """When open: the subtrees not searched yet, as paths, in the search's order (see `search_subtree`)."""


def _split_depth(r: np.ndarray, level: int, deepest: int) -> int:
    """The deepest a split may cut: before any win is possible (so no listed position is a win)."""
    floor = int(r[K.RULE_GRID]) ** 2
    return max(1, min(deepest, floor - 1, level - 2))


def _expand(deck: np.ndarray, r: np.ndarray, paths: list, level: int, use_key: bool,
            seen: set) -> list[tuple[int, ...]]:
    """The children of each position of `paths` (in order), as paths.

    Each position's children come in the search's own order (a new pile
    first, then fewer face-down tops, then the lowest cell). Moves that lose
    at once (rule 1) and positions the turn bound cuts (rule 2) are dropped;
    a position whose canonical key is in `seen` (a position listed before at
    the same depth of this level: the same future, rule 4) is dropped too,
    and the others' keys are added to it. A pure function of its arguments.
    """
    cells = np.empty(K.CELLS, np.int64)
    keys = np.empty((K.CELLS, KEY_WORDS), np.uint64)
    out = []
    for path in paths:
        count = split_children(deck, r, np.array(path, np.int64), level, use_key, cells, keys)
        t = len(path) + 1
        for i in range(count):
            k = (t, int(keys[i, 0]), int(keys[i, 1]), int(keys[i, 2]))
            if k in seen:
                continue  # rule 4: an equal position is listed already
            seen.add(k)
            out.append(path + (int(cells[i]),))
    return out


def _split_frontier(deck: np.ndarray, r: np.ndarray, level: int, use_key: bool,
                    seen: set) -> list[tuple[int, ...]]:
    """The subtree roots of a split level search.

    Positions are expanded depth by depth (`_expand`) until a depth has
    SPLIT_SUBTREES distinct positions (or SPLIT_MAX_DEPTH cards are placed).
    The list is a pure function of (deck, rules, level): it decides the
    subtrees' order.
    """
    paths = [()]
    for _ in range(_split_depth(r, level, SPLIT_MAX_DEPTH)):
        paths = _expand(deck, r, paths, level, use_key, seen)
        if len(paths) >= SPLIT_SUBTREES or not paths:
            break
    return paths


def _next_tasks(frontiers: list[tuple[tuple[int, ...], ...]]) -> list[tuple[tuple[int, ...], ...]]:
    """The next round's tasks made of the unfinished tasks' frontiers, in the search's order.

    Each frontier goes on as one task (one search and its table, as far as
    it can), unless that leaves fewer than SPLIT_SUBTREES tasks: then each
    frontier is cut, so that the workers share it. Its shallowest positions
    hold its largest subtrees: each is a task of its own; the deeper ones
    (the rest of the branch the search was in, smaller) go together in one
    task, first, as the search would have taken them. A pure function of
    the frontiers: whoever runs the tasks, the schedule is the same.
    """
    frontiers = [f for f in frontiers if f]
    if len(frontiers) >= SPLIT_SUBTREES:
        return frontiers
    out = []
    for f in frontiers:
        shallowest = min(len(p) for p in f)
        deeper = tuple(p for p in f if len(p) > shallowest)
        out += ([deeper] if deeper else []) + [(p,) for p in f if len(p) == shallowest]
    return out


class SplitSolve:
    """The rest of a deal's solve after the serial phase: level searches split into subtrees, in rounds.

    After `Solver.solve` has spent SPLIT_AFTER nodes on a deal without
    settling it, the search for a better win goes on level by level (a win
    before turn ``level``, the least turn not yet ruled out, as the
    least-cards search does). Each level's tree is split at a fixed depth
    (`_split_frontier`) and the subtrees are searched in rounds: each task
    (one subtree, or several searched one after the other) gets
    SPLIT_FIRST_ROUND nodes in a level's first round and SPLIT_TASK_NODES
    in the later ones, with a fresh table stamp, and a task that runs out
    of them hands back what it has not searched yet (`search_subtree`'s
    frontier), which makes the next round's tasks (`_next_tasks`): no
    position is searched twice. A round ends with all its results, or at
    its first win in the tasks' order (`RoundResults`): the nodes counted
    are those of the tasks up to it. A task's result is a pure function of
    it, and the rounds are joined only between rounds, so the deal's result does not depend on
    who searched which subtree, in which order, or how fast: the schedule
    is counted in nodes.
    The driver (`Solver.solve_split` in one process, or a job handing the
    tasks to idle workers) calls `tasks`, runs them, and gives the results
    back to `record`, until `tasks` returns none.
    """

    def __init__(self, cards: np.ndarray, rules: Rules, first: SolveResult, *, first_win: bool,
                 node_limit: int | None, horizon: int, use_tt: bool, use_sym: bool, started: float,
                 deadline: float | None, use_ranks: bool = True, use_endgame: bool = True,
                 use_slack_parity: bool = True):
        self.deck = cards.astype(np.int64)
        self.rules = rules
        self.first_win = first_win
        self.cap = node_limit
        self.horizon = horizon
        self.use_tt, self.use_sym = use_tt, use_sym
        self.use_ranks, self.use_endgame, self.use_slack_parity = use_ranks, use_endgame, use_slack_parity
        self.started, self.deadline = started, deadline
        self.nodes = first.nodes
        self.best = 0 if first.score is None else K.DECK_SIZE - first.score  # turn of the best win known
        self.best_moves = first.moves
        floor = rules.grid * rules.grid
        self.proven_floor = floor if first.score_bound is None else K.DECK_SIZE - first.score_bound
        self.ruled_out = set(first.ruled_out)  # card counts above the floor with no win (SAT)
        self.lost = False
        self.level = horizon + 1 if first_win else self.proven_floor + 1
        self.open: list[tuple[tuple[int, ...], ...]] | None = None  # this level's tasks still to search
        self.budget = SPLIT_FIRST_ROUND
        self.rounds = 0
        self.issued = 0  # how many of `open` the last `tasks` handed out (the node limit may hold some back)
        self.stopped = False  # a node or time limit ended the schedule

    @staticmethod
    def needed(first: SolveResult, first_win: bool, node_limit: int | None, split_after: int | None) -> bool:
        """Does a deal whose serial solve (with node_limit min(node_limit, split_after)) gave `first` go on split?"""
        if split_after is None or (node_limit is not None and node_limit <= split_after):
            return False
        if not first.out_of_nodes:  # it ended by itself or by the clock
            return False
        if first.outcome == "lost" or (first.outcome == "won" and (first_win or first.proven_best)):
            return False
        return True

    def settled(self) -> bool:
        """Is the deal decided: lost, or won with its best score proven (any win with first_win)?"""
        return self.lost or bool(self.best and (self.first_win or self.best <= self.proven_floor))

    def tasks(self) -> list[SubtreeTask]:
        """The next round's subtree searches, in the schedule's order; none when the solve is over."""
        if self.settled() or self.stopped:
            return []
        if self.deadline is not None and time.time() >= self.deadline:
            self.stopped = True
            return []
        if self.open is None:
            # Listing the subtrees' roots is not counted in nodes (as greedy's game is not): so a node
            # limit is never overrun, and the searches' nodes are what it limits.
            roots = _split_frontier(self.deck, self.rules.as_array(), self.level, self.use_tt and self.use_sym, set())
            self.open = [(path,) for path in roots]
            self.budget = SPLIT_FIRST_ROUND
            if not self.open:  # every line is cut before the split depth
                self._level_finished()
                return self.tasks()
        budgets = [self.budget] * len(self.open)
        if self.cap is not None:
            # The node limit bounds the round: its tasks get their budgets in the schedule's order
            # until the nodes left run out (the tasks after wait for a later round).
            left, budgets = self.cap - self.nodes, []
            while len(budgets) < len(self.open) and left > 0:
                budgets.append(min(self.budget, left))
                left -= budgets[-1]
            if not budgets:
                self.stopped = True
                return []
        self.issued = len(budgets)
        deck = tuple(int(c) for c in self.deck)
        return [SubtreeTask(deck, self.rules, paths, self.level, budget, use_tt=self.use_tt, use_sym=self.use_sym,
                            use_ranks=self.use_ranks, use_endgame=self.use_endgame,
                            use_slack_parity=self.use_slack_parity, deadline=self.deadline)
                for paths, budget in zip(self.open, budgets)]

    def record(self, results: list[SubtreeResult]) -> None:
        """Take a round's results in the order of its tasks: all of them, or up to its first win (`RoundResults`)."""
        self.rounds += 1
        self.nodes += sum(x.nodes for x in results)
        wins = [x for x in results if x.status == "won"]
        if wins:  # the first subtree in the schedule's order that won (any win before the level is the least)
            line = wins[0].moves
            if not self.best or len(line) < self.best:
                self.best, self.best_moves = len(line), line
            return
        if any(x.status == "open" for x in results) and self.deadline is not None and time.time() >= self.deadline:
            self.stopped = True
        if not any(x.nodes for x in results):
            # No task could take a step: the next node of each has an endgame (rule 5) that needs more
            # than its budget, which the node limit leaves as it is, so the limit ends the schedule.
            self.stopped = True
        # What the unfinished tasks did not search, then the tasks the node limit left for later (in the
        # schedule's order), are the next round's tasks, with more nodes each.
        self.open = _next_tasks([x.frontier for x in results if x.status == "open"] + self.open[self.issued:])
        if not self.open:
            self._level_finished()
        else:
            self.budget = SPLIT_TASK_NODES

    def checkpoint(self) -> dict:
        """The schedule's state between rounds, as JSON-ready data (`restore` takes it back).

        With the frontier schedule this is small (the open tasks are paths),
        and the rounds after it are a pure function of it: a job saves it so
        that an interrupted hard deal resumes where it stopped.
        """
        return {"level": self.level, "best": self.best, "best_moves": None if self.best_moves is None
                else list(self.best_moves), "proven_floor": self.proven_floor, "lost": self.lost,
                "open": None if self.open is None else [[list(p) for p in task] for task in self.open],
                "budget": self.budget, "rounds": self.rounds, "nodes": self.nodes,
                "seconds": time.time() - self.started, "ruled_out": sorted(self.ruled_out)}

    def restore(self, state: dict) -> None:
        """Go on from `checkpoint`'s state (the deal's seconds go on from its elapsed time)."""
        self.level, self.best = int(state["level"]), int(state["best"])
        self.best_moves = None if state["best_moves"] is None else tuple(int(c) for c in state["best_moves"])
        self.proven_floor, self.lost = int(state["proven_floor"]), bool(state["lost"])
        self.open = None if state["open"] is None else [tuple(tuple(int(c) for c in p) for p in task)
                                                         for task in state["open"]]
        self.budget, self.rounds, self.nodes = int(state["budget"]), int(state["rounds"]), int(state["nodes"])
        self.ruled_out = set(int(c) for c in state.get("ruled_out", ()))
        self.started = time.time() - float(state["seconds"])

    def _level_finished(self) -> None:
        """Every subtree of the level ended without a win: no win before turn `level`."""
        self.proven_floor = past_ruled_out(max(self.proven_floor, self.level), self.ruled_out)
        self.open = None
        if self.proven_floor >= (self.best or most_cards(self.rules, self.horizon) + 1):
            self.lost = not self.best
        else:
            self.level = self.proven_floor + 1

    def result(self) -> SolveResult:
        """The deal's result (`seconds`: wall time from the start of its serial solve to now)."""
        seconds = time.time() - self.started
        bound = K.DECK_SIZE - self.proven_floor
        if self.best:
            return SolveResult("won", K.DECK_SIZE - self.best, bool(self.best <= self.proven_floor), self.nodes,
                               seconds, self.best_moves, max(bound, K.DECK_SIZE - self.best))
        if self.lost:
            return SolveResult("lost", None, False, self.nodes, seconds, None, None)
        return SolveResult("unresolved", None, False, self.nodes, seconds, None, bound)


class RoundResults:
    """A split round's results as they come back, in any order, and when they decide the round.

    A round is decided by all its results, or by the first win in the
    schedule's order once every subtree before it is back: any win before
    the level settles the deal (it is the least turn left, or any win with
    first_win), so the subtrees after it are not needed. A round can have
    thousands of subtrees, so each result is looked at once (a scan of
    them all per result made a job's main process quadratic in them).
    """

    def __init__(self, n: int):
        self.results: list = [None] * n
        """Each subtree's result in the round's order; None until it is back."""
        self.known = 0
        """The first `known` results are back and none of them won."""

    def take(self, j: int, result: SubtreeResult) -> int | None:
        """Record subtree j's result; how many of the first results decide the round, or None while they do not."""
        self.results[j] = result
        while self.known < len(self.results) and self.results[self.known] is not None:
            if self.results[self.known].status == "won":
                return self.known + 1
            self.known += 1
        return self.known if self.known == len(self.results) else None


def search_subtree(solver: Solver, task: SubtreeTask) -> SubtreeResult:
    """Search a task's subtrees in order (a pure function of `task`: a fresh stamp, nothing carried over).

    For each path, the search is set up at the root and its stack is then
    pointed at the subtree: the path's cards are on the stack as positions
    with a single, already tried move, except the last, which `search_run`
    plays itself (so the turn bound and the table apply to the subtree's
    root as to any node). Positions on the path are never stored in the
    table (their other moves are not searched), and once the subtree is done
    the stack unwinds to the root and that search ends. The task's subtrees
    share its table (a fact stored under one holds in another: the same
    level) and its node budget. When the budget or the deadline runs out,
    the result's frontier is every position the task has not searched yet:
    the untried moves on the stack, deepest first (the order in which the
    search would have tried them), then the task's untouched paths.
    """
    deck = np.asarray(task.deck, np.int64)
    r = task.rules.as_array()
    x = _Search()
    stamp = solver._stamp()
    seen = x.scratch[SEEN_AT:SEEN_AT + (MAX_DEPTH + 1) * LINES].reshape((MAX_DEPTH + 1, LINES))
    deadline = None if task.deadline is None else time.perf_counter() + (task.deadline - time.time())
    for n, path in enumerate(task.paths):
        x.start(deck, r, task.level, ORDER_NEW_PILE, True, task.use_tt, task.use_sym, stamp, task.use_ranks,
                task.use_endgame, task.use_slack_parity)
        k = len(path)
        state = x.states[0]
        for t, cell in enumerate(path[:-1]):
            state = x.states[t + 1]
            state[:] = x.states[t]
            K.draw(state, int(deck[t]))
            K.place(state, r, int(cell), int(deck[t]))
            # The ranks placed in each line of each position on the path, as search_run keeps them (rule 2c).
            seen[t + 1] = seen[t]
            seen[t + 1, K.ROW_OF[cell]] |= 1 << int(deck[t])
            seen[t + 1, K.SIDE + K.COL_OF[cell]] |= 1 << int(deck[t])
        for t, cell in enumerate(path):
            x.moves[t, 0] = cell
            x.nmoves[t] = 1
            x.nexts[t] = 1 if t < k - 1 else 0
            x.line[t] = cell if t < k - 1 else -1
        x.tabled[:] = False
        x.ctl[CTL_DEPTH] = k - 1
        x.ctl[CTL_STATUS] = RUNNING
        if task.budget > x.nodes and (deadline is None or time.perf_counter() < deadline):
            x.run(deck, r, task.budget - x.nodes, deadline, solver.tt_keys, solver.tt_info, solver.rate)
        if x.best:
            return SubtreeResult("won", x.nodes, x.best_moves)
        if x.status != DONE:
            rest = _untried(x) + tuple(task.paths[n + 1:])
            if rest:
                return SubtreeResult("open", x.nodes, frontier=rest)
    return SubtreeResult("done", x.nodes)


def _untried(x: _Search) -> tuple[tuple[int, ...], ...]:
    """The moves a stopped search has not tried yet, as paths from the empty table, deepest first.

    The position at depth j of the stack was reached by line[:j]; its moves
    from nexts[j] on are untried (the one before is the branch in progress,
    deeper on the stack, or tried and finished at the top of the stack).
    """
    out = []
    for j in range(int(x.ctl[CTL_DEPTH]), -1, -1):
        prefix = tuple(int(c) for c in x.line[:j])
        out += [prefix + (int(x.moves[j, m]),) for m in range(int(x.nexts[j]), int(x.nmoves[j]))]
    return tuple(out)


def solve_split(solver: Solver, cards: np.ndarray, rules: Rules, *, first_win: bool = False,
                node_limit: int | None = None, time_limit: float | None = None, horizon: int = K.DECK_SIZE,
                use_tt: bool = True, use_sym: bool = True, use_ranks: bool = True, use_endgame: bool = True,
                use_slack_parity: bool = True, split_after: int | None = SPLIT_AFTER,
                sat_conflicts: int | None = None) -> SolveResult:
    """The whole schedule of a deal in this process: the serial solve, then (if unsettled) its split rounds.

    A job runs the same schedule with the rounds' subtrees on idle workers;
    the result is the same (with only a node limit, the same row).
    """
    started = time.time()
    cap = node_limit if split_after is None else (split_after if node_limit is None else min(node_limit, split_after))
    first = solver.solve(cards, rules, first_win=first_win, node_limit=cap, time_limit=time_limit, horizon=horizon,
                         use_tt=use_tt, use_sym=use_sym, use_ranks=use_ranks, use_endgame=use_endgame,
                         use_slack_parity=use_slack_parity, sat_conflicts=sat_conflicts)
    if not SplitSolve.needed(first, first_win, node_limit, split_after):
        return first
    plan = SplitSolve(cards, rules, first, first_win=first_win, node_limit=node_limit, horizon=horizon,
                      use_tt=use_tt, use_sym=use_sym, use_ranks=use_ranks, use_endgame=use_endgame,
                      use_slack_parity=use_slack_parity, started=started,
                      deadline=None if time_limit is None else started + time_limit)
    while tasks := plan.tasks():
        results = []
        for t in tasks:
            results.append(search_subtree(solver, t))
            if results[-1].status == "won":
                break  # the round is decided: the subtrees after a win are not searched
        plan.record(results)
    return plan.result()
