"""The generic chunked job: a run directory of Parquet parts, a manifest, workers, progress, resume.

A job (`Job`: the play job of `sim.jobs.play`, the solve job of
`sim.jobs.solve`) says what one chunk computes and how its rows look; this
module does the rest the same way for both. A job's rows are a pure
function of its config (what decides the rows), never of how it is
executed (workers, chunk size, executor): chunk k holds rows
[k * chunk_size, (k + 1) * chunk_size) and becomes
``games/part-{k:05d}.parquet``; a part exists only once it is complete
(written to a temporary name, then renamed), which is what makes resuming
exact.
"""

import contextlib
import functools
import json
import logging
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sim import kernels as K
from sim.engine.cards import MAX_GAME, check_seed
from sim.jobs.deal_files import file_digest, load_deals
from sim.jobs.executors import Executor, ExecutorError, make_executor
from sim.jobs.files import remove_temp_files, write_atomic, write_json_atomic
from sim.jobs.pool import TaskFailed
from sim.errors import Interrupted, PolicyError, RunError, UsageError, parse_count
from sim.version import __version__

__all__ = ["Interrupted", "Job", "RunError", "UsageError", "parse_count", "read_manifest", "resume", "start"]

log = logging.getLogger("sim.runner")

MANIFEST = "manifest.json"
GAMES = "games"


@dataclass(frozen=True)
class Job:
    """One kind of chunked job; chunking, parts, manifest, progress and resume are the runner's."""

    kind: str
    """The manifest's "kind": run or solve."""
    command: str
    """The `sim` command that makes and resumes it (`sim <command> --resume DIR`)."""
    unit: str
    """What a row is, for the progress bar: game or deal."""
    work: Callable[[dict], dict]
    """payload -> numpy columns; runs in a worker, pure."""
    frame: Callable[[dict], object]
    """columns -> the part's polars DataFrame."""
    summarize: Callable[[Path, float, int, str], object]
    """(run_dir, seconds, rows done, status) -> a summary with .text()."""
    warm: Callable[[object, bool], None]
    """(config, from a deal file) -> None: compiles or loads what `work` needs, before workers start."""
    payload: Callable[[object], dict]
    """config -> what every chunk's payload carries besides its rows and decks."""
    settings: Callable[[object], dict]
    """config -> its manifest fields."""
    from_manifest: Callable[[dict], object]
    """manifest -> config."""
    default_out: Callable[[object], Path]
    """config -> the run directory when none is given."""
    default_chunk_size: Callable[[int, int], int]
    """(rows, workers) -> chunk size when none is given."""


def part_name(k: int) -> str:
    """File name of part k."""
    return f"part-{k:05d}.parquet"


def chunk_count(n: int, chunk_size: int) -> int:
    """Number of chunks (and parts) of a job of n rows."""
    return math.ceil(n / chunk_size)


def rules_suffix(rules) -> str:
    """The non-default rule options as a directory-name suffix (e.g. -max_face_down5)."""
    default = type(rules)()
    return "".join(f"-{key}{value}" for key, value in rules.as_dict().items() if value != getattr(default, key))


# --- checking a config --------------------------------------------------------------------


def checked_rows(config):
    """(config with n and the deal file's absolute path and digest settled, decks or None); UsageError when bad.

    A config names its deal source: seeded deals (`deals` None) or a deal
    file, whose decks are loaded here once and whose digest is recorded.
    """
    try:
        check_seed(config.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    decks = None
    n = config.n
    if config.deals is not None:
        try:
            decks = load_deals(config.deals)
        except ValueError as e:
            raise UsageError(str(e)) from None
        n = len(decks) if n is None else n
        config = replace(config, deals=str(Path(config.deals).resolve()), deals_sha256=file_digest(Path(config.deals)))
    if n is None:
        raise UsageError("n is required (e.g. 1e6), unless deals gives the decks", "n")
    if isinstance(n, str):
        n = parse_count(n)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise UsageError(f"n {n!r} is not a positive whole number", "n")
    if n > MAX_GAME:
        raise UsageError(f"n {n} is more than the {MAX_GAME:,} games a seed has", "n")
    if decks is not None and n > len(decks):
        raise UsageError(f"n {n} is more than the {len(decks)} decks in {config.deals}", "n")
    return replace(config, n=int(n)), decks


def _executor(kind: str, workers: int | None, scheduler: str | None) -> Executor:
    if workers is not None and workers < 1:
        raise UsageError(f"workers must be at least 1, not {workers}", "workers")
    try:
        return make_executor(kind, workers, scheduler)
    except ExecutorError as e:
        raise UsageError(str(e)) from None


# --- manifest ------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_manifest(run_dir: Path) -> dict:
    """The run directory's manifest; UsageError when there is none, RunError when it cannot be read."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise UsageError(f"{run_dir} is not a run directory (no {MANIFEST})")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunError(f"cannot read {path}: {e}") from None


def deal_fields(config) -> dict:
    """The manifest fields of a config's deal source (the same for every job)."""
    return {
        "n": config.n,
        "seed": config.seed,
        "rules": config.rules.as_dict(),
        "deal_algorithm": K.DEAL_ALGORITHM if config.deals is None else "file",
        "deals": config.deals,
        "deals_sha256": config.deals_sha256,
        "record_deals": config.record_deals,
    }


@dataclass
class _Progress:
    """What the manifest records of a job's execution, updated as parts are written."""

    executor: Executor
    chunk_size: int
    command: str
    sessions: list
    parts: dict


def _manifest(job: Job, config, p: _Progress, status: str) -> dict:
    last = p.sessions[-1] if p.sessions else {}
    settings = job.settings(config)
    return {
        "kind": job.kind,
        **({"solve": settings.pop("solve")} if "solve" in settings else {}),
        "command": p.command,
        "version": __version__,
        **settings,
        "executor": p.executor.kind,
        "scheduler": p.executor.scheduler,
        "workers": p.executor.workers if p.executor.kind == "local" else None,
        "chunk_size": p.chunk_size,
        "chunks": chunk_count(config.n, p.chunk_size),
        "started": p.sessions[0]["started"] if p.sessions else None,
        "ended": last.get("ended"),
        "seconds": round(sum(s.get("seconds", 0.0) for s in p.sessions), 3),
        "games_per_s": last.get("games_per_s"),
        "status": status,
        "sessions": p.sessions,
        "parts": dict(sorted(p.parts.items())),
    }


# --- running ------------------------------------------------------------------------------------


def _existing_parts(games_dir: Path, n: int, chunk_size: int) -> dict[str, int]:
    """Parts already on disk with the row count their chunk should have."""
    import polars as pl

    done = {}
    for k in range(chunk_count(n, chunk_size)):
        path = games_dir / part_name(k)
        if path.is_file():
            want = min(chunk_size, n - k * chunk_size)
            try:
                rows = pl.scan_parquet(path).select(pl.len()).collect().item()
            except Exception:  # an unreadable part is simply played again
                rows = -1
            if rows == want:
                done[path.name] = rows
            else:
                log.warning("%s has %d rows, expected %d: playing it again", path.name, rows, want)
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


def _execute(job: Job, config, run_dir: Path, p: _Progress, progress: bool, decks: np.ndarray | None):
    """Play the chunks whose part is missing, write each part as it comes, keep the manifest current."""
    from tqdm import tqdm

    games_dir = run_dir / GAMES
    resume_hint = f"sim {job.command} --resume {run_dir}"
    remove_temp_files(games_dir)
    remove_temp_files(run_dir)
    p.parts = _existing_parts(games_dir, config.n, p.chunk_size)
    todo = [k for k in range(chunk_count(config.n, p.chunk_size)) if part_name(k) not in p.parts]
    session = {"started": _now(), **p.executor.describe(), "games": 0}
    if p.executor.kind == "local":  # no idle workers
        p.executor = Executor("local", min(p.executor.workers, max(1, len(todo))))
        session["workers"] = p.executor.workers
    p.sessions = p.sessions + [session]
    t0 = time.perf_counter()

    def save(status):
        session["ended"] = _now()
        session["seconds"] = round(time.perf_counter() - t0, 3)
        session["games_per_s"] = round(session["games"] / session["seconds"], 1) if session["seconds"] else None
        write_json_atomic(run_dir / MANIFEST, _manifest(job, config, p, status))

    try:
        save("incomplete")
    except OSError as e:
        raise RunError(f"cannot write to {run_dir}: {e.strerror or e}") from None

    common = job.payload(config)

    def tasks():
        for k in todo:
            start = k * p.chunk_size
            stop = min(start + p.chunk_size, config.n)
            yield k, {"chunk": k, "start": start, "stop": stop, **common,
                      "decks": None if decks is None else decks[start:stop]}

    bar = tqdm(total=config.n, initial=sum(p.parts.values()), unit=job.unit, unit_scale=True, disable=not progress,
               file=sys.stderr, smoothing=0.1, dynamic_ncols=True)
    status = "incomplete"
    try:
        warm = functools.partial(job.warm, config, decks is not None)  # Dask workers warm themselves
        with _interrupt_on_sigterm(), contextlib.closing(p.executor.run(job.work, tasks(), warm)) as results:
            for k, cols in results:
                name = part_name(k)
                frame = job.frame(cols)
                try:
                    write_atomic(games_dir / name, frame.write_parquet)
                except OSError as e:
                    raise RunError(f"cannot write {games_dir / name}: {e.strerror or e}") from None
                p.parts[name] = frame.height
                session["games"] += frame.height
                bar.update(frame.height)
        status = "complete"
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; {len(p.parts)} of {chunk_count(config.n, p.chunk_size)} parts are done. "
                          f"Finish with: {resume_hint}") from None
    except PolicyError as e:  # the policy's fault (raised on a Dask worker): resuming would fail the same way
        raise RunError(str(e)) from e
    except TaskFailed as e:
        if e.error_type == "PolicyError":
            raise RunError(e.error_message) from e
        raise RunError(f"{e}. Finished parts are kept; finish with: {resume_hint}") from e
    except RunError as e:
        raise RunError(f"{e}. The run is resumable: {resume_hint}") from None
    except Exception as e:  # a worker died, the cluster failed
        raise RunError(f"{e}. Finished parts are kept; finish with: {resume_hint}") from e
    finally:
        bar.close()
        with contextlib.suppress(OSError):
            save(status)
    return job.summarize(run_dir, session["seconds"], session["games"], status)


def start(job: Job, config, *, out: str | Path | None = None, force: bool = False, workers: int | None = None,
          chunk_size: int | None = None, executor: str = "local", scheduler: str | None = None,
          progress: bool = False, command: str | None = None):
    """Check `config`, prepare the run directory, compile what the job needs, then run every chunk.

    Raises UsageError for bad settings, RunError when the run cannot finish,
    Interrupted on Ctrl-C/SIGTERM (both leave it resumable).
    """
    config, decks = checked_rows(config)
    chosen = _executor(executor, workers, scheduler)
    if chunk_size is None:
        chunk_size = job.default_chunk_size(config.n, chosen.workers)
    if chunk_size < 1:
        raise UsageError(f"chunk_size must be at least 1, not {chunk_size}", "chunk_size")
    run_dir = Path(out) if out is not None else job.default_out(config)
    _prepare_dir(run_dir, force)
    job.warm(config, decks is not None)  # once, here, before any worker exists
    p = _Progress(chosen, int(chunk_size), command or f"{job.kind}({config!r})", [], {})
    return _execute(job, config, run_dir, p, progress, decks)


def resume(job: Job, run_dir: str | Path, *, workers: int | None = None, executor: str | None = None,
           scheduler: str | None = None, progress: bool = False):
    """Finish an interrupted job with the settings its manifest recorded; only missing parts are played.

    The executor is the one the run used unless another is given.
    """
    run_dir = Path(run_dir)
    m = read_manifest(run_dir)
    config = job.from_manifest(m)
    decks = None
    if config.deals is not None:
        if not Path(config.deals).is_file():
            raise UsageError(f"the run's deal file {config.deals} is gone; it is needed to resume")
        if file_digest(Path(config.deals)) != config.deals_sha256:
            raise UsageError(f"the run's deal file {config.deals} has changed since the run started")
        decks = load_deals(config.deals)
    workers = int(workers or m.get("workers") or os.cpu_count() or 1)
    kind = executor or m.get("executor") or "local"
    chosen = _executor(kind, workers, scheduler or (m.get("scheduler") if kind == "dask" else None))
    job.warm(config, decks is not None)
    p = _Progress(chosen, int(m["chunk_size"]), m.get("command", ""), m.get("sessions", []), {})
    return _execute(job, config, run_dir, p, progress, decks)


def _prepare_dir(run_dir: Path, force: bool) -> None:
    if run_dir.exists():
        if not run_dir.is_dir():
            raise UsageError(f"out {run_dir} exists and is not a directory", "out")
        is_run = (run_dir / MANIFEST).exists() or (run_dir / GAMES).exists()
        if is_run and not force:
            raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} to finish it "
                             f"or --force to replace it")
        if not is_run and any(run_dir.iterdir()):
            raise UsageError(f"out {run_dir} is a non-empty directory that holds no run; choose another", "out")
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
