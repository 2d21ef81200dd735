"""Paired comparison of runs on the same deals (`sim compare`).

Runs with the same seed and deal source play game i on the same deck
(common random numbers), so two policies or two rule settings can be
compared game by game: the runs are joined on `game` and each pair of runs
gets a paired 2x2 table of wins. The join is done lazily in batches of game
numbers, so memory stays bounded whatever n is. Runs of different sizes
(a slow policy on fewer deals) are allowed: every run holds games 0..n-1,
so each run's own figures are over all its games and each pair's over the
games both played.

Statistics per pair (A, B), all on the joined games:

- win-rate difference pA - pB with a 95% paired interval
  (`sim.stats.paired_difference_interval`, Bonett-Price adjusted Wald);
- McNemar's exact test on the discordant games (`sim.stats.mcnemar_exact`,
  the exact binomial test);
- mean paired score difference over the games **both** runs won (a lost
  game has no score), with a 95% interval (Student's t);
- mean paired difference of the score per deal, over all the games, a lost
  game counting 0 (what a player scores per deal dealt), with a 95%
  interval (Student's t).

With three runs or more, the verdict on which run wins more deals takes
McNemar's p adjusted by Holm's method over all the pairs (`sim.stats.holm`),
so that the chance of any wrong verdict among them stays below 5%.

Runs for `compare --policy` and `sweep` are made with `make_runs`; an
existing complete run directory whose settings match is reused instead of
played again (with `force` it is replaced).
"""

import itertools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import polars as pl

from sim.analysis.report import load_report
from sim.analysis.tables import (Table, count, fmt_ci, fmt_int, fmt_num, fmt_pct, pct_digits, policy_text, pp_text,
                                 rules_text)
from sim.engine.rules import Rules
from sim.errors import Interrupted, magnitude
from sim.jobs import runner
from sim.jobs.solve_results import options_used
from sim.jobs.runner import RunError, UsageError
from sim.stats import holm, mcnemar_exact, mean_interval, paired_difference_interval, wilson

if TYPE_CHECKING:
    from sim.jobs.play import RunConfig

# Comparing runs that exist reads their parts only; the jobs that play runs (make_runs and the functions it
# calls) import the engine, and numba with it, when they are called: `sim compare RUN RUN` loads no numba.

BATCH = 500_000
"""Games joined at a time (about 100 MB for two runs, whatever n is)."""


# --- runs and whether they can be paired ----------------------------------------------------------


@dataclass(frozen=True)
class RunInfo:
    """What a run's manifest says about it."""

    path: str
    """The run directory, as given."""
    policy: str
    """The policy that played the games."""
    n: int
    """Number of games."""
    seed: int
    """Seed of the deals and of the policy's random stream."""
    rules: dict
    """Rule options, as the manifest stores them."""
    deal_algorithm: str
    """How the decks were dealt ("file" for a deal file)."""
    deals: str | None
    """The deal file, if the decks came from one."""
    deals_sha256: str | None
    """Digest of the deal file."""
    status: str
    """complete, incomplete, ..."""
    record_deals: bool
    """Whether each game's deck is stored in a `deck` column."""
    kind: str = "run"
    """The manifest's kind: run (games of a policy) or solve (deals solved by `sim solve`)."""
    solve: dict = field(default_factory=dict)
    """A solve run's solver options that acted on its deals (`options_used`: first_win, node_limit, time_limit,
    split_after, sat_conflicts when SAT questions could be asked); empty for a run of games."""
    games_per_core_s: float | None = None
    """Games played per second per worker process, over the run's local sessions (None if unknown)."""
    policy_args: dict = field(default_factory=dict)
    """The policy's arguments (--policy-arg), as the manifest records them."""

    @property
    def player(self) -> str:
        """The policy with its arguments ("heuristic weights=/a/w.json"): other arguments, another player."""
        return policy_text(self.policy, self.policy_args)

    @property
    def name(self) -> str:
        """The run directory's name."""
        return Path(self.path).name

    @property
    def deal_source(self) -> str:
        """Where the decks came from; runs pair only when this is the same."""
        if self.deal_algorithm == "file" or self.deals:
            return f"file sha256 {str(self.deals_sha256)[:12]}"
        return self.deal_algorithm


def games_per_core_second(sessions) -> float | None:
    """Games per second per worker over the sessions that ran on local workers (Dask's are left out)."""
    games = core_seconds = 0.0
    for session in sessions or ():
        workers, seconds = session.get("workers"), session.get("seconds")
        if workers and seconds:
            games += session.get("games") or 0
            core_seconds += workers * seconds
    return games / core_seconds if core_seconds and games else None


def run_info(run_dir: str | Path) -> RunInfo:
    """What the manifest of `run_dir` says about its run; a run whose manifest says complete but lists fewer parts
    than it has is incomplete (its games are not all there to pair: the join would look for them batch by batch,
    over all of its n)."""
    m = runner.read_manifest(Path(run_dir))
    status = "incomplete" if runner.short_listing(m, m.get("parts") or {}) else m.get("status", "unknown")
    return RunInfo(path=str(run_dir), policy=m.get("policy", "?"), n=int(m.get("n", 0)), seed=int(m.get("seed", 0)),
                   rules=dict(m.get("rules", {})), deal_algorithm=str(m.get("deal_algorithm")),
                   deals=m.get("deals"), deals_sha256=m.get("deals_sha256"), status=status,
                   record_deals=bool(m.get("record_deals", False)), kind=str(m.get("kind", "run")),
                   solve=options_used(m.get("solve") or {}), games_per_core_s=games_per_core_second(m.get("sessions")),
                   policy_args=dict(m.get("policy_args") or {}))


def _values(infos: list[RunInfo], get) -> str:
    return ", ".join(f"{i.name}: {get(i)}" for i in infos)


def check_pairable(infos: list[RunInfo]) -> None:
    """Raise UsageError unless the runs share seed and deal source and are complete; the message says what differs.

    Their sizes may differ: every run holds games 0..n-1, so any two share their first min(n) deals.
    """
    if len(infos) < 2:
        raise UsageError("compare needs at least two runs")
    if len({Path(i.path).resolve() for i in infos}) < len(infos):
        raise UsageError("the same run is given twice")
    if len({i.kind for i in infos}) > 1:
        raise UsageError("cannot pair a solve run with a run of games (" + _values(infos, lambda i: i.kind)
                         + "); compare solve runs with solve runs, or play the solver as --policy oracle")
    problems = []
    for what, get in (("seed", lambda i: i.seed), ("deal source", lambda i: i.deal_source)):
        if len({get(i) for i in infos}) > 1:
            problems.append(f"{what} ({_values(infos, get)})")
    if problems:
        raise UsageError("cannot pair these runs: they differ in " + "; ".join(problems)
                         + ". A paired comparison needs the same seed and deal source")
    for i in infos:
        if i.status != "complete":
            from sim.jobs.resume import finish_command

            raise UsageError(f"{i.path} is {i.status}; finish it with: {finish_command(i.path)}")


def differences(infos: list[RunInfo]) -> list[str]:
    """What the runs differ in (policy, its arguments, rule options), for the table header and the labels."""
    out = []
    if len({i.policy for i in infos}) > 1:
        out.append("policy")
    if len({i.player for i in infos}) > len({i.policy for i in infos}):  # one policy, other --policy-args
        out.append("policy arguments")
    keys = sorted({k for i in infos for k in i.rules}, key=list(Rules().as_dict()).index)
    out += [f"rule {k}" for k in keys if len({i.rules.get(k) for i in infos}) > 1]
    options = sorted({k for i in infos for k in i.solve})
    out += [f"solver {k}" for k in options if len({i.solve.get(k) for i in infos}) > 1]
    return out


def labels(infos: list[RunInfo]) -> list[str]:
    """Short unique names: the policy and/or the rules that differ, else the directory names."""
    diff = differences(infos)
    keys = [d.removeprefix("rule ") for d in diff if d.startswith("rule ")]
    options = [d.removeprefix("solver ") for d in diff if d.startswith("solver ")]
    out = []
    for i in infos:
        parts = [i.player] if "policy arguments" in diff else [i.policy] if "policy" in diff else []
        parts += [f"{k}={i.rules.get(k)}" for k in keys]
        parts += [f"{k}={'none' if i.solve.get(k) is None else i.solve.get(k)}" for k in options]
        out.append(" ".join(parts) or i.name)
    if len(set(out)) < len(out):
        out = [i.name for i in infos]
        if len(set(out)) < len(out):
            out = [i.path for i in infos]
    return out


# --- paired statistics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """One run of a comparison, on the joined games."""

    label: str
    """Short name of the run in the tables."""
    path: str
    """The run directory."""
    policy: str
    """The policy that played the games."""
    rules: dict
    """Rule options."""
    games: int
    """The run's games (all of them, also when other runs of the comparison have fewer)."""
    wins: int
    """Games won."""
    win_rate: float
    """wins / games."""
    win_rate_low: float
    """Lower end of the 95% Wilson interval of the win rate."""
    win_rate_high: float
    """Upper end of the 95% Wilson interval of the win rate."""
    mean_score: float | None
    """Of the games it won."""
    score_per_deal: float = 0.0
    """Mean score over all its games, a lost game counting 0: what a player scores per deal dealt."""
    games_per_core_s: float | None = None
    """Games per second per worker process when the run was played (None if unknown)."""
    reused: bool = False
    """`compare_policies` reused an existing run with the same settings rather than playing it again."""


@dataclass(frozen=True)
class Pair:
    """Paired statistics of two runs A and B on the same games."""

    a: str
    """Label of run A."""
    b: str
    """Label of run B."""
    games: int
    """Games both runs played (the first `games` deals)."""
    wins_a: int
    """Games A won."""
    wins_b: int
    """Games B won."""
    both: int
    """Games both won."""
    a_only: int
    """Games A won and B lost (McNemar's b)."""
    b_only: int
    """Games B won and A lost (McNemar's c)."""
    diff: float
    """pA - pB = (a_only - b_only) / games."""
    diff_low: float
    """Lower end of the paired 95% interval of diff (Bonett-Price)."""
    diff_high: float
    """Upper end of the paired 95% interval of diff."""
    p_value: float
    """McNemar's exact two-sided p-value."""
    score_diff: float | None
    """Mean of score A - score B over the games both won."""
    score_diff_low: float | None
    """Lower end of its 95% interval (Student's t) (None with fewer than two games both won, or when every one of
    them has the same difference: no spread, no interval)."""
    score_diff_high: float | None
    """Upper end of its 95% interval (Student's t)."""
    deal_diff: float | None = None
    """Mean of score A - score B over all the games, a lost game counting 0 (the difference of score per deal)."""
    deal_diff_low: float | None = None
    """Lower end of its 95% interval (Student's t) (None with fewer than two games, or all the same difference)."""
    deal_diff_high: float | None = None
    """Upper end of its 95% interval (Student's t)."""
    p_holm: float | None = None
    """McNemar's p adjusted by Holm's method over all the pairs of the comparison (None with only this pair)."""

    @property
    def p_verdict(self) -> float:
        """The p-value the verdict takes: Holm's adjusted one when there are several pairs."""
        return self.p_value if self.p_holm is None else self.p_holm

    @property
    def ahead(self) -> str | None:
        """Which run wins more deals, "a" or "b", when the games show it at the 5% level: the paired interval
        excludes 0 and McNemar's exact p (Holm's adjusted p among several pairs) is below 0.05. Near 5% the two
        can disagree (the exact test is the more conservative); then neither is named (`unclear` says why)."""
        if self.p_verdict < 0.05 and (self.diff_low > 0 or self.diff_high < 0):
            return "a" if self.diff > 0 else "b"
        return None

    @property
    def unclear(self) -> str:
        """Why `ahead` names neither run ("" when it names one)."""
        if self.ahead is not None:
            return ""
        if self.diff_low <= 0 <= self.diff_high:
            return "the interval contains 0"
        if self.p_holm is not None and self.p_value < 0.05:
            return "the interval excludes 0, but McNemar's p adjusted for the number of pairs (Holm) is not below 0.05"
        return "the interval excludes 0, but McNemar's exact p is not below 0.05"


@dataclass(frozen=True)
class Comparison:
    """The result of `sim compare`: every run on the same deals, and every pair of them."""

    arms: tuple[Arm, ...]
    """The runs, in the order given."""
    pairs: tuple[Pair, ...]
    """Every pair of runs (A before B in the order given)."""
    seed: int
    """The runs' common seed."""
    n: int
    """Deals every run played (games 0..n-1); the runs' common size unless their sizes differ."""
    deal_source: str
    """The runs' common deal source."""
    differs: tuple[str, ...]
    """What the runs differ in: "policy", "rule max_face_down", ..."""
    notes: tuple[str, ...] = field(default=())
    """Lines printed above the tables (e.g. what a solve run's score is)."""

    @property
    def same_size(self) -> bool:
        """Did every run play the same number of games?"""
        return all(a.games == self.n for a in self.arms)

    def header(self) -> str:
        """The line above the tables: what the runs share and what they differ in."""
        differs = list(self.differs) + ([] if self.same_size else ["the number of games"])
        differ = ", ".join(differs) if differs else "nothing but the directory"
        if self.same_size:
            return (f"Paired comparison on the same {count(self.n, 'deal')} (seed {self.seed}, {self.deal_source}); "
                    f"the runs differ in: {differ}")
        sizes = ", ".join(f"{a.label} {a.games:,}" for a in self.arms)
        return (f"Paired comparison on the same deals (seed {self.seed}, {self.deal_source}), runs of different "
                f"sizes ({sizes}): each run's figures are over its own games, each pair's over the deals both "
                f"played; the runs differ in: {differ}")

    def tables(self) -> list[Table]:
        """The Runs table (one row per run) and the Pairs table (one row per pair)."""
        d = pct_digits(self.n)
        arms = Table("Runs", ("run", "games", "wins", "win rate", "95% CI (Wilson)", "mean score",
                              "score per deal", "games/s per core"), tuple(
            (a.label, fmt_int(a.games), fmt_int(a.wins), fmt_pct(a.win_rate, d),
             fmt_ci(a.win_rate_low, a.win_rate_high, d), fmt_num(a.mean_score), fmt_num(a.score_per_deal),
             _rate(a.games_per_core_s)) for a in self.arms),
            note=("mean score: of the games the run won. score per deal: over all its games, a lost game "
                  "counting 0. games/s per core: games per second per worker process when the run was played "
                  "(its manifest's sessions; - when unknown, e.g. on Dask)."))
        several = len(self.pairs) > 1
        pairs = Table("Pairs", ("A", "B", "games", "wins A", "wins B", "both", "A only", "B only", "pA - pB",
                                "95% CI (paired)", "McNemar p", *(("Holm p",) if several else ()), "wins more",
                                "score A - B",
                                "95% CI", "per deal A - B", "95% CI (per deal)"), tuple(
            (p.a, p.b, fmt_int(p.games), fmt_int(p.wins_a), fmt_int(p.wins_b), fmt_int(p.both), fmt_int(p.a_only),
             fmt_int(p.b_only), _signed_pp(p.diff, d), _signed_ci(p.diff_low, p.diff_high, d), fmt_p(p.p_value),
             *((fmt_p(p.p_verdict),) if several else ()), {"a": "A", "b": "B"}.get(p.ahead, "-"),
             _signed(p.score_diff), _signed_range(p.score_diff_low, p.score_diff_high, p.both),
             _signed(p.deal_diff), _signed_range(p.deal_diff_low, p.deal_diff_high, p.games)) for p in self.pairs),
            align="ll", note=("pA - pB: win-rate difference in percentage points (pp), with the Bonett-Price "
                              "paired 95% interval. "
                              "McNemar p: exact two-sided test on the games only one of them won (A only vs B only)"
                              + ("; Holm p: the same adjusted for the number of pairs (Holm's method). "
                                 if several else ". ") +
                              "wins more: the run the games show to win more deals at the 5% level (the paired "
                              "interval excludes 0 and " + ("Holm p" if several else "McNemar p") +
                              " is below 0.05), - when they do not show it. " +
                              "score A - B: mean over the games both won (a lost game has no score), "
                              "with a 95% interval (Student's t). per deal A - B: mean over all the games, a lost "
                              "game counting 0 (the difference of score per deal), with a 95% interval "
                              "(Student's t); none (all equal) when every game has the same difference: "
                              "Student's t has no spread to measure, which is no certainty."))
        return [arms, pairs]

    def text(self) -> str:
        """The comparison as `sim compare` prints it."""
        out = [self.header()] + [f"note: {n}" for n in self.notes]
        return "\n".join(out) + "\n\n" + "\n\n".join(t.text() for t in self.tables()) + "\n"

    def markdown(self) -> str:
        """The comparison as a markdown document (--format markdown)."""
        out = [self.header(), ""] + [f"- {n}" for n in self.notes]
        return "\n".join(out) + "\n\n" + "\n\n".join(t.markdown() for t in self.tables()) + "\n"

    def to_dict(self) -> dict:
        """Every field, JSON-ready (NaN as None), and each pair's verdict: `wins_more`, the run the games show to
        win more deals (None when they do not), and `unclear`, why not (see `Pair.ahead`)."""
        d = json_ready(asdict(self))
        for row, p in zip(d["pairs"], self.pairs):
            row["wins_more"] = {"a": p.a, "b": p.b}.get(p.ahead)
            row["unclear"] = p.unclear
        return d

    def render(self, fmt: str) -> str:
        """The comparison as text, markdown or json."""
        return render_as(self, fmt)


def json_ready(x):
    """`x` with NaN as None, so json.dumps writes valid JSON."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    return x


def render_as(obj, fmt: str) -> str:
    """A Comparison or Sweep as text, markdown or json."""
    if fmt == "text":
        return obj.text()
    if fmt == "markdown":
        return obj.markdown()
    if fmt == "json":
        return json.dumps(obj.to_dict(), indent=2) + "\n"
    raise UsageError(f"--format {fmt!r} is not one of text, markdown, json")


def fmt_p(p: float) -> str:
    """A p-value: three decimals, or more where three would carry it across 0.05 or 0.01 (0.0498, not 0.050);
    scientific notation when below 0.001, with digits enough not to read as 0.001."""
    if p >= 0.001:
        for digits in range(3, 10):
            text = f"{p:.{digits}f}"
            if all((float(text) < level) == (p < level) for level in (0.05, 0.01)):
                break
        return text
    if p < 1e-300:
        return "<1e-300"
    for digits in range(1, 10):  # 0.000999 is 9.99e-04: 1.0e-03 would read as 0.001, which it is not below
        text = f"{p:.{digits}e}"
        if float(text) < 0.001:
            break
    return text


def p_is(p: float) -> str:
    """"= 0.003" or "< 1e-300": a p-value after its name in a sentence."""
    text = fmt_p(p)
    return f"< {text[1:]}" if text.startswith("<") else f"= {text}"


def _rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _signed(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:+.{digits}f}"


def _signed_range(lo, hi, count: int, digits: int = 2) -> str:
    """A difference's interval; of `count` values, with none when they are fewer than two or all equal."""
    if lo is None:
        return "none (all equal)" if count >= 2 else "-"
    return f"{lo:+.{digits}f} .. {hi:+.{digits}f}"


def _signed_pp(x: float, digits: int) -> str:
    return "-" if math.isnan(x) else pp_text(x, digits)


def _signed_ci(lo: float, hi: float, digits: int) -> str:
    return "-" if math.isnan(lo) else f"{pp_text(lo, digits)} .. {pp_text(hi, digits)}"


def _part_ranges(path: str) -> list[tuple[int, int, Path, str]]:
    """(first game, last game, file, SHA-256 of the bytes verified) of each verified part of a run, verified once
    for all the batches."""
    m = runner.read_manifest(Path(path))
    n, size = int(m["n"]), int(m["chunk_size"])
    ranges = []
    for part, sha256 in runner.checked_parts(path, m).items():
        k = runner.chunk_of(part.name)  # a verified part's name is one
        ranges.append((k * size, min((k + 1) * size, n) - 1, part, sha256))
    return ranges


def _columns(path: str, i: int, part: Path, sha256: str) -> pl.DataFrame:
    """game, won{i}, score{i} of a part of a run, read from the bytes that were verified; for a solve run, won is
    "a winning line was found" and score the best found."""
    data = runner.part_bytes(part, sha256)
    try:
        names = pl.read_parquet_schema(data)
        data.seek(0)
        won = pl.col("won") if "won" in names else pl.col("outcome") == "won"
        return pl.read_parquet(data, columns=["game", "won" if "won" in names else "outcome", "score"]).select(
            "game", won.alias(f"won{i}"), pl.col("score").cast(pl.Int64).alias(f"score{i}"))
    except (pl.exceptions.PolarsError, OSError) as e:
        raise RunError(f"cannot read {path}: {e}") from None


def paired_sums(paths: list[str], n: int, batch: int = BATCH) -> dict[str, int]:
    """Sums over games 0..n-1 joined on `game` across all runs: counts per run and per pair of runs.

    Keys: "games"; "wins{i}", "score_sum{i}"; for i < j "both{i}_{j}", "only{i}_{j}" (i won, j lost),
    "only{j}_{i}", "dsum{i}_{j}" and "dsq{i}_{j}" (sum and sum of squares of score i - score j over
    the games both won), "psum{i}_{j}" and "psq{i}_{j}" (the same over every game, a lost game's
    score counting 0).
    """
    k = len(paths)
    won = [pl.col(f"won{i}") for i in range(k)]
    score = [pl.col(f"score{i}") for i in range(k)]
    exprs = [pl.len().cast(pl.Int64).alias("games")]
    for i in range(k):
        exprs += [won[i].sum().cast(pl.Int64).alias(f"wins{i}"),
                  score[i].sum().cast(pl.Int64).alias(f"score_sum{i}")]
    for i, j in itertools.combinations(range(k), 2):
        both = won[i] & won[j]
        diff = score[i] - score[j]
        exprs += [both.sum().cast(pl.Int64).alias(f"both{i}_{j}"),
                  (won[i] & ~won[j]).sum().cast(pl.Int64).alias(f"only{i}_{j}"),
                  (won[j] & ~won[i]).sum().cast(pl.Int64).alias(f"only{j}_{i}"),
                  diff.filter(both).sum().cast(pl.Int64).alias(f"dsum{i}_{j}"),
                  (diff * diff).filter(both).sum().cast(pl.Int64).alias(f"dsq{i}_{j}")]
        per_deal = score[i].fill_null(0).cast(pl.Int64) - score[j].fill_null(0).cast(pl.Int64)
        exprs += [per_deal.sum().cast(pl.Int64).alias(f"psum{i}_{j}"),
                  (per_deal * per_deal).sum().cast(pl.Int64).alias(f"psq{i}_{j}")]
    totals: dict[str, int] = {}
    ranges = [_part_ranges(p) for p in paths]
    read: list[dict[Path, pl.DataFrame]] = [{} for _ in paths]  # each run's parts read so far and still needed
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        parts = [[(part, sha256) for first, last, part, sha256 in r if first < hi and last >= lo] for r in ranges]
        if not all(parts):  # a run with no part holding these games: none of them is joined
            continue
        for i, p in enumerate(paths):  # a part is read once, however many batches it spans
            read[i] = {part: read[i][part] if part in read[i] else _columns(p, i, part, sha256)
                       for part, sha256 in parts[i]}
        frames = [pl.concat(list(read[i].values())).lazy().filter(pl.col("game").is_between(lo, hi - 1))
                  for i in range(len(paths))]
        joined = frames[0]
        for f in frames[1:]:
            joined = joined.join(f, on="game", how="inner")
        try:
            row = joined.select(exprs).collect(engine="streaming").row(0, named=True)
        except (pl.exceptions.PolarsError, OSError) as e:
            raise RunError(f"cannot read the runs' games: {e}") from None
        for key, value in row.items():
            totals[key] = totals.get(key, 0) + int(value or 0)
    if totals.get("games", 0) != n:
        raise RunError(f"the runs share only {totals.get('games', 0):,} of {n:,} games; "
                       f"a part file may be missing or unreadable")
    return totals


def _mean_interval(total: int, squares: int, count: int):
    """(mean, low, high) of `count` integers from their sum and sum of squares; the ends None with fewer than two
    or when they are all equal. The variance is worked out in integers, so that equal values give exactly 0."""
    if count == 0:
        return None, None, None
    mean = total / count
    if count == 1:
        return mean, None, None
    total, squares = int(total), int(squares)
    var = (count * squares - total * total) / (count * (count - 1))
    return (mean, *mean_interval(mean, var, count))


def _sums_by_pair(paths: list[str], sizes: list[int], batch: int) -> tuple[list[dict], dict]:
    """Each run's sums over all its games, and each pair's over the games both played.

    Runs of one size are joined in one pass; runs of different sizes pair by pair.
    Returns ([{"wins", "score_sum"} per run], {(i, j): {"games", "both", "only_i", "only_j", "dsum", "dsq"}}).
    """
    k = len(paths)
    if len(set(sizes)) == 1:
        every = [paired_sums(paths, sizes[0], batch)]
        index = {i: (0, i) for i in range(k)}
        pair_index = {(i, j): (0, i, j) for i, j in itertools.combinations(range(k), 2)}
    else:
        every = [paired_sums([p], n, batch) for p, n in zip(paths, sizes)]
        index = {i: (i, 0) for i in range(k)}
        pair_index = {}
        for i, j in itertools.combinations(range(k), 2):
            every.append(paired_sums([paths[i], paths[j]], min(sizes[i], sizes[j]), batch))
            pair_index[(i, j)] = (len(every) - 1, 0, 1)
    runs = [{"wins": every[t][f"wins{c}"], "score_sum": every[t][f"score_sum{c}"]} for t, c in
            (index[i] for i in range(k))]
    pairs = {}
    for (i, j), (t, a, b) in pair_index.items():
        s = every[t]
        pairs[(i, j)] = {"games": s["games"], "both": s[f"both{a}_{b}"], "only_i": s[f"only{a}_{b}"],
                         "only_j": s[f"only{b}_{a}"], "dsum": s[f"dsum{a}_{b}"], "dsq": s[f"dsq{a}_{b}"],
                         "psum": s[f"psum{a}_{b}"], "psq": s[f"psq{a}_{b}"],
                         "wins_i": s[f"wins{a}"], "wins_j": s[f"wins{b}"]}
    return runs, pairs


def compare_runs(run_dirs, batch: int = BATCH, notes=()) -> Comparison:
    """Paired comparison of existing runs (UsageError if they cannot be paired: the message says why)."""
    infos = [run_info(d) for d in run_dirs]
    check_pairable(infos)
    names = labels(infos)
    sizes = [i.n for i in infos]
    run_sums, pair_sums = _sums_by_pair([i.path for i in infos], sizes, batch)
    arms = []
    for info, label, sums in zip(infos, names, run_sums):
        n, wins = info.n, sums["wins"]
        low, high = wilson(wins, n)
        arms.append(Arm(label=label, path=info.path, policy=info.policy, rules=info.rules, games=n, wins=wins,
                        win_rate=wins / n, win_rate_low=low, win_rate_high=high,
                        mean_score=sums["score_sum"] / wins if wins else None,
                        score_per_deal=sums["score_sum"] / n, games_per_core_s=info.games_per_core_s))
    pairs = []
    for (i, j), s in pair_sums.items():
        n, b, c, both = s["games"], s["only_i"], s["only_j"], s["both"]
        low, high = paired_difference_interval(n, b, c)
        mean, mlo, mhi = _mean_interval(s["dsum"], s["dsq"], both)
        deal, dlo, dhi = _mean_interval(s["psum"], s["psq"], n)
        pairs.append(Pair(a=names[i], b=names[j], games=n, wins_a=s["wins_i"], wins_b=s["wins_j"], both=both,
                          a_only=b, b_only=c, diff=(b - c) / n, diff_low=low, diff_high=high,
                          p_value=mcnemar_exact(b, c), score_diff=mean, score_diff_low=mlo, score_diff_high=mhi,
                          deal_diff=deal, deal_diff_low=dlo, deal_diff_high=dhi))
    if len(pairs) > 1:
        pairs = [replace(p, p_holm=h) for p, h in zip(pairs, holm([p.p_value for p in pairs]))]
    if infos[0].kind == "solve":
        first = {bool(i.solve.get("first_win")) for i in infos}
        score = ("the best score found" if first == {False} else "the score of the first win found (--first-win)"
                 if first == {True} else "the first win's score in the --first-win runs (" + ", ".join(
                     i.name for i in infos if i.solve.get("first_win")) + "), the best score found in the others: "
                 "their score differences compare two different things")
        notes = [*notes, f"solve runs: won = a winning line found (unresolved deals count as not won), score = {score}"]
    return Comparison(arms=tuple(arms), pairs=tuple(pairs), seed=infos[0].seed, n=min(sizes),
                      deal_source=infos[0].deal_source, differs=tuple(differences(infos)), notes=tuple(notes))


def arm_reports(comparison: Comparison) -> list:
    """The RunReport of each run of a comparison, in its order (score distributions for the figures);
    None for a solve run, which has no games table."""
    from sim.analysis.report import is_solve_run

    return [None if is_solve_run(a.path) else load_report(a.path) for a in comparison.arms]


def compare_if_pairable(run_dirs) -> tuple[Comparison | None, str]:
    """(the paired comparison of the runs, "") when they can be paired, else (None, why not).

    For `sim report` of several runs: runs on the same deals are compared
    game by game; others are reported side by side only.
    """
    if len(run_dirs) < 2:
        return None, "a comparison needs two runs or more"
    try:
        return compare_runs(run_dirs), ""
    except UsageError as e:
        return None, str(e)


def pairing_problem(run_dirs) -> str:
    """Why the runs cannot be paired ("" when they can), from their manifests alone: no game is read, so
    `sim report` can say it of runs too large to join."""
    try:
        check_pairable([run_info(d) for d in run_dirs])
    except UsageError as e:
        return str(e)
    return ""


# --- making the runs -----------------------------------------------------------------------------------


def _apart(value, other) -> tuple:
    """`value`, a dict of settings (rules, policy_args) cut to the keys where it differs from `other` (whole when
    they differ only in order)."""
    if isinstance(value, dict) and isinstance(other, dict) and dict(value) != dict(other):
        return ({k: v for k, v in value.items() if k not in other or other[k] != v},)
    return (value,)


def _reuse_problem(run_dir: Path, config: "RunConfig") -> tuple[str, str] | None:
    """None if run_dir holds a complete run with exactly these settings and files, else (kind, what is wrong).

    kind is "files" when only the files the games depend on changed (the
    run is played again), "incomplete" when it is this run, interrupted or
    with a damaged part (its missing or damaged parts are played), "other"
    when the directory holds another run.
    """
    from sim import kernels as K
    from sim.jobs.play import args_setting
    from sim.jobs.resume import finish_command

    try:
        m = runner.read_manifest(run_dir)
    except (UsageError, RunError) as e:
        return "other", f"it is not a readable run: {e}"
    complete = m.get("status") == "complete"
    want = {"policy": config.policy, "n": config.n, "seed": config.seed, "rules": config.rules.as_dict(),
            "deal_algorithm": K.DEAL_ALGORITHM, "deals": None}
    if config.policy_args or m.get("policy_args"):
        want["policy_args"] = args_setting(config.policy, config.policy_args)
    wrong = [f"{k} {runner.setting_text(*_apart(m.get(k), v))}, wanted {runner.setting_text(*_apart(v, m.get(k)))}" for k, v in want.items()
             if not runner.same_setting(m.get(k), v)]
    if config.record_deals and not m.get("record_deals"):
        wrong.append("it has no deck column (wanted --record-deals)")
    if not complete and m.get("record_deals", False) != config.record_deals:
        wrong.append(f"record_deals {runner.setting_text(m.get('record_deals', False))}, wanted {runner.setting_text(config.record_deals)}")
    if wrong:
        state = "" if complete else f"an {m.get('status')} one: "
        return "other", state + "; ".join(wrong)
    recorded, now = m.get("files") or {}, dict(config.files)
    changed = [p for p in sorted(set(recorded) | set(now)) if recorded.get(p) != now.get(p)]
    if changed:
        return "files", f"{changed[0]} is not the file its games were played with"
    try:
        parts = runner.run_parts(run_dir, m)
    except runner.PartSettingsError as e:  # its manifest or a part was changed: resume refuses it as well
        return "other", str(e).split("; ")[0]
    except RunError as e:  # this run, with a damaged or missing part: resume plays that part again
        return "incomplete", f"{str(e).split('; ')[0]}; playing it again, as {finish_command(run_dir)} does"
    short = runner.short_listing(m, parts)
    if short:  # resume lists the rest
        return "incomplete", (f"its manifest lists {short[0]} of its {short[1]} parts; finishing it, as "
                              f"{finish_command(run_dir)} does")
    if not complete:
        return "incomplete", f"it was interrupted; playing its missing parts, as {finish_command(run_dir)} does"
    return None


def policy_args_for(policy_names: list[str], policy_args: dict[str, str] | None) -> dict[str, dict[str, str]]:
    """Give each policy the --policy-arg values it takes (a built-in's or the oracle's own parameters; all, for a
    plugin).

    An argument no policy takes is a usage error.
    """
    import policies
    from sim.players.oracle import ORACLE_PARAMS

    args = dict(policy_args or {})
    out, used = {}, set()
    for name in policy_names:
        if name == "oracle":
            takes = ORACLE_PARAMS
        elif name in policies.BUILTIN:
            takes = {p.name for p in policies.get(name).params}
        else:
            takes = args  # a plugin's parameters are its own to check
        out[name] = {k: v for k, v in args.items() if k in takes}
        used |= set(out[name])
    unused = set(args) - used
    if unused:
        raise UsageError(f"no policy here takes --policy-arg {', '.join(sorted(unused))}")
    return out


def _run_label(config: "RunConfig") -> str:
    """The policy with its arguments, and the rule options unless default: "greedy (max_face_down=3)"."""
    rules = rules_text(config.rules.as_dict())
    return policy_text(config.policy, dict(config.policy_args)) + ("" if rules == "default" else f" ({rules})")


def make_runs(specs: list[tuple[str, Rules]], n: int, seed: int = 0, workers: int | None = None,
              force: bool = False, record_deals: bool = False, progress: bool = False, command: str | None = None,
              notify: Callable[[str], None] | None = None,
              policy_args: dict[str, str] | None = None, executor: str = "local",
              scheduler: str | None = None) -> list[tuple[Path, bool]]:
    """One sim.run per (policy, rules), all with the same seed and n, in their default results/ directories.

    `executor` and `scheduler` say where the runs played or finished here
    are played, as for `sim.run`: they do not change the rows, so a complete
    run is reused wherever it was played.

    A directory that already holds a complete run with the same settings is
    reused (not played again) unless `force`, and the same run interrupted
    is finished; one that holds another run is refused unless `force`, and
    one that holds anything but a run always, before any game is played.
    Returns each run directory and whether it was reused.
    """
    from sim.engine.cards import check_seed
    from sim.jobs.play import DEFAULT_CHUNK, RunConfig, default_out, resume, run, settled
    from sim.players.api import resolve

    args_of = policy_args_for([p for p, _ in specs], policy_args)
    for policy, _ in specs:
        try:
            resolve(policy, args_of[policy])
        except ValueError as e:
            raise UsageError(str(e)) from None
    seed = check_seed(seed)  # a UsageError naming the seed
    most = runner.MAX_CHUNKS * DEFAULT_CHUNK  # the runs take the default chunk size: no --chunk-size to advise
    if n > most:
        raise UsageError(f"n must be at most {most:,} games per run here ({runner.MAX_CHUNKS:,} parts of "
                         f"{DEFAULT_CHUNK:,}), not {magnitude(n)}", "n")
    configs = [RunConfig(policy=p, n=n, seed=seed, rules=r, record_deals=record_deals,
                         policy_args=tuple(args_of[p].items())) for p, r in specs]
    dirs = [default_out(settled(c)) for c in configs]  # named as `sim run` names them: file arguments absolute
    if len(set(dirs)) < len(dirs):
        raise UsageError("the same run is asked for twice: " + ", ".join(sorted({str(d) for d in dirs if dirs.count(d) > 1})))
    plan = []
    for config, out in zip(configs, dirs):
        config, why = settled(config), ""
        unusable = runner.not_a_run_dir(out)
        if unusable:  # even with --force: what it holds is not a run's to replace
            raise UsageError(f"{unusable}, where the run of {_run_label(config)} goes; move it away")
        above = next((p for p in out.absolute().parents if p.exists()), None)
        if above is not None and not above.is_dir():  # said here: run's own words name --out, which these lack
            raise UsageError(f"{above} is not a directory, and the run of {_run_label(config)} goes in {out}; "
                             "move it away")
        action = "play"
        if (out / runner.MANIFEST).exists() and not force:  # an empty directory is played into
            with runner.writer_lock(out):  # no writer may be half way through it while it is checked
                problem = _reuse_problem(out, config)
            if problem is None:
                action = "reuse"
            elif problem[0] == "other":
                raise UsageError(f"{out} already holds another run ({problem[1]}); use --force to replace it")
            elif problem[0] == "incomplete":
                action, why = "finish", f" ({problem[1]})"
            else:
                action, why = "replace", f" again ({problem[1]})"
        plan.append((config, out, action, why))
    made = []
    for k, (config, out, action, why) in enumerate(plan, 1):
        what = _run_label(config)
        if notify:
            notify(f"[{k}/{len(plan)}] {what}: " + {"reuse": f"reusing {out}", "finish": f"finishing {out}{why}"}.get(
                action, f"playing {count(n, 'game')} into {out}{why}"))
        try:
            if action == "finish":
                resume(out, policy=config.policy, policy_args=config.policy_args, workers=workers,
                       executor=executor, scheduler=scheduler, progress=progress, notify=notify)
            elif action != "reuse":
                run(config, out=out, force=force or action == "replace", workers=workers, executor=executor,
                    scheduler=scheduler, progress=progress, command=command, notify=notify)
        except Interrupted as e:
            raise Interrupted(_finish_all(str(e), force, command)) from None
        made.append((out, action == "reuse"))
    return made


def _finish_all(message: str, force: bool, command: str | None) -> str:
    """An interrupted run's message, its "Finish with: sim run --resume <this run>" (one run of several) made
    "run the same command again", which reuses the complete runs and finishes this one."""
    said, sep, _ = message.partition(" Finish with: ")
    if not sep:  # no run to finish (a --force that put the run it replaces back)
        return message
    if force:  # --force again would play the complete runs again too
        return f"{said} Run the same command again without --force to finish every run (the complete ones are reused)"
    return f"{said} Run the same command again to finish every run (the complete ones are reused)" + (
        f": {command}" if command else "")


def compare_policies(policies: list[str], n: int, seed: int = 0, rules: Rules | None = None,
                     **run_options) -> Comparison:
    """Play every policy on the same deals (or reuse those runs) and compare them in pairs.

    The result is the same whether a run was played or reused: which runs were reused is each arm's `reused`
    (and `make_runs` notifies it as it goes, on stderr from the command line), not a note above the tables.
    """
    if len(policies) < 2:
        raise UsageError("give at least two --policy to compare")
    if len(set(policies)) < len(policies):
        raise UsageError("a --policy is given twice")
    rules = rules or Rules()
    made = make_runs([(p, rules) for p in policies], n, seed, **run_options)
    result = compare_runs([path for path, _ in made])
    return replace(result, arms=tuple(replace(a, reused=reused) for a, (_, reused) in zip(result.arms, made)))
