"""planner: its learned values file, its training (deterministic), its play, and `sim train`."""

import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

import policies
import policies.planner as planner
import sim
from sim.analysis.train import train
from sim.cli import app

cli = CliRunner()


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


def permuted_after(deck, t, rng):
    rest = list(deck[t + 1:])
    rng.shuffle(rest)
    return list(deck[: t + 1]) + rest


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
    assert p[planner.P_LOSS] == -2.0
    assert np.array_equal(p[planner.P_BIAS:planner.P_BIAS + planner.N_BUCKETS], w[:planner.N_BUCKETS])
    assert np.array_equal(p[planner.P_SLOPE:planner.P_HEURISTIC], w[planner.N_BUCKETS:2 * planner.N_BUCKETS])
    k = len(planner.LINE_FEATURES)
    for g in range(planner.N_GROUPS):
        row = p[planner.P_HEURISTIC + g * planner.N_HEURISTIC: planner.P_HEURISTIC + (g + 1) * planner.N_HEURISTIC]
        named = dict(zip(policies.heuristic.FEATURES, row))
        for j, f in enumerate(planner.LINE_FEATURES):
            assert named[f] == w[2 * planner.N_BUCKETS + g * k + j]
        assert named["face_down"] == 0 and named["to_open"] == 0  # in the buckets instead


# --- play -------------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(game=st.integers(0, 10_000), shuffle=st.integers(0, 2**32 - 1), at=st.floats(0, 1))
def test_permuting_the_unseen_stock_never_changes_its_choice(game, shuffle, at):
    deck = sim.deal(31, game)
    base = sim.play(deck, "planner", seed=31, game=game)
    t = int(at * (min(base.cards_played, 39) - 1))
    other = sim.play(permuted_after(deck, t, random.Random(shuffle)), "planner", seed=31, game=game)
    assert other.moves[: t + 1] == base.moves[: t + 1]


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


# --- sim train ----------------------------------------------------------------------------------


def test_sim_train_help_has_an_example():
    r = invoke("train", "-h")
    assert r.exit_code == 0, r.output
    assert "Example: sim train" in r.stdout


@pytest.mark.parametrize("args,fragment", [
    (["train", "-n", "ten"], "'ten'"),
    (["train", "-n", "5", "--seed", "3", "--validation-seed", "3"], "differ"),
    (["train", "-n", "5", "--ridge", "0"], "--ridge"),
    (["train", "-n", "5", "--explore", "2"], "explore must be in 0..1"),
    (["train", "-n", "5", "--loss", "3"], "loss must be a number <= 0"),
    (["train", "-n", "5", "--decay", "0"], "decay"),
])
def test_sim_train_bad_arguments_are_a_one_line_error(args, fragment):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), r.stderr
    assert fragment in lines[0]


def test_sim_train_writes_a_values_file_planner_plays(tmp_path):
    out = tmp_path / "values.json"
    r = invoke("train", "-n", "30", "--rounds", "1", "--seed", "7", "--validation-n", "10", "--out", out)
    assert r.exit_code == 0, r.output
    assert "held-out seed 8" in r.stdout and "mean score per deal" in r.stdout
    data = json.loads(out.read_text())
    assert data["settings"]["seed"] == 7
    cols = sim.play_range(1, 0, 3, "planner", policy_args={"values": str(out)})
    assert len(cols) == 3
    again = tmp_path / "again.json"
    r = invoke("train", "-n", "30", "--rounds", "1", "--seed", "7", "--validation-n", "10", "--out", again, "-q")
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == out.read_bytes()  # the same file bit for bit
