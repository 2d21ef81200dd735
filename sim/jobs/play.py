"""The play job (`sim run`): games of one policy, one Parquet row per game.

A run is a pure function of its `RunConfig` (policy and its arguments, n,
seed, rules, deal source): game i always gets the same deck and the same
policy stream, so the rows do not depend on the worker count, the chunk
size or the executor, which are options of `run`, not of the config.
"""

import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from policies import BUILTIN, data_files, normal_args, rules_warning
from sim.fielddocs import documented
from sim.stats import pct_text, score_per_deal, wilson
from sim.engine.results import end_enum, games_table
from sim.engine.rules import Rules
from sim.jobs import runner
from sim.jobs.runner import Job, RunError, UsageError
from sim.players.oracle import oracle_args
from sim.players.api import play_decks, play_range, policy_items, resolve, to_compile, warm_up
from sim.players.plugins import keep_recorded, pinned, plugin_source

log = logging.getLogger("sim.runner")

DEFAULT_CHUNK = 50_000
END_ENUM = end_enum()
"""The `end` column's type: the four ways a game can end."""


@documented
@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run's rows."""

    policy: str = "greedy"
    """Built-in policy name, entry-point name, or plugin (module:attr, file.py:attr)."""
    n: int | None = None
    """Number of games (with `deals`, None plays every deck of the file)."""
    seed: int = 0
    """Seed of the deals and of the policy's random stream."""
    rules: Rules = field(default_factory=Rules)
    """Rule options."""
    policy_args: tuple[tuple[str, str], ...] = ()
    """The policy's --policy-arg values, as given."""
    deals: str | None = None
    """Deal file (Parquet or JSON lines) instead of seeded deals; game i is row i."""
    deals_sha256: str | None = None
    """Digest of the deal file (filled in when the run starts, checked on resume)."""
    record_deals: bool = False
    """Store each game's deck in a `deck` column."""
    files: tuple[tuple[str, str], ...] = ()
    """(absolute path, SHA-256) of every file the games depend on besides the deal file: a plugin's
    source, a weights file (filled in when the run starts, checked on resume and reuse)."""


def settled(config: RunConfig) -> RunConfig:
    """The config as its manifest records it: file paths absolute, with the digests of those files."""
    policy, args, paths = pinned(config.policy, dict(config.policy_args))
    if policy in BUILTIN:  # and the package's data it reads (planner's shipped values)
        paths = [*paths, *data_files(policy, args)]
        args = in_declared_order(policy, normal_args(policy, args))
    elif policy == "oracle":
        args = oracle_args(args)
    files = runner.dependency_digests(paths)
    return replace(config, policy=policy, policy_args=tuple(args.items()), files=tuple(files.items()))


def in_declared_order(policy: str, args: dict[str, str]) -> dict[str, str]:
    """A built-in's arguments in the order its PARAMS declare them: it reads them by name, so any order given
    is one setting, one manifest entry and one default directory name."""
    import policies

    order = [p.name for p in policies.get(policy).params]
    return dict(sorted(args.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def args_setting(policy: str, args) -> dict[str, str]:
    """A run's policy_args as its manifest is compared: a plugin's in order (see `runner.InOrder`)."""
    return (runner.InOrder if is_plugin(policy) else dict)(args)


def is_plugin(policy: str) -> bool:
    """Is `policy` code from outside the package (not a built-in nor the oracle)?"""
    import policies

    return policy not in policies.BUILTIN and policy != "oracle"


@documented
@dataclass(frozen=True)
class RunSummary:
    """What a run produced, as the command line prints it."""

    path: Path
    """The run directory."""
    games: int
    """Games in the output."""
    wins: int
    """Games won."""
    win_rate: float
    """wins / games."""
    win_rate_low: float
    """Lower end of the 95% Wilson interval of the win rate."""
    win_rate_high: float
    """Upper end of the 95% Wilson interval of the win rate."""
    mean_score: float | None
    """Mean score of the won games (None without wins)."""
    seconds: float
    """Wall time of this invocation's run, from the workers' start to the last part (start-up not included)."""
    games_per_s: float
    """Games played by this invocation per second of wall time."""
    status: str
    """complete or incomplete."""
    note: str = ""
    """A line said before the figures (e.g. that the run was complete already and nothing was played)."""

    @property
    def score_per_deal(self) -> float:
        """Mean score over all the games, a lost game counting 0 (what a player scores per deal dealt)."""
        return score_per_deal(self.wins, self.mean_score, self.games)

    def text(self) -> str:
        """The summary `sim run` prints."""
        score = "n/a" if self.mean_score is None else f"{self.mean_score:.2f}"
        return "\n".join(([self.note] if self.note else []) + [
            f"games      {self.games:,}",
            f"wins       {self.wins:,}",
            f"win rate   {pct_text(self.win_rate, 4)}  (95% CI {pct_text(self.win_rate_low, 4)} .. "
            f"{pct_text(self.win_rate_high, 4)})",
            f"mean score {score} (wins only); {self.score_per_deal:.2f} per deal (a lost game counts 0)",
            f"wall time  {self.seconds:.2f} s  ({self.games_per_s:,.0f} games/s)",
            f"output     {self.path}",
        ])

    def to_dict(self) -> dict:
        """Every field and the score per deal, JSON-ready (what `sim run --format json` prints): path as text, NaN
        as None."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["path"] = str(self.path)
        d["score_per_deal"] = self.score_per_deal
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


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
    """results/<policy>-seed<S>-n<N>, plus any non-default rules; a deal file's name takes the seed's place (the
    seed, which then seeds only the policy's random stream, follows it unless 0)."""
    policy = policy_label(config.policy, config.policy_args)
    name = f"{policy}-seed{config.seed}-n{config.n}"
    if config.deals:
        seed = f"-seed{config.seed}" if config.seed else ""
        name = f"{policy}-deals-{Path(config.deals).stem}{seed}-n{config.n}"
    return Path("results") / (name + runner.rules_suffix(config.rules))


# --- the work of one chunk (runs in a worker) --------------------------------


def _check_recorded(policy: str, policy_args, files: dict[str, str]) -> None:
    """Play a chunk only with the files the run recorded (RunError otherwise): a plugin's code as its recorded
    source and own modules (`keep_recorded`: a worker that loaded them keeps them, even if a file is edited
    during the run), and a file a policy argument names (a weights file) as it is on disk now. A Dask worker
    lives on from run to run, so without this it could play code an earlier run loaded, or a file edited
    halfway through. The package's own data (planner's shipped values) is the worker's installation's, which
    on another machine may live at another path: a resume checks it, in the main process."""
    if not files:
        return
    named = {value for _, value in policy_args}
    for path, digest in files.items():
        if path in named:
            try:
                ok = runner.file_sha256(Path(path)) == digest
            except OSError:
                ok = False
            if not ok:
                _changed(path)
    source = None if policy in BUILTIN else plugin_source(policy)  # a built-in's other files are its data
    code = {path: digest for path, digest in files.items() if path not in named}
    if source is None or str(source) not in code or keep_recorded(policy, code):
        return
    for path, digest in sorted(code.items(), key=lambda item: item[0] != str(source)):  # the source first
        try:
            if runner.file_sha256(Path(path)) != digest:
                _changed(path)
        except OSError:
            _changed(path)
    _changed(str(source))


def _changed(path: str):
    raise RunError(f"{path} has changed since the run started (or is gone): its games would mix two "
                   f"versions; put the file back as it was to finish the run")


def play_chunk(task: dict) -> dict:
    """Play one chunk; returns plain numpy columns (the main process writes the part)."""
    t0 = time.perf_counter()
    _check_recorded(task["policy"], task["policy_args"], task.get("files") or {})
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
    """The Parquet schema of a part: one row per game (built by the engine's `games_table`)."""
    return games_table(cols)


def summarize(run_dir: Path, seconds: float, played: int, status: str) -> RunSummary:
    """The summary of a run directory's games, from one read of each part (each checked first, its rows read from
    the very bytes checked)."""
    games = wins = scores = score_sum = 0
    for path, sha256 in runner.checked_parts(run_dir).items():
        row = pl.read_parquet(runner.part_bytes(path, sha256), columns=["won", "score"]).select(
            pl.len(), pl.col("won").sum(), pl.col("score").count().alias("scores"),
            pl.col("score").cast(pl.Int64).sum().alias("score_sum"),
        ).row(0)
        games, wins, scores, score_sum = games + row[0], wins + int(row[1] or 0), scores + row[2], score_sum + row[3]
    mean_score = score_sum / scores if scores else None
    low, high = wilson(wins, games)
    return RunSummary(
        path=Path(run_dir), games=games, wins=wins, win_rate=wins / games if games else math.nan,
        win_rate_low=low, win_rate_high=high, mean_score=mean_score, seconds=seconds,
        games_per_s=played / seconds if seconds > 0 else math.nan, status=status,
    )


def _warm(config: RunConfig, from_file: bool) -> None:
    warm_up(config.policy, dict(config.policy_args), seeded=not from_file, decks=from_file)


def _to_compile(config: RunConfig, from_file: bool) -> str | None:
    return to_compile(config.policy, dict(config.policy_args), seeded=not from_file, decks=from_file)


def _payload(config: RunConfig) -> dict:
    return {"seed": config.seed, "policy": config.policy, "policy_args": config.policy_args,
            "rules": config.rules.as_dict(), "record_deals": config.record_deals, "files": dict(config.files)}


def _settings(config: RunConfig) -> dict:
    return {"policy": config.policy, "policy_args": args_setting(config.policy, config.policy_args),
            **runner.deal_fields(config),
            "files": dict(config.files)}


def config_from_manifest(m: dict) -> RunConfig:
    """The RunConfig a manifest records."""
    return RunConfig(
        policy=m["policy"], n=m["n"], seed=m["seed"], rules=Rules(**m["rules"]),
        policy_args=tuple((m.get("policy_args") or {}).items()), deals=m.get("deals"),
        deals_sha256=m.get("deals_sha256"), record_deals=m.get("record_deals", False),
        files=tuple((m.get("files") or {}).items()),
    )


def _resume_args(config: RunConfig) -> list[str]:
    """A plugin's run is resumed only with the plugin named again (see `resume`)."""
    return ["--policy", config.policy] if is_plugin(config.policy) else []


PLAY = Job(kind="run", command="run", unit="game", work=play_chunk, frame=games_frame, summarize=summarize,
           warm=_warm, to_compile=_to_compile, payload=_payload, settings=_settings, from_manifest=config_from_manifest,
           default_out=default_out, default_chunk_size=default_chunk_size, resume_args=_resume_args)
"""`sim run` as a job of sim.jobs.runner."""


def run(config: RunConfig, *, out: str | Path | None = None, force: bool = False, workers: int | None = None,
        chunk_size: int | None = None, executor: str = "local", scheduler: str | None = None,
        progress: bool = False, command: str | None = None, notify=None) -> RunSummary:
    """Play the games `config` describes in worker processes and write them under `out`.

    Everything else is how they are played: `workers` (default: CPUs),
    `chunk_size` (games per part), `executor` (local or dask, with
    `scheduler`), `progress` (a bar on stderr), `force` (replace a run in
    `out`), `notify` (hears of a compile before it starts). Returns the summary, whose `path` is the run directory. Raises
    UsageError for bad settings, RunError when the run cannot finish,
    Interrupted on Ctrl-C/SIGTERM (both leave the run resumable with `resume`).
    """
    if not isinstance(config, RunConfig):
        raise TypeError(f"run() takes a RunConfig, not {type(config).__name__}")
    if not isinstance(config.rules, Rules):
        raise TypeError(f"RunConfig.rules must be a sim.Rules, not {type(config.rules).__name__} "
                        f"(e.g. sim.Rules(max_pile=3))")
    config = replace(config, policy_args=policy_items(config.policy_args))  # ("samples", 2) as ("samples", "2")
    try:
        resolve(config.policy, dict(config.policy_args))
    except ValueError as e:
        raise UsageError(str(e)) from None
    config = settled(config)
    if config.policy in BUILTIN:  # planner's values learned under other rules, say
        far = rules_warning(config.policy, dict(config.policy_args), config.rules.as_dict())
        if far:
            log.warning("%s", far)
    return runner.start(PLAY, config, out=out, force=force, workers=workers, chunk_size=chunk_size,
                        executor=executor, scheduler=scheduler, progress=progress, command=command, notify=notify)


def resume(run_dir: str | Path, *, policy: str | None = None, policy_args=None, workers: int | None = None,
           executor: str | None = None, scheduler: str | None = None, progress: bool = False,
           notify=None) -> RunSummary:
    """Finish an interrupted run; only its missing parts are played (see `sim.jobs.runner.resume`).

    A run of a plugin is resumed only when `policy` (and `policy_args`)
    name it again, exactly as recorded: a resume never imports code that
    the caller did not name.
    """
    def check(config: RunConfig, m: dict) -> None:
        if not is_plugin(config.policy):
            if policy is not None and policy != config.policy:
                raise UsageError(f"{run_dir} is a run of {config.policy!r}, not {policy!r}")
            # A weights or values file its arguments name must be among the files whose digests it recorded
            # (as `settled` records them): else the games added could be of another file than those it holds.
            _, _, paths = pinned(config.policy, dict(config.policy_args))
            unrecorded = [str(path) for path in paths if str(path) not in dict(config.files)]
            if unrecorded:
                raise UsageError(f"{run_dir}: its manifest names {unrecorded[0]} in the policy's arguments but "
                                 f"records no digest of it, so the games a resume adds could be of another file")
            return
        if policy is None:
            raise UsageError(f"{run_dir} is a run of the plugin {config.policy!r}; resuming it runs that code, "
                             f"so name it again: --resume {run_dir} --policy {config.policy}")
        given, args, _ = pinned(policy, dict(policy_items(policy_args or config.policy_args)))
        if given != config.policy or not runner.same_setting(args, args_setting(given, config.policy_args)):
            raise UsageError(f"{run_dir} is a run of {config.policy!r} with {dict(config.policy_args)}, "
                             f"not {given!r} with {args}")

    return runner.resume(PLAY, run_dir, workers=workers, executor=executor, scheduler=scheduler,
                         progress=progress, check=check, notify=notify)
