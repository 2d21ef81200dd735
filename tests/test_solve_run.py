"""`sim solve` (a job of sim.jobs.runner), `sim report` on it, and the oracle policy."""

import json
import re

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import sim
from sim.cli import app
from sim.jobs import runner

from test_solver import replay

NODES = 20_000
COLUMNS = ["game", "outcome", "score", "proven_best", "nodes", "seconds", "moves", "score_bound"]


def test_rows_are_the_solver_s_results_whatever_the_workers_and_chunks(tmp_path, read_games):
    config = sim.SolveConfig(n=60, seed=4, node_limit=NODES)
    a = sim.solve_run(config, workers=2, chunk_size=7, out=tmp_path / "a")
    b = sim.solve_run(config, workers=1, chunk_size=25, out=tmp_path / "b")
    ra, rb = read_games(a.path), read_games(b.path)
    assert ra.columns == COLUMNS
    assert ra.schema["outcome"] == pl.Enum(["won", "lost", "unresolved"])
    assert ra.schema["score"] == pl.UInt8 and ra.schema["moves"] == pl.List(pl.UInt8)
    assert ra.drop("seconds").equals(rb.drop("seconds"))  # a node limit makes rows reproducible
    assert ra["game"].to_list() == list(range(60))
    for g in (0, 17, 59):
        r = sim.solve(sim.deal(4, g), node_limit=NODES)
        row = ra.row(g, named=True)
        assert (row["outcome"], row["score"], row["proven_best"], row["nodes"], row["score_bound"]) == (
            r.outcome, r.score, r.proven_best, r.nodes, r.score_bound)
        assert row["moves"] == (None if r.moves is None else list(r.moves))
    # a won row's line wins in the engine with its score; the others have no score nor line
    for row in ra.iter_rows(named=True):
        if row["outcome"] != "lost":
            assert row["score_bound"] is not None and row["score_bound"] <= 24
        if row["outcome"] == "won":
            assert row["score"] <= row["score_bound"] and (row["score"] == row["score_bound"]) == row["proven_best"]
            assert replay(sim.deal(4, row["game"]), row["moves"]) == (True, row["score"])
        else:
            assert row["score"] is None and row["moves"] is None
    m = json.loads((a.path / "manifest.json").read_text())
    assert m["kind"] == "solve" and m["solve"] == {"first_win": False, "node_limit": NODES, "time_limit": None,
                                                 "split_after": sim.solver.solver.SPLIT_AFTER,
                                                 "sat_conflicts": sim.solver.solver.SAT_CONFLICTS}
    assert m["status"] == "complete" and sum(m["parts"].values()) == 60
    assert a.deals == 60 and a.won + a.lost + a.unresolved == 60
    text = a.text()
    assert "winnable" in text and "proven best" in text and "95% CI" in text


def test_resume_solves_only_the_missing_parts(tmp_path, read_games):
    s = sim.solve_run(sim.SolveConfig(n=40, seed=2, first_win=True, node_limit=NODES), workers=2, chunk_size=10,
                      out=tmp_path / "r")
    before = read_games(s.path)
    (s.path / "games" / "part-00002.parquet").unlink()
    again = sim.resume(s.path, workers=1)
    assert again.deals == 40 and again.status == "complete"
    assert read_games(s.path).drop("seconds").equals(before.drop("seconds"))
    m = json.loads((s.path / "manifest.json").read_text())
    assert len(m["sessions"]) == 2 and m["sessions"][1]["games"] == 10


def test_summary_brackets_unresolved_deals(tmp_path, read_games):
    # one node: greedy's game only
    s = sim.solve_run(sim.SolveConfig(n=30, seed=1, node_limit=1), workers=1, out=tmp_path / "u")
    df = read_games(s.path)
    won = int((df["outcome"] == "won").sum())
    assert s.unresolved == 30 - won and s.lost == 0
    low, _ = sim.stats.wilson(won, 30)
    _, high = sim.stats.wilson(30, 30)
    assert s.winnable_low == pytest.approx(low) and s.winnable_high == pytest.approx(high)
    # every deal greedy wins is won, with greedy's score at least
    games = sim.play_range(1, 0, 30, "greedy")
    assert set(np.flatnonzero(games.won)) <= set(np.flatnonzero(df["outcome"] == "won"))
    for g in np.flatnonzero(games.won):
        assert df["score"][int(g)] >= games.score[g]


def test_report_of_several_solve_runs_gives_an_overview_and_their_pairs(tmp_path):
    # They were printed one after the other, with neither the overview nor the pairs `sim report --help` promises
    # for several runs (the JSON held only "solve_runs").
    cli = CliRunner()
    small, large, other = tmp_path / "small", tmp_path / "large", tmp_path / "other"
    for out, config in ((small, sim.SolveConfig(n=12, node_limit=300)), (large, sim.SolveConfig(n=12, node_limit=30_000)),
                        (other, sim.SolveConfig(n=12, seed=4, node_limit=300))):
        sim.solve_run(config, out=out, workers=1)
    summaries = [sim.solve_run(sim.SolveConfig(n=12, node_limit=k), out=o, workers=1) for k, o in
                 ((300, small), (30_000, large))]
    r = cli.invoke(app, ["report", str(small), str(large)])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "Solve runs"
    for s, out in zip(summaries, (small, large)):
        row = next(line.split() for line in lines if line.startswith(out.name + " "))
        assert row[2:6] == [str(s.deals), str(s.won), str(s.lost), str(s.unresolved)]
        assert row[-2:] == [str(s.proven), "complete"]
    assert "Paired comparison on the same 12 deals" in r.stdout and "node_limit=300  node_limit=30000" in r.stdout
    assert r.stdout.count("(sim solve)") == 2  # each run's own report follows
    js = json.loads(cli.invoke(app, ["report", str(small), str(large), "-f", "json"]).stdout)
    assert [s["deals"] for s in js["solve_runs"]] == [12, 12] and "unpaired" not in js
    pair = js["comparison"]["pairs"][0]
    assert (pair["wins_a"], pair["wins_b"]) == (summaries[0].won, summaries[1].won)
    apart = cli.invoke(app, ["report", str(small), str(other), "-f", "json"])
    assert "comparison" not in json.loads(apart.stdout) and "seed" in json.loads(apart.stdout)["unpaired"]
    page = tmp_path / "page.html"
    assert cli.invoke(app, ["report", str(small), str(large), "--html", str(page), "-q"]).exit_code == 0
    assert "Solve runs" in page.read_text() and "Paired comparison" in page.read_text()


def test_cli_solve_report_and_errors(tmp_path):
    cli = CliRunner()
    out = tmp_path / "c"
    r = cli.invoke(app, ["solve", "-n", "25", "--node-limit", "2e4", "--out", str(out), "-w", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert "winnable" in r.stdout and str(out) in r.stdout
    rep = cli.invoke(app, ["report", str(out)])
    assert rep.exit_code == 0, rep.output
    assert "sim solve" in rep.stdout and "proven" in rep.stdout
    js = cli.invoke(app, ["report", str(out), "--format", "json"])
    assert json.loads(js.stdout)["solve_runs"][0]["deals"] == 25
    again = cli.invoke(app, ["solve", "-n", "25", "--out", str(out), "-q"])
    assert again.exit_code == 2 and "(node_limit 20000, not none); use --force" in again.output
    resumed = cli.invoke(app, ["solve", "--resume", str(out), "-q"])
    assert resumed.exit_code == 0 and "winnable" in resumed.stdout
    for bad in (["-n", "0"], ["-n", "5", "--node-limit", "x"], ["-n", "5", "--time-limit", "-1"], [],
                ["-n", "5", "--sat-conflicts", "-1"], ["-n", "5", "--sat-conflicts", "many"]):
        r = cli.invoke(app, ["solve", *bad, "--out", str(tmp_path / "bad"), "-q"])
        assert r.exit_code == 2, (bad, r.output)


def test_counts_above_1e12_are_refused_before_a_run_is_named(tmp_path, monkeypatch):
    # --node-limit 1e99 used to run, in results/solve-seed0-n5-node_limit9999...056 (100 digits).
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    for flag, value in (("--node-limit", "1e99"), ("--split-after", "1e30"), ("--sat-conflicts", "1e30"),
                        ("--node-limit", "1000000000001"), ("--node-limit", "1" + "0" * 400)):
        r = cli.invoke(app, ["solve", "-n", "5", flag, value, "-q"])
        assert r.exit_code == 2, (flag, value, r.output)
        assert r.output.startswith(f"Error: {flag} must be at most 1e12, not ") and r.output.count("\n") == 1
    assert not (tmp_path / "results").exists()
    with pytest.raises(ValueError, match="at most 1e12"):
        sim.solve(sim.deal(0, 0), node_limit=10**12 + 1)
    ok = cli.invoke(app, ["solve", "-n", "1", "--node-limit", "1e12", "--split-after", "1e12", "-w", "1", "-q"])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "results" / "solve-seed0-n1-node_limit1000000000000-split_after1000000000000").is_dir()


def test_sat_questions_are_on_by_default_in_best_score_mode_only():
    # The manifest records the budget only where questions are asked, so runs without them (first-win
    # runs, --sat-conflicts 0, runs from before SAT) keep their options; the name says a non-default one.
    from sim.jobs.solve import config_from_manifest, default_out
    from sim.solver.solver import SAT_CONFLICTS

    best, none = sim.SolveConfig(n=10), sim.SolveConfig(n=10, sat_conflicts=0)
    first = sim.SolveConfig(n=10, first_win=True)
    assert best.options()["sat_conflicts"] == SAT_CONFLICTS and default_out(best).name == "solve-seed0-n10"
    assert "sat_conflicts" not in none.options() and default_out(none).name == "solve-seed0-n10-sat0"
    assert "sat_conflicts" not in first.options() and default_out(first).name == "solve-seed0-n10-first-win"
    assert default_out(sim.SolveConfig(n=10, sat_conflicts=5000)).name == "solve-seed0-n10-sat5000"
    old = {"n": 10, "seed": 0, "rules": sim.Rules().as_dict(),
           "solve": {"first_win": False, "node_limit": None, "time_limit": None, "split_after": 8_000_000}}
    assert config_from_manifest(old).sat_budget() == 0


def test_oracle_policy_rows_replay_and_beat_greedy(tmp_path, read_games):
    s = sim.run(sim.RunConfig(policy="oracle", n=80, seed=3, policy_args=(("nodes", "20000"),)), workers=2,
                out=tmp_path / "o")
    g = sim.run(sim.RunConfig(policy="greedy", n=80, seed=3), workers=2, out=tmp_path / "g")
    o_rows = read_games(s.path)
    g_rows = read_games(g.path)
    assert o_rows.columns == g_rows.columns
    assert (o_rows["won"] | ~g_rows["won"]).all()  # never loses a deal greedy wins
    both = o_rows["won"] & g_rows["won"]
    assert (o_rows.filter(both)["score"] >= g_rows.filter(both)["score"]).all()
    for i in (0, 41, 79):
        r = sim.play(sim.deal(3, i), "oracle", policy_args={"nodes": "20000"})
        row = o_rows.row(i, named=True)
        assert (row["won"], row["score"], row["cards_played"], row["face_down"], row["piles"], row["end"]) == (
            r.won, r.score, r.cards_played, r.face_down, r.piles, r.end)
        if r.won:  # the game is the solver's line, replayed through the engine
            line = sim.solve(sim.deal(3, i), node_limit=20_000)
            assert r.moves == line.moves and r.score == line.score
    m = json.loads((s.path / "manifest.json").read_text())
    assert m["kind"] == "run" and m["policy"] == "oracle" and m["policy_args"] == {"nodes": "20000"}
    with pytest.raises(runner.UsageError):
        sim.run(sim.RunConfig(policy="oracle", n=5, policy_args=(("depth", "3"),)), out=tmp_path / "bad")
    listing = CliRunner().invoke(app, ["policies"])
    assert "oracle" in listing.stdout and "SEES THE STOCK" in listing.stdout


@pytest.mark.slow
def test_sigterm_leaves_a_resumable_solve_and_says_how(tmp_path, read_games):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "s"
    args = ["-m", "sim", "solve", "-n", "3000", "--node-limit", "20000", "--chunk-size", "20", "-w", "2", "-q"]
    proc = subprocess.Popen([sys.executable, *args, "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if len(list((out / "games").glob("part-*.parquet"))) >= 2:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"sim solve --resume {out}" in err and "Traceback" not in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
    r = CliRunner().invoke(app, ["report", str(out)])
    assert r.exit_code == 0 and f"WARNING: the run is incomplete; finish it with: sim solve --resume {out}\n" in r.stdout
    done = {p.name for p in (out / "games").glob("part-*.parquet")}
    s = sim.resume(out, workers=2)
    assert s.status == "complete" and s.deals == 3000
    ref = read_games(out).filter(pl.col("game") < 40)
    assert ref.drop("seconds").equals(read_games(sim.solve_run(sim.SolveConfig(n=40, node_limit=20_000), workers=1,
                                                               chunk_size=40, out=tmp_path / "ref").path)
                                      .drop("seconds"))
    assert done  # some parts were kept through the interruption


@pytest.mark.parametrize("field,value", [("node_limit", 2.5), ("node_limit", "5"), ("node_limit", 0),
                                         ("sat_conflicts", -1), ("sat_conflicts", 1.5)])
def test_solver_limits_must_be_whole_numbers(tmp_path, field, value):
    # A fractional limit would be rounded somewhere in a worker (a row's nodes above its limit): refused first.
    with pytest.raises(runner.UsageError, match=f"{field} must be a"):
        sim.solve_run(sim.SolveConfig(n=2, **{field: value}), out=tmp_path / "x", workers=1)
    assert not (tmp_path / "x").exists()
    if field == "node_limit" and value != 0:
        with pytest.raises(ValueError, match="node_limit must be a positive integer"):
            sim.solve(sim.deal(0, 0), node_limit=value)


def test_numpy_integers_are_taken_as_seeds_and_counts(tmp_path, read_games):
    a = sim.run(sim.RunConfig(n=np.int64(50), seed=np.uint64(5)), out=tmp_path / "a", workers=1)
    b = sim.run(sim.RunConfig(n=50, seed=5), out=tmp_path / "b", workers=1)
    assert read_games(a.path).equals(read_games(b.path))
    assert json.loads((a.path / "manifest.json").read_text())["seed"] == 5
    cols = sim.play_range(np.uint64(5), np.int64(0), np.uint64(50))
    assert np.array_equal(cols.won, read_games(b.path)["won"].to_numpy())
    with pytest.raises(ValueError, match="whole numbers"):
        sim.play_range(5, 0, 50.0)


def test_sat_conflicts_with_first_win_is_a_usage_error(tmp_path):
    cli = CliRunner()
    r = cli.invoke(app, ["solve", "-n", "3", "--first-win", "--sat-conflicts", "5", "-w", "1", "--out", str(tmp_path / "s")])
    assert r.exit_code == 2 and "--first-win stops at the first win and asks no SAT question" in r.output
    assert not (tmp_path / "s").exists()
    done = cli.invoke(app, ["solve", "-n", "2", "--node-limit", "100", "-w", "1", "-q", "--out", str(tmp_path / "d")])
    again = cli.invoke(app, ["solve", "-n", "2", "--node-limit", "100", "-w", "1", "--out", str(tmp_path / "d")])
    assert done.exit_code == 0 and again.exit_code == 0 and "nothing was solved" in again.stderr, again.output


def test_the_summary_names_the_sat_budget_when_the_node_limit_lets_the_questions_be_asked(tmp_path):
    # The questions come once the search has used SAT_AFTER nodes: a node limit of exactly that many asks
    # them (deal 7's best found goes from 22 to 23), so the summary's settings line must say so; one node
    # fewer asks none, and the line leaves the budget out.
    from sim.jobs.solve_results import SolveSummary
    from sim.solver.solver import SAT_AFTER, SAT_CONFLICTS

    deck = sim.deal(0, 7)
    asked = sim.solve(deck, node_limit=SAT_AFTER, split_after=0)
    alone = sim.solve(deck, node_limit=SAT_AFTER, split_after=0, sat_conflicts=0)
    assert asked.score > alone.score

    def header(node_limit):
        options = {"first_win": False, "node_limit": node_limit, "time_limit": None, "split_after": 8_000_000,
                   "sat_conflicts": SAT_CONFLICTS}
        s = SolveSummary(path=tmp_path, deals=1, won=1, lost=0, unresolved=0, winnable_low=0.0, winnable_high=1.0,
                         proven=0, score_counts=((23, 1, 0),), mean_score=23.0, mean_proven=None, mean_bound=24.0,
                         median_seconds=None, p99_seconds=None, median_nodes=None, p99_nodes=None, seconds=1.0,
                         deals_per_s=1.0, status="complete", options=options)
        return s.lines()[0]

    assert header(SAT_AFTER).endswith(f"(best score; node limit {SAT_AFTER}, sat conflicts {SAT_CONFLICTS})")
    assert header(SAT_AFTER - 1).endswith(f"(best score; node limit {SAT_AFTER - 1})")


@pytest.mark.parametrize("text,message", [("1e13", "nodes must be at most 1e12, not 10000000000000"),
                                          ("99999999999999999999999", "nodes must be at most 1e12, not 1e+23"),
                                          ("0", "nodes='0' is not a positive integer")])
def test_the_oracle_s_nodes_beyond_its_bound_are_said_to_be_too_many(text, message):
    # 1e13 was called "not a positive integer", which it is: the bound (1e12, as sim solve's) was not said.
    with pytest.raises(ValueError, match=f"^policy 'oracle': {re.escape(message)}$"):
        sim.play(sim.deal(0, 0), "oracle", policy_args={"nodes": text})


def test_a_seed_is_refused_with_a_deal_file_which_the_solver_plays_without_one(tmp_path):
    # `sim solve --deals F --seed 5` then `sim solve --deals F` went to one folder (its name has no seed) and the
    # second was refused as "another complete run (seed 5, not 0)", though the decks and results were the same.
    path = tmp_path / "decks.jsonl"
    path.write_text(json.dumps({"deck": [int(c) for c in sim.deal(3, 0)]}) + "\n")
    r = CliRunner().invoke(app, ["solve", "--deals", str(path), "--seed", "5", "--node-limit", "1000", "-w", "1",
                                 "--out", str(tmp_path / "s")])
    assert r.exit_code == 2, r.output
    assert "seed 5: a solve of the decks in a deal file uses no seed" in r.stderr and not (tmp_path / "s").exists()
    with pytest.raises(sim.UsageError, match="uses no seed"):
        sim.solve_run(sim.SolveConfig(seed=5, deals=str(path), node_limit=1000), workers=1, out=tmp_path / "t")
    done = sim.solve_run(sim.SolveConfig(seed=0, deals=str(path), node_limit=1000), workers=1, out=tmp_path / "u")
    assert done.deals == 1


@pytest.mark.parametrize("kind", ["run", "solve"])
def test_an_interrupt_while_compiling_says_what_was_not_done_in_the_jobs_words(tmp_path, monkeypatch, kind):
    # A solve run stopped while its solver compiles has solved no deal; it used to say no game was played.
    from dataclasses import replace

    from sim.jobs.play import PLAY
    from sim.jobs.solve import SOLVE, SolveConfig

    def compiling(config, from_file):
        raise KeyboardInterrupt

    job, config = (PLAY, sim.RunConfig(n=10)) if kind == "run" else (SOLVE, SolveConfig(n=10, node_limit=1000))
    out = tmp_path / kind
    with pytest.raises(runner.Interrupted) as e:
        runner.start(replace(job, warm=compiling), config, out=out, workers=1)
    said = "any game was played" if kind == "run" else "any deal was solved"
    assert str(e.value) == f"interrupted before {said}. Finish with: sim {kind} --resume {out}"
