"""`sim report`: its figures equal direct polars queries of the same Parquet; text, JSON, Markdown, PNG, HTML."""

import base64
import html
import io
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from PIL import Image
from typer.testing import CliRunner

import sim
from sim.cli import app
from sim.analysis.report import load_report, render_markdown, render_text
from sim.stats import wilson

cli = CliRunner()
N = 2000


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    greedy = sim.run(sim.RunConfig(policy="greedy", n=N, seed=11), workers=2, out=base / "greedy").path
    variant = sim.run(sim.RunConfig(policy="greedy", n=N, seed=11, rules=sim.Rules(max_face_down=5)), workers=2,
                      out=base / "mfd5").path
    return greedy, variant


def test_report_counts_equal_a_direct_polars_query(runs, read_games):
    run_dir = runs[0]
    df = read_games(run_dir)
    r = load_report(run_dir)
    assert r.games == df.height == N
    assert r.wins == df["won"].sum() and r.losses == N - r.wins
    assert (r.win_rate_low, r.win_rate_high) == pytest.approx(wilson(r.wins, N))
    direct = dict(df.filter(pl.col("won")).group_by("score").len().iter_rows())
    assert len(r.score_counts) == 25 and [s for s, _ in r.score_counts] == list(range(25))
    assert {s: k for s, k in r.score_counts if k} == direct
    assert dict(r.ends) == {e: df.filter(pl.col("end") == e).height
                            for e in ("win", "too_many_face_down", "stock_empty", "no_move")}
    for won, pairs in ((True, r.cards_played_wins), (False, r.cards_played_losses)):
        assert dict(pairs) == dict(df.filter(pl.col("won") == won).group_by("cards_played").len().iter_rows())
    assert dict(r.face_down_at_loss) == dict(df.filter(~pl.col("won")).group_by("face_down").len().iter_rows())
    scores = df["score"].drop_nulls()
    assert r.score_mean == pytest.approx(scores.mean())
    assert r.score_per_deal == pytest.approx(df["score"].fill_null(0).sum() / N)
    for q, got in ((0.25, r.score_q1), (0.5, r.score_median), (0.75, r.score_q3)):
        assert got == pytest.approx(scores.quantile(q, interpolation="linear"))
    assert r.status == "complete" and r.warnings == ()


def test_text_report_shows_the_tables_and_a_histogram(runs):
    r = load_report(runs[0])
    text = render_text([r], width=100)
    assert re.search(rf"^games +{N:,}$", text, re.M) and re.search(rf"^wins +{r.wins:,}$", text, re.M)
    for title in ("Score distribution", "End reasons", "Cards played by outcome", "Face-down top cards at a loss"):
        assert title in text
    histogram = text.split("Score distribution\n")[1].split("\n\n")[0]
    lines = {m.group(1): m.group(0) for m in re.finditer(r"^ *(\d+|lost) .*$", histogram, re.M)}
    assert list(lines) == [str(s) for s in range(25)] + ["lost"]
    top_score, top_count = max(r.score_counts, key=lambda sk: sk[1])
    assert f"{top_count:,}" in lines[str(top_score)] and lines[str(top_score)].rstrip().endswith("#")
    assert f"{r.losses:,}" in lines["lost"] and lines["lost"].rstrip().endswith(">")  # the lost bar is cut
    bars = {s: len(re.search(r"(#*)>?$", lines[str(s)].rstrip()).group(1)) for s, k in r.score_counts if k}
    assert bars[top_score] == max(bars.values()) and all(len(line) <= 100 for line in text.splitlines())
    md = render_markdown([r])
    assert "| score | games | of wins | of games |" in md and f"| lost | {r.losses:,} |" in md


def test_cli_json_and_markdown_carry_the_same_figures(runs):
    res = cli.invoke(app, ["report", str(runs[0]), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["runs"][0]
    r = load_report(runs[0])
    assert data["games"] == N and data["wins"] == r.wins
    assert {d["score"]: d["count"] for d in data["score_distribution"]} == dict(r.score_counts)
    assert data["lost"]["count"] == r.losses and data["ends"] == dict(r.ends)
    assert data["cards_played"]["losses"] == {str(c): k for c, k in r.cards_played_losses}
    md = cli.invoke(app, ["report", str(runs[0]), "--format", "markdown"])
    assert md.exit_code == 0 and f"| wins | {r.wins:,} |" in md.stdout


def test_the_text_of_several_runs_on_the_same_deals_carries_their_paired_comparison(runs):
    from sim.analysis.compare import compare_runs

    (pair,) = compare_runs(list(runs)).pairs
    args = ["report", str(runs[0]), str(runs[1])]
    text = cli.invoke(app, args).stdout
    assert "Paired comparison on the same" in text and f"{100 * pair.diff:+.2f} pp" in text
    assert text.index("Runs") < text.index("Paired comparison") < text.index(f"run     {runs[0]}")  # as on the page
    md = cli.invoke(app, [*args, "-f", "markdown"]).stdout
    assert "## Paired comparison" in md and f"{100 * pair.diff:+.2f} pp" in md
    data = json.loads(cli.invoke(app, [*args, "-f", "json"]).stdout)
    assert data["comparison"]["pairs"][0]["diff"] == pytest.approx(pair.diff)
    assert "comparison" not in json.loads(cli.invoke(app, ["report", str(runs[0]), "-f", "json"]).stdout)


def test_the_text_leaves_the_pairs_of_large_runs_to_sim_compare(runs, monkeypatch):
    import sim.cli

    monkeypatch.setattr(sim.cli, "PAIRS_IN_TEXT_UP_TO", 2 * N - 1)  # the two runs hold 2 * N games
    text = cli.invoke(app, ["report", str(runs[0]), str(runs[1])]).stdout
    assert "Pairs" not in text and f"sim compare {runs[0]} {runs[1]} prints them" in " ".join(text.split())


def test_every_format_says_why_large_runs_are_not_paired(runs, tmp_path, monkeypatch):
    import sim.cli

    monkeypatch.setattr(sim.cli, "PAIRS_IN_TEXT_UP_TO", 2 * N - 1)  # the two runs hold 2 * N games
    left = f"sim compare {runs[0]} {runs[1]} prints them"
    md = cli.invoke(app, ["report", *map(str, runs), "-f", "markdown"]).stdout
    assert "Pairs" not in md and left in " ".join(md.split())
    data = json.loads(cli.invoke(app, ["report", *map(str, runs), "-f", "json"]).stdout)
    assert "comparison" not in data and data["unpaired"].endswith(left)
    # Runs on other deals: the report says they cannot be paired, not that sim compare (which refuses them) pairs them.
    other = sim.run(sim.RunConfig(policy="greedy", n=N, seed=12), workers=1, out=tmp_path / "seed12").path
    for fmt in ("text", "markdown", "json"):
        out = cli.invoke(app, ["report", str(runs[0]), str(other), "-f", fmt]).stdout
        assert "they differ in seed" in out and "prints them" not in out, out


def assert_real_png(data: bytes, min_size=(400, 250)):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.size[0] >= min_size[0] and img.size[1] >= min_size[1]
    colours = img.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 20  # not a blank canvas


@pytest.mark.slow
def test_png_and_html_of_several_runs(runs, tmp_path, monkeypatch):
    argv = ["report", *map(str, runs), "--png", str(tmp_path / "figs"), "--html", str(tmp_path / "r.html")]
    monkeypatch.setattr(sys, "argv", ["sim", *argv])  # the command line the page records
    res = cli.invoke(app, argv)
    assert res.exit_code == 0, res.output
    assert "Runs" in res.stdout  # the overview table of several runs
    names = ("win_rate.png", "score_distribution.png", "cards_played.png", "paired_difference.png")
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(names)  # the runs share the deals
    for name in names:
        assert_real_png((tmp_path / "figs" / name).read_bytes())
    page = (tmp_path / "r.html").read_text()
    r = load_report(runs[1])
    assert "<table>" in page and "Score distribution" in page and f"{r.wins:,}" in page and runs[1].name in page
    assert "Paired comparison" in page and "McNemar" in page and "(A only)" in page and "(B only)" in page
    assert f"foursquare-sim {sim.__version__}" in page and f"Made by <code>{html.escape(shlex.join(['sim', *argv]))}</code>" in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4
    for data in images:
        assert_real_png(base64.b64decode(data))
    # nothing remote: every src/href is a data: URI; no URL, stylesheet link, script or CSS import
    assert all(v.startswith("data:") for v in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page))
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"https?:|ftp:|<link|<script|<iframe|@import|url\(", text, re.I)


def interrupted_copy(run_dir: Path, to: Path) -> int:
    """A copy of the run as an interruption before its last part leaves it; returns the games that part held."""
    shutil.copytree(run_dir, to)
    part = sorted((to / "games").glob("*.parquet"))[-1]
    missing = pl.read_parquet(part).height
    part.unlink()
    # The manifest of an interrupted run: incomplete, and listing only the parts written.
    manifest = json.loads((to / "manifest.json").read_text())
    manifest["status"] = "incomplete"
    for key in ("parts", "part_info"):
        manifest.get(key, {}).pop(part.name, None)
    (to / "manifest.json").write_text(json.dumps(manifest))
    return missing


def test_an_incomplete_run_is_reported_with_a_warning(runs, tmp_path):
    run_dir = tmp_path / "partial"
    missing = interrupted_copy(runs[0], run_dir)
    res = cli.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "WARNING: run is incomplete" in res.stdout and f"{N - missing:,} of {N:,}" in res.stdout
    assert load_report(run_dir).games == N - missing


def test_the_rates_of_a_run_are_over_the_games_its_parts_hold(runs, tmp_path):
    # Win rate and score per deal (a lost game counting 0) over the games read, complete run or not: the games an
    # incomplete run has not played yet are neither losses nor wins, so the manifest's n is no denominator.
    run_dir = tmp_path / "partial"
    interrupted_copy(runs[0], run_dir)
    for path in (runs[0], run_dir):
        df = pl.read_parquet(path / "games" / "*.parquet")
        wins = int(df["won"].sum())
        r = load_report(path)
        assert r.games == df.height and r.wins == wins > 0
        assert r.win_rate == pytest.approx(wins / df.height)
        assert (r.win_rate_low, r.win_rate_high) == pytest.approx(wilson(wins, df.height))
        assert r.score_per_deal == pytest.approx(df["score"].fill_null(0).sum() / df.height)
    assert r.games < N and r.status == "incomplete"


def test_not_a_run_is_a_one_line_usage_error(tmp_path):
    res = cli.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2
    assert res.stderr.strip().startswith("Error:") and len(res.stderr.strip().splitlines()) == 1
    res = cli.invoke(app, ["report", str(tmp_path), "--format", "yaml"])
    assert res.exit_code == 2 and "--format" in res.stderr


def test_a_report_of_runs_that_cannot_be_paired_says_why_in_every_format(tmp_path):
    for seed in (0, 1):
        sim.run(sim.RunConfig(n=200, seed=seed), out=tmp_path / f"s{seed}", workers=1)
    runs = [str(tmp_path / "s0"), str(tmp_path / "s1")]
    why = "cannot pair these runs: they differ in seed (s0: 0, s1: 1)"
    for fmt in ("text", "markdown"):
        r = cli.invoke(app, ["report", *runs, "--format", fmt])
        assert r.exit_code == 0 and f"No paired comparison: {why}" in " ".join(r.stdout.split()), r.stdout
    data = json.loads(cli.invoke(app, ["report", *runs, "--format", "json"]).stdout)
    assert data["unpaired"].startswith(why) and "comparison" not in data


def test_runs_of_one_policy_with_other_arguments_are_told_apart(tmp_path):
    # Rollout with 2 and with 3 playouts: the overview, the headers, the JSON and the figures' captions
    # said "rollout" for both.
    runs = [sim.run(sim.RunConfig(policy="rollout", n=10, policy_args=(("samples", k), ("base", "greedy"))),
                    out=tmp_path / f"s{k}", workers=1).path for k in ("2", "3")]
    res = cli.invoke(app, ["report", *map(str, runs)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    overview = res.stdout.split("\n\n")[0].splitlines()
    assert [re.split(r"\s{2,}", line)[:2] for line in overview[3:5]] == [
        ["s2", "rollout base=greedy samples=2"], ["s3", "rollout base=greedy samples=3"]]
    assert "policy  rollout base=greedy samples=3   seed" in res.stdout
    data = json.loads(cli.invoke(app, ["report", *map(str, runs), "-f", "json"]).stdout)
    assert [r["policy_args"] for r in data["runs"]] == [{"samples": k, "base": "greedy"} for k in ("2", "3")]
    from sim.analysis import plots

    assert "s3 (rollout base=greedy samples=3, 10 games" in plots.run_caption([load_report(runs[1])])


def without_end_column(run_dir, name: str) -> None:
    """Rewrite part `name` of the run without its `end` column, its digest recorded as if the run wrote it (its
    own metadata kept): a part that passes every check but is no games table."""
    import hashlib

    part = run_dir / "games" / name
    meta = {k: v for k, v in pl.read_parquet_metadata(part).items() if k.startswith("foursquare_sim.")}
    pl.read_parquet(part).drop("end").write_parquet(part, metadata=meta)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["part_info"][name]["sha256"] = hashlib.sha256(part.read_bytes()).hexdigest()
    (run_dir / "manifest.json").write_text(json.dumps(m))


def test_a_verified_part_without_a_games_column_is_a_one_line_error(tmp_path):
    # The parts are counted in threads: an error in one of them still reaches the command as its one line.
    out = sim.run(sim.RunConfig(n=300), workers=1, chunk_size=100, out=tmp_path / "r").path
    without_end_column(out, "part-00001.parquet")
    r = cli.invoke(app, ["report", str(out)])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines() == [f"Error: {out} has no column end: not a games table"]


def test_an_error_in_one_part_stops_the_count_without_reading_the_rest(tmp_path, monkeypatch):
    # The parts are counted in threads: once one fails, those not yet begun must not be read (a large run
    # would be read to its end before the error, or a Ctrl-C, is said).
    import sim.analysis.report as report
    from sim.errors import UsageError

    out = sim.run(sim.RunConfig(n=600), workers=1, chunk_size=10, out=tmp_path / "r").path
    without_end_column(out, "part-00000.parquet")
    read = []
    part_bytes = report.part_bytes
    monkeypatch.setattr(report, "part_bytes", lambda *a: read.append(a) or part_bytes(*a))
    with pytest.raises(UsageError, match="has no column end"):
        report.game_counts(out)
    assert len(read) < 60


def test_runs_of_the_same_folder_name_are_told_apart_by_their_paths(runs, tmp_path):
    # xa/g and xb/g were both "g" in the overview and in the sections that follow it.
    a, b = tmp_path / "xa" / "g", tmp_path / "xb" / "g"
    shutil.copytree(runs[0], a)
    shutil.copytree(runs[1], b)
    text = cli.invoke(app, ["report", str(a), str(b)]).stdout
    rows = [line.split()[0] for line in text.splitlines()[3:5]]
    assert rows == [str(a), str(b)], text
    markdown = cli.invoke(app, ["report", str(a), str(b), "-f", "markdown"]).stdout
    assert f"## {a}\n" in markdown and f"## {b}\n" in markdown
    text = cli.invoke(app, ["report", str(runs[0]), str(a)]).stdout  # names that differ stay short
    assert [line.split()[0] for line in text.splitlines()[3:5]] == ["greedy", "g"], text
