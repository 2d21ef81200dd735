"""How fast `sim.solver.sat` settles "a win with exactly N cards?" on given deals, beside the depth-first search.

    python benchmarks/solve_sat.py --deals 134,380,510 --cards 18 --conflicts 2000000
    python benchmarks/solve_sat.py --deals 83 --cards 17 --dfs
    python benchmarks/solve_sat.py --deals 83,49 --cards 17 --conflicts 1e6 --without-count

For each deal of the seed (default 0): the SAT answer ("win", "none", or
"unknown" when the conflict budget ran out), its seconds, with
--without-count the same question without the formula's implied count of
cards placed on piles, and with --dfs
the depth-first search of the same question's level ("a win before turn
N+1", `level_profile`: its nodes and seconds; it also rules out fewer
cards, which the levels before it have done in a solve).
"""

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", required=True, help="comma-separated deal numbers")
    parser.add_argument("--cards", type=int, required=True, help="the number of cards of the win asked about")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conflicts", type=float, default=None, help="the SAT solver's budget (default: none)")
    parser.add_argument("--dfs", action="store_true", help="also run the depth-first search's level")
    parser.add_argument("--without-count", action="store_true",
                        help="also ask without the implied count of cards on piles (the formula before it)")
    args = parser.parse_args()

    import sim
    from sim.solver.sat import win_with
    from sim.solver.solver import Solver, level_profile

    rules = sim.Rules()
    solver = Solver() if args.dfs else None
    if solver is not None:
        level_profile(solver, sim.deal(0, 1), rules, 17, 1000)  # compile
    for g in (int(d) for d in args.deals.split(",")):
        deck = sim.deal(args.seed, g)
        t0 = time.perf_counter()
        budget = None if args.conflicts is None else int(args.conflicts)
        out, _ = win_with(deck, rules, args.cards, budget)
        line = f"deal {g}: {args.cards} cards: SAT {out} in {time.perf_counter() - t0:.1f} s"
        if args.without_count:
            t0 = time.perf_counter()
            out, _ = win_with(deck, rules, args.cards, budget, count_piles_on=False)
            line += f"; without the count {out} in {time.perf_counter() - t0:.1f} s"
        if solver is not None:
            t0 = time.perf_counter()
            p = level_profile(solver, deck, rules, args.cards + 1, 10**12)
            said = {"won": "win", "done": "none", "open": "unknown"}[p.status]
            line += f"; depth-first {said} (before turn {args.cards + 1}) in {time.perf_counter() - t0:.1f} s, " \
                    f"{p.nodes:,} nodes"
        print(line, flush=True)


if __name__ == "__main__":
    main()
