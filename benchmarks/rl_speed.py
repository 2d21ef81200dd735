"""Environment steps per second on one core: the single environment and the vector environment.

    pip install -e '.[rl]'
    python benchmarks/rl_speed.py [--steps N] [--envs 4096]

Random legal actions throughout, resets included (a random game lasts about
17 steps): the single environment's with `FoursquareEnv.random_action`,
the vector environment's with `FoursquareVectorEnv.random_actions` (the
`random` policy, one compiled call per batch). For comparison, the single
environment is also timed through `gymnasium.make` (its wrappers) and with
Gymnasium's own masked sampling, ``action_space.sample(mask=...)``.
Targets (issue 16): single >= 50,000 steps/s; vector with 4,096 games
>= 1,000,000 steps/s. Each figure is the best of 3 timings after a warm-up.
"""

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one core: numba threads and processes never multiply


def best_of(runs: int, fn) -> float:
    """The highest of `runs` rates fn() returns."""
    return max(fn() for _ in range(runs))


def single(env, steps: int, masked_sampling: bool = False) -> float:
    """Steps/s of one environment with random legal actions."""
    obs, info = env.reset(seed=1)
    env.action_space.seed(1)  # its own stream, which reset(seed=...) does not seed: the same actions every run
    t0 = time.perf_counter()
    for _ in range(steps):
        if masked_sampling:
            action = env.action_space.sample(mask=info["action_mask"])
        else:
            action = env.unwrapped.random_action()
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated:
            obs, info = env.reset()
    return steps / (time.perf_counter() - t0)


def vector(envs, batches: int) -> float:
    """Env steps/s of a vector environment with random legal actions."""
    envs.reset(seed=1)
    t0 = time.perf_counter()
    for _ in range(batches):
        envs.step(envs.random_actions())
    return batches * envs.num_envs / (time.perf_counter() - t0)


def main() -> None:
    """Time both environments and print steps/s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="single-environment steps per timing")
    parser.add_argument("--envs", type=int, default=4096, help="games in the vector environment (default 4096)")
    parser.add_argument("--batches", type=int, default=500, help="vector steps per timing (default 500)")
    args = parser.parse_args()

    import gymnasium as gym

    import sim.rl
    from sim.rl.env import FoursquareEnv
    from sim.rl.vector import FoursquareVectorEnv

    env = FoursquareEnv()
    single(env, 1000)  # compile or load the kernels
    rate = best_of(3, lambda: single(env, args.steps))
    print(f"single env (FoursquareEnv):            {rate:12,.0f} steps/s")
    made = gym.make(sim.rl.ENV_ID)
    single(made, 1000)
    rate = best_of(3, lambda: single(made, args.steps))
    print(f"single env (gymnasium.make, wrappers): {rate:12,.0f} steps/s")
    rate = best_of(3, lambda: single(env, args.steps // 10, masked_sampling=True))
    print(f"single env, action_space.sample(mask): {rate:12,.0f} steps/s")
    for flat in (False, True):
        envs = FoursquareVectorEnv(args.envs, flat=flat)
        vector(envs, 5)
        rate = best_of(3, lambda: vector(envs, args.batches))
        kind = "flat" if flat else "dict"
        print(f"vector env, {args.envs:,} games, {kind} obs:  {rate:12,.0f} steps/s")


if __name__ == "__main__":
    main()
