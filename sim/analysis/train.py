"""`sim train`: learn planner's values of positions by simulation (fitted Monte Carlo policy iteration).

Each round plays games of the training seed, records every position after a
placement (its features, as `policies.planner` reads them) together with
the deal's final outcome (the score of a win, the loss value for a loss),
and fits planner's linear value by least squares (a small ridge keeps
buckets seldom seen near zero). The first round plays lookahead; later
rounds play planner with the previous round's values (one card's expectation,
without its deeper search), so the values come to estimate planner's own
outcomes (policy iteration, as Neller et al. learned
Poker Squares values by simulation). With `explore`, some games play one
random placement at a random turn and record only from there on: positions
a good player seldom reaches still get values, with outcomes of its own
play after them.

Everything is a pure function of the settings: the games are the seed's
deals, the exploration draws come from a stream keyed by (seed, round,
game), and the normal equations are summed in a fixed order, so a run gives
the same file bit for bit.

With `checkpoint` (`sim train --out FILE` keeps it in FILE.checkpoint),
each finished round is kept on disk: the settings, the round reached and
all the next round reads (the weights, the normal equations summed so far,
the history), written under a temporary name and renamed into place, with
the SHA-256 of its body. A training started again with the same settings
goes on after the last finished round, and since a round depends only on
the settings and what the checkpoint keeps (its exploration draws are keyed
by round, its sums are stored exactly), it ends with the same file bit for
bit as one never stopped. A checkpoint of other settings, or of another
version, is refused naming the setting; a damaged one is refused too.
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba import njit

import policies.lookahead
import policies.planner
from policies.heuristic import DEFAULT_WEIGHTS, stock_prefix
from policies.planner import (
    FEATURE_SET, FORMAT, N_TERMS, N_WEIGHTS, ONGOING, SCRATCH, search_params, sparse_features, validate_values,
    weights_to_params,
)
from sim import kernels as K
from sim.analysis.tune import check_seeds, play_sums
from sim.engine.rules import Rules
from sim.errors import Interrupted, RunError, UsageError
from sim.jobs.files import make_folders, unseal, write_sealed
from sim.jobs.pool import run_in_order
from sim.players.api import in_cache, to_compile as to_compile_policy, warm_up
from sim.stats import wilson
from sim.version import __version__

STREAM_EXPLORE = np.uint64(7)
"""Stream id of the exploration draws (the deal and policy streams are 1 and 2)."""
SELF_PLAY = {"endgame": "-1"}
"""planner's search in self-play: one card's expectation everywhere, no deeper search (the values estimate the
outcomes of that play, and it is the faster); the validation plays planner's defaults."""
BASE_LOOKAHEAD = 0
BASE_PLANNER = 1


@njit(cache=True)
def _play(base, deck, state, rules, params, rng, moves, fired):
    if base == BASE_LOOKAHEAD:
        return K.play_turns(policies.lookahead.choose, deck, state, rules, params, rng, moves, fired)
    return K.play_turns(policies.planner.choose, deck, state, rules, params, rng, moves, fired)


@njit(cache=True)
def _explore_play(base, deck, state, rules, params, rng, moves, fired, turn, pick):
    """Play the deck, the turn `turn` on the pick-th legal cell (modulo their number); (end, played).

    No legal cell at that turn ends the game as play_turns ends it (a full grid under `max_pile` 1, say).
    """
    K.reset(state)
    end, played = _play(base, deck[:turn], state, rules, params, rng, moves, fired)
    if end != K.GOES_ON:
        return end, played
    card = deck[turn]
    K.draw(state, card)
    legal = K.legal_cells(state, rules)
    if legal == 0:
        return K.END_NO_MOVE, turn
    cell = K.nth_cell(legal, pick % K.popcount(legal))
    moves[turn] = cell
    K.place(state, rules, cell, card)
    end = K.end_of_turn(state, rules)
    if end != K.GOES_ON:
        return end, turn + 1
    end, more = _play(base, deck[turn + 1:], state, rules, params, rng, moves[turn + 1:], fired[turn + 1:])
    return end, turn + 1 + more


@njit(cache=True)
def self_play(seed, first_game, count, base, params, rules, explore, round_key, loss, bootstrap, idx_out, val_out,
              target_out, counts):
    """Play `count` games of `seed` and record their positions in order; returns how many.

    A position is one after a placement that does not end the game:
    idx_out[k] and val_out[k] are its sparse features, target_out[k] its
    target, the deal's outcome. With `bootstrap` > 0 (planner only) a
    position's target mixes in that share of its backed-up value: the
    expectation over the next card of the best follow-up by the current
    values (fitted value iteration, far less noisy than one deal's outcome).
    The arrays hold DECK_SIZE rows a game. counts[0..2] gain the games, the
    wins and the sum of the scores (losses 0), counts[3] the positions.
    """
    deck = np.empty(K.DECK_SIZE, np.uint8)  # as a run deals it: the policies' compiled code is a run's
    state = np.empty(K.STATE_SIZE, np.int64)
    moves = np.empty(K.DECK_SIZE + 1, np.int64)
    fired = np.empty(K.DECK_SIZE, np.int64)
    rng = np.empty(1, np.uint64)
    xrng = np.empty(1, np.uint64)
    prefix = np.empty(K.RANKS + 1, np.int64)
    after = np.empty(K.STATE_SIZE, np.int64)
    lines = np.empty(SCRATCH, np.int64)
    idx = np.empty(N_TERMS, np.int64)
    val = np.empty(N_TERMS)
    recorded = 0
    for i in range(count):
        game = first_game + i
        K.deal_into(seed, game, deck)
        rng[0] = K.stream_start(seed, game, K.STREAM_POLICY)
        xrng[0] = K.stream_start(seed ^ round_key, game, STREAM_EXPLORE)
        start = 0
        if K.next_u64(xrng) % np.uint64(1_000_000) < np.uint64(explore * 1_000_000):
            start = 1 + K.next_below(xrng, 24)
            end, played = _explore_play(base, deck, state, rules, params, rng, moves, fired, start,
                                        K.next_below(xrng, 64))
        else:
            K.reset(state)
            end, played = _play(base, deck, state, rules, params, rng, moves, fired)
        outcome = loss
        if end == K.END_WIN:
            outcome = float(K.DECK_SIZE - played)
            counts[1] += 1
            counts[2] += outcome
        counts[0] += 1
        # Replay the game, recording each position from `start` on.
        K.reset(state)
        for t in range(played):
            card = np.int64(deck[t])
            cell = moves[t]
            K.draw(state, card)
            if t >= start:
                stock_prefix(state, prefix)
                if sparse_features(state, rules, cell, card, prefix, lines, idx, val) == ONGOING:
                    target = outcome
                    if bootstrap > 0.0 and base == BASE_PLANNER:
                        after[:] = state
                        K.place(after, rules, cell, card)
                        backed = loss
                        if after[K.STOCK_LEFT] > 0:
                            backed = policies.planner.expected_value(after, rules, params, prefix, lines)
                        target = (1.0 - bootstrap) * outcome + bootstrap * backed
                    idx_out[recorded] = idx
                    val_out[recorded] = val
                    target_out[recorded] = target
                    recorded += 1
                    counts[3] += 1
            K.place(state, rules, cell, card)
    return recorded


@njit(cache=True)
def add_positions(idx, val, target, xtx, xty):
    """Add recorded positions (`self_play`), in order, to the normal equations xtx (N_WEIGHTS x N_WEIGHTS) and
    xty (N_WEIGHTS): the same sums, in the same order, wherever the games were played."""
    for k in range(idx.shape[0]):
        for a in range(idx.shape[1]):
            xty[idx[k, a]] += val[k, a] * target[k]
            for c in range(idx.shape[1]):
                xtx[idx[k, a], idx[k, c]] += val[k, a] * val[k, c]


@dataclass(frozen=True)
class TrainResult:
    """Learned values of planner and how well they play."""

    weights: tuple[float, ...]
    """The learned weight of each feature (policies.planner.FEATURE_SET order)."""
    loss: float
    """Value of a lost deal, in the training targets and at planner's leaves."""
    history: tuple[dict, ...]
    """Per round: the policy played, its games, win rate, mean score per deal and positions recorded."""
    validation_seed: int
    """Seed of the held-out deals (never played in training)."""
    validation_n: int
    """Held-out deals played."""
    validation_wins: int
    """Held-out deals won."""
    validation_mean_score: float
    """Mean score per held-out deal, a loss counting 0."""
    settings: dict = field(default_factory=dict)
    """The arguments that produced this result."""
    shipped_wins: int | None = None
    """Held-out deals won by planner with the shipped values (policies/data/planner.json), the same search; None
    when not played."""
    shipped_mean_score: float | None = None
    """Their mean score per held-out deal, a loss counting 0; None when not played."""

    @property
    def shipped_win_rate(self) -> float | None:
        """Share of the held-out deals the shipped values won; None when not played."""
        return None if self.shipped_wins is None else self.shipped_wins / self.validation_n

    @property
    def below_shipped(self) -> bool:
        """Do these values score less per held-out deal than the shipped ones (planner's own objective)?"""
        return self.shipped_mean_score is not None and self.validation_mean_score < self.shipped_mean_score

    @property
    def validation_win_rate(self) -> float:
        """Share of the held-out deals won."""
        return self.validation_wins / self.validation_n if self.validation_n else math.nan

    @property
    def validation_interval(self) -> tuple[float, float]:
        """95% Wilson interval of the held-out win rate."""
        return wilson(self.validation_wins, self.validation_n)

    def as_json(self) -> dict:
        """The values file: format, features, weights, and how they were made and validated."""
        return {
            "format": FORMAT,
            "features": list(FEATURE_SET),
            "weights": list(self.weights),
            "loss": self.loss,
            "settings": self.settings,
            "history": list(self.history),
            "validation": {
                "seed": self.validation_seed, "n": self.validation_n, "wins": self.validation_wins,
                "win_rate": self.validation_win_rate, "interval": list(self.validation_interval),
                "mean_score_per_deal": self.validation_mean_score,
            },
        }


def is_values_file(data) -> bool:
    """Is `data` (parsed JSON) a values file `sim train` wrote (of this format or an earlier one), which it may
    replace?"""
    return (isinstance(data, dict) and str(data.get("format", "")).startswith("foursquare-planner-values")
            and isinstance(data.get("weights"), list))


def fit(xtx: np.ndarray, xty: np.ndarray, ridge: float) -> np.ndarray:
    """Least-squares weights from the normal equations, with a ridge on every weight."""
    a = xtx + ridge * np.eye(len(xty))
    return np.linalg.solve(a, xty)


def _round_weights(w: np.ndarray) -> np.ndarray:
    """Weights rounded to 6 decimals: short, exact in the file, and the same on every machine."""
    return np.round(w, 6) + 0.0  # + 0.0 turns -0.0 into 0.0


SELF_PLAY_STEP = 250
"""Games of self-play in a step (a worker's task, then a call of `on_games`): a round's games go in steps, each
going on where the last stopped, and their positions are summed in the steps' order, so that the sums, and the
values, are the same as in one call, whatever the workers."""


def to_compile() -> str | None:
    """What `train` compiles before its first game (its self-play, then planner's game loop), saying how often;
    None when numba's cache holds it all."""
    if in_cache(self_play) and in_cache(add_positions) and to_compile_policy("planner") is None:
        return None
    return "self-play and planner (first run only)"


CHECKPOINT_FORMAT = "foursquare-sim train checkpoint"
"""The `format` of a training's checkpoint file."""


def checkpoint_path(out: Path) -> Path:
    """Where a training that writes its values to `out` keeps its finished rounds: beside it, FILE.checkpoint."""
    out = Path(out)
    return out.with_name(out.name + ".checkpoint")


@dataclass(frozen=True)
class Checkpoint:
    """A training after its last finished round: all that the next round, and the values file, are made from."""

    settings: dict
    """The training's settings, as TrainResult.settings records them: a checkpoint goes on only with the same."""
    version: str
    """The foursquare-sim version that played the rounds (another one may play them otherwise)."""
    history: tuple[dict, ...]
    """Each finished round's summary, as in TrainResult.history; its length is the round reached."""
    weights: np.ndarray
    """The weights fitted after the last finished round, which the next round's planner plays."""
    xtx: np.ndarray
    """The normal equations' matrix summed over the finished rounds (earlier ones already decayed)."""
    xty: np.ndarray
    """Their right-hand side, likewise."""

    def body(self) -> str:
        """The checkpoint as JSON text; floats as Python writes them (exact), the matrix by its nonzero entries."""
        flat = self.xtx.ravel()
        nonzero = np.flatnonzero(flat.view(np.uint64))  # by their bits: a -0.0 would be kept as it is
        return json.dumps({
            "settings": self.settings, "version": self.version, "round": len(self.history),
            "history": list(self.history), "weights": self.weights.tolist(),
            "xtx": {"size": len(self.xty), "index": nonzero.tolist(), "value": flat[nonzero].tolist()},
            "xty": self.xty.tolist(),
        })


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Write `checkpoint` to `path` under a temporary name, then rename it into place (making its folders), with
    the SHA-256 of its body beside the body: a reader never sees half of one, and trusts none that was changed."""
    make_folders(Path(path).parent)
    write_sealed(Path(path), CHECKPOINT_FORMAT, checkpoint.body())


def load_checkpoint(path: Path) -> Checkpoint | None:
    """The checkpoint in `path`, None when there is none; RunError when it is damaged (not one, or changed)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise RunError(f"{path} is damaged: not a checkpoint of sim train ({e}); delete it to start the training "
                       f"over") from None
    try:
        body = json.loads(unseal(doc, CHECKPOINT_FORMAT, "a checkpoint of sim train"))
        size = int(body["xtx"]["size"])
        xtx = np.zeros(size * size)
        xtx[np.array(body["xtx"]["index"], np.int64)] = np.array(body["xtx"]["value"], np.float64)
        history = tuple(body["history"])
        checkpoint = Checkpoint(settings=body["settings"], version=str(body["version"]), history=history,
                                weights=np.array(body["weights"], np.float64), xtx=xtx.reshape(size, size),
                                xty=np.array(body["xty"], np.float64))
        if (size != N_WEIGHTS or checkpoint.weights.shape != (size,) or checkpoint.xty.shape != (size,)
                or body["round"] != len(history) or not history):
            raise ValueError("its contents do not fit together")
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as e:
        raise RunError(f"{path} is damaged: {e}; delete it to start the training over") from None
    return checkpoint


def _setting_text(name: str, value) -> str:
    """A setting as a message names it: `seed 21`, `rules max_pile=3`."""
    if isinstance(value, dict):
        return f"{name} " + " ".join(f"{k}={v}" for k, v in value.items())
    return f"{name} {value}"


def _check_checkpoint(path: Path, checkpoint: Checkpoint, settings: dict) -> None:
    """Refuse a checkpoint of another training (its first differing setting named) or of another version."""
    done = f"{len(checkpoint.history)} of {checkpoint.settings.get('rounds')} rounds done"
    for name, value in settings.items():
        held = checkpoint.settings.get(name)
        if held != value:
            if isinstance(value, dict) and isinstance(held, dict):
                keys = [k for k in value if held.get(k) != value.get(k)] or list(held)
                value, held = ({k: v.get(k) for k in keys} for v in (value, held))
            raise UsageError(f"{_setting_text(name, value)} differs from the training kept in {path} "
                             f"({_setting_text(name, held)}, {done}): run that training's command again to finish "
                             f"it, or delete {path} to start this one", name)
    if checkpoint.version != __version__:
        raise UsageError(f"{path} was played by foursquare-sim {checkpoint.version}, and this is {__version__}; "
                         f"its rounds would mix two versions (finish it with {checkpoint.version}, or delete it to "
                         f"start over)")


VALIDATION_STEP = 500
"""Validation games per call: a few seconds of planner, so that Ctrl-C and the progress bar are not kept waiting."""


def train(n: int = 20_000, seed: int = 21, rounds: int = 3, explore: float = 0.5, loss: float = 0.0,
          ridge: float = 1.0, bootstrap: float = 0.0, decay: float = 1.0,
          validation_seed: int | None = None, validation_n: int = 2_000,
          rules: Rules | None = None, on_round=None, on_games=None, notify=None,
          against_shipped: bool = True, checkpoint: Path | None = None, on_resume=None,
          workers: int = 1) -> TrainResult:
    """Learn planner's values on `n` deals of `seed` per round; validate on another seed.

    Self-play and the held-out games are spread over `workers` processes,
    the steps of each summed in order: the result does not depend on
    `workers`.

    With `against_shipped`, the shipped values play the same held-out deals
    too, so that values that do worse (a short training, say) are seen as such.

    Each fit uses every round's positions so far, those of earlier rounds
    weighted by `decay` per round since. `on_round(round, summary)` hears
    each round's summary (as in `history`); `on_games(k)` hears every k
    games played, of self-play and then of validation (for a progress bar:
    a round can take minutes). `notify(message)` hears of a compile before
    it starts, once the settings are checked.

    With `checkpoint` (a path), each finished round is saved there, and a
    checkpoint found there of the same settings is taken up after its last
    round: `on_resume(history)` hears the summaries of the rounds it kept,
    before any game. Ctrl-C is then Interrupted, saying what was kept. The
    caller removes the file once the values are safe.
    """
    seed, validation_seed = check_seeds(seed, validation_seed)
    if n < 1 or rounds < 1 or validation_n < 1:
        raise ValueError("n, rounds and validation_n must be at least 1")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if not 0.0 <= explore <= 1.0:
        raise UsageError(f"explore must be in 0..1, got {explore}", "explore")
    if not (math.isfinite(loss) and loss <= 0.0):
        raise UsageError(f"loss must be a number <= 0, got {loss}", "loss")
    if not 0.0 < decay <= 1.0:
        raise UsageError(f"decay must be in (0, 1], got {decay}", "decay")
    if not 0.0 <= bootstrap <= 1.0:
        raise UsageError(f"bootstrap must be in 0..1, got {bootstrap}", "bootstrap")
    if not (math.isfinite(ridge) and ridge > 0.0):
        raise UsageError(f"ridge must be a number > 0, got {ridge}", "ridge")
    rules = rules or Rules()
    validation_seed = (seed + 1) % 2**64 if validation_seed is None else validation_seed  # seeds are 64-bit
    rules_array = rules.as_array()
    settings = {"n": n, "seed": seed, "rounds": rounds, "explore": explore, "loss": loss, "ridge": ridge,
                "bootstrap": bootstrap, "decay": decay,
                "validation_seed": validation_seed, "validation_n": validation_n, "rules": rules.as_dict()}
    weights = None
    history = []
    xtx = np.zeros((N_WEIGHTS, N_WEIGHTS))  # every round's positions: the fit does not swing
    xty = np.zeros(N_WEIGHTS)
    kept = None if checkpoint is None else load_checkpoint(checkpoint)
    if kept is not None:
        _check_checkpoint(checkpoint, kept, settings)
        weights, history, xtx, xty = kept.weights, list(kept.history), kept.xtx, kept.xty
        if on_resume is not None:
            on_resume(tuple(history))
    what = to_compile()
    if what is not None and notify is not None:
        notify(f"compiling {what}…")
    try:
        weights, history = _rounds(n, seed, rounds, explore, loss, ridge, bootstrap, decay, rules_array, weights,
                                   history, xtx, xty, on_round, on_games, checkpoint, settings, workers)
        return _validate(weights, history, loss, validation_seed, validation_n, rules, settings, on_games,
                         against_shipped, workers)
    except KeyboardInterrupt:
        if checkpoint is None:
            raise
        done = len(history)
        where = f"in round {done + 1} of {rounds}" if done < rounds else "in the held-out games"
        said = ("nothing written" if not done else f"round 1 is kept in {checkpoint}" if done == 1 else
                f"rounds 1-{done} are kept in {checkpoint}")
        raise Interrupted(f"interrupted {where}; {said}") from None


def _self_play_block(task):
    """One step of a round's self-play (`self_play`): (features, values, targets of its positions, counts)."""
    seed, start, count, base, params, rules_array, explore, round_key, loss, bootstrap = task
    idx = np.empty((count * K.DECK_SIZE, N_TERMS), np.int64)
    val = np.empty((count * K.DECK_SIZE, N_TERMS))
    target = np.empty(count * K.DECK_SIZE)
    counts = np.zeros(4)
    # Typed as the engine's seeds and games: one compiled signature for every seed up to 2**64 - 1.
    k = self_play(np.uint64(seed), np.int64(start), count, base, params, rules_array, explore, np.uint64(round_key),
                  loss, bootstrap, idx, val, target, counts)
    return idx[:k], val[:k], target[:k], counts


def _rounds(n, seed, rounds, explore, loss, ridge, bootstrap, decay, rules_array, weights, history, xtx, xty,
            on_round, on_games, checkpoint, settings, workers):
    """Play and fit the rounds after those in `history` (xtx, xty summed in place); (weights, history).

    `history` is the caller's list, grown as each round is done, so that an interrupt can say how far it got.
    """
    if workers > 1:  # compiled (or loaded from numba's cache) here, before the workers fork
        _self_play_block((seed, 0, 0, BASE_LOOKAHEAD, DEFAULT_WEIGHTS.astype(np.float64), rules_array, explore, 1,
                          loss, bootstrap))
    for r in range(len(history), rounds):
        xtx *= decay  # earlier rounds' positions count less: they come from weaker play
        xty *= decay
        counts = np.zeros(4)
        if weights is None:
            base, params, name = BASE_LOOKAHEAD, DEFAULT_WEIGHTS.astype(np.float64), "lookahead"
        else:
            base, name = BASE_PLANNER, "planner"
            params = np.array(weights_to_params(weights, loss) + search_params(SELF_PLAY), np.float64)
        blocks = ((seed, start, min(SELF_PLAY_STEP, n - start), base, params, rules_array, explore, r + 1, loss,
                   bootstrap) for start in range(0, n, SELF_PLAY_STEP))
        for idx, val, target, played in run_in_order(_self_play_block, blocks,
                                                     min(workers, -(-n // SELF_PLAY_STEP))):
            add_positions(idx, val, target, xtx, xty)
            counts += played
            if on_games is not None:
                on_games(int(played[0]))
        weights = _round_weights(fit(xtx, xty, ridge))
        summary = {"round": r + 1, "policy": name, "games": int(counts[0]), "win_rate": counts[1] / counts[0],
                   "mean_score_per_deal": counts[2] / counts[0], "positions": int(counts[3])}
        if checkpoint is not None:  # before the round counts as done: an interrupt in the write keeps the last one
            save_checkpoint(checkpoint, Checkpoint(settings=settings, version=__version__,
                                                   history=(*history, summary), weights=weights, xtx=xtx, xty=xty))
        history.append(summary)
        if on_round is not None:
            on_round(r + 1, summary)
    return weights, history


def _validate(weights, history, loss, validation_seed, validation_n, rules, settings, on_games, against_shipped,
              workers):
    """Play the learned values (and the shipped ones) on the held-out deals; the TrainResult."""
    params = validate_values({"format": FORMAT, "features": list(FEATURE_SET), "weights": weights.tolist(),
                              "loss": loss}, "trained")
    warm_up("planner")
    wins, total = play_sums(validation_seed, validation_n, "planner", rules, np.array(params + search_params()),
                            on_games=on_games, step=VALIDATION_STEP, workers=workers)
    mean_score = total / validation_n
    shipped_wins = shipped_mean_score = None
    if against_shipped:
        shipped = policies.planner.parse_values("default")
        shipped_wins, shipped_total = play_sums(validation_seed, validation_n, "planner", rules,
                                                np.array(shipped + search_params()), on_games=on_games,
                                                step=VALIDATION_STEP, workers=workers)
        shipped_mean_score = shipped_total / validation_n
    return TrainResult(
        weights=tuple(float(w) for w in weights), loss=float(loss), history=tuple(history),
        validation_seed=validation_seed, validation_n=validation_n, validation_wins=wins,
        validation_mean_score=mean_score, shipped_wins=shipped_wins, shipped_mean_score=shipped_mean_score,
        settings=settings,
    )
