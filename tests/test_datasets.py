"""Runs as a dataset (issue 12): `sim.load`, `sim ls`, `GameColumns.to_polars`, the README's polars and
DuckDB examples; and solve runs: default directories per limit and mode, `sim compare` of solve runs."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import sim
from sim.cli import app
from sim.errors import RunError, UsageError

README = Path(__file__).resolve().parent.parent / "README.md"
cli = CliRunner()


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


def parts_of(run_dir) -> pl.DataFrame:
    return pl.read_parquet(Path(run_dir) / "games" / "*.parquet").sort("game")


# --- GameColumns.to_polars --------------------------------------------------------------------------


@pytest.mark.parametrize("record", [False, True])
def test_to_polars_has_exactly_the_schema_and_rows_of_a_part(tmp_path, record):
    run = tmp_path / "run"
    sim.run(sim.RunConfig(n=3000, seed=5, record_deals=record), out=run, workers=1, chunk_size=1000)
    frame = sim.play_range(5, 0, 3000, "greedy", record_deals=record).to_polars()
    rows = parts_of(run)
    assert frame.schema == rows.schema
    assert frame.equals(rows)
    assert frame["score"].null_count() == (~frame["won"]).sum()  # a lost game has no score
    assert frame["end"].dtype == pl.Enum(["win", "too_many_face_down", "stock_empty", "no_move"])
    decks = np.array(sim.play_decks(np.array([sim.deal(5, g) for g in range(4)]), record_deals=True).to_polars()
                     ["deck"].to_list())
    assert decks.shape == (4, 40) and tuple(decks[3]) == sim.deal(5, 3)


def test_engine_builds_the_table_without_the_jobs_layer():
    import sim.engine.results as results

    source = Path(results.__file__).read_text()
    assert "sim.jobs" not in source and "\nimport polars" not in source  # polars only inside the functions
    from sim.jobs.play import games_frame

    cols = sim.play_range(0, 0, 50)
    as_dict = {k: getattr(cols, k) for k in ("game", "won", "score", "cards_played", "face_down", "piles", "end",
                                             "deck")}
    assert games_frame(as_dict).equals(cols.to_polars())


# --- sim.load -----------------------------------------------------------------------------------------


@pytest.fixture
def two_runs(tmp_path):
    greedy, loose = tmp_path / "greedy", tmp_path / "loose"
    sim.run(sim.RunConfig(n=2000), out=greedy, workers=1, chunk_size=700)
    sim.run(sim.RunConfig(n=2000, rules=sim.Rules(max_face_down=5), policy="random"), out=loose, workers=1)
    return greedy, loose


def test_load_one_run_is_its_games(two_runs):
    greedy, _ = two_runs
    lf = sim.load(greedy)
    assert isinstance(lf, pl.LazyFrame)
    assert lf.collect().sort("game").equals(parts_of(greedy))
    assert sim.load(str(greedy)).collect().height == 2000


def test_load_several_runs_adds_the_run_and_its_settings(two_runs):
    greedy, loose = two_runs
    both = sim.load([greedy, loose]).collect()
    assert both.columns[:8] == ["run", "policy", "policy_args", "seed", "adjacency", "max_pile", "max_face_down",
                                "grid"]
    assert both.height == 4000
    by_run = both.group_by("run", "policy", "max_face_down").agg(pl.col("won").sum(), pl.len()).sort("run")
    assert by_run.rows() == [("greedy", "greedy", 4, parts_of(greedy)["won"].sum(), 2000),
                             ("loose", "random", 5, parts_of(loose)["won"].sum(), 2000)]
    assert both.filter(pl.col("run") == "loose").drop(both.columns[:8]).sort("game").equals(parts_of(loose))


def test_load_reads_only_verified_parts_and_refuses_mixed_kinds(two_runs, tmp_path):
    greedy, _ = two_runs
    pl.DataFrame({"game": [0, 1], "won": [True, True]}).write_parquet(greedy / "games" / "stray.parquet")
    assert sim.load(greedy).collect().height == 2000  # a file that is not a part is not read
    solved = tmp_path / "solved"
    sim.solve_run(sim.SolveConfig(n=3, node_limit=1000), out=solved, workers=1)
    assert sim.load([solved]).collect().columns[:4] == ["run", "first_win", "node_limit", "time_limit"]
    with pytest.raises(UsageError, match="solve runs and runs of games"):
        sim.load([greedy, solved])
    with pytest.raises(UsageError, match="not a run directory"):
        sim.load(tmp_path)
    # A path that is not there said "is not a run directory (no manifest.json)", as if the folder were.
    for path in (tmp_path / "nope", tmp_path / "nope" / "deeper"):
        with pytest.raises(UsageError, match=r"does not exist \(a run directory, such as results/<run>, was"):
            sim.load(path)
    assert not (tmp_path / "nope").exists()


def test_load_reads_the_bytes_it_verified_whenever_it_is_collected(two_runs, tmp_path):
    # A LazyFrame may be collected long after `load`: a part replaced meanwhile (here by a copy of another
    # run's part of the same games, valid Parquet) is an error, never rows; the parts still read lazily, by
    # column and only as far as asked.
    greedy, _ = two_runs
    lf = sim.load(greedy)
    assert lf.select("won").collect().columns == ["won"]
    assert lf.head(1000).collect().equals(parts_of(greedy).head(1000))
    assert lf.filter(pl.col("game") >= 1400).collect().sort("game").equals(parts_of(greedy).slice(1400))
    late_wins = lf.filter(pl.col("game") >= 1400).select("won").collect()  # filtered on a column it drops
    assert late_wins.columns == ["won"] and late_wins["won"].sum() == parts_of(greedy).slice(1400)["won"].sum()
    other = tmp_path / "other"
    sim.run(sim.RunConfig(n=2000, policy="random"), out=other, workers=1, chunk_size=700)
    part = sorted((greedy / "games").glob("*.parquet"))[1]
    part.write_bytes((other / "games" / part.name).read_bytes())
    with pytest.raises(RunError, match="changed after it was verified"):
        lf.collect()
    with pytest.raises(RunError, match="not the part this run wrote"):
        sim.load(greedy)


# --- sim ls -------------------------------------------------------------------------------------------


def test_ls_lists_runs_and_skips_other_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("ls").exit_code == 2  # no results/ yet: a one-line error
    for args in (["run", "-n", "1500"], ["run", "-p", "random", "-n", "1500", "--rule", "max_pile=3"],
                 ["solve", "-n", "3", "--node-limit", "1000"]):
        assert invoke(*args, "-w", "1", "-q").exit_code == 0
    (tmp_path / "results" / "notes").mkdir()
    (tmp_path / "results" / "notes" / "todo.txt").write_text("not a run")
    (tmp_path / "results" / "other").mkdir()
    (tmp_path / "results" / "other" / "manifest.json").write_text(json.dumps({"name": "someone else's"}))
    (tmp_path / "results" / "nested" / "deeper").mkdir(parents=True)
    assert invoke("run", "-n", "500", "-w", "1", "-q", "--out", "results/nested/deeper/g").exit_code == 0

    r = invoke("ls")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "kind", "policy"] and lines[6].startswith("A solve run's")
    names = [line.split()[0] for line in lines[2:6]]
    assert names == ["greedy-seed0-n1500", "nested/deeper/g", "random-seed0-n1500-max_pile3",
                     "solve-seed0-n3-node_limit1000"]
    greedy = parts_of("results/greedy-seed0-n1500")
    assert f"{100 * greedy['won'].mean():.2f}%" in lines[2] and "complete" in lines[2]
    assert "max_pile=3" in lines[4] and "solve" in lines[5] and "node_limit 1000" in lines[5]

    data = json.loads(invoke("ls", "results", "--format", "json").stdout)["runs"]
    assert [Path(d["path"]).name for d in data] == ["greedy-seed0-n1500", "g", "random-seed0-n1500-max_pile3",
                                                    "solve-seed0-n3-node_limit1000"]
    assert data[0]["rate"] == pytest.approx(greedy["won"].mean()) and data[0]["done"] == 1500
    assert data[3]["kind"] == "solve" and data[3]["rate"] == 1.0

    (tmp_path / "results" / "greedy-seed0-n1500" / "games" / "part-00000.parquet").unlink()
    damaged = json.loads(invoke("ls", "-f", "json").stdout)["runs"][0]
    assert damaged["status"] == "damaged" and "part-00000.parquet" in damaged["problem"]


# --- README examples ----------------------------------------------------------------------------------


def _readme_blocks(marker: str) -> list[str]:
    return [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if marker in b]


def _readme_runs(tmp_path, monkeypatch):
    """The two runs the README's dataset examples name, at their paths (with fewer games)."""
    monkeypatch.chdir(tmp_path)
    for policy in ("greedy", "random"):
        sim.run(sim.RunConfig(policy=policy, n=3000), out=f"results/{policy}-seed0-n1000000", workers=1)


def test_readme_polars_example_runs(tmp_path, monkeypatch):
    _readme_runs(tmp_path, monkeypatch)
    (block,) = _readme_blocks("sim.load([")
    names = {}
    exec(block, names)
    ends = names["games"].group_by("end").len().collect()
    assert ends["len"].sum() == 3000
    rates = dict(names["both"].group_by("policy").agg(pl.col("won").mean()).collect().iter_rows())
    assert rates["greedy"] == parts_of("results/greedy-seed0-n1000000")["won"].mean() and rates["random"] == 0


def test_readme_duckdb_example_runs(tmp_path, monkeypatch):
    import duckdb  # not a dependency of the package, only of the tests: the README shows it, this checks it
    _readme_runs(tmp_path, monkeypatch)
    (block,) = _readme_blocks("duckdb.sql")
    assert '"end"' in block  # an SQL keyword: quoted
    queries = re.findall(r'duckdb\.sql\("""(.*?)"""\)', block, re.S)
    assert len(queries) == 2
    by_end = dict((end, games) for end, games, _ in duckdb.sql(queries[0]).fetchall())
    expected = dict(parts_of("results/greedy-seed0-n1000000").group_by("end").len().iter_rows())
    assert by_end == expected
    by_run = dict(duckdb.sql(queries[1]).fetchall())
    assert by_run == {"greedy-seed0-n1000000": parts_of("results/greedy-seed0-n1000000")["won"].mean(),
                      "random-seed0-n1000000": 0.0}


def test_readme_python_api_example_runs_as_written(tmp_path, monkeypatch):
    # Every line of README's "Python API" block, with fewer games and smaller budgets (the same calls otherwise).
    monkeypatch.chdir(tmp_path)
    (block,) = _readme_blocks("sim.solve_run(")
    smaller = (block.replace("1_000_000", "3_000").replace("100_000", "300").replace("range(1000)", "range(20)")
               .replace("n=2000, time_limit=10", "n=3, node_limit=2000").replace("workers=2", "workers=1"))
    assert smaller.count("\n") == block.count("\n") and smaller != block
    names = {}
    exec(smaller, names)
    assert names["summary"].games == 3000 and names["games"].collect().height == 3000
    assert names["frame"].height == 300 and len(names["cols"]) == 20
    assert names["solved"].deals == 3 and names["result"].won == (names["result"].score is not None)
    assert names["best"].outcome in ("won", "lost", "unresolved")


def test_the_errors_readme_names_are_importable_from_sim(tmp_path):
    import sim.errors

    assert (sim.UsageError, sim.RunError, sim.Interrupted, sim.PolicyError) == (
        sim.errors.UsageError, sim.errors.RunError, sim.errors.Interrupted, sim.errors.PolicyError)
    with pytest.raises(sim.UsageError, match="is not a positive whole number"):
        sim.run(sim.RunConfig(n="abc"), out=tmp_path / "x")
    assert not (tmp_path / "x").exists()


# --- solve runs ---------------------------------------------------------------------------------------


def test_solve_default_directory_names_limits_and_modes(tmp_path, monkeypatch):
    from sim.jobs.solve import default_out

    names = {default_out(sim.SolveConfig(n=50, **kw)).name for kw in (
        {}, {"node_limit": 100_000}, {"node_limit": 200_000}, {"time_limit": 10.0}, {"time_limit": 0.5},
        {"first_win": True}, {"first_win": True, "node_limit": 100_000}, {"rules": sim.Rules(max_pile=3)})}
    assert len(names) == 8
    assert default_out(sim.SolveConfig(n=50, node_limit=100_000, time_limit=10.0)).name == \
        "solve-seed0-n50-node_limit100000-time_limit10"
    monkeypatch.chdir(tmp_path)
    first = invoke("solve", "-n", "4", "-w", "1", "-q", "--node-limit", "500")
    second = invoke("solve", "-n", "4", "-w", "1", "-q", "--node-limit", "1e3")
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert sorted(p.name for p in Path("results").iterdir()) == ["solve-seed0-n4-node_limit1000",
                                                                 "solve-seed0-n4-node_limit500"]


def test_compare_of_solve_runs_names_sat_conflicts_only_where_a_sat_question_could_be_asked(tmp_path):
    # SAT questions come after SAT_AFTER nodes: a best-score run with a smaller node limit asked none, yet beside
    # a --first-win run (which records no sat_conflicts) it was labelled "sat_conflicts=1000000", and the runs were
    # said to differ in "solver sat_conflicts"; beside a --sat-conflicts 0 run, in nothing else.
    from sim.analysis.compare import compare_runs
    from sim.solver.solver import SAT_AFTER

    runs = {name: tmp_path / name for name in ("best", "first", "nosat")}
    for name, extra in (("best", {}), ("first", {"first_win": True}), ("nosat", {"sat_conflicts": 0})):
        sim.solve_run(sim.SolveConfig(n=3, node_limit=300, **extra), out=runs[name], workers=1)
    c = compare_runs([runs["best"], runs["first"]])
    assert c.header().endswith("the runs differ in: solver first_win")
    assert [a.label for a in c.arms] == ["first_win=False", "first_win=True"]
    assert compare_runs([runs["best"], runs["nosat"]]).header().endswith("the runs differ in: nothing but the directory")
    r = invoke("compare", runs["best"], runs["first"], "--format", "json")
    assert r.exit_code == 0 and "sat" not in r.stdout, r.stdout
    from sim.jobs.solve_results import options_used

    for limit, split, kept in ((None, 0, True), (SAT_AFTER, 0, True), (SAT_AFTER - 1, 0, False),
                               (None, SAT_AFTER, True), (None, SAT_AFTER - 1, False)):
        assert ("sat_conflicts" in options_used({"node_limit": limit, "split_after": split, "sat_conflicts": 5})) == kept


def test_compare_two_solve_runs_deal_by_deal(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    sim.solve_run(sim.SolveConfig(n=12, node_limit=300), out=small, workers=1)
    sim.solve_run(sim.SolveConfig(n=12, node_limit=30_000), out=large, workers=1)
    r = invoke("compare", small, large, "--format", "json")
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    a, b = parts_of(small), parts_of(large)
    won_a, won_b = (a["outcome"] == "won").to_numpy(), (b["outcome"] == "won").to_numpy()
    assert [arm["label"] for arm in result["arms"]] == ["node_limit=300", "node_limit=30000"]
    assert [arm["wins"] for arm in result["arms"]] == [won_a.sum(), won_b.sum()]
    pair = result["pairs"][0]
    assert (pair["both"], pair["a_only"], pair["b_only"]) == (
        (won_a & won_b).sum(), (won_a & ~won_b).sum(), (won_b & ~won_a).sum())
    both = won_a & won_b
    if both.sum():
        diff = (a["score"].to_numpy()[both].astype(int) - b["score"].to_numpy()[both].astype(int)).mean()
        assert pair["score_diff"] == pytest.approx(diff)
    assert any(note.endswith("score = the best score found") for note in result["notes"])
    # --first-win runs' scores are those of the first win found, not the best; a mix is said to be one.
    first = tmp_path / "first"
    sim.solve_run(sim.SolveConfig(n=12, node_limit=300, first_win=True), out=first, workers=1)
    for runs, says in (([first, large], "the first win's score in the --first-win runs (first), the best score "
                                        "found in the others: their score differences compare two different things"),
                       ([first, tmp_path / "first2"], "the score of the first win found (--first-win)")):
        if not runs[1].exists():
            sim.solve_run(sim.SolveConfig(n=12, node_limit=3000, first_win=True), out=runs[1], workers=1)
        r = invoke("compare", *runs, "--format", "json")
        assert r.exit_code == 0, r.output
        assert any(note.endswith(f"score = {says}") for note in json.loads(r.stdout)["notes"]), r.stdout

    games = tmp_path / "games"
    sim.run(sim.RunConfig(n=12), out=games, workers=1)
    mixed = invoke("compare", small, games)
    assert mixed.exit_code == 2, mixed.output
    lines = mixed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot pair a solve run with a run of games")


def test_library_warnings_are_not_printed_unless_logging_is_set_up(tmp_path):
    # `sim.load` of a run with a stray file warns through logging; without any handler it prints nothing.
    code = (
        "import sim\n"
        "s = sim.run(sim.RunConfig(n=100), out='g', workers=1)\n"
        "open('g/games/notes.txt', 'w').write('x')\n"
        "assert sim.load('g').collect().height == 100\n"
        "import logging; logging.basicConfig()\n"
        "sim.load('g').collect()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr.count("ignoring games/notes.txt") == 1, r.stderr  # after basicConfig only


def test_misused_configs_are_clear_errors_before_anything_is_written(tmp_path):
    for config, error, says in (
            (sim.RunConfig(rules={"max_pile": 3}), TypeError, "not dict (e.g. sim.Rules(max_pile=3))"),
            (sim.RunConfig(n=100, record_deals="no"), TypeError, "record_deals must be True or False, not 'no'"),
            (sim.SolveConfig(n=3, first_win="no"), TypeError, "first_win must be True or False, not 'no'"),
            (sim.SolveConfig(n=3, time_limit=True), UsageError, "time_limit must be a positive number"),
            (sim.SolveConfig(n=3, rules={"grid": 3}), TypeError, "must be a sim.Rules")):
        start = sim.run if isinstance(config, sim.RunConfig) else sim.solve_run
        with pytest.raises(error, match=re.escape(says)):
            start(config, out=tmp_path / "x", workers=1)
        assert not (tmp_path / "x").exists()
    # A float that is a whole number is one (as "1e3" is on the command line).
    assert sim.run(sim.RunConfig(n=1e3), out=tmp_path / "r", workers=1).games == 1000
    solved = sim.solve_run(sim.SolveConfig(n=2.0, node_limit=1e3, split_after=0.0), out=tmp_path / "s", workers=1)
    assert solved.deals == 2 and solved.options["node_limit"] == 1000 and solved.options["split_after"] == 0
    with pytest.raises(TypeError, match="load takes a run directory or a list of them, not 5"):
        sim.load(5)
    with pytest.raises(UsageError, match="is given twice"):
        sim.load([tmp_path / "r", str(tmp_path / "r") + "/."])


def test_an_out_under_a_file_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("")
    for command in (("run", "-n", "10"), ("solve", "-n", "3", "--node-limit", "100")):
        r = invoke(*command, "-w", "1", "-o", "afile/sub")
        assert r.exit_code == 2 and r.stderr.startswith("Error: --out afile/sub: ") and "is not a directory" in r.stderr
    assert Path("afile").read_text() == ""


def test_solve_runs_that_differ_in_split_or_sat_options_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, extra in (("plain", {}), ("split", {"split_after": 5}), ("nosat", {"sat_conflicts": 0}), ("sat", {})):
        sim.solve_run(sim.SolveConfig(n=2, node_limit=3_000_000 if "sat" in name else 1000, **extra),
                      out=f"results/{name}", workers=1)
    listed = {Path(r["path"]).name: r["policy"] for r in json.loads(invoke("ls", "-f", "json").stdout)["runs"]}
    assert listed == {"plain": "solver (best score, node_limit 1000)",
                      "split": "solver (best score, node_limit 1000, split_after 5)",
                      "nosat": "solver (best score, node_limit 3000000, sat_conflicts 0)",
                      "sat": "solver (best score, node_limit 3000000)"}
    both = sim.load(["results/plain", "results/split", "results/nosat"]).collect()
    options = both.group_by("run").agg(pl.col("split_after").first(), pl.col("sat_conflicts").first()).sort("run")
    assert options.rows() == [("nosat", 8_000_000, 0), ("plain", 8_000_000, 1_000_000), ("split", 5, 1_000_000)]
    # The summary names the SAT budget only where a question can be asked (past 2,000,000 nodes).
    assert "sat conflicts" not in invoke("report", "results/plain").stdout
    assert "node limit 3000000, sat conflicts 1000000" in invoke("report", "results/sat").stdout


def test_report_of_a_solve_run_with_no_deal_done_and_of_a_run_being_written(tmp_path, monkeypatch):
    from sim.jobs import runner

    monkeypatch.chdir(tmp_path)
    sim.solve_run(sim.SolveConfig(n=2, node_limit=100), out="s", workers=1)
    manifest = json.loads(Path("s/manifest.json").read_text())
    for part in Path("s/games").glob("*.parquet"):
        part.unlink()
    Path("s/manifest.json").write_text(json.dumps({**manifest, "status": "incomplete", "parts": {}, "part_info": {}}))
    r = invoke("report", "s")
    assert r.exit_code == 0, r.output
    assert "winnable     n/a (no deal solved yet)" in r.stdout and "nan" not in r.stdout
    assert "finish it with: sim solve --resume s" in r.stdout
    with runner.writer_lock(Path("s")):
        r = invoke("report", "s")
    assert f"it is being written now (pid {os.getpid()})" in r.stdout and "finish it with" not in r.stdout


@pytest.mark.parametrize("field,value", [("n", "lots"), ("seed", "zero")])
def test_ls_says_which_manifest_field_is_damaged_as_report_does(tmp_path, field, value):
    # A hand-edited n: `sim report` said "n is 'lots', not a whole number", `sim ls` Python's
    # "invalid literal for int() with base 10: 'lots'".
    run = sim.run(sim.RunConfig(n=5), out=tmp_path / "edited", workers=1).path
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**m, field: value}))
    from sim.analysis.datasets import list_runs

    (listing,) = list_runs(tmp_path)
    assert listing.status == "damaged" and listing.problem == f"manifest.json: {field} is {value!r}, not a whole number"
    report = invoke("report", str(run))
    assert report.exit_code == 1 and listing.problem.split(": ", 1)[1] in report.stderr
