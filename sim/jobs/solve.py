"""The solve job (`sim solve`): each deal solved with the stock order known, one Parquet row per deal.

A solve run is a job of `sim.jobs.runner` (kind ``solve``): the same chunks,
worker pool (or Dask), atomic Parquet parts, manifest, progress bar,
interruption and resume as `sim run`; only the work of a chunk differs.
Deal i of a seed is the deck `sim run` deals for game i, and each row says
what `sim.solve` found for it:

==============  ===============================================================
column          meaning
==============  ===============================================================
``game``        uint64, the deal's index (game i of the seed, or row i of --deals)
``outcome``     enum: won (a winning line found), lost (proven: no line wins),
                unresolved (a limit was hit before a win or a proof)
``score``       uint8, the best score found (cards left at the win); null unless won
``proven_best`` bool, no line wins with a higher score
``nodes``       uint64, placements the searches tried
``seconds``     float64, wall time of the deal's search
``moves``       list of uint8: the best winning line's cells; null unless won
``score_bound`` uint8, no line wins with a higher score (equals ``score`` when
                proven); null when lost
``deck``        list of uint8 (with --record-deals)
==============  ===============================================================
"""

import contextlib
import heapq
import itertools
import json
import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from sim import kernels as K
from sim.engine.cards import deal_range, validate_decks
from sim.engine.rules import Rules
from sim.errors import whole
from sim.fielddocs import documented
from sim.jobs import runner
from sim.jobs.files import unseal, write_sealed
from sim.jobs.runner import Job, UsageError
from sim.players.api import in_cache, to_compile, warm_up
from sim.players.oracle import warm_up_solver
from sim.jobs.pool import WAIT
from sim.jobs.solve_results import SolveSummary, solve_frame, summarize_solve
from sim.solver.solver import (
    MAX_COUNT, OUTCOMES, SAT_CONFLICTS, SPLIT_AFTER, RoundResults, default_split_after, may_split, SolveResult, SplitSolve, search_subtree, shared_solver, solve_split,
    too_large,
)
from sim.solver.search import split_children

log = logging.getLogger("sim.solve")

SOLVE_CHUNK = 1_000


# --- one chunk of deals (runs in a worker) ------------------------------------------------


def _decks(task: dict) -> np.ndarray:
    if task["decks"] is not None:
        return validate_decks(task["decks"])
    return deal_range(task["seed"], task["start"], task["stop"])


def solve_decks(decks: np.ndarray, rules: Rules | None = None, first_win: bool = False,
                node_limit: int | None = None, time_limit: float | None = None,
                split_after: int | None = SPLIT_AFTER, sat_conflicts: int | None = SAT_CONFLICTS) -> list[SolveResult]:
    """`sim.solve` on each row of an (n, 40) array of decks, in this process (split solves included)."""
    rules = rules or Rules()
    solver = shared_solver()
    return [solve_split(solver, d, rules, first_win=first_win, node_limit=node_limit, time_limit=time_limit,
                        split_after=split_after, sat_conflicts=sat_conflicts) for d in validate_decks(decks)]


def _split_after(opts: dict) -> int | None:
    """The run's split threshold: None (never) for 0, or for a manifest from before splitting existed."""
    return opts.get("split_after") or None


def solve_chunk(task: dict) -> dict:
    """Solve one chunk of deals in this process, split solves included; returns plain columns."""
    opts = task["solve"]
    decks = _decks(task)
    results = solve_decks(decks, Rules(**task["rules"]), opts["first_win"], opts["node_limit"], opts["time_limit"],
                          _split_after(opts), opts.get("sat_conflicts"))
    return _columns(task, decks, results)


def _columns(task: dict, decks: np.ndarray, results: list[SolveResult]) -> dict:
    """A chunk's plain columns (the main process writes the part)."""
    n = len(results)
    return {
        "game": np.arange(task["start"], task["start"] + n, dtype=np.uint64),
        "outcome": np.array([OUTCOMES.index(r.outcome) for r in results], np.uint8),
        "score": np.array([-1 if r.score is None else r.score for r in results], np.int8),
        "proven_best": np.array([r.proven_best for r in results], np.bool_),
        "nodes": np.array([r.nodes for r in results], np.uint64),
        "seconds": np.array([r.seconds for r in results], np.float64),
        "moves": [None if r.moves is None else list(r.moves) for r in results],
        "score_bound": np.array([-1 if r.score_bound is None else r.score_bound for r in results], np.int8),
        "deck": decks if task["record_deals"] else None,
    }


# --- a job whose hard deals are shared by idle workers ---------------------------------------------


def solve_work(payload: dict):
    """What a worker does with one task of the solve job: a stretch of a chunk's deals, or one subtree.

    A chunk task solves its deals from ``payload["from"]`` on with the serial
    solve and stops at the first deal that needs a split solve, returning
    the results so far and that deal's serial result (the main process then
    shares its subtrees among the workers, and hands the rest of the chunk
    out again). A subtree task is `search_subtree`.
    """
    if "subtree" in payload:
        return search_subtree(shared_solver(), payload["subtree"])
    opts = payload["solve"]
    decks = _decks(payload)
    rules = Rules(**payload["rules"])
    split = _split_after(opts)
    node_limit = opts["node_limit"]
    cap = node_limit if split is None else (split if node_limit is None else min(node_limit, split))
    solver = shared_solver()
    results = []
    start = payload.get("from", 0)
    for i in range(start, len(decks)):
        started = time.time()
        first = solver.solve(decks[i], rules, first_win=opts["first_win"], node_limit=cap,
                             time_limit=opts["time_limit"], sat_conflicts=opts.get("sat_conflicts"))
        if SplitSolve.needed(first, opts["first_win"], node_limit, split):
            return {"from": start, "results": results, "split": (i, first, started)}
        results.append(first)
    return {"from": start, "results": results, "split": None}


SPLITS = "splits"
"""The run directory's folder of split deals' checkpoints (`save_split`), one file per deal still open."""


def _split_file(run_dir: Path, game: int) -> Path:
    return Path(run_dir) / SPLITS / f"game-{game:09d}.json"


def _split_identity(payload: dict, i: int, plan: SplitSolve) -> dict:
    """What a checkpoint of deal i of a chunk must match: the deal (its plan's deck), rules and solve options."""
    return {"game": payload["start"] + i, "deck": [int(c) for c in plan.deck], "rules": payload["rules"],
            "solve": payload["solve"]}


SPLIT_CHECKPOINT = "foursquare-sim split checkpoint"
"""The `format` of a split deal's checkpoint file."""


def save_split(run_dir: Path, payload: dict, i: int, plan: SplitSolve) -> None:
    """Record a split deal's schedule between two rounds, so that a resumed run goes on from there.

    Written atomically, with the digest of its contents inside: `load_split`
    trusts a checkpoint only when the digest and the deal, rules and options
    all match, and otherwise starts the deal's split again (which gives the
    same row: the rounds are a pure function of the deal).
    """
    body = json.dumps({**_split_identity(payload, i, plan), "state": plan.checkpoint()})
    path = _split_file(run_dir, payload["start"] + i)
    path.parent.mkdir(exist_ok=True)
    write_sealed(path, SPLIT_CHECKPOINT, body)


def load_split(run_dir: Path, payload: dict, i: int, plan: SplitSolve) -> dict | None:
    """The checkpointed schedule state of deal i of a chunk (whose fresh `plan` it is for), or None when
    there is none to trust."""
    path = _split_file(run_dir, payload["start"] + i)
    try:
        body = json.loads(unseal(json.loads(path.read_text()), SPLIT_CHECKPOINT, "a split checkpoint"))
        ok = {k: body[k] for k in ("game", "deck", "rules", "solve")} == _split_identity(payload, i, plan)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not a checkpoint's shape
        ok = False
    if not ok:
        log.warning("%s is not a checkpoint of this run's deal; its split solve starts again", path)
        return None
    return body["state"]


class TaskQueue:
    """The split job's pending tasks, handed out earliest deal first.

    A task is a subtree of a split deal's round, or the rest of a chunk
    stopped by a split deal; its place is (chunk, deal): a subtree's deal,
    or the first deal of the rest of a chunk. Handing out the earliest
    first finishes the earliest part first, and no chunk waits behind the
    rounds of hard deals met later (which would leave a run's parts
    unwritten while its workers are busy). Among the tasks of one deal,
    first in, first out.
    """

    def __init__(self):
        self._heap: list = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, chunk: int, deal: int, item) -> None:
        """Queue `item` at its place: deal `deal` (index in the chunk) of chunk `chunk`."""
        heapq.heappush(self._heap, (chunk, deal, next(self._order), item))

    def pop(self):
        """The task of the earliest deal, the first queued among its deal's."""
        return heapq.heappop(self._heap)[3]

    def drop(self, unwanted) -> None:
        """Forget the tasks for which ``unwanted(item)`` is true."""
        self._heap = [e for e in self._heap if not unwanted(e[3])]
        heapq.heapify(self._heap)


def drive_solve(executor, tasks, warm, run_dir: Path | None = None):
    """Run the solve job's chunks; share each hard deal's subtrees among the workers; yield (k, columns).

    Tasks go out in this order: subtrees of the split deals' rounds and the
    rest of chunks stopped by a split deal, earliest deal first
    (`TaskQueue`), then new chunks. So when no deals are left to start,
    every idle worker searches subtrees of the deals still running. Each
    split deal's rounds are joined here (`SplitSolve`), so its row is the
    one `solve_split` gives in one process.
    With `run_dir` and no time limit, each split deal's schedule is saved
    there after every round (`save_split`) and taken up again when a
    resumed run meets the deal (`load_split`); the checkpoints of a chunk
    go once its part is written.
    """
    results: dict[int, dict] = {}  # chunk -> {deal index in the chunk: SolveResult}
    payloads: dict[int, dict] = {}
    plans: dict[tuple[int, int], tuple[SplitSolve, RoundResults]] = {}  # (chunk, deal) -> (plan, its round)
    pending = TaskQueue()  # (key, payload): subtrees of split deals and the rest of stopped chunks
    source = iter(tasks)

    def open_round(k: int, i: int, plan: SplitSolve) -> None:
        round_tasks = plan.tasks()
        if round_tasks:
            plans[k, i] = (plan, RoundResults(len(round_tasks)))
            for j, t in enumerate(round_tasks):
                pending.push(k, i, ((k, i, plan.rounds, j), {"subtree": t}))
        else:  # the split deal is settled (or out of nodes or time)
            plans.pop((k, i), None)
            results[k][i] = r = plan.result()
            log.info("game %d: %s%s, %s nodes, %.1f s", payloads[k]["start"] + i, r.outcome,
                     "" if r.score is None else f", best score {r.score}" + (" (proven)" if r.proven_best else
                                                                             f" (at most {r.score_bound})"),
                     f"{r.nodes:,}", r.seconds)

    def feed():
        while True:
            if pending:
                yield pending.pop()
            else:
                item = next(source, None)
                if item is None:
                    if not results:
                        return
                    yield WAIT
                else:
                    k, payload = item
                    results[k], payloads[k] = {}, payload
                    yield item

    with contextlib.closing(executor.run(solve_work, feed(), warm)) as done:
        for key, out in done:
            if isinstance(key, tuple):  # a subtree of a split deal
                k, i, rnd, j = key
                plan, back = plans.get((k, i), (None, None))
                if plan is None or rnd != plan.rounds:
                    continue  # a subtree after a round's first win, searched before the win came back
                n = back.take(j, out)
                if n is None:
                    continue
                level = plan.level
                plan.record(back.results[:n])
                if plan.level > level:
                    log.info("game %d: no win in %d cards or fewer (%s nodes, %.1f s so far)",
                             payloads[k]["start"] + i, level - 1, f"{plan.nodes:,}", time.time() - plan.started)
                if run_dir is not None and plan.deadline is None:  # settled too: a resume then only writes the row
                    save_split(run_dir, payloads[k], i, plan)
                if n < len(back.results):  # a win: the round's subtrees still queued are not needed
                    pending.drop(lambda q: isinstance(q[0], tuple) and q[0][:3] == (k, i, rnd))
                open_round(k, i, plan)
            else:
                k, payload = key, payloads[key]
                results[k].update((out["from"] + j, r) for j, r in enumerate(out["results"]))
                if out["split"] is not None:
                    i, serial, started = out["split"]
                    if i + 1 < payload["stop"] - payload["start"]:
                        pending.push(k, i + 1, (k, {**payload, "from": i + 1}))
                    opts = payload["solve"]
                    t = opts["time_limit"]
                    plan = SplitSolve(_decks(payload)[i], Rules(**payload["rules"]), serial,
                                      first_win=opts["first_win"], node_limit=opts["node_limit"],
                                      horizon=K.DECK_SIZE, use_tt=True, use_sym=True, started=started,
                                      deadline=None if t is None else started + t)
                    state = None if run_dir is None or t is not None else load_split(run_dir, payload, i, plan)
                    if state is not None:
                        plan.restore(state)
                        log.info("game %d: split solve taken up from its checkpoint: the search for a win in %d "
                                 "cards or fewer, round %d (%s nodes so far)", payload["start"] + i, plan.level - 1,
                                 plan.rounds, f"{plan.nodes:,}")
                    else:
                        log.info("game %d: still open after %s nodes; its search for a win in %d cards or fewer "
                                 "is split among the workers", payload["start"] + i, f"{serial.nodes:,}",
                                 plan.level - 1)
                    open_round(k, i, plan)
            for k in [k for k, r in results.items() if len(r) == payloads[k]["stop"] - payloads[k]["start"]]:
                r, payload = results.pop(k), payloads.pop(k)
                yield k, _columns(payload, _decks(payload), [r[i] for i in range(len(r))])
                if run_dir is not None:  # the part is written: its deals' checkpoints are not needed
                    for g in range(payload["start"], payload["stop"]):
                        _split_file(run_dir, g).unlink(missing_ok=True)
    if run_dir is not None:  # every part is written: no checkpoint is left
        with contextlib.suppress(OSError):
            (Path(run_dir) / SPLITS).rmdir()


# --- the job -------------------------------------------------------------------------------------


@documented
@dataclass(frozen=True)
class SolveConfig:
    """Everything that decides a solve run's rows."""

    n: int | None = None
    """Number of deals (with `deals`, None solves every deck of the file)."""
    seed: int = 0
    """Seed of the deals: deal i is the deck `sim run` deals for game i."""
    rules: Rules = field(default_factory=Rules)
    """Rule options."""
    first_win: bool = False
    """Stop at the first win (winnability only); otherwise search for the best score."""
    node_limit: int | None = None
    """Search nodes per deal (reproducible)."""
    time_limit: float | None = None
    """Seconds per deal (makes outcomes depend on the machine)."""
    deals: str | None = None
    """Deal file (Parquet or JSON lines) instead of seeded deals; deal i is row i."""
    deals_sha256: str | None = None
    """Digest of the deal file (filled in when the run starts, checked on resume)."""
    record_deals: bool = False
    """Store each deal's deck in a `deck` column."""
    split_after: int | None = None
    """Serial search nodes after which a deal still unsettled is split into subtrees that idle workers
    share (the schedule is counted in nodes, so its rows do not depend on who helps); 0 never splits;
    None: `default_split_after` (SPLIT_AFTER without a time limit, never with one)."""
    sat_conflicts: int = SAT_CONFLICTS
    """When the serial search leaves a best score open, ask the SAT solver (`sim.solver.sat`) about each
    card count below the best win found (with none found, from the least up), each question stopped after
    this many conflicts; 0: never (the search alone). Best-score mode only."""

    def sat_budget(self) -> int:
        """The SAT questions' conflicts for this run: 0 (none) in first-win mode."""
        return 0 if self.first_win else int(self.sat_conflicts or 0)

    def split_threshold(self) -> int:
        """`split_after`, with None resolved to the default for this run's time limit."""
        return default_split_after(self.time_limit) if self.split_after is None else self.split_after

    def options(self) -> dict:
        """The solver options, as the manifest's "solve" records them."""
        opts = {"first_win": bool(self.first_win), "node_limit": self.node_limit, "time_limit": self.time_limit,
                "split_after": int(self.split_threshold())}
        if self.sat_budget():  # runs with none (and runs from before SAT) record nothing
            opts["sat_conflicts"] = self.sat_budget()
        return opts




def _warm(config: SolveConfig, from_file: bool) -> None:
    warm_up("greedy", seeded=not from_file, decks=from_file)
    warm_up_solver(may_split(config.split_threshold(), config.node_limit))


def _to_compile(config: SolveConfig, from_file: bool) -> str | None:
    what = to_compile("oracle", seeded=not from_file, decks=from_file)  # the solver and greedy's game
    if what is None and may_split(config.split_threshold(), config.node_limit) and not in_cache(split_children):
        what = "split"
    return None if what is None else "the solver (first run only)"


def _payload(config: SolveConfig) -> dict:
    return {"seed": config.seed, "rules": config.rules.as_dict(), "record_deals": config.record_deals,
            "solve": config.options()}


def _settings(config: SolveConfig) -> dict:
    return {"solve": config.options(), "policy": "solver", "policy_args": {}, **runner.deal_fields(config),
            "files": {}}


def config_from_manifest(m: dict) -> SolveConfig:
    """The SolveConfig a manifest records."""
    opts = m.get("solve") or {}
    return SolveConfig(n=m["n"], seed=m["seed"], rules=Rules(**m["rules"]), first_win=bool(opts.get("first_win")),
                       node_limit=opts.get("node_limit"), time_limit=opts.get("time_limit"),
                       split_after=int(opts.get("split_after") or 0), sat_conflicts=int(opts.get("sat_conflicts") or 0),
                       deals=m.get("deals"),
                       deals_sha256=m.get("deals_sha256"), record_deals=m.get("record_deals", False))


def default_out(config: SolveConfig) -> Path:
    """results/solve-seed<S>-n<N>, plus -first-win, the limits (-node_limit<K>, -time_limit<T>), a SAT budget
    other than the default (-sat<K>, -sat0 for none) and non-default rules.

    Every setting that changes the rows is in the name, so solves of the
    same deals with other limits or modes get directories of their own.
    """
    name = (f"solve-seed{config.seed}-n{config.n}" if config.deals is None
            else f"solve-deals-{Path(config.deals).stem}-n{config.n}")
    if config.first_win:
        name += "-first-win"
    if config.node_limit is not None:
        name += f"-node_limit{int(config.node_limit)}"
    if config.time_limit is not None:
        name += f"-time_limit{float(config.time_limit):g}"
    if config.split_threshold() != default_split_after(config.time_limit):
        name += f"-split_after{int(config.split_threshold())}"
    if not config.first_win and config.sat_budget() != SAT_CONFLICTS:
        name += f"-sat{config.sat_budget()}"
    return Path("results") / (name + runner.rules_suffix(config.rules))


def default_chunk_size(n: int, workers: int) -> int:
    """Solving a deal takes from microseconds to the time limit: small chunks keep workers balanced."""
    return max(1, min(SOLVE_CHUNK, math.ceil(n / (32 * max(1, workers)))))


SOLVE = Job(kind="solve", command="solve", unit="deal", work=solve_chunk, frame=solve_frame,
            summarize=summarize_solve, warm=_warm, to_compile=_to_compile, payload=_payload, settings=_settings,
            from_manifest=config_from_manifest, default_out=default_out, default_chunk_size=default_chunk_size,
            drive=drive_solve)
"""`sim solve` as a job of sim.jobs.runner."""


def solve_run(config: SolveConfig, *, out: str | Path | None = None, force: bool = False, workers: int | None = None,
              chunk_size: int | None = None, executor: str = "local", scheduler: str | None = None,
              progress: bool = False, command: str | None = None, notify=None) -> SolveSummary:
    """Solve the deals `config` describes in worker processes and write them under `out`.

    The execution options are `sim.jobs.play.run`'s. Raises UsageError for
    bad settings, RunError when it cannot finish, Interrupted on
    Ctrl-C/SIGTERM (both resumable with `sim.resume`).
    """
    if not isinstance(config, SolveConfig):
        raise TypeError(f"solve_run() takes a SolveConfig, not {type(config).__name__}")
    if not isinstance(config.rules, Rules):
        raise TypeError(f"SolveConfig.rules must be a sim.Rules, not {type(config.rules).__name__} "
                        f"(e.g. sim.Rules(max_pile=3))")
    config = replace(config, **{name: whole(getattr(config, name)) for name in ("node_limit", "sat_conflicts", "split_after")})
    for name in ("node_limit", "sat_conflicts"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                  or value < (1 if name == "node_limit" else 0)):
            raise UsageError(f"{name} must be a {'positive ' if name == 'node_limit' else ''}whole number, "
                             f"not {value!r}", name)
    k = config.split_threshold()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise UsageError(f"split_after must be a whole number of nodes (0: never split), not {k!r}", "split_after")
    for name, value in (("node_limit", config.node_limit), ("split_after", k), ("sat_conflicts", config.sat_conflicts)):
        if isinstance(value, (int, float, np.integer)) and value > MAX_COUNT:
            raise UsageError(too_large(name, value), name)
    if config.deals is not None and config.seed != 0:  # it would only tell two solves of one file apart
        raise UsageError(f"seed {config.seed!r}: a solve of the decks in a deal file uses no seed (a seed picks "
                         f"seeded deals); leave it out", "seed")
    t = config.time_limit
    if t is not None and (isinstance(t, bool) or not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0)):
        raise UsageError(f"time_limit must be a positive number of seconds, not {t!r}", "time_limit")
    return runner.start(SOLVE, config, out=out, force=force, workers=workers, chunk_size=chunk_size,
                        executor=executor, scheduler=scheduler, progress=progress, command=command, notify=notify)
