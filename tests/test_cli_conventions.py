"""CLI conventions (issue 12, "the first ten minutes"): --version, -h, `sim` alone, metavars, -v and -q,
the progress bar and its units, --format json summaries, and the small outputs (deal -> replay, the
replay legend, small percentages, tune's lines)."""

import io
import json
import logging
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import sim
from sim.cli import app, show_progress

cli = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
CHUNKED = {"run", "solve", "compare", "sweep"}
"""Commands whose work is split in chunks (-v logs one line per chunk)."""


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


def commands() -> dict:
    """Command name -> its click command."""
    return typer.main.get_command(app).commands


def one_line_error(r, code=2) -> str:
    assert r.exit_code == code, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    return lines[0]


# --- item 3: conventions ------------------------------------------------------------------------------


def test_version_prints_the_package_version():
    from sim.version import __version__

    r = invoke("--version")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"foursquare-sim {__version__}"


def test_sim_alone_prints_the_help_and_succeeds():
    r = invoke()
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Usage: sim ")
    listed = {line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert set(commands()) <= listed


def test_minus_h_is_help_everywhere():
    assert invoke("-h").stdout == invoke("--help").stdout
    for name in commands():
        short, long = invoke(name, "-h"), invoke(name, "--help")
        assert short.exit_code == 0 and long.exit_code == 0, (name, short.output)
        assert short.stdout == long.stdout and f"Usage: sim {name}" in short.stdout, name
        assert "-h, --help" in short.stdout, name


def test_help_metavars_are_words_not_python_types():
    for name in commands():
        text = invoke(name, "-h").stdout
        assert not re.search(r"<[a-z][^>]*>", text.replace("results/<run>", "")), (name, text)
    run_help = invoke("run", "-h").stdout
    for shown in ("--policy SPEC", "-n N", "--seed SEED", "--workers N", "--out DIR", "--rule KEY=VALUE",
                  "--deals FILE", "--resume DIR", "--policy-arg KEY=VALUE", "--format text|json"):
        assert shown in run_help, shown
    assert "Usage: sim report [OPTIONS] RUN..." in invoke("report", "-h").stdout
    assert "Usage: sim ls [OPTIONS] [DIR]" in invoke("ls", "-h").stdout


def test_verbose_mentions_chunks_only_where_there_are_chunks():
    seen = set()
    for name, command in commands().items():
        verbose = [p for p in command.params if p.name == "verbose"]
        if not verbose:
            continue
        seen.add(name)
        assert ("chunk" in verbose[0].help) == (name in CHUNKED), (name, verbose[0].help)
    assert CHUNKED | {"report", "tune"} <= seen


def test_progress_bar_only_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert show_progress(quiet=False) is False  # redirected: no bar at all
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert show_progress(quiet=False) is True
    assert show_progress(quiet=True) is False


def test_a_terminal_that_reports_no_columns_still_gets_a_whole_bar(tmp_path, monkeypatch):
    # A pty of size 0x0 (some containers and CI runners): tqdm took -1 columns, drew a bar one character wide
    # and cut the line's end. The bar falls back to $COLUMNS, else 80 (one column left free, as tqdm leaves it).
    import os

    class Terminal(io.StringIO):
        def isatty(self):
            return True

        def fileno(self):
            return 2

    def last_line(text):
        return [line for line in text.replace("\r", "\n").splitlines() if line.strip()][-1]

    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((0, 0)))
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    sim.run(sim.RunConfig(n=1000), out=tmp_path / "r", workers=1, chunk_size=500, progress=True)
    line = last_line(sys.stderr.getvalue())
    assert line.startswith("100%|") and len(line) == 79 and line.endswith("games/s]"), line
    assert len(line.split("|")[1]) >= 20, line  # the bar itself
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys, "stderr", Terminal())
    from sim.cli import games_bar

    with games_bar(10, quiet=False, desc="search") as bar:
        bar.update(10)
    line = last_line(sys.stderr.getvalue())
    assert line.startswith("search: 100%|") and len(line) == 119, line


@pytest.mark.slow  # three runs and a comparison with figures
def test_a_redirected_stderr_gets_no_bar_and_quiet_silences_notices(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "-n", "3000", "-w", "1")
    assert r.exit_code == 0, r.output
    assert "games/s]" not in r.stderr and "%|" not in r.stderr  # CliRunner's stderr is no terminal
    # A comparison that reuses both runs says so on stderr, and writes a figure; -q keeps only the result.
    invoke("run", "--policy", "random", "-n", "3000", "-w", "1", "-q")
    loud = invoke("compare", "-p", "greedy", "-p", "random", "-n", "3000", "--png", tmp_path / "figs")
    assert loud.exit_code == 0, loud.output
    assert "reusing" in loud.stderr and "wrote" in loud.stderr
    quiet = invoke("compare", "-p", "greedy", "-p", "random", "-n", "3000", "--png", tmp_path / "figs", "-q")
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == "" and "reuse" not in loud.stdout  # said on stderr: stdout is the result, to pipe
    assert quiet.stdout == loud.stdout


@pytest.mark.parametrize("command", [["run", "-n", "300"], ["solve", "-n", "2", "--node-limit", "100"]])
def test_a_complete_run_asked_for_again_says_so_on_stderr_and_prints_its_summary_on_stdout(tmp_path, command):
    # The note went to stdout, above the summary, so a script reading the summary got an extra first line.
    out = ["-w", "1", "--out", tmp_path / "r"]
    first = invoke(*command, *out)
    again = invoke(*command, *out)
    assert first.exit_code == again.exit_code == 0, again.output
    assert again.stderr == f"{tmp_path / 'r'} already holds this complete run: nothing was " \
                           f"{'played' if command[0] == 'run' else 'solved'} (the figures below are that run's).\n"
    assert again.stdout.splitlines()[0] == first.stdout.splitlines()[0] and "already" not in again.stdout
    as_json = invoke(*command, *out, "-f", "json")
    assert json.loads(as_json.stdout)["note"] == again.stderr.strip() and as_json.stderr == ""
    quiet = invoke(*command, *out, "-q")
    assert quiet.stderr == "" and quiet.stdout == again.stdout
    assert json.loads(invoke(*command, *out, "-q", "-f", "json").stdout)["note"] == ""


@pytest.mark.parametrize("job,unit", [("run", "games"), ("solve", "deals")])
def test_progress_units_read_naturally(tmp_path, capsys, job, unit):
    if job == "run":
        sim.run(sim.RunConfig(n=1000), out=tmp_path / "r", workers=1, chunk_size=250, progress=True)
    else:
        sim.solve_run(sim.SolveConfig(n=4, node_limit=1000), out=tmp_path / "s", workers=1, progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    final = [line for line in bar if line.startswith("100%")][-1]
    total = "1,000" if job == "run" else "4"
    assert f"| {total}/{total} {unit} [" in final, final
    assert re.search(rf"[\d.]+[kM]? {unit}/s\]$", final), final  # "40.7k games/s", never "kgame/s" or "s/game"


def test_run_and_solve_summaries_as_json(tmp_path):
    r = invoke("run", "-n", "2000", "-w", "1", "-q", "--out", tmp_path / "r", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    rows = sim.load(tmp_path / "r").collect()
    assert data["games"] == 2000 and data["wins"] == rows["won"].sum() and data["status"] == "complete"
    assert data["path"] == str(tmp_path / "r") and data["win_rate_low"] < data["win_rate"] < data["win_rate_high"]
    assert data["score_per_deal"] == pytest.approx(rows["score"].fill_null(0).sum() / 2000)
    s = invoke("solve", "-n", "3", "--node-limit", "1000", "-w", "1", "-q", "--out", tmp_path / "s", "-f", "json")
    assert s.exit_code == 0, s.output
    solved = json.loads(s.stdout)
    assert solved["deals"] == 3 and solved["won"] + solved["lost"] + solved["unresolved"] == 3
    assert solved["options"]["node_limit"] == 1000
    one_line_error(invoke("run", "-n", "10", "--format", "markdown", "--out", tmp_path / "x"))


def _log_from_worker(x):
    logging.getLogger("sim.test").error("worker record %d", x)
    return x


def test_commands_in_one_process_keep_one_log_handler_writing_to_the_current_stderr(tmp_path, capsys):
    # Each command sets up logging; CliRunner gives each its own stderr and closes it afterwards. The workers'
    # records reach this process through the handler's thread, which writes them to the stderr of the moment.
    from sim.jobs.pool import run_tasks

    def log_threads():
        return sum(t.name.startswith("mp-handler") and t.is_alive() for t in threading.enumerate())

    for k in range(3):
        r = invoke("run", "-n", "200", "-w", "1", "-q", "--out", tmp_path / f"r{k}")
        assert r.exit_code == 0, r.output
        if k == 0:
            threads = log_threads()
    assert 1 <= log_threads() <= threads  # one handler, one thread, however many commands
    logging.getLogger("sim.test").error("logged here")  # this process's own records are written at once
    assert capsys.readouterr().err == "ERROR MainProcess: logged here\n"
    assert sorted(x for _, x in run_tasks(_log_from_worker, ((k, k) for k in range(2)), workers=2)) == [0, 1]
    err = ""
    deadline = time.time() + 5
    while err.count("worker record") < 2 and "Logging error" not in err and time.time() < deadline:
        time.sleep(0.05)
        err += capsys.readouterr().err
    lines = sorted(err.splitlines())
    assert len(lines) == 2 and "Logging error" not in err, err
    assert all(re.fullmatch(r"ERROR \S+: worker record [01]", line) and "MainProcess" not in line
               for line in lines), err


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_worker_logs_arrive_whatever_the_default_start_method(tmp_path, start_method):
    # The pool forks its workers itself, so a program (or a Python) whose default start method is not fork
    # still runs, and its workers' records still reach this process.
    script = (f"import multiprocessing, sys; multiprocessing.set_start_method({start_method!r}); "
              "from sim.cli import main; sys.argv = ['sim'] + sys.argv[1:]; main()")
    r = subprocess.run([sys.executable, "-c", script, "run", "-n", "4000", "--chunk-size", "1000", "-w", "2", "-v",
                        "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    done = re.findall(r"^DEBUG (\S+): chunk (\d): 1000 games in", r.stderr, re.M)
    assert sorted(int(c) for _, c in done) == [0, 1, 2, 3], r.stderr
    assert all(name != "MainProcess" for name, _ in done), r.stderr


EXIT_PROBE = """
import gc, json, sys
import sim
from sim.cli import main
sim.run(sim.RunConfig(n=100), out=sys.argv[1] + "-library", workers=1)
library = gc.get_freeze_count()
sys.argv = ["sim", "run", "-n", "100", "-w", "1", "--format", "json", "--out", sys.argv[1]]
code = None
try:
    main()
except SystemExit as e:
    code = e.code
print(json.dumps({"library": library, "code": code, "frozen": gc.get_freeze_count(), "left": len(gc.get_objects())}))
"""


def test_the_command_line_leaves_its_objects_to_the_system_at_exit_and_the_library_does_not(tmp_path):
    # Python's shutdown ran the garbage collector over numba's compiler several times, about 0.4 s of every
    # command that plays games (benchmarks/start_up.py). The console script freezes what exists as it ends, so
    # that shutdown skips it; the library, whose process goes on, leaves the collector alone. The run's summary
    # (printed before) is whole, and the other subprocess tests here check what a command writes at exit.
    r = subprocess.run([sys.executable, "-c", EXIT_PROBE, str(tmp_path / "r")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    *summary, probe = r.stdout.strip().splitlines()
    got = json.loads(probe)
    assert got["code"] in (0, None) and json.loads("\n".join(summary))["games"] == 100, r.stdout
    assert got["library"] == 0, got
    assert got["frozen"] > 10 * got["left"], got


# --- item 7: small things ------------------------------------------------------------------------------


def test_deal_json_is_accepted_by_replay_deck():
    by_seed = invoke("replay", "--seed", "0", "--game", "3")
    deck = invoke("deal", "--seed", "0", "--game", "3", "--json").stdout
    assert by_seed.exit_code == 0
    for text in (deck, deck.strip()[1:-1], " ".join(map(str, json.loads(deck)))):  # JSON, commas, spaces
        r = invoke("replay", "--deck", text)
        assert r.exit_code == 0, r.output
        assert r.stdout == by_seed.stdout
    assert "40 cards" in one_line_error(invoke("replay", "--deck", "[1, 2, 3]"))
    assert "JSON" in one_line_error(invoke("replay", "--deck", '[1, 2, "3"]'))
    one_line_error(invoke("replay", "--deck", "[1, 2"))


def test_replay_has_a_legend_for_the_grid_marks():
    r = invoke("replay", "--seed", "0", "--game", "5")
    lines = r.stdout.splitlines()
    legend = [line for line in lines if line.startswith("legend:")]
    assert len(legend) == 1 and "[7] face-down" in legend[0] and "7* the card just placed" in legend[0]
    grids = [line for line in lines if line.startswith("    r")]
    assert all(line.count("*") <= 1 for line in grids)
    assert sum(line.count("*") for line in grids) == sum(line.startswith("turn ") for line in lines)
    assert any(re.search(r"\[\d+\]", line) for line in grids)  # the face-down mark the legend explains


def test_small_shares_keep_significant_digits():
    from sim.analysis.tables import fmt_ci, fmt_pct
    from sim.stats import wilson

    low, high = wilson(0, 1_000_000)
    assert low == 0.0 and 0 < high < 1e-5
    assert fmt_ci(low, high, 3) == "0.000% .. 0.00038%"  # the random policy's interval on 1e6 games
    assert fmt_pct(0.0) == "0.00%" and fmt_pct(0.1062) == "10.62%" and fmt_pct(2.5e-7, 3) == "0.000025%"
    for x in (1e-9, 3e-7, 4e-6, 5e-5, 0.0004, 0.003):
        shown = fmt_pct(x, 2)
        assert float(shown.rstrip("%")) > 0 and abs(float(shown.rstrip("%")) / (100 * x) - 1) < 0.05, shown
    assert wilson(7, 7)[1] == 1.0


def test_report_shows_a_non_zero_upper_bound_for_no_wins(tmp_path):
    sim.run(sim.RunConfig(policy="random", n=20_000), out=tmp_path / "random", workers=1)
    r = invoke("report", tmp_path / "random")
    ci = [line for line in r.stdout.splitlines() if line.startswith("95% CI")][0]
    low, high = re.search(r"([\d.]+)% \.\. ([\d.]+)%", ci).groups()
    assert float(low) == 0 and float(high) > 0, ci


def test_tune_prints_a_baseline_first_and_every_win_rate_alike(tmp_path):
    r = invoke("tune", "-n", "300", "--rounds", "2", "--population", "4", "--elite", "2", "-w", "1",
               "--out", tmp_path / "w.json")
    assert r.exit_code == 0, r.output
    assert r.stderr.strip().splitlines()[-1] == f"wrote {tmp_path / 'w.json'}" and "wrote" not in r.stdout
    r = invoke("tune", "-n", "300", "--rounds", "1", "--population", "4", "--elite", "2", "-w", "1",
               "--out", tmp_path / "w.json", "-q", "-f", "json")
    assert r.exit_code == 0 and r.stderr == "" and "wrote" not in r.stdout, r.output
    data = json.loads(r.stdout)  # --format json: the weights file's fields, and what the text says beside them
    assert {k: v for k, v in data.items() if k not in ("below_baseline", "out")} == \
        json.loads((tmp_path / "w.json").read_text())
    assert data["out"] == str(tmp_path / "w.json")
    assert data["below_baseline"] == (data["train_win_rate"] < data["baseline_win_rate"])
    r = invoke("tune", "-n", "300", "--rounds", "2", "--population", "4", "--elite", "2", "-w", "1")
    assert r.exit_code == 0, r.output
    progress = r.stderr.strip().splitlines()
    assert progress[0].startswith("baseline: train win rate ") and "default weights" in progress[0]
    assert [line.split(":")[0] for line in progress[1:]] == ["round 1/2", "round 2/2", "warning"]
    # So few games and rounds do not beat the defaults, and it says so.
    rates = dict(re.findall(r"^(baseline|train) win rate +(\d+\.\d\d%)", r.stdout, re.M))
    assert progress[-1] == (f"warning: the tuned weights win fewer training games than the default weights "
                            f"({rates['train']} against {rates['baseline']}); more games (-n) or rounds may find "
                            f"better ones")
    progress = progress[:-1]
    baseline = sim.play_range(11, 0, 300, "heuristic").won.mean()  # the default weights
    assert f"{100 * baseline:.2f}%" in progress[0]
    summary = [line for line in r.stdout.splitlines() if "win rate" in line]
    assert [line.split()[0] for line in summary] == ["baseline", "train", "validation"]
    for line in progress + summary:
        rates = re.findall(r"\d+(?:\.\d+)?%", line.replace("95% CI", ""))
        assert rates and all(re.fullmatch(r"\d+\.\d\d%", x) for x in rates), line


def test_tunes_progress_bar_counts_the_baseline_and_the_final_games(monkeypatch):
    # The bar stood at 0% while the baseline played and at 100% while the tuned weights played twice more.
    import sim.cli

    bars, games_bar = [], sim.cli.games_bar
    monkeypatch.setattr(sim.cli, "show_progress", lambda quiet: True)
    monkeypatch.setattr(sim.cli, "games_bar", lambda *a, **kw: bars.append(games_bar(*a, **kw)) or bars[-1])
    r = invoke("tune", "-n", "20", "--rounds", "2", "--population", "3", "--elite", "2", "-w", "1")
    assert r.exit_code == 0, r.output
    assert bars[0].total == bars[0].n == (1 + 2 * 3 + 1) * 20 + 20  # baseline, candidates, train, validation
    from sim.analysis.tune import tune

    other = []
    tune(n=20, seed=3, rounds=1, population=3, elite=2, validation_n=30, on_other_games=other.append)
    assert other == [20, 20, 30]


def test_one_game_or_deal_is_said_in_the_singular(tmp_path, monkeypatch):
    # "seed 11, 1 games", "held-out seed 22, 1 deals", "playing 1 games into ...".
    r = invoke("tune", "-n", "1", *SMALL_TUNE, "-w", "1", "-q")
    assert r.exit_code == 0, r.output
    said = [line for line in r.stdout.splitlines() if "win rate" in line]
    assert len(said) == 3 and all(line.split(")")[0].endswith(", 1 game") for line in said), said
    r = invoke("train", "-n", "1", "--rounds", "1", "--validation-n", "1")
    assert r.exit_code == 0, r.output
    assert "round 1/1: lookahead on 1 deal of seed 21," in r.stderr and "held-out seed 22, 1 deal (" in r.stdout
    monkeypatch.chdir(tmp_path)
    r = invoke("compare", "-p", "greedy", "-p", "random", "-n", "1", "-w", "1")
    assert r.exit_code == 0, r.output
    assert "greedy: playing 1 game into results/greedy-seed0-n1" in r.stderr, r.stderr


# --- audit: usage errors before any work ---------------------------------------------------------------

SMALL_TUNE = ("--rounds", "1", "--population", "3", "--elite", "2")


@pytest.mark.parametrize("args,fragment", [
    (["tune", "-w", "-1", "-n", "10", *SMALL_TUNE], "--workers must be at least 1, not -1"),
    (["tune", "-w", "0", "-n", "10", *SMALL_TUNE], "--workers must be at least 1, not 0"),
    (["tune", "-n", "", *SMALL_TUNE], "-n '' is not a positive whole number"),
    (["tune", "-n", "0", *SMALL_TUNE], "-n '0' is not a positive whole number"),
    (["tune", "-n", "1e99", *SMALL_TUNE], "-n '1e99' is more than the 2**63 games a seed has"),
    (["run", "-n", "1e99", "-w", "1"], "-n '1e99' is more than the 2**63 games a seed has"),
    (["train", "-n", "5", "--rounds", "1", "--validation-n", "0"], "--validation-n '0' is not a positive"),
    (["train", "-n", "5", "--rounds", "1", "--validation-n", "abc"], "--validation-n 'abc' is not a positive"),
    (["train", "-n", "5", "--rounds", "1", "--validation-n", "1e99"], "--validation-n '1e99' is more than the 2**63"),
    (["run", "-n", "10", "-w", "1", "--chunk-size", "0"], "--chunk-size '0' is not a positive whole number"),
    (["solve", "-n", "2", "-w", "1", "--chunk-size", "2.5"], "--chunk-size '2.5' is not a positive whole number"),
])
def test_counts_and_workers_are_checked_before_any_game(tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(invoke(*args))
    assert fragment in line, line
    assert not (tmp_path / "results").exists()


def test_chunk_size_is_a_count_as_n_is(tmp_path):
    # -n 1e3 was taken and --chunk-size 1e3 refused as "not a valid integer".
    r = invoke("run", "-n", "2e3", "--chunk-size", "1e3", "-w", "1", "-q", "-o", tmp_path / "r")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "r" / "games").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]


def test_compare_checks_n_before_it_says_it_plays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(invoke("compare", "-p", "greedy", "-p", "random", "-n", "1e99", "-w", "1"))
    assert "'1e99'" in line and "playing" not in line
    assert not (tmp_path / "results").exists()


def test_the_default_validation_seed_after_the_largest_seed_is_0():
    largest = 2**64 - 1
    r = invoke("tune", "--seed", largest, "-n", "10", *SMALL_TUNE, "-w", "1", "-q")
    assert r.exit_code == 0, r.output
    assert "seed 0, 10 games" in r.stdout.splitlines()[-1], r.stdout
    assert "0 after the largest seed" in " ".join(invoke("tune", "-h").stdout.split())
    from sim.analysis.train import train

    assert train(5, seed=largest, rounds=1, validation_n=5).validation_seed == 0
    assert "0 after the largest seed" in " ".join(invoke("train", "-h").stdout.split())


@pytest.mark.parametrize("command", ["tune", "train"])
def test_tune_and_train_check_their_out_file_before_any_work(tmp_path, command):
    work = ["-n", "10", *SMALL_TUNE, "-w", "1"] if command == "tune" else ["-n", "5", "--rounds", "1", "--validation-n", "5"]
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("mine")
    for out, fragment in ((tmp_path / "adir", "is a directory"), (tmp_path / "afile" / "w.json", "is not a directory")):
        r = invoke(command, *work, "-o", out)
        assert "--out" in one_line_error(r) and fragment in r.stderr, r.stderr
        assert r.stdout == "" and (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("command", ["tune", "train"])
def test_tune_and_train_make_the_missing_folders_of_their_out_file(tmp_path, command):
    # --out new/sub/w.json was refused ("new/sub is not a directory"), while --html and --png make their folders.
    work = ["-n", "10", *SMALL_TUNE, "-w", "1"] if command == "tune" else ["-n", "5", "--rounds", "1", "--validation-n", "5"]
    out = tmp_path / "new" / "sub" / "w.json"
    r = invoke(command, *work, "-q", "-o", out)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["weights"] and [p.name for p in out.parent.iterdir()] == ["w.json"]


@pytest.mark.parametrize("command", ["tune", "train"])
def test_tune_and_train_refuse_an_out_file_in_a_folder_no_one_can_write_before_any_work(command):
    # os.access says yes to root for /proc, where no file can be made: the whole search ran, then failed to write.
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    work = ["-n", "10", *SMALL_TUNE, "-w", "1"] if command == "tune" else ["-n", "5", "--rounds", "1", "--validation-n", "5"]
    r = invoke(command, *work, "-o", "/proc/w.json")
    assert one_line_error(r) == "Error: --out: cannot write in /proc: No such file or directory"
    assert r.stdout == ""


@pytest.mark.parametrize("command", ["tune", "train"])
def test_a_result_that_cannot_be_written_after_the_work_is_printed_not_lost(tmp_path, monkeypatch, command):
    # A full disk at the end: the search's minutes were lost with the file; what it would hold goes to stdout.
    import errno

    from sim.jobs import files

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_json_atomic", full)
    work = ["-n", "10", *SMALL_TUNE, "-w", "1"] if command == "tune" else ["-n", "5", "--rounds", "1", "--validation-n", "5"]
    out = tmp_path / "new" / "w.json"
    r = invoke(command, *work, "-q", "-o", out)
    assert one_line_error(r, 1) == (f"Error: cannot write {out}: No space left on device; what it would hold is "
                                    "printed on stdout")
    printed = json.loads(r.stdout)
    assert printed["weights"] and not out.exists()  # the weights of heuristic, or of planner's values
    assert not out.parent.exists()  # the folder made for it is removed with the failed write


@pytest.mark.parametrize("command", ["tune", "train"])
def test_tune_and_train_replace_only_their_own_file_and_write_nothing_into_a_run(tmp_path, command):
    # `--out results/<run>/manifest.json` used to replace the run's manifest (the run unreadable).
    small = {"tune": ["-n", "10", *SMALL_TUNE, "-w", "1"], "train": ["-n", "5", "--rounds", "1", "--validation-n", "5"]}
    work = small[command]
    run = tmp_path / "victim"
    assert invoke("run", "-n", "20", "-w", "1", "-q", "--out", run).exit_code == 0
    manifest = (run / "manifest.json").read_bytes()
    notes = tmp_path / "notes.json"
    notes.write_text('{"weights": "mine"}')
    other = tmp_path / ("values.json" if command == "tune" else "weights.json")  # the other command's file
    theirs = invoke(*(["train", *small["train"]] if command == "tune" else ["tune", *small["tune"]]), "-q", "-o", other)
    assert theirs.exit_code == 0, theirs.output
    kept = {p: p.read_bytes() for p in (notes, other)}
    for out in (run / "manifest.json", run / "w.json", run / "games" / "w.json", notes, other):
        line = one_line_error(invoke(command, *work, "-o", out))
        assert line.startswith(f"Error: --out {out} "), line
        assert ("lies in the run directory" if run in out.parents else "exists and is not a") in line, line
    assert (run / "manifest.json").read_bytes() == manifest and not (run / "w.json").exists()
    assert {p: p.read_bytes() for p in kept} == kept
    assert invoke("report", run).exit_code == 0
    mine = tmp_path / "mine.json"  # its own earlier file is replaced, as the README says
    for _ in range(2):
        r = invoke(command, *work, "-q", "-o", mine)
        assert r.exit_code == 0, r.output


def test_a_page_never_replaces_a_file_of_a_run(tmp_path, monkeypatch):
    # `--html results/<run>/manifest.json` wrote the page over the run's manifest (the run unreadable), after the
    # sweep had played: the same with a run the sweep itself played into that folder.
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "results" / "greedy-seed0-n20"
    assert invoke("run", "-n", "20", "-w", "1", "-q").exit_code == 0
    kept = {p: p.read_bytes() for p in (run / "manifest.json", run / "games" / "part-00000.parquet")}
    sweep = ("sweep", "-n", "20", "--rule", "max_face_down=3,4", "-w", "1", "-q")
    for page in kept:
        line = one_line_error(invoke(*sweep, "--html", page))
        assert line.startswith(f"Error: --html {page} is a file of the run in {run}"), line
        assert one_line_error(invoke("report", run, "--html", page)) == line
    new = tmp_path / "results" / "greedy-seed0-n20-max_face_down3" / "manifest.json"  # played by the sweep
    line = one_line_error(invoke(*sweep, "--html", new))
    assert line.startswith(f"Error: --html {new} is a file of the run in {new.parent}"), line
    assert {p: p.read_bytes() for p in kept} == kept and json.loads(new.read_text())["status"] == "complete"
    assert invoke("report", run, new.parent, "-q").exit_code == 0
    from sim.cli import check_not_a_run_file

    check_not_a_run_file(run / "report.html")  # a page of the user's own in the run's folder is fine


def test_figures_are_never_put_among_a_runs_parts(tmp_path, monkeypatch):
    # `--png RUN/games` wrote win_rate.png beside the parts: every later read of the run warned of a stray file.
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "results" / "greedy-seed0-n20"
    assert invoke("run", "-n", "20", "-w", "1", "-q").exit_code == 0
    for folder in (run / "games", run / "games" / "figures"):
        line = one_line_error(invoke("report", run, "--png", folder))
        assert line == f"Error: --png {folder} lies among the parts of the run in {run}; give a folder outside its games/"
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in (run / "games").iterdir())
    assert invoke("report", run, "--png", run / "figures", "-q").exit_code == 0  # beside games/: the user's own
    assert (run / "figures" / "win_rate.png").exists()


@pytest.mark.parametrize("command", ["tune", "train"])
def test_tune_and_train_refuse_a_seed_past_the_largest_before_any_work(command, monkeypatch):
    import sim.analysis.tune

    def no_games(*args, **kw):
        raise AssertionError("a game was played")

    monkeypatch.setattr(sim.analysis.tune, "play_range", no_games)
    work = ["-n", "10", *SMALL_TUNE, "-w", "1"] if command == "tune" else ["-n", "5", "--rounds", "1", "--validation-n", "5"]
    for option in ("--seed", "--validation-seed"):
        r = invoke(command, *work, option, 2**64)
        assert one_line_error(r) == f"Error: {option} must be an integer in 0..2**64-1, not {2**64}", r.output
    # The library refuses them first too.
    from sim.analysis.train import train
    from sim.analysis.tune import tune

    run = tune if command == "tune" else train
    for kw in (dict(seed=2**64), dict(validation_seed=-1), dict(seed=1.5)):
        with pytest.raises(ValueError, match="seed must be an integer in 0..2"):
            run(n=5, **kw)


def test_train_example_writes_values_json_not_the_shipped_values():
    example = [line for line in invoke("train", "-h").stdout.splitlines() if "Example:" in line]
    assert example == ["  Example: sim train -n 8000 --seed 21 --out values.json"], example


QUIET_AND_VERBOSE = {"run": ["-n", "5"], "solve": ["-n", "1"], "compare": ["-p", "greedy", "-p", "random", "-n", "5"],
                     "sweep": ["--rule", "max_pile=3,4", "-n", "5"], "report": ["nowhere"], "tune": ["-n", "5"],
                     "train": ["-n", "5"], "replay": ["--game", "1"], "ls": []}
"""Every command taking --quiet and -v, with just enough arguments to start work."""


@pytest.mark.slow  # two compiles of a plugin
def test_replay_says_what_it_compiles_and_how_often(tmp_path):
    # A compiled plugin is compiled by every command that plays it, and each says so (not "first run only"); the
    # loop it plays through is in numba's cache once a plugin has played.
    plugin = ROOT / "examples" / "compiled_policy.py"
    sim.play(sim.deal(0, 0), f"{plugin}:choose")
    notice = f"compiling the plugin {plugin}:choose (every run: a plugin is not cached)…"
    r = invoke("replay", "--policy", f"{plugin}:choose", "--game", "1")
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines() == [notice] and "compiling" not in r.stdout
    r = invoke("replay", "--policy", f"{plugin}:choose", "--game", "1", "-q")
    assert r.exit_code == 0 and r.stderr == "", r.output


def test_quiet_and_verbose_contradict_everywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    both = {name for name, c in commands().items() if {"quiet", "verbose"} <= {p.name for p in c.params}}
    assert both == set(QUIET_AND_VERBOSE)
    for name, args in QUIET_AND_VERBOSE.items():
        assert "--quiet and -v contradict" in one_line_error(invoke(name, *args, "-q", "-v")), name
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args", [
    ["run", "-p", "", "-n", "5"], ["run", "-p", " ", "-n", "5"], ["replay", "-p", ""],
    ["compare", "-p", "greedy", "-p", "", "-n", "5"], ["sweep", "-p", "", "--rule", "max_pile=3,4", "-n", "5"],
    ["tune", "-p", "", "-n", "5"],
])
def test_an_empty_policy_is_a_usage_error(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    assert "--policy '' names no policy" in one_line_error(invoke(*args, "-q"))
    assert not (tmp_path / "results").exists()


def test_quiet_drops_the_notes_about_reused_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for p in ("greedy", "random"):
        assert invoke("run", "-p", p, "-n", "300", "-w", "1", "-q").exit_code == 0
    out = next(d for d in (tmp_path / "results").iterdir() if d.name.startswith("greedy"))
    again = {"loud": invoke("run", "-n", "300", "-w", "1", "--out", out),
             "quiet": invoke("run", "-n", "300", "-w", "1", "--out", out, "-q")}
    assert "nothing was played" in again["loud"].stderr
    assert again["quiet"].exit_code == 0 and "nothing was played" not in again["quiet"].output
    assert again["quiet"].stdout.startswith("games ")
    jobs = {"compare": ["compare", "-p", "greedy", "-p", "random", "-n", "300"],
            "sweep": ["sweep", "--rule", "max_pile=4", "-n", "300"]}
    for name, args in jobs.items():
        loud, quiet = invoke(*args), invoke(*args, "-q")
        assert loud.exit_code == 0 and quiet.exit_code == 0, (loud.output, quiet.output)
        # Said as it goes, on stderr: the result is the same, runs reused or played.
        assert "reusing" in loud.stderr and "reuse" not in loud.stdout, name
        assert quiet.stdout == loud.stdout and quiet.stderr == "", name
    data = json.loads(invoke(*jobs["compare"], "-f", "json").stdout)  # which runs were reused: each arm's own
    assert [arm["reused"] for arm in data["arms"]] == [True, True] and data["notes"] == []


@pytest.mark.parametrize("args", [("run", "-w", "abc"), ("run", "--bogus"), ("bogus",), ("report",),
                                  ("run", "--seed", "-1"), ("--bogus",)])
def test_the_parsers_usage_errors_are_one_line_naming_the_help(args):
    r = subprocess.run([sys.executable, "-m", "sim", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and " -h')" in lines[0], r.stderr


def test_paths_in_the_way_are_named_for_what_they_are(tmp_path):
    folder = tmp_path / "decks"
    folder.mkdir()
    assert "is a directory" in one_line_error(invoke("run", "-n", "5", "--deals", folder, "--out", tmp_path / "r"))
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    line = one_line_error(invoke("replay", "--seed", "0", "--game", "1", "--html", blocker / "x.html"))  # found before the game
    assert "not a directory" in line and "File exists" not in line
    run = tmp_path / "run"
    assert invoke("run", "-n", "50", "-w", "1", "-q", "--out", run).exit_code == 0
    from sim.jobs.files import temp_path

    page = tmp_path / "r.html"
    temp_path(page).mkdir()  # where the page is written before its rename: it cannot be
    line = one_line_error(invoke("report", run, "--html", page), 1)
    assert f"cannot write {page}:" in line and ".tmp-" not in line


@pytest.mark.parametrize("command", [("run",), ("solve",), ("compare", "-p", "greedy", "-p", "random")])
def test_a_list_of_rule_values_outside_a_sweep_points_to_sweep(command):
    line = one_line_error(invoke(*command, "-n", "5", "--rule", "grid=3,4"))
    assert line == ("Error: rule grid='3,4' is not valid; valid values: integers 2..4; several values are for "
                    "sim sweep (--rule grid=3,4)"), line
    assert one_line_error(invoke(*command, "-n", "5", "--rule", "grid=9")).endswith("integers 2..4")


def test_a_sweep_value_list_with_an_empty_value_is_a_usage_error():
    assert "KEY=V1,V2" in one_line_error(invoke("sweep", "-n", "10", "--rule", "grid=3,,4"))


@pytest.mark.parametrize("args", [("run", "-n", "5"), ("solve", "-n", "5"), ("compare", "-n", "5", "-p", "greedy", "-p", "random"),
                                  ("sweep", "-n", "5", "--rule", "grid=2,3"), ("replay",)])
def test_a_seed_out_of_range_is_named_as_the_option_by_every_command(args):
    line = one_line_error(invoke(*args, "--seed", 2**64))
    assert line == f"Error: --seed must be an integer in 0..2**64-1, not {2**64}", line


def test_a_seed_or_count_out_of_range_is_named_and_shown_short():
    assert one_line_error(invoke("run", "--seed", 2**64, "-n", "5")).startswith("Error: --seed must be")
    for command in ("replay", "deal"):
        line = one_line_error(invoke(command, "--game", 2**63))
        assert line == f"Error: --game must be an integer in 0..2**63-1, not {2**63}", line
    from sim.jobs.runner import UsageError

    with pytest.raises(UsageError, match=r"^n 1e\+99 is more than the 2\*\*63 games a seed has$"):
        sim.run(sim.RunConfig(n=10**99))


def test_report_refuses_the_same_run_twice(tmp_path):
    assert invoke("run", "-n", "20", "-w", "1", "-q", "--out", tmp_path / "r").exit_code == 0
    assert invoke("report", tmp_path / "r").exit_code == 0
    assert "given twice" in one_line_error(invoke("report", tmp_path / "r", tmp_path / ".." / tmp_path.name / "r"))


def test_figures_and_pages_that_cannot_be_written_are_refused_before_any_game(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("notadir").write_text("mine")
    sweep = ["sweep", "-n", "100", "--rule", "max_face_down=3,4", "-w", "1"]
    r = invoke(*sweep, "--html", "notadir/sweep.html")
    assert one_line_error(r) == "Error: --html: notadir is not a directory"
    r = invoke(*sweep, "--png", "notadir/sub/figs")
    assert one_line_error(r) == "Error: --png: notadir is not a directory"
    if Path("/proc/self").is_dir():  # a folder no one can make files in, not even root
        r = invoke(*sweep, "--png", "/proc/figs")
        assert one_line_error(r) == "Error: --png: cannot write in /proc: No such file or directory"
    assert not Path("results").exists() and Path("notadir").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["notadir"]  # the probe file is gone
    r = invoke(*sweep, "-q", "--png", "new/figs")
    assert r.exit_code == 0 and sorted(p.name for p in Path("new/figs").iterdir()) == ["win_rate.png"]


def test_sweep_and_compare_refuse_more_games_than_a_run_holds_without_naming_options_they_lack():
    for command in (["sweep", "--rule", "grid=3,4"], ["compare", "-p", "greedy", "-p", "random"]):
        line = one_line_error(invoke(*command, "-n", 2**63))
        assert line.startswith("Error: -n must be at most 5,000,000,000,000 games per run here"), line
        assert "chunk" not in line.split("(")[0]
    from sim.analysis.sweep import parse_sweep_options

    assert parse_sweep_options(["max_face_down=03,4"]) == [("max_face_down", ["3", "4"])]  # as the rules write it


def test_sigterm_stops_tune_as_ctrl_c_does(tmp_path):
    # Said, exit 130, nothing written, no worker left (it used to die of the signal, without a word).
    import signal
    import subprocess
    import sys

    out = tmp_path / "w.json"
    proc = subprocess.Popen([sys.executable, "-m", "sim", "tune", "-n", "20000", "--rounds", "3", "--population", "4",
                             "--elite", "2", "-w", "2", "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    while first.startswith("compiling"):
        first = proc.stderr.readline()
    assert first.startswith("baseline: train win rate"), first  # the search has begun
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "Error: interrupted; nothing written" and not out.exists()


@pytest.mark.parametrize("option,value,says", [("--explore", "2", "must be in 0..1, got 2.0"),
                                               ("--loss", "1", "must be a number <= 0, got 1.0"),
                                               ("--decay", "0", "must be in (0, 1], got 0.0"),
                                               ("--bootstrap", "1.5", "must be in 0..1, got 1.5")])
def test_train_names_its_options_as_typed_and_compiles_nothing_first(option, value, says):
    r = invoke("train", "-n", "5", option, value)
    assert one_line_error(r) == f"Error: {option} {says}" and "compiling" not in r.output


@pytest.mark.parametrize("args,says", [
    (["tune", "-n", "5", "--population", "3", "--elite", "3"],
     "--elite must be less than --population, got --elite 3, --population 3"),
    (["tune", "-n", "5", "--seed", "3", "--validation-seed", "3"], "--validation-seed must differ from --seed, got 3 for both"),
    (["train", "-n", "5", "--seed", "3", "--validation-seed", "3"], "--validation-seed must differ from --seed, got 3 for both"),
    (["train", "-n", "5", "--ridge", "0"], "--ridge must be a number > 0, got 0.0"),
    (["train", "-n", "5", "--ridge", "nan"], "--ridge must be a number > 0, got nan"),
])
def test_tune_and_train_name_the_options_in_their_settings_errors(args, says):
    # They said "need 2 <= elite < population, got elite=3, population=3", and --ridge 0 and nan in two wordings.
    assert one_line_error(invoke(*args)) == f"Error: {says}"


def test_quiet_silences_a_plugins_own_warnings_which_show_otherwise(tmp_path):
    # A plugin's logger and Python's warnings are not the "sim" loggers: they show at warnings by default, in
    # the main process, and --quiet leaves them out (it used to print both).
    plugin = tmp_path / "chatty.py"
    plugin.write_text("import logging, warnings\n"
                      "def choose(position, card):\n"
                      "    if position.turn == 0 and position.game % 5 == 0:\n"
                      "        logging.getLogger('chatty').warning('game %d begins', position.game)\n"
                      "        warnings.warn('careful')\n"
                      "    return position.legal_cells()[0]\n")
    args = [sys.executable, "-m", "sim", "run", "-p", f"{plugin}:choose", "-n", "20", "--chunk-size", "5", "-w", "2"]
    loud = subprocess.run([*args, "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=120)
    assert loud.returncode == 0, loud.stderr
    begun = re.findall(r"^WARNING \S+: game (\d+) begins$", loud.stderr, re.M)
    assert sorted(int(g) for g in begun) == [0, 5, 10, 15], loud.stderr
    assert "UserWarning: careful" in loud.stderr
    quiet = subprocess.run([*args, "-q", "--out", str(tmp_path / "b")], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_the_noise_of_dask_s_event_loop_shows_only_with_v(capsys):
    # A timeout inside Dask's client, left unread as the client closed, reached asyncio's logger as an ERROR when
    # it was collected, and a --quiet Dask run printed it (tests/test_dask.py's runs sharing a cluster, once).
    # Like Dask's own log lines, it shows only with -v; the run's own errors show whatever the flags.
    from sim.jobs.logs import setup_logging

    noise = "Future exception was never retrieved\nfuture: <Future finished exception=TimeoutError('Timeout')>"
    try:
        for verbose, quiet, shown in ((0, True, False), (0, False, False), (1, False, True)):
            setup_logging(verbose=verbose, quiet=quiet)
            logging.getLogger("asyncio").error(noise)
            logging.getLogger("distributed.client").error("the client's own view")
            logging.getLogger("sim.jobs").error("the run's own error")
            err = capsys.readouterr().err
            assert ("ERROR MainProcess: Future exception was never retrieved" in err) == shown, (verbose, quiet, err)
            assert ("the client's own view" in err) == shown, (verbose, quiet, err)
            assert "ERROR MainProcess: the run's own error" in err, (verbose, quiet, err)
    finally:
        setup_logging()


def test_v_shows_where_a_policy_raised_in_a_worker(tmp_path):
    plugin = tmp_path / "boom.py"
    plugin.write_text("def choose(position, card):\n"
                      "    if position.game == 7:\n"
                      "        raise RuntimeError('boom')\n"
                      "    return position.legal_cells()[0]\n")
    args = ["run", "-p", f"{plugin}:choose", "-n", "20", "--chunk-size", "5", "-w", "2"]  # two worker processes
    r = invoke(*args, "-v", "--out", tmp_path / "v")
    assert r.exit_code == 1 and r.stderr.strip().splitlines()[-1].startswith("Error: policy"), r.stderr
    assert f'File "{plugin}", line 3, in choose' in r.stderr, r.stderr  # the worker's traceback
    r = invoke(*args, "--out", tmp_path / "q")
    assert r.exit_code == 1 and "Traceback" not in r.stderr, r.stderr


def test_replay_takes_v_for_where_a_policy_raised_as_the_other_commands_do(tmp_path):
    plugin = tmp_path / "boom.py"
    plugin.write_text("def choose(position, card):\n"
                      "    if position.turn == 3:\n"
                      "        raise RuntimeError('boom')\n"
                      "    return position.legal_cells()[0]\n")
    loud = invoke("replay", "-p", f"{plugin}:choose", "--game", "1", "-v")
    assert loud.exit_code == 1, loud.output
    assert loud.stderr.strip().splitlines()[-1].startswith("Error: policy") and "Traceback" in loud.stderr, loud.output
    assert f'File "{plugin}", line 3, in choose' in loud.stderr
    plain = invoke("replay", "-p", f"{plugin}:choose", "--game", "1")
    assert one_line_error(plain, 1).startswith("Error: policy") and "Traceback" not in plain.stderr
    assert "-v, --verbose" in invoke("replay", "-h").stdout


def test_ctrl_c_outside_a_run_s_own_handlers_says_so_in_one_line(tmp_path, monkeypatch):
    # A Ctrl-C while `sim report` read its runs (or compare its analysis) ended the command with exit 130 and
    # not a word; it now says it was interrupted, as a run does.
    from sim.analysis import report

    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=20), out=out, workers=1)

    def pressed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "load_reports", pressed)
    assert one_line_error(cli.invoke(app, ["report", str(out)]), 130) == "Error: interrupted"


@pytest.mark.parametrize("command", ["run", "solve"])
def test_a_chunk_larger_than_a_worker_should_hold_is_refused_before_anything_is_made(tmp_path, command):
    # --chunk-size 1e12 was taken, and the first worker failed asking for 931 GiB, leaving a run behind.
    out = tmp_path / "big"
    r = cli.invoke(app, [command, "-n", "2e7", "--chunk-size", "2e7", "-w", "1", "--out", str(out)])
    unit = "games" if command == "run" else "deals"
    assert one_line_error(r) == (f"Error: --chunk-size 20,000,000 is more than a worker should hold at once; "
                                 f"at most 10,000,000 {unit} a part")
    assert not out.exists()
