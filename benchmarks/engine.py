"""Engine speed in one process on one core: compile time, then games per second.

    python benchmarks/engine.py [-n GAMES]

Deal generation is included: this is what `sim.play_range` costs a runner.
The first figure is the first call's time: a compile when numba's cache is
cold (run with NUMBA_CACHE_DIR set to an empty folder to see it), a cache load otherwise.
"""

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6", help="games per policy (default 1e6)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    import sim
    import_s = time.perf_counter() - t0
    from sim.errors import parse_count

    try:
        args.n = parse_count(args.n, "-n")  # after the import, which is timed
    except ValueError as e:
        parser.error(str(e))

    t0 = time.perf_counter()
    sim.play_range(0, 0, 1, "greedy")
    first_s = time.perf_counter() - t0
    print(f"import sim: {import_s:.2f} s; first call (compile or cache load): {first_s:.2f} s")

    for policy in ("greedy", "random"):
        sim.play_range(0, 0, 10, policy)  # compiled already; touch the policy's path
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            cols = sim.play_range(1, 0, args.n, policy)
            best = min(best, time.perf_counter() - t0)
        print(f"{policy:>7}: {args.n / best:12,.0f} games/s (best of 3, {args.n:,} games, "
              f"win rate {cols.won.mean():.4f})")


if __name__ == "__main__":
    main()
