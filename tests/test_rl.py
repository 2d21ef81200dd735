"""The Gymnasium environments (sim.rl): the engine's games step by step, seeding, errors, the vector env, the adapter.

An episode must be the game the engine plays: replaying `sim.trace`'s moves
through `FoursquareEnv` gives the same end, score and face-down count, with
the action mask equal to the engine's legal cells at every step, under every
rule option. The vector environment's episodes equal the single
environment's. The observation never reveals the stock's order. A callable on
observations wrapped by `ObservationPolicy` plays through `sim run`/`sim
compare` exactly as it does through the environment.
"""

import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from typer.testing import CliRunner

import sim
import sim.rl
from sim import kernels as K
from sim.cli import app
from sim.engine.board import Board
from sim.engine.rules import Rules
from sim.players.plugins import Position
from sim.rl import observation as O
from sim.rl.adapter import ObservationPolicy
from sim.rl.env import FlatObservation, FoursquareEnv, IllegalActionError
from sim.rl.render import CELL, FACE_DOWN, FACE_UP, FELT
from sim.rl.vector import FoursquareVectorEnv

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "rl_plugin.py"
cli = CliRunner()


def rule_sets() -> list[Rules]:
    """Every value of every rule option (the others at their defaults), then random combinations."""
    sets = [Rules()]
    sets.append(Rules(adjacency="king"))
    sets += [Rules(max_pile=v) for v in range(1, 9) if v != 4]
    sets += [Rules(max_face_down=v) for v in range(0, 16) if v != 4]
    sets += [Rules(grid=v) for v in (2, 3)]
    rng = random.Random(16)
    for _ in range(14):
        sets.append(Rules(adjacency=rng.choice(["orthogonal", "king"]), max_pile=rng.randint(1, 8),
                          max_face_down=rng.randint(0, 15), grid=rng.randint(2, 4)))
    return sets


RULE_SETS = rule_sets()


def mask_of(board: Board) -> np.ndarray:
    return O.mask_of(board.legal_cells())


def assert_obs_shows(obs: dict, board: Board, card: int):
    """The observation shows exactly the board's tops, faces, heights, stock counts and turn."""
    cells = range(K.CELLS)
    assert obs["top"].reshape(-1).tolist() == [board.top(c) or 0 for c in cells]
    assert obs["face_down"].reshape(-1).tolist() == [int(board.top(c) is not None and board.is_face_down(c))
                                                       for c in cells]
    assert obs["height"].reshape(-1).tolist() == [board.height(c) for c in cells]
    counts = board.stock_counts()
    if card:
        counts[card] -= 1  # drawn: no longer in the stock
    assert obs["stock"].tolist() == [counts[r] for r in range(1, 11)]
    assert obs["card"] == card and obs["turn"] == sum(board.height(c) for c in cells)


def replay(env: FoursquareEnv, seed: int, game: int, deck, moves, check_obs: bool = True):
    """Step `moves` through the env from game `game` of `seed`, checking mask and observation against a Board."""
    obs, info = env.reset(seed=seed, options={"game": game})
    assert info["game"] == game and info["seed"] == seed
    board = Board(env.rules)
    terminated = False
    reward = 0.0
    for t, cell in enumerate(moves):
        assert not terminated
        assert np.array_equal(info["action_mask"], mask_of(board)), f"turn {t + 1}"
        if check_obs:
            assert_obs_shows(obs, board, deck[t])
        obs, reward, terminated, truncated, info = env.step(cell)
        assert truncated is False
        board.place(cell, deck[t])
    return obs, reward, terminated, info, board


# --- episodes are the engine's games ------------------------------------------------------------------


@pytest.mark.parametrize("rules", RULE_SETS, ids=lambda r: "-".join(str(v) for v in r.as_dict().values()))
def test_replaying_the_engine_s_moves_gives_its_games(rules):
    env = FoursquareEnv(rules=rules, reward="score")
    seed = 40 + RULE_SETS.index(rules)
    for game in range(6):
        deck = sim.deal(seed, game)
        for policy in ("greedy", "random"):
            result = sim.trace(deck, policy, rules, seed=seed, game=game).result()
            obs, reward, terminated, info, board = replay(env, seed, game, deck, result.moves, check_obs=game < 2)
            assert terminated
            assert info["end"] == result.end and info["score"] == result.score
            assert info["face_down"] == result.face_down == board.face_down_count
            assert info["cards_played"] == result.cards_played and info["piles"] == result.piles
            assert info["won"] == result.won and reward == (result.score if result.won else 0)
            assert info["action_mask"].sum() == 0
            assert obs["card"] == (deck[result.cards_played] if result.end == "no_move" else 0)
            with pytest.raises(RuntimeError, match="the game is over"):
                env.step(24)


def test_the_replays_meet_every_way_a_game_ends():
    # A guard for the test above: its games end in every way the engine knows, and some are won.
    ends = set()
    for rules in RULE_SETS:
        seed = 40 + RULE_SETS.index(rules)
        for game in range(6):
            for policy in ("greedy", "random"):
                ends.add(sim.trace(sim.deal(seed, game), policy, rules, seed=seed, game=game).result().end)
    assert ends == {"win", "too_many_face_down", "stock_empty", "no_move"}


@pytest.mark.parametrize("reward", ["win", "score"])
def test_heuristic_games_and_rewards(reward):
    env = FoursquareEnv(reward=reward)
    wins = 0
    for game in range(12):
        deck = sim.deal(7, game)
        result = sim.play(deck, "heuristic", seed=7, game=game)
        _, r, terminated, info, _ = replay(env, 7, game, deck, result.moves, check_obs=False)
        assert terminated and info["end"] == result.end and info["score"] == result.score
        assert r == (0.0 if not result.won else 1.0 if reward == "win" else float(result.score))
        wins += result.won
    assert wins >= 6  # the heuristic wins most games: rewards of both kinds were checked


def test_random_action_plays_the_random_policy():
    for rules in (Rules(), Rules(adjacency="king", max_pile=2, grid=3)):
        env = FoursquareEnv(rules=rules)
        cols = sim.play_range(9, 0, 60, "random", rules=rules)
        obs, info = env.reset(seed=9)
        for game in range(60):
            assert info["game"] == game
            terminated = False
            while not terminated:
                _, _, terminated, _, info = env.step(env.random_action())
            assert info["end"] == sim.END_NAMES[cols.end[game]] and info["cards_played"] == cols.cards_played[game]
            obs, info = env.reset()


# --- seeding -----------------------------------------------------------------------------------------


def test_seeded_resets_deal_the_games_of_sim_run():
    env = FoursquareEnv()
    obs, info = env.reset(seed=12)
    assert (info["seed"], info["game"]) == (12, 0) and obs["card"] == sim.deal(12, 0)[0]
    for game in (1, 2):  # later plain resets deal the next games of the same seed
        obs, info = env.reset()
        assert info["game"] == game and obs["card"] == sim.deal(12, game)[0]
    obs, info = env.reset(seed=12, options={"game": 500})
    assert info["game"] == 500 and obs["card"] == sim.deal(12, 500)[0]
    assert env.reset()[1]["game"] == 501
    info = env.reset(options={"game": 3})[1]
    assert (info["seed"], info["game"]) == (12, 3)
    deck = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1] * 4
    obs, info = env.reset(options={"deck": deck})
    assert info["game"] is None and obs["card"] == 10


def test_an_unseeded_reset_says_which_deal_it_is():
    env = FoursquareEnv()
    obs, info = env.reset()
    again, _ = FoursquareEnv().reset(seed=info["seed"], options={"game": info["game"]})
    assert all(np.array_equal(obs[k], again[k]) for k in O.KEYS)
    assert 0 <= info["seed"] < 2**64
    assert FoursquareEnv().reset()[1]["seed"] != info["seed"]  # drawn from fresh entropy


# --- the observation ---------------------------------------------------------------------------------


def test_the_observation_never_reveals_the_stock_order():
    rng = random.Random(5)
    env = FoursquareEnv()
    changed_next = 0
    for game in range(12):
        deck = list(sim.deal(31, game))
        moves = sim.play(deck, "greedy").moves
        seen = record(env, deck, moves)
        for t in rng.sample(range(len(moves)), min(4, len(moves))):
            rest = deck[t + 1:]
            rng.shuffle(rest)
            other = deck[: t + 1] + rest
            again = record(env, other, moves[: t + 1])
            for k in range(t + 1):  # every observation and mask up to turn t
                assert all(np.array_equal(seen[k][0][key], again[k][0][key]) for key in O.KEYS), (game, t, k)
                assert np.array_equal(seen[k][1], again[k][1])
            if t + 1 < len(seen) and t + 1 < len(again):
                changed_next += seen[t + 1][0]["card"] != again[t + 1][0]["card"]
    assert changed_next > 5  # the permutation did change what came next


def record(env, deck, moves):
    """(observation, mask) before each move, and after the last."""
    obs, info = env.reset(options={"deck": deck})
    out = [(obs, info["action_mask"])]
    for cell in moves:
        obs, _, terminated, _, info = env.step(cell)
        out.append((obs, info["action_mask"]))
        if terminated:
            break
    return out


def episode(env, act, seed: int, game: int, each=None) -> dict:
    """Play game `game` of `seed` to its end, each action act(obs, info), each(obs) first if given; the last info."""
    obs, info = env.reset(seed=seed, options={"game": game})
    terminated = False
    while not terminated:
        if each is not None:
            each(obs)
        obs, _, terminated, _, info = env.step(act(obs, info))
    return info


def test_the_observation_holds_the_whole_visible_state():
    # Rebuilt from the observation alone, the engine state is exactly the environment's.
    from rl_plugin import state_from

    env = FoursquareEnv()

    def shows_the_state(obs):
        assert np.array_equal(state_from(obs), env.board().state)

    for game in range(5):
        episode(env, lambda obs, info: env.random_action(), 2, game, each=shows_the_state)


def test_spaces_and_the_flat_wrapper():
    env = FoursquareEnv(rules=Rules(max_pile=6))
    assert env.action_space == gym.spaces.Discrete(49)
    assert set(env.observation_space.spaces) == set(O.KEYS)
    assert env.observation_space["height"].high.max() == 6
    flat = FlatObservation(env)
    vec, info = flat.reset(seed=4)
    assert vec.shape == (159,) and vec.dtype == np.int8 and vec in flat.observation_space
    for _ in range(10):
        cell = env.random_action()
        vec, _, terminated, _, info = flat.step(cell)
        d = O.as_dict(vec)
        assert np.array_equal(O.as_flat(d), vec)
        assert np.array_equal(d["top"], env.board().state[K.TOP:K.TOP + 49].reshape(7, 7))
        assert vec in flat.observation_space
        if terminated:
            break


# --- errors ------------------------------------------------------------------------------------------


def test_illegal_actions_are_errors_that_name_the_cell():
    env = FoursquareEnv()
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"cell 17 \(r2 c3\) is not legal on turn 1 .* legal cells: 24"):
        env.step(17)
    with pytest.raises(IllegalActionError, match=r"cell 49 \(cells are 0..48"):
        env.step(49)
    with pytest.raises(IllegalActionError, match=r"cell -1 "):
        env.step(-1)
    for bad in (2.5, "24", True, None, np.array([24])):
        with pytest.raises(ValueError, match="an action is an integer cell"):
            env.step(bad)
    obs, _, _, _, info = env.step(np.int32(24))  # integers of any kind, after the errors changed nothing
    assert obs["turn"] == 1 and env.step(np.array(int(np.flatnonzero(info["action_mask"])[0])))[0]["turn"] == 2
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step"):
        FoursquareEnv().step(24)


def test_illegal_actions_can_lose_the_game_instead():
    env = FoursquareEnv(illegal_action="lose", reward="score")
    env.reset(seed=0)
    env.step(24)
    obs, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 0.0 and info["end"] == "illegal_move" and info["illegal_action"] == 0
    assert "cell 0 (r0 c0) is not legal on turn 2" in info["message"]
    assert info["score"] is None and info["action_mask"].sum() == 0 and obs["turn"] == 1


@pytest.mark.parametrize("kwargs,message", [
    ({"reward": "points"}, "reward='points' is not valid; valid values: win, score"),
    ({"illegal_action": "ignore"}, "illegal_action='ignore' is not valid; valid values: raise, lose"),
    ({"render_mode": "human"}, "render_mode='human' is not valid; valid values: ansi, rgb_array"),
    ({"rules": {"max_pile": 9}}, "rule max_pile=9 is not valid"),
    ({"rules": {"colour": 1}}, "unknown rule 'colour'; valid rules: adjacency, max_pile"),
])
def test_bad_settings_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FoursquareEnv(**kwargs)
    if "render_mode" not in kwargs:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            FoursquareVectorEnv(4, **kwargs)
    with pytest.raises(TypeError, match="rules must be a sim.Rules or a dict"):
        FoursquareEnv(rules="king")


@pytest.mark.parametrize("options,message", [
    ({"gmae": 1}, "unknown reset option 'gmae'; valid options: game, deck"),
    ({"game": -1}, "game must be an integer in 0..2\\*\\*63-1"),
    ({"game": 1.5}, "game must be an integer"),
    ({"game": 1, "deck": list(range(1, 11)) * 4}, "give options 'game' .* or 'deck' .*, not both"),
    ({"deck": [1] * 40}, "a deck has four cards of each rank"),
    ({"deck": [1, 2]}, "a deck has 40 cards"),
    ({"deck": " ".join(map(str, range(1, 11))) * 4}, "not text"),  # its 83 characters were counted as cards
    ("game=1", "options must be a dict"),
])
def test_bad_reset_options_are_clear_errors(options, message):
    with pytest.raises(ValueError, match=message):
        FoursquareEnv().reset(seed=1, options=options)


def test_bad_seeds_are_clear_errors():
    for seed in (-1, 2**64, "7", 1.0):
        with pytest.raises(ValueError, match="seed must be an integer in 0..2\\*\\*64-1"):
            FoursquareEnv().reset(seed=seed)
    with pytest.raises(ValueError, match="seed is one integer for all envs"):
        FoursquareVectorEnv(2).reset(seed=[1, 2])


def test_bad_vector_actions_and_options_are_clear_errors():
    envs = FoursquareVectorEnv(3)
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(np.full(3, 24))
    envs.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"env 1 \(game 1 of seed 0\): cell 17 \(r2 c3\) is not legal "
                                                 r"on turn 1 .* legal cells: 24 \(see info\['action_mask'\]\[1\]\)"):
        envs.step(np.array([24, 17, 24]))
    assert envs.step(np.array([24, 24, 24]))[0]["turn"].tolist() == [1, 1, 1]  # the bad step changed nothing
    with pytest.raises(ValueError, match=r"actions must have shape \(3,\)"):
        envs.step([24, 24])
    with pytest.raises(ValueError, match="actions must be integer cells"):
        envs.step(np.array([24.0, 24.0, 24.0]))
    with pytest.raises(ValueError, match="unknown reset option 'reset_mask'"):
        envs.reset(options={"reset_mask": np.ones(3, bool)})
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        FoursquareVectorEnv(0)
    lose = FoursquareVectorEnv(2, illegal_action="lose")
    lose.reset(seed=0)
    _, rewards, terminated, _, info = lose.step(np.array([24, 3]))
    assert terminated.tolist() == [False, True] and info["end"].tolist() == [-1, K.END_ILLEGAL_MOVE]


# --- Gymnasium: registration, check_env, rendering ---------------------------------------------------


def test_make_and_make_vec_find_the_environments():
    env = gym.make("foursquare_sim/Foursquare-v0", rules=Rules(max_face_down=3), reward="score")
    assert isinstance(env.unwrapped, FoursquareEnv) and env.unwrapped.rules == Rules(max_face_down=3)
    envs = gym.make_vec("foursquare_sim/Foursquare-v0", num_envs=5, rules={"grid": 3})
    assert isinstance(envs, FoursquareVectorEnv) and envs.num_envs == 5 and envs.rules == Rules(grid=3)
    # The module-qualified id imports sim.rl itself, in a fresh interpreter.
    code = ("import gymnasium as gym; env = gym.make('sim.rl:foursquare_sim/Foursquare-v0'); "
            "print(type(env.unwrapped).__name__, env.reset(seed=3)[0]['card'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["FoursquareEnv", str(sim.deal(3, 0)[0])]


@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_check_env_passes(render_mode):
    # check_env steps with unmasked random actions (action_space.sample()), which are illegal in most
    # positions: it passes with illegal_action="lose", the setting for learners that do not mask.
    env = gym.make("foursquare_sim/Foursquare-v0", illegal_action="lose", render_mode=render_mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from the checker either
        check_env(env.unwrapped)


def test_check_env_meets_the_illegal_action_error_by_default():
    with pytest.raises(IllegalActionError, match="illegal action: cell"):
        check_env(gym.make("foursquare_sim/Foursquare-v0").unwrapped)


def test_ansi_render_is_sim_replay_s_grid():
    from sim.analysis.replay import replay as replay_game

    deck = sim.deal(0, 3)
    shown = replay_game(deck, "greedy", seed=0, game=3)
    env = FoursquareEnv(render_mode="ansi")
    env.reset(seed=0, options={"game": 3})
    assert env.render().startswith("(empty table)\nturn 1: drew ")
    for turn in shown.turns:
        env.step(turn.cell)
        text = env.render()
        grid, status = text.rstrip("\n").rsplit("\n", 1)
        assert grid == turn.board
    assert shown.end != "win" and status == f"end: lost ({shown.end}) after {len(shown.turns)} cards"


def test_rgb_render_draws_the_table():
    env = FoursquareEnv(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (8 * CELL, 7 * CELL, 3) and frame.dtype == np.uint8
    centre = (3 * CELL + CELL // 2, 3 * CELL + 4)
    assert tuple(frame[centre]) == FELT  # nothing on the table yet
    for cell in sim.play(sim.deal(0, 0), "greedy").moves[:12]:
        env.step(cell)
    frame = env.render()
    board = env.board()
    for cell in board.occupied:
        r, c = divmod(cell, 7)
        colour = FACE_DOWN if board.is_face_down(cell) else FACE_UP
        assert tuple(frame[r * CELL + CELL // 2, c * CELL + 4]) == colour, cell
    assert tuple(frame[0, 0]) != FACE_UP


# --- the vector environment ---------------------------------------------------------------------------


def test_vector_episodes_equal_the_single_env_s():
    n, seed, rules = 6, 5, Rules(max_face_down=5)
    envs = FoursquareVectorEnv(n, rules=rules, reward="score")
    flat_envs = FoursquareVectorEnv(n, rules=rules, reward="score", flat=True)
    moves = {}

    def greedy_moves(game):
        if game not in moves:
            moves[game] = sim.play(sim.deal(seed, game), "greedy", rules).moves
        return moves[game]

    obs, info = envs.reset(seed=seed, options={"game": 100})
    flat, _ = flat_envs.reset(seed=seed, options={"game": 100})
    assert info["game"].tolist() == list(range(100, 100 + n))
    current = {i: [step_of(obs, info, i)] for i in range(n)}
    finished = []
    pending = np.zeros(n, bool)
    while len({g for g, _ in finished}) < 3 * n:
        actions = np.array([0 if pending[i] else greedy_moves(int(info["game"][i]))[int(obs["turn"][i])]
                            for i in range(n)])
        obs, rewards, terminated, truncated, info = envs.step(actions)
        flat, *_ = flat_envs.step(actions)
        assert np.array_equal(flat, O.as_flat(obs)) and not truncated.any()
        for i in range(n):
            if pending[i]:  # autoreset: this step dealt env i its next game
                current[i] = [step_of(obs, info, i)]
            else:
                current[i].append(step_of(obs, info, i) + (float(rewards[i]), bool(terminated[i]),
                                                           int(info["end"][i]), int(info["score"][i])))
                if terminated[i]:
                    finished.append((int(info["game"][i]), current[i]))
        pending = terminated
    assert sorted(g for g, _ in finished)[: 3 * n] == [100 + k for k in range(3 * n)]  # env i: games i, i + n, ...
    wins = 0
    env = FoursquareEnv(rules=rules, reward="score")
    for game, steps in finished:
        obs, info = env.reset(seed=seed, options={"game": game})
        assert step_of(obs, info, None) == steps[0]
        for cell, expected in zip(greedy_moves(game), steps[1:]):
            obs, reward, terminated, _, info = env.step(cell)
            end = sim.END_NAMES.index(info["end"]) if terminated else -1
            score = info.get("score") if terminated and info["score"] is not None else -1
            assert step_of(obs, info, None) + (reward, terminated, end, score) == expected
        assert terminated
        wins += info["won"]
    assert wins >= 2  # some rewards were scores


def step_of(obs, info, i):
    """Hashable (observation, mask) of env i of a batch (None: a single env)."""
    pick = (lambda a: a) if i is None else (lambda a: a[i])
    return tuple(np.asarray(pick(obs[k])).tobytes() for k in O.KEYS) + (pick(info["action_mask"]).tobytes(),)


def test_random_actions_play_sim_run_s_random_games():
    n, seed, rules = 32, 7, Rules(max_pile=3, max_face_down=6)
    envs = gym.make_vec("foursquare_sim/Foursquare-v0", num_envs=n, rules=rules)
    obs, info = envs.reset(seed=seed)
    ended = {}
    while not all(g in ended for g in range(3 * n)):
        obs, rewards, terminated, _, info = envs.step(envs.random_actions())
        for i in np.flatnonzero(terminated):
            ended[int(info["game"][i])] = (int(info["end"][i]), int(info["score"][i]))
        assert (info["action_mask"][terminated] == 0).all() and info["_end"].tolist() == terminated.tolist()
    cols = sim.play_range(seed, 0, 3 * n, "random", rules=rules)
    assert [ended[g] for g in range(3 * n)] == list(zip(cols.end.tolist(), cols.score.tolist()))


def test_vector_resets_deal_each_env_its_games():
    envs = FoursquareVectorEnv(4)
    obs, info = envs.reset(seed=6)
    assert info["game"].tolist() == [0, 1, 2, 3] and envs.seed_used == 6
    assert obs["card"].tolist() == [sim.deal(6, g)[0] for g in range(4)]
    assert envs.reset()[1]["game"].tolist() == [4, 5, 6, 7]  # a plain reset: each env's next game
    assert envs.reset(options={"game": 10})[1]["game"].tolist() == [10, 11, 12, 13]
    assert envs.reset(seed=6, options={})[1]["game"].tolist() == [0, 1, 2, 3]
    fresh = FoursquareVectorEnv(2)
    _, info = fresh.reset()
    assert info["game"].tolist() == [0, 1] and 0 <= fresh.seed_used < 2**64


def test_vector_render_draws_every_env():
    envs = FoursquareVectorEnv(3, render_mode="ansi")
    env = FoursquareEnv(render_mode="ansi")
    envs.reset(seed=2)
    envs.step(np.full(3, 24))
    for i, frame in enumerate(envs.render()):
        env.reset(seed=2, options={"game": i})
        env.step(24)
        assert frame.splitlines()[:-1] == env.render().splitlines()[:-1]
        assert frame.splitlines()[-1] == f"game {i}: drew {sim.deal(2, i)[1]}"
    images = FoursquareVectorEnv(2, render_mode="rgb_array")
    images.reset(seed=2)
    assert [f.shape for f in images.render()] == [(8 * CELL, 7 * CELL, 3)] * 2


def test_vector_spaces_hold_the_observations():
    for flat in (False, True):
        envs = FoursquareVectorEnv(4, flat=flat, rules=Rules(max_pile=2))
        obs, info = envs.reset(seed=1)
        for _ in range(30):
            assert obs in envs.observation_space
            obs, *_ = envs.step(envs.random_actions())
        assert envs.single_action_space == gym.spaces.Discrete(49)
        assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP


# --- the adapter: a callable on observations as a policy plugin ---------------------------------------


@pytest.mark.parametrize("name", ["policy", "flat_policy", "scores_policy", "Greedy"])
def test_an_adapted_callable_plays_the_same_deals_as_the_builtins(name):
    # The plugin rebuilds the position from the observation and plays greedy's rule: its games must be
    # greedy's, game by game (a paired comparison with no discordant game).
    rules = Rules()
    plugin = sim.play_range(3, 0, 150, policy=f"{PLUGIN}:{name}", rules=rules)
    greedy = sim.play_range(3, 0, 150, policy="greedy", rules=rules)
    for column in ("won", "score", "end", "cards_played", "face_down", "piles"):
        assert np.array_equal(getattr(plugin, column), getattr(greedy, column)), column
    assert greedy.won.sum() >= 10


def test_the_adapter_sees_what_the_environment_shows():
    from rl_plugin import greedy_act

    seen = []
    policy = ObservationPolicy(lambda obs, mask: seen.append((obs, mask)) or greedy_act(obs), mask=True)
    env = FoursquareEnv(reward="score")
    for game in range(8):
        deck = sim.deal(8, game)
        board = Board()
        obs, info = env.reset(seed=8, options={"game": game})
        terminated = False
        t = 0
        while not terminated:
            position_board = Board()
            position_board.state[:] = board.state
            K.draw(position_board.state, deck[t])  # what the plugin loop shows a policy: the card drawn
            seen.clear()
            cell = policy.choose(Position(position_board, 8, game, random.Random(0), deck[t]), deck[t])
            (their_obs, their_mask), = seen
            assert all(np.array_equal(their_obs[k], obs[k]) for k in O.KEYS)
            assert np.array_equal(their_mask, info["action_mask"])
            obs, reward, terminated, _, info = env.step(cell)  # the act, through the environment
            board.place(cell, deck[t])
            t += 1
        result = sim.play(deck, f"{PLUGIN}:policy", seed=8, game=game)  # the act, as a plugin
        assert (info["end"], info["score"], info["cards_played"]) == (result.end, result.score, result.cards_played)


def test_an_agent_that_reads_the_stock_plays_as_a_plugin_the_games_it_plays_in_the_environment():
    # The plugin showed the drawn card's rank once more in the stock than the environment: every game differed.
    from rl_plugin import stock_act

    env = FoursquareEnv()
    for game in range(30):
        info = episode(env, lambda obs, info: stock_act(obs, info["action_mask"]), 9, game)
        result = sim.play(sim.deal(9, game), f"{PLUGIN}:stock_policy", seed=9, game=game)
        assert (info["end"], info["score"], info["cards_played"]) == (result.end, result.score, result.cards_played)


def test_a_copied_or_unpickled_environment_plays_on_as_the_original():
    # The copies' buffers lost their views: a step left the observation as it was, a reset kept the old deck.
    import copy
    import pickle

    fresh = [copy.deepcopy(FoursquareEnv()), pickle.loads(pickle.dumps(FoursquareEnv()))]
    env = FoursquareEnv()
    env.reset(seed=0, options={"game": 5})
    for cell in (24, 17):
        env.step(cell)
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    expected = [env.step(cell)[0] for cell in (31,)] + [env.reset(seed=0, options={"game": 6})[0]]
    for other in copies + fresh:
        got = [] if other in fresh else [other.step(31)[0]]
        got.append(other.reset(seed=0, options={"game": 6})[0])
        want = expected if other in copies else expected[1:]
        assert all(np.array_equal(a[k], b[k]) for a, b in zip(got, want) for k in O.KEYS)


def test_a_made_environment_in_flat_observations_can_be_made_again_from_its_spec():
    # Without its constructor recorded, env.spec.make() and check_env raised ValueError on the wrapper.
    env = FlatObservation(gym.make("foursquare_sim/Foursquare-v0", illegal_action="lose"))
    again = env.spec.make()
    a, _ = env.reset(seed=3)
    b, _ = again.reset(seed=3)
    assert a.shape == (159,) and np.array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)


def test_the_table_cannot_be_read_before_the_first_reset():
    # render() read an unwritten state: a garbage table, or a crash of the process.
    env = FoursquareEnv(render_mode="ansi")
    for read in (env.render, env.board, env.render_text):
        with pytest.raises(RuntimeError, match="call reset"):
            read()


def test_an_adapted_callable_that_returns_an_illegal_cell_is_named():
    with pytest.raises(sim.PolicyError, match=r"rl_plugin.py:bad_policy' returned illegal cell 0 \(seed 3, game 0, "
                                              r"turn 1\)"):
        sim.play_range(3, 0, 2, policy=f"{PLUGIN}:bad_policy")
    with pytest.raises(ValueError, match=r"act returned an array of shape \(3,\)"):
        ObservationPolicy(lambda obs: np.zeros(3)).choose(
            Position(Board(), 0, 0, random.Random(0)), 5)
    with pytest.raises(TypeError, match="act must be callable"):
        ObservationPolicy(3)


def test_sim_run_and_compare_play_an_adapted_callable(tmp_path, read_games):
    a, b = tmp_path / "plugin", tmp_path / "greedy"
    for policy, out in ((f"{PLUGIN}:Greedy", a), ("greedy", b)):
        r = cli.invoke(app, ["run", "--policy", policy, "-n", "120", "--seed", "4", "--workers", "1",
                             "--out", str(out), "--quiet"])
        assert r.exit_code == 0, r.stderr
    rows_a, rows_b = read_games(a), read_games(b)
    assert rows_a.drop("game").equals(rows_b.drop("game")) and rows_a["won"].sum() > 0
    r = cli.invoke(app, ["compare", str(a), str(b), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert "Greedy" in r.stdout and json.loads(r.stdout)


# --- the example ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_example_trains_an_agent_that_sim_can_play(tmp_path):
    model = tmp_path / "agent.json"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "rl_agent.py"), "--seconds", "1", "--games", "64",
                        "--out", str(model), "--no-compare"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300, env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert "round  1: win rate best" in r.stderr
    weights = json.loads(model.read_text())["weights"]
    assert len(weights) == 10 and all(np.isfinite(weights))
    cols = sim.play_range(2026, 0, 20, policy=f"{ROOT / 'examples' / 'rl_agent.py'}:Agent",
                          policy_args={"model": str(model)})
    assert len(cols) == 20
