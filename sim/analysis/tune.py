"""`sim tune`: search heuristic's weights by simulation (the cross-entropy method).

Each round samples a population of weight vectors around the current mean,
plays every one on the same games of the training seed (common random
numbers, so differences are the weights' and not the deals'), and moves the
mean and spread to the best few. Extra noise, shrinking to nothing over the
rounds, keeps the spread from collapsing onto the first good basin (the
"noisy cross-entropy method" of Szita and Lorincz, who tuned Tetris
evaluations this way). The search is a pure function of its
settings: the sampling uses numpy's generator seeded by the training seed,
and each evaluation is a deterministic batch of games. The result is then
played on a validation seed it never saw.
"""

import logging
from dataclasses import dataclass, field

import numpy as np

from policies.heuristic import DEFAULT_WEIGHTS, FEATURES
from sim.engine.cards import check_seed
from sim.engine.rules import Rules
from sim.errors import UsageError
from sim.jobs.pool import run_in_order, run_tasks
from sim.players.api import play_range, warm_up
from sim.stats import wilson

log = logging.getLogger("sim.tune")

TUNABLE = ("heuristic",)
"""Policies whose weights `sim tune` searches (lookahead and rollout use heuristic's)."""


@dataclass(frozen=True)
class TuneResult:
    """The tuned weights and how well they play."""

    features: tuple[str, ...]
    """Feature names, in weight order."""
    weights: tuple[float, ...]
    """The tuned weight of each feature."""
    train_win_rate: float
    """Win rate of the final weights on the training games."""
    validation_win_rate: float
    """Win rate on the validation seed's games."""
    validation_interval: tuple[float, float]
    """95% Wilson interval of the validation win rate."""
    history: tuple[tuple[float, float], ...] = field(default=())
    """Per round: best and mean win rate of the population."""
    settings: dict = field(default_factory=dict)
    """The arguments that produced this result."""
    baseline_win_rate: float | None = None
    """Win rate of the default weights on the training games: what the tuning has to beat."""
    chosen: str = "mean"
    """Which vector the weights are: "mean" (the last round's elite's mean) or "best played" (see `tune`)."""
    mean_train_win_rate: float | None = None
    """Win rate of the last round's elite's mean on the training games (the weights' own when chosen is "mean")."""

    def as_json(self) -> dict:
        """The weights by feature name, their win rates (and the elite's mean's, which the weights need not be)
        and the settings, as `sim tune` saves them."""
        return {
            "weights": dict(zip(self.features, self.weights)),
            "baseline_win_rate": self.baseline_win_rate,
            "train_win_rate": self.train_win_rate,
            "validation_win_rate": self.validation_win_rate,
            "validation_interval": list(self.validation_interval),
            "chosen": self.chosen,
            "mean_train_win_rate": self.mean_train_win_rate,
            "settings": self.settings,
        }


def is_weights_file(data) -> bool:
    """Is `data` (parsed JSON) a weights file `sim tune` wrote (`TuneResult.as_json`), which it may replace?"""
    return (isinstance(data, dict) and isinstance(data.get("weights"), dict) and isinstance(data.get("settings"), dict)
            and "validation_win_rate" in data)


def check_seeds(seed, validation_seed) -> tuple[int, int | None]:
    """The training and validation seeds as ints (validation_seed may be None: the one after seed); UsageError
    naming the one that is not an integer in 0..2**64-1, ValueError when they are the same."""
    checked = []
    for name, value in (("seed", seed), ("validation_seed", validation_seed)):
        try:
            checked.append(None if value is None and name == "validation_seed" else check_seed(value))
        except ValueError as e:
            raise UsageError(name + str(e).removeprefix("seed"), name) from None
    if checked[1] == checked[0]:
        raise ValueError("the validation seed must differ from the training seed")
    return checked[0], checked[1]


PLAY_STEP = 10_000
"""Games per `play_range` call when only sums are wanted: a step of `play_sums`, and a task of its workers."""


def play_sums(seed: int, n: int, policy: str, rules: Rules, params, on_games=None,
              step: int = PLAY_STEP, workers: int = 1) -> tuple[int, float]:
    """(wins, total score of the wins) of games 0..n-1 of `seed`, played `step` games at a time, so that memory
    stays bounded whatever n and Ctrl-C and `on_games(count)` come between the steps (the games, and so the
    sums, do not depend on the steps). With `workers` > 1 the steps are played in worker processes and summed
    in order (the caller compiles `policy` first, with `warm_up`, before they fork)."""
    wins, score = 0, 0.0
    steps = ((seed, start, min(step, n - start), policy, rules, params) for start in range(0, n, step))
    for count, step_wins, step_score in run_in_order(_play_step, steps, min(workers, -(-n // step))):
        wins += step_wins
        score += step_score
        if on_games is not None:
            on_games(count)
    return wins, score


def _play_step(task) -> tuple[int, int, float]:
    """One step of `play_sums`: (games, wins, total score of the wins)."""
    seed, start, count, policy, rules, params = task
    cols = play_range(seed, start, start + count, policy, rules, params=params)
    return count, int(cols.won.sum()), float(np.where(cols.won, cols.score, 0).sum())


def _evaluate(task, on_games=None, workers=1):
    policy, weights, seed, n, rules = task
    return play_sums(seed, n, policy, Rules(**rules), np.asarray(weights), on_games=on_games, workers=workers)


def tune(policy: str = "heuristic", n: int = 40_000, seed: int = 11, rounds: int = 15, population: int = 30,
         elite: int = 6, validation_seed: int | None = None, validation_n: int | None = None,
         rules: Rules | None = None, workers: int = 1, start: np.ndarray | None = None,
         noise: float = 4.0, on_round=None, on_baseline=None, on_games=None, on_other_games=None) -> TuneResult:
    """Cross-entropy search of `policy`'s weights; `on_round(round, best, mean)` reports progress.

    Before the first round the default weights are played on the training
    games (`on_baseline(win_rate)` hears it): the baseline the search has to beat.
    The result is the last round's elite's mean, unless it wins fewer training
    games than the defaults: then the search has not settled, and the mean of
    elite vectors far apart can play far worse than any of them (1% against
    11% after one small round), so the best vector played in any round is the
    result when it wins more training games than the mean (chosen "best
    played"). A mean that beats the defaults stays the result, as it was when
    the defaults were tuned.
    `on_games(n)` hears each candidate's n games played, `on_other_games(k)`
    the games of the baseline and of the final weights on the training and
    the validation seed (for a progress bar: they take as long as three
    candidates, and the bar would stand still meanwhile).
    """
    seed, validation_seed = check_seeds(seed, validation_seed)
    if policy not in TUNABLE:
        raise ValueError(f"policy {policy!r} has no weights to tune; tunable: {', '.join(TUNABLE)} "
                         f"(lookahead and rollout use heuristic's weights)")
    if n < 1 or (validation_n is not None and validation_n < 1):
        raise ValueError(f"n and validation_n must be at least 1, got n={n}, validation_n={validation_n}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if not 2 <= elite < population:
        raise ValueError(f"need 2 <= elite < population, got elite={elite}, population={population}")
    rules = rules or Rules()
    validation_seed = (seed + 1) % 2**64 if validation_seed is None else validation_seed  # seeds are 64-bit
    validation_n = validation_n or n
    warm_up(policy)  # compiled once here, before the workers fork
    baseline_wins = _evaluate((policy, DEFAULT_WEIGHTS.tolist(), seed, n, rules.as_dict()), on_other_games,
                              workers)[0]
    baseline = baseline_wins / n
    if on_baseline is not None:
        on_baseline(baseline)
    rng = np.random.default_rng(seed)
    d = len(FEATURES)
    # Start from greedy's preferences: fewer face-down cards, then new piles.
    mean = np.array(start, dtype=float) if start is not None else np.array([-10.0, -1.0] + [0.0] * (d - 2))
    spread = np.full(d, 5.0)
    history = []
    best_played = None  # (wins, score of the wins, weights) of the best vector played so far
    for r in range(rounds):
        pop = mean + spread * rng.standard_normal((population, d))
        pop[0] = mean  # the current mean always competes
        tasks = ((i, (policy, pop[i].tolist(), seed, n, rules.as_dict())) for i in range(population))
        wins = np.zeros(population)
        score = np.zeros(population)
        for i, (w, s) in run_tasks(_evaluate, tasks, min(workers, population), what="weight vector"):  # no idle workers
            wins[i], score[i] = w, s
            if on_games is not None:
                on_games(n)
        # Most wins first; the total score of the wins breaks ties.
        order = np.lexsort((-score, -wins))
        top = order[0]
        if best_played is None or (wins[top], score[top]) > best_played[:2]:
            best_played = (wins[top], score[top], pop[top].copy())
        best = pop[order[:elite]]
        mean = best.mean(axis=0)
        extra = noise * max(0.0, 1.0 - (r + 1) / (0.75 * rounds))  # variance added, fading out
        spread = np.sqrt(best.var(axis=0) + extra) + 0.05
        history.append((wins.max() / n, wins.mean() / n))
        log.info("round %d: best %.4f, mean %.4f, weights %s", r + 1, wins.max() / n, wins.mean() / n,
                 np.round(mean, 3).tolist())
        if on_round is not None:
            on_round(r + 1, wins.max() / n, wins.mean() / n)
    weights = np.round(mean, 4)
    train, train_score = _evaluate((policy, weights.tolist(), seed, n, rules.as_dict()), on_other_games, workers)
    mean_train, chosen = train / n, "mean"
    if train < baseline_wins and best_played is not None and best_played[:2] > (train, train_score):
        train, chosen = best_played[0], "best played"
        weights = best_played[2]  # as it was played: its win rates are its own
    valid = _evaluate((policy, weights.tolist(), validation_seed, validation_n, rules.as_dict()), on_other_games,
                      workers)[0]
    return TuneResult(
        features=tuple(FEATURES), weights=tuple(float(w) for w in weights),
        train_win_rate=train / n, validation_win_rate=valid / validation_n,
        validation_interval=wilson(valid, validation_n), history=tuple(history),
        settings={"policy": policy, "n": n, "seed": seed, "rounds": rounds, "population": population,
                  "elite": elite, "noise": noise, "validation_seed": validation_seed, "validation_n": validation_n,
                  "rules": rules.as_dict()},
        baseline_win_rate=baseline, chosen=chosen, mean_train_win_rate=mean_train,
    )
