"""The command line through Typer's CliRunner: output, help, exit codes."""

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sim
from sim.cli import app

cli = CliRunner()


def invoke(*args):
    return cli.invoke(app, list(args))


def test_every_command_has_help_with_an_example():
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    assert {"deal", "replay", "run", "policies"} <= set(names)
    for name in names:
        r = invoke(name, "--help")
        assert r.exit_code == 0, r.output
        assert f"Example: sim {name}" in r.output, name
    top = invoke("--help")
    assert top.exit_code == 0 and "Example: sim run" in top.output


def test_deal_prints_the_deck():
    r = invoke("deal", "--seed", "3", "--game", "7")
    assert r.exit_code == 0
    assert tuple(int(x) for x in r.stdout.split()) == sim.deal(3, 7)
    r = invoke("deal", "--seed", "3", "--game", "7", "--json")
    assert tuple(json.loads(r.stdout)) == sim.deal(3, 7)


def test_replay_shows_every_turn_and_the_end():
    result = sim.play(sim.deal(0, 5), "greedy", seed=0, game=5)
    r = invoke("replay", "--seed", "0", "--game", "5", "--policy", "greedy")
    assert r.exit_code == 0, r.output
    turns = [line for line in r.stdout.splitlines() if line.startswith("turn ")]
    assert len(turns) == result.cards_played
    for line, cell, card in zip(turns, result.moves, sim.deal(0, 5)):
        assert f"drew {card:2d} -> cell {cell} " in line
    assert "check" in turns[0]
    from sim.analysis.replay import replay

    played = replay(sim.deal(0, 5), "greedy", seed=0, game=5)
    assert any(t.turned for t in played.turns)
    for line, t in zip(turns, played.turns):  # a turned cell is named as the placed one is, with its row and column
        turned = ", ".join(f"{c} (r{c // 7} c{c % 7})" for c in t.turned) or "nothing"
        assert f"; turned {turned};" in line, line
    assert r.stdout.strip().splitlines()[-1].startswith("end: ")
    assert result.end in r.stdout.splitlines()[-1] or (result.won and "win" in r.stdout.splitlines()[-1])


def test_replay_of_a_given_deck_marks_face_down_cards():
    vector = json.loads(open(__file__.replace("test_cli.py", "data/greedy_games.jsonl")).readline())
    r = invoke("replay", "--deck", " ".join(map(str, vector["deck"])))
    assert r.exit_code == 0, r.output
    assert f"score {vector['score']}" in r.stdout
    assert "[" in r.stdout  # face-down cards are shown in brackets
    assert "row check fired" in r.stdout or "row and column checks fired" in r.stdout


def test_replay_keeps_ranks_in_line_and_names_the_policys_arguments():
    deck = "5 10 5 4 1 2 9 1 1 1 7 3 3 2 10 6 7 4 6 2 9 10 2 9 5 4 4 8 6 8 7 8 9 3 6 8 5 3 10 7"
    r = invoke("replay", "--deck", deck, "-q", "-p", "heuristic", "--policy-arg", "weights=-5,1,1,1,1,1,1",
               "--rule", "max_pile=5")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1] == "policy: heuristic weights=-5,1,1,1,1,1,1   rules: max_pile=5"
    # Every rank (a 10 and a face-down card too) and every empty cell ends under its column label's last character.
    r = invoke("replay", "--deck", deck, "-q")
    checked = set()
    for block in r.stdout.split("\n\n"):
        lines = block.splitlines()
        header = next((line for line in lines if re.match(r"\s+c\d", line)), None)
        if header is None:
            continue
        label_ends = [m.end() - 1 for m in re.finditer(r"c\d", header)]
        for line in lines:
            if re.match(r"    r\d  ", line):
                cells = list(re.finditer(r"\d+|\.", line[6:]))
                assert [m.end() - 1 + 6 for m in cells] == label_ends, (header, line)
                checked |= {m.group() for m in cells} | ({"["} if "[" in line else set())
    assert {"10", "7", ".", "["} <= checked  # the lines checked had each kind of cell


@pytest.mark.parametrize("args,fragment", [
    (["replay", "--deck", "1 2 3"], "40 cards"),
    # a rank out of range is named by its place in the deck counting from 1, as the page's "card 1 of 40"
    (["replay", "--deck", "11 " + " ".join(["5"] * 39)], "card 1 (index 0) is 11"),
    (["replay", "--deck", " ".join(["1", "1", "1", "1", "1"] + [str(r) for r in range(2, 11) for _ in range(4)][:35])],
     "1 x5"),
    (["replay", "--deck", "\u0663 " + " ".join(["5"] * 39)], "is not a rank"),  # an Arabic-Indic 3: not a rank
    (["replay", "--deck", "[1, 2,"], "not a JSON list of ranks"),
    (["replay", "--deck", "[5.0]"], "a JSON deck is a list of 40 whole numbers"),
    (["replay", "--policy", "nope"], "known policies: greedy, random, heuristic, lookahead, rollout"),
    (["replay", "--rule", "grid=9"], "grid"),
    (["run", "-n", "1.5"], "'1.5'"),
    (["run", "-n", "ten"], "'ten'"),
    (["run", "-n", "10", "--rule", "max_pile"], "KEY=VALUE"),
    (["run", "-n", "10", "--rule", "colour=red"], "valid rules: adjacency, max_pile, max_face_down, grid"),
    (["run", "-n", "10", "--policy", "best"], "known policies"),
    (["run"], "-n is required"),
    (["train", "-n", "ten"], "'ten'"),
    (["train", "-n", "5", "--seed", "3", "--validation-seed", "3"], "differ"),
    (["train", "-n", "5", "--ridge", "0"], "--ridge"),
    (["train", "-n", "5", "--explore", "2"], "explore must be in 0..1"),
    (["train", "-n", "5", "--loss", "3"], "loss must be a number <= 0"),
    (["train", "-n", "5", "--decay", "0"], "decay"),
])
def test_bad_input_is_a_one_line_usage_error(args, fragment):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), r.stderr
    assert fragment in lines[0]


def test_run_prints_a_summary(tmp_path):
    r = invoke("run", "--policy", "greedy", "-n", "2_000", "--seed", "4", "-w", "2", "-q", "--out", str(tmp_path / "r"))
    assert r.exit_code == 0, r.output
    assert "games      2,000" in r.stdout and "win rate" in r.stdout and str(tmp_path / "r") in r.stdout
    again = invoke("run", "-n", "2000", "--out", str(tmp_path / "r"))
    assert again.exit_code == 2 and "(seed 4, not 0); use --force to replace it, or another --out" in again.stderr


def test_policies_lists_the_builtins():
    r = invoke("policies")
    assert r.exit_code == 0
    assert [line.split()[0] for line in r.stdout.splitlines()][:5] == ["greedy", "random", "heuristic", "lookahead", "rollout"]
    assert "samples=64" in r.stdout


PLUGINS = '''
class NoChoose:
    pass


class Broken:
    def __init__(self):
        raise RuntimeError("no table today\\nsecond line")

    def choose(self, position, card):
        return position.legal_cells()[0]
'''


@pytest.mark.parametrize("attr,fragment", [
    ("NoChoose", "class NoChoose has no choose(position, card) method"),
    ("Broken", "constructing Broken failed: RuntimeError: no table today"),
])
def test_a_plugin_class_that_cannot_play_is_a_one_line_error_naming_it(tmp_path, monkeypatch, attr, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "badpol.py").write_text(PLUGINS)
    for args in (["run", "-p", f"badpol.py:{attr}", "-n", "5", "-w", "1"], ["replay", "-p", f"badpol.py:{attr}"]):
        r = invoke(*args)
        assert r.exit_code == 2, r.output  # as a plugin that fails to import
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: policy 'badpol.py:{attr}': "), r.stderr
        assert fragment in lines[0]
    assert not (tmp_path / "results").exists()


def test_a_plugin_class_s_policy_arg_errors_name_the_keys_it_takes(tmp_path, monkeypatch):
    # as a built-in's do: an unknown key names the valid ones; a missing one says which --policy-arg to give
    monkeypatch.chdir(tmp_path)
    (tmp_path / "argpol.py").write_text("class Picky:\n    def __init__(self, depth, mode='fast'):\n        pass\n\n"
                                        "    def choose(self, position, card):\n        return position.legal_cells()[0]\n")
    for args, message in (
            (["--policy-arg", "depth=1", "--policy-arg", "dpth=2"], "has no parameter dpth; it takes: depth, mode"),
            (["--policy-arg", "mode=slow"], "needs --policy-arg depth=VALUE")):
        r = invoke("run", "-p", "argpol.py:Picky", *args, "-n", "5", "-w", "1")
        assert r.exit_code == 2, r.output
        assert r.stderr.strip() == f"Error: policy 'argpol.py:Picky' {message}"


def test_a_module_plugin_that_is_a_file_here_says_how_to_name_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def choose(position, card):\n    return position.legal_cells()[0]\n")
    r = invoke("run", "-p", "mine:choose", "-n", "5", "-w", "1")
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().endswith("(for the file mine.py here, give mine.py:choose)"), r.stderr


def test_resume_refuses_a_policy_arg(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=200), out=out, workers=1)
    r = invoke("run", "--resume", str(out), "--policy-arg", "samples=3", "-q")
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == f"Error: --resume {out} takes the run's recorded settings; drop --policy-arg"


@pytest.mark.parametrize("option", [["--seed", "0"], ["--seed", "3"], ["--policy-arg", "samples=3"]])
def test_compare_of_run_directories_refuses_options_the_runs_record(tmp_path, option):
    # The runs' seed and policy arguments are their manifests': a --seed (0 included) or a --policy-arg given
    # with run directories would be ignored without a word.
    for policy in ("greedy", "random"):
        sim.run(sim.RunConfig(policy=policy, n=20, seed=3), out=tmp_path / policy, workers=1)
    r = invoke("compare", str(tmp_path / "greedy"), str(tmp_path / "random"), *option)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option[0] in lines[0] and "not with run directories" in lines[0], r.stderr
    assert invoke("compare", str(tmp_path / "greedy"), str(tmp_path / "random")).exit_code == 0


@pytest.mark.parametrize("manifest,says", [("{", "cannot read"), ("[1, 2]", "is not the manifest of a foursquare-sim run")])
def test_solve_resume_of_a_damaged_run_says_so_and_sends_it_nowhere(tmp_path, manifest, says):
    # A manifest that cannot be read is no game run: `sim run --resume` would refuse it the same way.
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "manifest.json").write_text(manifest)
    r = invoke("solve", "--resume", str(tmp_path / "r"))
    assert r.exit_code in (1, 2), r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "sim run --resume" not in lines[0], r.stderr


def test_ls_lists_runs_with_damaged_manifests_as_damaged(tmp_path):
    for name in ("good", "started", "bad", "list"):
        sim.run(sim.RunConfig(n=50), out=tmp_path / name, workers=1)
    started = tmp_path / "started" / "manifest.json"
    started.write_text(json.dumps({**json.loads(started.read_text()), "started": 5}))
    (tmp_path / "bad" / "manifest.json").write_text("{bad")
    (tmp_path / "list" / "manifest.json").write_text("[]")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text('{"name": "someone else\'s"}')
    r = invoke("ls", str(tmp_path))
    assert r.exit_code == 0, r.output
    status = {line.split()[0]: line.split()[6] for line in r.stdout.splitlines()[2:6]}
    assert status == {"bad": "damaged", "good": "complete", "list": "damaged", "started": "damaged"}, r.stdout
    # Each damaged run's reason is under the table, not only in -f json; no solve run, no note about solve runs.
    notes = " ".join(r.stdout.splitlines()[6:])
    assert all(f"{name} is damaged: " in notes for name in ("bad", "list", "started")), notes
    assert "started is 5" in notes and "JSON list" in notes and "solve run" not in r.stdout
    runs = {Path(run["path"]).name: run for run in json.loads(invoke("ls", str(tmp_path), "-f", "json").stdout)["runs"]}
    assert runs["started"]["policy"] == "greedy" and "started is 5" in runs["started"]["problem"]
    assert "cannot read manifest.json" in runs["bad"]["problem"] and "JSON list" in runs["list"]["problem"]


def test_a_scheduler_address_is_checked_before_anything_is_made(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from sim.jobs.executors import check_scheduler

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    for address in ("tcp://10.0.0.5:8786", "10.0.0.5:8786", "tls://host:1", "[::1]:8786", "tcp://[::1]:8786"):
        assert check_scheduler(address) == address  # the forms Dask takes; nothing is contacted
    for address in ("notaurl", "tcp://host", "host:port", "http://host:8786", "::1:8786", "host:0", "tcp://:8786"):
        r = invoke("run", "--executor", "dask", "--scheduler", address, "-n", "20", "-o", "X")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, (address, r.output)
        assert r.stderr.startswith(f"Error: --scheduler {address!r} is not a Dask scheduler address"), r.stderr
    for command in (["run", "-n", "20", "-o", "X"], ["solve", "-n", "2", "-o", "X"]):
        r = invoke(*command, "--scheduler", "tcp://10.0.0.5:8786")
        assert r.exit_code == 2 and r.stderr == "Error: --scheduler goes with --executor dask\n", r.output
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "notaurl")
    r = invoke("run", "--executor", "dask", "-n", "20", "-o", "X")
    assert r.exit_code == 2 and r.stderr.startswith("Error: DASK_SCHEDULER_ADDRESS 'notaurl' is not"), r.output
    assert list(tmp_path.iterdir()) == []


def test_a_scheduler_that_does_not_answer_is_an_error_before_anything_is_made(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    for command in (["run", "-n", "20", "-o", "X"], ["solve", "-n", "2", "-o", "X"]):
        r = invoke(*command, "--executor", "dask", "--scheduler", f"tcp://127.0.0.1:{port}")
        assert r.exit_code == 1 and r.stderr.count("\n") == 1, r.output
        assert r.stderr.startswith(f"Error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"), r.stderr
    assert list(tmp_path.iterdir()) == []


def test_ls_warns_of_files_that_are_not_a_runs_parts_unless_quiet(tmp_path):
    sim.run(sim.RunConfig(n=50), out=tmp_path / "r", workers=1)
    (tmp_path / "r" / "games" / "part-00099.parquet").write_bytes(b"not a part")
    r = invoke("ls", str(tmp_path))
    assert r.exit_code == 0 and "part-00099.parquet, which is not a part of this run" in r.stderr, r.output
    assert "complete" in r.stdout
    r = invoke("ls", str(tmp_path), "-q")
    assert r.exit_code == 0 and r.stderr == "" and "complete" in r.stdout, r.output


@pytest.mark.parametrize("args,named", [
    (["run", "-p", "greedy", "-p", "random", "-n", "10"], "--policy/-p"),
    (["run", "-n", "10", "--seed", "1", "--seed", "2"], "--seed"),
    (["sweep", "-n", "10", "-n", "20", "--rule", "grid=3,4"], "-n"),
    (["solve", "-n", "2", "--node-limit", "10", "--node-limit", "20"], "--node-limit"),
])
def test_an_option_of_one_value_given_twice_is_a_usage_error(tmp_path, monkeypatch, args, named):
    # The parser would keep the last one without a word; repeatable options (--rule, compare's -p) stay so.
    monkeypatch.chdir(tmp_path)
    r = invoke(*args)
    assert r.exit_code == 2 and r.stderr.startswith(f"Error: {named} is given more than once"), r.output
    assert r.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_ls_says_what_sets_a_run_apart_and_who_is_writing_it(tmp_path, monkeypatch):
    import subprocess
    import sys

    from sim.analysis import datasets

    deals = tmp_path / "decks.jsonl"
    deals.write_text("".join(json.dumps({"deck": [int(r) for r in sim.deal(3, g)]}) + "\n" for g in range(20)))
    assert invoke("run", "-n", "20", "--deals", str(deals), "-o", str(tmp_path / "d"), "-q").exit_code == 0
    assert invoke("run", "-p", "heuristic", "--policy-arg", "weights=-5,1,1,1,1,1,1", "-n", "20",
                  "-o", str(tmp_path / "w"), "-q").exit_code == 0
    sim.run(sim.RunConfig(n=20), out=tmp_path / "live", workers=1)
    m = json.loads((tmp_path / "live" / "manifest.json").read_text())
    (tmp_path / "live" / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    # Another process holds the writer's lock, as a run being played does.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from sim.jobs.runner import writer_lock\n"
        f"with writer_lock({str(tmp_path / 'live')!r}):\n print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        rows = {line.split()[0]: line for line in invoke("ls", str(tmp_path)).stdout.splitlines()[2:5]}
        listed = {r.path: r for r in datasets.list_runs(tmp_path)}
    finally:
        holder.kill()
        holder.wait()
    assert "deals decks.jsonl" in rows["d"] and "heuristic weights=-5,1,1,1,1,1,1" in rows["w"], rows
    assert f"being written (pid {holder.pid}; 20 done)" in rows["live"], rows
    assert listed[str(tmp_path / "live")].writer == holder.pid and listed[str(tmp_path / "w")].writer is None
    assert listed[str(tmp_path / "d")].deals == str(deals)
    assert datasets.list_runs(tmp_path)[1].writer is None  # the lock is free once its holder is gone

    # A part this user may not read is unreadable, not damaged (root reads everything: the error is made here).
    def denied(run_dir, m=None):
        raise PermissionError(13, "Permission denied", str(run_dir / "games" / "part-00000.parquet"))

    monkeypatch.setattr(datasets, "checked_parts", denied)
    (w,) = [r for r in datasets.list_runs(tmp_path) if r.path.endswith("w")]
    assert w.status == "unreadable" and w.problem.endswith("part-00000.parquet: Permission denied"), w
    # A folder this user may not look into (another user's, under results/) is listed as such; the others still are.
    (tmp_path / "private").mkdir()
    is_file = Path.is_file

    def guarded(path):
        if path.parent.name == "private":
            raise PermissionError(13, "Permission denied", str(path))
        return is_file(path)

    monkeypatch.setattr(Path, "is_file", guarded)
    r = invoke("ls", str(tmp_path))
    assert r.exit_code == 0 and "private is unreadable: cannot read" in " ".join(r.stdout.split()), r.output
    assert all(f"\n{name} " in r.stdout for name in ("d", "live", "w")), r.stdout


def test_a_part_that_disagrees_with_an_edited_manifest_is_not_sent_to_resume(tmp_path):
    sim.run(sim.RunConfig(n=20), out=tmp_path / "r", workers=1)
    m = json.loads((tmp_path / "r" / "manifest.json").read_text())
    (tmp_path / "r" / "manifest.json").write_text(json.dumps({**m, "rules": {**m["rules"], "max_pile": 3}}))
    r = invoke("report", str(tmp_path / "r"))
    assert r.exit_code != 0 and "play the run again with --force" in r.stderr and "resume" not in r.stderr, r.stderr
    assert invoke("run", "--resume", str(tmp_path / "r"), "-q").exit_code != 0  # as resume itself refuses it


def test_ls_does_not_read_a_run_a_newer_version_wrote(tmp_path):
    sim.run(sim.RunConfig(n=20), out=tmp_path / "r", workers=1)
    m = json.loads((tmp_path / "r" / "manifest.json").read_text())
    (tmp_path / "r" / "manifest.json").write_text(json.dumps({**m, "format_version": 99}))
    r = invoke("ls", str(tmp_path))
    assert r.exit_code == 0 and r.stdout.splitlines()[2].split()[6] == "unreadable", r.stdout
    assert "written by a newer foursquare-sim (format 99)" in " ".join(r.stdout.split())
    assert "%" not in r.stdout  # no win rate read from rows this version cannot vouch for


def test_asking_who_writes_a_run_never_drops_this_process_lock(tmp_path):
    # Closing any descriptor of the lock file drops this process's lock on it: the question must not open it.
    import subprocess
    import sys

    from sim.analysis.datasets import list_runs
    from sim.jobs import runner

    sim.run(sim.RunConfig(n=20), out=tmp_path / "r", workers=1)
    take = ("import sys; from sim.jobs import runner\ntry:\n    with runner.writer_lock(sys.argv[1]): print('took')\n"
            "except runner.RunError as e: print('refused')")
    with runner.writer_lock(tmp_path / "r"):
        assert runner.writer_pid(tmp_path / "r") == os.getpid()
        list_runs(tmp_path)
        other = subprocess.run([sys.executable, "-c", take, str(tmp_path / "r")], capture_output=True, text=True)
        assert other.stdout.strip() == "refused", other.stdout + other.stderr
    assert runner.writer_pid(tmp_path / "r") is None


def test_more_games_than_a_deal_file_holds_is_refused_counting_its_decks(tmp_path):
    for count, said in ((1, "1 deck in"), (3, "3 decks in")):
        deals = tmp_path / f"{count}.jsonl"
        deals.write_text("".join(json.dumps({"deck": [int(r) for r in sim.deal(3, g)]}) + "\n" for g in range(count)))
        r = invoke("run", "-n", "5", "--deals", str(deals), "-o", str(tmp_path / f"r{count}"), "-q")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
        assert f"n 5 is more than the {said} {deals}" in r.stderr
        assert not (tmp_path / f"r{count}").exists()
