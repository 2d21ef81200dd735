"""Is there a win with exactly `cards` cards? The question as a SAT formula, for a CDCL solver.

The depth-first search (`search.py`) proves "no win before turn L" by
visiting every line its pruning rules leave; where it needs billions of
nodes (one or two cards of slack), a clause-learning SAT solver proves the
same fact far faster, because what it learns from one dead line it reuses
in all the others, and the formula states outright the count it would
otherwise have to rediscover: how many cards can go on piles. This module
writes the question as clauses (`win_formula`) and asks Glucose 4
(python-sat) for an answer (`win_with`). docs/solver.md ("Proofs by SAT")
argues why the formula is exactly RULES.md's game; the tests hold it to the
depth-first search deal by deal and replay every win it finds through the
engine.

The formula, on a fixed `grid` x `grid` frame (cells ``i * grid + j``):

=====================  ========================================================
variable               meaning
=====================  ========================================================
``x[t, c]``            card t (0-based) is placed on frame cell c
``occ[t, c]``          c holds a pile after card t
``fd[t, c]``           c's top card is face down after card t (false when empty)
``top[t, c, i]``       card i is c's top after card t (i <= t)
=====================  ========================================================

Why one frame loses no win: every pile of a winning line lies in its final
box, a full `grid` x `grid` square that contains the first card, so the
line is a line of that frame with the first card on one of its cells; and
every line of a frame is legal in the game, whose only limit on where a
card may go is the occupied cells' box (the 7x7 board never forbids a
move, docs/solver.md, rule 4). The first card's cell is one of each orbit
of the square's 8 symmetries (a corner, an edge cell, an inner cell of the
4x4 frame), which map lines of play to lines of play.
"""

from itertools import combinations

from sim import kernels as K

CENTRE_ROW = K.CENTRE // K.SIDE
CENTRE_COL = K.CENTRE % K.SIDE


def first_cells(grid: int) -> list[int]:
    """One frame cell of each orbit of the square's 8 symmetries: where the first card may go."""
    seen, out = set(), []
    for c in range(grid * grid):
        if c in seen:
            continue
        out.append(c)
        i, j = divmod(c, grid)
        m = grid - 1
        for a, b in ((i, j), (j, i), (m - i, j), (i, m - j), (m - i, m - j), (j, m - i), (m - j, i), (m - j, m - i)):
            seen.add(a * grid + b)
    return out


def board_cells(frame_moves, grid: int) -> list[int]:
    """A frame line's cells on the canonical 7x7 board, the first card on the centre."""
    r0, c0 = divmod(frame_moves[0], grid)
    return [(CENTRE_ROW - r0 + m // grid) * K.SIDE + CENTRE_COL - c0 + m % grid for m in frame_moves]


class _Formula:
    """Clauses over numbered variables, with Tseitin gates."""

    def __init__(self):
        self.clauses: list[list[int]] = []
        self.top = 0

    def var(self) -> int:
        self.top += 1
        return self.top

    def gate_and(self, lits: list[int]) -> int:
        y = self.var()
        for lit in lits:
            self.clauses.append([-y, lit])
        self.clauses.append([y] + [-lit for lit in lits])
        return y

    def gate_or(self, lits: list[int]) -> int:
        y = self.var()
        for lit in lits:
            self.clauses.append([y, -lit])
        self.clauses.append([-y] + lits)
        return y

    def gate_xor(self, a: int, b: int) -> int:
        y = self.var()
        self.clauses += [[-y, a, b], [-y, -a, -b], [y, -a, b], [y, a, -b]]
        return y

    def at_most(self, lits: list[int], k: int) -> None:
        """Sinz's sequential counter: at most k of `lits` true."""
        n = len(lits)
        if k >= n:
            return
        if k == 0:
            self.clauses += [[-lit] for lit in lits]
            return
        s = [[self.var() for _ in range(k)] for _ in range(n - 1)]
        self.clauses.append([-lits[0], s[0][0]])
        for j in range(1, k):
            self.clauses.append([-s[0][j]])
        for i in range(1, n - 1):
            self.clauses.append([-lits[i], s[i][0]])
            self.clauses.append([-s[i - 1][0], s[i][0]])
            for j in range(1, k):
                self.clauses.append([-lits[i], -s[i - 1][j - 1], s[i][j]])
                self.clauses.append([-s[i - 1][j], s[i][j]])
            self.clauses.append([-lits[i], -s[i - 1][k - 1]])
        self.clauses.append([-lits[n - 1], -s[n - 2][k - 1]])


def win_formula(ranks, rules, cards: int, count_piles_on: bool = True):
    """Clauses satisfied exactly by the lines of the frame that win with card `cards` (1-based count).

    Returns (clauses, x): x[t][c] is the variable of card t on frame cell c.
    A line through a position that already won is not excluded (the game
    would have ended there, with a better win): a solution means a win
    with at most `cards` cards, no solution means none with exactly
    `cards` cards. `count_piles_on` adds an implied constraint (how many
    cards go on piles) that makes the proofs with slack fast.
    """
    g = rules.grid
    cells = g * g
    f = _Formula()
    x = [[f.var() for _ in range(cells)] for _ in range(cards)]
    occ = [[f.var() for _ in range(cells)] for _ in range(cards)]
    fd = [[f.var() for _ in range(cells)] for _ in range(cards)]
    rows = [[r * g + j for j in range(g)] for r in range(g)]
    cols = [[i * g + c for i in range(g)] for c in range(g)]
    steps = [(1, 0), (-1, 0), (0, 1), (0, -1)] + ([(1, 1), (1, -1), (-1, 1), (-1, -1)] if rules.adjacency == "king" else [])

    def neighbours(c):
        i, j = divmod(c, g)
        return [(i + a) * g + j + b for a, b in steps if 0 <= i + a < g and 0 <= j + b < g]

    for t in range(cards):  # each card goes on exactly one cell
        f.clauses.append(list(x[t]))
        f.clauses += [[-x[t][a], -x[t][b]] for a, b in combinations(range(cells), 2)]
    starts = first_cells(g)
    f.clauses += [[-x[0][c]] for c in range(cells) if c not in starts]
    top = [[[x[0][c]] for c in range(cells)]]  # top[t][c][i]
    for c in range(cells):
        f.clauses += [[-occ[0][c], x[0][c]], [occ[0][c], -x[0][c]], [-fd[0][c]]]
    for t in range(1, cards):
        r = ranks[t]
        for c in range(cells):
            # Legal: on a pile (its height is bounded below), or on an empty cell next to one.
            f.clauses.append([-x[t][c], occ[t - 1][c]] + [occ[t - 1][m] for m in neighbours(c)])
            f.clauses += [[-occ[t][c], occ[t - 1][c], x[t][c]], [occ[t][c], -occ[t - 1][c]], [occ[t][c], -x[t][c]]]
        # The face-up tops ranked at least and at most the card placed (rule: strictly above or below all).
        up_ge, up_le = [], []
        for c in range(cells):
            ge = [top[t - 1][c][i] for i in range(t) if ranks[i] >= r]
            le = [top[t - 1][c][i] for i in range(t) if ranks[i] <= r]
            up_ge.append(f.gate_and([f.gate_or(ge), -fd[t - 1][c]]) if ge else None)
            up_le.append(f.gate_and([f.gate_or(le), -fd[t - 1][c]]) if le else None)
        fires = {}
        for p in range(cells):
            for k, line in ((0, rows[p // g]), (1, cols[p % g])):
                others = [c for c in line if c != p]
                above = f.gate_and([-up_ge[c] for c in others if up_ge[c] is not None])
                below = f.gate_and([-up_le[c] for c in others if up_le[c] is not None])
                fires[p, k] = f.gate_or([above, below])
        now = []
        for c in range(cells):
            turned = [f.gate_and([x[t][p], fires[p, 0]]) for p in rows[c // g] if p != c]
            turned += [f.gate_and([x[t][p], fires[p, 1]]) for p in cols[c % g] if p != c]
            flipped = f.gate_xor(fd[t - 1][c], f.gate_or(turned))
            # A card placed on c is face up; an empty cell has no face; else the top turns or not.
            f.clauses += [[-fd[t][c], -x[t][c]], [-fd[t][c], occ[t][c]],
                          [-occ[t - 1][c], x[t][c], -fd[t][c], flipped],
                          [-occ[t - 1][c], x[t][c], fd[t][c], -flipped]]
            now.append([f.gate_and([top[t - 1][c][i], -x[t][c]]) for i in range(t)] + [x[t][c]])
        top.append(now)
        if t < cards - 1:  # more face-down tops than this loses at the end of the turn
            f.at_most([fd[t][c] for c in range(cells)], rules.max_face_down)
    for c in range(cells):
        f.at_most([x[t][c] for t in range(cards)], rules.max_pile)
        f.clauses += [[occ[cards - 1][c]], [-fd[cards - 1][c]]]  # the full grid, every top face up
    if count_piles_on:
        # Implied, and the solver's key to slack: every card but those placed on a pile starts one of
        # the full grid's piles, so at most `cards - cells` cards go on piles, and not more in any prefix
        # (a counting fact clause learning cannot find by itself: it is the pigeonhole principle).
        on_pile = [f.gate_or([f.gate_and([x[t][c], occ[t - 1][c]]) for c in range(cells)]) for t in range(1, cards)]
        f.at_most(on_pile, cards - cells)
    return f.clauses, x


def win_with(deck, rules, cards: int, conflicts: int | None = None, deadline: float | None = None,
             count_piles_on: bool = True):
    """("win", board cells of a winning line), ("none", None) or ("unknown", None).

    "none": no line wins with exactly `cards` cards. A "win" line may
    pass through an earlier win (see `win_formula`); replayed through the
    engine, it wins by card `cards` at the latest. "unknown": the solver
    stopped after `conflicts` conflicts (a count: the answer is a pure
    function of the arguments), or at `deadline` (`time.perf_counter()`).
    """
    import threading
    import time

    from pysat.solvers import Solver

    ranks = [int(v) for v in deck]
    clauses, x = win_formula(ranks, rules, cards, count_piles_on)
    with Solver(name="glucose4", bootstrap_with=clauses) as s:
        if conflicts is not None:
            s.conf_budget(int(conflicts))
        timer = None
        if deadline is not None:
            timer = threading.Timer(max(0.0, deadline - time.perf_counter()), s.interrupt)
            timer.start()
        try:
            ok = s.solve_limited(expect_interrupt=deadline is not None)
        finally:
            if timer is not None:
                timer.cancel()
        if ok is None:
            return "unknown", None
        if not ok:
            return "none", None
        model = set(lit for lit in s.get_model() if lit > 0)
    frame = [next(c for c, v in enumerate(x[t]) if v in model) for t in range(cards)]
    return "win", board_cells(frame, rules.grid)


def won_after(deck, rules, cells) -> int:
    """The cards after which the engine says the line `cells` has won (0: it does not win), each placement
    checked as a game checks it: on a legal cell, and the game not lost at the end of any turn (a formula
    that left a rule out would show here, not as a win)."""
    import numpy as np

    r = rules.as_array()
    state = np.empty(K.STATE_SIZE, np.int64)
    K.reset(state)
    for t, cell in enumerate(cells):
        K.draw(state, int(deck[t]))
        if not (K.legal_cells(state, r) >> int(cell)) & 1:
            return 0
        K.place(state, r, int(cell), int(deck[t]))
        end = K.end_of_turn(state, r)
        if end == K.END_WIN:
            return t + 1
        if end != K.GOES_ON:
            return 0
    return 0


SLACK = 1
"""Questions are asked about wins with at least this many cards beyond one per pile. With none the
depth-first search (its rules 2c and 5) is the faster prover (docs/solver.md, "Proofs by SAT")."""


def past_ruled_out(floor: int, ruled_out) -> int:
    """The least card count from `floor` on that `ruled_out` does not hold (each one held has no win)."""
    while floor in ruled_out:
        floor += 1
    return floor


def _winning_line(deck, rules, n: int, cells) -> tuple[int, tuple[int, ...]]:
    """(cards played, line) of the SAT solver's win with `n` cards, cut at the card where the engine says it
    has won; AssertionError if the engine never does (the formula would not be the game)."""
    best = won_after(deck, rules, cells)
    if not best:
        raise AssertionError(f"the SAT solver's line for {n} cards does not win: {cells}")
    return best, tuple(cells[:best])


def most_cards(rules, horizon: int = K.DECK_SIZE) -> int:
    """The most cards any line can place before it wins: a pile holds at most `max_pile` cards and the grid at
    most `grid * grid` piles, so no win comes after grid * grid * max_pile cards (nor after the horizon)."""
    return min(horizon, rules.grid * rules.grid * rules.max_pile)


def first_win_count(deck, rules, floor: int, conflicts: int | None, deadline: float | None = None,
                    horizon: int = K.DECK_SIZE):
    """With no win known: ask about each card count from `floor` (and not below SLACK cards beyond one per
    pile, unless no count is that high) up to `most_cards`, until a win or an unknown answer.

    `floor` is the least card count not yet ruled out. Counts are asked
    upward, so a win found at n has none from the first count asked to
    n - 1. Returns (best, moves, floor, ruled out above the floor), best 0
    and moves None when no win was found; the floor goes up through the
    counts ruled out just above it, as in `below_best`. When it passes
    `most_cards`, no line wins.
    """
    ruled_out = set()
    best, moves = 0, None
    top = most_cards(rules, horizon)
    n = max(floor, min(rules.grid * rules.grid + SLACK, top))
    while n <= top:
        answer, cells = win_with(deck, rules, n, conflicts, deadline)
        if answer == "unknown":
            break
        if answer == "win":
            best, moves = _winning_line(deck, rules, n, cells)
            break
        ruled_out.add(n)
        n += 1
    floor = past_ruled_out(floor, ruled_out)
    return best, moves, floor, tuple(sorted(c for c in ruled_out if c > floor))


def below_best(deck, rules, best: int, moves, floor: int, conflicts: int | None, deadline: float | None = None):
    """Ask about each card count from the best win's minus one down to `floor` (and not below SLACK cards
    beyond one per pile), until an answer is unknown.

    `best` is the card count of the best win known (its line `moves`),
    `floor` the least card count not yet ruled out. A win found becomes
    the best (cut at the card where the engine says it has won); "none"
    rules its count out. Returns (best, moves, floor, ruled out above the
    floor): the floor goes up through the counts ruled out just above it
    (no win with fewer than `floor` cards, nor with exactly `floor`: none
    with fewer than `floor + 1`); the others are kept for a split solve
    (`SplitSolve`), whose levels reach them later.
    """
    ruled_out = set()
    n = best - 1
    while n >= max(floor, rules.grid * rules.grid + SLACK):
        answer, cells = win_with(deck, rules, n, conflicts, deadline)
        if answer == "unknown":
            break
        if answer == "win":
            best, moves = _winning_line(deck, rules, n, cells)
            n = best - 1
        else:
            ruled_out.add(n)
            n -= 1
    floor = past_ruled_out(floor, ruled_out)
    return best, moves, floor, tuple(sorted(c for c in ruled_out if c > floor))
