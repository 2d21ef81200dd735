"""Runs on a Dask cluster: a LocalCluster started here, rows compared with local runs."""

import asyncio
import json
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

import sim  # noqa: E402
from sim.jobs import runner  # noqa: E402
from sim.jobs.executors import ExecutorError, make_executor  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as c:
        yield c


@pytest.mark.slow
def test_dask_run_has_the_rows_of_a_local_run(cluster, tmp_path, read_games):
    config = sim.RunConfig(policy="greedy", n=20_000, seed=3)
    s = sim.run(config, chunk_size=1500, out=tmp_path / "dask", executor="dask", scheduler=cluster.scheduler_address)
    local = sim.run(config, workers=2, out=tmp_path / "local")
    assert s.status == "complete" and s.games == 20_000
    assert read_games(s.path).equals(read_games(local.path))
    m = json.loads((s.path / "manifest.json").read_text())
    assert m["executor"] == "dask" and m["scheduler"] == cluster.scheduler_address


@pytest.mark.slow
def test_dask_solve_has_the_rows_of_a_local_solve(cluster, tmp_path, read_games):
    config = sim.SolveConfig(n=40, seed=2, node_limit=20_000)
    d = sim.solve_run(config, chunk_size=6, out=tmp_path / "dask", executor="dask",
                      scheduler=cluster.scheduler_address)
    local = sim.solve_run(config, workers=2, out=tmp_path / "local")
    # With a node limit (no time limit) a solve is reproducible; only the seconds differ.
    assert read_games(d.path).drop("seconds").equals(read_games(local.path).drop("seconds"))
    m = json.loads((d.path / "manifest.json").read_text())
    assert m["executor"] == "dask" and m["status"] == "complete"


@pytest.mark.slow
def test_dask_split_solve_has_the_rows_of_a_local_solve(cluster, tmp_path, read_games):
    # Deals 4 and 7 of seed 0 go past 100,000 nodes: their subtrees are shared by the cluster's workers.
    config = sim.SolveConfig(n=10, seed=0, node_limit=1_500_000, split_after=100_000)
    d = sim.solve_run(config, chunk_size=3, out=tmp_path / "dask", executor="dask",
                      scheduler=cluster.scheduler_address)
    local = sim.solve_run(config, workers=1, out=tmp_path / "local")
    rows = read_games(d.path).drop("seconds")
    assert rows.equals(read_games(local.path).drop("seconds"))
    assert int((rows["nodes"] > 100_000).sum()) >= 2


@pytest.mark.slow
def test_dask_scheduler_from_the_environment_and_resume(cluster, tmp_path, monkeypatch, read_games):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    out = tmp_path / "run"
    config = sim.RunConfig(policy="random", n=6000, seed=1)
    sim.run(config, chunk_size=500, out=out, executor="dask")
    # Drop two parts, as an interruption would leave it, and resume on the cluster.
    parts = sorted((out / "games").glob("part-*.parquet"))
    for p in parts[3:5]:
        p.unlink()
    m = json.loads((out / "manifest.json").read_text())
    m["status"] = "incomplete"
    (out / "manifest.json").write_text(json.dumps(m))
    r = sim.resume(out, executor="dask")  # the scheduler from the environment again
    assert r.status == "complete" and r.games == 6000
    assert read_games(out)["game"].to_list() == list(range(6000))
    assert read_games(out).equals(read_games(sim.run(config, workers=2, out=tmp_path / "local").path))


@pytest.mark.slow
def test_compare_and_sweep_play_their_runs_on_a_cluster_with_the_rows_of_local_runs(cluster, tmp_path, monkeypatch,
                                                                                    read_games):
    # They played their runs in local worker processes only: only sim run and sim solve took --executor.
    from typer.testing import CliRunner

    from sim.cli import app

    monkeypatch.chdir(tmp_path)
    on_cluster = ("--executor", "dask", "--scheduler", cluster.scheduler_address, "-q")
    r = CliRunner().invoke(app, ["compare", "--policy", "greedy", "--policy", "random", "-n", "1000", *on_cluster])
    assert r.exit_code == 0, r.output
    s = CliRunner().invoke(app, ["sweep", "--rule", "grid=3,4", "-n", "1000", "-f", "json", *on_cluster])
    assert s.exit_code == 0, s.output
    assert [row["reused"] for row in json.loads(s.stdout)["rows"]] == [False, True]  # grid=4: compare's greedy run
    made = sorted((tmp_path / "results").iterdir())
    assert [d.name for d in made] == ["greedy-seed0-n1000", "greedy-seed0-n1000-grid3", "random-seed0-n1000"]
    for d in made:
        m = json.loads((d / "manifest.json").read_text())
        assert m["executor"] == "dask" and m["status"] == "complete", d
        config = sim.RunConfig(policy=m["policy"], n=m["n"], rules=sim.Rules(**m["rules"]))
        assert read_games(d).equals(read_games(sim.run(config, workers=1, out=tmp_path / "local" / d.name).path))


@pytest.mark.slow
def test_a_lost_worker_changes_no_row(cluster, tmp_path, read_games):
    client = distributed.Client(cluster.scheduler_address)
    try:
        stop = threading.Event()
        killed = []

        def kill_one():
            # Close one worker while the run is under way; the nanny starts a new one.
            deadline = time.time() + 30
            while not stop.is_set() and time.time() < deadline:
                if (tmp_path / "run" / "games").exists() and any((tmp_path / "run" / "games").glob("part-*")):
                    workers = list(client.scheduler_info()["workers"])
                    killed.append(workers[0])
                    try:
                        client.run(lambda: __import__("os")._exit(1), workers=workers[:1])
                    except Exception:  # the worker dies before it can answer
                        pass
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_one)
        killer.start()
        s = sim.run(sim.RunConfig(policy="greedy", n=120_000, seed=9), chunk_size=4000, out=tmp_path / "run",
                    executor="dask", scheduler=cluster.scheduler_address)
        stop.set()
        killer.join()
    finally:
        client.close()
    local = sim.run(sim.RunConfig(policy="greedy", n=120_000, seed=9), workers=2, out=tmp_path / "local")
    assert killed, "a worker should have been closed during the run"
    assert s.games == 120_000
    assert read_games(s.path).equals(read_games(local.path))


def test_executor_errors_are_one_line_usage_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    with pytest.raises(ExecutorError, match="--scheduler"):
        make_executor("dask")
    with pytest.raises(ExecutorError, match="executors: local, dask"):
        make_executor("spark")
    with pytest.raises(runner.UsageError, match="needs --scheduler"):
        sim.run(sim.RunConfig(policy="greedy", n=10), out=tmp_path / "x", executor="dask")


def test_missing_dask_extra_says_what_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError("No module named 'distributed'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(ExecutorError, match=r"pip install 'foursquare-sim\[dask\]'"):
        make_executor("dask", scheduler="tcp://127.0.0.1:1")


def _listener(reply: bytes | None):
    """A local service on a free port that takes connections and sends `reply` (None: says nothing)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []

    def serve():
        while True:
            conn, _ = server.accept()
            held.append(conn)
            if reply is not None:
                conn.recv(100)
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("reply,says", [(None, "no answer in 1 s"),
                                        (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                                         "what answers does not speak Dask's protocol"),
                                        (b"\xff" * 64, "what answers does not speak Dask's protocol")])
def test_an_address_where_no_scheduler_answers_is_refused_in_time(cluster, reply, says):
    # A port that takes the connection but is no Dask scheduler (a dashboard, a silent or foreign service) used to
    # hang the run for ever or fail after making it; now the address is asked who it is, with a time limit.
    from sim.jobs.executors import check_reachable

    address = _listener(reply)
    t0 = time.perf_counter()
    with pytest.raises(ExecutorError, match=f"^no Dask scheduler answers at {address}: {says}"):
        check_reachable(address, timeout=1.0)
    assert time.perf_counter() - t0 < 30  # not Dask's wait without end
    check_reachable(cluster.scheduler_address, timeout=10.0)  # a scheduler answers


def test_a_run_at_an_address_where_no_scheduler_answers_makes_nothing(tmp_path):
    address = _listener(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with pytest.raises(runner.RunError, match="does not speak Dask's protocol"):
        sim.run(sim.RunConfig(n=10), out=tmp_path / "x", executor="dask", scheduler=address)
    assert not (tmp_path / "x").exists()


def test_worker_log_lines_reach_this_process_as_in_a_local_run(cluster, tmp_path):
    # A plugin's warnings, and with -v each chunk's line, are written here (they stayed in the workers' own logs).
    import re
    import subprocess
    import sys

    plugin = tmp_path / "logpol.py"
    plugin.write_text("import logging, warnings\n"
                      "def choose(position, card):\n"
                      "    if position.turn == 0 and position.game % 10 == 0:\n"
                      "        logging.getLogger('logpol').warning('game %d begins', position.game)\n"
                      "        warnings.warn(f'careful in game {position.game}')\n"
                      "    return position.legal_cells()[0]\n")
    args = [sys.executable, "-m", "sim", "run", "-p", f"{plugin}:choose", "-n", "40", "--chunk-size", "10",
            "--executor", "dask", "--scheduler", cluster.scheduler_address]
    r = subprocess.run([*args, "-v", "--out", str(tmp_path / "v")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    begun = re.findall(r"^WARNING [^:]+: game (\d+) begins$", r.stderr, re.M)
    chunks = re.findall(r"^DEBUG dask worker ([01]): chunk (\d): 10 games in", r.stderr, re.M)  # which worker
    assert begun and len(set(begun)) == len(begun) and set(begun) <= {"0", "10", "20", "30"}, r.stderr
    assert sorted(c for _, c in chunks) == ["0", "1", "2", "3"], r.stderr
    assert re.search(r"^WARNING [^:]+: \S+logpol.py:5: UserWarning: careful in game \d+$", r.stderr, re.M), r.stderr
    q = subprocess.run([*args, "-q", "--out", str(tmp_path / "q")], capture_output=True, text=True, timeout=300)
    assert q.returncode == 0 and q.stderr == "", q.stderr


_BUSY = {"now": 0, "most": 0}
_BUSY_LOCK = threading.Lock()


def _busy_chunk(payload):
    """A chunk that takes a while and counts how many run at once (workers in this process's threads)."""
    with _BUSY_LOCK:
        _BUSY["now"] += 1
        _BUSY["most"] = max(_BUSY["most"], _BUSY["now"])
    time.sleep(0.25)
    with _BUSY_LOCK:
        _BUSY["now"] -= 1
    return payload


@pytest.mark.slow
def test_workers_that_join_during_a_run_take_chunks_too():
    # The chunks in flight were counted from the workers present at the start: 2, however many joined.
    from sim.jobs.executors import run_dask

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=40) as c:
        done = []
        for key, result in run_dask(_busy_chunk, ((k, k) for k in range(24)), c.scheduler_address):
            done.append(result)
            if len(done) == 1:
                _BUSY["most"] = 0
                c.scale(4)
                with distributed.Client(c.scheduler_address) as client:
                    client.wait_for_workers(4, timeout=30)
        assert sorted(done) == list(range(24)) and _BUSY["most"] >= 3, _BUSY


@pytest.mark.slow
def test_runs_sharing_a_cluster_each_write_only_their_own_log_lines(cluster, tmp_path):
    # A run's end stopped the others' log lines, and a --quiet run printed another's warnings.
    import re
    import subprocess
    import sys

    procs = {}
    for name, flag in (("long", "-v"), ("short", "-q"), ("mid", "")):
        plugin = tmp_path / f"{name}.py"
        plugin.write_text("import logging, time\n"
                          "def choose(position, card):\n"
                          "    if position.turn == 0:\n"
                          f"        logging.getLogger('{name}').warning('{name} game %d', position.game)\n"
                          f"        time.sleep({0.15 if name == 'long' else 0.02})\n"
                          "    return position.legal_cells()[0]\n")
        args = [sys.executable, "-m", "sim", "run", "-p", f"{plugin}:choose", "-n", "24" if name == "long" else "8",
                "--chunk-size", "2", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                "--out", str(tmp_path / name)] + ([flag] if flag else [])
        procs[name] = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    err = {name: p.communicate(timeout=300)[1] for name, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), err
    assert err["short"] == ""
    for name, n in (("long", 24), ("mid", 8)):
        games = re.findall(r"^WARNING [^:]+: (\w+) game (\d+)$", err[name], re.M)
        assert sorted(games, key=lambda g: int(g[1])) == [(name, str(g)) for g in range(n)], err[name]
    assert len(re.findall(r"^DEBUG [^:]+: chunk \d+: 2 games in", err["long"], re.M)) == 12, err["long"]
    assert "chunk" not in err["mid"]


_WARM_UPS = []
"""Where each warm-up of `_record_warm_up` ran: (a worker's address, chunks played by then, whether in the
worker's event loop thread)."""
_SEEN = []
"""Per chunk of `_chunk_seeing_warm_ups`: (its worker's address, warm-ups on that worker so far)."""
_LATE = threading.Event()
"""Set once a worker that joined during the run has played a chunk."""
_START = {}
"""The address of the worker connected at the start, and whether the others have been asked to join."""


def _record_warm_up():
    worker = distributed.get_worker()  # a ValueError outside a task (Client.run, on the event loop)
    try:
        asyncio.get_running_loop()  # the worker's event loop runs in this thread
        on_loop = True
    except RuntimeError:
        on_loop = False
    _WARM_UPS.append((worker.address, len(_SEEN), on_loop))


def _chunk_seeing_warm_ups(payload):
    """A chunk that notes the warm-ups its worker had, the first worker's holding on until a late one played."""
    where = distributed.get_worker().address
    _SEEN.append((where, sum(w == where for w, _, _ in _WARM_UPS)))
    if where != _START["address"]:
        _LATE.set()
    elif _START.get("scaled"):
        _LATE.wait(20)  # the chunks queued meanwhile go to the workers that joined
    return payload


def test_a_worker_that_joins_during_a_run_warms_up_before_its_first_chunk():
    # Only the workers connected at the start were warmed up: a late one compiled on its first chunk, and several
    # of one machine could compile the same cached functions at once.
    from sim.jobs.executors import run_dask

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=40) as c, distributed.Client(c.scheduler_address) as client:
        _START.update(address=next(iter(client.scheduler_info()["workers"])), scaled=False)
        done = []
        for _, result in run_dask(_chunk_seeing_warm_ups, ((k, k) for k in range(8)), c.scheduler_address,
                                  warm=_record_warm_up):
            done.append(result)
            if len(done) == 1:
                c.scale(3)
                client.wait_for_workers(3, timeout=30)
                _START["scaled"] = True
        late = {w for w, _ in _SEEN} - {_START["address"]}
    assert sorted(done) == list(range(8))
    assert late, "a worker that joined during the run should have played a chunk"
    warmed = [w for w, _, _ in _WARM_UPS]
    assert _WARM_UPS[0][:2] == (_START["address"], 0)  # the worker there at the start, before any chunk
    assert len(_WARM_UPS) == 1 + len(late), _WARM_UPS  # and not again on its first chunk
    assert all(warmed.count(w) == 1 for w in late), _WARM_UPS  # once each, whenever it joined
    assert all(n == 1 for w, n in _SEEN if w in late), _SEEN  # already on its first chunk
    assert not any(on_loop for _, _, on_loop in _WARM_UPS), _WARM_UPS  # a task's thread: heartbeats go on


_WARM_UP_IN_TURN = """
import sys, time
from pathlib import Path
from sim.jobs.executors import _warm_worker
log, go, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

def warm():
    with log.open("a") as f:
        f.write(name + " in\\n")
    while not go.exists():
        time.sleep(0.01)
    with log.open("a") as f:
        f.write(name + " out\\n")

_warm_worker(warm, "run", "worker")
"""


def test_warm_ups_of_one_machine_take_turns(tmp_path):
    # Two worker processes of one machine warming up at once compile the same cached functions side by side; the
    # second now waits on the machine's lock until the first is done, then loads what it wrote.
    import subprocess
    import sys

    log, go = tmp_path / "log", tmp_path / "go"

    def start(name):
        return subprocess.Popen([sys.executable, "-c", _WARM_UP_IN_TURN, str(log), str(go), name])

    def wait_for(what, *procs):
        end = time.monotonic() + 60
        while not what():
            said = log.read_text() if log.exists() else "nothing logged"
            assert time.monotonic() < end and all(p.poll() is None for p in procs), said
            time.sleep(0.01)

    first = start("first")
    try:
        wait_for(lambda: log.exists() and "first in" in log.read_text(), first)
        second = start("second")
        try:
            # The second is blocked on the lock, as the kernel's list of locks shows (a waiter: "->"), or has
            # gone in beside the first.
            wait_for(lambda: "second" in log.read_text() or any(
                line.split()[1:2] == ["->"] and str(second.pid) in line.split()
                for line in open("/proc/locks")), first, second)
            assert log.read_text() == "first in\n"
            go.touch()
            assert second.wait(60) == 0
        finally:
            second.kill()
        assert first.wait(60) == 0
    finally:
        first.kill()
    assert log.read_text().splitlines() == ["first in", "first out", "second in", "second out"]
