"""Two versions of a policy file, timed on the same positions in one process: do they choose alike, which is faster?

    python benchmarks/choose_ab.py OLD.py NEW.py [--policy lookahead] [-n 300] [--rounds 9]

Collects the positions of the built-in policy's own games on the first N
deals of seed 1 (the next card drawn), then times each file's `choose` on
all of them, alternating R rounds, in CPU time of this process (other
processes on a shared machine disturb it less). Both files are loaded as
modules of their own, compiled without numba's disk cache, so neither is
favoured by a run's game loop (unlike `lookahead_exact.py --old`, which
plays the old one as a plugin). Prints whether every choice agrees, the
least time of each and their ratio. Take OLD.py from git:

    git show REV:policies/lookahead.py > /tmp/old.py
"""

import argparse
import importlib.util
import os
import sys
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)


def load(path: str, name: str, tmp: str):
    """The policy file as module `name`, its compiled functions uncached."""
    copy = os.path.join(tmp, f"{name}.py")
    with open(path) as f, open(copy, "w") as out:
        out.write(f.read().replace("cache=True", "cache=False"))
    spec = importlib.util.spec_from_file_location(name, copy)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def choose_inputs(policy: str, n: int):
    """(states, cards, legals, rules, params): the positions of the built-in's games on deals 0..n-1 of seed 1, the
    cards drawn as a run deals them (uint8), the default rules as an array and the policy's default parameters."""
    import numpy as np

    import policies
    import sim
    from positions import policy_positions  # benchmarks/positions.py

    rules = sim.Rules()
    states, cards, legals, _, _ = policy_positions(policy, n, rules)
    return states, cards.astype(np.uint8), legals, rules.as_array(), policies.build_params(policy, {})


def looped(choose):
    """A compiled loop calling `choose` on every position: choose_all(states, cards, legals, rules, params, out)."""
    import numpy as np
    from numba import njit

    @njit
    def choose_all(states, cards, legals, rules, params, out):
        rng = np.zeros(1, np.uint64)
        for i in range(states.shape[0]):
            out[i] = choose(states[i].copy(), rules, cards[i], legals[i], rng, params)
    return choose_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--policy", default="lookahead", help="the built-in whose games give the positions")
    parser.add_argument("-n", type=parse_count, default=300, help="deals of seed 1 (default 300)")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds; the least time counts (default 9)")
    args = parser.parse_args()

    import numpy as np

    states, cards, legals, rules, params = choose_inputs(args.policy, args.n)

    with tempfile.TemporaryDirectory() as tmp:
        runs = [looped(load(path, f"choose_ab_{i}", tmp).choose) for i, path in enumerate((args.old, args.new))]
        outs = [np.empty(len(states), np.int64) for _ in runs]
        for run, out in zip(runs, outs):
            run(states[:3], cards[:3], legals[:3], rules, params, out)  # compile
        times = [[], []]
        for _ in range(args.rounds):
            for run, out, spent in zip(runs, outs, times):
                t0 = time.process_time()
                run(states, cards, legals, rules, params, out)
                spent.append(time.process_time() - t0)
    old, new = min(times[0]), min(times[1])
    print(f"{len(states):,} positions of {args.policy}'s games on deals 0..{args.n - 1} of seed 1; "
          f"the same choice on every one: {bool(np.array_equal(outs[0], outs[1]))}")
    print(f"old {old * 1e3:.1f} ms, new {new * 1e3:.1f} ms (least of {args.rounds} rounds): "
          f"old/new {old / new:.3f}")


if __name__ == "__main__":
    main()
