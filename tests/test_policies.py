"""Strong policies, policy parameters, plugins and sim tune."""

import contextlib
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import policies
import policies.heuristic
import policies.planner
import sim
from sim.cli import app
from sim.engine.board import Board
from sim.players.api import play_decks, resolve

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
cli = CliRunner()

STRONG = [("heuristic", {}), ("lookahead", {}), ("rollout", {"samples": "4"})]


def permuted_after(deck, t, rng):
    rest = list(deck[t + 1:])
    rng.shuffle(rest)
    return list(deck[: t + 1]) + rest


@pytest.mark.parametrize("policy,args", STRONG + [("greedy", {}), ("random", {})])
def test_permuting_the_unseen_stock_never_changes_a_choice(policy, args):
    # At every turn of each game: a leak of the stock's order shows at the turn that could see it.
    rng = random.Random(3)
    for game in range(4 if policy != "rollout" else 2):
        deck = sim.deal(21, game)
        base = sim.play(deck, policy, seed=21, game=game, policy_args=args)
        for t in range(min(base.cards_played, 39)):
            other = sim.play(permuted_after(deck, t, rng), policy, seed=21, game=game, policy_args=args)
            assert other.moves[: t + 1] == base.moves[: t + 1], (game, t)


def _loses_at_once(board, cell, card):
    b = Board(board.rules)
    b.state[:] = board.state
    b.place(cell, card)
    return b.face_down_count > board.rules.max_face_down


def _wins_at_once(board, cell, card):
    b = Board(board.rules)
    b.state[:] = board.state
    b.place(cell, card)
    g = board.rules.grid
    return b.piles == g * g and b.face_down_count == 0


@pytest.mark.parametrize("policy", ["heuristic", "lookahead"])
def test_wins_are_taken_and_losing_moves_avoided(policy):
    took_win = 0
    for game in range(60 if policy == "heuristic" else 25):
        deck = sim.deal(5, game)
        r = sim.play(deck, policy, seed=5, game=game)
        board = Board()
        for t, cell in enumerate(r.moves):
            legal = board.legal_cells()
            # The stock the policy saw excludes the drawn card.
            losing = {c for c in legal if _loses_at_once(board, c, deck[t])}
            winning = {c for c in legal if _wins_at_once(board, c, deck[t])}
            if winning:
                assert cell in winning
                took_win += 1
            if losing != set(legal):
                assert cell not in losing
            board.place(cell, deck[t])
    assert took_win > 5  # the check above was exercised


def test_strong_policies_beat_greedy_on_the_same_deals():
    greedy = sim.play_range(2, 0, 400, "greedy").won.mean()
    heuristic = sim.play_range(2, 0, 400, "heuristic").won.mean()
    lookahead = sim.play_range(2, 0, 100, "lookahead").won.mean()
    assert heuristic > greedy + 0.4
    assert lookahead > 0.85


def test_policy_args_change_the_policy_and_are_checked(tmp_path):
    flat = ",".join(["-10", "1", "0", "0", "0", "0", "0"])
    a = sim.play_range(4, 0, 300, "heuristic", policy_args={"weights": flat})
    b = sim.play_range(4, 0, 300, "heuristic")
    assert not np.array_equal(a.won, b.won)
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"weights": dict(zip(policies.heuristic.FEATURES, map(float, flat.split(","))))}))
    c = sim.play_range(4, 0, 300, "heuristic", policy_args={"weights": str(path)})
    assert np.array_equal(a.won, c.won) and np.array_equal(a.end, c.end)
    with pytest.raises(ValueError, match="takes: base, samples, weights"):
        sim.play_range(4, 0, 1, "rollout", policy_args={"depth": "3"})
    with pytest.raises(ValueError, match="samples"):
        sim.play_range(4, 0, 1, "rollout", policy_args={"samples": "zero"})
    with pytest.raises(ValueError, match="need 7 weights"):
        sim.play_range(4, 0, 1, "heuristic", policy_args={"weights": "1,2"})
    with pytest.raises(ValueError, match="takes: no parameters"):
        sim.play_range(4, 0, 1, "greedy", policy_args={"weights": flat})


def test_a_number_written_another_way_is_recorded_as_the_value_the_policy_uses(tmp_path, monkeypatch):
    # samples=1_0 was recorded as typed: listed as "samples=1_0", its run named rollout-samples1_0-..., and the
    # same run asked for with samples=10 was "another complete run (samples 1_0, not 10)".
    from sim.jobs.play import RunConfig, default_out, settled

    monkeypatch.chdir(tmp_path)
    run = ["run", "--policy", "rollout", "-n", "2", "-w", "1", "-o", "r"]
    r = cli.invoke(app, [*run, "--policy-arg", "samples=1_0", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(Path("r/manifest.json").read_text())["policy_args"] == {"samples": "10"}
    r = cli.invoke(app, [*run, "--policy-arg", "samples=10"])
    assert r.exit_code == 0 and "already holds this complete run" in r.stderr, r.output
    flat = ",".join(["-10", "1", "0", "0", "0", "0", "0"])
    for policy, given, recorded in (
            ("planner", {"margin": "2e0", "roots": "0_4"}, {"roots": "4", "margin": "2"}),
            ("planner", {"margin": "0.50", "values": "default"}, {"margin": "0.5"}),
            # A default given was a run apart from the same run without it: another directory, played again.
            ("rollout", {"base": "heuristic", "samples": "6.4e1"}, {}),
            ("lookahead", {"weights": "default"}, {}),
            ("rollout", {"base": "greedy", "weights": flat}, {"base": "greedy", "weights": flat}),
            ("oracle", {"nodes": "1e3"}, {"nodes": "1000"}),
            # samples=1e1 was refused as "not an integer 1..100000" while nodes=1e3 and -n 1e3 were taken.
            ("rollout", {"samples": "1e1"}, {"samples": "10"}),
            ("planner", {"follow": "6.4e1", "endgame": "-1e0"}, {"endgame": "-1", "follow": "64"})):
        config = settled(RunConfig(policy=policy, n=5, policy_args=tuple(given.items())))
        assert dict(config.policy_args) == recorded
        assert default_out(config).name.startswith(policy + "".join(f"-{k}{v}" for k, v in recorded.items()
                                                                     if k != "weights"))


def test_a_whole_number_argument_is_refused_when_it_is_not_whole_or_out_of_range():
    for text in ("1.5e0", "1e6", "0e0", "nan", "inf", "1e", ""):
        with pytest.raises(ValueError, match=f"^policy 'rollout': samples={text!r} is not an integer 1..100000$"):
            policies.build_params("rollout", {"samples": text})


def test_a_bad_weights_value_names_the_policy_that_reads_it():
    for name in ("heuristic", "lookahead", "rollout"):
        with pytest.raises(ValueError, match=f"^policy '{name}': weights 'abc' is neither a file"):
            policies.build_params(name, {"weights": "abc"})
        with pytest.raises(ValueError, match=f"^policy '{name}': need 7 weights"):
            resolve(name, {"weights": "1,2"})


def test_a_weights_file_with_an_integer_too_large_for_a_float_is_refused(tmp_path):
    # JSON's integers have no bound: float(10**400) raised OverflowError, a traceback instead of the error.
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"weights": [1, 1, 1, 1, 1, 1, 10**400]}))
    with pytest.raises(ValueError, match=r"^policy 'heuristic': weights file .*big.json: 1000000.*\.\.\. is not a "
                                         r"finite number$"):
        resolve("heuristic", {"weights": str(path)})


def test_weights_and_values_files_read_their_numbers_alike(tmp_path):
    # One reading of a file's numbers for heuristic's weights and planner's values, each saying it in its words.
    import math

    from policies.params import json_float

    assert json_float(3) == 3.0 and type(json_float(3)) is float and json_float(-0.5) == -0.5
    assert math.isinf(json_float(math.inf)) and math.isnan(json_float(math.nan))  # the caller decides
    for value in (True, "1", None, [1]):
        with pytest.raises(TypeError, match="is not a number$"):
            json_float(value)
    with pytest.raises(OverflowError):
        json_float(10**400)
    planner = policies.planner.read_values()
    for value, weights_says in ((True, "True is not a number"), (10**400, r"1000000.*\.\.\. is not a finite number"),
                                (math.inf, "has face_down=inf")):
        (tmp_path / "w.json").write_text(json.dumps([value, 1, 1, 1, 1, 1, 1]))
        with pytest.raises(ValueError, match=weights_says):
            resolve("heuristic", {"weights": str(tmp_path / "w.json")})
        (tmp_path / "v.json").write_text(json.dumps({**planner, "loss": value}))
        with pytest.raises(ValueError, match=r"v\.json: .* is not a finite number$"):
            resolve("planner", {"values": str(tmp_path / "v.json")})


def test_weights_so_large_that_a_placement_outweighs_a_win_or_a_loss_are_refused():
    # A win is valued 1e9 and a loss -1e9: the default weights times 1e9, the same preferences, valued
    # ordinary placements beyond them and played into losses (no game of 200 won against 169); larger ones
    # overflowed to -inf for every cell, and heuristic returned no cell at all.
    defaults = policies.heuristic.DEFAULT_WEIGHTS
    for name in ("heuristic", "lookahead", "rollout"):
        with pytest.raises(ValueError, match=f"^policy '{name}': weights must be numbers from -1e\\+06 to 1e\\+06 "
                                             r".* has face_down=-3\.8167e\+09, to_open=-1\.66057e\+10,"):
            resolve(name, {"weights": ",".join(str(w * 1e9) for w in defaults)})
    # Up to the bound the choices are the defaults' (scaled by a power of two: every sum scales exactly).
    scaled = defaults * 2.0 ** 15
    assert max(abs(scaled)) <= policies.heuristic.MAX_WEIGHT
    big = sim.play_range(5, 0, 40, "heuristic", policy_args={"weights": ",".join(map(repr, scaled.tolist()))})
    assert big.to_polars().equals(sim.play_range(5, 0, 40, "heuristic").to_polars())


def test_rollout_base_and_samples_matter():
    one = sim.play_range(6, 0, 6, "rollout", policy_args={"samples": "2", "base": "greedy"})
    two = sim.play_range(6, 0, 6, "rollout", policy_args={"samples": "2", "base": "greedy"})
    assert np.array_equal(one.end, two.end) and np.array_equal(one.cards_played, two.cards_played)
    moves = [sim.play(sim.deal(6, g), "rollout", seed=6, game=g, policy_args={"samples": "2", "base": b}).moves
             for g in range(3) for b in ("greedy", "heuristic")]
    assert moves[0::2] != moves[1::2]
    more = [sim.play(sim.deal(6, g), "rollout", seed=6, game=g, policy_args={"samples": "8", "base": "greedy"}).moves
            for g in range(3)]
    assert more != moves[0::2]  # samples matter too


# --- plugins ---------------------------------------------------------------------------------------

def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


@pytest.mark.slow  # CLI runs of a plugin: its game loop is compiled, uncached, in each process
def test_compiled_example_plugin_runs_through_the_cli(tmp_path, read_games):
    spec = f"{EXAMPLES / 'compiled_policy.py'}:choose"
    r = invoke("run", "--policy", spec, "-n", "3000", "-w", "2", "-q", "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["policy"] == spec
    # The compiled loop agrees with the Python loop game by game.
    decks = np.array([sim.deal(0, g) for g in range(200)], np.uint8)
    compiled = play_decks(decks, resolve(spec), sim.Rules(), 0, 0)
    rows = read_games(tmp_path / "run").head(200)
    assert rows["cards_played"].to_list() == compiled.cards_played.tolist()
    traced = [sim.play(decks[g], spec, game=g).cards_played for g in range(20)]
    assert traced == compiled.cards_played[:20].tolist()


@pytest.mark.slow  # three CLI runs with every turn through Python
def test_python_example_plugin_runs_through_the_cli_with_args(tmp_path, read_games):
    spec = f"{EXAMPLES / 'python_policy.py'}:FewestFaceDown"
    r = invoke("run", "--policy", spec, "-n", "300", "-w", "2", "-q", "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    rows = read_games(tmp_path / "run")
    greedy = sim.play_range(0, 0, 300, "greedy")
    # The example is greedy's rule written in Python: the same games.
    assert rows["cards_played"].to_list() == greedy.cards_played.tolist()
    r = invoke("run", "--policy", spec, "--policy-arg", "prefer_new=no", "-n", "50", "-w", "1", "-q",
               "--out", tmp_path / "run2")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "run2" / "manifest.json").read_text())["policy_args"] == {"prefer_new": "no"}
    bad = invoke("run", "--policy", spec, "--policy-arg", "prefer_new=maybe", "-n", "5", "--out", tmp_path / "r3")
    assert bad.exit_code == 2 and "prefer_new" in bad.stderr


def test_a_bad_plugin_move_stops_the_run_naming_everything(tmp_path):
    plugin = tmp_path / "bad.py"
    plugin.write_text(
        "def choose(position, card):\n"
        "    if position.turn == 3:\n"
        "        return 48\n"
        "    return position.legal_cells()[0]\n"
        "def boom(position, card):\n"
        "    raise RuntimeError('no idea')\n")
    r = invoke("run", "--policy", f"{plugin}:choose", "-n", "10", "--seed", "7", "-w", "1", "-q",
               "--out", tmp_path / "run")
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    for fragment in ("returned illegal cell 48", "seed 7", "game 0", "turn 4", f"{plugin}:choose"):
        assert fragment in line
    r = invoke("run", "--policy", f"{plugin}:boom", "-n", "10", "-w", "1", "-q", "--out", tmp_path / "run2")
    assert r.exit_code == 1 and "raised RuntimeError: no idea" in r.stderr and "turn 1" in r.stderr


def test_unknown_plugins_are_usage_errors(tmp_path):
    for spec, fragment in [("nosuchmodule:choose", "cannot import"), (f"{tmp_path}/none.py:f", "no file"),
                           ("json:nosuchattr", "no attribute"), ("nosuch", "known policies")]:
        r = invoke("run", "--policy", spec, "-n", "5", "--out", tmp_path / "x")
        assert r.exit_code == 2 and fragment in r.stderr, (spec, r.stderr)


@pytest.mark.slow
def test_entry_point_plugins_are_found(tmp_path, monkeypatch):
    dist = tmp_path / "fs_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fs-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[foursquare_sim.policies]\nlowpile = fs_plugin_demo:choose\n")
    (tmp_path / "fs_plugin_demo.py").write_text((EXAMPLES / "compiled_policy.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    r = invoke("policies")
    assert "lowpile" in r.stdout and "fs_plugin_demo:choose" in r.stdout
    direct = sim.play(sim.deal(0, 1), f"{EXAMPLES / 'compiled_policy.py'}:choose")
    assert sim.play(sim.deal(0, 1), "lowpile") == direct


# --- tuning ---------------------------------------------------------------------------------------

def test_tune_is_reproducible_and_validates_on_another_seed(tmp_path):
    from sim.analysis.tune import tune

    played = []
    a = tune(n=300, seed=3, rounds=2, population=5, elite=2, workers=2, on_games=played.append)
    b = tune(n=300, seed=3, rounds=2, population=5, elite=2, workers=1)
    assert a.weights == b.weights and a.validation_win_rate == b.validation_win_rate
    assert played == [300] * 2 * 5  # every candidate's games, for the progress bar
    assert a.settings["validation_seed"] == 4
    direct = sim.play_range(4, 0, 300, "heuristic", policy_args={"weights": ",".join(map(str, a.weights))})
    assert a.validation_win_rate == direct.won.mean()
    with pytest.raises(ValueError, match="no weights to tune"):
        tune("greedy", n=10)
    r = invoke("tune", "-n", "200", "--rounds", "1", "--population", "4", "--elite", "2", "-w", "2",
               "--out", tmp_path / "w.json", "-q")
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "w.json").read_text())
    assert list(data["weights"]) == list(policies.heuristic.FEATURES)
    assert sim.play_range(0, 0, 5, "heuristic", policy_args={"weights": str(tmp_path / "w.json")}).game.size == 5


def test_sums_of_games_in_worker_processes_are_those_of_one_process():
    # tune's baseline and final games, and sim train's held-out ones, played in one process before.
    from policies.heuristic import DEFAULT_WEIGHTS
    from sim.analysis.tune import play_sums

    counts = {1: [], 2: []}
    sums = {w: play_sums(5, 230, "heuristic", sim.Rules(), DEFAULT_WEIGHTS, on_games=counts[w].append, step=40,
                         workers=w) for w in (1, 2)}
    assert sums[2] == sums[1]
    assert counts[2] == counts[1] == [40] * 5 + [30]
    games = sim.play_range(5, 0, 230, "heuristic")
    assert sums[1] == (int(games.won.sum()), float(games.score[games.won].sum()))


def test_tunes_json_holds_the_win_rate_of_the_elites_mean_its_text_gives(tmp_path):
    # When the best vector played is the result, the text gives the elite's mean's training win rate; the JSON and
    # the weights file had no such number.
    small = ["tune", "-n", "300", "--rounds", "1", "--population", "3", "--elite", "2", "-w", "1", "-q"]
    text = invoke(*small)
    said = invoke(*small, "-f", "json", "--out", tmp_path / "w.json")
    assert text.exit_code == said.exit_code == 0, text.output + said.output
    data = json.loads(said.stdout)
    assert data["chosen"] == "best played"  # so few games: the mean plays worse than the best vector
    assert f"the mean of the last round's elite won {100 * data['mean_train_win_rate']:.2f}% " in text.stdout
    assert json.loads((tmp_path / "w.json").read_text())["mean_train_win_rate"] == data["mean_train_win_rate"]


def test_a_file_plugin_has_the_same_module_name_in_every_process():
    # numba's on-disk cache of a jitted function records its module's name and imports it when a
    # later process loads the cache; a name that changed with the process's string hashing made
    # a plugin written with cache=True fail in the next process.
    import os
    import subprocess
    import sys

    code = ("import sys\nfrom sim.players.api import resolve\n"
            f"resolve({str(EXAMPLES / 'compiled_policy.py')!r} + ':choose')\n"
            "print([m for m in sys.modules if m.startswith('foursquare_plugin_')])")
    names = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        names.add(out.stdout.strip())
    assert len(names) == 1 and "foursquare_plugin_compiled_policy_" in names.pop()


def test_a_python_policy_s_board_copy_plays_the_turn_with_the_drawn_card(tmp_path):
    # board().place(cell, card) is this turn: before it the copy's stock still holds the drawn card, after it
    # the copy's stock is the position's (the drawn card out once); any difference stops the game.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def choose(position, card):\n"
        "    board = position.board()\n"
        "    assert board.stock_counts()[card] == position.stock_counts()[card] + 1\n"
        "    board.place(position.legal_cells()[0], card)\n"
        "    assert board.stock_counts() == position.stock_counts()\n"
        "    assert sum(board.stock_counts().values()) == 40 - (position.turn + 1)\n"
        "    return position.legal_cells()[0]\n")
    for game in range(3):
        result = sim.play(sim.deal(0, game), f"{probe}:choose")
        assert result.cards_played > 4


def test_a_board_refuses_a_fifth_card_of_a_rank():
    board = sim.Board()
    for cell in (24, 24, 24, 24):
        board.place(cell, 7)
    with pytest.raises(ValueError, match="no card of rank 7 is left"):
        board.place(board.legal_cells()[0], 7)


def test_a_builtin_s_choose_compiles_on_its_own_before_its_loop():
    # numba compiles planner's choose far faster alone than nested in its loop's compile, so a loop not yet
    # compiled in this process has its choose compiled (or loaded) first; a compiled loop, or a choose the loop
    # inlines (greedy's), is left alone.
    from sim import kernels as K
    from sim.engine.loop import CONTRACT, Loops, builtin_loops
    from sim.engine.results import new_columns

    assert builtin_loops("policies.planner").choose is policies.planner.choose
    assert builtin_loops("policies.greedy").choose is None
    calls = []

    class Jitted:
        def __init__(self, name):
            self.name, self.overloads = name, {}

        def compile(self, sig):
            calls.append((self.name, sig))
            self.overloads[sig] = True

        def __call__(self, *args):
            calls.append((self.name, "call"))
            self.overloads["loop"] = True

    loops = Loops(Jitted("loop"), Jitted("choose"))
    deck = np.zeros((1, K.DECK_SIZE), np.uint8)
    loops.deck_batch(deck, 0, 0, np.zeros(0), sim.Rules().as_array(), *new_columns(1).values())
    loops.deck_batch(deck, 0, 0, np.zeros(0), sim.Rules().as_array(), *new_columns(1).values())
    assert calls == [("choose", CONTRACT), ("loop", "call"), ("loop", "call")]
    calls.clear()
    Loops(Jitted("loop")).deck_batch(deck, 0, 0, np.zeros(0), sim.Rules().as_array(), *new_columns(1).values())
    assert calls == [("loop", "call")]


def test_a_new_compiled_plugin_compiles_only_its_own_choose(tmp_path):
    # Every compiled plugin plays through one game loop that numba caches: a process playing a plugin no process
    # has played before loads that loop from the cache (a copy of the loop per plugin took seconds to compile).
    code = ("import sys, sim\nfrom sim.engine import loop\n"
            "print(sim.play(sim.deal(0, 0), sys.argv[1]).moves)\nprint(dict(loop._plugin_entry().stats.cache_misses))")
    said = []
    for name in ("first", "second"):
        (tmp_path / f"{name}.py").write_text((EXAMPLES / "compiled_policy.py").read_text())
        r = subprocess.run([sys.executable, "-c", code, f"{tmp_path / name}.py:choose"], capture_output=True,
                           text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        said.append(r.stdout.splitlines())
    assert said[1][0] == said[0][0] == str(sim.play(sim.deal(0, 0), f"{EXAMPLES / 'compiled_policy.py'}:choose").moves)
    assert said[1][1] == "{}", "the second plugin's process compiled the plugins' game loop again"


def test_a_compiled_plugin_may_declare_a_signature_of_its_own(tmp_path):
    # The loop passes the contract's types (a uint8 card, say) and takes an int64 cell; a plugin declaring other
    # integer types gets its arguments and its cell converted, as by any compiled call.
    plugin = tmp_path / "declared.py"
    body = "    c = 0\n    while not (legal >> c) & 1:\n        c += 1\n    return c\n"
    plugin.write_text("from numba import njit\n\n"
                      '@njit("int32(int64[::1], int64[::1], int64, int64, uint64[::1], float64[::1])")\n'
                      f"def declared(state, rules, card, legal, rng, params):\n{body}\n"
                      f"def lowest(position, card):\n    return min(position.legal_cells())\n")
    for game in range(3):
        deck = sim.deal(0, game)
        assert sim.play(deck, f"{plugin}:declared").moves == sim.play(deck, f"{plugin}:lowest").moves


def test_a_compiled_plugin_s_faults_in_one_game_are_policy_errors(tmp_path):
    # sim.play and sim.trace say what play_range says: the plugin does not compile, or it raised at a turn.
    plugin = tmp_path / "faulty.py"
    plugin.write_text("from numba import njit\n\n"
                      "@njit\ndef wrong_signature(state, card):\n    return 24\n\n"
                      "@njit\ndef raises(state, rules, card, legal, rng, params):\n"
                      "    if card == 7:\n        raise ValueError('a seven')\n"
                      "    c = 0\n    while not (legal >> c) & 1:\n        c += 1\n    return c\n")
    deck = sim.deal(0, 0)
    turn = list(deck).index(7) + 1
    for play in (sim.play, sim.trace):
        with pytest.raises(sim.PolicyError, match="does not compile as a policy"):
            play(deck, f"{plugin}:wrong_signature")
        with pytest.raises(sim.PolicyError, match=f"raised ValueError: a seven \\(seed 0, game 0, turn {turn}\\)"):
            play(deck, f"{plugin}:raises")


def test_a_compiled_plugin_that_does_not_fit_the_contract_is_told_what_is_wrong(tmp_path):
    # numba's error is about the game loop the plugin is compiled into; its first line says only that it failed.
    plugin = tmp_path / "misfit.py"
    plugin.write_text("from numba import njit\n\n"
                      "@njit\ndef floats(state, rules, card, legal, rng, params):\n    return 24.0\n\n"
                      "@njit\ndef two_args(state, card):\n    return 24\n\n"
                      "@njit\ndef typo(state, rules, card, legal, rng, params):\n    return state.size2\n")
    deck = sim.deal(0, 0)
    for attr, fragment in (("floats", "it returns float64, not a cell"),
                           ("two_args", "must take (state, rules, card, legal, rng, params)"),
                           ("typo", "Unknown attribute 'size2' of type array(int64, 1d, C)"), ("typo", "misfit.py, line 13)")):
        with pytest.raises(sim.PolicyError) as e:
            sim.play(deck, f"{plugin}:{attr}")
        assert fragment in str(e.value) and "\n" not in str(e.value)


def test_what_a_python_plugin_prints_goes_to_stderr_leaving_stdout_the_summary(tmp_path):
    (tmp_path / "loud.py").write_text("print('importing loud')\n\n"
                                      "class Loud:\n    def __init__(self):\n        print('constructing Loud')\n\n"
                                      "    def choose(self, position, card):\n        print('turn', position.turn)\n"
                                      "        return position.legal_cells()[0]\n")
    r = subprocess.run([sys.executable, "-m", "sim", "run", "--policy", "loud.py:Loud", "-n", "2", "-w", "1",
                        "--format", "json", "--out", "r"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["games"] == 2
    for said in ("importing loud", "constructing Loud", "turn 0"):
        assert said in r.stderr
    for play in (sim.play, sim.trace):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            play(sim.deal(0, 0), str(tmp_path / "loud.py:Loud"))
        assert out.getvalue() == ""


def test_a_plugin_file_edited_between_runs_in_one_process_plays_its_new_code(tmp_path):
    # A run records the file's digest; it must play the code that digest names, not the module loaded before:
    # the same rows as a fresh process playing the edited file.
    plugin = tmp_path / "edited.py"
    plugin.write_text("def choose(position, card):\n    return position.legal_cells()[0]\n")
    first = sim.run(sim.RunConfig(policy=f"{plugin}:choose", n=30), workers=1, out=tmp_path / "a")
    plugin.write_text("def choose(position, card):\n    cells = position.legal_cells()\n"
                      "    return cells[len(cells) // 2]\n")
    second = sim.run(sim.RunConfig(policy=f"{plugin}:choose", n=30), workers=1, out=tmp_path / "b")
    code = f"import sim; sim.run(sim.RunConfig(policy={str(plugin) + ':choose'!r}, n=30), workers=1, out='c')"
    fresh = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    a, b, c = (pl.read_parquet(tmp_path / d / "games" / "*.parquet").sort("game") for d in "abc")
    assert not a.equals(b) and b.equals(c)


HELPED = "import helper\n\ndef choose(position, card):\n    return helper.pick(position.legal_cells())\n"
"""A plugin file whose choice is made by the module `helper` beside it."""
FIRST = "def pick(cells):\n    return cells[0]\n"
MIDDLE = "def pick(cells):\n    return cells[len(cells) // 2]\n"


def test_a_module_a_plugin_imports_edited_between_runs_in_one_process_plays_its_new_code(tmp_path):
    # The same for a module beside the plugin, which it imports as a script would (its folder is not on the
    # path otherwise): the run records its digest, so it must play the code that digest names.
    plugin = tmp_path / "helped.py"
    plugin.write_text(HELPED)
    (tmp_path / "helper.py").write_text(FIRST)
    sim.run(sim.RunConfig(policy=f"{plugin}:choose", n=30), workers=1, out=tmp_path / "a")
    (tmp_path / "helper.py").write_text(MIDDLE)
    sim.run(sim.RunConfig(policy=f"{plugin}:choose", n=30), workers=1, out=tmp_path / "b")
    (tmp_path / "elsewhere").mkdir()
    code = f"import sim; sim.run(sim.RunConfig(policy={str(plugin) + ':choose'!r}, n=30), workers=1, out='c')"
    fresh = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "elsewhere", capture_output=True, text=True,
                           timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    a, b, c = (pl.read_parquet(d / "games" / "*.parquet").sort("game")
               for d in (tmp_path / "a", tmp_path / "b", tmp_path / "elsewhere" / "c"))
    assert not a.equals(b) and b.equals(c)


def test_a_plugin_beside_a_module_named_as_this_project_s_leaves_the_project_s_loaded(tmp_path):
    # Its import takes the loaded package, as before; loading the plugin again never takes this project's
    # modules (nor the installation's) out of sys.modules.
    import policies

    (tmp_path / "policies.py").write_text(FIRST)
    plugin = tmp_path / "beside.py"
    plugin.write_text("import policies\n\ndef choose(position, card):\n    return policies.pick(position.legal_cells())\n")
    for _ in range(2):
        with pytest.raises(sim.PolicyError, match="module 'policies' has no attribute 'pick'"):
            sim.play(sim.deal(0, 0), f"{plugin}:choose")
        plugin.write_text(plugin.read_text() + "\n")  # edited: loaded again
    assert sys.modules["policies"] is policies and hasattr(policies, "BUILTIN")
    assert sim.play(sim.deal(0, 0), "heuristic") == sim.play(sim.deal(0, 0), "heuristic")


def test_a_plugin_file_edited_while_a_run_goes_on_does_not_change_its_rows(tmp_path):
    # Workers keep the code the run started with (whose digest it records); here the plugin rewrites its own
    # file during game 3, to play the last legal cell instead of the first.
    lowest = "def choose(position, card):\n    return position.legal_cells()[0]\n"
    editing = tmp_path / "editing.py"
    editing.write_text(
        "import pathlib\n"
        "def choose(position, card):\n"
        "    if position.game == 3 and position.turn == 0:\n"
        "        pathlib.Path(__file__).write_text('def choose(position, card):\\n'\n"
        "                                          '    return position.legal_cells()[-1]\\n')\n"
        "    return position.legal_cells()[0]\n")
    plain = tmp_path / "plain.py"
    plain.write_text(lowest)
    edited = sim.run(sim.RunConfig(policy=f"{editing}:choose", n=40), workers=2, chunk_size=2, out=tmp_path / "e")
    assert "legal_cells()[-1]" in editing.read_text()
    reference = sim.run(sim.RunConfig(policy=f"{plain}:choose", n=40), workers=1, out=tmp_path / "r")
    a, b = (pl.read_parquet(s.path / "games" / "*.parquet").sort("game").drop("policy", strict=False)
            for s in (edited, reference))
    assert a.equals(b)


def test_tune_never_returns_an_unplayed_mean_worse_than_the_best_vector_and_the_defaults(monkeypatch):
    # One small round from greedy's preferences: the elite's mean won 1.05% of the training games, the best vector
    # played 10.60%, the defaults 85.25%; it returned the mean.
    import sim.analysis.tune
    from sim.analysis.tune import tune

    kw = dict(n=2000, seed=11, rounds=1, population=3, elite=2, workers=1)
    r = tune(**kw)
    assert r.chosen == "best played" and r.mean_train_win_rate < r.train_win_rate < r.baseline_win_rate
    assert r.train_win_rate == max(best for best, _ in r.history)
    for seed, n, rate in ((11, 2000, r.train_win_rate), (12, 2000, r.validation_win_rate)):  # its own rates
        assert sim.play_range(seed, 0, n, "heuristic", policy_args={"weights": ",".join(map(repr, r.weights))}
                              ).won.mean() == rate
    # A mean that wins at least the defaults' games is the result (as `sim tune`'s shipped defaults were made).
    monkeypatch.setattr(sim.analysis.tune, "DEFAULT_WEIGHTS", np.array([10.0] + [0.0] * 6))  # seeks face-down
    r = tune(**kw)
    assert r.chosen == "mean" and r.baseline_win_rate <= r.train_win_rate == r.mean_train_win_rate
    assert r.train_win_rate < max(best for best, _ in r.history)
    # Worse than the defaults is said in the result itself, which --quiet keeps.
    monkeypatch.undo()
    out = invoke("tune", "-n", "2000", "--rounds", "1", "--population", "3", "--elite", "2", "-w", "1", "-q")
    assert out.exit_code == 0 and out.stderr == "", out.output
    assert out.stdout.startswith("weights (the best vector played: the mean of the last round's elite won 1.05% of")
    assert "train win rate      10.60% (tuned weights; seed 11, 2,000 games): below the baseline" in out.stdout


def test_tune_verbose_names_the_weight_vectors_it_hands_out():
    # -v used to say "chunk 0 -> worker-1" of a weight vector.
    r = invoke("tune", "-n", "20", "--rounds", "1", "--population", "3", "--elite", "2", "-w", "1", "-v")
    assert r.exit_code == 0, r.output
    handed = [line for line in r.stderr.splitlines() if "-> worker-" in line]
    assert len(handed) == 3 and all("weight vector" in line and "chunk" not in line for line in handed), r.stderr


def test_tune_plays_its_games_in_steps_with_the_sums_of_one_call():
    # play_sums keeps memory bounded whatever n (sim tune -n 1e9): the steps change nothing but when it reports.
    from policies.heuristic import DEFAULT_WEIGHTS
    from sim.analysis.tune import play_sums

    cols = sim.play_range(3, 0, 50, "heuristic")
    whole = (int(cols.won.sum()), float(np.where(cols.won, cols.score, 0).sum()))
    assert whole[0] > 0
    played = []
    assert play_sums(3, 50, "heuristic", sim.Rules(), DEFAULT_WEIGHTS, on_games=played.append, step=7) == whole
    assert played == [7] * 7 + [1]


def test_a_long_lived_worker_plays_the_code_each_run_recorded_or_refuses(tmp_path):
    # A Dask worker lives on from run to run, so it may hold a plugin module an earlier run loaded: each chunk
    # plays the code its run recorded (loaded again when the file holds it), and refuses when the file holds
    # other code than the run recorded and the worker never loaded that (the rows would mix two versions).
    import multiprocessing

    from sim.jobs.play import PLAY, play_chunk, settled
    from sim.jobs.runner import RunError

    plugin = tmp_path / "worked.py"
    first = "def choose(position, card):\n    return position.legal_cells()[0]\n"
    last = "def choose(position, card):\n    cells = position.legal_cells()\n    return cells[len(cells) // 2]\n"

    def task(policy, **config):
        config = settled(sim.RunConfig(policy=policy, n=8, **config))
        return {"chunk": 0, "start": 0, "stop": 8, "decks": None, **PLAY.payload(config)}

    def games(cols):
        return cols["cards_played"].tolist(), cols["end"].tolist()

    with multiprocessing.get_context("fork").Pool(1) as worker:
        plugin.write_text(first)
        old_task = task(f"{plugin}:choose")
        old = games(worker.apply(play_chunk, (old_task,)))
        plugin.write_text(last)
        new = games(worker.apply(play_chunk, (task(f"{plugin}:choose"),)))
        assert new != old and new == games(play_chunk(task(f"{plugin}:choose")))  # as this process plays it
        with pytest.raises(RunError, match=f"{plugin} has changed since the run started"):
            worker.apply(play_chunk, (old_task,))  # the file now holds other code than that run recorded
        # Any other file a run depends on too: a weights file edited during a run.
        weights = tmp_path / "w.json"
        weights.write_text(json.dumps({"weights": [-3.0, -16.0, -2.0, -15.0, -1.0, 1.0, 4.0]}))
        weighted = task("heuristic", policy_args=(("weights", str(weights)),))
        assert games(worker.apply(play_chunk, (weighted,))) == games(play_chunk(weighted))
        # The package's own data is the worker's installation's (another machine may keep it elsewhere).
        elsewhere = {**weighted, "files": {**weighted["files"], "/elsewhere/policies/data/planner.json": "0" * 64}}
        assert games(worker.apply(play_chunk, (elsewhere,))) == games(play_chunk(weighted))
        weights.write_text(json.dumps({"weights": [-1.0] * 7}))
        with pytest.raises(RunError, match=f"{weights} has changed since the run started"):
            worker.apply(play_chunk, (weighted,))


def test_a_long_lived_worker_plays_the_modules_a_plugin_imports_as_each_run_recorded(tmp_path):
    # The same for a module the plugin imports: the worker loads the plugin again with it, or refuses.
    import multiprocessing

    from sim.jobs.play import PLAY, play_chunk, settled
    from sim.jobs.runner import RunError

    plugin = tmp_path / "helped_worker.py"
    plugin.write_text(HELPED)
    helper = tmp_path / "helper.py"

    def task():
        config = settled(sim.RunConfig(policy=f"{plugin}:choose", n=8))
        assert str(helper) in dict(config.files)
        return {"chunk": 0, "start": 0, "stop": 8, "decks": None, **PLAY.payload(config)}

    def games(cols):
        return cols["cards_played"].tolist(), cols["end"].tolist()

    with multiprocessing.get_context("fork").Pool(1) as worker:
        helper.write_text(FIRST)
        old_task = task()
        old = games(worker.apply(play_chunk, (old_task,)))
        helper.write_text(MIDDLE)
        new = games(worker.apply(play_chunk, (task(),)))
        assert new != old and new == games(play_chunk(task()))  # as this process plays it
        with pytest.raises(RunError, match=f"{helper} has changed since the run started"):
            worker.apply(play_chunk, (old_task,))
