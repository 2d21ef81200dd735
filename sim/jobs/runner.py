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
import errno
import fcntl
import functools
import hashlib
import io
import json
import logging
import math
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sim.engine.cards import MAX_GAME, check_seed
from sim.jobs.executors import Executor, ExecutorError, check_reachable, make_executor
from sim.jobs.files import (
    TMP_MARK, make_folders, remove_folders, remove_temp_files, sync_folder, write_atomic, write_json_atomic,
)
from sim.jobs.pool import TaskFailed
from sim.errors import Interrupted, PolicyError, RunError, UsageError, magnitude, parse_count, whole
from sim.version import __version__

__all__ = ["Interrupted", "Job", "RunError", "UsageError", "parse_count", "read_manifest", "resume", "start"]

log = logging.getLogger("sim.runner")

MANIFEST = "manifest.json"
GAMES = "games"
LOCK = ".lock"
"""The writer's lock file, inside the run directory."""
ASIDE = ".replaced"
"""Inside a run directory: the run that --force replaces (its manifest and parts), kept until the new run
has written its first part, and put back if it fails or is stopped before that."""
FORMAT = "foursquare-sim run"
"""The manifest's "format": what makes a directory a run of this project."""
FORMAT_VERSION = 1
MAX_CHUNKS = 10**8
"""More parts than this is a mistake (or a chunk size of 1 on a huge run): refused."""
MAX_CHUNK_SIZE = 10**7
"""Rows of one part: a worker holds a part's columns (tens of bytes a game, more with --record-deals) in memory
while it plays it, so a larger chunk is refused before anything is made rather than failing in the worker
(--chunk-size 1e12 asked for 931 GiB)."""
MANIFEST_EVERY = 5.0
"""Seconds: a part written at least this long after the manifest's last write rewrites it, so that
`sim report` on a run still going sees its parts (a resume finds unlisted parts on disk anyway)."""


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
    to_compile: Callable[[object, bool], str | None]
    """(config, from a deal file) -> what `warm` will compile and how often, e.g. "the solver (first run only)"
    (None when numba's cache has it all)."""
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
    drive: Callable | None = None
    """(executor, chunk tasks, warm, run directory) -> (k, columns) as chunks complete, when a job's chunks
    make further tasks for idle workers (the solve job's hard deals, checkpointed in the run directory);
    None: `executor.run(work, ...)`."""
    resume_args: Callable[[object], list[str]] | None = None
    """config -> what `sim <command> --resume DIR` needs besides the directory (a plugin named again)."""


def resume_command(job: Job, config, run_dir: Path) -> str:
    """The command line that finishes the run in `run_dir`, as the messages of an interrupted run print it."""
    import shlex

    extra = job.resume_args(config) if job.resume_args is not None else []
    return shlex.join(["sim", job.command, "--resume", str(run_dir), *extra])


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


def null_when_negative(name: str):
    """Column `name` (int8, -1 for none) as uint8 with null for none: the score of a lost game, say."""
    import polars as pl

    return pl.when(pl.col(name) >= 0).then(pl.col(name)).cast(pl.UInt8).alias(name)


def with_decks(frame, cols: dict):
    """The part with its `deck` column (list of uint8) when the chunk recorded the decks."""
    import polars as pl

    if cols.get("deck") is None:
        return frame
    return frame.with_columns(pl.Series("deck", cols["deck"]).cast(pl.List(pl.UInt8)))


# --- checking a config --------------------------------------------------------------------


def checked_rows(config):
    """(config with n and the deal file's absolute path and digest settled, decks or None); UsageError when bad.

    A config names its deal source: seeded deals (`deals` None) or a deal
    file, whose decks are loaded here once and whose digest is recorded.
    """
    # A UsageError naming the seed when it is bad; a NumPy integer becomes an int (the manifest's JSON).
    config = replace(config, seed=check_seed(config.seed))
    for name in ("record_deals", "first_win"):  # a flag: "no" would be true
        value = getattr(config, name, False)
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, not {value!r}")
    decks = None
    n = config.n
    if config.deals is not None:
        from sim.jobs.deal_files import read_deals

        try:
            decks, digest = read_deals(config.deals)  # the digest of the very decks played
        except ValueError as e:
            raise UsageError(str(e)) from None
        n = len(decks) if n is None else n
        config = replace(config, deals=str(Path(config.deals).resolve()), deals_sha256=digest)
    if n is None:
        raise UsageError("n is required (e.g. 1e6), unless deals gives the decks", "n")
    if isinstance(n, str):
        n = parse_count(n)
    n = whole(n)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise UsageError(f"n {n!r} is not a positive whole number", "n")
    if n > MAX_GAME + 1:
        raise UsageError(f"n {magnitude(n)} is more than the 2**63 games a seed has", "n")
    if decks is not None and n > len(decks):
        decks_in = f"{len(decks)} deck{'' if len(decks) == 1 else 's'} in {config.deals}"
        raise UsageError(f"n {n} is more than the {decks_in}", "n")
    return replace(config, n=int(n)), decks


def _executor(kind: str, workers: int | None, scheduler: str | None) -> Executor:
    if workers is not None and workers < 1:
        raise UsageError(f"workers must be at least 1, not {workers}", "workers")
    try:
        return make_executor(kind, workers, scheduler)
    except ExecutorError as e:
        raise UsageError(str(e)) from None


def _whole_numbers(**values) -> None:
    """UsageError for an execution option given (not None) that is not a whole number (2.5 workers, "5")."""
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise UsageError(f"{name} must be a whole number, not {value!r}", name)


def _reach(chosen: Executor) -> None:
    """RunError when the executor's scheduler does not answer; called once the settings are checked, before
    anything is made."""
    if chosen.scheduler is not None:
        try:
            check_reachable(chosen.scheduler)
        except ExecutorError as e:
            raise RunError(str(e)) from None


# --- the files a run's rows depend on --------------------------------------------------------


def recorded_decks(deals: str, sha256: str | None, purpose: str):
    """The decks of a run's deal file, which must still hold what the run recorded (its SHA-256); UsageError
    naming `purpose` ("resume") otherwise."""
    from sim.jobs.deal_files import UnreadableDealFile, read_deals

    if not Path(deals).is_file():
        raise UsageError(f"the run's deal file {deals} is gone; it is needed to {purpose}")
    changed = UsageError(f"the run's deal file {deals} has changed since the run started")
    try:
        decks, digest = read_deals(deals)  # checked and read in one read: no other decks between the two
    except UnreadableDealFile as e:  # still there, perhaps unchanged: say why it cannot be used
        raise UsageError(f"the run's deal file {deals} cannot be read ({e.reason}); it is needed to "
                         f"{purpose}") from None
    except ValueError:  # no longer a file of decks, so not the one the run read
        raise changed from None
    if digest != sha256:
        raise changed
    return decks


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in blocks."""
    from sim.jobs.deal_files import file_digest

    return file_digest(Path(path))


def dependency_digests(paths) -> dict[str, str]:
    """{absolute path: SHA-256} of the files a run's rows depend on (a plugin's source, a weights file)."""
    return {str(Path(p).resolve()): file_sha256(Path(p)) for p in sorted(set(paths))}


def changed_files(recorded: dict[str, str]) -> list[str]:
    """The recorded files that are gone or whose digest changed, each as a phrase naming it."""
    problems = []
    for path, digest in (recorded or {}).items():
        if not Path(path).is_file():
            problems.append(f"{path} is gone")
            continue
        try:
            same = file_sha256(Path(path)) == digest
        except OSError as e:  # a manifest can name any file: one this user may not read was a traceback
            problems.append(f"{path} cannot be read ({e.strerror or e}), so it cannot be the file the run used")
            continue
        if not same:
            problems.append(f"{path} has changed since the run started")
    return problems


# --- manifest ------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_SHAPE = {"n": int, "seed": int, "rules": dict, "chunk_size": int, "parts": dict, "status": str}
"""Keys every manifest has, with their types (older manifests, from before the format marker, too)."""
_TYPE_NAMES = {int: "whole number", dict: "JSON object", str: "string", list: "JSON list"}


def is_manifest(m) -> bool:
    """Is `m` (parsed JSON) a manifest of this project: its format marker, or the shape of an older one?"""
    if not isinstance(m, dict):
        return False
    return _shape_problem(m) is None and (m.get("format") == FORMAT or "deal_algorithm" in m)


def _shape_problem(m: dict) -> str | None:
    """The first of the keys every manifest has that is missing or of the wrong type, as a phrase; None when none."""
    for key, kind in _SHAPE.items():
        if not isinstance(m.get(key), kind) or isinstance(m.get(key), bool):
            return f"{key} is {m.get(key)!r}, not a {_TYPE_NAMES[kind]}"
    return None


def manifest_problem(m: dict) -> str | None:
    """What makes the fields of a manifest with this project's marker (or `is_manifest`'s shape) unusable
    (hand-edited, say); None when none."""
    shape = _shape_problem(m)
    if shape:
        return shape
    if not isinstance(m.get("format_version", 0), int) or isinstance(m.get("format_version"), bool):
        return f"format_version {m.get('format_version')!r} is not a whole number"
    if m.get("kind", "run") not in ("run", "solve"):
        return f"kind {m.get('kind')!r} is neither run nor solve"
    if m["status"] not in ("incomplete", "complete"):
        return f"status is {m['status']!r}, neither incomplete nor complete"
    if m["n"] < 1 or m["chunk_size"] < 1:
        return f"n {m['n']} and chunk_size {m['chunk_size']} must be at least 1"
    if m["n"] > MAX_GAME + 1:  # what a run may hold (`checked_rows`), so that no loop over its parts is endless
        return f"n {magnitude(m['n'])} is more than the 2**63 games a seed has"
    if chunk_count(m["n"], m["chunk_size"]) > MAX_CHUNKS:
        return f"n {m['n']:,} and chunk_size {m['chunk_size']:,} make more than {MAX_CHUNKS:,} parts"
    try:
        check_seed(m["seed"])
    except ValueError as e:
        return str(e)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in m["parts"].values()):
        return "parts must give each part's number of rows"
    info = m.get("part_info") or {}
    if not isinstance(info, dict) or not all(isinstance(v, dict) for v in info.values()):
        return "part_info must give each part's rows, games and SHA-256"
    for name, v in info.items():
        for key in ("rows", "first", "last"):
            if key in v and (not isinstance(v[key], int) or isinstance(v[key], bool)):
                return f"part_info gives {name} {key} {v[key]!r}, not a whole number"
        if "sha256" in v and not (isinstance(v["sha256"], str) and len(v["sha256"]) == 64
                                  and all(c in "0123456789abcdef" for c in v["sha256"])):
            return f"part_info gives {name} sha256 {v['sha256']!r}, not a SHA-256 in hex"
    for key, kind in (("sessions", list), ("policy_args", dict), ("files", dict), ("started", str),
                      ("policy", str)):
        if m.get(key) is not None and not isinstance(m[key], kind):
            return f"{key} is {m[key]!r}, not a {_TYPE_NAMES[kind]}"
    if m.get("kind", "run") == "run" and not isinstance(m.get("policy"), str):
        return f"policy is {m.get('policy')!r}, not a string"
    if not all(isinstance(v, dict) for v in m.get("sessions") or []):
        return "sessions must be JSON objects, one per session"
    from sim.engine.rules import Rules

    try:
        Rules(**m["rules"])
    except (TypeError, ValueError) as e:
        return f"rules {m['rules']!r} are not the game's rule options ({e})"
    return None


def read_manifest(run_dir: Path) -> dict:
    """The run directory's manifest; UsageError when there is none or it is not a run's, RunError when unreadable."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        if not Path(run_dir).exists():
            raise UsageError(f"{run_dir} does not exist (a run directory, such as results/<run>, was expected)")
        raise UsageError(f"{run_dir} is not a run directory (no {MANIFEST})")
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunError(f"cannot read {path}: {e}") from None
    if not is_manifest(m) and not (isinstance(m, dict) and m.get("format") == FORMAT):
        raise UsageError(f"{path} is not the manifest of a foursquare-sim run")
    if (m.get("format") == FORMAT and isinstance(m.get("format_version", 0), int)
            and m.get("format_version", 0) > FORMAT_VERSION):
        raise UsageError(f"{path} was written by a newer foursquare-sim (format {m.get('format_version')})")
    problem = manifest_problem(m)  # a field of this project's manifest edited to nonsense
    if problem:
        raise RunError(f"{path} is damaged: {problem}")
    return m


def _deal_algorithm() -> str:
    """The name of the algorithm that deals a seed's decks (the kernels', imported only when a manifest is
    written, or read without it: checking a run loads no numba)."""
    from sim import kernels as K

    return K.DEAL_ALGORITHM


def deal_fields(config) -> dict:
    """The manifest fields of a config's deal source (the same for every job)."""
    return {
        "n": config.n,
        "seed": config.seed,
        "rules": config.rules.as_dict(),
        "deal_algorithm": _deal_algorithm() if config.deals is None else "file",
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
    """Part name -> {rows, first, last, sha256}."""


def _manifest(job: Job, config, p: _Progress, status: str) -> dict:
    last = p.sessions[-1] if p.sessions else {}
    seconds = round(sum(s.get("seconds", 0.0) for s in p.sessions), 3)  # the run's, over every session
    settings = job.settings(config)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
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
        "seconds": seconds,
        "games_per_s": round(sum(s.get("games", 0) for s in p.sessions) / seconds, 1) if seconds else None,
        "status": status,
        "sessions": p.sessions,
        "parts": {name: info["rows"] for name, info in sorted(p.parts.items())},
        "part_info": dict(sorted(p.parts.items())),
    }


# --- the parts of a run ---------------------------------------------------------------------


def chunk_of(name: str) -> int | None:
    """k for a file called part-k.parquet (5 or more digits), else None."""
    if not (name.startswith("part-") and name.endswith(".parquet")):
        return None
    digits = name[len("part-"):-len(".parquet")]
    return int(digits) if digits.isdigit() and len(digits) >= 5 and part_name(int(digits)) == name else None


def _expected(k: int, n: int, chunk_size: int) -> tuple[int, int, int]:
    """(rows, first game, last game) of part k."""
    first = k * chunk_size
    last = min(first + chunk_size, n) - 1
    return last - first + 1, first, last


def _part_stats(path: Path, data: bytes | None = None) -> tuple[int, int | None, int | None]:
    """(rows, first game, last game) of a part file (parsed from `data`, its bytes, when given), from its Parquet
    metadata and game column."""
    import polars as pl

    source = path if data is None else io.BytesIO(data)
    row = pl.scan_parquet(source).select(pl.len().alias("rows"), pl.col("game").min().alias("lo"),
                                         pl.col("game").max().alias("hi")).collect().row(0)
    return int(row[0]), row[1], row[2]


def _listed_problem(name: str, k: int, m: dict) -> str | None:
    """How the manifest's own counts of part k (its rows under `parts`, its rows and games under `part_info`)
    disagree with the games part k of this run holds; None when they agree (or it gives none)."""
    rows, first, last = _expected(k, int(m["n"]), int(m["chunk_size"]))
    info = (m.get("part_info") or {}).get(name) or {}
    said = (m.get("parts") or {}).get(name, rows), info.get("rows", rows), info.get("first", first), info.get("last", last)
    if said == (rows, rows, first, last):
        return None
    return (f"the manifest gives {name} {said[0]} rows (parts) and {said[1]} rows, games {said[2]}..{said[3]} "
            f"(part_info), but part {k} of a run of n {int(m['n'])} and chunk size {int(m['chunk_size'])} holds "
            f"{rows} rows, games {first}..{last}")


def _part_problem(path: Path, k: int, n: int, chunk_size: int, data: bytes | None = None) -> str | None:
    """What is wrong with part k's file, or with `data`, the bytes read from it (None when it holds exactly its
    games)."""
    from polars.exceptions import PanicException  # a damaged page can make the reader panic

    rows, first, last = _expected(k, n, chunk_size)
    try:
        got = _part_stats(path, data)
    except (Exception, PanicException) as e:  # not Parquet, or not a games table
        return f"{path} is not a readable part ({type(e).__name__})"
    if got != (rows, first, last):
        return (f"{path} holds {got[0]} rows, games {got[1]}..{got[2]}; "
                f"part {k} of this run holds {rows} rows, games {first}..{last}")
    return None


def stray_files(run_dir: Path, chunks: int | None = None) -> list[str]:
    """Files in games/ that are not parts of a run (nor temporary files): ignored, with a warning.

    With `chunks` (the run's number of parts), a part's name beyond them is one too.
    """
    games_dir = Path(run_dir) / GAMES
    if not games_dir.is_dir():
        return []
    limit = math.inf if chunks is None else chunks
    return sorted(e.name for e in os.scandir(games_dir)
                  if TMP_MARK not in e.name and (chunk_of(e.name) is None or chunk_of(e.name) >= limit))


def _expected_metadata(m: dict) -> dict[str, str]:
    """What the parts of the run these manifest fields describe say of themselves (`part_metadata`): its
    settings, and where its decks come from (a deal file and its digest, or the seed and the algorithm that
    deals from it)."""
    deals = (f"file {m.get('deals')} sha256 {m.get('deals_sha256')}" if m.get("deals") is not None
             else f"{m.get('deal_algorithm') or _deal_algorithm()} seed {m.get('seed')}")
    expected = {"kind": m.get("kind", "run"), "policy": str(m.get("policy")),
                "policy_args": json.dumps(m.get("policy_args") or {}), "seed": str(m.get("seed")),
                "n": str(m.get("n")), "rules": json.dumps(m.get("rules")), "deal_source": deals,
                "record_deals": json.dumps(bool(m.get("record_deals")))}
    if m.get("kind") == "solve":
        expected["solve"] = json.dumps(m.get("solve"))
    return expected


def _metadata_problem(path: Path, k: int, m: dict, found: bool = False, data: bytes | None = None) -> str | None:
    """How part k's own metadata (read from `data`, its bytes, when given) disagrees with the manifest; None when
    it agrees.

    A part the manifest lists (its SHA-256 checked already) may lack a key
    that older versions did not write. A part only `found` on disk, which a
    resume would adopt, must carry every key, and this version's number: it
    can only be one that this run wrote before the manifest listed it.
    """
    import polars as pl

    try:
        meta = pl.read_parquet_metadata(path if data is None else io.BytesIO(data))
    except Exception as e:
        return f"{path} is not a readable part ({type(e).__name__})"
    expected = {"part": str(k), **_expected_metadata(m)}
    if found:
        expected["version"] = __version__
    for key, want in expected.items():
        got = meta.get(f"foursquare_sim.{key}")
        if got is None and found:
            return f"{path} does not say its {key.replace('_', ' ')}, so it cannot be known to be this run's"
        if got is not None and got != want and not (key == "solve" and not found and _older_options(got, want)):
            return f"{path} was written with {key.replace('_', ' ')} {got}, but the manifest says {want}"
    return None


def _older_options(got: str, want: str) -> bool:
    """Do a listed part's solver options (JSON) agree with the manifest's on every option the part names? An
    older version wrote fewer (a resume fills the others in with their defaults, which it played)."""
    try:
        old, new = json.loads(got), json.loads(want)
    except ValueError:
        return False
    return isinstance(old, dict) and isinstance(new, dict) and all(new.get(k) == v for k, v in old.items())


def run_parts(run_dir: str | Path, m: dict | None = None, game: int | None = None) -> list[Path]:
    """The part files of a run, each verified (`checked_parts`); read their rows with `part_bytes`."""
    return list(checked_parts(run_dir, m, game))


def checked_parts(run_dir: str | Path, m: dict | None = None, game: int | None = None) -> dict[Path, str]:
    """The part files of a run, each verified before it is trusted, with the SHA-256 of the bytes that were
    verified; with `game`, only the part that holds it (none when the manifest lists no such part), so that one
    game is read without checking every part.

    Only the parts the manifest lists count; other files in games/ are
    ignored with a warning. Each must have the SHA-256 the manifest recorded
    for it (so a part changed by a single byte, or swapped for another run's,
    is caught before any row of it is read), settings in its own metadata
    that agree with the manifest's (an edited manifest), and exactly its
    chunk's games. A part that is not is a RunError naming the file (resume
    replays such a part). Each part is read once for all its checks, and its
    rows are read with `part_bytes`, which takes only these same bytes: a file
    replaced between the check and the read is never trusted.
    """
    run_dir = Path(run_dir)
    m = m if m is not None else read_manifest(run_dir)
    n, chunk_size = int(m["n"]), int(m["chunk_size"])
    for name in stray_files(run_dir, chunk_count(n, chunk_size)):
        log.warning("%s: ignoring %s, which is not a part of this run", run_dir, Path(GAMES) / name)
    recorded = m.get("part_info") or {}
    parts = {}
    names = sorted(m.get("parts") or {})
    if game is not None:
        names = [name for name in names if name == part_name(game // chunk_size)]
    for name in names:
        k = chunk_of(name)
        path = run_dir / GAMES / name
        if k is None or not path.is_file():
            raise RunError(f"{path}: listed in the manifest but missing; finish the run with --resume")
        digest = (recorded.get(name) or {}).get("sha256")
        data = sha256 = None
        if digest is not None or not recorded:  # every check below looks at these bytes, and only they are rows
            try:
                data = path.read_bytes()
            except OSError as e:
                if digest is not None:
                    raise
                raise PartSettingsError(f"{path} is not a readable part ({type(e).__name__}); neither can be "
                                        f"trusted, so play the run again with --force") from None
            sha256 = hashlib.sha256(data).hexdigest()
        if digest is None and recorded:  # an edited manifest: resume plays the part again
            problem = f"{path}: the manifest records no SHA-256 for it, so it cannot be checked"
        elif digest is not None and sha256 != digest:
            problem = f"{path} is not the part this run wrote (its SHA-256 differs from the manifest's)"
        else:
            settings = _metadata_problem(path, k, m, False, data)
            if settings:  # the manifest was edited, or the part copied from another run: resume refuses it too
                raise PartSettingsError(f"{settings}; neither can be trusted, so play the run again with --force")
            problem = _part_problem(path, k, n, chunk_size, data)
            if problem and digest is not None:  # the part the run wrote: its chunk size (or n) was edited since
                raise PartSettingsError(f"{problem}, yet it is the part the run wrote (its SHA-256 is the "
                                        f"manifest's): the manifest was changed after it; play the run again "
                                        f"with --force")
            listed = _listed_problem(name, k, m)
            if not problem and listed:  # the part holds its games: the manifest's counts of it were edited
                raise PartSettingsError(f"{listed}; the manifest was changed after it was written; play the run "
                                        f"again with --force")
        if problem:
            raise RunError(f"{problem}; resume the run to play it again")
        parts[path] = sha256
    short = short_listing(m, parts) if game is None else None
    if short:
        log.warning("%s: the manifest says complete but lists %d of its %d parts: only their games are read; "
                    "resume the run to finish it", run_dir, *short)
    return parts


def part_bytes(path: Path, sha256: str) -> io.BytesIO:
    """The bytes of a part that `checked_parts` verified, read once, for its rows to be parsed from them (not from
    the path, which may name another file by then); RunError when they are not the bytes it verified.

    A part is at most a chunk, which a worker held in memory whole.
    """
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RunError(f"{path} changed after it was verified (its SHA-256 is no longer the one checked); "
                       f"read the run again")
    return io.BytesIO(data)


def parquet_bytes(frame, metadata: dict) -> bytes:
    """A part's Parquet file, made in memory: its SHA-256 is taken of exactly the bytes that go to disk."""
    buf = io.BytesIO()
    frame.write_parquet(buf, metadata=metadata)
    return buf.getvalue()


ROWS_DIGEST = "foursquare_sim.rows_sha256"
"""A part's metadata key for `rows_digest` of its rows. The file's own SHA-256 is recorded only in the manifest,
which a kill -9 can leave one write behind the parts on disk; this one travels with the part, so that a resume
keeps such a part only when its rows are the ones written."""


def rows_digest(frame) -> str:
    """The SHA-256 of a table's schema and of its rows' hashes (Polars' `hash_rows`, by value: what a null holds
    underneath, or how the columns are chunked, does not enter into it), about 1 ms for 50,000 rows where a
    Parquet round trip took 7. The same version of Polars gives the same digest for the same rows; another may
    not (its row hashes are stable within a version only), and then a resume plays the part again rather than
    trust it."""
    digest = hashlib.sha256(repr(list(frame.schema.items())).encode())
    digest.update(frame.hash_rows(seed=0).to_numpy().tobytes())
    return digest.hexdigest()


def _rows_problem(path: Path, data: bytes) -> str | None:
    """How the rows of a part found on disk (`data`, its bytes) differ from the ones it was written with (None when
    they are those): a part the manifest does not list has no recorded SHA-256, only its own `ROWS_DIGEST`."""
    import polars as pl
    from polars.exceptions import PanicException  # a damaged page can make the reader panic

    try:
        want = pl.read_parquet_metadata(io.BytesIO(data)).get(ROWS_DIGEST)
        got = rows_digest(pl.read_parquet(io.BytesIO(data))) if want is not None else None
    except (Exception, PanicException) as e:
        return f"{path} is not a readable part ({type(e).__name__})"
    if want is None:
        return f"{path} does not carry the SHA-256 of its rows, so they cannot be known to be the ones written"
    if got != want:
        return f"{path} does not hold the rows it was written with (their SHA-256 is not the one it carries)"
    return None


def short_listing(m: dict, parts) -> tuple[int, int] | None:
    """(parts listed, parts of the run) when a manifest says complete but lists fewer `parts` than its run
    has (a resume lists the rest, each verified); None otherwise."""
    chunks = chunk_count(int(m["n"]), int(m["chunk_size"]))
    return (len(parts), chunks) if m.get("status") == "complete" and len(parts) < chunks else None


def _verified_parts(run_dir: Path, m: dict | None, n: int, chunk_size: int) -> dict[str, dict]:
    """Parts already on disk that a resume can keep: listed with the same digest, or, not listed yet, holding the
    rows they were written with (`ROWS_DIGEST`), this run's settings and exactly their chunk's games.

    The directory is listed once. A part whose digest differs from the
    manifest's, or whose games are not its chunk's, is played again; a
    listed part that disagrees with the manifest's settings is a RunError.
    """
    games_dir = run_dir / GAMES
    recorded = (m or {}).get("part_info") or {}
    kept = {}
    for name in sorted(e.name for e in os.scandir(games_dir)) if games_dir.is_dir() else []:
        k = chunk_of(name)
        if k is None or k >= chunk_count(n, chunk_size):
            continue
        path = games_dir / name
        if not path.is_file():  # a folder with a part's name: nothing to keep (writing the part will say why)
            continue
        info = recorded.get(name)
        data = path.read_bytes()  # checked and recorded from one read: no other part between the two
        sha256 = hashlib.sha256(data).hexdigest()
        if info is not None:
            if sha256 != info.get("sha256"):
                log.warning("%s differs from the part this run wrote: playing it again", path)
                continue
            problem = _metadata_problem(path, k, m, False, data) or _listed_problem(name, k, m)  # counts edited
            if problem:  # the part is the one listed, so the manifest's settings were changed after it
                raise RunError(f"{problem}: the manifest was changed after its parts were written; not resuming")
            kept[name] = info
            continue
        problem = (_metadata_problem(path, k, m or {}, True, data)
                   or _part_problem(path, k, n, chunk_size, data) or _rows_problem(path, data))
        if problem:
            log.warning("%s: playing it again", problem)
            continue
        rows, first, last = _expected(k, n, chunk_size)
        kept[name] = {"rows": rows, "first": first, "last": last, "sha256": sha256}
    return kept


# --- the writer's lock ----------------------------------------------------------------------------


class PartSettingsError(RunError):
    """A part the manifest lists was written with other settings than the manifest's: one of the two was
    changed after the run wrote them, so a resume refuses the run too."""


class LockDenied(RunError):
    """The writer's lock cannot be opened because the run's folder may not be written (a read-only file
    system, another user's folder): nobody can be writing it through this path, and a complete run there
    can still be read."""


_HELD: set[tuple[int, int]] = set()
"""(device, inode) of each lock file this process holds. A POSIX record lock belongs to the process: the kernel
grants it again to a second `writer_lock` here (another thread, another call in a notebook) and drops it when
that one closes its descriptor, so this process's own locks are checked before the file is opened."""
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def writer_lock(run_dir: Path):
    """Hold the run directory's exclusive lock while writing it; RunError naming the holder otherwise.

    A POSIX record lock (fcntl.lockf) on ``<run>/.lock``: it belongs to this
    process (forked workers do not inherit it) and the kernel releases it
    when the process ends, however it ends, so a lock left by a dead
    process is simply taken. The holder writes its pid into the file. A
    second writer in this process (another thread) is refused too (`_HELD`).
    Then a BSD lock (flock) on the directory itself (`_lock_folder`): a
    lock file deleted while the run is written (as a stale lock file of
    other tools is) makes the next writer a new one, which the folder's
    lock still refuses.
    """
    run_dir = Path(run_dir)
    with _HELD_GUARD:
        fd = _take_lock(run_dir)
        try:
            folder = _lock_folder(run_dir)
        except BaseException:
            os.close(fd)
            raise
        st = os.fstat(fd)
        held = (st.st_dev, st.st_ino)
        _HELD.add(held)
    try:
        yield
    finally:
        with _HELD_GUARD:
            _HELD.discard(held)
            if folder is not None:
                os.close(folder)
            os.close(fd)


def _lock_folder(run_dir: Path) -> int | None:
    """A descriptor of `run_dir` holding its exclusive flock, for `writer_lock`; RunError when another holds it,
    None where the folder cannot be opened or its file system has no flock on folders (NFS emulates flock
    with POSIX locks, which a folder opened for reading cannot take): its lock file is the only lock there.

    A flock belongs to the open directory, not to a name in it, so no file
    deleted or replaced inside the run lets a second writer in; it is given
    up when the descriptor is closed or the process ends (and its forked
    workers, which end with it: `sim.jobs.pool`). Another claim in this
    process opens the directory again, so it is refused as well.
    """
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:  # a folder that may be written but not read: its lock file has been taken all the same
        log.debug("no lock on the folder %s (%s): its lock file alone keeps a second writer out", run_dir, e)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):  # a file system without flock on folders (NFS)
            log.debug("no lock on the folder %s (%s): its lock file alone keeps a second writer out", run_dir, e)
            return None
        holder = _lock_holder(run_dir, "FLOCK")
        who = ("this process" if holder == os.getpid() else "another process") + (f" (pid {holder})" if holder else "")
        raise RunError(f"{run_dir} is being written by {who}, though its lock file {LOCK} was deleted or replaced; "
                       f"wait for that run to finish") from None
    return fd


def _too_large_a_part(job: Job) -> str:
    """Why a chunk above MAX_CHUNK_SIZE is refused, as a new run or a resume says it."""
    return f"more than a worker should hold at once; at most {MAX_CHUNK_SIZE:,} {job.unit}s a part"


def _take_lock(run_dir: Path) -> int:
    """The descriptor of `run_dir`'s lock file, locked by this process (for `writer_lock`, which holds _HELD_GUARD)."""
    try:
        st = os.stat(run_dir / LOCK)
    except OSError:
        st = None
    if st is not None and (st.st_dev, st.st_ino) in _HELD:  # opening and closing it would drop the lock
        raise RunError(f"{run_dir} is being written by this process (pid {os.getpid()}) already; "
                       f"wait for that run to finish")
    try:
        made = make_folders(run_dir)
    except OSError as e:
        raise RunError(f"cannot create {run_dir}: {e.strerror or e}") from None
    had_lock = (run_dir / LOCK).exists()
    linked = _linked_out(run_dir)
    if linked:  # a folder made elsewhere (a download): the lock would truncate, the parts go, another place's file
        raise RunError(f"{linked}; a run's lock, parts and replaced run are files and folders of its own, so "
                       f"nothing is written through it")
    try:
        fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as e:
        remove_folders(made)
        kind = LockDenied if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else RunError
        raise kind(f"cannot open the writer's lock {run_dir / LOCK}: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # made in between: a link is refused by O_NOFOLLOW already
            raise RunError(f"{run_dir / LOCK} is not a plain file; a run's lock is a file of its own")
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # the kernel's table names the holder even before it has written its pid into the file
            holder = (_lock_holder(run_dir / LOCK, "POSIX") or os.pread(fd, 32, 0).decode(errors="replace").strip()
                      or "unknown")
            raise RunError(f"{run_dir} is being written by another process (pid {holder}); "
                           f"wait for it to finish") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:  # a full disk: leave no lock or folder that this call made
            if not had_lock:
                with contextlib.suppress(OSError):
                    (run_dir / LOCK).unlink()
                remove_folders(made)
            raise RunError(f"cannot write the writer's lock {run_dir / LOCK}: {e.strerror or e}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _linked_out(run_dir: Path) -> str | None:
    """What in `run_dir` that a writer writes or deletes through is a symbolic link (or a lock that is not a
    plain file), as a phrase; None when nothing is.

    A run folder from elsewhere could hold `.lock` linked to any file (opening and truncating it to write
    the pid would empty that file) or `games/` linked to any folder (a resume deletes temporary files there,
    --force moves its part files away and deletes them)."""
    for name in (LOCK, GAMES, ASIDE, f"{ASIDE}/{GAMES}"):
        try:
            mode = os.lstat(run_dir / name).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            return f"{run_dir / name} is a symbolic link"
        if name == LOCK and not stat.S_ISREG(mode):  # a FIFO or a device: never opened
            return f"{run_dir / name} is not a plain file"
    return None


def writer_pid(run_dir: Path) -> int | None:
    """The pid of the process writing the run now (holding `writer_lock`), None when none is.

    Read from the kernel's table of locks (/proc/locks): the POSIX lock on
    the lock file, by its device and inode, or else the flock on the
    directory (`_lock_folder`: the lock file may have been deleted). Neither
    is opened, because closing any descriptor of the lock file would drop a
    lock this very process holds on it, and no lock is tried, so that a
    writer starting at that moment is never refused because of the
    question. Linux only; None elsewhere.
    """
    return _lock_holder(Path(run_dir) / LOCK, "POSIX") or _lock_holder(Path(run_dir), "FLOCK")


def _lock_holder(path: Path, kind: str) -> int | None:
    """The pid holding a lock of `kind` (POSIX or FLOCK) on `path`, from /proc/locks; None when none does."""
    try:
        st = os.stat(path)
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 8638 00:3d:1234 0 EOF" (a waiting lock's line has "->" before POSIX)
        if "->" not in fields and len(fields) >= 6 and fields[1] == kind and fields[5] == where:
            return int(fields[4])
    return None


# --- running ------------------------------------------------------------------------------------


@contextlib.contextmanager
def interrupt_on_sigterm():
    """Turn SIGTERM into KeyboardInterrupt while the run is in progress (main thread only).

    A second Ctrl-C or SIGTERM while the first is being handled is ignored,
    so shutting down the workers is never cut short; in a block inside
    another, until the outer block ends too (a run's stop goes on after its
    loop: the manifest saved, the writer's lock let go). A signal that lands
    while Python runs a callback from C (numba's compiler calls some while it
    compiles) has its KeyboardInterrupt swallowed there: it is raised again
    when the block ends, so that it is never lost, and the traceback Python
    would print for it ("Exception ignored ...") is left out.

    An error raised once a signal has come is that signal's interrupt, turned
    into an error of its own by the code it landed in (a KeyboardInterrupt
    raised inside a Polars call comes back as "'<unprintable str object>' is
    not a Polars data type", or as a panic): it leaves the block as
    KeyboardInterrupt.

    A SIGINT ignored when the block starts stays ignored, as Python leaves it
    at start-up: a shell without job control starts a background job (`sim
    run ... &` in a script) so, and such a job ignored Ctrl-C's signal in its
    first moments and obeyed it later. SIGTERM still stops it.
    """
    signals = Signals()
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return
    signalled = signals.signalled
    ignore_int = signal.getsignal(signal.SIGINT) is signal.SIG_IGN

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signalled.append(signum)
        raise KeyboardInterrupt

    handler.signals = signals  # a block inside this one tells it of a signal through this

    def unraisable(info, report=sys.unraisablehook):
        if not (info.exc_type is KeyboardInterrupt and signalled):
            report(info)

    previous = signal.signal(signal.SIGTERM, handler)
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_int else handler)
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield signals
    except BaseException as e:  # Polars' PanicException is no Exception
        if signalled and not isinstance(e, (KeyboardInterrupt, Interrupted, SystemExit, GeneratorExit)):
            raise KeyboardInterrupt from e  # the code it landed in (Polars' Rust, say) gave it back as its own error
        raise
    finally:
        enclosing = getattr(previous, "signals", None)
        if signalled and enclosing is not None:  # inside another block, which stops too: later signals stay
            enclosing.signalled.extend(signalled)  # ignored until it ends
        else:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)
        sys.unraisablehook = previous_hook
    signals.raise_swallowed()  # the block ended as if nothing happened: its KeyboardInterrupt was swallowed


class Signals:
    """What `interrupt_on_sigterm` yields: the signals it has turned into KeyboardInterrupt so far."""

    def __init__(self):
        self.signalled: list[int] = []
        """The signals received, in order (the first one only: the handler ignores the rest)."""

    def raise_swallowed(self) -> None:
        """Raise KeyboardInterrupt when a signal came: at the block's normal end, its own was swallowed where it
        was raised."""
        if self.signalled:
            raise KeyboardInterrupt


def part_metadata(job: Job, config, run_dir: Path) -> dict[str, str]:
    """Key-value metadata of every part, so that a part found on its own says what it is: the settings its
    manifest records (`_expected_metadata`, which checks them), its run's folder and this version."""
    about = {"run": Path(run_dir).resolve().name, **_expected_metadata({"kind": job.kind, **job.settings(config)}),
             "version": __version__}
    return {f"foursquare_sim.{key}": str(value) for key, value in about.items()}


def _save(job: Job, config, run_dir: Path, p: _Progress, status: str) -> None:
    try:
        write_json_atomic(run_dir / MANIFEST, _manifest(job, config, p, status))
    except OSError as e:
        raise RunError(f"cannot write {run_dir / MANIFEST}: {e.strerror or e}") from None


def _execute(job: Job, config, run_dir: Path, p: _Progress, progress: bool, decks: np.ndarray | None,
             replacing: bool = False):
    """Play the chunks whose part is missing, write each part as it comes, keep the manifest current.

    The caller holds the writer's lock and has written a manifest already.
    `replacing`: a run is set aside in ASIDE (--force); the first part
    written deletes it, and a failure or interruption before that puts it
    back, and says so instead of how to resume.
    """
    from sim.jobs.progress import ProgressBar

    games_dir = run_dir / GAMES
    resume_hint = resume_command(job, config, run_dir)
    todo = (k for k in range(chunk_count(config.n, p.chunk_size)) if part_name(k) not in p.parts)
    missing = chunk_count(config.n, p.chunk_size) - len(p.parts)
    session = {"started": _now(), **p.executor.describe(), "games": 0}
    if p.executor.kind == "local":  # no idle workers
        p.executor = Executor("local", min(p.executor.workers, max(1, missing)))
        session["workers"] = p.executor.workers
    p.sessions = p.sessions + [session]
    t0 = time.perf_counter()

    saved = [time.perf_counter()]

    def save(status):
        saved[0] = time.perf_counter()
        session["ended"] = _now()
        session["seconds"] = round(time.perf_counter() - t0, 3)
        session["games_per_s"] = round(session["games"] / session["seconds"], 1) if session["seconds"] else None
        _save(job, config, run_dir, p, status)

    save("incomplete")
    common = job.payload(config)
    about = part_metadata(job, config, run_dir)

    def tasks():
        for k in todo:
            start = k * p.chunk_size
            stop = min(start + p.chunk_size, config.n)
            yield k, {"chunk": k, "start": start, "stop": stop, **common,
                      "decks": None if decks is None else decks[start:stop]}

    units = f"{job.unit}s"  # "500,000/1,000,000 games [00:12<00:12, 40.7k games/s]"
    bar = ProgressBar(total=config.n, initial=sum(i["rows"] for i in p.parts.values()), unit=f" {units}",
                      unit_scale=True,
                      bar_format=("{l_bar}{bar}| {n:,}/{total:,} " + units
                                  + " [{elapsed}<{remaining}, {rate_noinv_fmt}]"),
                      disable=not progress, file=sys.stderr, smoothing=0.1)
    status = "incomplete"
    # The run --force replaces: "aside" in ASIDE until the new run's first part, then "gone"; "back" when a
    # failure before that part put it back (the new run's manifest is gone with it).
    replaced = ["aside" if replacing else None]

    def done() -> str:
        """"1 of 8 parts is done", "2 of 8 parts are done"."""
        return (f"{len(p.parts):,} of {chunk_count(config.n, p.chunk_size):,} parts "
                f"{'is' if len(p.parts) == 1 else 'are'} done")

    def kept() -> str:
        return f"{done()} and kept; finish with: {resume_hint}"

    def ended(kind, what: str, then: str = ""):
        """The exception that ends the run: `what` (on one line), then the sentence `then` (how to go on), or,
        before the new run's first part, `what` once the old run is back in place, saying so."""
        what = " ".join(what.split()) or kind.__name__  # a cluster's errors can run over several lines
        if replaced[0] != "aside":
            return kind(_then(what, then) if then else what)
        replaced[0] = "back"
        try:
            _put_back(run_dir, new_parts=True)
        except OSError as e:
            return kind(_then(what, f"The run it replaces could not be put back ({e.strerror or e}); "
                                    f"it is in {run_dir / ASIDE}."))
        return kind(_then(what, f"{run_dir} still holds the run it had."))

    try:
        warm = functools.partial(job.warm, config, decks is not None)  # Dask workers warm themselves
        chunks = (job.drive(p.executor, tasks(), warm, run_dir) if job.drive is not None
                  else p.executor.run(job.work, tasks(), warm))
        # Inside start's or resume's own block: after a signal, later ones stay ignored until the run has
        # stopped (its manifest saved, its lock let go).
        with interrupt_on_sigterm(), contextlib.closing(chunks) as results:
            for k, cols in results:
                name = part_name(k)
                frame = job.frame(cols)
                path = games_dir / name
                meta = {**about, "foursquare_sim.part": str(k), ROWS_DIGEST: rows_digest(frame)}
                data = parquet_bytes(frame, meta)
                digest = hashlib.sha256(data).hexdigest()  # of the bytes written, not read back from the file
                try:
                    write_atomic(path, lambda tmp: Path(tmp).write_bytes(data))
                except OSError as e:
                    raise RunError(f"cannot write {path}: {e.strerror or e}") from None
                rows, first, last = _expected(k, config.n, p.chunk_size)
                p.parts[name] = {"rows": frame.height, "first": first, "last": last, "sha256": digest}
                if replaced[0] == "aside":  # the new run has a part: the run it replaces goes
                    save("incomplete")
                    replaced[0] = "gone"
                    with contextlib.suppress(OSError):
                        _drop_aside(run_dir)
                session["games"] += frame.height
                bar.update(frame.height)
                if time.perf_counter() - saved[0] >= MANIFEST_EVERY:
                    save("incomplete")
        status = "complete"
    except KeyboardInterrupt:
        said = f"interrupted; {done()}" if replaced[0] != "aside" else "interrupted before any part was written"
        raise ended(Interrupted, said, f"Finish with: {resume_hint}") from None
    except PolicyError as e:  # the policy's fault (raised on a Dask worker): resuming would fail the same way
        raise ended(PolicyError, str(e)) from e
    except TaskFailed as e:  # raised in a local worker: still the policy's fault, as for a game played here
        log.debug("the worker's traceback:\n%s", e.worker_traceback.rstrip())  # -v: where in the policy
        if e.error_type == "PolicyError":
            raise ended(PolicyError, e.error_message) from e
        if e.error_type == "RunError":  # said by the worker for the user (a file changed during the run)
            raise ended(RunError, e.error_message, kept()) from e
        raise ended(RunError, str(e), kept()) from e
    except RunError as e:
        raise ended(RunError, str(e), f"The run is resumable: {resume_hint}") from None
    except Exception as e:  # a worker died, the cluster failed
        raise ended(RunError, str(e), kept()) from e
    finally:
        bar.close()
        if status != "complete" and replaced[0] != "back":
            with contextlib.suppress(RunError):  # the error on its way out says more than this one
                save(status)
    try:
        save(status)  # a failure here is the run's failure: the manifest would not say it is complete
    except RunError as e:
        raise RunError(f"{e}. Every part is written; the run is resumable: {resume_hint}") from None
    return job.summarize(run_dir, session["seconds"], session["games"], status)


def _then(message: str, sentence: str) -> str:
    """`message`, ended as a sentence, then `sentence`."""
    message = message.rstrip()
    return f"{message}{'' if message.endswith('.') else '.'} {sentence}"


def _warm(job: Job, config, from_file: bool, then: str, notify=None) -> None:
    """Compile or load what the job needs (in the main process, before any worker exists).

    A compile takes seconds where a cache load takes a fraction of one, so
    `notify` hears about it before it starts. `then` ends the message of an
    interrupt (how to finish the run, say).
    """
    try:
        with interrupt_on_sigterm():
            what = job.to_compile(config, from_file) if notify is not None else None
            if what:
                notify(f"compiling {what}…")
            job.warm(config, from_file)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted before {_none_done(job)}. {then}") from None


def _is_run(run_dir: Path) -> bool:
    try:
        read_manifest(run_dir)
    except (UsageError, RunError):
        return False
    return True


def not_a_run_dir(run_dir: Path) -> str | None:
    """Why no run may be written into `run_dir`, even with force: it holds other things than a run (None when it
    is missing, empty, or holds a run)."""
    if not run_dir.exists() or _is_run(run_dir):
        return None
    if not run_dir.is_dir():
        return f"{run_dir} exists and is not a directory"
    entries = {e.name for e in os.scandir(run_dir)} - {LOCK}
    if GAMES in entries and not (run_dir / GAMES).is_dir():
        return f"{run_dir} holds a file named {GAMES} where a run keeps its parts"
    if entries - {GAMES} or (GAMES in entries and any(os.scandir(run_dir / GAMES))):
        what = "holds no run" if MANIFEST not in entries else f"has a {MANIFEST} that is not a run's"
        return f"{run_dir} is a non-empty directory that {what}"
    return None


def setting_text(value) -> str:
    """A manifest's setting in a message, as the command line gives it (weights=/a/w.json, none, true), not as
    Python writes it ({'weights': '/a/w.json'}, None, True)."""
    if isinstance(value, dict):
        return " ".join(f"{k}={setting_text(v)}" for k, v in value.items()) or "none"
    if value is None or isinstance(value, bool):
        return json.dumps(value).replace("null", "none")
    return str(value)


class InOrder(dict):
    """Settings whose order is part of them: a plugin's arguments, which a compiled plugin gets as `params` in
    the order given. `same_setting` compares these pairs in order; a plain dict's compare as dicts do."""


def same_setting(held, wanted) -> bool:
    """Is the recorded setting `held` the setting `wanted` (in order, when `wanted` is InOrder)?"""
    if isinstance(wanted, InOrder) and isinstance(held, dict):
        return list(held.items()) == list(wanted.items())
    return held == wanted


def held_run(job: Job, config, run_dir: Path) -> str:
    """What the run in `run_dir` is to a new run of `config` there: which of its settings differ, or that it is
    this run, to resume; for the message that refuses to write over it."""
    try:
        m = read_manifest(run_dir)
    except (UsageError, RunError):
        return "a run"
    if m.get("kind", "run") != job.kind:
        return "a solve run (sim solve)" if m.get("kind") == "solve" else "a run of games (sim run)"
    differ = []
    for key, wanted in job.settings(config).items():
        held = m.get(key)
        if key == "files" or same_setting(held, wanted):
            continue
        if isinstance(held, dict) and isinstance(wanted, dict) and held != wanted:
            differ += [f"{k} {setting_text(held.get(k))}, not {setting_text(wanted.get(k))}"
                       for k in dict.fromkeys([*held, *wanted]) if held.get(k) != wanted.get(k)]
        else:  # another value, or the same pairs in another order
            differ.append(f"{key} {setting_text(held)}, not {setting_text(wanted)}")
    status = m.get("status", "incomplete")
    if differ:
        return f"another {status} run ({'; '.join(differ)})"
    changed = changed_files(m.get("files"))
    if changed:
        return f"{'an' if status[0] in 'aeiou' else 'a'} {status} run of these settings, but {changed[0]}"
    return f"this run, {status}"


def _prepare_dir(run_dir: Path, force: bool, held: str = "a run") -> None:
    """Make `run_dir` ready for a new run (the caller holds its lock): empty, or a run replaced with `force`.

    A replaced run is only set aside (`_set_aside`): its manifest and parts
    move into ASIDE until the new run writes its first part. Only what a run
    owns is moved; any other file stays, and a directory holding other
    things than a run is refused, even with `force`.
    """
    aside = _is_run(run_dir)
    if aside:
        if not force:
            if held.startswith("this run"):
                raise UsageError(f"{run_dir} already holds {held}; use --resume {run_dir} to finish it "
                                 f"or --force to replace it")
            raise UsageError(f"{run_dir} already holds {held}; use --force to replace it, or another --out")
        try:
            _set_aside(run_dir)
        except OSError as e:
            with contextlib.suppress(OSError):
                _put_back(run_dir)
            raise RunError(f"cannot clear {run_dir}: {e.strerror or e}") from None
    else:
        why = not_a_run_dir(run_dir)
        if why:
            raise UsageError(f"out {why}; choose another", "out")
    try:
        (run_dir / GAMES).mkdir(exist_ok=True)
    except OSError as e:
        what = f"cannot create {run_dir / GAMES}: {e.strerror or e}"
        if aside:  # the run set aside goes back: nothing has replaced it
            try:
                _put_back(run_dir)
            except OSError as back:
                raise RunError(_then(what, f"The run it replaces could not be put back ({back.strerror or back}); "
                                           f"it is in {run_dir / ASIDE}.")) from None
            raise RunError(_then(what, f"{run_dir} still holds the run it had.")) from None
        raise RunError(what) from None


def _own_parts(games_dir: Path):
    """The files of `games_dir` that a run owns: its part files and temporary files left by its writes."""
    if games_dir.is_dir():
        yield from (Path(e.path) for e in os.scandir(games_dir) if chunk_of(e.name) is not None or TMP_MARK in e.name)


def _set_aside(run_dir: Path) -> None:
    """Move the run in `run_dir` into ASIDE: its manifest first, then its parts (renames, nothing is copied).

    The order makes every moment recoverable (`_settle_aside`): until the
    manifest has moved nothing has; after it, the run's manifest is in ASIDE.
    """
    aside = run_dir / ASIDE
    (aside / GAMES).mkdir(parents=True, exist_ok=True)
    os.replace(run_dir / MANIFEST, aside / MANIFEST)
    _sync_folders(run_dir, aside)  # the order above outlasts a power loss too
    for path in _own_parts(run_dir / GAMES):
        if TMP_MARK in path.name:  # the writer's lock is held: no other process is writing it
            path.unlink()
        else:
            os.replace(path, aside / GAMES / path.name)
    _sync_folders(run_dir / GAMES, aside / GAMES)


def _put_back(run_dir: Path, new_parts: bool = False) -> None:
    """Put the run set aside back in place of the new one, which has no part in the manifest yet.

    The new manifest goes first and the old one returns last, so that a
    crash on the way leaves what `_settle_aside` mends. `new_parts`: the
    part files in games/ are the new run's (written, not yet recorded) and
    go too; otherwise they are the old run's, not yet set aside.
    """
    aside = run_dir / ASIDE
    (run_dir / MANIFEST).unlink(missing_ok=True)
    for path in _own_parts(run_dir / GAMES):
        if new_parts or TMP_MARK in path.name:
            path.unlink()
    for path in _own_parts(aside / GAMES):
        os.replace(path, run_dir / GAMES / path.name)
    _sync_folders(run_dir, run_dir / GAMES, aside / GAMES)
    if (aside / MANIFEST).exists():
        os.replace(aside / MANIFEST, run_dir / MANIFEST)
        _sync_folders(run_dir, aside)
    _drop_aside(run_dir)


def _sync_folders(*folders: Path) -> None:
    """`sync_folder` each of `folders` that exists (a run's games/ may not yet)."""
    for folder in folders:
        if folder.is_dir():
            sync_folder(folder)


def _drop_aside(run_dir: Path) -> None:
    """Delete the run set aside: only its manifest and parts, then the folders if that empties them."""
    aside = run_dir / ASIDE
    (aside / MANIFEST).unlink(missing_ok=True)
    for path in _own_parts(aside / GAMES):
        path.unlink()
    with contextlib.suppress(OSError):  # not empty: something else is in there, and it stays
        (aside / GAMES).rmdir()
        aside.rmdir()


def _new_run_stands(run_dir: Path) -> bool:
    """After a --force killed outright: does the new run stand (its manifest written, and a part of it on
    disk), rather than the run set aside?"""
    return (run_dir / MANIFEST).exists() and any(TMP_MARK not in p.name for p in _own_parts(run_dir / GAMES))


def standing_manifest(run_dir: Path) -> Path:
    """The folder whose manifest the next writer keeps: the run set aside when a --force killed outright
    will give it back (`_settle_aside`), else `run_dir` itself."""
    run_dir = Path(run_dir)
    if (run_dir / ASIDE / MANIFEST).exists() and not _new_run_stands(run_dir):
        return run_dir / ASIDE
    return run_dir


def _settle_aside(run_dir: Path) -> None:
    """After a --force that was killed outright: a replacement that never wrote a part gives the run back.

    Once the new run has a part (listed in its manifest, or written and not
    yet listed: the old run's parts are all aside by then), it stands,
    resumable, and the old one is deleted; before, a new run is worth
    nothing and the old one is put back.
    """
    if not (run_dir / ASIDE).is_dir():
        return
    try:
        if _new_run_stands(run_dir):
            _drop_aside(run_dir)
        else:
            back = (run_dir / ASIDE / MANIFEST).exists()
            _put_back(run_dir)
            if back:  # what is read from here on is that run, not the replacement the manifest named
                log.warning("%s: a --force that was stopped before its first part left the run it was replacing "
                            "in %s; that run is back in place", run_dir, ASIDE)
    except OSError as e:
        raise RunError(f"cannot restore the run set aside in {run_dir / ASIDE}: {e.strerror or e}") from None


def _done(job: Job) -> str:
    """What a job does to its rows, in its notes: games are played, deals solved."""
    return "solved" if job.kind == "solve" else "played"


def _none_done(job: Job) -> str:
    """What an interrupt before the first row has not done, in the job's words: any game was played, any deal
    was solved."""
    return f"any {job.unit} was {_done(job)}"


def _complete_already(job: Job, config, run_dir: Path):
    """The summary of the complete run `run_dir` holds when it has exactly these settings (and files), else None."""
    if not _is_run(run_dir):
        return None
    m = read_manifest(run_dir)
    settings = job.settings(config)
    if m.get("status") != "complete" or m.get("kind", "run") != job.kind or m.get("format") != FORMAT:
        return None
    if not all(same_setting(m.get(k), v) for k, v in settings.items()) or changed_files(m.get("files")):
        return None
    try:
        if short_listing(m, run_parts(run_dir, m)):
            return None  # resume finishes it
    except RunError:
        return None
    summary = job.summarize(run_dir, float(m.get("seconds") or 0.0), sum((m.get("parts") or {}).values()), "complete")
    return replace(summary, note=f"{run_dir} already holds this complete run: nothing was {_done(job)} "
                                 f"(the figures below are that run's).")


def _complete_as_recorded(job: Job, run_dir: Path, check=None):
    """`_complete_already` for the settings the run's own manifest recorded (None when it is not a complete run
    of them); reads only."""
    m = read_manifest(run_dir)
    try:
        config = job.from_manifest(m)
    except (KeyError, TypeError, ValueError):
        return None
    if check is not None:
        check(config, m)
    return _complete_already(job, config, run_dir)


def start(job: Job, config, *, out: str | Path | None = None, force: bool = False, workers: int | None = None,
          chunk_size: int | None = None, executor: str = "local", scheduler: str | None = None,
          progress: bool = False, command: str | None = None, notify=None):
    """Check `config`, prepare the run directory, compile what the job needs, then run every chunk.

    The directory is locked for the whole run, and the manifest (status
    incomplete) is written before anything is compiled, so a run stopped at
    any moment is resumable. `notify(message)` hears of a compile before it
    starts. Raises UsageError for bad settings, RunError when the run
    cannot finish, Interrupted on Ctrl-C/SIGTERM.
    """
    config, decks = checked_rows(config)
    _whole_numbers(workers=workers, chunk_size=chunk_size)
    chosen = _executor(executor, workers, scheduler)
    if chunk_size is None:
        chunk_size = job.default_chunk_size(config.n, chosen.workers)
    if chunk_size < 1:
        raise UsageError(f"chunk_size must be at least 1, not {chunk_size}", "chunk_size")
    if chunk_size > MAX_CHUNK_SIZE:
        raise UsageError(f"chunk_size {chunk_size:,} is {_too_large_a_part(job)}", "chunk_size")
    if chunk_count(config.n, chunk_size) > MAX_CHUNKS:
        raise UsageError(f"chunk_size {chunk_size} makes more than {MAX_CHUNKS:,} parts of {config.n:,} rows; "
                         f"use a larger one", "chunk_size")
    run_dir = Path(out) if out is not None else job.default_out(config)
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"out {run_dir} exists and is not a directory", "out")
    above = next((p for p in run_dir.absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():  # nothing can be made under a file
        raise UsageError(f"out {run_dir}: {above} is not a directory", "out")
    holder = next((p for p in run_dir.absolute().parents if _is_run(p)), None)
    if holder is not None and run_dir.absolute().relative_to(holder).parts[0] in (GAMES, ASIDE):
        # what the run there owns: its writers move and delete what is in them (a --force's cleanup)
        raise UsageError(f"out {run_dir} lies among the parts of the run in {holder}; choose a folder outside its "
                         f"{GAMES}/ and {ASIDE}/", "out")
    created = not run_dir.exists()
    had_lock = (run_dir / LOCK).exists()
    resume_hint = f"Finish with: {resume_command(job, config, run_dir)}"
    _reach(chosen)
    with contextlib.ExitStack() as held:
        held.enter_context(interrupt_on_sigterm())  # left last: the lock is let go before a signal can end this
        try:
            held.enter_context(writer_lock(run_dir))
        except LockDenied:  # a folder this process may not write: asking again for its complete run is fine
            done = None if force else _complete_already(job, config, run_dir)
            if done is None:
                raise
            return done
        _settle_aside(run_dir)
        if not force:
            done = _complete_already(job, config, run_dir)
            if done is not None:
                return done
        replacing = force and _is_run(run_dir)
        if replacing:  # the run it replaces stays until the new one's code is ready (a plugin that fails to load)
            _warm(job, config, decks is not None, f"{run_dir} still holds the run it had.", notify)
        try:
            _prepare_dir(run_dir, force, "" if force else held_run(job, config, run_dir))
        except UsageError:  # refused: leave the directory as it was found
            if not had_lock:
                with contextlib.suppress(OSError):
                    (run_dir / LOCK).unlink()
                    if created:
                        run_dir.rmdir()
            raise
        p = _Progress(chosen, int(chunk_size), command or f"{job.kind}({config!r})", [], {})
        try:
            with _resumable_once_saved(resume_hint):
                _save(job, config, run_dir, p, "incomplete")
                try:
                    if not replacing:
                        _warm(job, config, decks is not None, resume_hint, notify)
                except Interrupted:
                    raise  # the manifest is there: the run is resumable
                except Exception:
                    _undo(run_dir, created)  # nothing was played: leave no half-made run behind
                    raise
                return _execute(job, config, run_dir, p, progress, decks, replacing)
        except (Interrupted, RunError) as e:
            if not (replacing and (run_dir / ASIDE / MANIFEST).exists()):
                raise
            # Stopped before _execute's own handling began (which puts the run back itself).
            try:
                _put_back(run_dir)
            except OSError:
                raise e from None  # the next writer tries again (`_settle_aside`)
            what = f"interrupted before {_none_done(job)}" if isinstance(e, Interrupted) else str(e)
            raise type(e)(_then(what, f"{run_dir} still holds the run it had.")) from None


@contextlib.contextmanager
def _resumable_once_saved(resume_hint: str):
    """Ctrl-C or SIGTERM from the first manifest on is Interrupted, saying how to resume.

    `_warm` and `_execute` say so for a signal during their own work; this
    covers the steps between them too (a SIGTERM there would otherwise end
    the process at once, without the message or exit code 130).
    """
    try:
        with interrupt_on_sigterm():
            yield
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted. {resume_hint}") from None


def _undo(run_dir: Path, created: bool) -> None:
    """Remove what `start` made before any part was written (the caller still holds the lock)."""
    with contextlib.suppress(OSError):
        (run_dir / MANIFEST).unlink(missing_ok=True)
        if not any(os.scandir(run_dir / GAMES)):
            (run_dir / GAMES).rmdir()
        if created:
            (run_dir / LOCK).unlink(missing_ok=True)
            run_dir.rmdir()


def resume(job: Job, run_dir: str | Path, *, workers: int | None = None, executor: str | None = None,
           scheduler: str | None = None, progress: bool = False, check=None, notify=None):
    """Finish an interrupted job with the settings its manifest recorded; only missing or wrong parts are played.

    It runs locally unless `executor` says otherwise (a manifest's scheduler
    address is never contacted unless given again). `check(config,
    manifest)` may refuse the resume (UsageError) before any code named in
    the manifest runs; every file the rows depend on must be unchanged.
    """
    run_dir = Path(run_dir)
    _whole_numbers(workers=workers)
    with contextlib.ExitStack() as held:
        held.enter_context(interrupt_on_sigterm())  # left last: the lock is let go before a signal can end this
        try:
            held.enter_context(writer_lock(run_dir))
        except LockDenied as denied:  # a folder this process may not write: a complete run there is confirmed
            done = _complete_as_recorded(job, run_dir, check)
            if done is None:
                raise denied from None
            return replace(done, note=f"{run_dir} is complete: nothing was {_done(job)} (the figures below are that "
                                      f"run's; its folder may not be written, so it was only read).")
        _settle_aside(run_dir)
        m = read_manifest(run_dir)
        if m.get("kind", "run") != job.kind:  # a killed --force's old run of the other kind came back, say
            names = {"run": "run of games", "solve": "solve run"}
            other = "sim solve --resume" if m.get("kind") == "solve" else "sim run --resume"
            raise UsageError(f"{run_dir} holds a {names.get(m.get('kind', 'run'), 'run')}, not a "
                             f"{names.get(job.kind, 'run')}; finish it with {other}")
        try:
            config = job.from_manifest(m)
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"{run_dir / MANIFEST} is not a complete {job.kind} manifest ({e})") from None
        if check is not None:
            check(config, m)
        resume_hint = f"Finish with: {resume_command(job, config, run_dir)}"
        with _resumable_once_saved(resume_hint):  # reading a large deal file, checking many parts: seconds
            problems = changed_files(m.get("files"))
            if problems:
                raise UsageError(f"cannot resume {run_dir}: {problems[0]}; its rows would mix two versions")
            decks = None if config.deals is None else recorded_decks(config.deals, config.deals_sha256, "resume")
            workers = int(workers or os.cpu_count() or 1)
            chosen = _executor(executor or "local", workers, scheduler)
            _reach(chosen)
            chunk_size = int(m["chunk_size"])
            if chunk_size > MAX_CHUNK_SIZE:
                raise UsageError(f"cannot resume {run_dir}: {run_dir / MANIFEST} says chunk_size {chunk_size:,}, "
                                 f"{_too_large_a_part(job)}")
            remove_temp_files(run_dir / GAMES)
            remove_temp_files(run_dir)
            p = _Progress(chosen, chunk_size, m.get("command", ""), m.get("sessions", []),
                          _verified_parts(run_dir, m, config.n, chunk_size))
            whole = len(p.parts) == chunk_count(config.n, chunk_size)
            repaired = whole and (m.get("status") != "complete" or sorted(m.get("parts") or {}) != sorted(p.parts))
            played_by = m.get("version")
            if (repaired or not whole) and p.parts and played_by is not None and played_by != __version__:
                raise UsageError(f"cannot resume {run_dir}: its parts were played by foursquare-sim {played_by}, and "
                                 f"this is {__version__}; its rows would mix two versions (finish it with {played_by}, "
                                 f"or play it again with --force)")
            if whole:
                # Nothing to play: no session of 0 games is added (it would change the run's recorded speed).
                if repaired:  # every part is on disk and verified, but the manifest did not say so
                    _save(job, config, run_dir, p, "complete")
                summary = job.summarize(run_dir, float(m.get("seconds") or 0.0), config.n, "complete")
                said = ("its manifest now lists every part, each verified" if repaired
                        else "the figures below are that run's")
                return replace(summary, note=f"{run_dir} is complete: nothing was {_done(job)} ({said}).")
            try:  # games/ deleted by hand (to play every part again): each part's write failed, run after run
                (run_dir / GAMES).mkdir(exist_ok=True)
            except OSError as e:
                raise RunError(f"cannot create {run_dir / GAMES}: {e.strerror or e}") from None
            _warm(job, config, decks is not None, resume_hint, notify)
            return _execute(job, config, run_dir, p, progress, decks)
