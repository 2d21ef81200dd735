"""Train a tiny agent on the vector environment for a minute, then `sim compare` it with greedy and heuristic.

    pip install -e '.[rl]'
    python examples/rl_agent.py                      # about a minute of training, then the comparison
    python examples/rl_agent.py --seconds 10 --games 500
    sim compare --policy examples/rl_agent.py:Agent --policy-arg model=results/rl_agent.json \\
        --policy greedy --policy heuristic -n 2000 --seed 2026   # what the script runs at the end

The agent is a linear scorer of the cells: for each legal cell it computes a
few features of the position after placing the drawn card there, from the
observation alone (the grids of top ranks, faces and heights, and the drawn
card) and vectorised in numpy over all the games of the vector environment:
face-down tops after, losing at once, winning at once, a new pile, the pile's
height, checks fired, cards turned each way. It plays the cell with the
highest weighted sum. The weights are trained by the noisy cross-entropy
method (the method `sim tune` uses, and a classic baseline for Tetris
agents): each round, 16 weight vectors play the same batch of seeded deals
in `FoursquareVectorEnv` (reward "win"), the best quarter sets the next
sampling distribution. Plain numpy, no deep-learning framework.

`Agent` is the trained agent as a policy plugin: `sim.rl.adapter.ObservationPolicy`
turns its act function (observation, action mask -> 49 scores) into the
plugin contract, so `sim compare` plays it on the same deals as the
built-ins. ``--policy-arg model=FILE`` names the weights this script writes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sim.rl.adapter import ObservationPolicy

FEATURES = ("face_down_after", "loses", "wins", "new_pile", "height_after", "checks_fired", "turned_down",
            "turned_up", "covers_face_down", "full_after")
DEFAULT_MODEL = Path("results") / "rl_agent.json"  # beside the runs sim writes, relative to the working directory


def features(obs: dict, max_face_down: int = 4, max_pile: int = 4, grid: int = 4) -> list[np.ndarray]:
    """Each of FEATURES as an (n, 7, 7) array: its value for placing the drawn card on each cell, for n observations."""
    top = obs["top"]
    height = obs["height"]
    occupied = height > 0
    down = occupied & (obs["face_down"] > 0)
    up = occupied & ~down
    card = np.asarray(obs["card"]).astype(np.int8).reshape(-1, 1, 1)
    ge, le = up & (top >= card), up & (top <= card)

    def others(mask, axis):  # per cell: cells of its row (axis 2) or column (axis 1) in `mask`, itself excluded
        return mask.sum(axis=axis, keepdims=True, dtype=np.int8) - mask

    fires_row = (others(ge, 2) == 0) | (others(le, 2) == 0)
    fires_col = (others(ge, 1) == 0) | (others(le, 1) == 0)
    turned_down = fires_row * others(up, 2) + fires_col * others(up, 1)
    turned_up = fires_row * others(down, 2) + fires_col * others(down, 1)
    face_down_after = down.sum(axis=(1, 2), keepdims=True, dtype=np.int8) + turned_down - turned_up - down
    piles_after = occupied.sum(axis=(1, 2), keepdims=True, dtype=np.int8) + ~occupied
    return [face_down_after, face_down_after > max_face_down, (piles_after == grid * grid) & (face_down_after == 0),
            ~occupied, height + 1, fires_row.astype(np.int8) + fires_col, turned_down, turned_up, down,
            height + 1 >= max_pile]


def scores(obs: dict, mask: np.ndarray, weights) -> np.ndarray:
    """(n, 49) scores of the cells for n observations: the weighted features, -inf where the mask says illegal."""
    total = np.zeros(obs["top"].shape, np.float32)
    for w, f in zip(weights, features(obs)):
        total += np.float32(w) * f
    total = total.reshape(total.shape[0], -1)
    return np.where(mask > 0, total, -np.inf)


def evaluate(weights: np.ndarray, envs, first_game: int) -> float:
    """The win rate of `weights` on games first_game.. of the vector env's seed (one game per env)."""
    obs, info = envs.reset(seed=envs.seed_used, options={"game": first_game})
    done = np.zeros(envs.num_envs, bool)
    wins = 0
    while not done.all():
        actions = scores(obs, info["action_mask"], weights).argmax(axis=1)
        obs, reward, terminated, _, info = envs.step(actions)
        fresh = terminated & ~done
        wins += int(reward[fresh].sum())
        done |= terminated
    return wins / envs.num_envs


def train(seconds: float, games: int, seed: int, population: int = 16, elite: int = 4) -> tuple[np.ndarray, list]:
    """Cross-entropy method over the weights for about `seconds`: (best mean weights, history rows)."""
    from sim.rl.vector import FoursquareVectorEnv

    envs = FoursquareVectorEnv(num_envs=games, reward="win")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    d = len(FEATURES)
    mean, std = np.zeros(d), np.full(d, 3.0)
    history = []
    start = time.perf_counter()
    round_ = 0
    while time.perf_counter() - start < seconds:
        first = round_ * games  # new deals each round, the same for every candidate (common random numbers)
        candidates = mean + std * rng.standard_normal((population, d))
        fitness = np.array([evaluate(w, envs, first) for w in candidates])
        best = np.argsort(fitness)[::-1][:elite]
        mean = candidates[best].mean(axis=0)
        std = candidates[best].std(axis=0) + max(0.5 - 0.05 * round_, 0.05)  # noise, decreasing
        history.append({"round": round_ + 1, "best": float(fitness.max()), "mean": float(fitness.mean()),
                        "seconds": round(time.perf_counter() - start, 1)})
        print(f"round {round_ + 1:2d}: win rate best {fitness.max():.1%}, population mean {fitness.mean():.1%} "
              f"({history[-1]['seconds']:.0f} s)", file=sys.stderr)
        round_ += 1
    return mean, history


def load_weights(path: str | os.PathLike) -> np.ndarray:
    """The weights of a model file written by this script, in FEATURES order."""
    model = json.loads(Path(path).read_text())
    if model.get("features") != list(FEATURES):
        raise ValueError(f"{path}: not a model of this agent (features {model.get('features')})")
    return np.array(model["weights"], np.float32)


class Agent(ObservationPolicy):
    """The trained agent as a policy plugin: `--policy examples/rl_agent.py:Agent --policy-arg model=FILE`."""

    def __init__(self, model: str = str(DEFAULT_MODEL)):
        weights = load_weights(model)

        def act(obs, mask):
            batch = {k: np.asarray(v)[None] for k, v in obs.items()}
            return scores(batch, mask[None], weights)[0]

        super().__init__(act, mask=True)


def main() -> None:
    """Train, write the model, then compare it with greedy and heuristic through `sim compare`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60, help="training time (default 60)")
    parser.add_argument("--games", type=int, default=1024, help="deals per candidate per round (default 1024)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the training deals (default 11)")
    parser.add_argument("--out", default=str(DEFAULT_MODEL), help=f"model file (default {DEFAULT_MODEL})")
    parser.add_argument("-n", default="2000", help="games of the comparison (default 2000)")
    parser.add_argument("--compare-seed", default="2026", help="seed of the comparison (default 2026)")
    parser.add_argument("--no-compare", action="store_true", help="train only")
    args = parser.parse_args()

    weights, history = train(args.seconds, args.games, args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"features": list(FEATURES), "weights": weights.tolist(),
                                          "seed": args.seed, "games": args.games, "history": history}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    print("weights: " + ", ".join(f"{f}={w:.2f}" for f, w in zip(FEATURES, weights)), flush=True)
    if args.no_compare:
        return
    command = ["sim", "compare", "--policy", f"{Path(__file__).resolve()}:Agent", "--policy-arg",
               f"model={Path(args.out).resolve()}", "--policy", "greedy", "--policy", "heuristic",
               "-n", args.n, "--seed", args.compare_seed]
    print("$ " + " ".join(command), file=sys.stderr)
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()
