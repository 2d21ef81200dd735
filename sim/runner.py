"""`sim run` as a library: chunks of games across worker processes, to Parquet, resumable.

A run is a pure function of its settings (policy, n, seed, rules, deal
source): game i always gets the same deck and the same policy stream, so the
rows do not depend on the worker count or the chunk size. Chunk k holds
games [k * chunk_size, (k + 1) * chunk_size) and becomes
``games/part-{k:05d}.parquet``; a part exists only once it is complete
(written to a temporary name, then renamed), which is what makes resuming
exact.
"""

import contextlib
import functools
import logging
import math
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl

from sim import kernels as K
from sim.deals import file_digest, load_deals
from sim.files import remove_temp_files, write_atomic, write_json_atomic
from sim.game import END_NAMES, check_seed, play_decks, play_range, warm_up
from sim.executors import Executor, ExecutorError, make_executor
from sim.game import PolicyError
from sim.pool import TaskFailed
from sim.rules import Rules
from sim.stats import wilson

log = logging.getLogger("sim.runner")

MANIFEST = "manifest.json"
GAMES = "games"
DEFAULT_CHUNK = 50_000
END_ENUM = pl.Enum(list(END_NAMES[: K.END_NO_MOVE + 1]))
"""The `end` column's type: the four ways a game can end."""
_END_CODES = {code: name for code, name in enumerate(END_ENUM.categories)}


class RunError(RuntimeError):
    """A run could not go on (unwritable output, full disk, dead worker); the message says what to do."""


class UsageError(ValueError):
    """Bad settings: nothing was run."""


class Interrupted(RuntimeError):
    """Ctrl-C or SIGTERM stopped the run; finished parts are kept."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run's rows (and how it is split)."""

    policy: str
    """Built-in policy name, entry-point name, or plugin (module:attr, file.py:attr)."""
    n: int
    """Number of games."""
    seed: int = 0
    """Seed of the deals and of the policy's random stream."""
    rules: Rules = field(default_factory=Rules)
    """Rule options."""
    chunk_size: int = DEFAULT_CHUNK
    """Games per part file."""
    deals: str | None = None
    """Deal file (Parquet or JSON lines) instead of seeded deals; game i is row i."""
    deals_sha256: str | None = None
    """Digest of the deal file, checked on resume."""
    record_deals: bool = False
    """Store each game's deck in a `deck` column."""
    policy_args: tuple[tuple[str, str], ...] = ()
    """The policy's --policy-arg values, as given."""
    kind: str = "run"
    """The job: run (play games with a policy) or solve (`sim solve`, see sim.solve_run)."""
    solve: tuple[tuple[str, object], ...] = ()
    """A solve job's options (first_win, node_limit, time_limit)."""

    @property
    def chunks(self) -> int:
        return math.ceil(self.n / self.chunk_size)

    def chunk_range(self, k: int) -> tuple[int, int]:
        start = k * self.chunk_size
        return start, min(start + self.chunk_size, self.n)


@dataclass(frozen=True)
class RunSummary:
    """What a run produced, as the command line prints it."""

    path: Path
    """The run directory."""
    games: int
    """Games in the output."""
    wins: int
    win_rate: float
    win_rate_low: float
    """Lower end of the 95% Wilson interval of the win rate."""
    win_rate_high: float
    mean_score: float | None
    """Mean score of the won games (None without wins)."""
    seconds: float
    """Wall time of this invocation."""
    games_per_s: float
    """Games played by this invocation per second of wall time."""
    status: str
    """complete or incomplete."""

    def text(self) -> str:
        score = "n/a" if self.mean_score is None else f"{self.mean_score:.2f}"
        return "\n".join([
            f"games      {self.games:,}",
            f"wins       {self.wins:,}",
            f"win rate   {self.win_rate:.4%}  (95% CI {self.win_rate_low:.4%} .. {self.win_rate_high:.4%})",
            f"mean score {score} (wins only)",
            f"wall time  {self.seconds:.2f} s  ({self.games_per_s:,.0f} games/s)",
            f"output     {self.path}",
        ])


def parse_count(text: str) -> int:
    """A positive whole number of games: 1000000, 1_000_000, 1e6 or 2.5e5."""
    s = str(text).strip().replace("_", "")
    try:
        value = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            raise UsageError(f"-n {text!r} is not a positive whole number") from None
        if not math.isfinite(f) or not f.is_integer():
            raise UsageError(f"-n {text!r} is not a positive whole number") from None
        value = int(f)
    if value <= 0:
        raise UsageError(f"-n {text!r} is not a positive whole number")
    return value


def default_chunk_size(n: int, workers: int) -> int:
    """Enough chunks for a smooth progress bar and balanced workers, few enough to keep overhead low."""
    return max(1, min(DEFAULT_CHUNK, math.ceil(n / (8 * max(1, workers)))))


def policy_label(policy: str, policy_args=()) -> str:
    """A file-name-safe label of a policy and its arguments (e.g. rollout-samples16)."""
    where, _, attr = policy.rpartition(":")
    label = f"{Path(where).stem}.{attr}" if where else policy
    for key, value in policy_args:
        label += f"-{key}{Path(value).stem if '/' in value else value}"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)


def default_out(config: RunConfig) -> Path:
    policy = policy_label(config.policy, config.policy_args)
    name = f"{policy}-seed{config.seed}-n{config.n}"
    if config.deals:
        name = f"{policy}-deals-{Path(config.deals).stem}-n{config.n}"
    for key, value in config.rules.as_dict().items():
        if value != getattr(Rules(), key):
            name += f"-{key}{value}"
    return Path("results") / name


def part_name(k: int) -> str:
    return f"part-{k:05d}.parquet"


# --- the work of one chunk (runs in a worker) --------------------------------


def play_chunk(task: dict) -> dict:
    """Play one chunk; returns plain numpy columns (the main process writes the part)."""
    t0 = time.perf_counter()
    rules = Rules(**task["rules"])
    args = dict(task["policy_args"])
    if task["decks"] is None:
        cols = play_range(task["seed"], task["start"], task["stop"], task["policy"], rules, task["record_deals"],
                          policy_args=args)
    else:
        cols = play_decks(task["decks"], task["policy"], rules, task["seed"], task["start"], task["record_deals"],
                          policy_args=args)
    seconds = time.perf_counter() - t0
    log.debug("chunk %d: %d games in %.3f s", task["chunk"], len(cols), seconds)
    return {
        "game": cols.game, "won": cols.won, "score": cols.score, "cards_played": cols.cards_played,
        "face_down": cols.face_down, "piles": cols.piles, "end": cols.end, "deck": cols.deck,
    }


def games_frame(cols: dict) -> pl.DataFrame:
    """The Parquet schema of a part: one row per game."""
    frame = pl.DataFrame({
        "game": pl.Series(cols["game"], dtype=pl.UInt64),
        "won": pl.Series(cols["won"], dtype=pl.Boolean),
        "score": pl.Series(cols["score"], dtype=pl.Int8),
        "cards_played": pl.Series(cols["cards_played"], dtype=pl.UInt8),
        "face_down": pl.Series(cols["face_down"], dtype=pl.UInt8),
        "piles": pl.Series(cols["piles"], dtype=pl.UInt8),
        "end": pl.Series(cols["end"], dtype=pl.UInt8),
    }).with_columns(
        pl.when(pl.col("score") >= 0).then(pl.col("score")).cast(pl.UInt8).alias("score"),
        pl.col("end").replace_strict(_END_CODES, return_dtype=END_ENUM),
    )
    if cols.get("deck") is not None:
        frame = frame.with_columns(pl.Series("deck", cols["deck"]).cast(pl.List(pl.UInt8)))
    return frame


# --- manifest ------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_manifest(run_dir: Path) -> dict:
    import json

    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise UsageError(f"{run_dir} is not a run directory (no {MANIFEST})")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunError(f"cannot read {path}: {e}") from None


def config_from_manifest(m: dict) -> RunConfig:
    return RunConfig(
        policy=m["policy"], n=m["n"], seed=m["seed"], rules=Rules(**m["rules"]), chunk_size=m["chunk_size"],
        deals=m.get("deals"), deals_sha256=m.get("deals_sha256"), record_deals=m.get("record_deals", False),
        policy_args=tuple((m.get("policy_args") or {}).items()),
        kind=m.get("kind", "run"), solve=tuple((m.get("solve") or {}).items()),
    )


def _manifest(config: RunConfig, command: str, executor: Executor, sessions: list, status: str,
              parts: dict) -> dict:
    from sim import __version__

    last = sessions[-1] if sessions else {}
    return {
        "kind": config.kind,
        **({"solve": dict(config.solve)} if config.kind == "solve" else {}),
        "command": command,
        "version": __version__,
        "policy": config.policy,
        "policy_args": dict(config.policy_args),
        "n": config.n,
        "seed": config.seed,
        "rules": config.rules.as_dict(),
        "deal_algorithm": K.DEAL_ALGORITHM if config.deals is None else "file",
        "deals": config.deals,
        "deals_sha256": config.deals_sha256,
        "record_deals": config.record_deals,
        "executor": executor.kind,
        "scheduler": executor.scheduler,
        "workers": executor.workers if executor.kind == "local" else None,
        "chunk_size": config.chunk_size,
        "chunks": config.chunks,
        "started": sessions[0]["started"] if sessions else None,
        "ended": last.get("ended"),
        "seconds": round(sum(s.get("seconds", 0.0) for s in sessions), 3),
        "games_per_s": last.get("games_per_s"),
        "status": status,
        "sessions": sessions,
        "parts": dict(sorted(parts.items())),
    }


# --- running -----------------------------------------------------------------------


def _existing_parts(games_dir: Path, config: RunConfig) -> dict[str, int]:
    """Parts already on disk with the row count their chunk should have."""
    done = {}
    for k in range(config.chunks):
        path = games_dir / part_name(k)
        if path.is_file():
            start, stop = config.chunk_range(k)
            try:
                rows = pl.scan_parquet(path).select(pl.len()).collect().item()
            except Exception:  # an unreadable part is simply played again
                rows = -1
            if rows == stop - start:
                done[path.name] = rows
            else:
                log.warning("%s has %d rows, expected %d: playing it again", path.name, rows, stop - start)
    return done


@contextlib.contextmanager
def _interrupt_on_sigterm():
    """Turn SIGTERM into KeyboardInterrupt while the run is in progress (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def summarize(run_dir: Path, seconds: float, played: int, status: str) -> RunSummary:
    games_glob = str(Path(run_dir) / GAMES / "*.parquet")
    if any((Path(run_dir) / GAMES).glob("*.parquet")):
        row = pl.scan_parquet(games_glob).select(
            pl.len().alias("games"),
            pl.col("won").sum().alias("wins"),
            pl.col("score").mean().alias("mean_score"),
        ).collect().row(0, named=True)
    else:
        row = {"games": 0, "wins": 0, "mean_score": None}
    games, wins = int(row["games"]), int(row["wins"] or 0)
    low, high = wilson(wins, games)
    return RunSummary(
        path=Path(run_dir), games=games, wins=wins, win_rate=wins / games if games else math.nan,
        win_rate_low=low, win_rate_high=high, mean_score=row["mean_score"], seconds=seconds,
        games_per_s=played / seconds if seconds > 0 else math.nan, status=status,
    )


@dataclass(frozen=True)
class Job:
    """What differs between kinds of job; chunking, parts, manifest, progress and resume are shared."""

    work: object
    """payload -> numpy columns, run in a worker (pure)."""
    frame: object
    """columns -> the part's DataFrame."""
    summarize: object
    """(run_dir, seconds, rows done, status) -> summary with .text()."""
    warm: object
    """Compiles or loads what `work` needs; takes the RunConfig."""
    unit: str = "game"
    command: str = "run"
    """`sim <command> --resume` finishes it."""


def _warm_run(config: RunConfig, decks: bool = False) -> None:
    warm_up(seeded=not decks, decks=decks, policy=config.policy, policy_args=dict(config.policy_args))


def job_of(config: RunConfig) -> Job:
    if config.kind == "solve":
        from sim import solve_run

        return solve_run.JOB
    if config.kind != "run":
        raise UsageError(f"unknown job kind {config.kind!r} in the manifest")
    return Job(play_chunk, games_frame, summarize, _warm_run)


def _execute(config: RunConfig, run_dir: Path, executor: Executor, command: str, sessions: list,
             progress: bool, decks: np.ndarray | None) -> RunSummary:
    job = job_of(config)
    games_dir = run_dir / GAMES
    remove_temp_files(games_dir)
    remove_temp_files(run_dir)
    parts = _existing_parts(games_dir, config)
    todo = [k for k in range(config.chunks) if part_name(k) not in parts]
    session = {"started": _now(), **executor.describe(), "games": 0}
    if executor.kind == "local":
        executor = Executor("local", min(executor.workers, max(1, len(todo))))
        session["workers"] = executor.workers
    sessions = sessions + [session]
    t0 = time.perf_counter()

    def save(status):
        session["ended"] = _now()
        session["seconds"] = round(time.perf_counter() - t0, 3)
        session["games_per_s"] = round(session["games"] / session["seconds"], 1) if session["seconds"] else None
        write_json_atomic(run_dir / MANIFEST, _manifest(config, command, executor, sessions, status, parts))

    try:
        save("incomplete")
    except OSError as e:
        raise RunError(f"cannot write to {run_dir}: {e.strerror or e}") from None

    def tasks():
        for k in todo:
            start, stop = config.chunk_range(k)
            yield k, {
                "chunk": k, "seed": config.seed, "start": start, "stop": stop, "policy": config.policy,
                "policy_args": config.policy_args,
                "rules": config.rules.as_dict(), "record_deals": config.record_deals,
                "decks": None if decks is None else decks[start:stop],
                **({"solve": dict(config.solve)} if config.kind == "solve" else {}),
            }

    from tqdm import tqdm

    bar = tqdm(total=config.n, initial=sum(parts.values()), unit=job.unit, unit_scale=True, disable=not progress,
               file=sys.stderr, smoothing=0.1, dynamic_ncols=True)
    status = "incomplete"
    try:
        warm = functools.partial(job.warm, config, decks=decks is not None)
        with _interrupt_on_sigterm(), contextlib.closing(executor.run(job.work, tasks(), warm)) as results:
            for k, cols in results:
                name = part_name(k)
                frame = job.frame(cols)
                try:
                    write_atomic(games_dir / name, frame.write_parquet)
                except OSError as e:
                    raise RunError(f"cannot write {games_dir / name}: {e.strerror or e}") from None
                parts[name] = frame.height
                session["games"] += frame.height
                bar.update(frame.height)
        status = "complete"
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; {len(parts)} of {config.chunks} parts are done. "
                          f"Finish with: sim {job.command} --resume {run_dir}") from None
    except RunError as e:
        raise RunError(f"{e}. The run is resumable: sim {job.command} --resume {run_dir}") from None
    except PolicyError as e:  # raised on a Dask worker, re-raised here
        raise RunError(str(e)) from e
    except ExecutorError as e:
        raise RunError(f"{e}. Finished parts are kept; finish with: sim {job.command} --resume {run_dir}") from None
    except TaskFailed as e:
        if e.error_type == "PolicyError":  # the policy's fault: resuming would fail the same way
            raise RunError(e.error_message) from e
        raise RunError(f"{e}. Finished parts are kept; finish with: sim {job.command} --resume {run_dir}") from e
    except Exception as e:  # WorkerDied
        raise RunError(f"{e}. Finished parts are kept; finish with: sim {job.command} --resume {run_dir}") from e
    finally:
        bar.close()
        with contextlib.suppress(OSError):
            save(status)
    return job.summarize(run_dir, session["seconds"], session["games"], status)


def run(policy: str = "greedy", n: int | str = 1000, seed: int = 0, rules: Rules | None = None,
        workers: int | None = None, chunk_size: int | None = None, out: str | Path | None = None,
        deals: str | Path | None = None, record_deals: bool = False, force: bool = False,
        progress: bool = False, command: str | None = None, policy_args: dict | None = None,
        executor: str = "local", scheduler: str | None = None) -> RunSummary:
    """Play `n` games with `policy` in worker processes and write them under `out`.

    Returns the summary, whose `path` is the run directory. Raises UsageError
    for bad settings, RunError when the run cannot finish, Interrupted on
    Ctrl-C/SIGTERM (both leave the run resumable with `resume`).
    """
    from sim.plugins import resolve

    policy_args = {str(k): str(v) for k, v in (policy_args or {}).items()}
    try:
        resolve(policy, policy_args)
        seed = check_seed(seed)
        rules = rules or Rules()
    except ValueError as e:
        raise UsageError(str(e)) from None
    workers = int(workers or os.cpu_count() or 1)
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    try:
        chosen = make_executor(executor, workers, scheduler)
    except ExecutorError as e:
        raise UsageError(str(e)) from None
    decks = None
    digest = None
    if deals is not None:
        try:
            decks = load_deals(deals)
        except ValueError as e:
            raise UsageError(str(e)) from None
        digest = file_digest(Path(deals))
        n = len(decks) if n is None else n
    n = parse_count(n) if isinstance(n, str) else n
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise UsageError(f"-n {n!r} is not a positive whole number")
    if decks is not None and n > len(decks):
        raise UsageError(f"-n {n} is more than the {len(decks)} decks in {deals}")
    if chunk_size is None:
        chunk_size = default_chunk_size(n, workers)
    if chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1, not {chunk_size}")
    config = RunConfig(policy=policy, n=int(n), seed=seed, rules=rules, chunk_size=int(chunk_size),
                       deals=None if deals is None else str(Path(deals).resolve()), deals_sha256=digest,
                       record_deals=record_deals, policy_args=tuple(policy_args.items()))
    run_dir = Path(out) if out is not None else default_out(config)
    _prepare_dir(run_dir, force)
    # Compile or load once, here, before any worker exists.
    _warm_run(config, decks=decks is not None)
    command = command or "sim.run(" + ", ".join(f"{k}={v!r}" for k, v in [
        ("policy", policy), ("n", n), ("seed", seed), ("rules", rules.as_dict())]) + ")"
    return _execute(config, run_dir, chosen, command, [], progress, decks)


def resume(run_dir: str | Path, workers: int | None = None, progress: bool = False,
           command: str | None = None, executor: str | None = None, scheduler: str | None = None) -> RunSummary:
    """Finish an interrupted run with the settings its manifest recorded; only missing parts are played.

    The executor is the one the run used unless another is given.
    """
    run_dir = Path(run_dir)
    m = read_manifest(run_dir)
    config = config_from_manifest(m)
    decks = None
    if config.deals is not None:
        if not Path(config.deals).is_file():
            raise UsageError(f"the run's deal file {config.deals} is gone; it is needed to resume")
        if file_digest(Path(config.deals)) != config.deals_sha256:
            raise UsageError(f"the run's deal file {config.deals} has changed since the run started")
        decks = load_deals(config.deals)
    workers = int(workers or m.get("workers") or os.cpu_count() or 1)
    kind = executor or m.get("executor") or "local"
    try:
        chosen = make_executor(kind, workers, scheduler or (m.get("scheduler") if kind == "dask" else None))
    except ExecutorError as e:
        raise UsageError(str(e)) from None
    job_of(config).warm(config, decks=decks is not None)
    return _execute(config, run_dir, chosen, m.get("command", ""), m.get("sessions", []), progress, decks)


def _prepare_dir(run_dir: Path, force: bool) -> None:
    if run_dir.exists():
        if not run_dir.is_dir():
            raise UsageError(f"--out {run_dir} exists and is not a directory")
        is_run = (run_dir / MANIFEST).exists() or (run_dir / GAMES).exists()
        if is_run and not force:
            raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} to finish it "
                             f"or --force to replace it")
        if not is_run and any(run_dir.iterdir()):
            raise UsageError(f"--out {run_dir} is a non-empty directory that holds no run; choose another")
        if is_run:
            try:
                (run_dir / MANIFEST).unlink(missing_ok=True)
                if (run_dir / GAMES).exists():
                    shutil.rmtree(run_dir / GAMES)
            except OSError as e:
                raise RunError(f"cannot clear {run_dir}: {e.strerror or e}") from None
    try:
        (run_dir / GAMES).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create {run_dir / GAMES}: {e.strerror or e}") from None


def command_line() -> str:
    return shlex.join(["sim", *sys.argv[1:]])
