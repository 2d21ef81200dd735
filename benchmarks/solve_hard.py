"""The solver on a fixed set of hard deals: nodes and seconds per deal, with a node limit.

    python benchmarks/solve_hard.py [--seed 0] [--deals 7,18,...] [--node-limit 10000000] [--time-limit S]
                                    [--ab SWITCH[,SWITCH...]]

Solves each deal of `--deals` (game numbers of `--seed`; default: the 36
deals among the first 300 of seed 0 whose best score `sim.solve` does not
prove within 2,000,000 nodes) for the best score with `--node-limit` (or
`--time-limit` seconds), in this process on one core, and prints per deal
the outcome, score, whether it is proven best, nodes and seconds, then the
totals. Node counts are a pure function of the deal and the options;
seconds depend on the machine's load, so with `--ab SWITCHES` (keywords of
`sim.solve`, e.g. rank_parity,endgame) each deal is solved with those
switches off and on, alternately, and both are printed side by side: the
ratio of seconds is then measured under the same load.
"""

import argparse
import time

import sim
from sim.solver.solver import solve
from sim.errors import parse_count  # 1e5 as sim takes it

HARD_300 = (7, 18, 28, 31, 45, 49, 63, 65, 66, 83, 108, 120, 126, 127, 133, 134, 162, 164, 174, 175, 183, 200,
            206, 208, 228, 232, 238, 254, 255, 258, 265, 271, 278, 290, 292, 296)
"""Deals of seed 0 among the first 300 whose best score is not proven within 2,000,000 nodes (before rule 2c)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deals", default=",".join(map(str, HARD_300)), help="game numbers, comma-separated")
    parser.add_argument("--node-limit", type=parse_count, default=10_000_000)
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per deal instead of a node limit")
    parser.add_argument("--ab", default=None, help="switches of sim.solve, comma-separated: each deal with them "
                        "off, then on")
    args = parser.parse_args()
    games = [int(g) for g in args.deals.split(",") if g]
    switches = [] if args.ab is None else args.ab.split(",")
    variants = [{}] if not switches else [dict.fromkeys(switches, False), dict.fromkeys(switches, True)]
    names = ["run"] if not switches else [f"{args.ab} off", f"{args.ab} on"]
    limit = dict(time_limit=args.time_limit) if args.time_limit else dict(node_limit=args.node_limit)
    solve(sim.deal(args.seed, 0), node_limit=1_000)  # compile / load the kernels first
    totals = [[0, 0, 0.0] for _ in variants]  # proven, nodes, seconds
    for g in games:
        deck = sim.deal(args.seed, g)
        cells = [""] * len(variants)
        order = list(enumerate(variants))
        if g % 2:
            order.reverse()  # alternate which variant goes first
        for i, opts in order:
            t0 = time.perf_counter()
            r = solve(deck, **limit, **opts)
            dt = time.perf_counter() - t0
            totals[i][0] += r.proven_best
            totals[i][1] += r.nodes
            totals[i][2] += dt
            cells[i] = (f"{r.outcome} {r.score} ({'proven' if r.proven_best else f'bound {r.score_bound}'}) "
                        f"{r.nodes:,} nodes {dt:.2f} s")
        print(f"deal {g}: " + " | ".join(cells), flush=True)
    for name, (proven, nodes, secs) in zip(names, totals):
        print(f"{name}: {proven} of {len(games)} proven best, {nodes:,} nodes, {secs:.1f} s "
              f"({nodes / secs / 1e6:.2f} M nodes/s)")


if __name__ == "__main__":
    main()
