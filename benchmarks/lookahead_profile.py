"""Where lookahead's time goes per turn, and how many root cells a bound could cut.

    python benchmarks/lookahead_profile.py [-n DEALS] [--rounds R]

Collects the positions of lookahead's own games on the first DEALS deals of
seed 1 (default 150), with the next card drawn, then in one process on one
core:

- time: `choose` on every position, and the fast path's stages on every
  legal root cell of the same positions, without cut-offs: the turn's line
  tables (`_line_tables`, `_fire_tables`), placing the card, `_prepare`,
  `_cell_bounds` and `_rank_loops`. Each stage's time is the difference of
  two cumulative runs, the least of R rounds each;
- counts, over the root cells that do not lose at once: follow-up cells per
  root cell; the lines (rows and columns) a root placement changes (its own,
  and those through the cells its checks turn), and the share of follow-up
  cells outside them that were legal before it (all that tables shared
  across the root cells, redone only where a placement changes them, could
  take over unchanged); the share that choose's cut-off gives up (root
  cells in cell order, as choose takes them: each has paid its tables and
  bounds by then); the share of root cells whose largest follow-up bound is below
  the best root cell's expectation (what the bounds can cut, even with the
  best root cell searched first, since every cell pays its tables and
  bounds before its cut) and the share whose expectation is below the best
  by more than 0.001, 1, 5, 10 and 20 (what a bound that cost less than
  the tables would have to cut); the share whose value after the placement
  (over the next card) plus its largest gain (the best follow-up's leaf less
  that value, at its largest over the ranks) is below the best expectation
  (the most that a bound of that form, one gain for every rank, could cut,
  however it is computed); the share below it of a decoupled bound (the
  largest cell value, the largest row term and the largest column term
  over the follow-up cells, each taken on its own: the form a bound from
  per-line maxima, cheaper than the follow-ups' bounds, would take, and
  no tighter than it); the positions whose choice is settled by
  exact expectations (several root cells within 2 margins of the best,
  each paying a second pass), the time of that second pass, and how
  many of those root cells it could skip as provably tied (their position
  the same as another's, moved whole) and how many positions are ties
  in fact; quantiles of the largest bound minus the
  expectation;
- by turn: the share of `choose`'s time spent on the first turns, and how
  many of those positions are drawn by distinct sequences of ranks (a
  position and its card follow from the ranks drawn so far, so a table of
  choices keyed by them could spare at most the time of the repeated ones).
"""

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=parse_count, default=150, help="deals of seed 1 whose positions are profiled (default 150)")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds; the least time counts (default 5)")
    args = parser.parse_args()

    import numpy as np
    from numba import njit

    import policies
    import sim
    from policies import lookahead as L
    from policies.heuristic import LOSS, WIN, evaluate, stock_prefix
    from sim import kernels as K
    from positions import policy_positions  # benchmarks/positions.py

    @njit
    def decoupled(after, table, fire_max, base, line_min, turn_sum_max, turned_max, setups, values, n):
        """The largest cell value, row term and column term over the n follow-up cells of `_cell_bounds`' setups
        and values, each on its own, added to base[0] (infinite when a follow-up may win): never below the largest
        of their bounds."""
        occ = after[K.OCCUPIED]
        cell_most = -np.inf
        row_most = -np.inf
        col_most = -np.inf
        for j in range(n):
            for p in range(4):  # a won pattern's value is 4 * WIN, a lost one's 4 * LOSS
                if values[j, p] == 4 * WIN:
                    return np.inf
                if values[j, p] != 4 * LOSS:
                    cell_most = max(cell_most, values[j, p])
            (cell, row_lo0, row_hi0, row_lo1, row_hi1, row_f0, row_f1, col_lo0, col_hi0, col_lo1, col_hi1, col_f0,
             col_f1) = L._setup(setups, j)
            row = K.ROW_OF[cell]
            col = K.SIDE + K.COL_OF[cell]
            own = np.float64((occ >> cell) & 1)
            row_stays, row_fires = L._line_terms(table, fire_max, turn_sum_max, turned_max, own, row, 2 * cell + 1,
                                                 row_f0, row_lo0, row_hi0, row_f1, row_lo1, row_hi1)
            col_stays, col_fires = L._line_terms(table, fire_max, turn_sum_max, turned_max, own, col, 2 * cell,
                                                 col_f0, col_lo0, col_hi0, col_f1, col_lo1, col_hi1)
            row_most = max(row_most, max(row_stays, row_fires) - line_min[row])
            col_most = max(col_most, max(col_stays, col_fires) - line_min[col])
        return base[0] + cell_most + row_most + col_most

    @njit
    def walk(states, cards, legals, rules, params, upto, gaps, bests):
        """The fast path's stages on every legal root cell, up to `upto` (0: line tables only, 1: + placing
        the card, 2: + `_prepare`, 3: + `_cell_bounds`, 4: + rank loops without cut-offs).

        With `gaps` (at least one row per legal root cell), only the root cells that do not lose at once, all
        stages, and per root cell gaps[j] = (largest bound, expectation, best expectation of its position,
        lines the placement changes, follow-up cells outside them that were legal before it, its position or
        -1 where another root cell wins at once, whether choose's cut-off gives it up, the root bound's
        ceiling: the expectation of the position's own value after the placement plus its largest gain, the
        decoupled bound, the root cell), and bests[j]: its best leaf per rank, as the fast path gives them.
        Returns (root cells, follow-up cells).
        """
        counting = gaps.shape[0] > 0
        prefix = np.empty(K.RANKS + 1, np.int64)
        after = np.empty(K.STATE_SIZE, np.int64)
        table = np.zeros((2, L.FLIPS, L.NONE_LO + 1, K.RANKS + 1), np.float64)
        fire_max = np.zeros((L.FLIPS, L.NONE_LO + 1, K.RANKS + 1), np.float64)
        (line_ups, line_fd_ups, line_ends, line_range, base, turned, turned_range, turn_sum, line_min, turn_sum_max,
         turned_max, setups, values) = L._scratch()
        status = np.empty(4, np.int64)
        cell_value = np.empty(4, np.float64)
        best = np.empty(K.RANKS + 1, np.float64)
        no_floor = np.zeros(K.RANKS + 1, np.float64)
        near = np.zeros(K.RANKS + 1, np.int64)
        margin = L._margin(params)
        n_roots = 0
        follow_ups = 0
        for i in range(states.shape[0]):
            state = states[i]
            if counting and state[K.STOCK_LEFT] == 0:
                continue
            stock_prefix(state, prefix)
            table[:] = 0.0
            L._line_tables(prefix, params, table)
            fire_max[:] = 0.0
            L._fire_tables(table, fire_max)
            first = n_roots
            top = -np.inf
            wins = False
            m = legals[i] if upto >= 1 else 0
            while m:
                cell = K.trailing_zeros(m)
                m &= m - 1
                if counting:
                    v = evaluate(state, rules, cell, cards[i], params, prefix)
                    wins = wins or v >= WIN
                    if v <= LOSS or v >= WIN:
                        continue
                after[:] = state
                K.place(after, rules, cell, cards[i])
                n_roots += 1
                if counting:
                    lines = 0
                    crossed = np.int64(0)
                    c = (np.int64(1) << cell) | (after[K.FACE_DOWN] ^ state[K.FACE_DOWN])
                    while c:
                        x = K.trailing_zeros(c)
                        c &= c - 1
                        lines |= (1 << K.ROW_OF[x]) | (1 << (K.SIDE + K.COL_OF[x]))
                        crossed |= K.ROW_MASK[K.ROW_OF[x]] | K.COL_MASK[K.COL_OF[x]]
                    gaps[n_roots - 1, 3] = K.popcount(lines)
                    gaps[n_roots - 1, 4] = K.popcount(K.legal_cells(after, rules) & legals[i] & ~crossed)
                if upto >= 2:
                    L._prepare(after, table, line_ups, line_fd_ups, line_ends, line_range, base, turned, turned_range,
                               turn_sum, line_min, turn_sum_max, turned_max)
                if upto >= 3:
                    n = L._cell_bounds(after, rules, params, table, line_ups, line_fd_ups, base, line_min,
                                       turn_sum_max, turned_max, fire_max, status, cell_value, setups, values)
                    follow_ups += n
                if counting:  # cut off as in choose (root cells in cell order)?
                    gaps[n_roots - 1, 6] = not L._rank_loops(after, table, best, line_ends, line_range, base, turned,
                                                             turned_range, turn_sum, setups, values, n, margin,
                                                             no_floor, near, top - 3 * margin)
                if upto >= 4:
                    L._rank_loops(after, table, best, line_ends, line_range, base, turned, turned_range, turn_sum,
                                  setups, values, n, margin, no_floor, near, -np.inf)
                if counting:
                    ev = 0.0
                    for r in range(1, K.RANKS + 1):
                        ev += after[K.STOCK + r] * best[r]
                    ev /= after[K.STOCK_LEFT]
                    gaps[n_roots - 1, 0] = (values[:n, L.BOUND].max() if n else -np.inf) + margin
                    gaps[n_roots - 1, 8] = decoupled(after, table, fire_max, base, line_min, turn_sum_max,
                                                     turned_max, setups, values, n) + margin
                    gaps[n_roots - 1, 1] = ev
                    # The leaves, less the lines' part of the position's value after the placement (base[r]: the
                    # cell features are in both, so they cancel), at their largest over the ranks in the stock.
                    gain = -np.inf
                    static = 0.0
                    for r in range(1, K.RANKS + 1):
                        if after[K.STOCK + r]:
                            gain = max(gain, best[r] - base[r])
                            static += after[K.STOCK + r] * base[r]
                    gaps[n_roots - 1, 7] = static / after[K.STOCK_LEFT] + gain
                    gaps[n_roots - 1, 5] = i
                    gaps[n_roots - 1, 9] = cell
                    bests[n_roots - 1] = best
                    top = max(top, ev)
            if counting:
                for j in range(first, n_roots):
                    gaps[j, 2] = top
                    if wins:  # choose plays the win at once
                        gaps[j, 5] = -1
        return n_roots, follow_ups

    @njit
    def settle(states, cards, rules, params, roots, bests, passes):
        """choose's second pass, on each root cell it settles (roots[j]: its position and cell; bests[j]: its best
        leaves from the first pass): the follow-ups again, recording the cells near each rank's best, then the
        exact expectation over them. Without `passes`, only the turn's line tables (which choose has already made).
        """
        prefix = np.empty(K.RANKS + 1, np.int64)
        after = np.empty(K.STATE_SIZE, np.int64)
        table = np.zeros((2, L.FLIPS, L.NONE_LO + 1, K.RANKS + 1), np.float64)
        fire_max = np.zeros((L.FLIPS, L.NONE_LO + 1, K.RANKS + 1), np.float64)
        scratch = L._scratch()
        status = np.empty(4, np.int64)
        cell_value = np.empty(4, np.float64)
        best = np.empty(K.RANKS + 1, np.float64)
        floor = np.zeros(K.RANKS + 1, np.float64)
        near = np.zeros(K.RANKS + 1, np.int64)
        exact_prefix = np.empty(K.RANKS + 1, np.int64)
        margin = L._margin(params)
        check = 0.0
        last = -1
        for j in range(roots.shape[0]):
            i = roots[j, 0]
            state = states[i]
            if i != last:  # the turn's line tables, as choose makes them once per position
                stock_prefix(state, prefix)
                L._line_tables(prefix, params, table)
                L._fire_tables(table, fire_max)
                last = i
            if not passes:
                continue
            after[:] = state
            K.place(after, rules, roots[j, 1], cards[i])
            floor[0] = 1.0
            for r in range(1, K.RANKS + 1):
                floor[r] = bests[j, r] - 2 * margin
            L._follow_ups(after, rules, params, table, fire_max, margin, best, scratch, status, cell_value, floor,
                          near, -np.inf)
            check += L._exact_expectation(after, rules, params, exact_prefix, near)
        return check

    @njit
    def choose_all(states, cards, legals, rules, params):
        rng = np.zeros(1, np.uint64)
        check = 0
        for i in range(states.shape[0]):
            check += L.choose(states[i].copy(), rules, cards[i], legals[i], rng, params)
        return check

    rules_obj = sim.Rules()
    rules = rules_obj.as_array()
    params = policies.build_params("lookahead", {})
    states, cards, legals, turns, drawn = policy_positions("lookahead", args.n, rules_obj)
    n_root_cells = sum(bin(int(g)).count("1") for g in legals)
    print(f"{len(states):,} positions of lookahead's games on deals 0..{args.n - 1} of seed 1, "
          f"{n_root_cells:,} legal root cells")

    choose_all(states[:3], cards[:3], legals[:3], rules, params)  # compile
    no_gaps = np.empty((0, 10))
    no_bests = np.empty((0, K.RANKS + 1))
    walk(states[:3], cards[:3], legals[:3], rules, params, 4, no_gaps, no_bests)
    best = [np.inf] * 6
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        choose_all(states, cards, legals, rules, params)
        best[5] = min(best[5], time.perf_counter() - t0)
        for upto in range(5):
            t0 = time.perf_counter()
            walk(states, cards, legals, rules, params, upto, no_gaps, no_bests)
            best[upto] = min(best[upto], time.perf_counter() - t0)
    by_turn = np.full(5, np.inf)
    for _ in range(args.rounds):
        for turn in range(1, 5):
            at = turns == turn
            t0 = time.perf_counter()
            choose_all(states[at], cards[at], legals[at], rules, params)
            by_turn[turn] = min(by_turn[turn], time.perf_counter() - t0)
    print("by turn (the second card is turn 1): " + "; ".join(
        f"turn {turn} {by_turn[turn] / best[5]:.1%} of choose's time, "
        f"{len({d for d, t in zip(drawn, turns) if t == turn}):,} distinct sequences of ranks drawn "
        f"in {np.sum(turns == turn):,} positions" for turn in range(1, 5)))
    names = ["line tables (per position)", "placing the card", "_prepare", "_cell_bounds", "_rank_loops, no cut-offs"]
    print(f"choose on every position: {best[5] * 1e3:.1f} ms ({best[5] / len(states) * 1e6:.1f} us per position); "
          f"stages on every legal root cell (least of {args.rounds} rounds):")
    for upto, name in enumerate(names):
        ms = (best[upto] - (best[upto - 1] if upto else 0.0)) * 1e3
        print(f"  {name:>28}: {ms:6.1f} ms")

    gaps = np.empty((n_root_cells, 10))
    bests = np.empty((n_root_cells, K.RANKS + 1))
    n_roots, follow_ups = walk(states, cards, legals, rules, params, 4, gaps, bests)
    gaps, bests = gaps[:n_roots], bests[:n_roots]
    below = gaps[:, 2] - gaps[:, 1]
    print(f"{n_roots:,} root cells that do not lose at once, {follow_ups / n_roots:.1f} follow-up cells each")
    print(f"  lines a root placement changes: {gaps[:, 3].mean():.2f} on average; follow-up cells outside them, "
          f"legal before it: {gaps[:, 4].sum() / follow_ups:.1%}")
    print(f"  cut off by choose (after their tables and bounds): {np.mean(gaps[:, 6]):.1%}")
    print(f"  largest bound below the best expectation: {np.mean(gaps[:, 0] < gaps[:, 2]):.1%}")
    for gap in (0.001, 1, 5, 10, 20):
        print(f"  expectation more than {gap:g} below the best: {np.mean(below > gap):.1%}")
    near_best = (below <= 2 * L.margin(params)) & (gaps[:, 5] >= 0)
    close = np.bincount(gaps[near_best, 5].astype(np.int64), minlength=len(states))
    settled = near_best & (close[np.maximum(gaps[:, 5], 0).astype(np.int64)] >= 2)
    roots = np.ascontiguousarray(gaps[settled][:, [5, 9]], np.int64)  # the layout the warm-up compiles for
    settle(states, cards, rules, params, roots[:3], bests[settled][:3], True)  # compile
    settle(states, cards, rules, params, roots[:3], bests[settled][:3], False)
    took = [np.inf, np.inf]
    for _ in range(args.rounds):
        for passes in (False, True):
            t0 = time.perf_counter()
            settle(states, cards, rules, params, roots, bests[settled], passes)
            took[passes] = min(took[passes], time.perf_counter() - t0)
    took = took[1] - took[0]
    print(f"  positions settled by exact expectations (2 or more root cells within 2 margins of the best): "
          f"{np.sum(close >= 2):,} ({np.sum(close >= 2) / len(states):.1%}), {close[close >= 2].mean():.2f} root "
          f"cells each; choose's second pass on those {len(roots):,} root cells (their follow-ups again, then the "
          f"exact expectation): {took * 1e3:.1f} ms, {took / best[5]:.1%} of choose's time")
    # A root cell whose position after the placement is another close one's, moved whole, expects bitwise the same:
    # evaluate sums the lines of the box in order, rows then columns, and a move keeps that order (and the legal
    # cells: every box holds the centre). So the settling could skip such a cell when it is the higher of the two.
    shapes = set()  # (position, shape) of the settled root cells so far
    moved = 0
    exact = {}  # position: the exact expectations of its settled root cells
    for i, cell in roots:
        after = states[i].copy()
        K.place(after, rules, cell, cards[i])
        prefix = np.empty(K.RANKS + 1, np.int64)
        stock_prefix(states[i], prefix)
        exact.setdefault(i, set()).add(L.expected_value(after.copy(), rules, params, prefix))
        corner = K.SIDE * after[K.MIN_ROW] + after[K.MIN_COL]
        shape = tuple((int(c - corner), int(after[K.TOP + c]), int(after[K.HEIGHT + c]),
                       int((after[K.FACE_DOWN] >> c) & 1)) for c in range(K.CELLS) if (after[K.OCCUPIED] >> c) & 1)
        moved += (i, shape) in shapes
        shapes.add((i, shape))
    print(f"    of which {moved:,} are another's position moved whole (bitwise the same expectation, so that "
          "only the lower cell needs settling)")
    tied = sum(len(v) == 1 for v in exact.values())
    print(f"    positions whose settled root cells all expect bitwise the same: {tied:,} of {len(exact):,}")
    no_win = gaps[gaps[:, 5] >= 0]  # root cells of positions without a winning cell
    ceiling = np.mean(no_win[:, 7] < no_win[:, 2])
    print(f"  the decoupled bound (the largest cell value, row term and column term over the follow-up cells, each "
          f"on its own) below the best expectation (positions without a winning cell): "
          f"{np.mean(no_win[:, 8] < no_win[:, 2]):.1%}, against {np.mean(no_win[:, 0] < no_win[:, 2]):.1%} for the "
          "largest follow-up bound")
    print(f"  the position's value after the root placement (over the next card) plus its largest gain (the best "
          f"follow-up's leaf less that value, over every rank), below the best expectation (positions without a "
          f"winning cell): {ceiling:.1%}")
    spread = gaps[:, 0] - gaps[:, 1]
    q = np.percentile(spread[np.isfinite(spread)], [5, 25, 50, 75, 95])
    print(f"  largest bound minus expectation ({np.mean(~np.isfinite(spread)):.1%} infinite: a follow-up may win), "
          "5/25/50/75/95th percentiles: " + ", ".join(f"{x:.2f}" for x in q))


if __name__ == "__main__":
    main()
