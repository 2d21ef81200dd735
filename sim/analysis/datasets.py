"""Runs as a dataset: the games of one or more runs as one polars LazyFrame (`sim.load`), and the runs in a folder (`sim ls`).

Only a run's verified parts are read (`sim.jobs.runner.checked_parts`: the
parts its manifest lists, each checked to hold exactly its games, and read
from the bytes that were checked), so an
interrupted run gives the games it has finished and a stray file in
``games/`` is never mixed in.
"""

import json
import logging
import os
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl
from polars.io.plugins import register_io_source

from sim.analysis.tables import Table, fmt_int, fmt_pct, pct_digits, policy_text, rules_text, run_names
from sim.engine.results import games_table
from sim.engine.rules import Rules
from sim.jobs.runner import (
    FORMAT, FORMAT_VERSION, MANIFEST, RunError, UsageError, checked_parts, is_manifest, manifest_problem, part_bytes,
    read_manifest, short_listing, writer_pid,
)
from sim.jobs.solve_results import solve_frame
from sim.solver.settings import SAT_CONFLICTS, default_split_after

__all__ = ["RunListing", "list_runs", "listing_table", "load"]

log = logging.getLogger("sim.analysis")

SOLVE_OPTIONS = ("first_win", "node_limit", "time_limit", "split_after", "sat_conflicts")
"""A solve run's solver options, each a column when several solve runs are loaded together."""


# --- sim.load ----------------------------------------------------------------------------------------


def _empty(kind: str) -> pl.DataFrame:
    """No rows, with the schema of a part of this kind (a run with no part yet)."""
    if kind == "solve":
        return solve_frame({"game": np.empty(0, np.uint64), "outcome": np.empty(0, np.uint8),
                            "score": np.empty(0, np.int8), "proven_best": np.empty(0, np.bool_),
                            "nodes": np.empty(0, np.uint64), "seconds": np.empty(0, np.float64), "moves": [],
                            "score_bound": np.empty(0, np.int8), "deck": None})
    return games_table({"game": np.empty(0, np.uint64), "won": np.empty(0, np.bool_),
                        **{k: np.empty(0, np.uint8) for k in ("cards_played", "face_down", "piles", "end")},
                        "score": np.empty(0, np.int8), "deck": None})


def _scan(run_dir: Path, m: dict) -> pl.LazyFrame:
    """The verified parts of one run, lazily: each part's rows are parsed from bytes whose SHA-256 is the one
    checked (`part_bytes`) whenever the frame is collected, so that a part replaced after `load` is an error,
    never rows; one part at a time, only the columns the query uses."""
    parts = checked_parts(run_dir, m)
    if m.get("status") != "complete":
        log.warning("%s is %s: only its finished parts are read", run_dir, m.get("status"))
    if not parts:
        return _empty(m.get("kind", "run")).lazy()
    first, digest = next(iter(parts.items()))
    schema = pl.read_parquet_schema(part_bytes(first, digest))  # every part of a run has its first's columns

    def verified_parts(with_columns, predicate, n_rows, batch_size):
        # The predicate may name columns the query does not keep: they are read, filtered on, then dropped.
        columns = with_columns
        if with_columns is not None and predicate is not None:
            columns = list(dict.fromkeys([*with_columns, *predicate.meta.root_names()]))
        left = n_rows
        for path, sha256 in parts.items():
            if left is not None and left <= 0:
                return
            frame = pl.read_parquet(part_bytes(path, sha256), columns=columns)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame

    return register_io_source(verified_parts, schema=schema)


def _settings(name: str, m: dict) -> list[pl.Expr]:
    """The columns that say which run a row comes from and with which settings."""
    kind = m.get("kind", "run")
    rules = {**Rules().as_dict(), **(m.get("rules") or {})}
    cols = [pl.lit(name, pl.String).alias("run")]
    if kind == "solve":
        opts = m.get("solve") or {}
        cols += [pl.lit(bool(opts.get("first_win")), pl.Boolean).alias("first_win"),
                 pl.lit(opts.get("node_limit"), pl.UInt64).alias("node_limit"),
                 pl.lit(opts.get("time_limit"), pl.Float64).alias("time_limit"),
                 # Not recorded by the runs made before these options: they never split nor asked.
                 pl.lit(int(opts.get("split_after") or 0), pl.UInt64).alias("split_after"),
                 pl.lit(int(opts.get("sat_conflicts") or 0), pl.UInt64).alias("sat_conflicts")]
    else:
        cols += [pl.lit(str(m.get("policy")), pl.String).alias("policy"),
                 pl.lit(json.dumps(m.get("policy_args") or {}, sort_keys=True), pl.String).alias("policy_args")]
    cols.append(pl.lit(int(m.get("seed", 0)), pl.UInt64).alias("seed"))
    for key, value in rules.items():
        cols.append(pl.lit(value, pl.String if isinstance(value, str) else pl.UInt8).alias(key))
    return cols


def load(run_or_runs) -> pl.LazyFrame:
    """The games (or a solve run's deals) of one run, or of several runs stacked, as a polars LazyFrame.

    `run_or_runs` is a run directory, or a list of them. One directory gives
    exactly its Parquet schema (see README, "Output"). A list adds, in front,
    a `run` column (the directory's name, or its path when two names are the
    same) and the run's settings: `policy` and `policy_args` (JSON text),
    `seed`, and one column per rule option (`adjacency`, `max_pile`,
    `max_face_down`, `grid`); solve runs get the solver's options instead of
    the policy (`first_win`, `node_limit`, `time_limit`, `split_after`,
    `sat_conflicts`; 0: never). Only verified parts are read.
    Raises UsageError for a directory that is not a run, one given twice or a
    mix of solve runs and runs of games, RunError for a damaged run, TypeError
    for what is neither a path nor a list of them.
    """
    if isinstance(run_or_runs, (str, os.PathLike)):
        path = Path(run_or_runs)
        return _scan(path, read_manifest(path))
    try:
        paths = [Path(p) for p in run_or_runs]
    except TypeError:
        raise TypeError(f"load takes a run directory or a list of them, not {run_or_runs!r}") from None
    if not paths:
        raise UsageError("load needs at least one run directory")
    seen = {}
    for p in paths:
        if p.resolve() in seen:  # its rows twice, under one name: a group_by("run") would count them twice
            raise UsageError(f"{p} is given twice (as {seen[p.resolve()]} before)")
        seen[p.resolve()] = p
    manifests = [read_manifest(p) for p in paths]
    kinds = {m.get("kind", "run") for m in manifests}
    if len(kinds) > 1:
        raise UsageError("cannot load solve runs and runs of games together: their rows differ "
                         "(" + ", ".join(f"{p.name}: {m.get('kind', 'run')}" for p, m in zip(paths, manifests)) + ")")
    names = run_names(paths)
    frames = []
    for path, m, name in zip(paths, manifests, names):
        lf = _scan(path, m)
        settings = _settings(name, m)
        frames.append(lf.select(*settings, pl.all()))
    return pl.concat(frames, how="diagonal_relaxed")


# --- sim ls ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunListing:
    """One run found by `list_runs`: what `sim ls` shows of it."""

    path: str
    """The run directory."""
    kind: str
    """run (games of a policy) or solve (deals solved by `sim solve`); "-" when the manifest is unreadable."""
    policy: str
    """The policy (a solve run: "solver" with its mode and limits)."""
    n: int | None
    """Games (or deals) the run was asked for (None when the manifest is unreadable)."""
    seed: int | None
    """Seed of the deals (None when the manifest is unreadable)."""
    rules: dict
    """Rule options."""
    status: str
    """complete, incomplete, damaged (a part or the manifest is missing or wrong: see `problem`), or
    unreadable (this user may not read a part or the manifest, or a newer version wrote it: see `problem`)."""
    done: int
    """Games (or deals) in its verified parts."""
    rate: float | None
    """Win rate of the games done; for a solve run, the share of deals won (None without rows)."""
    rate_high: float | None
    """A solve run's share of deals won or unresolved (the upper end of winnability); None for a run of games."""
    started: str | None
    """When the run started (the manifest's ISO time, UTC)."""
    problem: str | None = None
    """Why the run is damaged or unreadable (None when its parts check out)."""
    policy_args: dict = field(default_factory=dict)
    """The policy's arguments (--policy-arg), as the manifest recorded them."""
    deals: str | None = None
    """The deal file of a run played on `--deals` (its seed then keys only random policies' streams)."""
    writer: int | None = None
    """The pid of the process writing the run now; None when none is."""

    def to_dict(self) -> dict:
        """Every field, JSON-ready."""
        return asdict(self)


def _solve_policy(m: dict) -> str:
    opts = m.get("solve") or {}
    limits = [f"{k} {opts[k]:g}" if isinstance(opts.get(k), float) else f"{k} {opts[k]}"
              for k in ("node_limit", "time_limit") if opts.get(k) is not None]
    split = int(opts.get("split_after") or 0)
    if split != default_split_after(opts.get("time_limit")):  # as the run's summary says it
        limits.append(f"split_after {split}" if split else "never split")
    sat = int(opts.get("sat_conflicts") or 0)
    if sat != (0 if opts.get("first_win") else SAT_CONFLICTS):
        limits.append(f"sat_conflicts {sat}")
    return "solver (" + ", ".join(["first win" if opts.get("first_win") else "best score", *limits]) + ")"


def _damaged(run_dir: Path, problem: str, status: str = "damaged") -> RunListing:
    """The listing of a run whose manifest cannot be read."""
    return RunListing(path=str(run_dir), kind="-", policy="-", n=None, seed=None, rules={}, status=status,
                      done=0, rate=None, rate_high=None, started=None, problem=problem)


def _unreadable(e: OSError) -> bool:
    """Is this error this user's lack of permission (nothing is damaged), not a missing or broken file?"""
    return isinstance(e, PermissionError)


def _listing(run_dir: Path, m: dict) -> RunListing:
    """What `sim ls` shows of a run; a manifest field of the wrong type lists it as damaged, in the words of
    `sim report` ("n is 'lots', not a whole number") rather than Python's ("invalid literal for int()")."""
    try:
        return _checked_listing(run_dir, m)
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        try:
            problem = manifest_problem(m) or e
        except (TypeError, ValueError, AttributeError, KeyError):
            problem = e
        return _damaged(run_dir, f"{MANIFEST}: {problem}")


def _checked_listing(run_dir: Path, m: dict) -> RunListing:
    kind = m.get("kind", "run")
    status, problem, done, rate, rate_high = m.get("status", "unknown"), None, 0, None, None
    version = m.get("format_version", 0)
    if isinstance(version, int) and version > FORMAT_VERSION:  # this version cannot know what its fields mean
        newer = _damaged(run_dir, f"{MANIFEST} was written by a newer foursquare-sim (format {version})", "unreadable")
        return replace(newer, kind=str(kind), started=m.get("started") if _is_iso(m.get("started")) else None)
    try:
        problem = manifest_problem(m)
        if problem:
            raise RunError(f"{MANIFEST}: {problem}")
        parts = checked_parts(run_dir, m)
        column = "outcome" if kind == "solve" else "won"
        counts = {}  # each part counted from the bytes that were verified, a part at a time
        for path, sha256 in parts.items():
            values = pl.read_parquet(part_bytes(path, sha256), columns=[column]).get_column(column)
            if kind == "solve":
                for value, k in values.value_counts().iter_rows():
                    counts[value] = counts.get(value, 0) + int(k)
            else:  # a sum rather than a group_by: a listing of many runs reads every part
                wins = int(values.sum())
                counts[True] = counts.get(True, 0) + wins
                counts[False] = counts.get(False, 0) + len(values) - wins
        if parts and kind == "solve":
            won, unresolved = int(counts.get("won", 0)), int(counts.get("unresolved", 0))
            done = sum(int(v) for v in counts.values())
            rate, rate_high = won / done, (won + unresolved) / done
        elif parts:
            done = sum(counts.values())
            rate = int(counts.get(True, 0)) / done if done else None
        short = short_listing(m, parts)
        if short:
            status = "incomplete"
            problem = (f"the manifest says complete but lists {short[0]} of its {short[1]} parts; "
                       f"resume the run to finish it")
    except OSError as e:
        status = "unreadable" if _unreadable(e) else "damaged"
        problem = f"{e.filename or run_dir}: {e.strerror or e}"
    except (RunError, pl.exceptions.PolarsError) as e:
        status, problem = "damaged", str(e)
    started = m.get("started")
    if started is not None and not _is_iso(started):
        status, problem, started = "damaged", problem or f"{MANIFEST}: started is {started!r}, not an ISO time", None
    return RunListing(path=str(run_dir), kind=kind, policy=_solve_policy(m) if kind == "solve" else str(m.get("policy")),
                      n=int(m.get("n", 0)), seed=int(m.get("seed", 0)), rules=dict(m.get("rules") or {}),
                      status=status, done=done, rate=rate, rate_high=rate_high, started=started,
                      problem=problem, policy_args=dict(m.get("policy_args") or {}),
                      deals=None if m.get("deals") is None else str(m["deals"]),
                      writer=writer_pid(run_dir) if status == "incomplete" else None)


def _is_iso(text) -> bool:
    """Is `text` an ISO time (as a manifest's "started")?"""
    try:
        datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return False
    return True


class _Unreadable(str):
    """Why a folder's manifest cannot be read: this user may not read it (nothing is known to be damaged)."""


def _manifest_of(path: Path) -> dict | str | None:
    """The run manifest in `path`; None when it holds no run of this project (no manifest, or someone
    else's JSON object); the problem, as text, when the manifest is unreadable or no JSON object."""
    file = path / MANIFEST
    try:
        if not file.is_file():
            return None
        m = json.loads(file.read_text())
    except OSError as e:
        return _Unreadable(f"cannot read {file}: {e.strerror or e}") if _unreadable(e) else f"cannot read {file}: {e}"
    except ValueError as e:
        return f"cannot read {MANIFEST}: {e}"
    if not isinstance(m, dict):
        return f"{MANIFEST} holds a JSON {type(m).__name__}, not an object"
    return m if is_manifest(m) or m.get("format") == FORMAT else None


def run_holding(path: str | Path) -> Path | None:
    """The run directory `path` lies in: the nearest folder above it with a run's manifest, readable or not, as
    `sim ls` would list it; None when there is none. A file written there would be taken for the run's own."""
    for folder in Path(path).resolve().parents:
        if _manifest_of(folder) is not None:
            return folder
    return None


def list_runs(root: str | Path = "results", depth: int = 3) -> list[RunListing]:
    """The runs in `root` and in its folders down to `depth` levels, sorted by path.

    A folder holding a run is listed and not searched further; folders with
    no run of this project (no manifest, or someone else's) are searched
    but never listed; a manifest that is no JSON object, or whose fields
    have the wrong types, is listed as damaged; hidden folders are skipped. UsageError when `root` is
    not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root} is not a directory")
    found = []

    def visit(path: Path, level: int) -> None:
        m = _manifest_of(path)
        if m is not None:
            if isinstance(m, str):
                found.append(_damaged(path, m, "unreadable" if isinstance(m, _Unreadable) else "damaged"))
            else:
                found.append(_listing(path, m))
            return
        if level >= depth:
            return
        try:
            children = sorted(e.path for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))
        except OSError:
            return
        for child in children:
            visit(Path(child), level + 1)

    visit(root, 0)
    return sorted(found, key=lambda r: r.path)


def _date(iso: str | None) -> str:
    """An ISO time as local "YYYY-MM-DD HH:MM"; "-" when unknown."""
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return str(iso)


def listing_table(runs: list[RunListing], root: str | Path | None = None) -> Table:
    """The table `sim ls` prints: one line per run, paths relative to `root`."""
    def name(r: RunListing) -> str:
        if root is None:
            return r.path
        rel = os.path.relpath(r.path, root)
        return Path(r.path).name if rel == "." else rel

    def status(r: RunListing) -> str:
        if r.status != "incomplete":
            return r.status
        return f"being written (pid {r.writer}; {r.done:,} done)" if r.writer else f"incomplete ({r.done:,} done)"

    def seed(r: RunListing) -> str:
        if r.deals is not None:
            return f"deals {Path(r.deals).name}"
        return "-" if r.seed is None else str(r.seed)

    def rate(r: RunListing) -> str:
        if r.rate is None:
            return "-"
        d = pct_digits(r.done)
        if r.rate_high is not None and r.rate_high != r.rate:
            return f"{fmt_pct(r.rate, d)} .. {fmt_pct(r.rate_high, d)}"
        return fmt_pct(r.rate, d)

    rows = tuple((name(r), r.kind, policy_text(r.policy, r.policy_args), fmt_int(r.n), seed(r), "-" if r.kind == "-" else rules_text(r.rules),
                  status(r), rate(r), _date(r.started)) for r in runs)
    notes = [f"{name(r)} is {r.status}: {r.problem}" for r in runs if r.problem]
    if any(r.kind == "solve" for r in runs):
        notes.append("A solve run's winnable share: deals won (.. won or unresolved).")
    return Table("", ("run", "kind", "policy", "n", "seed", "rules", "status", "win rate / winnable", "started"),
                 rows, align="lllrrllrl", note="\n".join(notes))
