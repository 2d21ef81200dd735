"""Split solves (sim.solver.solver.SplitSolve): a hard deal's search shared by idle workers.

- With the split forced on almost every deal (``split_after=1``), the solver
  still agrees with the no-pruning brute force of tests/test_solver.py on
  small settings, deal by deal, and its won lines replay through the engine.
- On full deals, a split solve agrees with the serial solve wherever both
  prove a score, and is never wrong where only one does.
- A subtree search is a pure function of its task; a split deal's row is the
  same with 1 or 2 workers, any chunk size, on resume, and equals `sim.solve`
  in one process.
- A node limit bounds a deal's nodes, split or not (the serial phase's and
  every subtree's together).
"""

import json
import logging

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sim
import sim.solver.solver as solver_module
from sim.errors import Interrupted
from sim.jobs.pool import WAIT, run_tasks
from sim.jobs.solve import TaskQueue
from sim.solver.solver import (
    SPLIT_AFTER, SPLIT_SUBTREES, RoundResults, Solver, SplitSolve, SubtreeResult, SubtreeTask, search_subtree, solve,
)
from test_solver import brute_force, check_line

pytestmark = pytest.mark.slow

SMALL = [
    (sim.Rules(grid=2, max_face_down=1), 13, 80),
    (sim.Rules(grid=3, max_pile=1), 9, 60),
    (sim.Rules(grid=3, max_pile=2, max_face_down=1), 10, 20),
]


@pytest.mark.parametrize("first_round", [None, 20], ids=["default-rounds", "tiny-rounds"])
@pytest.mark.parametrize("rules,horizon,games", SMALL, ids=["grid2", "grid3-pile1", "grid3-pile2"])
def test_split_solves_agree_with_brute_force(rules, horizon, games, first_round, monkeypatch):
    # Tiny rounds leave tasks unfinished: what they did not search goes on in the next rounds' tasks.
    if first_round is not None:
        monkeypatch.setattr(solver_module, "SPLIT_FIRST_ROUND", first_round)
    split = 0
    for g in range(games):
        deck = sim.deal(11, g)
        expected = brute_force(deck, rules, horizon)
        r = solve(deck, rules, horizon=horizon, split_after=1)
        assert (r.outcome, r.score) == expected, f"game {g}"
        assert r.outcome != "won" or r.proven_best
        check_line(deck, r, rules)
        first = solve(deck, rules, first_win=True, horizon=horizon, split_after=1)
        assert first.outcome == expected[0], f"game {g}, first win"
        check_line(deck, first, rules)
        split += r.nodes > 1 + 1  # the serial phase stopped after one node: the rest was split
    assert split >= games // 2


DEALS = range(12)
LIMIT = 1_500_000
SPLIT = 100_000


@pytest.fixture(scope="module")
def both():
    """Deals of seed 0 solved serially and split, with the same node limit."""
    decks = [sim.deal(0, g) for g in DEALS]
    serial = [solve(d, node_limit=LIMIT, split_after=0) for d in decks]
    split = [solve(d, node_limit=LIMIT, split_after=SPLIT) for d in decks]
    return decks, serial, split


def test_split_agrees_with_serial_where_both_prove(both):
    decks, serial, split = both
    went_split = 0
    for deck, a, b in zip(decks, serial, split):
        check_line(deck, b)
        assert a.nodes <= LIMIT and b.nodes <= LIMIT
        went_split += b.nodes > SPLIT
        if a.proven_best and b.proven_best:
            assert a.score == b.score
        # never wrong: a proven score is within what the other found and bounded
        for p, q in ((a, b), (b, a)):
            if p.proven_best and q.outcome == "won":
                assert q.score <= p.score <= q.score_bound
    assert went_split >= 2
    assert sum(b.proven_best for b in split) >= sum(a.proven_best for a in serial) - 1


@pytest.mark.parametrize("split_after", [0, 1, 5, 100, 500])
def test_a_node_limit_bounds_a_deal_s_nodes_split_or_not(split_after):
    # Rule 5 counts its placements as nodes: a search stops before a node whose endgame would pass its
    # budget, and a split round's tasks share what the limit leaves. Before, each search passed its
    # budget by up to one endgame, so a split round of ~100 tiny tasks tried twice the limit (deal 2 at
    # 1,000 nodes, split after 5: 2,031 nodes) and the serial solve went over it on a deal in four.
    for g in range(16):
        deck = sim.deal(0, g)
        for first_win in (False, True):
            for limit in (1, 40, 1_000):
                r = solve(deck, node_limit=limit, split_after=split_after, first_win=first_win)
                assert r.nodes <= limit, (g, first_win, limit, r.nodes)
                check_line(deck, r)


def test_a_split_job_s_rows_keep_to_the_node_limit(tmp_path, read_games):
    # The audit's run: sim solve -n 3 --node-limit 1000 --split-after 5 (deals 1 and 2 are split, deal 2
    # left unresolved), with the rounds' subtrees on two workers: the rows are sim.solve's, within the limit.
    config = sim.SolveConfig(n=3, seed=0, node_limit=1_000, split_after=5)
    rows = read_games(sim.solve_run(config, workers=2, chunk_size=1, out=tmp_path / "s").path)
    assert rows["nodes"].max() <= 1_000 and int((rows["nodes"] > 5).sum()) >= 2
    for row in rows.iter_rows(named=True):
        r = solve(sim.deal(0, row["game"]), node_limit=1_000, split_after=5)
        assert (row["outcome"], row["score"], row["nodes"], row["score_bound"]) == (
            r.outcome, r.score, r.nodes, r.score_bound)


def test_a_hard_deal_split_is_proven_where_the_serial_one_is():
    deck = sim.deal(0, 18)  # its best score, 23, takes millions of nodes to prove
    # Rule 5 counts its cheap placements as nodes, so at this limit only the solves without it prove
    # the deal; the test is about splitting, so both leave it out.
    serial = solve(deck, node_limit=20_000_000, split_after=0, endgame=False)
    split = solve(deck, node_limit=20_000_000, split_after=2_000_000, endgame=False)
    assert serial.proven_best and split.proven_best and split.score == serial.score == 23
    check_line(deck, split)


def test_a_subtree_search_is_a_pure_function_of_its_task():
    deck = sim.deal(0, 7)
    first = solve(deck, node_limit=50_000, split_after=0)
    plan = SplitSolve(np.array(deck, np.uint8), sim.Rules(), first, first_win=False, node_limit=None, horizon=40,
                      use_tt=True, use_sym=True, started=0.0, deadline=None)
    tasks = plan.tasks()
    assert len(tasks) >= SPLIT_SUBTREES and len({t.paths for t in tasks}) == len(tasks)
    assert all(len(t.paths) == 1 for t in tasks)
    task = SubtreeTask(**{**tasks[3].__dict__, "budget": 30_000})
    fresh, used = Solver(tt_bits=16), Solver(tt_bits=16)
    solve(sim.deal(0, 9), node_limit=40_000)
    for x in tasks[:5]:  # other searches in between: other stamps, other table entries
        search_subtree(used, SubtreeTask(**{**x.__dict__, "budget": 5_000}))
    assert search_subtree(fresh, task) == search_subtree(used, task)
    # The rule switches travel with the tasks (as keyword fields).
    off = SplitSolve(np.array(deck, np.uint8), sim.Rules(), first, first_win=False, node_limit=None, horizon=40,
                     use_tt=True, use_sym=True, started=0.0, deadline=None, use_slack_parity=False).tasks()
    assert [t.paths for t in off] == [t.paths for t in tasks] and not any(t.use_slack_parity for t in off)
    assert all(t.use_slack_parity and t.use_ranks and t.use_endgame for t in tasks)


@pytest.mark.parametrize("game,budget", [(7, 3_000), (18, 20_000), (83, 50_000)])
def test_a_stopped_task_s_frontier_is_exactly_what_it_did_not_search(game, budget):
    # Without the table a node's search depends only on its path, so a task stopped by its budget and then
    # its frontier, searched piece by piece (each stopped again and again), try exactly the nodes of the
    # whole subtree searched at once, and end with the same result.
    deck = sim.deal(0, game)
    first = solve(deck, node_limit=50_000, split_after=0)
    plan = SplitSolve(np.array(deck, np.uint8), sim.Rules(), first, first_win=False, node_limit=None, horizon=40,
                      use_tt=False, use_sym=False, started=0.0, deadline=None)
    solver = Solver(tt_bits=16)
    for root in plan.tasks()[:3]:
        whole = search_subtree(solver, SubtreeTask(**{**root.__dict__, "budget": 10**9}))
        assert whole.status in ("done", "won") and not whole.frontier
        nodes, pending, pieces, status = 0, [root.paths], 0, "done"
        while pending and status == "done":
            x = search_subtree(solver, SubtreeTask(**{**root.__dict__, "paths": pending.pop(0), "budget": budget}))
            nodes += x.nodes
            pieces += 1
            if x.status == "open":
                assert x.frontier and len(set(x.frontier)) == len(x.frontier)
                pending = solver_module._next_tasks([x.frontier]) + pending
            elif x.status == "won":
                status = "won"
                assert x.moves == whole.moves
        assert status == whole.status and nodes == whole.nodes
        assert pieces > 1 or whole.nodes <= budget


def decided_by_scan(results):
    """How many results decide a round, read off the whole list (None: not back): the slow definition."""
    for i, x in enumerate(results):
        if x is None:
            return None
        if x.status == "won":
            return i + 1
    return len(results)


@given(st.lists(st.sampled_from(["done", "open", "won"]), min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_a_round_is_decided_as_a_scan_of_its_results_says(statuses, rng):
    order = list(range(len(statuses)))
    rng.shuffle(order)
    back = RoundResults(len(statuses))
    seen = [None] * len(statuses)
    for j in order:  # results come back in any order; each answer is the scan's
        seen[j] = SubtreeResult(statuses[j], 1)
        n = back.take(j, seen[j])
        assert n == decided_by_scan(seen)
        if n is not None:
            assert back.results[:n] == seen[:n]
            break
    else:
        raise AssertionError("every result is back and the round is not decided")


def test_split_rows_do_not_depend_on_workers_chunks_or_resume(tmp_path, read_games):
    config = sim.SolveConfig(n=10, seed=0, node_limit=LIMIT, split_after=SPLIT)
    a = sim.solve_run(config, workers=1, chunk_size=10, out=tmp_path / "a")
    b = sim.solve_run(config, workers=2, chunk_size=3, out=tmp_path / "b")
    c = sim.solve_run(config, workers=2, chunk_size=1, out=tmp_path / "c")
    ra = read_games(a.path).drop("seconds")
    assert ra.equals(read_games(b.path).drop("seconds")) and ra.equals(read_games(c.path).drop("seconds"))
    assert int((ra["nodes"] > SPLIT).sum()) >= 2  # some deals were split
    for g in range(10):
        r = solve(sim.deal(0, g), node_limit=LIMIT, split_after=SPLIT)
        row = ra.row(g, named=True)
        assert (row["outcome"], row["score"], row["proven_best"], row["nodes"], row["score_bound"]) == (
            r.outcome, r.score, r.proven_best, r.nodes, r.score_bound)
        assert row["moves"] == (None if r.moves is None else list(r.moves))
    m = json.loads((b.path / "manifest.json").read_text())
    assert m["solve"]["split_after"] == SPLIT
    # a part of a split deal played again on resume
    (b.path / "games" / "part-00002.parquet").unlink()  # deals 6..8, deal 7 among them
    again = sim.resume(b.path, workers=2)
    assert again.status == "complete" and read_games(b.path).drop("seconds").equals(ra)


def test_a_split_deal_s_milestones_are_logged(tmp_path, read_games, caplog):
    # Hours can pass on one hard deal with the progress bar still: -v says what it is doing.
    caplog.set_level(logging.INFO, logger="sim")
    config = sim.SolveConfig(n=8, seed=0, split_after=SPLIT)  # no limit: deal 7 rules out a level split
    rows = read_games(sim.solve_run(config, workers=1, chunk_size=8, out=tmp_path / "a").path)
    said = [r.getMessage() for r in caplog.records if r.name == "sim.solve"]
    split = [row for row in rows.iter_rows(named=True) if row["nodes"] > SPLIT]
    assert len(split) >= 2
    for row in split:
        g = row["game"]
        assert sum(m.startswith(f"game {g}: still open after ") for m in said) == 1
        end = f"game {g}: {row['outcome']}" + ("" if row["score"] is None else f", best score {row['score']}")
        assert sum(m.startswith(end) and f"{row['nodes']:,} nodes" in m for m in said) == 1, (end, said)
    ruled_out = [m for m in said if " no win in " in m]
    assert ruled_out and all(int(m.split(" no win in ")[1].split()[0]) >= 16 for m in ruled_out)


def test_seconds_of_a_split_deal_is_its_wall_time(tmp_path, read_games):
    s = sim.solve_run(sim.SolveConfig(n=8, seed=0, node_limit=LIMIT, split_after=SPLIT), workers=2,
                      chunk_size=1, out=tmp_path / "s")
    row = read_games(s.path).row(7, named=True)  # deal 7 is split
    assert row["nodes"] > SPLIT and 0 < row["seconds"] < s.seconds + 1


def test_a_time_limit_bounds_a_split_deal_s_wall_time(tmp_path, read_games):
    # --time-limit applies to a deal's wall time, its helpers' subtree searches included.
    r = solve(sim.deal(0, 7), time_limit=2.0, split_after=20_000)
    assert r.outcome == "won" and r.nodes > 20_000 and r.seconds < 2.0 + 2.0
    check_line(sim.deal(0, 7), r)
    s = sim.solve_run(sim.SolveConfig(n=8, seed=0, time_limit=2.0, split_after=20_000), workers=2, chunk_size=1,
                      out=tmp_path / "t")
    rows = read_games(s.path)
    assert rows["seconds"].max() < 2.0 + 2.0 and rows.row(7, named=True)["nodes"] > 20_000
    assert (rows["outcome"] == "won").all()


def test_a_time_limit_turns_split_solves_off_unless_asked_for():
    # Under a time limit a split deal holds every worker for its whole limit and proves no more.
    from sim.jobs.solve import default_out

    timed = sim.SolveConfig(n=8, seed=0, time_limit=2.0)
    assert timed.options()["split_after"] == 0 and default_out(timed).name == "solve-seed0-n8-time_limit2"
    counted = sim.SolveConfig(n=8, seed=0, node_limit=LIMIT)
    assert counted.options()["split_after"] == SPLIT_AFTER and "split" not in default_out(counted).name
    asked = sim.SolveConfig(n=8, seed=0, time_limit=2.0, split_after=SPLIT_AFTER)
    assert asked.options()["split_after"] == SPLIT_AFTER
    assert default_out(asked).name == f"solve-seed0-n8-time_limit2-split_after{SPLIT_AFTER}"
    never = sim.SolveConfig(n=8, seed=0, node_limit=LIMIT, split_after=0)
    assert default_out(never).name.endswith("-split_after0")


def _same(x):
    return x


def test_pool_hands_out_tasks_made_from_results():
    # Each result makes the next task; meanwhile the source says WAIT and the second worker stays idle.
    got, queue = [], [(0, 3)]

    def feed():
        while len(got) < 4:
            yield queue.pop() if queue else WAIT

    for key, value in run_tasks(_same, feed(), workers=2):
        got.append(value)
        if value > 0:
            queue.append((key + 1, value - 1))
    assert got == [3, 2, 1, 0]

    def stuck():
        yield WAIT

    with pytest.raises(RuntimeError, match="waits with no task in flight"):
        list(run_tasks(_same, stuck(), workers=1))


def test_pending_tasks_go_out_earliest_deal_first():
    # A later chunk's hard deal must not hold back an earlier chunk: its part could never be written.
    q = TaskQueue()
    for j in range(3):
        q.push(1, 5, ("late", j))
    q.push(0, 9, "rest of chunk 0")
    for j in range(2):
        q.push(0, 4, ("early", j))
    q.push(1, 6, "rest of chunk 1")
    q.drop(lambda item: item == ("late", 1))
    assert len(q) == 6
    got = [q.pop() for _ in range(len(q))]
    assert got == [("early", 0), ("early", 1), "rest of chunk 0", ("late", 0), ("late", 2), "rest of chunk 1"]


def test_a_split_schedule_taken_up_from_its_checkpoint_ends_as_it_would_have(monkeypatch):
    # Small budgets make deal 7's split take several rounds; stopped after two, its checkpoint (through
    # JSON, as a run directory keeps it) goes on to the same result, node for node.
    monkeypatch.setattr(solver_module, "SPLIT_FIRST_ROUND", 20_000)
    monkeypatch.setattr(solver_module, "SPLIT_TASK_NODES", 50_000)
    deck = np.array(sim.deal(0, 7), np.uint8)
    solver = Solver(tt_bits=16)
    first = solver.solve(deck, sim.Rules(), node_limit=50_000)

    def plan():
        return SplitSolve(deck, sim.Rules(), first, first_win=False, node_limit=None, horizon=40, use_tt=True,
                          use_sym=True, started=0.0, deadline=None)

    def run(p, rounds=None):
        while (rounds is None or p.rounds < rounds) and (tasks := p.tasks()):
            results = []
            for t in tasks:
                results.append(search_subtree(solver, t))
                if results[-1].status == "won":
                    break
            p.record(results)
        return p

    whole = run(plan()).result()
    stopped = run(plan(), rounds=2)
    assert stopped.rounds == 2 and not stopped.settled()
    again = plan()
    again.restore(json.loads(json.dumps(stopped.checkpoint())))
    taken_up = run(again).result()
    assert whole.proven_best and again.rounds > 2
    assert (taken_up.outcome, taken_up.score, taken_up.nodes, taken_up.moves, taken_up.score_bound) == (
        whole.outcome, whole.score, whole.nodes, whole.moves, whole.score_bound)


def test_an_interrupted_run_takes_its_split_deal_up_from_the_checkpoint(tmp_path, read_games, monkeypatch):
    import sim.jobs.solve as solve_job

    config = sim.SolveConfig(n=8, seed=0, node_limit=LIMIT, split_after=SPLIT)
    ref = read_games(sim.solve_run(config, workers=1, chunk_size=8, out=tmp_path / "ref").path).drop("seconds")
    saved = []
    real_save = solve_job.save_split

    def save_then_stop(run_dir, payload, i, plan):
        real_save(run_dir, payload, i, plan)
        saved.append((payload["start"] + i, plan.rounds, plan.settled()))
        if saved[-1] == (7, 2, False):
            raise KeyboardInterrupt  # as Ctrl-C between two rounds of deal 7

    monkeypatch.setattr(solve_job, "save_split", save_then_stop)
    with pytest.raises(Interrupted):
        sim.solve_run(config, workers=1, chunk_size=8, out=tmp_path / "run")
    checkpoint = tmp_path / "run" / solve_job.SPLITS / "game-000000007.json"
    assert checkpoint.is_file() and not list((tmp_path / "run" / "games").glob("*.parquet"))
    monkeypatch.setattr(solve_job, "save_split", real_save)
    taken_up = []
    real_load = solve_job.load_split

    def load(run_dir, payload, i, plan):
        taken_up.append((payload["start"] + i, real_load(run_dir, payload, i, plan)))
        return taken_up[-1][1]

    monkeypatch.setattr(solve_job, "load_split", load)
    again = sim.resume(tmp_path / "run", workers=1)
    assert again.status == "complete" and read_games(tmp_path / "run").drop("seconds").equals(ref)
    states = dict(taken_up)
    assert states[7]["rounds"] == 2  # deal 7 went on from its second round
    # The deals settled before the interruption were taken up settled (their rows written at once).
    assert {g for g, state in states.items() if state is not None} == {g for g, _, _ in saved}
    assert not (tmp_path / "run" / solve_job.SPLITS).exists()  # every part written: no checkpoint left
    # A checkpoint that does not match its deal (or is damaged) is not trusted: the split starts again.
    payload = {"start": 7, "solve": config.options(), "rules": sim.Rules().as_dict(), "seed": 0, "decks": None}
    (tmp_path / "run" / solve_job.SPLITS).mkdir()
    checkpoint.write_text(json.dumps({"format": "foursquare-sim split checkpoint", "sha256": "0", "body": {}}))
    plan = SplitSolve(np.array(sim.deal(0, 7), np.uint8), sim.Rules(), solve(sim.deal(0, 7), node_limit=1_000),
                      first_win=False, node_limit=LIMIT, horizon=40, use_tt=True, use_sym=True, started=0.0,
                      deadline=None)
    assert real_load(tmp_path / "run", payload, 0, plan) is None


def test_a_split_solve_compiles_nothing_after_the_run_s_warm_up():
    # A run compiles (or loads) what it will use before its workers start, so that no deal's `seconds` pays for
    # it; a split compiles `split_children` and two turn kernels on first use. In a fresh process, since this
    # one may have compiled them already.
    import subprocess
    import sys

    code = """
import sys
from numba.core.registry import CPUDispatcher
import sim
from sim.jobs.solve import _warm

def compiled():
    return {f"{name}.{k}": len(v.overloads) for name, m in list(sys.modules.items()) if name.startswith("sim")
            for k, v in list(vars(m).items()) if isinstance(v, CPUDispatcher)}

_warm(sim.SolveConfig(n=3, node_limit=1000, split_after=5), False)
before = compiled()
assert sim.solve(sim.deal(0, 83), node_limit=1000, split_after=5).nodes > 5  # split
after = compiled()
print(sorted(k for k, v in after.items() if v != before.get(k)))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
