"""planner: its learned values file, its training (deterministic), its play, and `sim train`."""

import json
import math
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

import policies
import policies.planner as planner
import sim
from policies.heuristic import FEATURES as HEURISTIC_FEATURES, LOSS, WIN, evaluate, stock_prefix
from sim import kernels as K
from sim.analysis.train import train
from sim.engine.rules import Rules
from sim.cli import app
from test_lookahead import random_position
from test_policies import permuted_after

cli = CliRunner()


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


# --- the shipped values -------------------------------------------------------------------------


def test_the_shipped_values_load_and_validate():
    data = planner.read_values()
    assert data["format"] == planner.FORMAT
    assert data["features"] == planner.FEATURE_SET
    weights = np.array(data["weights"], dtype=float)
    assert weights.shape == (planner.N_WEIGHTS,) and np.isfinite(weights).all()
    assert np.abs(weights).max() > 0  # learned, not a placeholder
    params = policies.build_params("planner")
    assert params.shape == (planner.N_PARAMS,) and np.isfinite(params).all()
    assert params[planner.P_LOSS] == data["loss"]
    # How it was made and validated is recorded beside it.
    assert {"n", "seed", "rounds", "validation_seed"} <= set(data["settings"])
    assert data["settings"]["validation_seed"] != data["settings"]["seed"]
    assert 0.0 <= data["validation"]["win_rate"] <= 1.0


@pytest.mark.parametrize("change,fragment", [
    (lambda d: d.update(format="other"), "format"),
    (lambda d: d.update(features=d["features"][:-1]), "feature set"),
    (lambda d: d.update(weights=d["weights"][:-1]), f"need {planner.N_WEIGHTS} weights"),
    (lambda d: d["weights"].__setitem__(3, "x"), "not a finite number"),
    (lambda d: d.update(loss=math.inf), "not a finite number"),
    (lambda d: d.update(loss=5), "loss 5 is above 0"),  # planner lost every deal on purpose
    (lambda d: d["weights"].__setitem__(3, 10**400), r": 10{19}\.\.\. is not a finite number"),
])
def test_a_bad_values_file_is_refused_with_a_reason(tmp_path, change, fragment):
    data = planner.read_values()
    change(data)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=fragment):
        policies.build_params("planner", {"values": str(path)})
    with pytest.raises(ValueError, match="neither"):
        policies.build_params("planner", {"values": str(tmp_path / "missing.json")})


def test_weights_map_onto_params_in_order():
    w = np.arange(planner.N_WEIGHTS, dtype=float)
    p = np.array(planner.weights_to_params(w, -2.0))
    assert p[planner.P_LOSS] == -2.0 and len(p) == planner.N_VALUES == planner.P_ENDGAME
    assert np.array_equal(p[1:], w)
    names = planner.FEATURE_SET
    blocks = {"bias": planner.P_BIAS, "stock_left": planner.P_SLOPE, "safe": planner.P_SAFE,
              "mend": planner.P_MEND, "win_next": planner.P_WIN_NEXT}
    assert set(blocks) == set(planner.BUCKET_FEATURES)
    for f, start in blocks.items():
        for b in (0, planner.bucket(3, 2), planner.N_BUCKETS - 1):
            t, d = divmod(b, planner.FACE_DOWN_BUCKETS)
            assert names[start - 1 + b] == f"{f}[to_open={t},face_down={d}]"
    assert names[planner.P_LINE - 1] == "full_up[face_down=0,open_group=0]"
    assert names[-1] == "closed[face_down=4,open_group=3]"


# --- the features of a position ----------------------------------------------------------------

RULE_SETTINGS = [{}, {"adjacency": "king"}, {"max_face_down": "3"}, {"grid": "3"}, {"max_pile": "2"}]


def reference_safe(after, rules):
    """Share of the stock's cards that some empty legal cell takes without adding a face-down top, by trying each."""
    total = int(after[K.STOCK_LEFT])
    if total == 0 or after[K.PILES] == rules[K.RULE_GRID] ** 2:
        return 0.0
    safe = 0
    for r in range(1, K.RANKS + 1):
        if after[K.STOCK + r] == 0:
            continue
        empty = K.legal_cells(after, rules) & ~after[K.OCCUPIED]
        for c in range(K.CELLS):
            if empty >> c & 1:
                tried = after.copy()
                K.draw(tried, r)
                K.place(tried, rules, c, r)
                if tried[K.FACE_DOWN_COUNT] <= after[K.FACE_DOWN_COUNT]:
                    safe += int(after[K.STOCK + r])
                    break
    return safe / total


def reference_mend(after, rules):
    """Shares of the stock's cards that some legal cell takes leaving fewer face-down tops, and winning at once.

    Both 0 when no top is face down (then `safe` says what the next card can do) and before the
    endgame (more than MEND_TO_OPEN piles to open).
    """
    total = int(after[K.STOCK_LEFT])
    to_open = rules[K.RULE_GRID] ** 2 - after[K.PILES]
    if total == 0 or after[K.FACE_DOWN_COUNT] == 0 or to_open > planner.MEND_TO_OPEN:
        return 0.0, 0.0
    mend = win = 0
    legal = K.legal_cells(after, rules)
    for r in range(1, K.RANKS + 1):
        ends = []
        for c in range(K.CELLS):
            if legal >> c & 1:
                tried = after.copy()
                K.draw(tried, r)
                K.place(tried, rules, c, r)
                ends.append((tried[K.FACE_DOWN_COUNT] < after[K.FACE_DOWN_COUNT],
                             K.end_of_turn(tried, rules) == K.END_WIN))
        mend += after[K.STOCK + r] * any(e[0] for e in ends)
        win += after[K.STOCK + r] * any(e[1] for e in ends)
    return mend / total, win / total


def check_leaf_terms(state, rules, card):
    """leaf_terms of every legal cell against the references; the number of cells checked with mend > 0."""
    prefix = np.empty(K.RANKS + 1, np.int64)
    stock_prefix(state, prefix)
    lines = np.empty(planner.SCRATCH, np.int64)
    legal = K.legal_cells(state, rules)
    mended = 0
    for cell in (c for c in range(K.CELLS) if legal >> c & 1):
        status, to_open, fd, full_up, full_down, risk, spread, closed, safe, mend, win_next = planner.leaf_terms(
            state, rules, cell, card, prefix, lines)
        after = state.copy()
        K.place(after, rules, cell, card)
        end = K.end_of_turn(after, rules)
        expected = {K.END_WIN: planner.WON, K.END_TOO_MANY_FACE_DOWN: planner.LOST}.get(end, planner.ONGOING)
        assert status == expected
        if status != planner.ONGOING:
            continue
        assert to_open == rules[K.RULE_GRID] ** 2 - after[K.PILES]
        assert fd == after[K.FACE_DOWN_COUNT]
        assert full_up == bin(int(after[K.FULL] & ~after[K.FACE_DOWN])).count("1")
        assert full_down == bin(int(after[K.FULL] & after[K.FACE_DOWN])).count("1")
        for name, value in (("risk", risk), ("spread", spread), ("closed", closed)):
            unit = np.array([float(f == name) for f in HEURISTIC_FEATURES])
            assert value == pytest.approx(evaluate(state, rules, cell, card, unit, prefix), abs=1e-9)
        assert safe == pytest.approx(reference_safe(after, rules), abs=1e-12)
        assert (mend, win_next) == pytest.approx(reference_mend(after, rules), abs=1e-12)
        mended += mend > 0
    return mended


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), turns=st.integers(0, 30), setting=st.sampled_from(RULE_SETTINGS))
def test_leaf_terms_match_placing_the_card_and_trying_every_rank(seed, turns, setting):
    rules = sim.Rules.from_strings(setting).as_array()
    rng = np.random.default_rng(seed)
    deck = np.array(sim.deal(seed % 1000, 0), dtype=np.int64)
    state = random_position(deck, turns, rules, rng)
    if state is not None:
        check_leaf_terms(state, rules, int(deck[turns]))


@pytest.mark.parametrize("setting", [{}, {"grid": "3"}], ids=["default", "grid=3"])
def test_leaf_terms_match_along_whole_games_endgames_included(setting):
    """Every position of a few of planner's own games, up to the end, where face-down tops get mended."""
    rules_obj = sim.Rules.from_strings(setting)
    rules = rules_obj.as_array()
    mended = 0
    for game in range(4):
        deck = sim.deal(12, game)
        moves = sim.play(deck, "planner", rules_obj, seed=12, game=game).moves
        state = np.zeros(K.STATE_SIZE, np.int64)
        K.reset(state)
        for card, cell in zip(deck, moves):
            K.draw(state, card)
            mended += check_leaf_terms(state, rules, int(card))
            K.place(state, rules, cell, card)
    assert mended > 0  # the endgame terms were exercised


def test_leaf_value_is_the_dot_product_of_the_sparse_features():
    rules = sim.Rules().as_array()
    rng = np.random.default_rng(5)
    params = np.array(planner.parse_values("default"))
    weights = params[1:]
    idx = np.empty(planner.N_TERMS, np.int64)
    val = np.empty(planner.N_TERMS)
    lines = np.empty(planner.SCRATCH, np.int64)
    prefix = np.empty(K.RANKS + 1, np.int64)
    checked = 0
    for game in range(20):
        deck = np.array(sim.deal(5, game), dtype=np.int64)
        state = random_position(deck, int(rng.integers(0, 25)), rules, rng)
        if state is None:
            continue
        card = int(deck[state[K.TURN]])
        stock_prefix(state, prefix)
        legal = K.legal_cells(state, rules)
        for cell in (c for c in range(K.CELLS) if legal >> c & 1):
            v = planner.leaf_value(state, rules, cell, card, params, prefix, lines)
            status = planner.sparse_features(state, rules, cell, card, prefix, lines, idx, val)
            if status == planner.ONGOING:
                assert v == pytest.approx(float(weights[idx] @ val), rel=1e-12, abs=1e-9)
                checked += 1
    assert checked > 50


# --- play -------------------------------------------------------------------------------------


@settings(max_examples=4, deadline=None)
@given(game=st.integers(0, 10_000), shuffle=st.integers(0, 2**32 - 1))
def test_permuting_the_unseen_stock_never_changes_its_choice(game, shuffle):
    # At every turn of the game: a leak of the stock's order shows at the turn that could see it.
    deck = sim.deal(31, game)
    base = sim.play(deck, "planner", seed=31, game=game)
    rng = random.Random(shuffle)
    for t in range(min(base.cards_played, 39)):
        other = sim.play(permuted_after(deck, t, rng), "planner", seed=31, game=game)
        assert other.moves[: t + 1] == base.moves[: t + 1], t


def test_planner_plays_legal_cells_under_other_rules():
    # An illegal cell would stop the run with a PolicyError.
    for rules in (sim.Rules(), sim.Rules(grid=3), sim.Rules(max_face_down=2, adjacency="king")):
        cols = sim.play_range(8, 0, 20, "planner", rules=rules)
        assert len(cols.won) == 20
        assert cols.won.any()


def test_planner_scores_more_than_heuristic_on_the_same_deals():
    def per_deal(policy):
        cols = sim.play_range(9, 0, 150, policy)
        return float(np.where(cols.won, cols.score, 0).mean())

    assert per_deal("planner") > per_deal("heuristic") + 1.0


def test_values_argument_changes_the_play(tmp_path):
    data = planner.read_values()
    data["weights"] = [0.0] * planner.N_WEIGHTS
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(data))
    a = sim.play_range(3, 0, 30, "planner")
    b = sim.play_range(3, 0, 30, "planner", policy_args={"values": str(path)})
    assert not (np.array_equal(a.cards_played, b.cards_played) and np.array_equal(a.won, b.won))


def test_values_learned_under_other_rules_are_warned_of_before_the_games(tmp_path):
    # Values hold for the rules they were learned under: under grid=3 the shipped ones made 27.52 per deal
    # on 200 deals where lookahead made 28.25, and nothing said why.
    assert policies.rules_warning("planner", {}, Rules().as_dict()) is None
    said = policies.rules_warning("planner", {}, Rules(grid=3, max_pile=3).as_dict())
    assert "the shipped values were learned under max_pile=4, grid=4" in said
    assert "these games play max_pile=3, grid=3" in said and "sim train --rule max_pile=3 --rule grid=3" in said
    data = planner.read_values()
    data["settings"]["rules"]["max_face_down"] = 3
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data))
    assert f"the values in {path} were learned under max_face_down=3" in policies.rules_warning(
        "planner", {"values": str(path)}, Rules().as_dict())
    assert policies.rules_warning("planner", {"values": str(path)}, Rules(max_face_down=3).as_dict()) is None
    del data["settings"]  # a file that does not say which rules: nothing to warn of
    path.write_text(json.dumps(data))
    assert policies.rules_warning("planner", {"values": str(path)}, Rules(grid=3).as_dict()) is None
    assert policies.rules_warning("lookahead", {}, Rules(grid=3).as_dict()) is None
    r = invoke("run", "--policy", "planner", "-n", "2", "-w", "1", "--rule", "grid=3", "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    assert "learned under grid=4, and these games play grid=3" in r.stderr and "learned under" not in r.stdout


def test_ranks_value_is_never_passed_a_bare_constant_flag():
    """numba types a constant argument as its literal value and compiles a copy of the callee for each:
    three copies of ranks_value cost a minute of every first compile of planner and sim train."""
    import ast
    import inspect

    calls = [node for node in ast.walk(ast.parse(inspect.getsource(planner)))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ranks_value"]
    assert len(calls) == 3  # expected_value's, follow_up_value's and choose's
    for call in calls:
        stop_at_win, follow = call.args[5], call.args[6]
        assert not isinstance(stop_at_win, ast.Constant) and not isinstance(follow, ast.Constant), ast.unparse(call)


# --- training -----------------------------------------------------------------------------------


def test_training_is_deterministic_for_a_seed_and_depends_on_it(tmp_path):
    kw = dict(n=40, rounds=3, explore=0.5, loss=-5.0, bootstrap=0.5, decay=0.5, validation_n=10)
    a = train(seed=4, **kw).as_json()
    b = train(seed=4, **kw).as_json()
    c = train(seed=5, **kw).as_json()
    assert json.dumps(a) == json.dumps(b)
    assert a["weights"] != c["weights"]
    assert a["validation"]["seed"] == 5 and a["settings"]["seed"] == 4
    assert len(a["history"]) == 3 and a["history"][0]["policy"] == "lookahead"
    assert a["history"][1]["policy"] == a["history"][2]["policy"] == "planner"
    planner.validate_values(a, "trained")  # a trained file is a valid values file


def test_self_play_and_validation_in_steps_give_the_values_and_figures_of_one_call(monkeypatch):
    import sim.analysis.train as training

    kw = dict(n=40, rounds=2, seed=4, explore=0.5, loss=-5.0, bootstrap=0.5, validation_n=10)
    monkeypatch.setattr(training, "SELF_PLAY_STEP", 10**6)
    monkeypatch.setattr(training, "VALIDATION_STEP", 10**6)
    whole = train(**kw).as_json()
    monkeypatch.setattr(training, "SELF_PLAY_STEP", 7)
    monkeypatch.setattr(training, "VALIDATION_STEP", 3)
    played = []
    steps = train(on_games=played.append, **kw).as_json()
    assert json.dumps(steps) == json.dumps(whole)
    # self-play, then the held-out deals with these values and with the shipped ones
    assert played == [7, 7, 7, 7, 7, 5] * 2 + [3, 3, 3, 1] * 2


@pytest.mark.parametrize("kw,fragment", [
    (dict(validation_seed=1, seed=1), "differ"),
    (dict(explore=2.0), "explore"),
    (dict(ridge=0.0), "ridge"),
    (dict(loss=1.0), "loss"),
    (dict(bootstrap=1.5), "bootstrap"),
    (dict(decay=0.0), "decay"),
])
def test_bad_training_settings_are_refused(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        train(n=2, rounds=1, validation_n=2, **kw)


def test_training_explores_under_rules_where_a_game_can_run_out_of_cells():
    # With max_pile 1 a 2x2 grid is full after 4 cards: a deal exploring at turn 4 found no legal cell, and
    # the random pick among none stopped the training with "integer modulo by zero".
    rules = Rules(grid=2, max_pile=1)
    result = train(n=60, rounds=1, seed=21, explore=1.0, validation_n=2, rules=rules, against_shipped=False)
    assert result.history[0]["games"] == 60 and result.history[0]["positions"] > 0
    assert result.settings["rules"] == rules.as_dict()


SAME_CHOOSE = """
import sim, policies.heuristic, policies.lookahead, policies.planner
from sim.analysis.train import train

for policy in ("heuristic", "lookahead", "planner"):
    sim.play_range(0, 0, 2, policy)
train(n=2, rounds=2, validation_n=2, against_shipped=False)
sim.play_range(0, 0, 1, "rollout", policy_args={"samples": 2})
print([len(m.choose.signatures) for m in (policies.heuristic, policies.lookahead, policies.planner)])
"""


def test_self_play_and_rollout_play_the_choose_a_run_compiled():
    # A run deals uint8 cards. Self-play (and rollout's playouts) dealing int64 ones compiled each policy's choose
    # a second time, for another type of card: tens of seconds of every first training. In a fresh process, so
    # that no other test's calls count.
    import subprocess

    done = subprocess.run([sys.executable, "-c", SAME_CHOOSE], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[1, 1, 1]"


# --- sim train ----------------------------------------------------------------------------------


def test_sim_train_help_has_an_example():
    r = invoke("train", "-h")
    assert r.exit_code == 0, r.output
    assert "Example: sim train" in r.stdout


def test_sim_train_help_says_the_file_does_not_depend_on_its_workers():
    r = invoke("train", "-h")
    said = " ".join(r.stdout.split())
    assert "--workers" in said and "-w" in said
    assert "The file is a pure function of the arguments, whatever -w" in said


def test_training_in_worker_processes_gives_the_result_of_one_process(monkeypatch):
    # sim train played on one core. Its positions' sums are floats: added in another order they would give
    # other values, so each step's positions come back to this process and are added in the deals' order.
    import sim.analysis.train as training

    monkeypatch.setattr(training, "SELF_PLAY_STEP", 7)  # steps of unequal games: some finish out of order
    monkeypatch.setattr(training, "VALIDATION_STEP", 3)
    kw = dict(n=40, rounds=2, seed=4, explore=0.5, loss=-5.0, bootstrap=0.5, decay=0.5, validation_n=10)
    played = {1: [], 2: []}
    results = {w: train(workers=w, on_games=played[w].append, **kw).as_json() for w in (1, 2)}
    assert json.dumps(results[2]) == json.dumps(results[1])
    assert played[2] == played[1] == [7, 7, 7, 7, 7, 5] * 2 + [3, 3, 3, 1] * 2
    with pytest.raises(ValueError, match="workers must be at least 1"):
        train(workers=0, **kw)


def test_sim_train_writes_the_same_file_whatever_its_workers(tmp_path):
    args = ("train", "-n", "30", "--rounds", "2", "--seed", "7", "--validation-n", "10", "-q")
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert invoke(*args, "-w", "1", "--out", one).exit_code == 0
    assert invoke(*args, "-w", "2", "--out", two).exit_code == 0
    assert one.read_bytes() == two.read_bytes()
    r = invoke(*args, "-w", "0")
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == ["Error: --workers must be at least 1, not 0"]


def test_sim_train_writes_a_values_file_planner_plays(tmp_path):
    out = tmp_path / "values.json"
    r = invoke("train", "-n", "30", "--rounds", "1", "--seed", "7", "--validation-n", "10", "--out", out)
    assert r.exit_code == 0, r.output
    assert "held-out seed 8" in r.stdout and "mean score per deal" in r.stdout
    assert f"wrote {out}" in r.stderr and "wrote" not in r.stdout  # a notice, on stderr
    data = json.loads(out.read_text())
    assert data["settings"]["seed"] == 7
    cols = sim.play_range(1, 0, 3, "planner", policy_args={"values": str(out)})
    assert len(cols) == 3
    again = tmp_path / "again.json"
    r = invoke("train", "-n", "30", "--rounds", "1", "--seed", "7", "--validation-n", "10", "--out", again, "-q",
               "-f", "json")
    assert r.exit_code == 0, r.output
    assert "wrote" not in r.output  # --quiet: no notices
    assert again.read_bytes() == out.read_bytes()  # the same file bit for bit
    said = json.loads(r.stdout)  # --format json: the values file's fields, and the shipped values' figures
    assert {k: v for k, v in said.items() if k not in ("shipped", "below_shipped", "out")} == data
    shipped = sim.play_range(8, 0, 10, "planner")
    assert said["shipped"]["wins"] == int(shipped.won.sum()) and said["out"] == str(again)
    assert said["shipped"]["mean_score_per_deal"] == pytest.approx(float(np.where(shipped.won, shipped.score, 0).sum()) / 10)
    assert said["below_shipped"] == (said["validation"]["mean_score_per_deal"] < said["shipped"]["mean_score_per_deal"])


def test_sim_train_sets_the_values_beside_the_shipped_ones_on_the_same_held_out_deals(tmp_path):
    # A short training made values that won 11% of the held-out deals, said with nothing to compare it to.
    r = invoke("train", "-n", "20", "--rounds", "1", "--seed", "3", "--validation-n", "12")
    assert r.exit_code == 0, r.output
    shipped = sim.play_range(4, 0, 12, "planner")
    wins = int(shipped.won.sum())
    per_deal = float(np.where(shipped.won, shipped.score, 0).sum()) / 12
    assert f"shipped {100 * wins / 12:.2f}%" in r.stdout and f"shipped {per_deal:.2f}" in r.stdout
    ours = float(r.stdout.split("mean score per deal")[1].split()[0])
    assert ours < per_deal  # 20 deals of training do not reach the shipped values
    assert "below the shipped values" in r.stdout and "warning: these values score less" in r.stderr
    quiet = invoke("train", "-n", "20", "--rounds", "1", "--seed", "3", "--validation-n", "12", "-q")
    assert "below the shipped values" in quiet.stdout and quiet.stderr == ""
    result = train(n=20, rounds=1, seed=3, validation_n=12, against_shipped=False)
    assert result.shipped_wins is None and not result.below_shipped


def test_sim_trains_round_lines_say_what_was_fitted_and_that_exploring_deals_count(tmp_path):
    # Round 2 said "176,584 positions fitted" (its own positions; the fit used rounds 1 and 2), and the
    # win rate of deals played with a random placement read as the policy's own.
    for explore in ("0.5", "0"):
        out = tmp_path / f"values-{explore}.json"
        r = invoke("train", "-n", "20", "--rounds", "2", "--validation-n", "5", "--explore", explore, "--out", out)
        assert r.exit_code == 0, r.output
        rounds = [line for line in r.stderr.splitlines() if line.startswith("round ")]
        history = json.loads(out.read_text())["history"]
        first, second = (h["positions"] for h in history)
        assert rounds[0].endswith(f"; {first:,} positions recorded and fitted"), rounds
        assert rounds[1].endswith(f"; {second:,} positions recorded, {first + second:,} fitted (rounds 1-2)"), rounds
        exploring = "20 deals of seed 21, some with one random placement (--explore 0.5): win rate "
        assert all((exploring in line) == (explore == "0.5") for line in rounds), rounds


# --- the deeper search -----------------------------------------------------------------------


def reference_outcomes(drawn, rules, r):
    """(cell, 'won' | 'lost' | 'on') of every legal cell for the drawn card `r`, by placing it on a copy."""
    out = []
    legal = K.legal_cells(drawn, rules)
    for c in range(K.CELLS):
        if legal >> c & 1:
            tried = drawn.copy()
            K.place(tried, rules, c, r)
            end = K.end_of_turn(tried, rules)
            out.append((c, {K.END_WIN: "won", K.END_TOO_MANY_FACE_DOWN: "lost"}.get(end, "on")))
    return out


def reference_expected(after, rules, params, follow=0, stop_at_win=False):
    """The expectation over the next card of its best follow-up, trying every rank and cell on copies.

    follow = 0: a follow-up is worth its score if it wins, the loss value if it loses, else V; with
    stop_at_win a rank with a winning follow-up is worth that score.
    follow > 0: a rank with a winning follow-up is worth that score; else the `follow` best ongoing
    follow-ups by V (lowest cell among equals) within the margin of the first are valued by this function
    with follow = 0 and stop_at_win from the position after them (the loss value if the stock is then
    empty).
    """
    prefix = np.empty(K.RANKS + 1, np.int64)
    lines = np.empty(planner.SCRATCH, np.int64)
    ev = 0.0
    for r in range(1, K.RANKS + 1):
        count = int(after[K.STOCK + r])
        if count == 0:
            continue
        drawn = after.copy()
        K.draw(drawn, r)
        stock_prefix(drawn, prefix)
        outcomes = reference_outcomes(drawn, rules, r)
        values = [float(drawn[K.STOCK_LEFT]) for _, o in outcomes if o == "won"]
        values += [params[planner.P_LOSS] for _, o in outcomes if o == "lost"]
        on = [(planner.leaf_value(drawn, rules, c, r, params, prefix, lines), c) for c, o in outcomes if o == "on"]
        if follow == 0:
            values += [v for v, _ in on]
        else:
            ranked = sorted(on, key=lambda vc: (-vc[0], vc[1]))[:follow]
            for v, c in ranked:
                if v < ranked[0][0] - params[planner.P_MARGIN]:
                    break
                tried = drawn.copy()
                K.place(tried, rules, c, r)
                values.append(params[planner.P_LOSS] if tried[K.STOCK_LEFT] == 0
                              else reference_expected(tried, rules, params, stop_at_win=True))
        best = max(values) if values else params[planner.P_LOSS]
        if (stop_at_win or follow > 0) and any(o == "won" for _, o in outcomes):
            best = float(drawn[K.STOCK_LEFT])
        ev += count * best
    return ev / int(after[K.STOCK_LEFT])


def reference_choose(state, rules, card, params):
    """planner's choice by its definition: one card's expectation for every cell, then in the endgame the
    `roots` best within `margin` of the best compared by the expectation searched one card deeper."""
    loss = params[planner.P_LOSS]
    scored = []
    for c, o in reference_outcomes(state, rules, card):
        if o == "won":
            return c
        after = state.copy()
        K.place(after, rules, c, card)
        if o == "lost":
            scored.append((loss - 1.0, c, None))
        elif state[K.STOCK_LEFT] == 0:
            scored.append((loss, c, None))
        else:
            scored.append((reference_expected(after, rules, params), c, after))
    scored.sort(key=lambda s: (-s[0], s[1]))
    best, choice = scored[0][0], scored[0][1]
    to_open = rules[K.RULE_GRID] ** 2 - state[K.PILES]
    endgame, roots, follow, margin = (params[planner.P_ENDGAME], int(params[planner.P_ROOTS]),
                                      int(params[planner.P_FOLLOW]), params[planner.P_MARGIN])
    if endgame < 0 or to_open > endgame or state[K.STOCK_LEFT] == 0 or len(scored) < 2 or roots < 2:
        return choice
    if scored[1][0] < best - margin:
        return choice
    deeper = [(reference_expected(after, rules, params, follow), c)
              for v, c, after in scored[:roots] if v >= best - margin and after is not None]
    return max(deeper, key=lambda vc: vc[0])[1] if deeper else choice  # the first of equals, as searched


@pytest.mark.parametrize("args", [
    {},
    {"endgame": "0", "roots": "3", "follow": "2"},
    {"endgame": "1", "roots": "4", "follow": "1", "margin": "50"},
    {"endgame": "2", "roots": "2", "follow": "3", "margin": "0.5"},
    {"endgame": "-1"},
    {"endgame": "16", "roots": "3", "follow": "2"},
], ids=["default", "grid-full-only", "wider", "narrower", "off", "every-turn"])
def test_choices_match_the_definition_along_whole_games(args):
    """Every choice of a few of planner's own games against the definition, tried rank by rank on copies."""
    params = policies.build_params("planner", args)
    rules_obj = sim.Rules()
    rules = rules_obj.as_array()
    deeper = 0
    for game in range(5):
        deck = sim.deal(14, game)
        moves = sim.play(deck, "planner", rules_obj, seed=14, game=game, policy_args=args).moves
        state = np.zeros(K.STATE_SIZE, np.int64)
        K.reset(state)
        rng = np.zeros(1, np.uint64)
        for card, cell in zip(deck, moves):
            K.draw(state, card)
            to_open = 16 - state[K.PILES]
            if to_open <= max(params[planner.P_ENDGAME], 1) + 1:  # the endgame and the turns before it
                legal = K.legal_cells(state, rules)
                assert planner.choose(state, rules, np.uint8(card), legal, rng, params) == cell  # a run's card type
                assert reference_choose(state, rules, int(card), params) == cell
                deeper += to_open <= max(params[planner.P_ENDGAME], 0)
            K.place(state, rules, cell, card)
    assert deeper >= 5  # the endgame was reached


@pytest.mark.parametrize("args,fragment", [
    ({"endgame": "x"}, "endgame='x'"),
    ({"endgame": "-2"}, "endgame='-2'"),
    ({"roots": "0"}, "roots='0'"),
    ({"follow": "0"}, "follow='0'"),
    ({"margin": "-1"}, "margin='-1'"),
    ({"margin": "nan"}, "margin='nan'"),
])
def test_bad_search_arguments_are_refused(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        policies.build_params("planner", args)


# --- an interrupted sim train -------------------------------------------------------------------------

SHORT = ("-n", "40", "--rounds", "3", "--seed", "4", "--validation-n", "4", "--loss", "-5", "--bootstrap", "0.5",
         "--decay", "0.5")


def interrupted_in_round_3(monkeypatch, out):
    """`sim train SHORT --out out` stopped by Ctrl-C in round 3 of 3 (in its fit); the result."""
    import sim.analysis.train as training

    fit, fits = training.fit, []

    def ctrl_c_in_round_3(*args):
        fits.append(1)
        if len(fits) == 3:
            raise KeyboardInterrupt
        return fit(*args)

    monkeypatch.setattr(training, "fit", ctrl_c_in_round_3)
    monkeypatch.setattr(sys, "argv", ["sim", "train", *SHORT, "--out", str(out)])  # the command as typed
    r = invoke("train", *SHORT, "--out", out)
    monkeypatch.setattr(training, "fit", fit)
    return r


def test_an_interrupted_training_goes_on_from_its_last_finished_round_to_the_same_file(tmp_path, monkeypatch):
    # Ctrl-C in round 3 of 3 lost rounds 1 and 2: the same command played them all again.
    whole = tmp_path / "whole.json"
    assert invoke("train", *SHORT, "--out", whole, "-q").exit_code == 0
    out = tmp_path / "values.json"
    kept = tmp_path / "values.json.checkpoint"
    r = interrupted_in_round_3(monkeypatch, out)
    assert r.exit_code == 130, r.output
    said = r.stderr.splitlines()[-1]
    assert said == (f"Error: interrupted in round 3 of 3; rounds 1-2 are kept in {kept}. "
                    f"Finish with: sim train {' '.join(SHORT)} --out {out}")
    assert kept.exists() and not out.exists()
    import sim.analysis.train as training

    fit, fits = training.fit, []
    monkeypatch.setattr(training, "fit", lambda *args: fits.append(1) or fit(*args))
    r = invoke("train", *SHORT, "--out", out)
    assert r.exit_code == 0, r.output
    assert len(fits) == 1  # only round 3 is played and fitted
    assert f"going on from {kept}: 2 rounds of 3 done" in r.stderr
    assert [line.split(":")[0] for line in r.stderr.splitlines() if line.startswith("round ")] == [
        "round 1/3", "round 2/3", "round 3/3"]
    assert out.read_bytes() == whole.read_bytes()
    assert not kept.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["values.json", "whole.json"]


def test_a_checkpoint_of_other_settings_is_refused_naming_the_setting(tmp_path, monkeypatch):
    out = tmp_path / "values.json"
    kept = tmp_path / "values.json.checkpoint"
    assert interrupted_in_round_3(monkeypatch, out).exit_code == 130
    body = kept.read_bytes()
    other_seed = [*SHORT[:5], "5", *SHORT[6:]]
    for args, says in ((other_seed, f"Error: --seed 5 differs from the training kept in {kept} (seed 4, 2 of 3 "
                                    "rounds done): run that training's command again to finish it, or delete"),
                       ([*SHORT, "--rule", "max_pile=3"], "Error: --rule max_pile=3 differs from the training kept in "
                                                         f"{kept} (rules max_pile=4, 2 of 3 rounds done)"),
                       ([*SHORT[:6], "--validation-n", "5", *SHORT[8:]], "Error: --validation-n 5 differs")):
        r = invoke("train", *args, "--out", out)
        assert r.exit_code == 2, r.output
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(says), lines
    assert kept.read_bytes() == body and not out.exists()


def test_a_damaged_checkpoint_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "values.json"
    kept = tmp_path / "values.json.checkpoint"
    assert interrupted_in_round_3(monkeypatch, out).exit_code == 130
    doc = json.loads(kept.read_text())
    changed = doc["body"].replace('"round": 2', '"round": 1')
    assert changed != doc["body"]
    for text in (json.dumps({**doc, "body": changed}), kept.read_text()[:100]):
        kept.write_text(text)
        r = invoke("train", *SHORT, "--out", out)
        assert r.exit_code == 1, r.output
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {kept} is damaged: "), lines
        assert lines[0].endswith("; delete it to start the training over"), lines
        assert kept.read_text() == text and not out.exists()
