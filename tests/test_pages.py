"""Figures and pages without a browser: the replay page's game data against `sim.play`, `--png DIR` for
every command, what the figures show (run names, legends, values, axes from 0, intervals), solve runs.

tests/test_browser.py opens the same pages in headless Chromium.
"""

import html
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sim
from sim.analysis import plots
from sim.analysis.compare import arm_reports, compare_runs
from sim.analysis.report import load_report, load_reports
from sim.analysis.tables import fmt_ci, pct_digits, pct_text
from sim.cli import app

cli = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
N = 400


def page_data(path: Path) -> dict:
    """The game data a replay page embeds (its JSON script block)."""
    text = path.read_text()
    m = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', text, re.S)
    assert m, "no replay data in the page"
    return json.loads(m.group(1))


def assert_self_contained(text: str) -> None:
    """No URL, link, external script, stylesheet import or frame: the page opens with no network."""
    assert not re.search(r"(?:src|href)\s*=\s*[\"'](?!data:)", text), "a src/href that is not a data: URI"
    body = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", text)
    body = body.replace("http://www.w3.org/2000/svg", "")  # the SVG namespace name, never fetched
    assert not re.search(r"https?:|ftp:|<link|<iframe|@import|url\((?!#)|<script[^>]+src", body, re.I)


@pytest.mark.parametrize("policy,seed,game,args", [
    ("greedy", 0, 5, []),
    ("heuristic", 0, 5, []),
    ("random", 3, 2, []),
    pytest.param("oracle", 0, 5, ["--policy-arg", "nodes=20000"], marks=pytest.mark.slow),  # compiles the solver
    ("examples/python_policy.py:FewestFaceDown", 1, 4, []),
    pytest.param("examples/compiled_policy.py:choose", 1, 4, [], marks=pytest.mark.slow),  # compiles a loop
])
def test_the_replay_page_carries_the_game_sim_play_plays(policy, seed, game, args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the plugins are named by their path in the repository
    out = tmp_path / "replay.html"
    argv = ["replay", "--seed", str(seed), "--game", str(game), "--policy", policy, *args, "--html", str(out)]
    monkeypatch.setattr(sys, "argv", ["sim", *argv])  # the command line the page records
    res = cli.invoke(app, argv)
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.stderr and res.stdout.strip().splitlines()[-1].startswith("end: ")
    policy_args = dict(a.split("=", 1) for a in args[1::2])
    expected = sim.play(sim.deal(seed, game), policy, seed=seed, game=game, policy_args=policy_args)
    data = page_data(out)
    (g,) = data["games"]
    assert data["deck"] == list(sim.deal(seed, game)) and data["source"] == f"seed {seed}, game {game}"
    assert (g["policy"], g["end"], g["score"], g["cardsPlayed"]) == (policy, expected.end, expected.score,
                                                                      expected.cards_played)
    assert [t["cell"] for t in g["turns"]] == list(expected.moves)
    # The page names the policy with its arguments: other arguments play another game.
    assert g["policyArgs"] == policy_args and g["label"] == " ".join([policy, *args[1::2]])
    assert f"<title>Foursquare replay: {html.escape(g['label'])}, seed {seed}, game {game}</title>" in out.read_text()
    assert [t["card"] for t in g["turns"]] == data["deck"][:expected.cards_played]
    last = g["turns"][-1]
    assert len(last["table"]) == expected.piles == last["piles"]
    assert sum(face for _, _, face, _ in last["table"]) == expected.face_down == last["faceDown"]
    assert expected.end in g["endText"] and (expected.score is None or f"Score {expected.score}" in g["endText"])
    assert data["version"] == sim.__version__ and data["command"] == shlex.join(["sim", *argv])
    assert_self_contained(out.read_text())


def test_every_turn_of_the_page_matches_a_board_stepped_by_hand(tmp_path):
    deck = sim.deal(0, 7)
    out = tmp_path / "r.html"
    res = cli.invoke(app, ["replay", "--deck", " ".join(map(str, deck)), "--html", str(out), "-q"])
    assert res.exit_code == 0 and res.stderr == "", res.output  # -q: nothing on stderr
    data = page_data(out)
    assert data["source"] == "a given deck"
    board = sim.Board()
    for turn in data["games"][0]["turns"]:
        p = board.place(turn["cell"], turn["card"])
        assert (turn["rowFired"], turn["colFired"], turn["turned"]) == (p.row_fired, p.col_fired, list(p.turned))
        assert turn["table"] == [[c, board.top(c), int(board.is_face_down(c)), board.height(c)] for c in board.occupied]
        assert turn["faceDown"] == board.face_down_count


def test_two_policies_side_by_side_on_the_same_deck(tmp_path):
    out = tmp_path / "two.html"
    res = cli.invoke(app, ["replay", "--seed", "0", "--game", "5", "-p", "greedy", "-p", "heuristic", "--html", str(out)])
    assert res.exit_code == 0, res.output
    games = page_data(out)["games"]
    for g, policy in zip(games, ("greedy", "heuristic")):
        r = sim.play(sim.deal(0, 5), policy, seed=0, game=5)
        assert (g["policy"], g["end"], g["score"], [t["cell"] for t in g["turns"]]) == (
            policy, r.end, r.score, list(r.moves))
    assert len(re.findall(r"^end: ", res.stdout, re.M)) == 2  # the text replay of each
    for args, fragment in ((["-p", "greedy", "-p", "greedy"], "twice"),
                           (["--html", str(tmp_path)], "--html takes a file name")):
        bad = cli.invoke(app, ["replay", *args])
        assert bad.exit_code == 2 and bad.stderr.startswith("Error:") and fragment in bad.stderr


def test_a_game_with_no_legal_cell_names_the_card_that_has_none(tmp_path):
    # grid=2, max_pile=8: greedy fills the 4 piles with 32 cards; the 33rd has no legal cell. The page shows the
    # 32nd as the card drawn: its end names the 33rd, the card the stock strip shows next.
    out = tmp_path / "r.html"
    res = cli.invoke(app, ["replay", "--seed", "1", "--game", "2", "--rule", "grid=2", "--rule", "max_pile=8",
                           "--rule", "max_face_down=15", "--html", str(out), "-q"])
    assert res.exit_code == 0, res.output
    data = page_data(out)
    (g,) = data["games"]
    assert g["end"] == "no_move" and g["cardsPlayed"] == 32
    rank = data["deck"][32]
    assert (f"every pile of the full 2x2 grid holds 8 cards, so card 33 ({'A' if rank == 1 else rank}) "
            "has no legal cell") in g["endText"]
    assert res.stdout.splitlines()[-1] == "end: lost (no_move) after 32 cards"


def test_a_pile_of_one_card_is_said_in_the_singular(tmp_path):
    # "every pile of the full 4x4 grid holds 1 cards"
    out = tmp_path / "r.html"
    ended = []
    for game in range(10):
        res = cli.invoke(app, ["replay", "--game", str(game), "--rule", "max_pile=1", "--rule", "max_face_down=15",
                               "--html", str(out), "-q"])
        assert res.exit_code == 0, res.output
        (g,) = page_data(out)["games"]
        if g["end"] == "no_move":
            ended.append(g["endText"])
    assert ended and all("every pile of the full 4x4 grid holds 1 card, so card 17" in text for text in ended)


@pytest.mark.slow  # compiles the solver
def test_an_oracle_that_finds_no_win_says_the_game_is_greedys(tmp_path):
    out = tmp_path / "r.html"
    res = cli.invoke(app, ["replay", "--seed", "3", "--game", "4", "-p", "oracle", "--policy-arg", "nodes=300",
                           "--html", str(out), "-q"])
    assert res.exit_code == 0, res.output
    greedy = sim.play(sim.deal(3, 4), "greedy", seed=3, game=4)
    (g,) = page_data(out)["games"]
    assert not greedy.won and [t["cell"] for t in g["turns"]] == list(greedy.moves)
    note = "the solver found no win within nodes=300, so this is greedy's game"
    assert res.stdout.splitlines()[-1] == f"note: {note}" and g["endText"].endswith(f"Note: {note}.")
    won = cli.invoke(app, ["replay", "--seed", "0", "--game", "5", "-p", "oracle", "--policy-arg", "nodes=20000", "-q"])
    assert won.exit_code == 0 and "note:" not in won.stdout and won.stdout.splitlines()[-1].startswith("end: win")


# --- --png DIR, figures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """greedy, random (it wins almost never) and heuristic on the same N deals."""
    base = tmp_path_factory.mktemp("pages")
    return [sim.run(sim.RunConfig(policy=p, n=N, seed=4), workers=2, out=base / p).path
            for p in ("greedy", "random", "heuristic")]


def legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_report_figures_name_every_run_and_carry_their_values(runs):
    reports = load_reports(runs)
    assert reports[1].wins == 0  # random: a run with nothing to draw among the wins
    figures = plots.report_figures(reports, compare_runs(runs))
    assert list(figures) == ["win_rate", "score_distribution", "cards_played", "paired_difference"]
    for name, fig in figures.items():
        caption = fig.get_suptitle().replace("\n", " ")
        assert all(r.name in caption for r in reports), name  # every figure names its runs
    ax, ax_lost = figures["score_distribution"].axes
    assert [t.split(":")[0] for t in legend_texts(ax)] == [r.name for r in reports]
    shown = sorted(t.get_text() for t in ax_lost.texts)  # the lost panel's bars carry their values
    assert shown == sorted(plots._percent(100 * r.losses / r.games) for r in reports)
    for ax in figures["cards_played"].axes:  # both legends list every run, a run without wins included
        texts = legend_texts(ax)
        assert [t.split(" (")[0] for t in texts] == [r.name for r in reports]
    assert "(no won games)" in legend_texts(figures["cards_played"].axes[0])[1]
    top, bottom = figures["win_rate"].axes
    assert top.get_ylim()[0] == 0 and bottom.get_ylim()[0] == 0
    labels = " ".join(t.get_text() for t in top.texts)
    for r in reports:
        assert fmt_ci(r.win_rate_low, r.win_rate_high, pct_digits(N)) in labels


def test_cards_played_draws_a_count_no_game_ended_on_at_0(runs):
    # Each panel's lines cover every count of cards some run's games ended on; a count a run's games never
    # ended on is a point at 0, not a straight line drawn across it (here: no win with 26 cards).
    from dataclasses import replace

    greedy, _, heuristic = load_reports(runs)
    gap = replace(greedy, cards_played_wins=((25, 1), (27, 3)), wins=4)
    fig = plots.cards_played_figure([gap, heuristic])
    won = [line for line in fig.axes[0].get_lines() if len(line.get_xdata())]
    played = [c for c, k in heuristic.cards_played_wins if k] + [25, 27]
    span = range(min(played), max(played) + 1)
    assert list(won[0].get_xdata()) == list(span) and list(won[1].get_xdata()) == list(span)
    assert list(won[0].get_ydata()) == [{25: 25.0, 27: 75.0}.get(c, 0.0) for c in span]
    counts = dict(heuristic.cards_played_wins)
    assert list(won[1].get_ydata()) == [100 * counts.get(c, 0) / heuristic.wins for c in span]


def test_cards_played_legends_of_many_long_run_names_go_under_their_panels(runs):
    # Eight runs, some named after a heuristic's seven weights: the legends were wider than their panels, over
    # each other and the lines, and the panels shrank to nothing.
    from dataclasses import replace

    greedy, random, heuristic = load_reports(runs)
    names = ["g", "heuristic-weights-3.8167_-16.6057_-2.1969_-15.6904_-1.4487_1.1991_3.9846-seed0-n200",
             "heuristic-weights1.5_-2.25_0.75_3.125_-0.5_2_1-seed0-n200", "some_long_plugin_file.FewestFaceDown-seed0-n200"]
    reports = [replace(r, path=f"results/{name}{i}{r.policy[0]}") for i, name in enumerate(names)
               for r in (greedy, heuristic)]
    fig = plots.cards_played_figure(reports)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax.get_window_extent(renderer) for ax in fig.axes]
    legends = [ax.get_legend().get_window_extent(renderer) for ax in fig.axes]
    assert all(p.height >= 0.35 * fig.bbox.height and p.width >= 0.35 * fig.bbox.width for p in panels), ([p.bounds for p in panels], fig.bbox.bounds)
    assert not any(legend.overlaps(p) for legend in legends for p in panels)
    assert not legends[0].overlaps(legends[1])
    assert all(fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 and fig.bbox.y0 <= b.y0 for b in legends)
    for ax in fig.axes:  # every run still listed, whole
        texts = ["".join(t.split()) for t in legend_texts(ax)]  # the lines of a name wrapped at its width, joined
        assert len(texts) == len(reports) and all(t.startswith(r.name + "(") for t, r in zip(texts, reports))


def test_the_score_distribution_lists_many_long_run_names_under_its_panel_not_over_the_bars(runs):
    # Six runs, some named after a heuristic's seven weights: the legend covered the tallest bars (scores 13, 17
    # and 18).
    from dataclasses import replace

    greedy, random, heuristic = load_reports(runs)
    names = ["g", "heuristic-weights-3.8167_-16.6057_-2.1969_-15.6904_-1.4487_1.1991_3.9846-seed0-n200",
             "some_long_plugin_file.FewestFaceDown-seed0-n200"]
    reports = [replace(r, path=f"results/{name}{i}{r.policy[0]}") for i, name in enumerate(names)
               for r in (greedy, heuristic)]
    fig = plots.score_distribution_figure(reports)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    bars = [b.get_window_extent(renderer) for b in ax.patches if b.get_height() > 0]
    assert bars and not any(legend.overlaps(b) for b in bars)
    assert legend.y1 <= ax.get_window_extent(renderer).y0 and fig.bbox.y0 <= legend.y0
    texts = ["".join(t.split()) for t in legend_texts(ax)]  # every run still listed, whole
    assert len(texts) == len(reports) and all(t.startswith(r.name) for t, r in zip(texts, reports))
    few = plots.score_distribution_figure(reports[:2])  # two short names: the legend stays in the panel
    few.canvas.draw()
    inside = few.axes[0].get_legend().get_window_extent()
    assert few.axes[0].get_window_extent().contains((inside.x0 + inside.x1) / 2, (inside.y0 + inside.y1) / 2)


def test_frontier_labels_stay_inside_the_panel():
    # Long run names (a solve run's settings) near the right edge go on the left of their point.
    long = ["node_limit=none split_after=0 time_limit=2.0", "node_limit=3000 split_after=8000000 time_limit=none"]
    fig = plots.frontier_figure(long, [1.0, 0.93], [0.89, 0.79], [1.0, 0.98], [23.9, 21.5], "frontier")
    fig.canvas.draw()
    ax = fig.axes[0]
    frame = ax.get_window_extent()
    assert len(ax.texts) == 2
    for note in ax.texts:
        box = note.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, (note.get_text(), box, frame)


def test_frontier_labels_of_runs_close_together_do_not_overlap():
    # Greedy under max_face_down=4 and =5: 10.6% and 14.0% of the deals won, 0.43 and 0.53 per deal.
    fig = plots.frontier_figure(["greedy max_face_down=4", "heuristic max_face_down=4", "greedy max_face_down=5"],
                                [0.1062, 0.8506, 0.1401], [0.102, 0.8456, 0.1353], [0.1105, 0.8555, 0.1449],
                                [0.43, 11.86, 0.53], "frontier")
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in fig.axes[0].texts]
    assert len(boxes) == 3
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), boxes


def test_runs_at_the_same_point_of_the_frontier_share_one_label_above_the_axis():
    # Two runs that lost every deal sit at (0, 0%): one label naming both, above the x axis's numbers.
    fig = plots.frontier_figure(["greedy", "random", "heuristic"], [0.0, 0.0, 0.5], [0.0, 0.0, 0.3],
                                [0.79, 0.79, 0.7], [0.0, 0.0, 5.0], "frontier")
    fig.canvas.draw()
    ax = fig.axes[0]
    frame = ax.get_window_extent()
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["greedy\nrandom\n0.0%, 0.00", "heuristic\n50.0%, 5.00"], texts
    for note in ax.texts:
        box = note.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0, (note.get_text(), box, frame)


def test_the_verdict_names_the_side_ahead_without_a_runs_colour(runs):
    from sim.analysis.html import FIGURE_CAPTIONS, STYLE, pair_html

    comparison = compare_runs([runs[0], runs[2]])  # greedy against heuristic: B (heuristic) is ahead
    assert comparison.pairs[0].diff_high < 0
    assert 'class="b-ahead">heuristic wins more deals' in pair_html(comparison.pairs[0], comparison.n)
    assert "Black: a difference shown" in FIGURE_CAPTIONS["paired_difference"]
    # The page's verdict is bold and black whichever side is ahead: green and red are runs' colours elsewhere.
    assert re.search(r"\.a-ahead, \.b-ahead \{ color: #111; font-weight: 600", STYLE)
    swapped = compare_runs([runs[2], runs[0]])
    assert 'class="a-ahead">heuristic wins more deals' in pair_html(swapped.pairs[0], swapped.n)


def test_no_side_is_named_ahead_when_the_interval_and_mcnemars_test_disagree():
    # 21 deals, 5 won by A alone, none by B alone: the Bonett-Price interval excludes 0 (+1.0% .. +42.5%), but
    # McNemar's exact p = 2 / 2**5 = 0.0625. The page and the figure name neither side, and say why.
    from sim.analysis.compare import Pair
    from sim.analysis.html import pair_html
    from sim.stats import mcnemar_exact, paired_difference_interval

    def pair(n, b, c):
        low, high = paired_difference_interval(n, b, c)
        return Pair(a="A", b="B", games=n, wins_a=10 + b, wins_b=10 + c, both=10, a_only=b, b_only=c,
                    diff=(b - c) / n, diff_low=low, diff_high=high, p_value=mcnemar_exact(b, c), score_diff=None,
                    score_diff_low=None, score_diff_high=None)

    unclear = pair(21, 5, 0)
    assert unclear.diff_low > 0 and unclear.p_value == 0.0625 and unclear.ahead is None
    assert ('class="nosig">no difference shown (the interval excludes 0, but McNemar&#x27;s exact p is not below '
            '0.05)') in pair_html(unclear, 21)
    clear = pair(21, 6, 0)  # p = 0.03125
    assert clear.ahead == "a" and 'class="a-ahead">A wins more deals' in pair_html(clear, 21)
    assert pair(21, 0, 6).ahead == "b" and pair(21, 2, 1).unclear == "the interval contains 0"
    for p, colour in ((unclear, plots.NOT_SHOWN), (clear, plots.SHOWN), (pair(21, 0, 6), plots.SHOWN)):
        fig = plots.paired_difference_figure([p], 21)
        drawn = fig.axes[0].lines[0].get_color()
        assert drawn == colour, (p, drawn)


@pytest.mark.slow
def test_compare_writes_its_figures_into_a_directory_and_a_page(runs, tmp_path):
    res = cli.invoke(app, ["compare", str(runs[0]), str(runs[2]), "--png", str(tmp_path / "figs"),
                           "--html", str(tmp_path / "c.html")])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "frontier.png", "paired_difference.png", "score_distribution.png", "win_rate.png"]
    c = compare_runs([runs[0], runs[2]])
    (p,) = c.pairs
    page = (tmp_path / "c.html").read_text()
    for cell in (f"{p.both:,} (both)", f"{p.a_only:,} (A only)", f"{p.b_only:,} (B only)", "McNemar"):
        assert cell in page
    assert f"{100 * p.diff:+.2f} pp" in page and f"{100 * p.diff_low:+.2f} pp" in page and f"foursquare-sim {sim.__version__}" in page
    assert page.count("data:image/png;base64,") == 4
    assert_self_contained(page)
    # the frontier figure puts each run at (score per deal, win rate)
    fig = plots.compare_figures(c, arm_reports(c))["frontier"]
    points = sorted(tuple(line.get_xydata()[0]) for line in fig.axes[0].lines if line.get_marker() == "o")
    assert points == sorted((a.score_per_deal, 100 * a.win_rate) for a in c.arms)
    # the paired-difference figure draws the interval the table gives
    fig = plots.compare_figures(c, arm_reports(c))["paired_difference"]
    ax = fig.axes[0]
    (segments,) = [coll.get_segments() for coll in ax.collections if coll.get_segments()]
    (x0, _), (x1, _) = segments[0]
    assert (x0, x1) == pytest.approx((100 * p.diff_low, 100 * p.diff_high))
    assert ax.get_xlim()[0] < 0 < ax.get_xlim()[1]


def test_sweep_axes_start_at_zero_and_mean_scores_carry_intervals(runs):
    from sim.analysis.sweep import Sweep, SweepRow

    reports = load_reports(runs)
    rows = tuple(SweepRow(values=(str(i),), path=r.path, games=r.games, wins=r.wins, win_rate=r.win_rate,
                          win_rate_low=r.win_rate_low, win_rate_high=r.win_rate_high, mean_score=r.score_mean,
                          mean_score_low=r.score_mean_low, mean_score_high=r.score_mean_high, reused=True)
                 for i, r in enumerate(reports))
    fig = Sweep("greedy", N, 4, ("max_pile",), rows).figure()
    top, bottom = fig.axes
    assert top.get_ylim()[0] == 0 and bottom.get_ylim()[0] == 0
    with_ci = [r for r in reports if r.score_mean_low is not None]
    caps = [seg for coll in bottom.collections for seg in coll.get_segments()]
    assert len(caps) == len(with_ci)  # one interval per mean score that has one
    for r, ((_, lo), (_, hi)) in zip(with_ci, caps):
        assert (lo, hi) == pytest.approx((r.score_mean_low, r.score_mean_high))
    assert all(Path(r.path).name in fig.get_suptitle().replace("\n", " ") for r in reports)


def test_mean_score_interval_is_the_t_interval_of_the_scores(runs, read_games):
    import numpy as np
    from scipy import stats

    r = load_report(runs[2])
    scores = read_games(runs[2])["score"].drop_nulls().to_numpy().astype(float)
    want = stats.t.interval(0.95, len(scores) - 1, loc=scores.mean(), scale=scores.std(ddof=1) / np.sqrt(len(scores)))
    assert (r.score_mean_low, r.score_mean_high) == pytest.approx(want)


@pytest.mark.parametrize("command", [["report", "RUN"], ["compare", "RUN", "RUN2"],
                                     ["sweep", "-n", "10", "--rule", "max_pile=3,4"]])
def test_png_takes_a_directory_everywhere(command, runs, tmp_path):
    args = [str(runs[0]) if a == "RUN" else str(runs[1]) if a == "RUN2" else a for a in command]
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for png in (tmp_path / "x.png", not_a_dir):
        res = cli.invoke(app, [*args, "--png", str(png)])
        assert res.exit_code == 2, res.output
        (line,) = res.stderr.strip().splitlines()
        assert line.startswith("Error: --png takes a directory")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_report_of_a_solve_run_draws_the_best_scores(tmp_path):
    run = tmp_path / "solved"
    sim.solve_run(sim.SolveConfig(n=12, seed=0, node_limit=20_000), workers=1, out=run)
    res = cli.invoke(app, ["report", str(run), "--png", str(tmp_path / "figs"), "--html", str(tmp_path / "s.html")])
    assert res.exit_code == 0, res.output
    assert [p.name for p in (tmp_path / "figs").iterdir()] == ["best_score.png"]
    page = (tmp_path / "s.html").read_text()
    assert "won" in page and page.count("data:image/png;base64,") == 1 and "solved (sim solve)" in page
    assert_self_contained(page)
    from sim.analysis.report import load_solve_report

    s = load_solve_report(run)
    fig = plots.solve_figures([s])["best_score"]
    ax = fig.axes[0]
    heights = {}
    for patch in ax.patches:  # proven and unproven parts stacked per score
        x = round(patch.get_x() + patch.get_width() / 2)
        heights[x] = heights.get(x, 0) + patch.get_height()
    assert {x: h for x, h in heights.items() if h} == pytest.approx(
        {score: 100 * k / s.deals for score, k, _ in s.score_counts})
    assert "solved" in fig.get_suptitle()
    # two solve runs of the same deals compare deal by deal; their figures have no score distribution
    other = tmp_path / "solved-less"
    sim.solve_run(sim.SolveConfig(n=12, seed=0, node_limit=5_000), workers=1, out=other)
    res = cli.invoke(app, ["compare", str(run), str(other), "--png", str(tmp_path / "cmp"), "-q"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["frontier.png", "paired_difference.png", "win_rate.png"]


def test_long_run_labels_are_wrapped_at_their_spaces_not_turned():
    long = ["node_limit=none split_after=0 time_limit=2.0", "node_limit=3000 split_after=8000000 time_limit=none"]
    fig = plots.win_rate_figure(long, [1.0, 0.93], [0.89, 0.79], [1.0, 0.98], [23.9, 23.1], "win rate")
    ticks = fig.axes[1].get_xticklabels()
    assert [t.get_text().replace("\n", " ") for t in ticks] == long
    assert all(t.get_rotation() == 0 for t in ticks) and any("\n" in t.get_text() for t in ticks)
    one_word = plots.win_rate_figure(["greedy-seed0-n20000-max_face_down5"] * 4, [0.1] * 4, [0.09] * 4, [0.11] * 4,
                                     [4.0] * 4, "win rate")
    assert all(t.get_rotation() == 30 for t in one_word.axes[1].get_xticklabels())  # nowhere to wrap: turned


def test_no_mean_score_is_struck_through_by_its_error_bar():
    # A mean of few wins has a wide interval: its error bar ran down through the value written in the bar's middle
    # (26 wins of 150 games: 3.10 .. 5.37 reached the top of "4.23"; 0.5 .. 7.5 crossed "4.00").
    from matplotlib.transforms import Bbox

    fig = plots.win_rate_figure(["g150", "wide", "greedy", "none"], [0.173, 0.05, 0.106, 0.0], [0.121, 0.01, 0.1, 0.0],
                                [0.243, 0.15, 0.112, 0.02], [4.23, 4.0, 4.04, None], "win rate",
                                [3.10, 0.5, 3.9, None], [5.37, 7.5, 4.2, None])
    fig.canvas.draw()
    scores = fig.axes[1]
    frame = scores.get_window_extent()
    labels = {t.get_text(): t.get_window_extent() for t in scores.texts if t.get_text()}
    assert set(labels) == {"4.23", "4.00", "4.04", "no wins"}
    (bars,) = scores.collections  # the intervals' lines
    ends = [scores.transData.transform(segment) for segment in bars.get_segments()]
    cap = 5 * fig.dpi / 72  # capsize, in pixels each side of the line
    for text, ((x0, y0), (x1, y1)) in zip(["4.23", "4.00", "4.04"], ends):
        interval = Bbox([[min(x0, x1) - cap, min(y0, y1)], [max(x0, x1) + cap, max(y0, y1)]])
        assert not labels[text].overlaps(interval), (text, labels[text], interval)
        assert frame.contains(labels[text].x0, labels[text].y0) and labels[text].y1 <= frame.y1, text


def test_runs_keep_a_colour_each_past_ten():
    # Thirteen runs (a heuristic's weights varied): the 11th, 12th and 13th had the 1st, 2nd and 3rd's colours.
    from matplotlib.colors import to_hex
    from matplotlib.container import BarContainer

    k = 13
    fig = plots.win_rate_figure([f"h{i}" for i in range(k)], [0.8] * k, [0.79] * k, [0.81] * k, [14.0] * k, "win rate",
                                [13.9] * k, [14.1] * k)
    (container,) = [c for c in fig.axes[1].containers if isinstance(c, BarContainer)]
    bars = [to_hex(p.get_facecolor(), keep_alpha=False) for p in container]
    assert len(bars) == k and len(set(bars)) == k
    assert bars[:10] == [to_hex(f"C{i}") for i in range(10)]  # the first ten as matplotlib's default cycle
    assert len({plots._colour(i) for i in range(plots.RUN_COLOURS)}) == plots.RUN_COLOURS == 20


def test_run_names_too_long_to_turn_get_a_row_each():
    # Turned, a run named after a heuristic's seven weights reached down half the figure: the panels were
    # squeezed until "win rate" and "mean score of wins" ran into each other. A row each, the name in one line.
    long = ["heuristic-weights-3.8167_-16.6057_-2.1969_-15.6904_-1.4487_1.1991_3.9846-seed0-n200", "greedy-seed0-n200",
            "/home/me/path/to/some_long_plugin_file.py:FewestFaceDown"]
    fig = plots.win_rate_figure(long, [0.845, 0.145, 0.145], [0.79, 0.10, 0.10], [0.89, 0.2, 0.2], [14.4, 4.3, 4.3],
                                "win rate")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ticks = fig.axes[0].get_yticklabels()
    assert [t.get_text() for t in ticks] == long and all(t.get_rotation() == 0 for t in ticks)
    assert all(fig.bbox.x0 <= t.get_window_extent(renderer).x0 for t in ticks)
    panels = [ax.get_window_extent(renderer) for ax in fig.axes if ax.axison]
    assert len(panels) == 2 and all(p.height >= 0.4 * fig.bbox.height for p in panels)
    axis_labels = [a.get_window_extent(renderer) for ax in fig.axes for a in (ax.xaxis.label, ax.yaxis.label)
                   if a.get_text()]
    assert not any(a.overlaps(b) for i, a in enumerate(axis_labels) for b in axis_labels[i + 1:])


def test_a_caption_is_wrapped_to_the_width_it_is_drawn_at():
    """Each line of a figure's caption fits the figure as drawn (directory names are wider than a per-character
    estimate allowed: a sweep's caption ran past the edge), and a name wider than the figure is cut, not lost."""
    fig = plots._figure(9.6, 4)
    names = [f"greedy-seed0-n5000-max_pile{p}-max_face_down{f}" for p in (3, 4) for f in (3, 4, 5)]
    text = "runs: " + "; ".join(f"max_face_down={n[-1]} max_pile=3: {n}" for n in names) + " " + "x" * 300
    plots._caption(fig, text)
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle
    lines = title.get_text().split("\n")
    assert len(lines) > 3 and "".join(lines).replace(" ", "") == text.replace(" ", "")
    for line in lines:
        title.set_text(line)
        assert title.get_window_extent(renderer).x1 <= fig.bbox.x1, line


def test_a_page_says_what_each_figure_shows_to_a_reader_who_cannot_see_it(runs):
    from sim.analysis.html import STYLE, compare_page

    c = compare_runs([runs[0], runs[2]])
    page = compare_page(c, plots.compare_figures(c, arm_reports(c)))
    alts = re.findall(r'<img alt="([^"]*)"', page)
    assert len(alts) == 4 and all("greedy" in alt and "heuristic" in alt for alt in alts), alts
    assert any(alt.startswith("Paired difference. Win-rate difference") for alt in alts), alts
    # On a phone a figure is shown at full size and scrolled sideways: the page says so above it.
    assert re.search(r"@media \(max-width: 640px\) \{[^@]*figure::before \{ content: \"Scroll sideways", STYLE)
    # A win-rate difference never runs past +-100 points, even on a handful of deals (5 won by B alone).
    from sim.analysis.compare import Pair
    from sim.stats import mcnemar_exact, paired_difference_interval

    low, high = paired_difference_interval(5, 0, 5)
    few = Pair(a="A", b="B", games=5, wins_a=0, wins_b=5, both=0, a_only=0, b_only=5, diff=-1.0, diff_low=low,
               diff_high=high, p_value=mcnemar_exact(0, 5), score_diff=None, score_diff_low=None,
               score_diff_high=None)
    assert plots.paired_difference_figure([few], 5).axes[0].get_xlim() == (-105, 105)
    # One game both won: its score difference has no interval, and the panel said so but drew no point for it.
    one = Pair(a="A", b="B", games=5, wins_a=1, wins_b=2, both=1, a_only=0, b_only=1, diff=-0.2, diff_low=-0.6,
               diff_high=0.3, p_value=1.0, score_diff=-15.0, score_diff_low=None, score_diff_high=None)
    scores = plots.paired_difference_figure([one], 5).axes[1]
    assert [tuple(line.get_xdata()) for line in scores.lines if line.get_marker() == "o"] == [(-15.0,)]
    assert [t.get_text() for t in scores.texts] == ["-15.00 over 1 game: no interval"]
    lo, hi = scores.get_xlim()
    assert lo < -15 < hi


def test_paired_differences_of_long_run_names_keep_names_labels_and_titles_apart():
    # Runs named after a heuristic's seven weights took half the figure's width: the panels shrank until the
    # labels above their rows ran over the names' first lines and past the figure's edge, and the right
    # panel's title was cut off.
    from sim.analysis.compare import Pair
    from sim.stats import mcnemar_exact, paired_difference_interval

    names = ["g200", "heuristic-weights-3.8167_-16.6057_-2.1969_-15.6904_-1.4487_1.1991_3.9846-seed0-n200",
             "some_long_plugin_file.FewestFaceDown-seed0-n200"]
    low, high = paired_difference_interval(200, 3, 143)
    pairs = [Pair(a=a, b=b, games=200, wins_a=29, wins_b=169, both=21, a_only=3, b_only=143, diff=-0.7,
                  diff_low=low, diff_high=high, p_value=mcnemar_exact(3, 143), score_diff=-7.5, score_diff_low=-11.1,
                  score_diff_high=-3.9) for i, a in enumerate(names) for b in names[i + 1:]]
    fig = plots.paired_difference_figure(pairs, 200)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ticks = [t.get_window_extent(renderer) for t in fig.axes[0].get_yticklabels()]
    assert max(t.width for t in ticks) <= 0.3 * fig.bbox.width
    notes = [t.get_window_extent(renderer) for ax in fig.axes for t in ax.texts]
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    assert not any(n.overlaps(t) for n in notes for t in ticks)
    assert all(fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 for b in notes + titles)
    for label, p in zip(fig.axes[0].get_yticklabels(), pairs):  # each name whole, wrapped
        assert "".join(label.get_text().split()) == f"{p.a}-{p.b}"


def test_a_figure_never_rounds_a_share_to_0_or_100_percent_it_does_not_reach():
    # The oracle won 19,999 of 20,000 deals: its point's label said 100.0%.
    assert plots._percent(100 * 19_999 / 20_000) == "99.9950%" and plots._percent(100.0) == "100.0%"
    assert plots._percent(0.05) == "0.050%" and plots._percent(11.5) == "11.5%" and plots._percent(3.333) == "3.3%"


def test_figures_write_win_rates_as_their_tables_and_other_shares_with_one_decimal(runs):
    """The report's table said 11.25% and 8.53%, its figure 11.2% and 8.53% (3 significant digits); the lost
    panel wrote 88.8% beside 8.25%."""
    from sim.analysis.report import overview_table

    reports = load_reports(runs)
    table = overview_table(reports)
    rate, ci = table.headers.index("win rate"), table.headers.index("95% CI")
    figure = plots.report_win_rate_figure(reports)
    assert [t.get_text() for t in figure.axes[0].texts] == [f"{row[rate]}\n({row[ci]})" for row in table.rows]
    c = compare_runs(runs)
    (arms, _) = c.tables()
    rate, ci, score = (arms.headers.index(h) for h in ("win rate", "95% CI (Wilson)", "score per deal"))
    figures = plots.compare_figures(c, arm_reports(c))
    assert [t.get_text() for t in figures["win_rate"].axes[0].texts] == [f"{row[rate]}\n({row[ci]})"
                                                                         for row in arms.rows]
    frontier = sorted(t.get_text().split("\n")[-1] for t in figures["frontier"].axes[0].texts)
    assert frontier == sorted(f"{row[rate]}, {row[score]}" for row in arms.rows)
    lost = [t.get_text() for t in figures["score_distribution"].axes[1].texts]
    assert lost == [pct_text(r.losses / r.games, 1) for r in reports] and all(
        re.fullmatch(r"\d+\.\d%", v) for v in lost if not v.startswith(("0.0", "99.9")))


def test_cards_played_has_whole_cards_and_no_scale_without_games(tmp_path):
    run = sim.run(sim.RunConfig(policy="greedy", n=1, seed=0), workers=1, out=tmp_path / "one").path
    (report,) = load_reports([run])
    assert report.wins == 0  # game 0 of seed 0 is lost: the won panel has nothing to draw
    fig = plots.cards_played_figure([report])
    fig.canvas.draw()
    won, lost = fig.axes
    assert list(won.get_yticks()) == []
    assert all(float(t).is_integer() for t in lost.get_xticks()), lost.get_xticks()


def test_the_cards_played_axis_ends_at_the_decks_40_cards(runs):
    # greedy loses most games with all 40 cards played: the axis's margin ran on to 42 cards.
    greedy, random, heuristic = load_reports(runs)
    assert max(c for c, k in greedy.cards_played_losses if k) == 40
    for reports in ([greedy], [greedy, random, heuristic]):
        fig = plots.cards_played_figure(reports)
        fig.canvas.draw()
        for ax in fig.axes:
            assert ax.get_xlim()[1] == 40 and max(ax.get_xticks()[ax.get_xticks() <= ax.get_xlim()[1]]) == 40
            at_40 = [line for line in ax.get_lines() if 40 in line.get_xdata()]
            assert at_40 and not any(line.get_clip_on() for line in at_40)  # the point on the edge drawn whole


def sweep_of(outcomes, options=("max_face_down",), mean=4.0):
    """A Sweep (no games played) of one combination per (wins, games), each value its index; a combination
    with wins has `mean` as its mean score, with an interval from two wins on."""
    from sim.analysis.sweep import Sweep, SweepRow
    from sim.stats import wilson

    rows = []
    for i, (wins, games) in enumerate(outcomes):
        low, high = wilson(wins, games)
        rows.append(SweepRow(values=tuple(str(i + j) for j in range(len(options))), path=f"results/run{i}",
                             games=games, wins=wins, win_rate=wins / games, win_rate_low=low, win_rate_high=high,
                             mean_score=mean if wins else None, mean_score_low=mean - 0.5 if wins > 1 else None,
                             mean_score_high=mean + 0.5 if wins > 1 else None, reused=False))
    return Sweep("greedy", outcomes[0][1], 0, options, tuple(rows))


@pytest.mark.parametrize("outcomes", [[(1276, 20_000), (2242, 20_000)], [(0, 1)], [(1, 1), (0, 1)]])
def test_a_sweep_figure_writes_its_win_rates_as_the_table_does(outcomes):
    """6.38% beside 11.2% (the table: 11.21%), and 79.3% where the table says 79.35%: the figure's labels are
    the table's cells."""
    s = sweep_of(outcomes)
    table = s.table()
    rate, ci = table.headers.index("win rate"), table.headers.index("95% CI (Wilson)")
    fig = s.figure()
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == [f"{row[rate]}\n({row[ci]})" for row in table.rows]


@pytest.mark.parametrize("policy_args", [{}, {"weights": "/a/longer/folder/of/tuned/weights/w.json"}])
def test_a_sweep_figures_title_is_drawn_whole(policy_args):
    """Two combinations of 20,000 games: the title's closing bracket was cut at the figure's right edge."""
    from dataclasses import replace

    s = replace(sweep_of([(4403, 20_000), (2066, 20_000)], options=("grid", "max_face_down")),
                policy_args=policy_args)
    fig = s.figure()
    fig.canvas.draw()  # laid out
    title = fig.axes[0].title
    assert " ".join(title.get_text().split()).endswith("(20,000 games each, same deals, seed 0)")
    box = title.get_window_extent(fig.canvas.get_renderer())
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, (box, fig.bbox)
    from sim.analysis.html import figure_alt

    assert " ".join(title.get_text().split()) in figure_alt("win_rate", fig)  # said in one line


@pytest.mark.parametrize("outcomes", [[(0, 1)], [(30, 200), (0, 200)]])
def test_a_combination_without_wins_is_said_above_the_axis_and_gets_no_invented_scale(outcomes):
    s = sweep_of(outcomes)
    fig = s.figure()
    fig.canvas.draw()  # laid out
    scores = fig.axes[1]
    (said,) = [t for t in scores.texts if t.get_text() == "no wins"]
    renderer = fig.canvas.get_renderer()
    axis_line = scores.get_window_extent(renderer).y0
    assert said.get_window_extent(renderer).y0 > axis_line + 5  # not on the x axis's line
    if all(r.mean_score is None for r in s.rows):  # no mean score anywhere: no 0..1 scale of nothing
        assert list(scores.get_yticks()) == []
    else:
        assert len(scores.get_yticks()) > 1


def test_a_large_sweep_has_a_row_per_combination_and_a_small_one_a_column():
    """48 combinations made a figure 6,138 pixels wide, of turned labels of four lines over each other, under
    a caption of seven lines: now a row each, its label in one line, the figure as wide as a page."""
    options = ("max_face_down", "max_pile", "grid", "adjacency")
    big = sweep_of([(40 * i, 2000) for i in range(48)], options=options)
    fig = big.figure()
    fig.canvas.draw()  # laid out
    renderer = fig.canvas.get_renderer()
    assert fig.get_figwidth() * plots.DPI <= 1300 and fig.get_figheight() > fig.get_figwidth()
    rates = fig.axes[0]
    ticks = rates.get_yticklabels()
    assert [t.get_text() for t in ticks] == [" ".join(label.split()) for label in big.labels()]
    assert all(t.get_rotation() == 0 for t in ticks)
    boxes = sorted((t.get_window_extent(renderer) for t in ticks), key=lambda b: b.y0)
    assert all(low.y1 <= high.y0 for low, high in zip(boxes, boxes[1:]))  # no label over another
    assert all(fig.bbox.x0 <= b.x0 for b in boxes)
    values = [t for ax in fig.axes for t in ax.texts]
    assert len(values) == 2 * 48 and all(t.get_window_extent(renderer).x1 <= fig.bbox.x1 for t in values)
    assert len(fig.get_suptitle().splitlines()) <= 2 and "48" in fig.get_suptitle()
    for small in ([(400, 2000), (800, 2000)], [(100 * i, 2000) for i in range(1, 7)]):
        fig = sweep_of(small, options=options[:2]).figure()
        ticks = fig.axes[1].get_xticklabels()  # a column each, under the mean scores, as before
        assert len(ticks) == len(small) and all(t.get_rotation() == 0 and "\n" in t.get_text() for t in ticks)


def test_score_labels_do_not_run_into_each_other_when_scores_go_past_24():
    # grid=2 wins with up to 36 cards left: 37 labels, one per score, ran into each other.
    from dataclasses import replace

    from sim.analysis.report import RunReport

    one = RunReport(path="results/g", policy="greedy", n=1, seed=0, rules={}, deals="", status="complete", games=1,
                    wins=1, losses=0, win_rate=1.0, win_rate_low=0.2, win_rate_high=1.0,
                    score_counts=tuple((s, int(s == 3)) for s in range(25)), score_mean=3.0, score_mean_low=None,
                    score_mean_high=None, score_median=3.0, score_q1=3.0, score_q3=3.0, ends=(("win", 1),),
                    cards_played_wins=((37, 1),), cards_played_losses=(), face_down_at_loss=())
    wide = replace(one, wins=37, games=38, losses=1, score_counts=tuple((s, 1) for s in range(37)))
    fig = plots.score_distribution_figure([wide])
    fig.canvas.draw()
    ax = fig.axes[0]
    boxes = sorted((t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
    assert all(b.x0 - a.x1 >= 4 for a, b in zip(boxes, boxes[1:]))  # pixels between labels: "10 11", not "1011"
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "36"
    assert {*ax.get_xticks(), *ax.get_xticks(minor=True)} == set(range(37))  # still a tick at every score
    default = plots.score_distribution_figure([one])  # 0 to 24: every score labelled
    assert [t.get_text() for t in default.axes[0].get_xticklabels()] == [str(s) for s in range(25)]


def test_the_lost_panels_turned_values_stay_inside_its_frame(runs):
    # Six runs: the values are turned, and random's 100.0% of games lost ran up through the frame into the title.
    from dataclasses import replace

    greedy, random, heuristic = load_reports(runs)
    lost_all = replace(random, wins=0, losses=random.games, score_counts=tuple((s, 0) for s, _ in random.score_counts))
    reports = [replace(r, path=f"results/{r.policy}{i}") for i in range(2) for r in (greedy, lost_all, heuristic)]
    fig = plots.score_distribution_figure(reports, overlay=True)
    fig.canvas.draw()
    ax_lost = fig.axes[1]
    frame = ax_lost.get_window_extent()
    values = [t for t in ax_lost.texts if t.get_text()]
    assert "100.0%" in [t.get_text() for t in values] and all(t.get_rotation() == 90 for t in values)
    assert all(t.get_window_extent().y1 <= frame.y1 for t in values)
    assert max(ax_lost.get_yticks()) == 100


def test_a_score_distribution_without_any_win_says_so_and_gets_no_invented_scale():
    # sim run --policy random -n 200 --seed 1 wins none: its figure was an empty panel under a 0..0.06% scale.
    from dataclasses import replace

    from sim.analysis.report import RunReport

    lost = RunReport(path="results/r", policy="random", n=200, seed=1, rules={}, deals="", status="complete",
                     games=200, wins=0, losses=200, win_rate=0.0, win_rate_low=0.0, win_rate_high=0.02,
                     score_counts=tuple((s, 0) for s in range(25)), score_mean=None, score_mean_low=None,
                     score_mean_high=None, score_median=None, score_q1=None, score_q3=None,
                     ends=(("too_many_face_down", 200),), cards_played_wins=(), cards_played_losses=((6, 200),),
                     face_down_at_loss=((5, 200),))
    won = replace(lost, path="results/g", wins=2, losses=198, score_counts=tuple((s, 2 * (s == 3)) for s in range(25)))
    for reports, overlay in (([lost], False), ([lost, replace(lost, path="results/r2")], True)):
        ax = plots.score_distribution_figure(reports, overlay=overlay).axes[0]
        assert [t.get_text() for t in ax.texts] == ["no game was won: no score to draw"]
        assert list(ax.get_yticks()) == []
    ax = plots.score_distribution_figure([lost, won]).axes[0]  # one run's bars: nothing said, its scale kept
    assert list(ax.texts) == [] and len(ax.get_yticks()) > 1
    won_panel, lost_panel = plots.cards_played_figure([lost]).axes  # and its cards played by won games
    assert [t.get_text() for t in won_panel.texts] == ["no game was won: nothing to draw"]
    assert list(lost_panel.texts) == [] and len(lost_panel.get_yticks()) > 1


def test_the_best_score_legend_hides_no_bar_and_no_value():
    # Three solve runs: the legend's six lines covered the tallest bars and their values at the top left.
    from pathlib import Path as P

    from sim.jobs.solve_results import SolveSummary

    def summary(name, counts):
        deals = sum(k for _, k in counts)
        return SolveSummary(path=P(name), deals=deals, won=deals, lost=0, unresolved=0, winnable_low=0.9,
                            winnable_high=1.0, proven=deals, score_counts=tuple((s, k, k) for s, k in counts),
                            mean_score=None, mean_proven=None, mean_bound=None, median_seconds=None, p99_seconds=None,
                            median_nodes=None, p99_nodes=None, seconds=1.0, deals_per_s=1.0, status="complete",
                            options={})

    fig = plots.best_score_figure([summary("solve-seed0-n20", [(23, 2), (24, 18)]),
                                   summary("solve-seed0-n30-max_face_down15-grid2", [(34, 5), (35, 24), (36, 1)]),
                                   summary("solve-seed0-n30-grid3", [(31, 30)])])
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    drawn = [p.get_window_extent() for p in ax.patches if p.get_height() > 0]
    drawn += [t.get_window_extent() for t in ax.texts if t.get_text()]
    assert len(drawn) == 12 and not any(legend.overlaps(b) for b in drawn)
    assert ax.get_ylim()[1] > 100 and max(ax.get_yticks()) <= 100  # the room above 100% is no share of deals
    assert "\n" in fig.get_suptitle()  # a caption of two lines, laid out before the legend was given its room
    # Two runs with a deal share at the same score: their level values ran into each other ("2.5%2.5%").
    fig = plots.best_score_figure([summary("a/solve", [(6, 1), (24, 39)]), summary("b/solve", [(6, 1), (24, 39)])])
    fig.canvas.draw()
    ax = fig.axes[0]
    values = [t for t in ax.texts if t.get_text()]
    assert len(values) == 4 and all(t.get_rotation() == 90 for t in values)
    boxes = [t.get_window_extent() for t in values]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert [t.get_text() for t in ax.get_legend().get_texts()][::2] == ["a/solve: proven best", "b/solve: proven best"]
