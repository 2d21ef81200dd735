"""`sim replay --run`: a game of a run as it was played, and a solve run's recorded winning line."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

import sim
from sim.analysis.replay import replay_run
from sim.cli import app
from sim.engine.board import Board
from sim.errors import RunError, UsageError

cli = CliRunner()


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "random"
    r = invoke("run", "--policy", "random", "-n", "12", "--seed", "5", "--rule", "max_face_down=3", "-w", "1",
               "--out", out, "-q")
    assert r.exit_code == 0, r.output
    return out


def test_a_game_of_a_run_replays_as_its_row_says_and_as_the_same_settings_typed_out(random_run):
    rows = sim.load(random_run).collect()
    for game in (0, 7, 11):
        row = rows.row(game, named=True)
        r = replay_run(random_run, game)
        assert (r.end, r.score, len(r.turns)) == (row["end"], row["score"], row["cards_played"])
        assert r.deck == tuple(sim.deal(5, game)) and r.rules == sim.Rules(max_face_down=3)
        typed = invoke("replay", "--seed", 5, "--game", game, "--policy", "random", "--rule", "max_face_down=3")
        from_run = invoke("replay", "--run", random_run, "--game", game)
        assert from_run.exit_code == 0, from_run.output
        assert from_run.stdout == typed.stdout


def test_a_run_of_a_deal_file_replays_the_file_s_deck(tmp_path):
    decks = [list(sim.deal(9, g)) for g in range(3)]
    deals = tmp_path / "deals.jsonl"
    deals.write_text("".join(json.dumps({"deck": d}) + "\n" for d in decks))
    out = tmp_path / "run"
    r = invoke("run", "--policy", "greedy", "-n", "3", "--deals", deals, "-w", "1", "--out", out, "-q")
    assert r.exit_code == 0, r.output
    assert replay_run(out, 2).deck == tuple(decks[2])
    deals.write_text(deals.read_text().replace("\n", "\n\n", 1))  # the same decks, another file
    with pytest.raises(UsageError, match="deal file"):
        replay_run(out, 2)


def test_a_solve_run_replays_its_recorded_winning_line(tmp_path):
    out = tmp_path / "solve"
    r = invoke("solve", "-n", "6", "--node-limit", "300", "-w", "1", "--out", out, "-q")
    assert r.exit_code == 0, r.output
    rows = sim.load(out).collect()
    won = rows.filter(pl.col("outcome") == "won").row(0, named=True)
    r = replay_run(out, won["game"])
    assert [t.cell for t in r.turns] == list(won["moves"]) and (r.end, r.score) == ("win", won["score"])
    board = Board()
    for t in r.turns:
        board.place(t.cell, t.card)
    assert board.piles == 16 and board.face_down_count == 0 and len(r.turns) == 40 - won["score"]
    side = invoke("replay", "--run", out, "--game", won["game"], "--policy", "greedy")
    assert side.exit_code == 0, side.output
    assert side.stdout.count("deck: ") == 2 and "policy: solve node_limit=300" in side.stdout
    assert "policy: greedy" in side.stdout
    open_deal = rows.filter(pl.col("outcome") != "won").row(0, named=True)
    r = invoke("replay", "--run", out, "--game", open_deal["game"])
    assert r.exit_code == 2 and "no winning line recorded" in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_game_that_plays_otherwise_now_is_refused(random_run, monkeypatch):
    # A policy whose code changed since the run (another version of the project) plays another game than the row's.
    import sim.analysis.replay as replaying

    played = replaying.replay
    monkeypatch.setattr(replaying, "replay", lambda deck, policy, *a, **kw: played(deck, "greedy", *a, **kw))
    rows = sim.load(random_run).collect()
    games = [g for g in range(12) if len(played(sim.deal(5, g), "greedy", sim.Rules(max_face_down=3)).turns)
             != rows["cards_played"][g]]
    assert games
    with pytest.raises(RunError, match="plays differently now"):
        replay_run(random_run, games[0])


@pytest.mark.parametrize("args,says", [
    (["--game", "12"], "holds no game 12"),
    (["--seed", "3"], "do not go with --run"),
    (["--seed", "0"], "do not go with --run"),  # 0 is a seed given (the run's is 5), not the option left out
    (["--rule", "grid=3"], "do not go with --run"),
])
def test_replay_run_refuses_what_the_run_does_not_hold_or_already_records(random_run, args, says):
    r = invoke("replay", "--run", random_run, *args)
    assert r.exit_code == 2 and says in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_plugin_s_run_replays_only_with_the_plugin_named_as_a_resume_needs_it(tmp_path, monkeypatch):
    # The manifest names the plugin; replaying it imports that code, which the command line must name (README:
    # "Nothing runs that you did not name"). Named, it is the run's own game, not played a second time beside it.
    (tmp_path / "lowest.py").write_text("def choose(position, card):\n    return position.legal_cells()[0]\n")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    assert invoke("run", "--policy", "lowest.py:choose", "-n", 3, "-w", 1, "--out", out, "-q").exit_code == 0
    r = invoke("replay", "--run", out, "--game", 1)
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1
    assert "is a run of the plugin" in r.stderr and f"--policy {tmp_path / 'lowest.py'}:choose" in r.stderr
    with pytest.raises(UsageError, match="is a run of the plugin"):
        replay_run(out, 1)
    r = invoke("replay", "--run", out, "--game", 1, "--policy", "lowest.py:choose", "--policy", "greedy")
    assert r.exit_code == 0, r.output
    policies = [line for line in r.stdout.splitlines() if line.startswith("policy: ")]
    assert [p.split()[1] for p in policies] == [f"{tmp_path / 'lowest.py'}:choose", "greedy"]


def test_a_game_of_a_run_checks_and_reads_only_the_part_that_holds_it(tmp_path, monkeypatch):
    # One game of a run of many parts: its own part is verified (a changed one is refused), the others are not
    # read at all, so the replay costs the same whatever the run's size.
    from sim.jobs import runner

    out = tmp_path / "greedy"
    sim.run(sim.RunConfig(policy="greedy", n=60, seed=3), workers=1, chunk_size=10, out=out)
    checked = []
    real = runner._part_problem
    monkeypatch.setattr(runner, "_part_problem", lambda path, *args: checked.append(path.name) or real(path, *args))
    r = replay_run(out, 57)
    assert checked == ["part-00005.parquet"] and (r.seed, r.game) == (3, 57)
    (out / "games" / "part-00005.parquet").write_bytes(b"not a part")
    with pytest.raises(RunError, match="part-00005.parquet"):
        replay_run(out, 57)
    with pytest.raises(UsageError, match="holds no game 60"):
        replay_run(out, 60)


def test_a_game_an_incomplete_run_has_not_played_yet_names_the_games_it_holds(tmp_path):
    # It said "holds no game 39 (games 0..39, incomplete: only its finished parts)" when only games 0..9 were
    # played: the range of the whole run, as if game 39 were in it.
    out = tmp_path / "greedy"
    sim.run(sim.RunConfig(policy="greedy", n=60, seed=3), workers=1, chunk_size=10, out=out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = "incomplete"
    for name in ("part-00002.parquet", "part-00005.parquet"):  # as an interruption leaves them: not listed
        for key in ("parts", "part_info"):
            manifest[key].pop(name)
        (out / "games" / name).unlink()
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert replay_run(out, 12).game == 12
    r = invoke("replay", "--run", out, "--game", 25)
    assert r.exit_code == 2 and r.stderr == (f"Error: {out} holds no game 25 yet: the run is incomplete, and of its "
                                             f"games 0..59 the parts it lists hold 0..19, 30..49; finish it with "
                                             f"--resume\n")
    with pytest.raises(UsageError, match=r"holds no game 60 \(games 0\.\.59\)$"):
        replay_run(out, 60)
    manifest["parts"], manifest["part_info"] = {}, {}
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="the run is incomplete, .* the parts it lists hold none; finish it with"):
        replay_run(out, 0)
    # A manifest that says complete but lists none of its parts (hand-edited) said "holds no game 5 (games 0..59)".
    (out / "manifest.json").write_text(json.dumps({**manifest, "status": "complete"}))
    with pytest.raises(UsageError, match="the run is complete, its manifest says, and of its games 0..59 the parts "
                                         "it lists hold none; finish it with --resume$"):
        replay_run(out, 5)
