"""planner's deeper search, setting by setting: won, mean score per deal, and games/s on one core.

    python benchmarks/planner_search.py [-n DEALS] [--seed S ...] [--speed GAMES] [--rounds R] [--workers W]
                                        [--only NAME ...]

Each setting of the search (`--policy-arg` values) plays the first DEALS
deals of each seed (default 2,000 of seeds 22 and 23: planner's validation
seed and the one after it, neither trained on nor the held-out 2026) in
`sim.run`'s worker processes, into a temporary directory; the gain is each
setting's mean score per deal less one card's expectation everywhere (the
first setting, played with any --only), over the same deals. Then each plays GAMES deals
of seed 1 in this process on one core, the settings taking turns for R
rounds; the games/s are from the median round's CPU time.
"""

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)

SETTINGS = {
    "one card": {"endgame": "-1"},
    "grid full, 3 cells, 2 follow-ups": {"endgame": "0", "roots": "3", "follow": "2"},
    "4 to open, 4 cells, 1 follow-up": {"endgame": "4", "roots": "4"},
    "6 to open, 4 cells, 1 follow-up": {"endgame": "6", "roots": "4"},
    "8 to open, 3 cells, 1 follow-up": {"endgame": "8", "roots": "3"},
    "8 to open, 4 cells, 1 follow-up": {"endgame": "8", "roots": "4"},
    "8 to open, 4 cells, 1 follow-up, margin 1.5": {"endgame": "8", "roots": "4", "margin": "1.5"},
    "8 to open, 5 cells, 1 follow-up": {"endgame": "8", "roots": "5"},
    "10 to open, 3 cells, 1 follow-up (default)": {},
    "10 to open, 4 cells, 1 follow-up": {"endgame": "10", "roots": "4"},
    "12 to open, 4 cells, 1 follow-up": {"endgame": "12", "roots": "4"},
    "every turn, 2 cells, 1 follow-up": {"endgame": "16", "roots": "2"},
    "every turn, 3 cells, 1 follow-up": {"endgame": "16", "roots": "3"},
    "every turn, 4 cells, 1 follow-up": {"endgame": "16", "roots": "4"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=parse_count, default=2000, help="deals per seed (default 2000)")
    parser.add_argument("--seed", type=int, action="append", help="seeds of the deals (default 22 and 23)")
    parser.add_argument("--speed", type=parse_count, default=200, help="games of seed 1 timed on one core (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the timing (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for the deals (default 2)")
    parser.add_argument("--only", action="append", help="settings to run (by name; default all)")
    args = parser.parse_args()
    seeds = args.seed or [22, 23]

    import numpy as np
    import sim

    unknown = [name for name in args.only or [] if name not in SETTINGS]
    if unknown:
        parser.error(f"--only {unknown[0]!r}: not a setting; the settings are: " + "; ".join(SETTINGS))
    first = next(iter(SETTINGS))  # one card's expectation: every gain is against it, so it always plays first
    names = [first] + [name for name in args.only or SETTINGS if name != first]
    baseline = None
    rows = {}
    for name in names:
        won, score = [], []
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                config = sim.RunConfig(policy="planner", n=args.n, seed=seed,
                                       policy_args=tuple(SETTINGS[name].items()))
                summary = sim.run(config, workers=args.workers, out=f"{tmp}/run")
                games = sim.load(summary.path).collect()
            won.append(games["won"].to_numpy())
            score.append(games["score"].fill_null(0).to_numpy())
        won, score = np.concatenate(won), np.concatenate(score).astype(float)
        baseline = score if baseline is None else baseline
        rows[name] = (won.mean(), score.mean(), score.mean() - baseline.mean())
    seconds = {name: [] for name in names}
    for name in names:
        sim.play_range(1, 0, 2, "planner", policy_args=SETTINGS[name])
    for _ in range(args.rounds):
        for name in names:
            t0 = time.process_time()
            sim.play_range(1, 0, args.speed, "planner", policy_args=SETTINGS[name])
            seconds[name].append(time.process_time() - t0)
    print(f"{'setting':<48} {'won':>8} {'per deal':>9} {'gain':>7} {'games/s':>8}  ({args.n:,} deals of seeds "
          f"{', '.join(map(str, seeds))}; games/s: median of {args.rounds} x {args.speed} games of seed 1, one core)")
    for name, (won, per_deal, gain) in rows.items():
        speed = args.speed / statistics.median(seconds[name])
        print(f"{name:<48} {won:8.2%} {per_deal:9.3f} {gain:+7.3f} {speed:8.1f}")


if __name__ == "__main__":
    main()
