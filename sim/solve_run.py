"""`sim solve` as a library, the `oracle` policy, and reports of solve runs.

A solve run is a job of `sim.runner` (kind ``solve``): the same chunks,
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

The `oracle` policy (``sim run --policy oracle``, and so ``sim compare
--policy lookahead --policy oracle``) is the solver playing a game: it
**sees the stock**, unlike every other policy. It plays the best winning
line the solver finds within ``--policy-arg nodes=N`` search nodes per deal
(default 100,000; reproducible, no time limit); when the solver finds no
win there, it plays greedy's game. Its game rows are what replaying those
moves through the engine gives.
"""

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from sim import kernels as K
from sim.game import GameColumns, check_seed, deal, deal_batch, play_decks, validate_decks
from sim.rules import Rules
from sim.runner import Job
from sim.solver import OUTCOMES, SolveResult, Solver, shared_solver, play_line
from sim.stats import wilson

OUTCOME_ENUM = pl.Enum(list(OUTCOMES))
"""The `outcome` column's type."""
ORACLE_NODES = 100_000
"""The oracle policy's default node limit per deal."""
ORACLE_ROW = ("oracle", "SEES THE STOCK: the best winning line the solver (sim solve) finds in `nodes` nodes, "
              "else greedy's game.", f"nodes={ORACLE_NODES}")
"""The oracle's line in `sim policies`."""
SOLVE_CHUNK = 1_000


# --- one chunk of deals (runs in a worker) ------------------------------------------------


def _decks(task: dict) -> np.ndarray:
    if task["decks"] is not None:
        return validate_decks(task["decks"])
    decks = np.empty((task["stop"] - task["start"], K.DECK_SIZE), np.uint8)
    deal_batch(np.uint64(task["seed"]), np.int64(task["start"]), decks)
    return decks


def solve_decks(decks: np.ndarray, rules: Rules | None = None, first_win: bool = False,
                node_limit: int | None = None, time_limit: float | None = None) -> list[SolveResult]:
    """`sim.solve` on each row of an (n, 40) array of decks, in this process."""
    rules = rules or Rules()
    solver = shared_solver()
    return [solver.solve(d, rules, first_win, node_limit, time_limit, K.DECK_SIZE, True, True)
            for d in validate_decks(decks)]


def solve_chunk(task: dict) -> dict:
    """Solve one chunk of deals; returns plain columns (the main process writes the part)."""
    opts = task["solve"]
    decks = _decks(task)
    results = solve_decks(decks, Rules(**task["rules"]), opts["first_win"], opts["node_limit"], opts["time_limit"])
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


def solve_frame(cols: dict) -> pl.DataFrame:
    """The Parquet schema of a solve part: one row per deal."""
    frame = pl.DataFrame({
        "game": pl.Series(cols["game"], dtype=pl.UInt64),
        "outcome": pl.Series(cols["outcome"], dtype=pl.UInt8),
        "score": pl.Series(cols["score"], dtype=pl.Int8),
        "proven_best": pl.Series(cols["proven_best"], dtype=pl.Boolean),
        "nodes": pl.Series(cols["nodes"], dtype=pl.UInt64),
        "seconds": pl.Series(cols["seconds"], dtype=pl.Float64),
        "moves": pl.Series(cols["moves"], dtype=pl.List(pl.UInt8)),
        "score_bound": pl.Series(cols["score_bound"], dtype=pl.Int8),
    }).with_columns(
        pl.when(pl.col("score") >= 0).then(pl.col("score")).cast(pl.UInt8).alias("score"),
        pl.when(pl.col("score_bound") >= 0).then(pl.col("score_bound")).cast(pl.UInt8).alias("score_bound"),
        pl.col("outcome").replace_strict(dict(enumerate(OUTCOMES)), return_dtype=OUTCOME_ENUM),
    )
    if cols.get("deck") is not None:
        frame = frame.with_columns(pl.Series("deck", cols["deck"]).cast(pl.List(pl.UInt8)))
    return frame


# --- the oracle policy ------------------------------------------------------------------------


def oracle_options(policy_args: dict | None) -> int:
    """The oracle's node limit from its --policy-arg values (ValueError when bad)."""
    args = dict(policy_args or {})
    unknown = set(args) - {"nodes"}
    if unknown:
        raise ValueError(f"policy 'oracle' has no parameter {', '.join(sorted(unknown))}; it takes: nodes")
    text = str(args.get("nodes", ORACLE_NODES))
    try:
        nodes = int(float(text.replace("_", "")))
    except ValueError:
        nodes = 0
    if not 1 <= nodes <= 10**12:
        raise ValueError(f"policy 'oracle': nodes={text!r} is not a positive integer")
    return nodes


def _oracle_line(solver: Solver, deck: np.ndarray, rules: Rules, nodes: int, state, fired):
    """(end code, cards played, moves) of the solver's best line for `deck`, or None when it found no win."""
    result = solver.solve(deck, rules, False, nodes, None, K.DECK_SIZE, True, True)
    if result.outcome != "won":
        return None
    moves = np.array(result.moves, np.int64)
    code, played = play_line(deck.astype(np.int64), moves, len(moves), rules.as_array(), state, fired)
    if code != K.END_WIN or K.DECK_SIZE - played != result.score:  # never: the tests replay every line
        raise RuntimeError(f"the solver's line does not replay to its win: {result}")
    return code, played, result.moves


def oracle_columns(decks, seed: int, first_game: int, rules: Rules, record_deals: bool = False,
                   args: dict | None = None):
    """Play decks with the oracle: the solver's best line, else greedy's game (sim.game.GameColumns)."""
    nodes = oracle_options(args)
    decks = validate_decks(decks)
    games = play_decks(decks, "greedy", rules, seed, first_game, record_deals)
    cols = {k: np.array(getattr(games, k)) for k in ("won", "score", "cards_played", "face_down", "piles", "end")}
    solver = shared_solver()
    state = np.empty(K.STATE_SIZE, np.int64)
    fired = np.zeros(K.DECK_SIZE, np.int64)
    for i, deck in enumerate(decks):
        line = _oracle_line(solver, deck, rules, nodes, state, fired)
        if line is None:
            continue  # greedy's game stands
        code, played, _ = line
        cols["won"][i] = True
        cols["score"][i] = K.DECK_SIZE - played
        cols["cards_played"][i] = played
        cols["face_down"][i] = state[K.FACE_DOWN_COUNT]
        cols["piles"][i] = state[K.PILES]
        cols["end"][i] = code
    return GameColumns(game=games.game, deck=games.deck, **cols)


def oracle_trace(deck, rules: Rules, args: dict | None = None):
    """sim.game.trace for the oracle: (end code, cards played, moves, fired flags, final state)."""
    from sim.game import trace

    nodes = oracle_options(args)
    cards = validate_decks(np.array([deck]))[0]
    state = np.empty(K.STATE_SIZE, np.int64)
    fired = np.zeros(K.DECK_SIZE, np.int64)
    line = _oracle_line(shared_solver(), cards, rules, nodes, state, fired)
    if line is None:
        return trace(cards, "greedy", rules)
    code, played, moves = line
    return int(code), int(played), list(moves), fired[:played].tolist(), state


def warm_up_solver() -> None:
    """Compile (or load from numba's cache) the solver, with a small table, before workers start."""
    small = Solver(tt_bits=8)
    deck = np.array(deal(0, 0), np.uint8)
    small.solve(deck, Rules(), False, 2_000, None, K.DECK_SIZE, True, True)
    play_line(deck.astype(np.int64), np.full(K.DECK_SIZE, K.CENTRE, np.int64), 1, Rules().as_array(),
              np.empty(K.STATE_SIZE, np.int64), np.zeros(K.DECK_SIZE, np.int64))


# --- summary and report ------------------------------------------------------------------------


@dataclass(frozen=True)
class SolveSummary:
    """What a solve run found, as the command line prints it (and `sim report` shows)."""

    path: Path
    deals: int
    won: int
    lost: int
    unresolved: int
    winnable_low: float
    """Lower end of the 95% Wilson interval of the winnable share, unresolved deals counted as losses."""
    winnable_high: float
    """Upper end, unresolved deals counted as wins."""
    proven: int
    """Won deals whose best score is proven."""
    score_counts: tuple[tuple[int, int, int], ...]
    """(score, won deals with that best score found, of which proven), for every score that occurs."""
    mean_score: float | None
    """Mean best score found, over won deals."""
    mean_proven: float | None
    """Mean best score over the deals whose best is proven."""
    mean_bound: float | None
    """Mean of the proven upper bounds of the best scores, over won deals: the true mean lies
    between mean_score and this."""
    median_seconds: float | None
    p99_seconds: float | None
    median_nodes: float | None
    p99_nodes: float | None
    seconds: float
    """Wall time of this invocation."""
    deals_per_s: float
    status: str
    options: dict
    """The run's solver options (first_win, node_limit, time_limit)."""

    def lines(self) -> list[str]:
        d = self.deals or 1
        digits = max(2, len(str(self.deals)) - 3)  # enough to tell the interval's ends apart
        pct = lambda k: f"{k / d:.{digits}%}"  # noqa: E731
        limits = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.options.items()
                           if k != "first_win" and v is not None) or "no limit"
        out = [
            f"deals        {self.deals:,}   ({'first win only' if self.options.get('first_win') else 'best score'}"
            f"; {limits})",
            f"won          {self.won:,} ({pct(self.won)})   lost {self.lost:,} ({pct(self.lost)})   "
            f"unresolved {self.unresolved:,} ({pct(self.unresolved)})",
            f"winnable     {pct(self.won)} .. {pct(self.won + self.unresolved)}   "
            f"(95% CI {pct(self.winnable_low * d)} .. {pct(self.winnable_high * d)}; "
            f"unresolved counted as lost .. as won)",
        ]
        if self.won and self.options.get("first_win"):
            out.append(f"first win    mean score {self.mean_score:.3f} of the first win found (not the best score; "
                       f"proven best on {self.proven:,} deals)")
        elif self.won:
            out.append(f"best score   mean {self.mean_score:.3f} over won deals (the true mean is at most "
                       f"{self.mean_bound:.3f}); proven best on {self.proven:,} of {self.won:,} "
                       f"({self.proven / self.won:.2%})"
                       + ("" if self.mean_proven is None else f", mean {self.mean_proven:.3f} over those"))
            out.append("  score   deals   proven   share")
            for score, k, p in self.score_counts:
                out.append(f"  {score:5d} {k:7,d} {p:8,d}   {k / d:6.2%}")
        if self.median_seconds is not None:
            out.append(f"per deal     median {1000 * self.median_seconds:.3f} ms, {self.median_nodes:,.0f} nodes; "
                       f"99th percentile {1000 * self.p99_seconds:,.1f} ms, {self.p99_nodes:,.0f} nodes")
        return out

    def text(self) -> str:
        return "\n".join(self.lines() + [
            f"wall time    {self.seconds:.2f} s  ({self.deals_per_s:,.1f} deals/s)",
            f"output       {self.path}",
        ])

    def report(self) -> str:
        """The text `sim report` prints for a solve run."""
        from sim.runner import read_manifest

        m = read_manifest(self.path)
        head = [f"run     {self.path}   (sim solve)",
                f"deals   {m.get('deal_algorithm')} seed {m.get('seed')}   n {m.get('n', 0):,}   "
                f"rules {_rules_text(m.get('rules', {}))}   status {self.status}"]
        if self.status != "complete":
            head.append(f"WARNING: the run is {self.status}; finish it with: sim solve --resume {self.path}")
        return "\n".join(head + [""] + self.lines()) + "\n"

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["path"] = str(self.path)
        d["score_counts"] = [{"score": s, "deals": k, "proven": p} for s, k, p in self.score_counts]
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def _rules_text(rules: dict) -> str:
    default = Rules().as_dict()
    changed = [f"{k}={v}" for k, v in rules.items() if default.get(k) != v]
    return ", ".join(changed) if changed else "default"


def summarize_solve(run_dir: Path, seconds: float, solved: int, status: str) -> SolveSummary:
    from sim.runner import GAMES, read_manifest

    run_dir = Path(run_dir)
    options = dict(read_manifest(run_dir).get("solve") or {})
    parts = str(run_dir / GAMES / "*.parquet")
    if any((run_dir / GAMES).glob("*.parquet")):
        lf = pl.scan_parquet(parts).select("outcome", "score", "proven_best", "nodes", "seconds", "score_bound")
        counts = dict(lf.group_by("outcome").len().collect().iter_rows())
        scores = (lf.filter(pl.col("outcome") == "won").group_by("score")
                  .agg(pl.len().alias("k"), pl.col("proven_best").sum().alias("p")).sort("score").collect())
        stats = lf.select(
            pl.col("seconds").median().alias("s50"), pl.col("seconds").quantile(0.99, "higher").alias("s99"),
            pl.col("nodes").median().alias("n50"), pl.col("nodes").quantile(0.99, "higher").alias("n99"),
            pl.col("score").mean().alias("mean"),
            pl.col("score").filter(pl.col("proven_best")).mean().alias("mean_proven"),
            pl.col("score_bound").filter(pl.col("outcome") == "won").mean().alias("mean_bound"),
        ).collect().row(0, named=True)
    else:
        counts, scores, stats = {}, None, {}
    won, lost, unresolved = (int(counts.get(o, 0)) for o in OUTCOMES)
    deals = won + lost + unresolved
    low = wilson(won, deals)[0] if deals else math.nan
    high = wilson(won + unresolved, deals)[1] if deals else math.nan
    score_counts = tuple((int(s), int(k), int(p)) for s, k, p in scores.iter_rows()) if scores is not None else ()
    return SolveSummary(
        path=run_dir, deals=deals, won=won, lost=lost, unresolved=unresolved, winnable_low=low, winnable_high=high,
        proven=sum(p for _, _, p in score_counts), score_counts=score_counts, mean_score=stats.get("mean"),
        mean_proven=stats.get("mean_proven"), mean_bound=stats.get("mean_bound"), median_seconds=stats.get("s50"), p99_seconds=stats.get("s99"),
        median_nodes=stats.get("n50"), p99_nodes=stats.get("n99"), seconds=seconds,
        deals_per_s=solved / seconds if seconds > 0 else math.nan, status=status, options=options,
    )


def is_solve_run(run_dir) -> bool:
    """Does `run_dir` hold a solve run (manifest kind "solve")?"""
    import json

    try:
        return json.loads((Path(run_dir) / "manifest.json").read_text()).get("kind") == "solve"
    except (OSError, ValueError):
        return False


def load_solve_report(run_dir) -> SolveSummary:
    from sim.runner import read_manifest

    m = read_manifest(Path(run_dir))
    return summarize_solve(Path(run_dir), float(m.get("seconds") or 0.0),
                           sum((m.get("parts") or {}).values()), m.get("status", "unknown"))


def render_solve_reports(run_dirs, fmt: str = "text") -> str:
    """`sim report` on solve runs: winnability with unresolved deals bracketed, best-score distribution."""
    import json

    reports = [load_solve_report(d) for d in run_dirs]
    if fmt == "json":
        return json.dumps({"solve_runs": [r.to_dict() for r in reports]}, indent=2) + "\n"
    if fmt == "markdown":
        blocks = []
        for r in reports:
            blocks.append("\n".join([f"## {r.path.name} (sim solve)", "", "```", r.report().rstrip(), "```", ""]))
        return "# Solve report\n\n" + "\n".join(blocks)
    return ("\n" + "=" * 80 + "\n\n").join(r.report() for r in reports)


# --- the job -------------------------------------------------------------------------------------


def _warm(config, decks: bool = False) -> None:
    from sim.game import warm_up

    warm_up(seeded=not decks, decks=decks)
    warm_up_solver()


JOB = Job(solve_chunk, solve_frame, summarize_solve, _warm, unit="deal", command="solve")
"""A solve run as a job of sim.runner."""


def default_out(n: int, seed: int, rules: Rules, deals: str | None, first_win: bool) -> Path:
    name = f"solve-seed{seed}-n{n}" if deals is None else f"solve-deals-{Path(deals).stem}-n{n}"
    if first_win:
        name += "-first-win"
    for key, value in rules.as_dict().items():
        if value != getattr(Rules(), key):
            name += f"-{key}{value}"
    return Path("results") / name


def default_chunk_size(n: int, workers: int) -> int:
    """Solving a deal takes from microseconds to the time limit: small chunks keep workers balanced."""
    return max(1, min(SOLVE_CHUNK, math.ceil(n / (32 * max(1, workers)))))


def solve_run(n: int | str | None = None, seed: int = 0, rules: Rules | None = None, first_win: bool = False,
              node_limit: int | None = None, time_limit: float | None = None, workers: int | None = None,
              chunk_size: int | None = None, out: str | Path | None = None, deals: str | Path | None = None,
              record_deals: bool = False, force: bool = False, progress: bool = False,
              command: str | None = None, executor: str = "local", scheduler: str | None = None) -> SolveSummary:
    """Solve `n` deals of `seed` (or of a deal file) in worker processes and write them under `out`.

    Raises runner.UsageError for bad settings, RunError when it cannot
    finish, Interrupted on Ctrl-C/SIGTERM (both resumable with
    `sim.runner.resume`, which knows a solve run from its manifest).
    """
    from sim import runner
    from sim.deals import file_digest, load_deals
    from sim.executors import ExecutorError, make_executor

    UsageError = runner.UsageError
    try:
        seed = check_seed(seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    rules = rules or Rules()
    if node_limit is not None and (isinstance(node_limit, bool) or int(node_limit) < 1):
        raise UsageError(f"--node-limit must be a positive whole number, not {node_limit!r}")
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise UsageError(f"--time-limit must be a positive number of seconds, not {time_limit!r}")
    workers = int(workers or os.cpu_count() or 1)
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    try:
        chosen = make_executor(executor, workers, scheduler)
    except ExecutorError as e:
        raise UsageError(str(e)) from None
    decks = digest = None
    if deals is not None:
        try:
            decks = load_deals(deals)
        except ValueError as e:
            raise UsageError(str(e)) from None
        digest = file_digest(Path(deals))
        n = len(decks) if n is None else n
    if n is None:
        raise UsageError("-n is required (e.g. -n 2000), unless --deals gives the decks")
    n = runner.parse_count(n) if isinstance(n, str) else n
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise UsageError(f"-n {n!r} is not a positive whole number")
    if decks is not None and n > len(decks):
        raise UsageError(f"-n {n} is more than the {len(decks)} decks in {deals}")
    chunk_size = default_chunk_size(n, workers) if chunk_size is None else chunk_size
    if chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1, not {chunk_size}")
    options = (("first_win", bool(first_win)), ("node_limit", None if node_limit is None else int(node_limit)),
               ("time_limit", None if time_limit is None else float(time_limit)))
    config = runner.RunConfig(policy="solver", n=int(n), seed=seed, rules=rules, chunk_size=int(chunk_size),
                              deals=None if deals is None else str(Path(deals).resolve()), deals_sha256=digest,
                              record_deals=record_deals, kind="solve", solve=options)
    run_dir = Path(out) if out is not None else default_out(int(n), seed, rules, deals, first_win)
    runner._prepare_dir(run_dir, force)
    _warm(config, decks=decks is not None)  # once, here, before any worker exists
    command = command or f"sim.solve_run.solve_run(n={n!r}, seed={seed!r}, first_win={first_win!r})"
    return runner._execute(config, run_dir, chosen, command, [], progress, decks)
