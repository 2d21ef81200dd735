"""A solve job that ends with hard deals: wall time with idle workers helping (split solves) and without.

    python benchmarks/solve_split.py [--hard 7] [--easy 16] [--split-after 1e6] [--workers 2] [--repeat 2]
                                     [--sat-conflicts 0]

The job solves a deal file: `--easy` deals of seed 0 that settle quickly,
then the `--hard` deals of seed 0 (their best score takes millions of nodes
to prove), one deal per chunk, no node or time limit: every best score is
proven. Three ways to run it, interleaved `--repeat` times, each a fresh
worker pool:

- help: `sim solve --split-after N` as it runs: a hard deal's subtrees go to
  every idle worker;
- alone: the same schedule with each deal's subtrees searched by its own
  worker only (the rows are checked to be identical to help's);
- serial: `--split-after 0`, the serial solve (other nodes, same scores).

All three measure the search alone (`--sat-conflicts 0`, the default here):
with the SAT questions, the serial solve would settle the hard deals
without the search the other two split.

It prints each run's wall time and nodes, and the median ratios. Wall
times on a machine shared with other work say little about helping (the
other workers' cores may be taken), so it also prints, for each hard deal,
the schedule's critical path in nodes: the serial part, then each round's
subtree nodes list-scheduled over `--workers` workers in the schedule's
order; against the deal's total nodes (one worker) that is the speed-up an
unloaded machine gives, a figure that does not depend on the machine.
"""

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

import polars as pl

import sim
from sim.errors import parse_count
from sim.jobs import runner
from sim.jobs.solve import SOLVE, SolveConfig


def critical_path(deck, split_after: int, workers: int) -> tuple[int, int]:
    """(total nodes, nodes on the critical path with `workers` workers) of a deal's split schedule."""
    import heapq

    import numpy as np

    from sim.solver.solver import SplitSolve, search_subtree, shared_solver

    solver, rules = shared_solver(), sim.Rules()
    cards = np.array(deck, np.uint8)
    first = solver.solve(cards, rules, node_limit=split_after)
    if not SplitSolve.needed(first, False, None, split_after):
        return first.nodes, first.nodes
    plan = SplitSolve(cards, rules, first, first_win=False, node_limit=None, horizon=40, use_tt=True, use_sym=True,
                      started=time.time(), deadline=None)
    path = first.nodes
    while True:
        before = plan.nodes
        tasks = plan.tasks()
        path += plan.nodes - before
        if not tasks:
            break
        results = []
        for t in tasks:
            results.append(search_subtree(solver, t))
            if results[-1].status == "won":
                break
        free = [0] * workers  # list scheduling in the schedule's order
        for x in results:
            heapq.heappush(free, heapq.heappop(free) + x.nodes)
        path += max(free)
        plan.record(results)
    return plan.nodes, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hard", default="7", help="comma-separated hard deals of seed 0 (default 7)")
    parser.add_argument("--easy", type=int, default=16, help="quick deals first (default 16)")
    parser.add_argument("--split-after", default="1e6")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sat-conflicts", default="0",
                        help="conflicts per SAT question, as sim solve takes it (default 0: the search alone)")
    args = parser.parse_args()
    hard = [int(g) for g in args.hard.split(",")]
    split = parse_count(args.split_after)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        easy = [g for g in range(200) if g not in hard][:args.easy]
        path = tmp / "deals.jsonl"
        path.write_text("".join(json.dumps({"deck": list(sim.deal(0, g))}) + "\n" for g in easy + hard))
        alone = dataclasses.replace(SOLVE, drive=None)  # each deal's schedule in its own worker
        ways = {"help": (SOLVE, split), "alone": (alone, split), "serial": (SOLVE, 0)}
        walls = {w: [] for w in ways}
        print(f"deal file: seed 0 deals {easy[0]}..{easy[-1]} (easy, {len(easy)}) then {hard}; "
              f"{args.workers} workers, one deal per chunk, no limit, split after {split:,}", flush=True)
        for rep in range(args.repeat):
            rows = {}
            for name, (job, k) in ways.items():
                config = SolveConfig(deals=str(path), split_after=k, sat_conflicts=parse_count(args.sat_conflicts, zero=True))
                t0 = time.perf_counter()
                s = runner.start(job, config, out=tmp / f"{name}{rep}", workers=args.workers, chunk_size=1)
                wall = time.perf_counter() - t0
                walls[name].append(wall)
                df = pl.read_parquet(s.path / "games" / "*.parquet").sort("game")
                rows[name] = df.drop("seconds")
                tail = df.tail(len(hard))
                print(f"  {name:6s} wall {wall:6.1f} s   proven {s.proven}/{s.deals}   hard deals: "
                      + ", ".join(f"score {r['score']} ({'proven' if r['proven_best'] else 'not proven'}) "
                                  f"{r['nodes'] / 1e6:.1f} M nodes {r['seconds']:.1f} s"
                                  for r in tail.iter_rows(named=True)), flush=True)
            assert rows["help"].equals(rows["alone"]), "helping changed a row"
        for g in hard:
            total, path = critical_path(sim.deal(0, g), split, args.workers)
            print(f"deal {g}: {total:,} nodes in all; critical path with {args.workers} workers {path:,} nodes "
                  f"(speed-up {total / path:.2f})", flush=True)
        med = {w: statistics.median(v) for w, v in walls.items()}
        print(f"median wall: help {med['help']:.1f} s, alone {med['alone']:.1f} s, serial {med['serial']:.1f} s; "
              f"help/alone {med['help'] / med['alone']:.2f}, help/serial {med['help'] / med['serial']:.2f}")


if __name__ == "__main__":
    main()
