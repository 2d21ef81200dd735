"""lookahead against its leaf-by-leaf definition: the same moves on every deal, and the speed of each.

    python benchmarks/lookahead_exact.py [-n DEALS] [--speed GAMES] [--rounds R] [--seed SEED] [--old FILE.py]

For each rule setting (the defaults, adjacency=king, max_face_down=3,
grid=3) it plays the first DEALS deals of SEED with `lookahead` and with
`policies.lookahead:choose_exhaustive` (run as a compiled plugin with the
same weights) and counts the deals whose moves differ (expected: 0). Then
it times both on the same GAMES deals of seed 1 under the default rules,
alternating R rounds, in one process on one core, and prints games/s and
the ratio of their CPU times (the process's own, so that other processes
on a shared machine disturb it less; games/s from the median round, the
ratio as the median of the rounds' ratios).
With --old, an earlier lookahead, run as the plugin FILE.py:choose with the
same weights, joins the alternation, and its ratio to lookahead is printed
too. Take it without numba's disk cache (a file plugin's cached code does
not load in a later process):

    git show REV:policies/lookahead.py | sed 's/cache=True/cache=False/' > /tmp/lookahead_old.py
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)

SETTINGS = ({}, {"adjacency": "king"}, {"max_face_down": "3"}, {"grid": "3"})
REFERENCE = "policies.lookahead:choose_exhaustive"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=parse_count, default=2000, help="deals per rule setting (default 2000)")
    parser.add_argument("--speed", type=parse_count, default=200, help="games per speed measurement (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the speed measurement (default 3)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the compared deals (default 2026)")
    parser.add_argument("--old", help="an earlier policies/lookahead.py to time against (its choose)")
    args = parser.parse_args()

    import sim
    from policies.heuristic import FEATURES, DEFAULT_WEIGHTS

    weights = {f: str(w) for f, w in zip(FEATURES, DEFAULT_WEIGHTS)}
    for setting in SETTINGS:
        rules = sim.Rules.from_strings(setting)
        differ = 0
        t0 = time.perf_counter()
        for game in range(args.n):
            deck = sim.deal(args.seed, game)
            fast = sim.play(deck, "lookahead", rules, args.seed, game)
            slow = sim.play(deck, REFERENCE, rules, args.seed, game, policy_args=weights)
            differ += fast.moves != slow.moves
        label = ",".join(f"{k}={v}" for k, v in setting.items()) or "default rules"
        print(f"{label:>16}: {differ} of {args.n:,} deals of seed {args.seed} differ "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)

    runs = [("choose_exhaustive", REFERENCE, weights)]
    if args.old:
        runs.append(("old lookahead", f"{args.old}:choose", weights))
    runs.append(("lookahead", "lookahead", None))
    for _, policy, policy_args in runs:
        sim.play_range(1, 0, 1, policy, policy_args=policy_args)
    seconds = {name: [] for name, _, _ in runs}
    for _ in range(args.rounds):
        for name, policy, policy_args in runs:
            t0 = time.process_time()
            sim.play_range(1, 0, args.speed, policy, policy_args=policy_args)
            seconds[name].append(time.process_time() - t0)
    for name, s in seconds.items():
        print(f"{name:>17}: {args.speed / statistics.median(s):10,.1f} games/s "
              f"(median of {args.rounds} x {args.speed} games of seed 1, alternating, CPU time)")
    for name in seconds:
        if name != "lookahead":
            ratio = statistics.median(a / b for a, b in zip(seconds[name], seconds["lookahead"]))
            print(f"{name:>17}: {ratio:.2f} x lookahead's time (median of the rounds)")


if __name__ == "__main__":
    main()
