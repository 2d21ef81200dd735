"""Where the nodes of one level search go: counts by turn and slack, and the table's use.

    python benchmarks/solve_profile.py [--seed 0] --deals 7,18 --level 18 [--node-limit 20000000]
                                       [--off rank_parity,endgame,slack_parity]

For each deal, searches for a win before turn `--level` (one level of the
least-cards search, stopping at the first win) with `--node-limit`, and
prints the positions reached, cut by rule 2 and cut or stored by the
table, per turn and slack (cards beyond one per missing pile), then the
table's stores and overwrites: a pure function of the deal and the
options. The seconds it took are printed too (after a warm-up level, so
that loading the compiled search is not counted); they depend on the
machine and its load.
"""

import argparse
import time

import sim
from sim.solver.solver import Solver, level_profile

SWITCHES = {"rank_parity": "use_ranks", "endgame": "use_endgame", "slack_parity": "use_slack_parity"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deals", required=True, help="game numbers, comma-separated")
    parser.add_argument("--level", type=int, default=18, help="look for a win before this turn")
    parser.add_argument("--node-limit", type=int, default=20_000_000)
    parser.add_argument("--off", default="", help="switches off, comma-separated: " + ",".join(SWITCHES))
    args = parser.parse_args()
    opts = {SWITCHES[k]: False for k in args.off.split(",") if k}
    solver = Solver()
    level_profile(solver, sim.deal(args.seed, 0), sim.Rules(), 17, 1000)  # load the compiled search
    for g in (int(x) for x in args.deals.split(",") if x):
        start = time.perf_counter()
        p = level_profile(solver, sim.deal(args.seed, g), sim.Rules(), args.level, args.node_limit, **opts)
        seconds = time.perf_counter() - start
        c = p.counts
        print(f"deal {g}, win before turn {p.level}: {p.status}, {p.nodes:,} nodes, {seconds:.1f} s; "
              f"table: {p.tt_hits:,} hits, "
              f"{p.tt_stores:,} stores, {p.tt_overwrites:,} overwrites")
        print("turn | reached s0 s1 s2 s3+ | cut by rule 2 s0 s1 s2 s3+ | table hits s1 | stores s1")
        for t in range(c.shape[0]):
            if c[t, :, 0].sum() == 0:
                continue
            row = " ".join(f"{v:>9,}" for v in c[t, :, 0])
            cut = " ".join(f"{v:>9,}" for v in c[t, :, 1])
            print(f"{t:>4} | {row} | {cut} | {c[t, 1, 2]:>9,} | {c[t, 1, 3]:>9,}")
        tot = c.sum(axis=0)
        print("all  | " + " ".join(f"{v:>9,}" for v in tot[:, 0]) + " | " + " ".join(f"{v:>9,}" for v in tot[:, 1])
              + f" | {tot[1, 2]:>9,} | {tot[1, 3]:>9,}", flush=True)


if __name__ == "__main__":
    main()
