"""sim.run / sim.resume: reproducibility, output layout, manifest, deal files, faults."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import sim
from sim.cli import app
from sim.jobs import runner

from conftest import games_of

COLUMNS = ["game", "won", "score", "cards_played", "face_down", "piles", "end"]


def test_rows_do_not_depend_on_workers_or_chunk_size(tmp_path, read_games):
    frames = []
    config = sim.RunConfig(policy="random", n=3000, seed=5)
    for workers, chunk in [(1, 700), (2, 700), (3, 700), (1, 333), (2, 333), (3, 333)]:
        s = sim.run(config, workers=workers, chunk_size=chunk, out=tmp_path / f"w{workers}c{chunk}")
        assert s.games == 3000 and s.status == "complete"
        frames.append(read_games(s.path))
    for f in frames[1:]:
        assert f.equals(frames[0])
    # A different seed gives different rows.
    other = read_games(sim.run(sim.RunConfig(policy="random", n=3000, seed=6), workers=2, out=tmp_path / "other").path)
    assert not other.equals(frames[0])


def test_rows_match_the_engine_and_schema(tmp_path, read_games):
    s = sim.run(sim.RunConfig(policy="greedy", n=1200, seed=3), workers=2, chunk_size=500, out=tmp_path / "run")
    df = read_games(s.path)
    assert df.columns == COLUMNS
    assert df.schema["game"] == pl.UInt64 and df.schema["score"] == pl.UInt8
    assert df.schema["won"] == pl.Boolean
    for c in ("cards_played", "face_down", "piles"):
        assert df.schema[c] == pl.UInt8
    assert set(df["end"].cast(pl.String).unique()) <= {"win", "too_many_face_down", "stock_empty", "no_move"}
    assert df["game"].to_list() == list(range(1200))
    for g in (0, 1, 599, 1199):
        r = sim.play(sim.deal(3, g), "greedy", seed=3, game=g)
        row = df.row(g, named=True)
        assert (row["won"], row["score"], row["cards_played"], row["face_down"], row["piles"], row["end"]) == (
            r.won, r.score, r.cards_played, r.face_down, r.piles, r.end)
    # lost games have a null score, won games score == 40 - cards_played
    assert df.filter(~pl.col("won"))["score"].null_count() == df.filter(~pl.col("won")).height
    wins = df.filter(pl.col("won"))
    assert (wins["score"].cast(pl.Int32) == 40 - wins["cards_played"].cast(pl.Int32)).all()
    # parts: chunk k holds games [500k, 500k+500)
    parts = sorted((s.path / "games").glob("part-*.parquet"))
    assert [p.name for p in parts] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert pl.read_parquet(parts[2])["game"].to_list() == list(range(1000, 1200))
    assert pl.scan_parquet(str(s.path / "games" / "*.parquet")).select(pl.len()).collect().item() == 1200


def test_summary_matches_the_rows(tmp_path, read_games):
    s = sim.run(sim.RunConfig(policy="greedy", n=2000, seed=1), workers=2, out=tmp_path / "run")
    df = read_games(s.path)
    assert s.wins == df["won"].sum()
    assert s.mean_score == pytest.approx(df["score"].mean())
    assert s.win_rate_low < s.win_rate < s.win_rate_high
    assert str(s.path) in s.text()


def test_manifest_records_the_run(tmp_path):
    rules = sim.Rules(max_face_down=3)
    s = sim.run(sim.RunConfig(policy="greedy", n=1000, seed=9, rules=rules), workers=2, chunk_size=300,
                out=tmp_path / "run")
    m = json.loads((s.path / "manifest.json").read_text())
    assert m["status"] == "complete"
    assert (m["seed"], m["n"], m["policy"], m["chunk_size"], m["workers"]) == (9, 1000, "greedy", 300, 2)
    assert m["rules"] == rules.as_dict()
    assert m["deal_algorithm"] == sim.kernels.DEAL_ALGORITHM
    assert m["version"] == sim.__version__
    assert m["parts"] == {"part-00000.parquet": 300, "part-00001.parquet": 300,
                          "part-00002.parquet": 300, "part-00003.parquet": 100}
    for key in ("command", "started", "ended", "games_per_s"):
        assert m[key]


def test_a_resumed_run_s_speed_is_its_games_over_its_seconds_in_every_session(tmp_path):
    # The manifest gave the run's seconds over every session beside the last session's games per second.
    out = tmp_path / "run"
    sim.run(sim.RunConfig(policy="greedy", n=3000, seed=2), workers=1, chunk_size=500, out=out)
    for part in sorted((out / "games").glob("part-*.parquet"))[2:]:
        part.unlink()
    m = json.loads((out / "manifest.json").read_text())
    m["status"] = "incomplete"
    (out / "manifest.json").write_text(json.dumps(m))
    sim.resume(out, workers=1)
    m = json.loads((out / "manifest.json").read_text())
    sessions = m["sessions"]
    assert len(sessions) == 2 and sum(s["games"] for s in sessions) == 3000 + 2000
    assert m["seconds"] == round(sum(s["seconds"] for s in sessions), 3)
    assert m["games_per_s"] == round(5000 / m["seconds"], 1)


def test_a_resumed_run_s_summary_is_of_every_game_of_the_run_not_only_those_it_played(tmp_path, read_games):
    # The resume plays one part of four; its summary's win rate (and interval, mean score, score per deal) is
    # still over the run's 400 games, as `sim report` gives them, not the 100 this session played.
    from sim.stats import wilson

    out = tmp_path / "run"
    sim.run(sim.RunConfig(policy="greedy", n=400, seed=3), workers=1, chunk_size=100, out=out)
    (out / "games" / "part-00003.parquet").unlink()
    m = json.loads((out / "manifest.json").read_text())
    m["status"] = "incomplete"
    (out / "manifest.json").write_text(json.dumps(m))
    s = sim.resume(out, workers=1)
    rows = read_games(out)
    wins = int(rows["won"].sum())
    assert s.status == "complete" and s.games == rows.height == 400 and s.wins == wins > 0
    assert s.win_rate == pytest.approx(wins / 400)
    assert (s.win_rate_low, s.win_rate_high) == pytest.approx(wilson(wins, 400))
    assert s.mean_score == pytest.approx(rows["score"].drop_nulls().mean())
    assert s.score_per_deal == pytest.approx(rows["score"].fill_null(0).sum() / 400)


def test_manifest_lists_each_part_as_it_is_written(tmp_path, monkeypatch):
    # `sim report` on a long run still going reads the manifest: it must not wait for the end.
    monkeypatch.setattr(runner, "MANIFEST_EVERY", 0.0)
    listed = []
    real_save = runner._save

    def save(job, config, run_dir, p, status):
        real_save(job, config, run_dir, p, status)
        m = json.loads((run_dir / "manifest.json").read_text())
        listed.append((len(m["parts"]), m["status"]))

    monkeypatch.setattr(runner, "_save", save)
    sim.run(sim.RunConfig(policy="greedy", n=1000, seed=9), workers=1, chunk_size=300, out=tmp_path / "run")
    going = [n for n, status in listed if status == "incomplete"]
    assert sorted(set(going)) == [0, 1, 2, 3, 4] and going == sorted(going)
    assert listed[-1] == (4, "complete")


def test_existing_run_is_refused_unless_force(tmp_path, read_games):
    out = tmp_path / "run"
    sim.run(sim.RunConfig(policy="random", n=100), workers=1, out=out)
    # Another run in its place is refused (the same complete run again is a no-op: README, "What a run
    # directory guarantees").
    with pytest.raises(runner.UsageError, match=r"another complete run \(n 100, not 200\); use --force"):
        sim.run(sim.RunConfig(policy="random", n=200), workers=1, out=out)
    again = sim.run(sim.RunConfig(policy="random", n=100), workers=1, out=out)
    assert again.games == 100 and "nothing was played" in again.text()
    s = sim.run(sim.RunConfig(policy="greedy", n=50), workers=1, out=out, force=True)
    assert read_games(s.path).height == 50


def test_record_deals_stores_each_deck(tmp_path, read_games):
    s = sim.run(sim.RunConfig(policy="greedy", n=40, seed=2, record_deals=True), workers=2, chunk_size=15,
                out=tmp_path / "run")
    df = read_games(s.path)
    assert df.schema["deck"] == pl.List(pl.UInt8)
    for g in (0, 17, 39):
        assert tuple(df["deck"][g].to_list()) == sim.deal(2, g)


def _write_deals(path, decks):
    if path.suffix == ".parquet":
        pl.DataFrame({"deck": [list(d) for d in decks]}).write_parquet(path)
    else:
        path.write_text("".join(json.dumps({"deck": list(d)}) + "\n" for d in decks))


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_deal_file_plays_its_decks(tmp_path, suffix, read_games):
    decks = [sim.deal(4, g) for g in range(30)]
    path = tmp_path / f"decks{suffix}"
    _write_deals(path, decks)
    s = sim.run(sim.RunConfig(policy="random", n=None, seed=4, deals=str(path)), workers=2, chunk_size=7,
                out=tmp_path / "run")
    from_file = read_games(s.path)
    seeded = read_games(sim.run(sim.RunConfig(policy="random", n=30, seed=4), workers=1, out=tmp_path / "seeded").path)
    assert from_file.equals(seeded)
    m = json.loads((s.path / "manifest.json").read_text())
    assert m["deals"] == str(path.resolve()) and m["deal_algorithm"] == "file"


def test_runs_of_one_deal_file_with_other_seeds_get_their_own_default_directories(tmp_path, monkeypatch, read_games):
    """With --deals the seed still seeds the policy's random stream: another seed is another run."""
    monkeypatch.chdir(tmp_path)
    _write_deals(tmp_path / "decks.jsonl", [sim.deal(4, g) for g in range(20)])
    paths = [sim.run(sim.RunConfig(policy="random", n=None, seed=seed, deals="decks.jsonl"), workers=1).path
             for seed in (0, 5)]
    assert [str(p) for p in paths] == ["results/random-deals-decks-n20", "results/random-deals-decks-seed5-n20"]
    assert not read_games(paths[0]).equals(read_games(paths[1]))


def test_bad_deck_in_file_is_rejected_with_its_row(tmp_path):
    decks = [list(sim.deal(0, g)) for g in range(5)]
    decks[3][0], decks[3][1] = 11, decks[3][1]
    path = tmp_path / "bad.jsonl"
    _write_deals(path, decks)
    with pytest.raises(runner.UsageError, match="row 3"):
        sim.run(sim.RunConfig(policy="greedy", n=None, deals=str(path)), workers=1, out=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing ran
    decks[3] = decks[3][:39]
    _write_deals(path, decks)
    with pytest.raises(runner.UsageError, match="row 3.*40 cards"):
        sim.run(sim.RunConfig(policy="greedy", n=None, deals=str(path)), workers=1, out=tmp_path / "run")


@pytest.mark.parametrize("text,value", [("1e6", 10**6), ("2.5e5", 250_000), ("1_000_000", 10**6), ("1000000", 10**6)])
def test_parse_count_accepts(text, value):
    assert runner.parse_count(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "abc", "1e-3", "inf", "nan", ""])
def test_parse_count_rejects_quoting_the_value(text):
    with pytest.raises(runner.UsageError) as e:
        runner.parse_count(text)
    assert repr(text) in str(e.value)


# --- interruption and resume, through the real command line --------------------------

def _sim(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "sim", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def _children(pid):
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _wait_for_parts(run_dir, at_least, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if len(list((run_dir / "games").glob("part-*.parquet"))) >= at_least:
            return
        time.sleep(0.01)


@pytest.fixture(scope="module")
def greedy_seed8_rows(tmp_path_factory):
    """Every row of an uninterrupted run of 1,000,000 greedy games of seed 8 (two workers, chunks of 50,000):
    what the interrupted runs below must have once resumed. Made once for the module."""
    ref = sim.run(sim.RunConfig(policy="greedy", n=1000000, seed=8), workers=2, chunk_size=50000,
                  out=tmp_path_factory.mktemp("greedy-seed8") / "ref")
    return games_of(ref.path)


@pytest.mark.slow
def test_sigkill_then_resume_gives_exactly_the_uninterrupted_rows(tmp_path, read_games, greedy_seed8_rows):
    args = ["run", "--policy", "greedy", "-n", "1000000", "--seed", "8", "--chunk-size", "5000", "-w", "2", "-q"]
    out = tmp_path / "killed"
    proc = _sim(*args, "--out", str(out))
    _wait_for_parts(out, 1, proc)
    time.sleep(random.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "incomplete"
    done = len(list((out / "games").glob("part-*.parquet")))
    assert 0 < done < 200, "the kill should land mid-run"
    time.sleep(0.5)  # orphaned workers notice the closed pipe and exit
    resumed = CliRunner().invoke(app, ["run", "--resume", str(out), "-q"])  # the command, in this process
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert not [p for p in (out / "games").iterdir() if ".tmp-" in p.name]
    got = read_games(out)
    assert got.height == 1000000 and got["game"].n_unique() == 1000000
    assert got.equals(greedy_seed8_rows)


@pytest.mark.slow
def test_sigterm_leaves_a_resumable_run_and_says_how(tmp_path):
    out = tmp_path / "run"
    proc = _sim("run", "-n", "1000000", "--chunk-size", "5000", "-w", "2", "-q", "--out", str(out))
    _wait_for_parts(out, 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert f"sim run --resume {out}" in err
    assert "Traceback" not in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
    s = sim.resume(out)
    assert s.status == "complete" and s.games == 1000000


def test_a_second_ctrl_c_while_the_run_stops_prints_no_traceback(tmp_path):
    # Ctrl-C pressed twice (or held): the ones after the first land while the process exits, after its one line.
    # They used to cut into the flush of the last worker log records at exit ("Exception ignored in atexit
    # callback", a traceback) or kill the process by the signal.
    out = tmp_path / "run"
    proc = _sim("run", "-n", "1000000", "--chunk-size", "5000", "-w", "2", "--out", str(out))
    _wait_for_parts(out, 1, proc)
    proc.send_signal(signal.SIGINT)
    said = proc.stderr.readline()
    while said.startswith("compiling"):
        said = proc.stderr.readline()
    assert said.startswith("Error: interrupted;"), said
    while proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.002)
    err = proc.stderr.read()
    assert proc.returncode == 130, (said, err)
    assert err == "", err
    assert f"sim run --resume {out}" in said


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_sent_again_and_again_while_the_run_stops_leave_it_resumable_and_saying_so(tmp_path, sig):
    # A second SIGTERM while the run stopped killed the process by the signal (exit -15, in about half the tries
    # with 5 to 20 ms between the two) before it said how to finish the run: the handlers of the run's loop were
    # put back as its stop began, and the command line's last moments ignored Ctrl-C only.
    out = tmp_path / "run"
    proc = _sim("run", "-n", "1000000", "--chunk-size", "5000", "-w", "2", "--out", str(out))
    _wait_for_parts(out, 1, proc)
    while proc.poll() is None:
        proc.send_signal(sig)
        time.sleep(0.002)
    err = proc.stderr.read()
    lines = [line for line in err.splitlines() if not line.startswith("compiling")]
    assert proc.returncode == 130, err
    assert len(lines) == 1 and lines[0].startswith("Error: interrupted;") and f"sim run --resume {out}" in lines[0]
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"


def test_an_interrupt_swallowed_inside_a_run_is_raised_when_the_block_ends(monkeypatch):
    # Python swallows an exception raised where it cannot propagate ("Exception ignored in ..."): a finalizer, or a
    # callback from C, which numba's compiler calls while a first run compiles. A Ctrl-C landing there is not lost,
    # and its swallowed traceback is not printed.
    class Finalizer:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises here, and Python swallows it

    reported = []  # what Python would print as "Exception ignored in ..."
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with runner.interrupt_on_sigterm():
            Finalizer()
    assert signal.getsignal(signal.SIGINT) is before
    assert sys.unraisablehook == reported.append
    assert reported == []


def test_after_a_signal_in_a_block_inside_another_the_next_ones_are_ignored_until_the_outer_block_ends():
    # A run's loop is such a block inside `sim.run`'s own: the loop's handlers were put back as it stopped, so a
    # second SIGTERM while the run saved its manifest and let go of its lock ended the process by the signal.
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with runner.interrupt_on_sigterm() as outer:
            with pytest.raises(KeyboardInterrupt):
                with runner.interrupt_on_sigterm():
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)  # the handler raises here
            seen.append((signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT), list(outer.signalled)))
            assert seen[0][:2] == (signal.SIG_IGN, signal.SIG_IGN), seen  # checked before a signal is sent
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a handler would have raised by now
            seen.append("went on")
    assert seen == [(signal.SIG_IGN, signal.SIG_IGN, [signal.SIGTERM]), "went on"]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_an_error_that_a_signal_turned_into_is_the_interrupt():
    # A SIGTERM landing inside Polars' code came back as "'<unprintable str object>' is not a Polars data type":
    # the run ended with exit 1, that error, and "kept; finish with", instead of as interrupted (1 in 60 under load).
    from polars.exceptions import PanicException  # no Exception: a BaseException

    for error in (TypeError("'<unprintable str object>' is not a Polars data type"), PanicException("unwrap")):
        with pytest.raises(KeyboardInterrupt) as caught:
            with runner.interrupt_on_sigterm():
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)  # the handler raises here
                except KeyboardInterrupt:
                    raise error from None
        assert caught.value.__cause__ is error
    with pytest.raises(TypeError):  # without a signal, an error is what it is
        with runner.interrupt_on_sigterm():
            raise TypeError("not a signal")


def test_a_sigint_ignored_from_the_start_stays_ignored_and_sigterm_still_stops_the_run():
    # `sim run ... &` from a script starts with SIGINT ignored (POSIX, no job control): it was ignored while the
    # command started up and obeyed once the run's handler was in place. Now it is ignored throughout.
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    went_on = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with runner.interrupt_on_sigterm():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # a handler would have raised by now
                went_on.append(signal.getsignal(signal.SIGINT))
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises here
        assert went_on == [signal.SIG_IGN]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.slow
def test_dead_worker_names_its_chunk_and_resume_finishes(tmp_path, read_games, greedy_seed8_rows):
    out = tmp_path / "run"
    proc = _sim("run", "-n", "1000000", "--seed", "8", "--chunk-size", "5000", "-w", "2", "--out", str(out))
    _wait_for_parts(out, 1, proc)
    workers = _children(proc.pid)
    assert workers, "the run should have worker processes"
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "worker process died" in err and "chunk" in err and "--resume" in err
    assert "Traceback" not in err
    assert not [p for p in (out / "games").iterdir() if ".tmp-" in p.name]
    s = sim.resume(out, workers=2)
    assert s.status == "complete"
    assert read_games(out).equals(greedy_seed8_rows)


def test_unwritable_out_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = subprocess.run([sys.executable, "-m", "sim", "run", "-n", "10", "--out", str(blocker / "run")],
                       capture_output=True, text=True)
    assert r.returncode == 2  # a usage error: nothing can be made under a file
    assert r.stderr.strip().startswith("Error:") and len(r.stderr.strip().splitlines()) == 1


def test_full_disk_stops_with_a_resumable_run(tmp_path, monkeypatch, read_games):
    import errno

    from sim.jobs import files

    calls = {"n": 0}
    real = files.write_atomic

    def flaky(path, write):
        if Path(path).name.startswith("part-"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, write)

    monkeypatch.setattr(runner, "write_atomic", flaky)
    out = tmp_path / "run"
    with pytest.raises(runner.RunError, match="No space left on device.*--resume"):
        sim.run(sim.RunConfig(policy="greedy", n=1000), workers=2, chunk_size=100, out=out)
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
    monkeypatch.undo()
    s = sim.resume(out)
    assert s.games == 1000
    assert read_games(out).equals(read_games(sim.run(sim.RunConfig(policy="greedy", n=1000), workers=1,
                                                     out=tmp_path / "ref").path))


@pytest.mark.parametrize("failure", [RuntimeError("the cluster failed"), KeyboardInterrupt()])
def test_one_part_done_is_said_in_the_singular(tmp_path, monkeypatch, failure):
    # "1 of 4 parts are done" read wrong; 2 or more parts are.
    real = runner.write_atomic

    def fail_second_part(path, write):
        if Path(path).name == "part-00001.parquet":
            raise failure
        return real(path, write)

    monkeypatch.setattr(runner, "write_atomic", fail_second_part)
    out = tmp_path / "run"
    with pytest.raises((runner.RunError, runner.Interrupted)) as e:
        sim.run(sim.RunConfig(policy="greedy", n=400), workers=1, chunk_size=100, out=out)
    assert ("1 of 4 parts is done and kept; finish with" if isinstance(failure, RuntimeError)
            else "interrupted; 1 of 4 parts is done") in str(e.value), str(e.value)


def test_a_signal_just_after_the_first_manifest_is_an_interrupt_that_says_how_to_resume(tmp_path, monkeypatch):
    # The gap between writing the manifest and compiling: a Ctrl-C (or SIGTERM) landing there.
    real_save = runner._save
    signalled = []

    def save_then_signal(*args):
        real_save(*args)
        if not signalled:
            signalled.append(True)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises here

    monkeypatch.setattr(runner, "_save", save_then_signal)
    out = tmp_path / "r"
    with pytest.raises(runner.Interrupted, match=f"--resume {out}"):
        sim.run(sim.RunConfig(n=500), out=out, workers=1)
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
    monkeypatch.setattr(runner, "_save", real_save)
    assert sim.resume(out, workers=1).games == 500


def test_a_policy_that_goes_wrong_in_a_worker_is_a_policy_error(tmp_path):
    # An illegal cell after the warm-up game: raised in a worker, it is still the policy's fault (PolicyError,
    # naming seed, game and turn), as it is for a game played in this process.
    plugin = tmp_path / "late.py"
    plugin.write_text("def choose(position, card):\n"
                      "    if position.turn == 2 and position.game == 7:\n"
                      "        return 48\n"
                      "    return position.legal_cells()[0]\n")
    for workers in (1, 2):
        with pytest.raises(sim.PolicyError, match=r"illegal cell 48.*seed 0, game 7, turn 3"):
            sim.run(sim.RunConfig(policy=f"{plugin}:choose", n=20), workers=workers, chunk_size=5,
                    out=tmp_path / f"w{workers}")
    with pytest.raises(sim.PolicyError, match="illegal cell 48"):
        sim.play(sim.deal(0, 7), f"{plugin}:choose", seed=0, game=7)


def test_api_arguments_of_the_wrong_type_are_clear_errors_before_anything_is_made(tmp_path, read_games):
    deck = sim.deal(0, 0)
    for policy in (print, None, 3):
        with pytest.raises(TypeError, match="policy must be a name"):
            sim.play(deck, policy)
    with pytest.raises(TypeError, match="RunConfig.rules must be a sim.Rules, not dict"):
        sim.run(sim.RunConfig(rules={"grid": 3}, n=4), out=tmp_path / "a", workers=1)
    with pytest.raises(TypeError, match="SolveConfig.rules must be a sim.Rules, not dict"):
        sim.solve_run(sim.SolveConfig(rules={"grid": 3}, n=2), out=tmp_path / "a", workers=1)
    with pytest.raises(TypeError, match="rules must be a sim.Rules"):
        sim.Board({"grid": 3})
    for kw, named in (({"chunk_size": "5"}, "chunk_size"), ({"workers": 1.5}, "workers"),
                      ({"chunk_size": 2.5, "workers": 1}, "chunk_size")):
        with pytest.raises(runner.UsageError, match=f"{named} must be a whole number"):
            sim.run(sim.RunConfig(n=4), out=tmp_path / "a", **kw)
    with pytest.raises(ValueError, match="game must be an integer"):
        sim.play_decks([deck], first_game=-1)
    with pytest.raises(ValueError, match="past the largest game index"):
        sim.play_decks([deck, deck], first_game=2**63 - 1)
    assert not (tmp_path / "a").exists()
    # Policy arguments as pairs and as numbers, as a mapping of strings would be.
    pairs = sim.run(sim.RunConfig(policy="rollout", policy_args=(("samples", 2),), n=6), out=tmp_path / "p", workers=1)
    strings = sim.run(sim.RunConfig(policy="rollout", policy_args=(("samples", "2"),), n=6), out=tmp_path / "s",
                      workers=1)
    assert read_games(pairs.path).equals(read_games(strings.path))
    assert sim.play(deck, "rollout", policy_args=[("samples", "2")]) == sim.play(deck, "rollout",
                                                                                   policy_args={"samples": 2})
