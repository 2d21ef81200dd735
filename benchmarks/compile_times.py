"""Seconds to compile each built-in policy, and `sim train`'s self-play, into an empty numba cache.

    python benchmarks/compile_times.py [--what greedy,heuristic,lookahead,planner,train]

One fresh process after another share one fresh NUMBA_CACHE_DIR, in the
order given (the test suite's warm-up order by default), so each pays only
what the ones before it left uncompiled: `train` after lookahead and planner
compiles self-play alone. Every fresh clone's test run and every user's
first run of a policy pay these once.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM = "from sim.players.api import warm_up; warm_up('greedy'); warm_up({name!r})"
TRAIN = "from sim.analysis.train import train; train(n=2, rounds=2, validation_n=2)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", default="greedy,heuristic,lookahead,planner,train",
                        help="comma-separated policies, or train (default: %(default)s)")
    names = parser.parse_args().what.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba-cache"), NUMBA_NUM_THREADS="1")
        total = 0.0
        for name in names:
            code = TRAIN if name == "train" else WARM.format(name=name)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            seconds = time.perf_counter() - t0
            total += seconds
            print(f"{name:>10}: {seconds:6.1f} s", flush=True)
        print(f"{'in all':>10}: {total:6.1f} s")


if __name__ == "__main__":
    main()
