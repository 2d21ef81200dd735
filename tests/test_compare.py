"""`sim compare` and `sim sweep`: same decks, paired counts equal to a direct join, refusals, sweeps."""

import dataclasses
import io
import json
import math
import sys
from fractions import Fraction

import polars as pl
import pytest
from PIL import Image
from typer.testing import CliRunner

import sim
from sim.analysis.compare import compare_runs
from sim.analysis.sweep import combinations, parse_sweep_options
from sim.cli import app
from sim.jobs.runner import UsageError

cli = CliRunner()
N = 2000


def exact_mcnemar(b, c):
    m = b + c
    return float(min(1, 2 * sum(Fraction(math.comb(m, k), 2 ** m) for k in range(min(b, c) + 1))))


def joined_counts(games, a_dir, b_dir) -> dict:
    """The paired 2x2 table and the score difference over games both won, from an independent polars join.

    `games` reads a run directory's rows (the read_games fixture).
    """
    j = games(a_dir).join(games(b_dir), on="game", suffix="_b")
    both = j.filter(pl.col("won") & pl.col("won_b"))
    return {
        "games": j.height,
        "wins_a": j["won"].sum(),
        "wins_b": j["won_b"].sum(),
        "both": both.height,
        "a_only": j.filter(pl.col("won") & ~pl.col("won_b")).height,
        "b_only": j.filter(~pl.col("won") & pl.col("won_b")).height,
        "score_diff": (both["score"].cast(pl.Int32) - both["score_b"].cast(pl.Int32)).mean() if both.height else None,
    }


@pytest.mark.slow
def test_compare_policies_plays_the_same_decks_and_pairs_them(tmp_path, monkeypatch, read_games):
    monkeypatch.chdir(tmp_path)
    args = ["compare", "--policy", "greedy", "--policy", "random", "-n", str(N), "--seed", "5", "-w", "2", "-q",
            "--record-deals", "--format", "json"]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    a, b = tmp_path / "results" / f"greedy-seed5-n{N}", tmp_path / "results" / f"random-seed5-n{N}"
    ga, gb = read_games(a), read_games(b)
    assert ga.height == gb.height == N
    decks = ga.select("game", "deck").join(gb.select("game", "deck"), on="game", suffix="_b")
    assert decks.height == N and (decks["deck"] == decks["deck_b"]).all()
    assert decks.filter(pl.col("game") == 7)["deck"].to_list()[0] == list(sim.deal(5, 7))
    data = json.loads(res.stdout)
    assert [arm["label"] for arm in data["arms"]] == ["greedy", "random"]
    (pair,) = data["pairs"]
    expected = joined_counts(read_games, a, b)
    assert {k: pair[k] for k in ("games", "wins_a", "wins_b", "both", "a_only", "b_only")} == {
        k: expected[k] for k in ("games", "wins_a", "wins_b", "both", "a_only", "b_only")}
    assert pair["diff"] == pytest.approx((expected["a_only"] - expected["b_only"]) / N)
    assert pair["diff_low"] < pair["diff"] < pair["diff_high"]
    assert data["differs"] == ["policy"]

    # again: the complete runs with the same settings are reused, said on stderr (stdout is the result)
    again = cli.invoke(app, [a for a in args[:-2] if a != "-q"])  # -q would leave the notices out
    assert again.exit_code == 0, again.output
    assert "reusing results/greedy-seed5-n2000" in again.stderr and "differ in: policy" in again.stdout
    assert "reuse" not in again.stdout
    assert "McNemar p" in again.stdout and f"{expected['wins_a']:,}" in again.stdout
    # a run with other settings in the way is refused, not silently replaced
    other = cli.invoke(app, ["compare", "--policy", "greedy", "--policy", "random", "-n", str(N), "--seed", "5", "-q",
                             "-w", "2"])
    assert other.exit_code == 0  # no --record-deals asked: the runs with decks still fit
    refused = cli.invoke(app, ["compare", "--policy", "greedy", "--policy", "greedy", "-n", str(N), "-q"])
    assert refused.exit_code == 2 and "twice" in refused.stderr


@pytest.mark.parametrize("args,says", [
    (["compare", "--policy", "greedy", "--policy", "random", "-n", "100", "--executor", "xyz"],
     "Error: unknown executor 'xyz'; executors: local, dask"),
    (["sweep", "--rule", "grid=3,4", "-n", "100", "--executor", "xyz"],
     "Error: unknown executor 'xyz'; executors: local, dask"),
    (["sweep", "--rule", "grid=3,4", "-n", "100", "--scheduler", "tcp://127.0.0.1:8786"],
     "Error: --scheduler goes with --executor dask"),
    (["compare", "a", "b", "--executor", "dask"], "Error: -n, --seed, --rule, --policy-arg, --workers, --force, "
     "--record-deals, --executor and --scheduler go with --policy, not with run directories"),
])
def test_where_compare_and_sweep_play_is_checked_before_any_run(tmp_path, monkeypatch, args, says):
    # An unknown executor was found only by the first run played (after its "playing ..." notice), and never when
    # every run was reused.
    monkeypatch.chdir(tmp_path)
    r = cli.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines() == [says]
    assert not (tmp_path / "results").exists()


def test_compare_existing_runs_of_two_rule_settings(tmp_path, read_games):
    a = sim.run(sim.RunConfig(policy="greedy", n=N, seed=2), workers=2, out=tmp_path / "a").path
    b = sim.run(sim.RunConfig(policy="greedy", n=N, seed=2, rules=sim.Rules(max_pile=3)), workers=2,
                out=tmp_path / "b").path
    expected = joined_counts(read_games, a, b)
    assert expected["a_only"] > 0 and expected["b_only"] > 0  # discordant both ways: a real paired test
    c = compare_runs([a, b])
    (p,) = c.pairs
    assert (p.games, p.wins_a, p.wins_b, p.both, p.a_only, p.b_only) == tuple(
        expected[k] for k in ("games", "wins_a", "wins_b", "both", "a_only", "b_only"))
    assert p.p_value == pytest.approx(exact_mcnemar(p.a_only, p.b_only), rel=1e-9)
    assert p.score_diff == pytest.approx(expected["score_diff"])
    assert p.score_diff_low < p.score_diff < p.score_diff_high
    assert c.differs == ("rule max_pile",) and [arm.label for arm in c.arms] == ["max_pile=4", "max_pile=3"]
    res = cli.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert "the runs differ in: rule max_pile" in res.stdout
    assert f"{p.a_only:,}" in res.stdout and f"{p.b_only:,}" in res.stdout


def test_runs_of_different_sizes_pair_on_the_deals_both_played(tmp_path, read_games):
    # A slow policy on fewer deals: each run's own figures over all its games, each pair over the
    # first min(n) deals, every count equal to a direct join of the rows.
    a = sim.run(sim.RunConfig(policy="heuristic", n=900, seed=4), workers=1, out=tmp_path / "a").path
    b = sim.run(sim.RunConfig(policy="greedy", n=600, seed=4), workers=2, out=tmp_path / "b").path
    c = sim.run(sim.RunConfig(policy="random", n=900, seed=4), workers=1, out=tmp_path / "c").path
    cmp = compare_runs([a, b, c])
    assert not cmp.same_size and cmp.n == 600
    assert "heuristic 900, greedy 600, random 900" in cmp.header()
    for arm, path, n in zip(cmp.arms, (a, b, c), (900, 600, 900)):
        rows = read_games(path)
        assert arm.games == rows.height == n and arm.wins == rows["won"].sum()
        assert arm.score_per_deal == pytest.approx(rows["score"].fill_null(0).cast(pl.Int64).sum() / n)
        # The mean score is of the games won (a lost game has none): None when none was won.
        assert arm.mean_score == (pytest.approx(rows["score"].mean()) if arm.wins else None)
        assert arm.games_per_core_s > 0
    by_pair = {(p.a, p.b): p for p in cmp.pairs}
    for (x, y), games in ((("heuristic", "greedy"), 600), (("heuristic", "random"), 900), (("greedy", "random"), 600)):
        path = {"heuristic": a, "greedy": b, "random": c}
        expected = joined_counts(lambda d: read_games(d).filter(pl.col("game") < games), path[x], path[y])
        p = by_pair[(x, y)]
        assert (p.games, p.wins_a, p.wins_b, p.both, p.a_only, p.b_only) == tuple(
            expected[k] for k in ("games", "wins_a", "wins_b", "both", "a_only", "b_only"))
    res = cli.invoke(app, ["compare", str(a), str(b), str(c), "--png", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    assert "score per deal" in res.stdout and "runs of different sizes" in res.stdout
    assert Image.open(tmp_path / "figs" / "frontier.png").size[0] > 300


def test_compare_refuses_runs_that_do_not_share_the_deals(tmp_path):
    a = sim.run(sim.RunConfig(policy="greedy", n=300, seed=1), workers=1, out=tmp_path / "a").path
    b = sim.run(sim.RunConfig(policy="greedy", n=400, seed=2), workers=1, out=tmp_path / "b").path
    res = cli.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("Error:") and "seed (a: 1, b: 2)" in line
    assert "deal source (" not in line and "n (" not in line
    deal_file = tmp_path / "decks.parquet"
    pl.DataFrame({"deck": [list(sim.deal(1, i)) for i in range(300)]}).write_parquet(deal_file)
    f = sim.run(sim.RunConfig(policy="greedy", n=300, seed=1, deals=str(deal_file)), workers=1, out=tmp_path / "f").path
    res = cli.invoke(app, ["compare", str(a), str(f)])
    assert res.exit_code == 2 and "deal source (a: splitmix64" in res.stderr and "seed (" not in res.stderr
    c = sim.run(sim.RunConfig(policy="random", n=300, seed=1), workers=1, out=tmp_path / "c").path
    manifest = json.loads((c / "manifest.json").read_text())
    manifest["status"] = "incomplete"
    (c / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="incomplete"):
        compare_runs([a, c])
    for args in (["compare", str(a)], ["compare"], ["compare", str(a), str(c), "--policy", "greedy"]):
        assert cli.invoke(app, args).exit_code == 2


def test_a_run_whose_manifest_says_complete_but_lists_fewer_parts_is_not_paired(tmp_path):
    # Its games are not all there: the join looked for them half a million games at a time over all of its n, so
    # a manifest saying n 1e12 (its parts' metadata saying so too) kept compare busy for hours before any word.
    import hashlib

    from sim.jobs import runner
    from sim.jobs.play import PLAY, config_from_manifest

    runs = []
    for name in ("a", "b"):
        out = sim.run(sim.RunConfig(n=200), workers=1, out=tmp_path / name, chunk_size=100).path
        m = json.loads((out / "manifest.json").read_text())
        m.update(n=10**12, chunk_size=20_000)
        for part in (out / "games").iterdir():
            part.unlink()
        part = out / "games" / "part-00000.parquet"
        meta = {**runner.part_metadata(PLAY, config_from_manifest(m), out), "foursquare_sim.part": "0"}
        sim.play_range(seed=0, start=0, stop=20_000, policy="greedy").to_polars().write_parquet(part, metadata=meta)
        digest = hashlib.sha256(part.read_bytes()).hexdigest()
        m["parts"] = {part.name: 20_000}
        m["part_info"] = {part.name: {"rows": 20_000, "first": 0, "last": 19_999, "sha256": digest}}
        (out / "manifest.json").write_text(json.dumps(m))
        runs.append(str(out))
    res = cli.invoke(app, ["compare", *runs])
    assert res.exit_code == 2, res.output
    assert f"Error: {runs[0]} is incomplete; finish it with: sim run --resume {runs[0]}" in res.stderr


@pytest.mark.slow
def test_sweep_runs_every_combination_on_the_same_deals(tmp_path, monkeypatch, read_games):
    monkeypatch.chdir(tmp_path)
    res = cli.invoke(app, ["sweep", "--policy", "greedy", "-n", str(N), "--seed", "3", "-w", "2", "-q",
                           "--rule", "max_face_down=3,5", "--rule", "max_pile=3,4", "--record-deals",
                           "--format", "json", "--png", str(tmp_path / "figs"), "--html", str(tmp_path / "sweep.html")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    got = [(row["max_face_down"], row["max_pile"]) for row in data["rows"]]
    assert got == [(3, 3), (3, 4), (5, 3), (5, 4)]
    decks = None
    for row in data["rows"]:
        df = read_games(tmp_path / row["path"])
        manifest = json.loads((tmp_path / row["path"] / "manifest.json").read_text())
        assert manifest["rules"]["max_face_down"] == int(row["max_face_down"])
        assert manifest["rules"]["max_pile"] == int(row["max_pile"])
        assert row["games"] == df.height == N and row["wins"] == df["won"].sum()
        assert row["mean_score"] == pytest.approx(df["score"].mean())
        assert row["score_per_deal"] == pytest.approx(df["score"].fill_null(0).sum() / N)
        assert row["win_rate_low"] < row["win_rate"] < row["win_rate_high"]
        this = df.sort("game")["deck"]
        assert decks is None or (this == decks).all()
        decks = this
    rates = {(r["max_face_down"], r["max_pile"]): r["win_rate"] for r in data["rows"]}
    assert rates[(5, 4)] > rates[(3, 4)]  # more face-down cards allowed: more wins on the same deals
    png = (tmp_path / "figs" / "win_rate.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert Image.open(io.BytesIO(png)).size[0] >= 500
    page = (tmp_path / "sweep.html").read_text()
    assert "data:image/png;base64," in page and f"{data['rows'][0]['wins']:,}" in page and "foursquare-sim " in page
    text = cli.invoke(app, ["sweep", "-n", str(N), "--seed", "3", "--rule", "max_face_down=3,5",
                            "--rule", "max_pile=3,4"])  # not -q: it leaves the notes out
    assert text.exit_code == 0 and text.stderr.count("reusing") == 4 and "reused" not in text.stdout
    assert text.stdout.splitlines()[-7].split()[:2] == ["max_face_down", "max_pile"]


def test_sweep_options_are_parsed_and_checked():
    axes = parse_sweep_options(["max_face_down=3,4,5", "adjacency=orthogonal,king"])
    assert axes == [("max_face_down", ["3", "4", "5"]), ("adjacency", ["orthogonal", "king"])]
    assert combinations(axes)[:3] == [{"max_face_down": "3", "adjacency": "orthogonal"},
                                      {"max_face_down": "3", "adjacency": "king"},
                                      {"max_face_down": "4", "adjacency": "orthogonal"}]
    assert len(combinations(axes)) == 6
    for bad, fragment in ((["max_face_down=3,99"], "0..15"), (["colour=red"], "valid rules"),
                          (["max_pile"], "KEY=V1,V2"), (["max_pile=3", "max_pile=4"], "twice"), ([], "at least one")):
        with pytest.raises(UsageError, match=fragment):
            parse_sweep_options(bad)
    res = cli.invoke(app, ["sweep", "-n", "10", "--rule", "grid=1,2"])
    assert res.exit_code == 2 and res.stderr.startswith("Error:") and "grid" in res.stderr


def test_shares_and_p_values_never_read_as_a_bound_they_do_not_reach():
    from sim.analysis.compare import fmt_p
    from sim.analysis.tables import fmt_ci, pct_text

    # A run that lost some games never reads 100.00%; a difference that is not zero never reads +0.00%.
    assert pct_text(0.99996) == "99.9960%" and pct_text(1.0) == "100.00%" and pct_text(0.5) == "50.00%"
    assert pct_text(4e-6) == "0.00040%" and pct_text(1e-6, signed=True) == "+0.00010%"
    assert fmt_ci(0.99990, 0.99999) == "99.990% .. 99.9990%"
    # A p-value is not rounded across 0.05 or 0.01.
    assert [fmt_p(p) for p in (0.0498, 0.04996, 0.0502, 0.00999, 0.0101, 0.5)] == [
        "0.0498", "0.04996", "0.050", "0.00999", "0.010", "0.500"]
    # Nor across 0.001, where the notation changes: below it, never a figure that reads as 0.001.
    assert [fmt_p(p) for p in (0.000999, 0.00099999, 0.00012, 0.001)] == ["9.99e-04", "9.9999e-04", "1.2e-04", "0.001"]
    # b = 42, c = 25: p = 0.0498 (scipy's exact binomial test), shown as 0.0498.
    from scipy.stats import binomtest

    from sim.stats import mcnemar_exact

    assert fmt_p(mcnemar_exact(42, 25)) == f"{binomtest(25, 67).pvalue:.4f}" == "0.0498"


def test_a_difference_of_win_rates_is_in_percentage_points(tmp_path):
    """pA - pB is a difference of two shares: text and page say pp, not %, and a tiny p-value reads "p < 1e-300"."""
    from sim.analysis.compare import p_is
    from sim.analysis.tables import pp_text

    assert pp_text(-0.7444) == "-74.44 pp" and pp_text(1e-6) == "+0.00010 pp" and pp_text(0.0) == "+0.00 pp"
    assert p_is(0.0498) == "= 0.0498" and p_is(0.0) == "< 1e-300"
    from sim.analysis.html import comparison_html

    a, b = (sim.run(sim.RunConfig(policy=p, n=300, seed=3), workers=1, out=tmp_path / p).path
            for p in ("greedy", "heuristic"))
    c = compare_runs([a, b])
    (pair,) = c.pairs
    row = c.text().split("Pairs")[1].splitlines()[3]  # title, header, rule, then the pair's row
    assert f"{100 * pair.diff:+.2f} pp" in row and f"{100 * pair.diff_low:+.2f} pp .." in row
    assert f"{100 * pair.diff:+.2f}%" not in c.text()
    page = "\n".join(comparison_html(c))
    assert f"{100 * pair.diff:+.2f} pp" in page and "McNemar's exact p " in page


def test_runs_of_different_sizes_are_said_to_differ_in_their_number_of_games(tmp_path):
    from sim.analysis import plots

    a, b = (sim.run(sim.RunConfig(policy="greedy", n=n, seed=3), workers=1, out=tmp_path / f"g{n}").path
            for n in (40, 3))
    c = compare_runs([a, b])
    assert c.header().endswith("the runs differ in: the number of games")
    assert plots.comparison_caption(c) == "runs: g40; g3"  # a label that is its directory's name is said once


def test_one_deal_is_said_in_the_singular(tmp_path):
    from sim.analysis.html import comparison_html
    from sim.analysis.tables import count

    assert (count(1, "deal"), count(0, "game"), count(2000, "game")) == ("1 deal", "0 games", "2,000 games")
    a, b = (sim.run(sim.RunConfig(policy=p, n=1, seed=3), workers=1, out=tmp_path / p).path
            for p in ("greedy", "heuristic"))
    c = compare_runs([a, b])
    page = "\n".join(comparison_html(c))
    assert "on the same 1 deal " in c.header() and "1 deals" not in page and "1 games" not in page


WEIGHTS = {"weights": {"face_down": -10.0, "to_open": 0.2, "full_up": 2.0, "full_down": -0.5, "risk": -0.4,
                       "spread": 1.7, "closed": -2.2}}
"""A weights file of the heuristic, as `sim tune --out` writes it (its weights part)."""


def test_a_sweep_names_the_policys_arguments_wherever_it_names_the_policy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.json").write_text(json.dumps(WEIGHTS))
    player = f"heuristic weights={tmp_path / 'w.json'}"  # as the runs record it, and `sim ls` shows it
    args = ["sweep", "-p", "heuristic", "--policy-arg", "weights=w.json", "-n", "40", "--rule", "max_face_down=3,4",
            "-w", "1", "--html", "sweep.html"]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"policy {player}, the same 40 deals" in res.stdout.splitlines()[0]
    assert f"[1/2] {player} (max_face_down=3): playing" in res.stderr
    assert f"policy {player}, the same" in cli.invoke(app, [*args, "-q", "--format", "markdown"]).stdout
    data = json.loads(cli.invoke(app, [*args, "-q", "--format", "json"]).stdout)
    assert data["policy"] == "heuristic" and data["policy_args"] == {"weights": str(tmp_path / "w.json")}
    assert f"policy {player}," in (tmp_path / "sweep.html").read_text()
    from sim.analysis.sweep import sweep

    result = sweep("heuristic", 40, [("max_face_down", ["3", "4"])], policy_args={"weights": "w.json"}, workers=1)
    assert result.policy_args == data["policy_args"]
    title = result.figure().axes[0].get_title()
    assert "".join(title.split()).startswith("".join(player.split()) + ":"), title
    assert player in cli.invoke(app, ["ls"]).stdout


def test_runs_of_one_policy_with_other_arguments_are_said_to_differ_in_them(tmp_path):
    # Default weights against a weights file, as `sim tune` suggests: the header said the runs differed in
    # "nothing but the directory", and the runs were labelled by their directory names.
    (tmp_path / "w.json").write_text(json.dumps(WEIGHTS))
    runs = [sim.run(sim.RunConfig(policy=p, n=30, seed=3, policy_args=args), workers=1, out=tmp_path / name).path
            for name, p, args in (("default", "heuristic", {}), ("tuned", "heuristic", {"weights": str(tmp_path / "w.json")}),
                                  ("g", "greedy", {}))]
    c = compare_runs(runs[:2])
    assert c.header().endswith("the runs differ in: policy arguments")
    assert [a.label for a in c.arms] == ["heuristic", f"heuristic weights={tmp_path / 'w.json'}"]
    c = compare_runs(runs)
    assert c.header().endswith("the runs differ in: policy, policy arguments")
    assert [a.label for a in c.arms][1:] == [f"heuristic weights={tmp_path / 'w.json'}", "greedy"]


def test_a_run_in_the_way_is_said_in_the_command_lines_words(tmp_path, monkeypatch):
    """The settings of a run a sweep will not replace read as the command line gives them, not as Python reprs."""
    monkeypatch.chdir(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "w.json").write_text(json.dumps(WEIGHTS))
    args = ["sweep", "-p", "heuristic", "-n", "30", "--rule", "max_face_down=3,4", "-w", "1", "-q"]
    assert cli.invoke(app, [*args, "--policy-arg", "weights=a/w.json"]).exit_code == 0
    res = cli.invoke(app, [*args, "--policy-arg", "weights=b/w.json"])
    assert res.exit_code == 2, res.output
    assert (f"(policy_args weights={tmp_path / 'a' / 'w.json'}, wanted weights={tmp_path / 'b' / 'w.json'}); "
            "use --force") in res.stderr, res.stderr
    assert "{" not in res.stderr and "'" not in res.stderr


def test_a_sweep_prints_the_same_result_whether_its_runs_are_played_or_reused(tmp_path, monkeypatch):
    """Reused runs were said twice, on stderr as they were reused and again as notes on stdout."""
    monkeypatch.chdir(tmp_path)
    args = ["sweep", "-n", "200", "--rule", "max_face_down=3,4", "-w", "1"]
    for fmt in ("text", "markdown"):
        played = cli.invoke(app, [*args, "--format", fmt, "--force"])
        reused = cli.invoke(app, [*args, "--format", fmt])
        assert played.exit_code == reused.exit_code == 0, (played.output, reused.output)
        assert "reusing" not in played.stderr and reused.stderr.count("reusing") == 2
        assert reused.stdout == played.stdout and "reuse" not in reused.stdout
    data = json.loads(cli.invoke(app, [*args, "--format", "json"]).stdout)
    assert [row["reused"] for row in data["rows"]] == [True, True] and data["notes"] == []


def test_a_sweeps_n_is_marked_required(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    helps = [line for line in cli.invoke(app, ["sweep", "-h"], terminal_width=200).stdout.splitlines()
             if line.lstrip().startswith("-n ")]
    assert len(helps) == 1 and "[required]" in helps[0], helps
    missing = cli.invoke(app, ["sweep", "--rule", "max_pile=3,4"])
    assert missing.exit_code == 2 and "-n" in missing.stderr and not (tmp_path / "results").exists()


def test_a_file_where_the_runs_go_is_said_without_an_option_sweep_and_compare_lack(tmp_path, monkeypatch):
    # A file named results made every run fail with "--out results/...: .../results is not a directory".
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("notes")
    for args in (["sweep", "--rule", "max_pile=3,4"], ["compare", "--policy", "greedy", "--policy", "random"]):
        res = cli.invoke(app, [*args, "-n", "20", "-w", "1", "-q"])
        assert res.exit_code == 2 and res.stderr.startswith(f"Error: {tmp_path / 'results'} is not a directory, "), \
            res.output
        assert "--out" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert (tmp_path / "results").read_text() == "notes"


def test_a_sweeps_json_gives_numbers_for_numeric_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli.invoke(app, ["sweep", "-n", "20", "--rule", "max_face_down=3,4", "--rule", "adjacency=orthogonal,king",
                           "-w", "1", "-q", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert [(r["max_face_down"], r["adjacency"]) for r in rows] == [
        (3, "orthogonal"), (3, "king"), (4, "orthogonal"), (4, "king")]
    manifest = json.loads((tmp_path / rows[0]["path"] / "manifest.json").read_text())
    assert manifest["rules"]["max_face_down"] == rows[0]["max_face_down"]  # as the run writes its rules


def test_an_interrupted_sweep_says_that_the_same_sweep_run_again_finishes_it(tmp_path, monkeypatch):
    """It said "Finish with: sim run --resume <one run>", which finishes one combination of several."""
    from sim.jobs import runner

    monkeypatch.chdir(tmp_path)
    args = ["sweep", "-n", "300", "--rule", "max_face_down=3,4", "-w", "1"]
    monkeypatch.setattr(sys, "argv", ["sim", *args])  # the command line the message repeats
    write = runner.write_atomic

    def interrupted(*a, **k):  # Ctrl-C as the first part is written
        monkeypatch.setattr(runner, "write_atomic", write)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "write_atomic", interrupted)
    res = cli.invoke(app, args)
    assert res.exit_code == 130, res.output
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: interrupted") and "--resume" not in line, line
    assert line.endswith("Run the same command again to finish every run (the complete ones are reused): sim "
                         + " ".join(args)), line
    again = cli.invoke(app, [*args, "--format", "json"])
    assert again.exit_code == 0, again.output
    assert [row["games"] for row in json.loads(again.stdout)["rows"]] == [300, 300]


def test_the_score_per_deal_difference_is_the_paired_mean_over_every_game(tmp_path):
    # Checked against its definition: the mean of score A - score B over all the games, a lost game's score
    # counting 0, with Student's t interval of the paired differences.
    from scipy import stats

    runs = [sim.run(sim.RunConfig(policy=p, n=3000, seed=8), out=tmp_path / p, workers=1).path
            for p in ("greedy", "heuristic", "random")]
    c = compare_runs(runs)
    scores = [pl.read_parquet(r / "games" / "*.parquet").sort("game")["score"].fill_null(0).to_numpy()
              for r in runs]
    for p, (i, j) in zip(c.pairs, [(0, 1), (0, 2), (1, 2)]):
        d = scores[i].astype(float) - scores[j]
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        assert p.deal_diff == pytest.approx(d.mean(), abs=1e-12)
        assert (p.deal_diff_low, p.deal_diff_high) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-9)
        assert p.deal_diff == pytest.approx(c.arms[i].score_per_deal - c.arms[j].score_per_deal, abs=1e-12)
    # Three runs: each verdict takes McNemar's p adjusted by Holm's method over the three pairs.
    from sim.stats import holm

    assert [p.p_holm for p in c.pairs] == holm([p.p_value for p in c.pairs])
    text = c.text()
    assert "Holm p" in text and "per deal A - B" in text
    assert "Holm p" not in compare_runs(runs[:2]).text() and compare_runs(runs[:2]).pairs[0].p_holm is None
    # The verdict the page shows is in every format: the markdown's "wins more" column and the JSON's wins_more.
    table = [[cell.strip() for cell in line.strip("|").split("|")] for line in c.render("markdown").splitlines()
             if line.startswith("|") and "---" not in line]
    header = next(row for row in table if "wins more" in row)
    rows = [row for row in table if len(row) == len(header) and row is not header]
    assert [row[header.index("wins more")] for row in rows] == [{"a": "A", "b": "B"}.get(p.ahead, "-") for p in c.pairs]
    assert [p["wins_more"] for p in json.loads(c.render("json"))["pairs"]] == \
        [{"a": p.a, "b": p.b}.get(p.ahead) for p in c.pairs]
    assert any(p.ahead for p in c.pairs)


def test_among_several_pairs_a_verdict_needs_the_holm_adjusted_p():
    from sim.analysis.compare import Pair

    pair = Pair(a="A", b="B", games=200_000, wins_a=100_000, wins_b=99_300, both=90_000, a_only=10_000,
                b_only=9_300, diff=0.0035, diff_low=0.0008, diff_high=0.0062, p_value=0.012, score_diff=None,
                score_diff_low=None, score_diff_high=None)
    assert pair.ahead == "a"
    adjusted = dataclasses.replace(pair, p_holm=0.18)
    assert adjusted.ahead is None and "adjusted for the number of pairs (Holm)" in adjusted.unclear


def test_the_oracle_gets_only_its_own_policy_args_beside_another_policy(tmp_path, monkeypatch):
    # A --policy-arg of the policy compared with the oracle was given to the oracle too, which refused it
    # ("policy 'oracle' has no parameter weights"), in sim compare --policy and sim replay alike.
    from sim.analysis.compare import policy_args_for

    assert policy_args_for(["rollout", "oracle"], {"samples": "2", "nodes": "500"}) == {
        "rollout": {"samples": "2"}, "oracle": {"nodes": "500"}}
    monkeypatch.chdir(tmp_path)
    args = ["--seed", "0", "--policy", "greedy", "--policy", "oracle", "--policy-arg", "nodes=500"]
    r = cli.invoke(app, ["compare", *args, "--policy", "heuristic", "--policy-arg", "weights=default", "-n", "2",
                         "-w", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "greedy-seed0-n2", "heuristic-seed0-n2", "oracle-nodes500-seed0-n2"]  # weights=default: the default
    r = cli.invoke(app, ["replay", *args, "--policy", "heuristic", "--policy-arg", "weights=default", "--game", "1"])
    assert r.exit_code == 0 and "policy: oracle nodes=500" in r.output, r.output



def test_each_part_is_verified_once_whatever_the_number_of_batches(tmp_path, monkeypatch, read_games):
    # Parts of 100 and 150 games joined in batches smaller and larger than a part: the same counts as a direct
    # join, and each run's parts checked once (not once per batch, which grew with the games times the parts).
    from sim.jobs import runner

    a = sim.run(sim.RunConfig(policy="greedy", n=1000, seed=6), workers=1, chunk_size=100, out=tmp_path / "a").path
    b = sim.run(sim.RunConfig(policy="random", n=1000, seed=6), workers=1, chunk_size=150, out=tmp_path / "b").path
    expected = joined_counts(read_games, a, b)
    parts = sorted((a / "games").iterdir()) + sorted((b / "games").iterdir())  # 10 + 7
    checked = []
    real = runner._part_problem
    monkeypatch.setattr(runner, "_part_problem", lambda path, *args: checked.append(path) or real(path, *args))
    for batch in (70, 250, 10_000):
        checked.clear()
        (p,) = compare_runs([a, b], batch=batch).pairs
        assert sorted(checked) == parts
        assert (p.games, p.wins_a, p.wins_b, p.both, p.a_only, p.b_only) == tuple(
            expected[k] for k in ("games", "wins_a", "wins_b", "both", "a_only", "b_only"))


def test_a_difference_the_same_in_every_game_is_said_to_have_no_interval(tmp_path):
    # Two runs of the same games: every difference is 0, and the t interval was shown as "+0.00 .. +0.00".
    for name in ("a", "b"):
        sim.run(sim.RunConfig(n=40), out=tmp_path / name, workers=1)
    r = cli.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    row = [line for line in r.stdout.splitlines() if line.lstrip().startswith("a ")][-1]
    assert row.count("none (all equal)") == 2 and ".. +0.00" not in row, row
    (pair,) = json.loads(cli.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-f", "json"]).stdout)["pairs"]
    assert pair["both"] >= 2 and pair["score_diff"] == 0 and pair["score_diff_low"] is None
    assert pair["deal_diff"] == 0 and pair["deal_diff_low"] is None and pair["deal_diff_high"] is None
