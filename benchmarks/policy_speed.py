"""Games per second of each built-in policy, in one process on one core (deals included).

    python benchmarks/policy_speed.py [--policy NAME ...] [-n GAMES]

Strong policies cost far more per game; each gets a game count that keeps
its measurement to a few seconds unless -n says otherwise. --policy also
takes a plugin (path/to/file.py:attr; 1,000 games unless -n says).
"""

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)

GAMES = {"greedy": 300_000, "random": 300_000, "heuristic": 40_000, "lookahead": 1_000, "rollout": 20, "planner": 1_000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", help="policy to measure (repeatable; default all)")
    parser.add_argument("-n", type=parse_count, help="games per policy")
    args = parser.parse_args()

    import sim

    sim.play_range(0, 0, 1)  # compile or load from cache
    for policy in args.policy or list(GAMES):
        n = args.n or GAMES.get(policy, 1000)
        sim.play_range(0, 0, 1, policy)
        t0 = time.perf_counter()
        cols = sim.play_range(1, 0, n, policy)
        seconds = time.perf_counter() - t0
        print(f"{policy:>10}: {n / seconds:12,.1f} games/s ({n:,} games of seed 1, win rate {cols.won.mean():.4f})",
              flush=True)


if __name__ == "__main__":
    main()
