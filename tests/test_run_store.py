"""Fault injection: what a run directory guarantees (README, "What a run directory guarantees").

One writer at a time; workers never outlive the main process; resume and
reuse notice changed files; resume runs no code the command line did not
name; --force removes only what a run owns; wrong parts are never trusted;
absurd sizes and bad files are one-line errors; and after each fault a
resumed run has exactly the rows of an uninterrupted one.
"""

import errno
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import sim
from sim.cli import app
from sim.jobs import runner

from conftest import games_of, interrupted_deals_run

ROOT = Path(__file__).resolve().parent.parent
cli = CliRunner()

PYTHON_PLUGIN = '''
def choose(position, card):
    return min(position.legal_cells())
'''

BAD_TYPES = '''
from numba import njit

@njit
def choose(state, rules, card, legal, rng, params):
    return "not a cell" + 1
'''

RAISES_AT_RUN_TIME = '''
from numba import njit

@njit
def choose(state, rules, card, legal, rng, params):
    if state[{turn}] == 3:
        raise ValueError("a bug on the fourth card")
    c = 0
    while not (legal >> c) & 1:
        c += 1
    return c
'''


def sim_cmd(*args, cwd=None, **kw):
    """`sim ARGS` in a fresh process (what a user runs), without a terminal."""
    return subprocess.run([sys.executable, "-m", "sim", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=600, **kw)


def one_line_error(result, code):
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines()
             if line.strip() and not line.startswith("compiling ")]  # the notice before a compile
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def reference_rows(tmp_path, **config):
    out = tmp_path / "reference"
    sim.run(sim.RunConfig(**config), out=out, workers=1)
    return games_of(out)


def greedy_and_random_runs(tmp_path):
    """(reference rows, greedy's run, random's run): the same 4,000 deals of seed 5 in parts of 1,000."""
    want = reference_rows(tmp_path, n=4000, seed=5)
    out, other = tmp_path / "r", tmp_path / "other"
    sim.run(sim.RunConfig(n=4000, seed=5), out=out, workers=1, chunk_size=1000)
    sim.run(sim.RunConfig(policy="random", n=4000, seed=5), out=other, workers=1, chunk_size=1000)
    return want, out, other


def run_files(out: Path) -> dict[str, bytes]:
    """The manifest's and the parts' bytes: what a command must leave as it was."""
    return {p.name: p.read_bytes() for p in [out / "manifest.json", *(out / "games").iterdir()]}


def children_of(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --- 1. one writer at a time --------------------------------------------------------------------


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path):
    out = tmp_path / "run"
    sim.run(sim.RunConfig(n=1000, seed=1), out=out, workers=1)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from sim.jobs.runner import writer_lock\n"
        f"with writer_lock(__import__('pathlib').Path({str(out)!r})):\n"
        "    print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for args in (["run", "-n", "1000", "--out", out], ["run", "-n", "1000", "--out", out, "--force"],
                     ["run", "--resume", out]):
            r = cli.invoke(app, list(map(str, args)))
            line = one_line_error(r, 1)
            assert f"pid {holder.pid}" in line
    finally:
        holder.kill()
        holder.wait()
    # The holder is dead: its lock went with it.
    r = cli.invoke(app, ["run", "-n", "1000", "--out", str(out), "-q", "-w", "1", "--force"])
    assert r.exit_code == 0, r.output


def test_a_second_writer_is_told_the_holders_pid_before_the_holder_has_written_it(tmp_path):
    # Started at the same moment, the refused writer read the lock file before the holder wrote its pid into it:
    # "being written by another process (pid unknown)", in 1 of 25 tries.
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, time\n"
        f"fd = os.open({str(out / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked" and (out / ".lock").read_text() == ""
        with pytest.raises(sim.RunError, match=rf"being written by another process \(pid {holder.pid}\)"):
            with runner.writer_lock(out):
                pass
    finally:
        holder.kill()
        holder.wait()


def test_a_second_writer_in_the_same_process_is_refused_and_the_lock_stays_held(tmp_path):
    # A POSIX lock is the process's: a second claim here (another thread, a notebook cell) was granted, and closing
    # its descriptor dropped the lock of the run still being written, so another process could write it too.
    out = tmp_path / "run"
    take = ("import sys; from pathlib import Path; from sim.jobs import runner\ntry:\n"
            "    with runner.writer_lock(Path(sys.argv[1])): print('took')\n"
            "except runner.RunError: print('refused')")
    with runner.writer_lock(out):
        with pytest.raises(sim.RunError, match=rf"being written by this process \(pid {os.getpid()}\)"):
            with runner.writer_lock(out):
                pass
        with pytest.raises(sim.RunError, match="being written by this process"):
            sim.run(sim.RunConfig(n=10), out=out, workers=1)
        other = subprocess.run([sys.executable, "-c", take, str(out)], capture_output=True, text=True)
        assert other.stdout.strip() == "refused", other.stdout + other.stderr
    assert not runner._HELD
    with runner.writer_lock(out):  # released: taken again
        pass


def test_deleting_the_lock_file_during_a_run_lets_no_second_writer_in(tmp_path):
    # Tools that leave stale lock files teach people to delete them. The lock file a run's writer holds, deleted
    # (or replaced) while the run is written, would let a second writer lock a new file and write the same parts;
    # the lock on the folder itself refuses it, and sim report still finds the writer. Released, the folder is
    # writable again, with or without the lock file.
    out = tmp_path / "run"
    take = ("import sys; from pathlib import Path; from sim.jobs import runner\ntry:\n"
            "    with runner.writer_lock(Path(sys.argv[1])): print('took')\n"
            "except runner.RunError as e: print(e)")
    with runner.writer_lock(out):
        (out / runner.LOCK).unlink()
        assert runner.writer_pid(out) == os.getpid()
        other = subprocess.run([sys.executable, "-c", take, str(out)], capture_output=True, text=True)
        assert other.stdout.strip() == (f"{out} is being written by another process (pid {os.getpid()}), though its "
                                        f"lock file .lock was deleted or replaced; wait for that run to finish"), \
            other.stdout + other.stderr
        (out / runner.LOCK).write_text("")  # replaced: a new file, not the one held
        with pytest.raises(sim.RunError, match=rf"being written by this process \(pid {os.getpid()}\), though"):
            sim.run(sim.RunConfig(n=10), out=out, workers=1)
    assert runner.writer_pid(out) is None
    other = subprocess.run([sys.executable, "-c", take, str(out)], capture_output=True, text=True)
    assert other.stdout.strip() == "took", other.stdout + other.stderr


def test_a_file_system_without_flock_on_folders_is_written_under_the_lock_file_alone(tmp_path, monkeypatch):
    # NFS emulates flock with POSIX locks, which a folder opened for reading cannot take (EBADF): the run is still
    # written, under its lock file, and a second writer is still refused by that.
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    out = tmp_path / "run"
    sim.run(sim.RunConfig(n=200), out=out, workers=1)
    assert sim.load(out).collect().height == 200
    take = ("import sys; from pathlib import Path; from sim.jobs import runner\ntry:\n"
            "    with runner.writer_lock(Path(sys.argv[1])): print('took')\n"
            "except runner.RunError: print('refused')")
    with runner.writer_lock(out):
        other = subprocess.run([sys.executable, "-c", take, str(out)], capture_output=True, text=True)
        assert other.stdout.strip() == "refused", other.stdout + other.stderr


@pytest.mark.parametrize("link", [".lock", ".replaced/games"])
def test_a_writer_writes_and_deletes_nothing_through_a_symbolic_link_in_a_run_folder(tmp_path, link):
    # A run folder from elsewhere (a download) with .lock linked to one of the user's files: asking for its run
    # again truncated that file to write the pid in it. With .replaced/games linked to a folder, the clean-up of
    # a --force killed outright deleted the part files in that folder.
    out = tmp_path / "run"
    sim.run(sim.RunConfig(n=200), out=out, workers=1, chunk_size=100)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = elsewhere / "part-00000.parquet"
    theirs.write_text("the user's own file")
    (out / link).parent.mkdir(exist_ok=True)
    (out / link).unlink(missing_ok=True)
    (out / link).symlink_to(theirs if link == ".lock" else elsewhere)
    line = one_line_error(cli.invoke(app, ["run", "-n", "200", "--chunk-size", "100", "-w", "1", "--out", str(out)]), 1)
    assert f"{out / link} is a symbolic link" in line, line
    assert theirs.read_text() == "the user's own file"
    assert sim.load(out).collect().height == 200


def test_another_live_writers_temp_file_is_left_alone(tmp_path):
    from sim.jobs.files import TMP_MARK, remove_temp_files

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f"part-00000.parquet{TMP_MARK}{other.pid}"
        dead = tmp_path / f"part-00001.parquet{TMP_MARK}999999999"
        live.write_text("x")
        dead.write_text("x")
        assert remove_temp_files(tmp_path) == 1
        assert live.exists() and not dead.exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow  # two `sim compare` processes
def test_compare_refuses_while_a_run_it_would_reuse_is_being_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the comparisons run in this process; only the lock's holder needs its own
    args = ["compare", "--policy", "greedy", "--policy", "random", "-n", "2000", "-w", "1", "-q"]
    assert cli.invoke(app, args).exit_code == 0
    out = tmp_path / "results" / "greedy-seed0-n2000"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from pathlib import Path; from sim.jobs.runner import writer_lock\n"
        f"with writer_lock(Path({str(out)!r})):\n"
        "    print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = cli.invoke(app, args)
        assert r.exit_code == 1 and f"pid {holder.pid}" in r.stderr, r.stderr
    finally:
        holder.kill()
        holder.wait()


# --- 2. workers never outlive the main process --------------------------------------------------


@pytest.mark.slow
def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    out = tmp_path / "killed"
    main = subprocess.Popen([sys.executable, "-m", "sim", "run", "-n", "1e8", "--chunk-size", "20000", "-w", "2",
                             "-q", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while len(children_of(main.pid)) < 2 and time.time() < deadline:
            time.sleep(0.2)
        workers = children_of(main.pid)
        assert len(workers) >= 2, "the workers never started"
        time.sleep(0.5)
        main.send_signal(signal.SIGKILL)
        main.wait()
        deadline = time.time() + 5
        while any(alive(w) for w in workers) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(alive(w) for w in workers), "a worker outlived the main process"
    finally:
        if main.poll() is None:
            main.kill()
    # ... and the run is resumable to exactly the rows of an uninterrupted one.
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "incomplete"


# --- 3. files the rows depend on ------------------------------------------------------------------


def write_weights(path: Path, values):
    path.write_text(json.dumps({"weights": dict(zip(
        ("face_down", "to_open", "full_up", "full_down", "risk", "spread", "closed"), values))}))


def test_resume_refuses_a_changed_weights_file_and_reuse_plays_again(tmp_path, monkeypatch):
    weights = tmp_path / "w.json"
    write_weights(weights, [-3.8, -16.6, -2.2, -15.7, -1.4, 1.2, 4.0])
    monkeypatch.chdir(tmp_path)
    r = cli.invoke(app, ["run", "--policy", "heuristic", "--policy-arg", "weights=w.json", "-n", "3000",
                         "--chunk-size", "500", "-w", "1", "-q", "--out", "h"])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "h" / "manifest.json").read_text())
    assert m["policy_args"]["weights"] == str(weights.resolve())  # recorded absolute
    assert m["files"] == {str(weights.resolve()): runner.file_sha256(weights)}
    (tmp_path / "h" / "games" / "part-00003.parquet").unlink()
    m["status"] = "incomplete"
    (tmp_path / "h" / "manifest.json").write_text(json.dumps(m))
    write_weights(weights, [-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0])
    line = one_line_error(cli.invoke(app, ["run", "--resume", "h"]), 2)
    assert str(weights.resolve()) in line and "changed" in line


def test_resume_refuses_a_weights_file_the_manifest_names_but_records_no_digest_of(tmp_path):
    # A manifest edited (or written elsewhere) without the weights file among its files: the resume played the
    # missing part with whatever that file held, unchecked.
    weights = tmp_path / "w.json"
    write_weights(weights, [-3.8, -16.6, -2.2, -15.7, -1.4, 1.2, 4.0])
    out = tmp_path / "h"
    sim.run(sim.RunConfig(policy="heuristic", n=20, policy_args=(("weights", str(weights)),)), out=out, workers=1,
            chunk_size=10)
    m = json.loads((out / "manifest.json").read_text())
    (out / "games" / "part-00001.parquet").unlink()
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete", "files": {}}))
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 2)
    assert f"names {weights.resolve()} in the policy's arguments but records no digest of it" in line
    assert not (out / "games" / "part-00001.parquet").exists()


def test_resume_refuses_when_the_shipped_planner_values_changed(tmp_path, monkeypatch):
    # The package's data is a file the rows depend on too, though no --policy-arg names it.
    import types

    import policies.planner as planner

    shipped = tmp_path / "package"
    (shipped / "data").mkdir(parents=True)
    values = shipped / "data" / planner.DATA_FILE
    values.write_text((ROOT / "policies" / "data" / planner.DATA_FILE).read_text())
    monkeypatch.setattr(planner, "resources", types.SimpleNamespace(files=lambda package: shipped))
    out = tmp_path / "p"
    sim.run(sim.RunConfig(policy="planner", n=20), out=out, workers=1, chunk_size=10)
    m = json.loads((out / "manifest.json").read_text())
    assert m["files"] == {str(values): runner.file_sha256(values)}
    (out / "games" / "part-00001.parquet").unlink()
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    data = json.loads(values.read_text())
    values.write_text(json.dumps({**data, "weights": [1.5 * w for w in data["weights"]]}))
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 2)
    assert str(values) in line and "changed" in line


@pytest.mark.slow  # three comparisons, one of 1,000 heuristic games played twice
def test_compare_reuses_only_when_the_weights_file_is_unchanged(tmp_path, monkeypatch):
    weights = tmp_path / "w.json"
    write_weights(weights, [-3.8, -16.6, -2.2, -15.7, -1.4, 1.2, 4.0])
    monkeypatch.chdir(tmp_path)
    args = ["compare", "--policy", "greedy", "--policy", "heuristic", "--policy-arg", f"weights={weights}",
            "-n", "1000", "-w", "1"]
    first = cli.invoke(app, args)
    assert first.exit_code == 0, first.output
    again = cli.invoke(app, args)
    figures = lambda out: [line for line in out.splitlines() if "reused" not in line]  # noqa: E731
    assert "reusing" in again.stderr and figures(again.stdout) == figures(first.stdout)
    write_weights(weights, [-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0])
    changed = cli.invoke(app, args)
    assert changed.exit_code == 0, changed.output
    assert "again" in changed.stderr and str(weights.resolve()) in changed.stderr
    assert figures(changed.stdout) != figures(first.stdout)


def test_compare_reuses_the_run_sim_run_made_with_a_relative_weights_file(tmp_path, monkeypatch):
    # Both name the run's directory from the file's absolute path, so the games are played once.
    write_weights(tmp_path / "wz.json", [-3.8, -16.6, -2.2, -15.7, -1.4, 1.2, 4.0])
    monkeypatch.chdir(tmp_path)
    r = cli.invoke(app, ["run", "--policy", "heuristic", "--policy-arg", "weights=wz.json", "-n", "500", "-w", "1"])
    assert r.exit_code == 0, r.output
    made = [p.name for p in (tmp_path / "results").iterdir()]
    assert made == ["heuristic-weightswz-seed0-n500"]
    r = cli.invoke(app, ["compare", "--policy", "heuristic", "--policy", "greedy", "--policy-arg", "weights=wz.json",
                         "-n", "500", "-w", "1"])
    assert r.exit_code == 0, r.output
    assert f"reusing {Path('results') / made[0]}" in r.stderr
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["greedy-seed0-n500", made[0]]


# --- 4. resume runs no code it was not given ---------------------------------------------------------


def test_resume_of_a_plugin_run_needs_the_plugin_named_again(tmp_path, monkeypatch):
    plugin = tmp_path / "lowest.py"
    plugin.write_text(PYTHON_PLUGIN)
    monkeypatch.chdir(tmp_path)
    r = cli.invoke(app, ["run", "--policy", "lowest.py:choose", "-n", "300", "--chunk-size", "100", "-w", "1",
                         "-q", "--out", "p"])
    assert r.exit_code == 0, r.output
    want = games_of(tmp_path / "p")
    m = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert m["policy"] == f"{plugin.resolve()}:choose"
    (tmp_path / "p" / "games" / "part-00001.parquet").unlink()
    # Named nowhere on the command line: refused before anything is imported.
    marker = tmp_path / "imported"
    plugin.write_text(PYTHON_PLUGIN + f"\nopen({str(marker)!r}, 'w').close()\n")
    line = one_line_error(cli.invoke(app, ["run", "--resume", "p"]), 2)
    assert "--policy" in line and not marker.exists()
    # Named, but changed since: refused, naming the file.
    line = one_line_error(cli.invoke(app, ["run", "--resume", "p", "--policy", "lowest.py:choose"]), 2)
    assert str(plugin.resolve()) in line
    plugin.write_text(PYTHON_PLUGIN)
    r = cli.invoke(app, ["run", "--resume", "p", "--policy", "lowest.py:choose", "-q"])
    assert r.exit_code == 0, r.output
    assert games_of(tmp_path / "p").equals(want)


def test_a_plugins_own_helper_modules_are_recorded_and_a_changed_one_stops_the_resume(tmp_path, monkeypatch):
    pkg = tmp_path / "mypolicies"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "pick.py").write_text("def lowest(cells):\n    return min(cells)\n")
    (pkg / "rank.py").write_text("from .sub.pick import lowest\n")
    (pkg / "low.py").write_text("import json\nimport numpy as np\nfrom mypolicies import rank\n\n"
                                "def choose(position, card):\n    return rank.lowest(position.legal_cells())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    from sim.jobs.play import settled

    config = settled(sim.RunConfig(policy="mypolicies.low:choose", n=300))
    recorded = sorted(Path(path).relative_to(tmp_path).as_posix() for path, _ in config.files)
    assert recorded == ["mypolicies/__init__.py", "mypolicies/low.py", "mypolicies/rank.py",
                        "mypolicies/sub/__init__.py", "mypolicies/sub/pick.py"]  # not json or numpy
    # An installed plugin's imports are followed within its own package, not into the packages beside it.
    import importlib.util

    from sim.players.plugins import pinned

    tqdm_dir = Path(importlib.util.find_spec("tqdm").origin).parent
    files = pinned("tqdm.auto:tqdm", {})[2]
    assert tqdm_dir / "auto.py" in files and tqdm_dir / "__init__.py" in files
    assert all(tqdm_dir in f.parents for f in files), files
    r = cli.invoke(app, ["run", "--policy", "mypolicies.low:choose", "-n", "300", "--chunk-size", "100", "-w", "1",
                         "-q", "--out", "p"])
    assert r.exit_code == 0, r.output
    (tmp_path / "p" / "games" / "part-00001.parquet").unlink()
    (pkg / "sub" / "pick.py").write_text("def lowest(cells):\n    return max(cells)\n")
    line = one_line_error(cli.invoke(app, ["run", "--resume", "p", "--policy", "mypolicies.low:choose"]), 2)
    assert str(pkg / "sub" / "pick.py") in line, line


def test_an_interrupted_plugin_run_says_the_command_that_resumes_it(tmp_path, monkeypatch):
    import shlex

    plugin = tmp_path / "lowest.py"
    plugin.write_text(PYTHON_PLUGIN)
    monkeypatch.chdir(tmp_path)
    write = runner.write_atomic
    monkeypatch.setattr(runner, "write_atomic", _Stop(write))  # Ctrl-C at the first part
    r = cli.invoke(app, ["run", "--policy", "lowest.py:choose", "-n", "300", "--chunk-size", "100", "-w", "1",
                         "--out", "p b"])
    monkeypatch.setattr(runner, "write_atomic", write)
    hint = one_line_error(r, 130).split("Finish with: ")[1]
    assert hint == shlex.join(["sim", "run", "--resume", "p b", "--policy", f"{plugin.resolve()}:choose"])
    # report and compare give the same command; report names a temporary file a killed writer left.
    (tmp_path / "p b" / "games" / "part-00001.parquet.tmp-999999999").write_bytes(b"PAR1 half")
    r = cli.invoke(app, ["report", "p b"])
    assert r.exit_code == 0, r.output
    assert f"WARNING: run is incomplete: 0 of 300 games are done; finish it with: {hint}\n" in r.stdout
    assert (f"WARNING: games/ holds 1 temporary file (part-00001.parquet.tmp-999999999) left by an interrupted "
            f"write, not counted; {hint} removes it\n") in r.stdout
    assert cli.invoke(app, ["run", "-n", "300", "-w", "1", "--out", "g", "-q"]).exit_code == 0
    line = one_line_error(cli.invoke(app, ["compare", "g", "p b"]), 2)
    assert line.endswith(f"p b is incomplete; finish it with: {hint}")
    r = cli.invoke(app, shlex.split(hint)[1:] + ["-q"])
    assert r.exit_code == 0, r.output
    assert games_of(tmp_path / "p b").equals(reference_rows(tmp_path, policy=f"{plugin}:choose", n=300))


def test_a_sweep_finishes_its_own_interrupted_run_and_never_takes_over_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep = ["sweep", "-n", "300", "--rule", "max_face_down=3,4", "-w", "1"]
    first, second = Path("results/greedy-seed0-n300-max_face_down3"), Path("results/greedy-seed0-n300")
    sim.run(sim.RunConfig(n=300, rules=sim.Rules(max_face_down=3)), out=first, workers=1, chunk_size=100)
    write = runner.write_atomic
    monkeypatch.setattr(runner, "write_atomic", _Stop(write))  # Ctrl-C at the second combination's first part
    r = cli.invoke(app, sweep)
    assert r.exit_code == 130 and r.stderr.strip().splitlines()[-1].startswith("Error: interrupted"), r.output
    monkeypatch.setattr(runner, "write_atomic", write)
    assert json.loads((second / "manifest.json").read_text())["status"] == "incomplete"
    # Run again, the sweep plays the interrupted run's missing parts (it used to refuse it as "another run").
    r = cli.invoke(app, sweep)
    assert r.exit_code == 0, r.output
    assert f"[1/2] greedy (max_face_down=3): reusing {first}" in r.stderr
    assert f"[2/2] greedy: finishing {second} (it was interrupted; playing its missing parts" in r.stderr
    assert games_of(second).equals(reference_rows(tmp_path, n=300))
    # A folder holding anything but a run is refused before any game, even with --force; an empty one is used.
    other = ["sweep", "-n", "200", "--rule", "max_pile=3,4", "-w", "1", "-q"]
    Path("results/greedy-seed0-n200").mkdir()
    Path("results/greedy-seed0-n200/notes.txt").write_text("mine")
    line = one_line_error(cli.invoke(app, [*other, "--force"]), 2)
    assert line == ("Error: results/greedy-seed0-n200 is a non-empty directory that holds no run, where the run of "
                    "greedy goes; move it away")
    assert not Path("results/greedy-seed0-n200-max_pile3").exists()
    assert sorted(p.name for p in Path("results/greedy-seed0-n200").iterdir()) == ["notes.txt"]  # not even a lock
    Path("results/greedy-seed0-n200/notes.txt").unlink()
    assert cli.invoke(app, other).exit_code == 0
    assert games_of(Path("results/greedy-seed0-n200")).height == 200


def test_resume_refuses_a_deal_file_that_changed_or_is_gone(tmp_path):
    path, out, want = interrupted_deals_run(tmp_path, 30, 10)
    original = path.read_text()
    path.write_text(original.replace(json.dumps({"deck": list(sim.deal(4, 25))}),
                                     json.dumps({"deck": list(sim.deal(4, 99))})))
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 2)
    assert f"deal file {path.resolve()} has changed" in line
    path.unlink()
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 2)
    assert f"deal file {path.resolve()} is gone" in line
    assert sorted(p.name for p in (out / "games").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    path.write_text(original)
    sim.resume(out, workers=1)
    assert games_of(out).equals(want)



def test_a_deal_file_replaced_while_it_is_read_records_the_digest_of_the_decks_played(tmp_path, monkeypatch):
    # A large deal file takes seconds to read: the digest was taken by a second read, after the decks were
    # parsed, so a file replaced meanwhile was recorded as the one the games were played on.
    import hashlib

    from sim.jobs import deal_files

    path = tmp_path / "decks.jsonl"
    first = "".join(json.dumps({"deck": list(sim.deal(4, g))}) + "\n" for g in range(12))
    other = "".join(json.dumps({"deck": list(sim.deal(5, g))}) + "\n" for g in range(12))
    path.write_text(first)
    check = deal_files.validate_decks

    def replaced_while_read(decks):
        path.write_text(other)  # the file is replaced while its decks are being checked
        return check(decks)

    monkeypatch.setattr(deal_files, "validate_decks", replaced_while_read)
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=None, deals=str(path), record_deals=True), out=out, workers=1)
    m = json.loads((out / "manifest.json").read_text())
    played = games_of(out)["deck"].to_list()
    assert played == [list(sim.deal(4, g)) for g in range(12)]
    assert m["deals_sha256"] == hashlib.sha256(first.encode()).hexdigest()
    monkeypatch.undo()
    with pytest.raises(sim.UsageError, match="has changed since the run started"):  # what resume and replay read
        runner.recorded_decks(m["deals"], m["deals_sha256"], "resume")
    path.write_text(first)
    assert runner.recorded_decks(m["deals"], m["deals_sha256"], "resume").tolist() == played

def test_resume_plays_again_a_part_the_manifest_does_not_list_yet_when_it_is_not_its_chunk(tmp_path):
    # As an interruption leaves it: part 2 written after the manifest's last write, so not listed; here it is
    # a copy of part 0 (the wrong games), which only its own metadata and game range can tell.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    want = games_of(out)
    m = json.loads((out / "manifest.json").read_text())
    del m["parts"]["part-00002.parquet"], m["part_info"]["part-00002.parquet"]
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    shutil.copy(out / "games" / "part-00000.parquet", out / "games" / "part-00002.parquet")
    sim.resume(out, workers=1)
    assert games_of(out).equals(want)
    assert cli.invoke(app, ["report", str(out)]).exit_code == 0


def test_resume_adopts_an_unlisted_part_only_when_it_is_this_runs_deals_and_columns(tmp_path):
    # Part 1 unlisted, as a kill -9 between a part and the next manifest leaves it, and in its place a part of
    # exactly its games from a run that differs only in its deals (a deal file), only in its columns
    # (--record-deals), or that says nothing of itself (a plain Parquet file of the same rows).
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=400, seed=5), out=out, workers=1, chunk_size=100)
    want = games_of(out)
    decks = tmp_path / "decks.jsonl"
    decks.write_text("".join(json.dumps({"deck": [int(r) for r in sim.deal(9, g)]}) + "\n" for g in range(400)))
    sim.run(sim.RunConfig(n=400, seed=5, deals=str(decks)), out=tmp_path / "file", workers=1, chunk_size=100)
    sim.run(sim.RunConfig(n=400, seed=5, record_deals=True), out=tmp_path / "deck", workers=1, chunk_size=100)
    plain = tmp_path / "plain.parquet"
    pl.read_parquet(out / "games" / "part-00001.parquet").with_columns(won=True).write_parquet(plain)
    m = json.loads((out / "manifest.json").read_text())
    del m["parts"]["part-00001.parquet"], m["part_info"]["part-00001.parquet"]
    for source in (tmp_path / "file" / "games" / "part-00001.parquet",
                   tmp_path / "deck" / "games" / "part-00001.parquet", plain):
        (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
        shutil.copy(source, out / "games" / "part-00001.parquet")
        sim.resume(out, workers=1)
        assert games_of(out).equals(want), source
        assert cli.invoke(app, ["report", str(out)]).exit_code == 0
    # A listed part whose digest was taken out of the manifest is not read unchecked.
    shutil.copy(tmp_path / "file" / "games" / "part-00001.parquet", out / "games" / "part-00001.parquet")
    m = json.loads((out / "manifest.json").read_text())
    del m["part_info"]["part-00001.parquet"]["sha256"]
    (out / "manifest.json").write_text(json.dumps(m))
    line = one_line_error(cli.invoke(app, ["report", str(out)]), 1)
    assert "part-00001.parquet: the manifest records no SHA-256" in line, line
    with pytest.raises(runner.RunError, match="no SHA-256"):
        sim.load(out)


def test_resume_keeps_an_unlisted_part_only_with_the_rows_it_was_written_with(tmp_path, caplog):
    # An unlisted part with one value changed (a flipped byte that still parses, say) kept its settings and game
    # range, so resume adopted it and recorded its SHA-256 as if this run had written it: every reader trusted it.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=400, seed=5), out=out, workers=1, chunk_size=100)
    want = games_of(out)
    part = out / "games" / "part-00001.parquet"
    meta = pl.read_parquet_metadata(part)
    assert meta[runner.ROWS_DIGEST] == runner.rows_digest(pl.read_parquet(part))
    m = json.loads((out / "manifest.json").read_text())
    del m["parts"][part.name], m["part_info"][part.name]
    changed = pl.read_parquet(part).with_columns(cards_played=pl.col("cards_played").reverse())
    without = {k: v for k, v in meta.items() if k != runner.ROWS_DIGEST}
    for rows, metadata, says in ((changed, meta, "does not hold the rows it was written with"),
                                 (pl.read_parquet(part), without, "does not carry the SHA-256 of its rows")):
        (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
        part.write_bytes(runner.parquet_bytes(rows, metadata))
        caplog.clear()
        with caplog.at_level("WARNING", logger="sim"):
            summary = sim.resume(out, workers=1)
        assert f"{part} {says}" in caplog.text and "playing it again" in caplog.text
        assert summary.games == 400 and games_of(out).equals(want)
        assert pl.read_parquet_metadata(part)[runner.ROWS_DIGEST] == meta[runner.ROWS_DIGEST]
    # Unchanged, it is kept: nothing is played.
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    before = part.stat().st_mtime_ns
    assert sim.resume(out, workers=1).games == 400 and part.stat().st_mtime_ns == before


@pytest.mark.parametrize("status", ["complete", "incomplete"])
def test_a_manifest_that_lists_fewer_parts_than_its_run_has_is_finished_by_resume(tmp_path, caplog, status):
    # Every part on disk, verified, but the manifest lists 4 of the 5 (hand-edited, or saved before the last):
    # nothing reads it as complete, and resume lists the fifth without playing anything or adding a session.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    want = games_of(out)
    m = json.loads((out / "manifest.json").read_text())
    del m["parts"]["part-00003.parquet"], m["part_info"]["part-00003.parquet"]
    (out / "manifest.json").write_text(json.dumps({**m, "status": status}))
    if status == "complete":
        with caplog.at_level("WARNING", logger="sim"):
            assert sim.load(out).collect().height == 400
        assert "says complete but lists 4 of its 5 parts" in caplog.text
    listed = json.loads(cli.invoke(app, ["ls", str(tmp_path), "-f", "json"]).stdout)["runs"]
    assert [(r["status"], r["done"]) for r in listed] == [("incomplete", 400)], listed
    assert status == "incomplete" or "lists 4 of its 5 parts" in listed[0]["problem"]
    r = cli.invoke(app, ["run", "-n", "500", "--chunk-size", "100", "-w", "1", "--out", str(out), "-q"])
    assert r.exit_code == 2 and "--resume" in r.stderr, "not reused as a complete run of 400 games"
    summary = sim.resume(out, workers=1)
    assert summary.games == 500 and "its manifest now lists every part" in summary.note
    after = json.loads((out / "manifest.json").read_text())
    assert after["status"] == "complete" and len(after["parts"]) == 5 and after["sessions"] == m["sessions"]
    assert games_of(out).equals(want)


def test_a_dask_run_resumes_locally_unless_told(tmp_path):
    out = tmp_path / "d"
    sim.run(sim.RunConfig(n=2000), out=out, workers=1, chunk_size=500)
    want = games_of(out)
    m = json.loads((out / "manifest.json").read_text())
    m.update(executor="dask", scheduler="tcp://192.0.2.1:8786", status="incomplete")
    (out / "manifest.json").write_text(json.dumps(m))
    (out / "games" / "part-00002.parquet").unlink()
    sim.resume(out, workers=1)  # would time out connecting if it tried the recorded scheduler
    m = json.loads((out / "manifest.json").read_text())
    assert m["sessions"][-1]["executor"] == "local" and m["status"] == "complete"
    assert games_of(out).equals(want)


# --- 5. --force removes only a run's own files ---------------------------------------------------------


def test_force_refuses_what_is_not_a_run(tmp_path):
    saves = tmp_path / "proj" / "games" / "saves"
    saves.mkdir(parents=True)
    (saves / "mygame.sav").write_text("precious")
    (tmp_path / "proj" / "manifest.json").write_text(json.dumps({"name": "a web app", "icons": []}))
    line = one_line_error(cli.invoke(app, ["run", "-n", "100", "--out", str(tmp_path / "proj"), "--force"]), 2)
    assert "not a run" in line or "holds no run" in line
    assert (saves / "mygame.sav").read_text() == "precious"
    assert json.loads((tmp_path / "proj" / "manifest.json").read_text())["name"] == "a web app"
    assert sorted(p.name for p in (tmp_path / "proj").iterdir()) == ["games", "manifest.json"], "nothing added"


def test_force_on_a_run_keeps_files_the_run_does_not_own(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1)
    (out / "notes.txt").write_text("mine")
    (out / "games" / "README").write_text("mine too")
    r = cli.invoke(app, ["run", "-n", "400", "--seed", "2", "--out", str(out), "--force", "-q", "-w", "1"])
    assert r.exit_code == 0, r.output
    assert (out / "notes.txt").read_text() == "mine" and (out / "games" / "README").read_text() == "mine too"
    assert json.loads((out / "manifest.json").read_text())["seed"] == 2


def test_every_rename_is_synced_in_its_folder_so_that_it_outlasts_a_power_loss(tmp_path, monkeypatch):
    from sim.jobs import files

    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1)
    synced = []  # (inode, what the folder then held) of each folder synced
    fsync = os.fsync

    def record(fd):
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            synced.append((st.st_ino, sorted(os.listdir(fd))))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", record)
    files.write_atomic(out / "notes.txt", lambda tmp: Path(tmp).write_text("mine"))
    assert (out.stat().st_ino, sorted(os.listdir(out))) in synced, "the new name is synced"
    synced.clear()
    r = cli.invoke(app, ["run", "-n", "400", "--seed", "2", "--out", str(out), "--force", "-q", "-w", "1"])
    assert r.exit_code == 0, r.output
    aside = [names for ino, names in synced if ino == out.stat().st_ino and runner.MANIFEST not in names]
    assert aside, "the manifest's move aside is synced before the parts follow it"
    assert any(ino == (out / "games").stat().st_ino for ino, _ in synced), "the parts' moves are synced"


@pytest.mark.parametrize("why", ["its file system cannot sync it", "it may be written but not read"])
def test_a_folder_that_cannot_be_synced_keeps_the_file_written_in_it(tmp_path, monkeypatch, why):
    from sim.jobs import files

    fsync, open_ = os.fsync, os.open

    def no_folder_sync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        fsync(fd)

    def no_folder_read(path, flags, *args, **kwargs):  # as mode -wx is for anyone but root
        if os.path.isdir(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return open_(path, flags, *args, **kwargs)

    if why.startswith("its"):
        monkeypatch.setattr(os, "fsync", no_folder_sync)
    else:
        monkeypatch.setattr(os, "open", no_folder_read)
    files.write_atomic(tmp_path / "notes.txt", lambda tmp: Path(tmp).write_text("mine"))
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_force_with_a_policy_that_fails_to_compile_keeps_the_run_it_would_replace(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    bad = tmp_path / "bad.py"
    bad.write_text(BAD_TYPES)
    r = cli.invoke(app, ["run", "-n", "500", "--out", str(out), "--force", "-p", f"{bad}:choose", "-w", "1"])
    one_line_error(r, r.exit_code)
    assert run_files(out) == before


def test_force_with_a_policy_that_fails_while_playing_keeps_the_run_it_would_replace(tmp_path):
    # It loads and compiles (on game 0, whose fourth card it lets by), then raises on the fourth card of another
    # game: before the new run has a part.
    from sim import kernels as K
    from sim.engine.cards import deal

    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    raises = tmp_path / "raises.py"
    raises.write_text(RAISES_AT_RUN_TIME.replace("== 3:", f"== 3 and card != {int(deal(0, 0)[3])}:")
                      .format(turn=K.TURN))
    r = cli.invoke(app, ["run", "-n", "500", "--out", str(out), "--force", "-p", f"{raises}:choose", "-w", "1"])
    line = one_line_error(r, 1)
    assert "a bug on the fourth card" in line and f"{out} still holds the run it had" in line
    assert run_files(out) == before and not (out / runner.ASIDE).exists()
    assert cli.invoke(app, ["report", str(out)]).exit_code == 0


class _Stop:
    """Send this process SIGINT on the first call of `fn` (before it runs): a Ctrl-C landing right there."""

    def __init__(self, fn):
        self.fn, self.sent = fn, False

    def __call__(self, *args, **kwargs):
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises here
        return self.fn(*args, **kwargs)


@pytest.mark.parametrize("where", ["_save", "write_atomic"])
def test_force_interrupted_before_its_first_part_keeps_the_run_it_would_replace(tmp_path, monkeypatch, where):
    # _save: right after the old run is set aside, before the new manifest; write_atomic: while writing the
    # new run's first part.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before, want = run_files(out), games_of(out)
    monkeypatch.setattr(runner, where, _Stop(getattr(runner, where)))
    with pytest.raises(runner.Interrupted, match=f"{out} still holds the run it had"):
        sim.run(sim.RunConfig(n=300, seed=9), out=out, workers=1, chunk_size=100, force=True)
    assert run_files(out) == before and not (out / runner.ASIDE).exists()
    assert games_of(out).equals(want)


class _Killed(BaseException):
    """The process ending outright (kill -9): no handler runs."""


def test_a_force_killed_while_setting_the_run_aside_is_undone_by_the_next_writer(tmp_path, monkeypatch):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    real_replace, moved = os.replace, []

    def replace_then_die(src, dst):
        if len(moved) == 3:  # the manifest and two of the five parts are aside
            raise _Killed
        moved.append(src)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(_Killed):
        sim.run(sim.RunConfig(n=300, seed=9), out=out, workers=1, chunk_size=100, force=True)
    monkeypatch.setattr(os, "replace", real_replace)
    assert not (out / "manifest.json").exists()
    summary = sim.resume(out, workers=1)  # the next writer puts the run back: complete, nothing to play
    assert summary.games == 500 and "nothing was played" in summary.note
    assert run_files(out) == before and not (out / runner.ASIDE).exists()


@pytest.mark.parametrize("parts", [0, 1])
def test_a_force_killed_after_the_new_manifest_leaves_the_new_run_only_once_it_has_a_part(tmp_path, monkeypatch,
                                                                                          parts, caplog):
    # Killed outright with the new manifest written: before the new run's first part (starting its workers,
    # say) the old run comes back, since a run without a part is worth nothing; after it, the new run stands.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    real_execute, real_write = runner._execute, runner.write_atomic
    written = []

    def write_then_die(path, write):
        real_write(path, write)
        written.append(path)
        raise _Killed  # the part is on disk, its manifest entry is not

    def die(*args, **kwargs):
        if parts == 0:
            raise _Killed
        monkeypatch.setattr(runner, "write_atomic", write_then_die)
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(runner, "_execute", die)
    with pytest.raises(_Killed):
        sim.run(sim.RunConfig(n=300, seed=9), out=out, workers=1, chunk_size=100, force=True)
    monkeypatch.setattr(runner, "_execute", real_execute)
    monkeypatch.setattr(runner, "write_atomic", real_write)
    assert (out / runner.ASIDE / "manifest.json").exists() and len(written) == parts
    with caplog.at_level("WARNING", logger="sim"):
        summary = sim.resume(out, workers=1)
    assert not (out / runner.ASIDE).exists()
    # It came back unsaid: the resume asked for printed the old run's figures as if it were the run resumed.
    back = f"{out}: a --force that was stopped before its first part left the run it was replacing in .replaced; " \
           f"that run is back in place"
    assert (back in caplog.text) == (parts == 0), caplog.text
    if parts == 0:  # the old run is back, whole, and complete: nothing is played
        assert summary.games == 500 and "nothing was played" in summary.note and run_files(out) == before
    else:  # the replacement stands: it is resumed, the old run goes
        assert summary.games == 300 and games_of(out).equals(reference_rows(tmp_path, n=300, seed=9))


def test_a_killed_force_of_the_other_kind_is_resumed_as_the_run_that_comes_back(tmp_path, monkeypatch):
    # A game run, replaced by a solve run (--force) killed before its first part: the game run comes back, so
    # resuming the folder resumes a game run (it was taken for a solve run: a polars traceback).
    from sim.jobs.resume import resume

    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=300), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    real_execute = runner._execute

    def die(*args, **kwargs):
        raise _Killed

    monkeypatch.setattr(runner, "_execute", die)
    with pytest.raises(_Killed):
        sim.solve_run(sim.SolveConfig(n=4, node_limit=100), out=out, workers=1, force=True)
    monkeypatch.setattr(runner, "_execute", real_execute)
    assert json.loads((out / "manifest.json").read_text())["kind"] == "solve"
    summary = resume(out, workers=1)
    assert summary.games == 300 and "nothing was played" in summary.note and run_files(out) == before
    with pytest.raises(runner.UsageError, match="holds a run of games, not a solve run; finish it with sim run --resume"):
        runner.resume(sim.jobs.solve.SOLVE, out, workers=1)


def test_force_leaves_what_it_does_not_own_in_the_folder_it_sets_runs_aside_in(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1)
    (out / runner.ASIDE).mkdir()
    (out / runner.ASIDE / "mine.txt").write_text("mine")
    sim.run(sim.RunConfig(n=400, seed=2), out=out, workers=1, force=True)
    assert (out / runner.ASIDE / "mine.txt").read_text() == "mine"
    assert sorted(p.name for p in (out / runner.ASIDE).iterdir()) == ["mine.txt"]
    assert games_of(out).height == 400


# --- 6. parts are verified ---------------------------------------------------------------------------------


def test_a_part_replaced_by_another_is_an_error_and_resume_replays_it(tmp_path):
    want, out, other = greedy_and_random_runs(tmp_path)
    games = out / "games"
    shutil.copy(games / "part-00000.parquet", games / "part-00002.parquet")
    for args in (["report", out], ["compare", out, other]):
        line = one_line_error(cli.invoke(app, list(map(str, args))), 1)
        assert "part-00002.parquet" in line
    m = json.loads((out / "manifest.json").read_text())
    m["status"] = "incomplete"
    (out / "manifest.json").write_text(json.dumps(m))
    sim.resume(out, workers=1)
    assert games_of(out).equals(want)


def test_compare_plays_again_the_damaged_part_of_a_run_it_would_reuse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["compare", "--policy", "greedy", "--policy", "random", "-n", "3000", "-w", "1"]
    assert cli.invoke(app, args).exit_code == 0
    out = tmp_path / "results" / "greedy-seed0-n3000"
    want = games_of(out)
    part = out / "games" / "part-00000.parquet"
    flipped = bytearray(part.read_bytes())
    flipped[len(flipped) // 2] ^= 0xFF
    part.write_bytes(bytes(flipped))
    r = cli.invoke(app, args)
    assert r.exit_code == 0, r.output  # not "already holds another run ... use --force"
    rel = out.relative_to(tmp_path)
    assert f"finishing {rel} ({rel / 'games' / part.name} is not the part this run wrote" in r.stderr, r.stderr
    assert games_of(out).equals(want)


def test_runs_written_by_older_versions_stay_readable(tmp_path):
    # A manifest from before parts had digests (no part_info at all) is read by each part's own metadata and
    # game range; a listed part whose solver options name fewer than the manifest's (an older version's, filled
    # in with their defaults by a resume) agrees on the ones it names.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=300), out=out, workers=1, chunk_size=100)
    m = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({k: v for k, v in m.items() if k != "part_info"}))
    assert cli.invoke(app, ["report", str(out)]).exit_code == 0 and sim.load(out).collect().height == 300
    part = tmp_path / "part.parquet"
    pl.DataFrame({"game": [0]}).write_parquet(part, metadata={"foursquare_sim.solve": '{"node_limit": 100}'})
    solve = {"kind": "solve", "seed": 0, "n": 1, "rules": {}, "solve": {"node_limit": 100, "split_after": 0}}
    assert runner._metadata_problem(part, 0, solve) is None
    assert "found" not in str(runner._metadata_problem(part, 0, {**solve, "solve": {"node_limit": 5}}))
    assert "node_limit" in runner._metadata_problem(part, 0, {**solve, "solve": {"node_limit": 5}})
    assert runner._metadata_problem(part, 0, solve, found=True)  # a part a resume would adopt names everything


def test_compare_finishes_a_short_manifest_and_refuses_an_edited_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["compare", "--policy", "greedy", "--policy", "random", "-n", "3000", "-w", "1"]
    assert cli.invoke(app, args).exit_code == 0
    out = tmp_path / "results" / "greedy-seed0-n3000"
    want, path = games_of(out), out / "manifest.json"
    m = json.loads(path.read_text())
    short = {**m, "parts": {k: v for k, v in m["parts"].items() if k != "part-00001.parquet"}}
    path.write_text(json.dumps(short))  # says complete, lists one part fewer than it has
    r = cli.invoke(app, args)
    assert r.exit_code == 0 and "finishing results/greedy-seed0-n3000 (its manifest lists 7 of its 8 parts" in r.stderr, r.output
    assert games_of(out).equals(want)
    m = json.loads(path.read_text())
    path.write_text(json.dumps({**m, "record_deals": True}))  # edited: its parts have no deck column
    line = one_line_error(cli.invoke(app, [*args, "--record-deals"]), 2)
    assert "already holds another run" in line and "--force" in line and "record deals false" in line, line


def test_a_part_of_the_same_games_from_another_run_or_with_one_byte_changed_is_never_read(tmp_path):
    # Both hold exactly part 2's games, so only the digest the manifest recorded tells them from the real part.
    want, out, other = greedy_and_random_runs(tmp_path)
    part = out / "games" / "part-00002.parquet"
    good = part.read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    for damage in ((other / "games" / part.name).read_bytes(), bytes(flipped)):
        part.write_bytes(damage)
        for args in (["report", out], ["compare", out, other]):
            line = one_line_error(cli.invoke(app, list(map(str, args))), 1)
            assert "part-00002.parquet" in line and "SHA-256" in line
        with pytest.raises(runner.RunError, match="part-00002"):
            sim.load(out)
        r = cli.invoke(app, ["run", "-n", "4000", "--seed", "5", "--chunk-size", "1000", "--out", str(out), "-q"])
        assert "nothing was played" not in r.output, "a damaged run is not reused as complete"
    sim.resume(out, workers=1)  # replays the damaged part
    assert games_of(out).equals(want)


def test_a_manifest_edited_to_other_settings_disagrees_with_its_parts(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=2000, seed=5), out=out, workers=1, chunk_size=1000)
    path = out / "manifest.json"
    m = json.loads(path.read_text())
    for key, value in (("policy", "random"), ("seed", 6), ("rules", {**m["rules"], "max_face_down": 3})):
        path.write_text(json.dumps({**m, key: value}))
        line = one_line_error(cli.invoke(app, ["report", str(out)]), 1)
        assert "part-00000.parquet" in line and f"{key} " in line
    # Nor is it resumed: its rows would mix two policies.
    (out / "games" / "part-00001.parquet").unlink()
    path.write_text(json.dumps({**m, "policy": "random", "status": "incomplete"}))
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 1)
    assert "part-00000.parquet" in line and "policy greedy" in line
    assert not (out / "games" / "part-00001.parquet").exists()


def test_a_manifest_with_its_chunk_size_edited_is_not_resumed_into_a_complete_run_missing_games(tmp_path):
    # The parts' own metadata does not say the chunk size: a resume kept the listed parts as chunks of the new
    # size and wrote a manifest saying complete over half the games, and every reader said to resume again.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=4000, seed=5), out=out, workers=1, chunk_size=500)
    path = out / "manifest.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps({**m, "chunk_size": 1000}))
    with pytest.raises(runner.PartSettingsError, match="part-00000.parquet .* the manifest was changed") as e:
        sim.load(out)
    assert "resume" not in str(e.value)
    late = [f"part-{k:05d}.parquet" for k in range(4, 8)]
    for name in late:
        (out / "games" / name).unlink()
    edited = {**m, "chunk_size": 1000, "status": "incomplete",
              "parts": {k: v for k, v in m["parts"].items() if k not in late},
              "part_info": {k: v for k, v in m["part_info"].items() if k not in late}}
    path.write_text(json.dumps(edited))
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 1)
    assert "part-00000.parquet" in line and "chunk size 1000" in line and "not resuming" in line
    assert json.loads(path.read_text()) == edited

def test_a_manifest_whose_counts_of_a_part_were_edited_is_refused_by_readers_and_resume_alike(tmp_path):
    # part_info's first edited to 'x', or its rows to 700, went unnoticed by every reader; resume refused the run
    # blaming the part: "part-00001.parquet holds games x..5999", or two equal ranges for the rows.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=9000, seed=3), out=out, workers=1, chunk_size=3000)
    path = out / "manifest.json"
    m = json.loads(path.read_text())
    name = "part-00001.parquet"
    info = m["part_info"][name]
    damaged = ((dict(info, first="x"), m["parts"], f"{path} is damaged: part_info gives {name} first 'x', not a whole "
                                                   f"number"),
               (dict(info, sha256="not hex"), m["parts"], f"{path} is damaged: part_info gives {name} sha256 "
                                                          f"'not hex', not a SHA-256 in hex"))
    for edited_info, parts, said in damaged:
        path.write_text(json.dumps({**m, "parts": parts, "part_info": {**m["part_info"], name: edited_info}}))
        for command in (["report", str(out)], ["run", "--resume", str(out), "-q"]):
            r = cli.invoke(app, command)
            assert said in r.output and r.exit_code == 1, (command, r.output)
        listed = cli.invoke(app, ["ls", str(tmp_path)])
        assert listed.exit_code == 0 and said.split(" is damaged: ")[1] in " ".join(listed.stdout.split())
    edited = ((dict(info, rows=700), m["parts"], "700 rows, games 3000..5999 (part_info)"),
              (info, {**m["parts"], name: 2999}, f"gives {name} 2999 rows (parts)"))
    for edited_info, parts, said in edited:
        path.write_text(json.dumps({**m, "parts": parts, "part_info": {**m["part_info"], name: edited_info}}))
        with pytest.raises(runner.PartSettingsError, match="holds 3000 rows, games 3000..5999; the manifest was"):
            sim.load(out)
        for command in (["report", str(out)], ["run", "--resume", str(out), "-q"]):
            line = one_line_error(cli.invoke(app, command), 1)
            assert said in line and "part 1 of a run of n 9000 and chunk size 3000 holds 3000 rows" in line, line
    path.write_text(json.dumps(m))
    assert cli.invoke(app, ["report", str(out)]).exit_code == 0


def test_a_run_is_not_written_among_another_runs_parts(tmp_path):
    # --out RUN/.replaced was taken; the next plain `sim run` over RUN deleted that run with the folder it thought
    # its own (a --force's leftovers).
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=200), out=out, workers=1)
    before = run_files(out)
    for inside in (out / runner.ASIDE, out / runner.ASIDE / "x", out / "games" / "x"):
        line = one_line_error(cli.invoke(app, ["run", "-n", "10", "-w", "1", "--out", str(inside)]), 2)
        assert f"out {inside} lies among the parts of the run in {out}" in line, line
        assert not inside.exists() and run_files(out) == before


def test_stray_files_in_games_are_ignored_with_a_warning(tmp_path, caplog):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=2000), out=out, workers=1, chunk_size=1000)
    shutil.copy(out / "games" / "part-00000.parquet", out / "games" / "extra.parquet")
    shutil.copy(out / "games" / "part-00000.parquet", out / "games" / "part-00002.parquet")  # beyond its 2 parts
    (out / "games" / "junk.parquet").write_text("not parquet")
    from sim.analysis.report import load_report

    with caplog.at_level("WARNING", logger="sim"):  # whatever level an earlier command (-q) left it at
        report = load_report(out)
    assert report.games == 2000
    assert "extra.parquet" in caplog.text and "junk.parquet" in caplog.text and "part-00002.parquet" in caplog.text
    # The report's own warnings say so too: its JSON had none, so a script reading it never knew.
    assert report.warnings == ("games/ holds 3 files that are not parts of this run (extra.parquet, junk.parquet, "
                               "part-00002.parquet), not counted",)
    (out / "games" / "extra.parquet").unlink()
    (out / "games" / "junk.parquet").unlink()
    r = cli.invoke(app, ["report", str(out), "-f", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["runs"][0]["warnings"] == [
        "games/ holds 1 file that is not a part of this run (part-00002.parquet), not counted"]


# --- 7. absurd sizes -----------------------------------------------------------------------------------------


def test_huge_n_and_game_indexes_are_one_line_errors(tmp_path):
    t0 = time.perf_counter()
    one_line_error(cli.invoke(app, ["run", "-n", "1e30", "--out", str(tmp_path / "x")]), 2)
    one_line_error(cli.invoke(app, ["solve", "-n", "1e30", "--out", str(tmp_path / "y")]), 2)
    one_line_error(cli.invoke(app, ["deal", "--game", str(2**63)]), 2)
    one_line_error(cli.invoke(app, ["run", "-n", "1e12", "--chunk-size", "1", "--out", str(tmp_path / "z")]), 2)
    assert time.perf_counter() - t0 < 30
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_a_manifest_edited_to_absurd_sizes_is_refused_before_a_game_is_played(tmp_path):
    # `sim run` refuses these sizes; a resume took them from the manifest: chunk_size 1e12 failed in the first
    # worker asking for 931 GiB, n 1e18 with chunk_size 1 played part after part of a run of 1e18 parts.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=200), out=out, workers=1, chunk_size=100)
    path = out / "manifest.json"
    m = {**json.loads(path.read_text()), "status": "incomplete", "parts": {}, "part_info": {}}
    for part in (out / "games").iterdir():
        part.unlink()
    for edit, code, said in (({"n": 10**15, "chunk_size": 10**12}, 2, f"{path} says chunk_size 1,000,000,000,000"),
                             ({"seed": -1}, 1, f"{path} is damaged: seed must be an integer in 0..2**64-1"),
                             ({"n": 2**64}, 1, f"{path} is damaged: n 1.84e+19 is more than the 2**63 games"),
                             ({"n": 10**18, "chunk_size": 1}, 1, f"{path} is damaged: n 1,000,000,000,000,000,000 "
                                                                 f"and chunk_size 1 make more than 100,000,000 parts")):
        path.write_text(json.dumps({**m, **edit}))
        line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1", "-q"]), code)
        assert said in line, line
        assert not any((out / "games").glob("*.parquet")), "no part is played"


@pytest.mark.parametrize("policy, arg", [("heuristic", "weights"), ("planner", "values")])
def test_a_weights_or_values_file_a_manifest_names_is_not_read_whole_when_huge(tmp_path, policy, arg):
    # A run folder from elsewhere can name any file as its weights: a resume read it whole (a 3 GB file was a
    # MemoryError traceback, or gigabytes taken) before finding it is not a weights file.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=100), out=out, workers=1)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(64 << 20)  # sparse: takes no disk
    path = out / "manifest.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps({**m, "policy": policy, "policy_args": {arg: str(huge)}, "status": "incomplete",
                                "parts": {}, "part_info": {}, "files": {str(huge): runner.file_sha256(huge)}}))
    for part in (out / "games").iterdir():
        part.unlink()
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1", "-q"]), 2)
    assert f"{huge} holds more than 16,777,216 bytes" in line, line


def test_a_run_whose_games_folder_was_deleted_is_played_again_by_resume(tmp_path):
    # Each part's write failed for want of games/, and said the run was resumable, which failed the same way.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=200), out=out, workers=1, chunk_size=100)
    want = games_of(out)
    shutil.rmtree(out / "games")
    path = out / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "status": "incomplete"}))
    assert sim.resume(out, workers=1).games == 200
    assert games_of(out).equals(want)


def test_a_recorded_file_that_cannot_be_read_is_a_one_line_error(tmp_path, monkeypatch):
    # A manifest can name any file among those its rows depend on: one this user may not read (another user's,
    # or /proc/self/mem) was a traceback from the resume, and from the same `sim run` asked again.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=200), out=out, workers=1, chunk_size=100)
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    path = out / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "files": {str(secret): "0" * 64},
                                "status": "incomplete"}))
    digest = runner.file_sha256

    def denied(p):
        if Path(p) == secret:
            raise PermissionError(errno.EACCES, "Permission denied", str(p))
        return digest(p)

    monkeypatch.setattr(runner, "file_sha256", denied)
    for args in (["run", "--resume", str(out)], ["run", "-n", "200", "--chunk-size", "100", "--out", str(out)]):
        line = one_line_error(cli.invoke(app, [*args, "-w", "1", "-q"]), 2)
        assert f"{secret} cannot be read (Permission denied)" in line, line


# --- 8, 9. interruptions and failed writes ------------------------------------------------------------------


def test_an_interrupt_while_a_resume_checks_the_parts_says_how_to_finish(tmp_path, monkeypatch):
    # Checking a large run's parts (or reading its deal file) takes seconds before any game is played: a Ctrl-C
    # then ended the process with no word, and a SIGTERM killed it outright (exit 143).
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=300, seed=2), out=out, workers=1, chunk_size=100)
    (out / "games" / "part-00001.parquet").unlink()
    checked = runner._verified_parts

    def stopped(*args):
        checked(*args)
        raise KeyboardInterrupt  # what Ctrl-C, or SIGTERM under the runner's handler, raises

    monkeypatch.setattr(runner, "_verified_parts", stopped)
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]), 130)
    assert f"Finish with: sim run --resume {out}" in line
    monkeypatch.undo()
    sim.resume(out, workers=1)
    assert games_of(out).equals(sim.play_range(seed=2, start=0, stop=300).to_polars())


@pytest.mark.slow
def test_sigterm_during_a_plugins_compile_leaves_a_resumable_run(tmp_path, monkeypatch):
    out = tmp_path / "c"
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", "--policy", "examples/compiled_policy.py:choose",
                             "-n", "2000", "-w", "1", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (out / "manifest.json").exists() and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the compile finished before the signal landed")
    assert proc.returncode == 130, err
    assert "resume" in err and "Traceback" not in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
    monkeypatch.chdir(ROOT)  # where the policy's path is relative to, as for the process above
    r = cli.invoke(app, ["run", "--resume", str(out), "--policy", "examples/compiled_policy.py:choose", "-q"])
    assert r.exit_code == 0, r.output
    assert len(games_of(out)) == 2000


def test_a_failed_final_manifest_write_fails_the_run(tmp_path, monkeypatch):
    out = tmp_path / "r"
    real = runner.write_json_atomic
    calls = {"n": 0}

    def flaky(path, data):
        if data.get("status") == "complete":
            raise OSError(28, "No space left on device")
        calls["n"] += 1
        real(path, data)

    monkeypatch.setattr(runner, "write_json_atomic", flaky)
    with pytest.raises(runner.RunError, match=f"No space left.*resumable: sim run --resume {out}"):
        sim.run(sim.RunConfig(n=1000), out=out, workers=1)
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"


def test_a_full_disk_while_a_part_is_written_names_the_part_and_says_how_to_resume(tmp_path, monkeypatch):
    # A part is made in memory (its SHA-256 is of the bytes written) and written by Python: a full disk is an
    # OSError half-way through the file.
    real, calls = Path.write_bytes, []

    def full(self, data):
        calls.append(self)
        if len(calls) == 2:
            real(self, data[:10])
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    out = tmp_path / "r"
    with pytest.raises(runner.RunError) as caught:
        sim.run(sim.RunConfig(n=400), out=out, workers=1, chunk_size=100)
    monkeypatch.undo()
    assert str(caught.value) == (f"cannot write {out / 'games' / 'part-00001.parquet'}: No space left on device. "
                                 f"The run is resumable: sim run --resume {out}")
    assert sorted(p.name for p in (out / "games").iterdir()) == ["part-00000.parquet"]  # no half-written file
    m = json.loads((out / "manifest.json").read_text())
    part = out / "games" / "part-00000.parquet"
    assert m["part_info"]["part-00000.parquet"]["sha256"] == hashlib.sha256(part.read_bytes()).hexdigest()
    monkeypatch.undo()
    sim.resume(out, workers=1)
    assert games_of(out).equals(reference_rows(tmp_path, n=400))


def test_a_full_disk_when_the_lock_is_written_is_a_one_line_error(tmp_path, monkeypatch):
    def full(fd, data, offset):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    out = tmp_path / "new" / "r"
    line = one_line_error(cli.invoke(app, ["run", "-n", "100", "-w", "1", "--out", str(out)]), 1)
    assert line == f"Error: cannot write the writer's lock {out / '.lock'}: No space left on device"
    assert list(tmp_path.iterdir()) == []  # neither the lock nor the folders it made are left behind
    # A run directory that was there keeps what it had, its lock included.
    monkeypatch.undo()
    sim.run(sim.RunConfig(n=100), out=out, workers=1)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    monkeypatch.setattr(os, "pwrite", full)
    line = one_line_error(cli.invoke(app, ["run", "-n", "100", "-w", "1", "--out", str(out), "--force"]), 1)
    assert line == f"Error: cannot write the writer's lock {out / '.lock'}: No space left on device"
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_a_file_named_games_in_the_way_is_a_one_line_error(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "games").write_text("mine")
    line = one_line_error(cli.invoke(app, ["run", "-n", "100", "-w", "1", "--out", str(tmp_path / "r")]), 2)
    assert "holds a file named games" in line and (tmp_path / "r" / "games").read_text() == "mine"


def test_a_force_that_cannot_make_its_games_folder_puts_the_run_back(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=100), out=out, workers=1)
    shutil.rmtree(out / "games")
    (out / "games").write_text("mine")  # the run's parts are gone, and a file is where its folder was
    manifest = (out / "manifest.json").read_bytes()
    line = one_line_error(cli.invoke(app, ["run", "-n", "100", "--seed", "3", "-w", "1", "--out", str(out),
                                           "--force"]), 1)
    assert f"cannot create {out / 'games'}" in line and f"{out} still holds the run it had" in line, line
    assert (out / "manifest.json").read_bytes() == manifest and not (out / runner.ASIDE).exists()
    assert (out / "games").read_text() == "mine"


def test_a_failed_figure_write_keeps_the_figure_already_there(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=300), out=out, workers=1)
    assert cli.invoke(app, ["report", str(out), "--png", str(tmp_path / "fig"), "-q"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "fig").iterdir()}

    def full(self, path, **kw):
        Path(path).write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    line = one_line_error(cli.invoke(app, ["report", str(out), "--png", str(tmp_path / "fig")]), 1)
    assert line == f"Error: cannot write {tmp_path / 'fig' / 'win_rate.png'}: No space left on device"
    assert {p.name: p.read_bytes() for p in (tmp_path / "fig").iterdir()} == before
    # Folders made for a figure or page that could not be written are removed again.
    line = one_line_error(cli.invoke(app, ["report", str(out), "--png", str(tmp_path / "new" / "fig")]), 1)
    assert line == f"Error: cannot write {tmp_path / 'new' / 'fig' / 'win_rate.png'}: No space left on device"

    def full_text(self, text, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_text)
    page = tmp_path / "new" / "sub" / "replay.html"
    line = one_line_error(cli.invoke(app, ["replay", "--seed", "0", "--game", "1", "--html", str(page)]), 1)
    assert line == f"Error: cannot write {page}: No space left on device"
    assert not (tmp_path / "new").exists()


# --- 10. one-line errors instead of tracebacks ---------------------------------------------------------------


def test_bad_files_and_values_are_one_line_errors(tmp_path):
    (tmp_path / "garbage.parquet").write_bytes(b"PAR1 this is not parquet")
    one_line_error(cli.invoke(app, ["run", "--deals", str(tmp_path / "garbage.parquet"),
                                    "--out", str(tmp_path / "g")]), 2)
    for i, content in enumerate(['{"weights": [null, 1, 2, 3, 4, 5, 6]}', '"just a string"', '42',
                                 '[NaN, 1, 2, 3, 4, 5, 6]']):
        path = tmp_path / f"w{i}.json"
        path.write_text(content)
        one_line_error(cli.invoke(app, ["run", "--policy", "heuristic", "--policy-arg", f"weights={path}",
                                        "-n", "10", "--out", str(tmp_path / f"w{i}")]), 2)
    one_line_error(cli.invoke(app, ["run", "--policy", "heuristic", "--policy-arg", "weights=1,2,3,4,5,6,nan",
                                    "-n", "10", "--out", str(tmp_path / "nan")]), 2)
    for nodes in ("inf", "1.7", "-3"):
        one_line_error(cli.invoke(app, ["run", "--policy", "oracle", "--policy-arg", f"nodes={nodes}", "-n", "1",
                                        "--out", str(tmp_path / "o")]), 2)
    one_line_error(cli.invoke(app, ["tune", "-n", "0"]), 2)
    one_line_error(cli.invoke(app, ["run", "-n", "10", "--rule", "grid=3", "--rule", "grid=4"]), 2)
    one_line_error(cli.invoke(app, ["run", "-n", "10", "--policy-arg", "a=1", "--policy-arg", "a=2"]), 2)


def test_a_manifest_of_the_wrong_shape_is_a_one_line_error(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1)
    other = tmp_path / "other"
    sim.run(sim.RunConfig(n=500, policy="random"), out=other, workers=1)
    for shape in ([1, 2, 3], {"n": "many", "seed": 0}, {"format": "foursquare-sim run", "kind": "run"}):
        (out / "manifest.json").write_text(json.dumps(shape))
        for args in (["run", "--resume", out], ["report", out], ["compare", out, other]):
            r = cli.invoke(app, list(map(str, args)))
            assert r.exit_code in (1, 2), r.output
            one_line_error(r, r.exit_code)


def test_resume_refuses_to_mix_the_rows_of_two_versions(tmp_path, monkeypatch):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    m = json.loads((out / "manifest.json").read_text())
    del m["parts"]["part-00004.parquet"], m["part_info"]["part-00004.parquet"]
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    (out / "games" / "part-00004.parquet").unlink()
    before = run_files(out)
    monkeypatch.setattr(runner, "__version__", "99.0")  # an upgrade between the interruption and the resume
    with pytest.raises(runner.UsageError, match=rf"played by foursquare-sim {sim.__version__}, and this is 99.0"):
        sim.resume(out, workers=1)
    assert run_files(out) == before
    monkeypatch.setattr(runner, "__version__", sim.__version__)
    assert sim.resume(out, workers=1).games == 500


def test_resuming_a_complete_run_plays_nothing_and_changes_nothing(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    r = cli.invoke(app, ["run", "--resume", str(out), "-w", "1"])
    assert r.exit_code == 0 and "nothing was played" in r.output, r.output
    assert run_files(out) == before


def test_a_complete_run_in_a_folder_that_may_not_be_written_is_confirmed_not_refused(tmp_path, monkeypatch):
    # A read-only copy (or another user's folder): the writer's lock cannot be opened, so nobody writes it
    # through this path; asking again for its complete run reads it, and anything that would write is refused.
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    before = run_files(out)
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).endswith(runner.LOCK):
            raise OSError(30, "Read-only file system", str(path))  # EROFS
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    summary = sim.resume(out, workers=1)
    assert summary.games == 500 and "it was only read" in summary.note
    again = sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    assert again.games == 500 and "nothing was played" in again.note
    for config, force in ((sim.RunConfig(n=600), False), (sim.RunConfig(n=500), True)):
        with pytest.raises(runner.RunError, match="cannot open the writer's lock .*Read-only file system"):
            sim.run(config, out=out, workers=1, chunk_size=100, force=force)
    assert run_files(out) == before
    monkeypatch.setattr(os, "open", real_open)
    m = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**m, "status": "incomplete"}))
    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(runner.RunError, match="cannot open the writer's lock"):  # an unfinished run stays so
        sim.resume(out, workers=1)


def test_a_manifest_with_a_field_edited_to_nonsense_is_a_one_line_error(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1, chunk_size=100)
    path = out / "manifest.json"
    m = json.loads(path.read_text())
    edits = {"format_version": "2", "kind": "solve", "chunk_size": 0, "n": -5, "sessions": "x",
             "policy_args": [1], "part_info": {**m["part_info"], "part-00004.parquet": "x"}}
    for key, value in edits.items():
        path.write_text(json.dumps({**m, key: value, "status": "incomplete"}))
        for args in (["run", "--resume", out, "-w", "1", "-q"], ["report", out]):
            r = cli.invoke(app, list(map(str, args)))
            assert r.exit_code in (1, 2), (key, r.output)
            one_line_error(r, r.exit_code)
        assert len(list((out / "games").iterdir())) == 5, "a refused resume leaves the parts alone"
    # The fields every manifest has: a wrong one is named, as damage to this project's manifest.
    for key, value in {"status": "weird", "seed": "x", "parts": 5, "rules": None, "n": True}.items():
        path.write_text(json.dumps({**m, key: value}))
        for args in (["run", "--resume", out, "-w", "1", "-q"], ["report", out], ["compare", out, out]):
            line = one_line_error(cli.invoke(app, list(map(str, args))), 1)
            assert f"{path} is damaged: {key} is {value!r}" in line, line
        listed = json.loads(cli.invoke(app, ["ls", str(tmp_path), "-f", "json"]).stdout)["runs"]
        assert [r["status"] for r in listed] == ["damaged"], listed
    # Fields whose wrong type used to reach the code that reads them (a traceback in compare or resume).
    edits = {"part_info": [1], "policy": None, "sessions": [1, 2], "rules": {**m["rules"], "adjacency": ["x"]},
             "rules ": {**m["rules"], "colour": "red"}}
    for key, value in edits.items():
        path.write_text(json.dumps({**m, key.strip(): value}))
        for args in (["run", "--resume", out, "-w", "1", "-q"], ["report", out], ["compare", out, out]):
            line = one_line_error(cli.invoke(app, list(map(str, args))), 1)
            assert f"{path} is damaged: {key.strip()}" in line, line
    path.write_text(json.dumps(m))
    part = out / "games" / "part-00001.parquet"
    part.unlink()
    part.mkdir()  # a folder where a listed part should be
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1", "-q"]), 1)
    assert "part-00001.parquet" in line, line


@pytest.mark.slow  # compiles two plugins, uncached
def test_plugin_faults_are_one_line_errors_naming_policy_seed_game_and_turn(tmp_path):
    from sim import kernels as K

    bad = tmp_path / "bad.py"
    bad.write_text(BAD_TYPES)
    line = one_line_error(cli.invoke(app, ["run", "--policy", f"{bad}:choose", "-n", "10", "-w", "1",
                                           "--out", str(tmp_path / "bad")]), 1)
    assert "does not compile" in line
    assert not (tmp_path / "bad").exists(), "a plugin that does not compile must leave nothing behind"
    raises = tmp_path / "raises.py"
    raises.write_text(RAISES_AT_RUN_TIME.format(turn=K.TURN))
    line = one_line_error(cli.invoke(app, ["run", "--policy", f"{raises}:choose", "-n", "10", "-w", "1",
                                           "--out", str(tmp_path / "raises")]), 1)
    assert "seed 0" in line and "game 0" in line and "turn 4" in line and "a bug on the fourth card" in line
    assert "resume" not in line
    python_raises = tmp_path / "pyraises.py"
    python_raises.write_text("def choose(position, card):\n    raise KeyError('oops')\n")
    line = one_line_error(cli.invoke(app, ["replay", "--policy", f"{python_raises}:choose"]), 1)
    assert "turn 1" in line and "KeyError" in line
    illegal = tmp_path / "illegal.py"
    illegal.write_text("def choose(position, card):\n    return 0\n")
    line = one_line_error(cli.invoke(app, ["replay", "--policy", f"{illegal}:choose"]), 1)
    assert "illegal cell 0" in line


# --- 11. smaller things ---------------------------------------------------------------------------------------------


def test_resume_refuses_run_settings_given_with_it(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=500), out=out, workers=1)
    for extra in (["-n", "10"], ["--seed", "3"], ["--seed", "0"], ["--rule", "grid=3"], ["--record-deals"], ["--chunk-size", "9"]):
        line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), *extra]), 2)
        assert extra[0] in line


def test_a_python_policy_cannot_change_the_game_through_its_position(tmp_path):
    plugin = tmp_path / "vandal.py"
    plugin.write_text(
        "def choose(position, card):\n"
        "    cell = min(position.legal_cells())\n"
        "    position._board.state[:] = 0\n"  # scribbles over what it was given
        "    return cell\n")
    honest = tmp_path / "honest.py"
    honest.write_text(PYTHON_PLUGIN)
    decks = np.array([sim.deal(4, i) for i in range(5)], np.uint8)
    a = sim.play_decks(decks, f"{plugin}:choose")
    b = sim.play_decks(decks, f"{honest}:choose")
    for field in ("end", "cards_played", "face_down", "piles", "score"):
        assert np.array_equal(getattr(a, field), getattr(b, field))


def test_workers_are_capped_at_the_number_of_chunks(tmp_path):
    out = tmp_path / "r"
    sim.run(sim.RunConfig(n=100), out=out, workers=8, chunk_size=50)
    m = json.loads((out / "manifest.json").read_text())
    assert m["sessions"][-1]["workers"] == 2


def test_a_plugin_module_that_cannot_be_parsed_is_left_to_its_import(tmp_path):
    from sim.players.plugins import local_imports

    (tmp_path / "deep.py").write_text("X = " + "+".join(["1"] * 200_000) + "\n")  # ast.parse: RecursionError
    (tmp_path / "plug.py").write_text("from . import deep\nfrom .......... import far\nimport deep\n")
    assert local_imports(tmp_path / "plug.py", tmp_path) == [tmp_path / "deep.py"]


def test_a_run_in_the_way_is_refused_naming_what_differs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.invoke(app, ["run", "-n", "300", "-w", "1", "-q"]).exit_code == 0
    out = "results/greedy-seed0-n300"
    for args, says in ((["--record-deals"], "another complete run (record_deals false, not true)"),
                       (["--rule", "max_pile=3", "-o", out], "another complete run (max_pile 4, not 3)"),
                       (["-p", "heuristic", "--policy-arg", "weights=1,1,1,1,1,1,1", "-o", out],
                        "another complete run (policy greedy, not heuristic; weights none, not 1,1,1,1,1,1,1)")):
        line = one_line_error(cli.invoke(app, ["run", "-n", "300", "-w", "1", *args]), 2)
        assert line == f"Error: {out} already holds {says}; use --force to replace it, or another --out", line
    line = one_line_error(cli.invoke(app, ["solve", "-n", "3", "-w", "1", "-o", out]), 2)
    assert f"{out} already holds a run of games (sim run); use --force" in line, line
    write = runner.write_atomic
    monkeypatch.setattr(runner, "write_atomic", _Stop(write))  # Ctrl-C at the first part
    assert cli.invoke(app, ["run", "-n", "300", "-w", "1", "--chunk-size", "100", "-o", "p"]).exit_code == 130
    monkeypatch.setattr(runner, "write_atomic", write)
    line = one_line_error(cli.invoke(app, ["run", "-n", "300", "-w", "1", "--chunk-size", "100", "-o", "p"]), 2)
    assert line == "Error: p already holds this run, incomplete; use --resume p to finish it or --force to replace it"


TWO_ARGUMENTS = '''
class Lowest:
    def __init__(self, hi="0", lo="0"):
        pass

    def choose(self, position, card):
        return min(position.legal_cells())
'''


def test_a_plugins_arguments_in_another_order_are_another_run(tmp_path, monkeypatch):
    """A compiled plugin gets its --policy-arg values as `params` in the order given, so a plugin's order is
    part of its run: the same pairs reordered are not this run to write over, resume or reuse."""
    from sim.analysis.compare import _reuse_problem
    from sim.jobs.play import settled

    (tmp_path / "two.py").write_text(TWO_ARGUMENTS)
    monkeypatch.chdir(tmp_path)
    base = ["run", "--policy", "two.py:Lowest", "-n", "20", "--chunk-size", "10", "-w", "1", "-q", "-o", "p"]
    given, reordered = ["--policy-arg", "hi=1", "--policy-arg", "lo=0"], ["--policy-arg", "lo=0", "--policy-arg", "hi=1"]
    assert cli.invoke(app, [*base, *given]).exit_code == 0
    assert cli.invoke(app, [*base, *given]).exit_code == 0  # the same run: already complete
    line = one_line_error(cli.invoke(app, [*base, *reordered]), 2)
    assert line == ("Error: p already holds another complete run (policy_args hi=1 lo=0, not lo=0 hi=1); "
                    "use --force to replace it, or another --out"), line
    config = settled(sim.RunConfig(policy="two.py:Lowest", n=20, policy_args=(("lo", "0"), ("hi", "1"))))
    assert _reuse_problem(Path("p"), config) == ("other", "policy_args hi=1 lo=0, wanted lo=0 hi=1")
    assert _reuse_problem(Path("p"), replace(config, policy_args=(("hi", "1"), ("lo", "0")))) is None
    (tmp_path / "p" / "games" / "part-00001.parquet").unlink()
    with pytest.raises(runner.UsageError, match=r"with \{'hi': '1', 'lo': '0'\}, not .* with \{'lo': '0', 'hi': '1'\}"):
        sim.resume("p", policy="two.py:Lowest", policy_args={"lo": "0", "hi": "1"}, workers=1)
    assert sim.resume("p", policy="two.py:Lowest", policy_args={"hi": "1", "lo": "0"}, workers=1).games == 20


def test_a_built_ins_arguments_are_recorded_in_its_own_order_whatever_order_they_are_given_in(tmp_path, monkeypatch):
    """A built-in reads its arguments by name: one setting is one run, with one default directory."""
    monkeypatch.chdir(tmp_path)
    args = ["--policy", "rollout", "-n", "4", "-w", "1", "-q"]
    assert cli.invoke(app, ["run", *args, "--policy-arg", "base=greedy", "--policy-arg", "samples=2"]).exit_code == 0
    out = tmp_path / "results" / "rollout-samples2-basegreedy-seed0-n4"
    assert json.loads((out / "manifest.json").read_text())["policy_args"] == {"samples": "2", "base": "greedy"}
    assert list(json.loads((out / "manifest.json").read_text())["policy_args"]) == ["samples", "base"]
    r = cli.invoke(app, ["run", *args[:-1], "--policy-arg", "samples=2", "--policy-arg", "base=greedy"])
    assert r.exit_code == 0 and "already holds this complete run" in r.output, r.output


LOUD = '''
from numba import njit

@njit
def choose(state, rules, card, legal, rng, params):
    print("choosing a cell for", card)
    c = 0
    while not (legal >> c) & 1:
        c += 1
    return c
'''


@pytest.mark.slow  # compiles a plugin's game loop
def test_what_a_compiled_plugin_prints_goes_to_stderr_and_json_stays_json(tmp_path):
    # numba's print writes to sys.stdout: a compiled plugin's lines came before the summary on stdout.
    (tmp_path / "loud.py").write_text(LOUD)
    r = sim_cmd("run", "-p", "loud.py:choose", "-n", "4", "-w", "1", "-f", "json", "-o", "r", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["games"] == 4
    played = int(pl.read_parquet(tmp_path / "r" / "games" / "*.parquet")["cards_played"].sum())
    assert r.stderr.count("choosing a cell for") >= played  # each game's turns (and the warm-up's game)
